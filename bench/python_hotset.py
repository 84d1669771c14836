#!/usr/bin/env python3
"""Hotset embedded in Python (the `hotset` package) on the catalogue: the mirror of
../shared/bench/query_pyreindexer.py, measured the same way (bench_common's seeded
parameters and timing loop, results fully materialised into Python dicts).

Loads the items data set with indexes
  id (int, hash, pk), name (string, hash), year (int, tree), description (text)
and measures, single-threaded, for ~--seconds each after --warmup:
  a_get_by_id      query WHERE id = ?                              (random ids)
  a_get_by_key     db.get(ns, id)                                  (the same ids)
  b_name_year      WHERE name = ? AND year > 2010 ORDER BY year LIMIT 10, with total
  c_year_range     WHERE year RANGE 2010..2020 ORDER BY year DESC LIMIT 20 OFFSET 100
  d_fulltext       full-text match of one dictionary word, LIMIT 10
then adds a composite tree index name+year (as bench/query_pyreindexer_extra.py has) and
measures the extra shapes of bench/extra_shapes.py:
  g_in_range       name IN (5 names) AND year RANGE lo..hi ORDER BY year DESC, id
                   LIMIT 10 OFFSET 10, with total
  h_fulltext       d_fulltext through SQL (SELECT * ... WHERE MATCH(description, 'w')
                   LIMIT 10) and through the builder
and then
  e_upsert         upsert of a random existing record (name/year changed)
  f_bulk_insert_tx all N records through one transaction (json.loads of each line
                   included, as the Reindexer side does)
and the process RSS before and after loading.

usage: python_hotset.py [--data F] [--path DIR | --memory] [--seconds 3] [--warmup 0.5]
Last stdout line is a JSON object with all figures.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "bench"))
from bench_common import Params, cycle, ensure_items, read_lines, report, rss_mb, timed_run  # noqa: E402
from extra_shapes import COMPOSITE, LIMIT, OFFSET, in_range_params  # noqa: E402

import hotset  # noqa: E402

INDEXES = [
    {"field": "id", "type": "int", "index": "hash", "pk": True},
    {"field": "name", "type": "string", "index": "hash"},
    {"field": "year", "type": "int", "index": "tree"},
    {"field": "description", "index": "text"},
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, "data", "items_100k.jsonl"))
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--path", help="database folder (default: a fresh temporary one)")
    ap.add_argument("--memory", action="store_true", help="in memory only (no log, no snapshots)")
    ap.add_argument("--fsync", default="periodic", choices=["always", "periodic", "never"],
                    help="the log's fsync policy on a folder (default: periodic, the package's default)")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    a = ap.parse_args()

    lines = read_lines(ensure_items(a.data, a.n))
    P = Params(lines)
    tmp = None
    if a.memory:
        where = None
    else:
        where = a.path or tempfile.mkdtemp(prefix="hotset_bench_")
        tmp = None if a.path else where
        shutil.rmtree(where, ignore_errors=True)
    rss_start = rss_mb()
    db = hotset.open(where, fsync=a.fsync) if where else hotset.open(None)
    ns = "items"
    out = {"bench": "python_hotset", "mode": "memory" if a.memory else "folder", "fsync": a.fsync, "records": len(lines),
           "seconds": a.seconds, "results": {}}
    R = out["results"]

    # ---- f) bulk insert through one transaction
    db.create_namespace(ns, indexes=INDEXES)
    loads = json.loads
    t0 = time.perf_counter()
    with db.transaction(ns) as tx:
        for ln in lines:
            tx.insert(loads(ln))
    t_tx = time.perf_counter() - t0
    R["f_bulk_insert_tx"] = {"seconds": round(t_tx, 3), "rows_s": round(len(lines) / t_tx, 1)}
    out["rss_mb_before_load"] = rss_start
    out["rss_mb_after_load"] = rss_mb()

    t0 = time.perf_counter()
    db.query(ns).match("description", P.words[0]).limit(10).execute()
    out["ft_first_query_s"] = round(time.perf_counter() - t0, 3)

    q = db.query
    get = db.get

    def a_builder(i):
        return len(q(ns).where("id", "=", i).execute().items)

    def a_key(i):
        return 1 if get(ns, i) is not None else 0

    def b_builder(name):
        r = q(ns).where("name", "=", name).where("year", ">", 2010).sort("year").limit(10).total().execute()
        r.total
        return len(r.items)

    def c_builder(_):
        return len(q(ns).where("year", "range", (2010, 2020)).sort("year", desc=True).offset(100).limit(20)
                   .execute().items)

    def d_builder(word):
        return len(q(ns).match("description", word).limit(10).execute().items)

    r = q(ns).where("name", "=", P.names[0]).where("year", ">", 2010).sort("year").limit(10).total().execute()
    out["sanity_rows"] = {"a": a_builder(P.ids[0]), "b": len(r.items), "b_total": r.total, "c": c_builder(0),
                          "d": d_builder(P.words[1])}

    R["a_get_by_id[builder]"] = timed_run(a_builder, cycle(P.ids), a.seconds, a.warmup)
    R["a_get_by_key"] = timed_run(a_key, cycle(P.ids), a.seconds, a.warmup)
    R["b_name_year[builder]"] = timed_run(b_builder, cycle(P.names), a.seconds, a.warmup)
    R["c_year_range[builder]"] = timed_run(c_builder, cycle([0]), a.seconds, a.warmup)
    R["d_fulltext[builder]"] = timed_run(d_builder, cycle(P.words), a.seconds, a.warmup)

    # ---- the extra shapes (before the upserts: the same data as the Reindexer side's)
    db.add_index(ns, {"fields": list(COMPOSITE), "type": ["string", "int"], "index": "tree"})
    in_range = in_range_params(P)

    def in_range_query(params):
        names, lo, hi = params
        r = (q(ns).where("name", "in", names).where("year", "range", (lo, hi)).sort("year", desc=True)
             .sort("id").offset(OFFSET).limit(LIMIT).total().execute())
        return r.items, r.total

    def g_builder(params):
        return len(in_range_query(params)[0])

    sql = db.sql

    def h_sql(word):
        return len(sql(f"SELECT * FROM items WHERE MATCH(description, '{word}') LIMIT 10").items)

    items, total = in_range_query(in_range[0])
    out["sanity_rows"].update({"g_ids": [d["id"] for d in items], "g_total": total,
                               "g_totals": [in_range_query(p)[1] for p in in_range[:50]],
                               "h": (h_sql(P.words[1]), d_builder(P.words[1]))})
    R["g_in_range[builder]"] = timed_run(g_builder, cycle(in_range), a.seconds, a.warmup)
    R["h_fulltext[sql]"] = timed_run(h_sql, cycle(P.words), a.seconds, a.warmup)
    R["h_fulltext[builder]"] = timed_run(d_builder, cycle(P.words), a.seconds, a.warmup)

    upsert = db.upsert

    def e_upsert(rec):
        upsert(ns, rec)
        return 1

    R["e_upsert"] = timed_run(e_upsert, cycle(P.upserts), a.seconds, a.warmup)
    t0 = time.perf_counter()
    d_builder(P.words[2])
    out["ft_first_query_after_upserts_s"] = round(time.perf_counter() - t0, 3)
    out["rss_mb_end"] = rss_mb()
    db.close()
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    for k, v in R.items():
        print(f"# {k:28s} {v}", file=sys.stderr)
    report(out)


if __name__ == "__main__":
    main()
