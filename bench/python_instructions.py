"""Instructions per call of the Python package's embedded paths, counted by callgrind, so
two builds compare without the machine's noise (a shared 2-core box moves wall-clock and CPU
figures by 10-30% between runs; instruction counts repeat exactly).

    for py in OLD/bin/python NEW/bin/python; do
      base=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $py bench/python_instructions.py none 0 2>&1 | awk '/Collected/ {print $4}')
      for op in get upsert query sql; do
        v=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $py bench/python_instructions.py $op 4000 2>&1 | awk '/Collected/ {print $4}')
        echo "$py $op $(( (v - base) / 4000 ))"
      done
    done

Counts include the interpreter's own work per call (the same in both builds).
"""
import sys, hotset
op, n = sys.argv[1], int(sys.argv[2])
db = hotset.open()
db.create_namespace("items", [{"field": "id", "type": "int", "index": "hash", "pk": True},
                              {"field": "year", "type": "int", "index": "tree"},
                              {"field": "name", "type": "string", "index": "tree"}])
for i in range(2000):
    db.upsert("items", {"id": i, "year": 2000 + i % 50, "name": f"n{i % 1000}"})
q = db.query("items").where("year", ">", 2010).where("name", "=", "n7").sort("year").limit(10)
for i in range(n):
    if op == "get": db.get("items", i % 2000)
    elif op == "upsert": db.upsert("items", {"id": i % 2000, "year": 2001, "name": "x"})
    elif op == "query": q.execute()
    elif op == "sql": db.sql("SELECT * FROM items WHERE name = 'n7' AND year > 2010 ORDER BY year LIMIT 10")
