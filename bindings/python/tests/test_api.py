"""Every call of the API, against the embedded engine and a real server alike (the `db`
fixture runs each test in both modes). Expected answers are computed in Python from the
same documents, never written in by hand."""
import collections.abc
import math

import hotset
import pytest

from conftest import ITEM_INDEXES, sample_items


def ids(result):
    return [doc["id"] for doc in result]


# ---- namespaces and indexes

def test_namespaces_are_created_listed_described_and_dropped(db):
    db.create_namespace("a", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    db.create_namespace("b", [{"field": "k", "type": "string", "index": "hash", "pk": True}])
    assert sorted(db.namespaces()) == ["a", "b"]
    db.upsert("a", {"id": 1})
    info = db.describe("a")
    assert info["documents"] == 1
    assert [i["name"] for i in info["indexes"]] == ["id"]
    db.add_index("a", {"field": "year", "type": "int", "index": "tree"})
    assert [i["name"] for i in db.describe("a")["indexes"]] == ["id", "year"]
    db.drop_index("a", "year")
    assert [i["name"] for i in db.describe("a")["indexes"]] == ["id"]
    db.truncate("a")
    assert db.describe("a")["documents"] == 0
    db.drop_namespace("a")
    assert db.namespaces() == ["b"]


def test_namespace_errors_have_classes_and_context(db):
    db.create_namespace("a", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    with pytest.raises(hotset.AlreadyExistsError, match="namespace 'a' already exists") as e:
        db.create_namespace("a", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    assert isinstance(e.value, hotset.Error)
    with pytest.raises(hotset.NotFoundError, match="namespace 'zz' does not exist"):
        db.describe("zz")
    with pytest.raises(hotset.NotFoundError):
        db.drop_namespace("zz")
    with pytest.raises(hotset.SchemaError, match="no primary key"):
        db.create_namespace("nokey", indexes=[{"field": "x", "type": "int", "index": "hash"}])
    with pytest.raises(hotset.SchemaError, match="invalid index definition"):
        db.create_namespace("bad", indexes=[{"field": "x", "type": "intt", "index": "hash", "pk": True}])
    with pytest.raises(hotset.SchemaError, match="invalid namespace name"):
        db.create_namespace("", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    with pytest.raises(hotset.AlreadyExistsError):
        db.add_index("a", {"field": "id", "type": "int", "index": "hash"})
    with pytest.raises(hotset.NotFoundError, match="index 'nope'"):
        db.drop_index("a", "nope")
    assert db.namespaces() == ["a"]


# ---- documents

def test_documents_round_trip_exactly(db):
    db.create_namespace("docs", indexes=[{"field": "id", "type": "string", "index": "hash", "pk": True}])
    doc = {
        "id": "k1",
        "text": "naïve café ✓ 日本",
        "int": -(2**63),
        "big": 2**64 - 1,
        "float": 1.5e-7,
        "bools": [True, False],
        "none": None,
        "nested": {"a": [1, {"b": [2.5, "x"]}], "empty": {}, "list": []},
        "tuple": (1, 2),
    }
    db.insert("docs", doc)
    got = db.get("docs", "k1")
    expected = dict(doc, tuple=[1, 2])
    assert got == expected
    assert type(got["int"]) is int and type(got["float"]) is float and got["bools"][0] is True


def test_insert_update_upsert_delete_get(db, items):
    assert db.get("items", 3) == items[3]
    assert db.get("items", 10_000) is None
    with pytest.raises(hotset.AlreadyExistsError, match="duplicate primary key 3") as e:
        db.insert("items", dict(items[3]))
    assert e.value.__class__ is hotset.AlreadyExistsError
    with pytest.raises(hotset.NotFoundError, match="no document with primary key 10000"):
        db.update("items", {"id": 10_000, "name": "x"})
    changed = dict(items[3], name="changed", year=1990)
    db.update("items", changed)
    assert db.get("items", 3) == changed
    db.upsert("items", {"id": 500, "name": "new", "year": 2001})
    assert db.get("items", 500)["name"] == "new"
    assert db.delete("items", 500) is True
    assert db.delete("items", 500) is False
    assert db.get("items", 500) is None
    # the index follows the update
    assert ids(db.query("items").where("name", "=", "changed").execute()) == [3]


def test_many_writes_are_all_or_nothing(db, items):
    fresh = [{"id": 1000 + i, "name": "bulk", "year": 2020} for i in range(50)]
    with pytest.raises(hotset.AlreadyExistsError, match="duplicate primary key 7"):
        db.insert_many("items", fresh + [dict(items[7])])
    assert db.query("items").where("name", "=", "bulk").total().limit(0).execute().total == 0
    assert db.insert_many("items", (d for d in fresh)) == 50  # any iterable
    assert db.query("items").where("name", "=", "bulk").total().limit(0).execute().total == 50
    assert db.update_many("items", [dict(d, year=1999) for d in fresh]) == 50
    assert db.query("items").where("year", "=", 1999).total().limit(0).execute().total == 50
    with pytest.raises(hotset.NotFoundError):
        db.update_many("items", [{"id": 1000, "year": 1}, {"id": 99_999, "year": 1}])
    assert db.get("items", 1000)["year"] == 1999


def test_bad_documents_are_refused_and_nothing_stored_is_lost(db, items):
    before = db.query("items").total().limit(0).execute().total
    cases = [
        (["not", "a", "dict"], hotset.DocumentError, "must be a JSON object"),
        ({"name": "no key"}, hotset.DocumentError, "no primary key field 'id'"),
        ({"id": "text", "name": "x"}, hotset.DocumentError, "expects"),
        ({"id": 1, "year": "x"}, hotset.DocumentError, "expects"),
        ({"id": 1, 2: "int key"}, TypeError, "keys must be strings"),
        ({"id": 1, "x": float("nan")}, ValueError, "no JSON form"),
        ({"id": 1, "x": 2**70}, ValueError, "does not fit in 64 bits"),
        ({"id": 1, "x": {1, 2}}, TypeError, "cannot be stored"),
        ({"id": 1, "x": object()}, TypeError, "cannot be stored"),
    ]
    for doc, error, message in cases:
        with pytest.raises(error, match=message):
            db.upsert("items", doc)
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nested deeper"):
        db.upsert("items", {"id": 1, "loop": loop})
    with pytest.raises(hotset.NotFoundError):
        db.upsert("nowhere", {"id": 1})
    # The same refusals through many-document writes and transactions, all or nothing.
    with pytest.raises(hotset.DocumentError, match="must be a JSON object"):
        db.insert_many("items", [{"id": 5000}, ["x"]])
    with pytest.raises(TypeError, match="keys must be strings"):
        db.upsert_many("items", [{"id": 5001}, {"id": 5002, 1: 2}])
    with pytest.raises(ValueError, match="no JSON form"):
        with db.transaction("items") as tx:
            tx.upsert({"id": 5003})
            tx.upsert({"id": 5004, "x": float("inf")})
    with pytest.raises(hotset.DocumentError, match="expects"):
        db.upsert_many("items", [{"id": 5005}, {"id": 5006, "year": "x"}])
    assert all(db.get("items", k) is None for k in range(5000, 5007))
    assert db.query("items").total().limit(0).execute().total == before
    assert db.get("items", 1) == items[1]


# ---- the query builder

def reference(items, keep, key=None, reverse=False):
    rows = [d for d in items if keep(d)]
    if key:
        rows.sort(key=key, reverse=reverse)
    return rows


@pytest.mark.parametrize("op,value,keep", [
    ("=", 2010, lambda d: d["year"] == 2010),
    ("!=", 2010, lambda d: d["year"] != 2010),
    ("<", 2005, lambda d: d["year"] < 2005),
    ("<=", 2005, lambda d: d["year"] <= 2005),
    (">", 2025, lambda d: d["year"] > 2025),
    (">=", 2025, lambda d: d["year"] >= 2025),
    ("in", [2001, 2003, 2029], lambda d: d["year"] in (2001, 2003, 2029)),
    ("range", (2010, 2012), lambda d: 2010 <= d["year"] <= 2012),
])
def test_every_comparison_matches_a_python_filter(db, items, op, value, keep):
    got = db.query("items").where("year", op, value).sort("id").execute()
    assert ids(got) == ids(reference(items, keep, key=lambda d: d["id"]))


def test_array_like_empty_any_not_and_or(db, items):
    db.upsert("items", {"id": 900, "name": "lonely", "year": 2000, "tags": []})
    docs = items + [{"id": 900, "name": "lonely", "year": 2000, "tags": []}]
    q = db.query
    assert ids(q("items").where("tags", "in", ["red"]).sort("id").execute()) == \
        [d["id"] for d in docs if "red" in d["tags"]]
    assert ids(q("items").where("tags", "allset", ["red", "bike"]).sort("id").execute()) == \
        [d["id"] for d in docs if {"red", "bike"} <= set(d["tags"])]
    assert ids(q("items").where("name", "like", "name_").where("id", "<", 20).sort("id").execute()) == \
        [d["id"] for d in docs if d["id"] < 20]
    assert ids(q("items").where("tags", "empty").execute()) == [900]
    assert len(q("items").where("tags", "any").execute()) == len(items)
    assert ids(q("items").where_not("year", "<", 2028).sort("id").execute()) == \
        [d["id"] for d in docs if not d["year"] < 2028]
    got = q("items").where_any(("year", "=", 2000), ("name", "=", "name3"),
                               {"not": {"field": "year", "op": "<", "value": 2029}}).sort("id").execute()
    assert ids(got) == [d["id"] for d in docs if d["year"] in (2000, 2029) or d["name"] == "name3"]
    got = q("items").filter({"and": [{"field": "year", "op": ">", "value": 2020},
                                     {"field": "name", "op": "in", "values": ["name1", "name2"]}]}).execute()
    assert sorted(ids(got)) == [d["id"] for d in docs if d["year"] > 2020 and d["name"] in ("name1", "name2")]


def test_sort_limit_offset_total(db, items):
    got = (db.query("items").where("year", ">", 2010).where("name", "=", "name3")
           .sort("year").sort("id", desc=True).limit(5).offset(2).total().execute())
    expected = sorted((d for d in items if d["year"] > 2010 and d["name"] == "name3"),
                      key=lambda d: (d["year"], -d["id"]))
    assert got.items == expected[2:7]
    assert got.total == len(expected)
    assert db.query("items").limit(3).execute().total is None
    desc = db.query("items").sort("price", desc=True).limit(10).execute()
    assert [d["price"] for d in desc] == sorted((d["price"] for d in items), reverse=True)[:10]


def test_aggregations(db, items):
    got = (db.query("items").where("year", "<", 2010).limit(0)
           .aggregate_count().aggregate_sum("price").aggregate_avg("price")
           .aggregate_min("year").aggregate_max("year").distinct("name")
           .facet(["year"], sort=["-count", "year"], limit=3).execute())
    rows = [d for d in items if d["year"] < 2010]
    by = {a["type"]: a for a in got.aggregations}
    assert got.items == []
    assert by["count"]["value"] == len(rows)
    assert math.isclose(by["sum"]["value"], sum(d["price"] for d in rows))
    assert math.isclose(by["avg"]["value"], sum(d["price"] for d in rows) / len(rows))
    assert (by["min"]["value"], by["max"]["value"]) == (min(d["year"] for d in rows), max(d["year"] for d in rows))
    assert sorted(by["distinct"]["values"]) == sorted({d["name"] for d in rows})
    counts = {}
    for d in rows:
        counts[d["year"]] = counts.get(d["year"], 0) + 1
    expected = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    assert [(g["values"][0], g["count"]) for g in by["facet"]["groups"]] == expected


def test_joins(db, items):
    db.create_namespace("names", indexes=[{"field": "name", "type": "string", "index": "hash", "pk": True}])
    db.upsert_many("names", [{"name": f"name{i}", "label": f"L{i}"} for i in range(3)])
    left = db.query("items").where("id", "<", 10).sort("id").join(db.query("names"), on=[("name", "name")],
                                                                  alias="who").execute()
    assert [len(d["who"]) for d in left] == [1 if i % 7 < 3 else 0 for i in range(10)]
    assert left[1]["who"][0] == {"name": "name1", "label": "L1"}
    inner = db.query("items").where("id", "<", 10).sort("id").inner_join(
        db.query("names").where("label", "!=", "L0"), on=[("name", "=", "name")]).execute()
    assert ids(inner) == [i for i in range(10) if i % 7 in (1, 2)]
    assert all(d["names"][0]["name"] == d["name"] for d in inner)
    with pytest.raises(hotset.QueryError, match="kind"):
        db.query("items").join(db.query("names"), on=[("name", "name")], kind="outer")


def test_full_text_match_rank_highlight_snippet(db, items):
    got = db.query("items").match("description", "boat").limit(5).total().execute()
    expected = [d["id"] for d in items if "boat" in d["description"].split()]
    assert got.total == len(expected) and set(ids(got)) <= set(expected)
    ranks = [d["_rank"] for d in got]
    assert ranks == sorted(ranks, reverse=True) and all(r > 0 for r in ranks)
    marked = (db.query("items").match("description", "boat").where("year", ">", 2015)
              .highlight(pre="[", post="]").snippet(around=1, pre="<", post=">").limit(3).execute())
    assert len(marked) > 0
    for d in marked:
        assert d["year"] > 2015
        assert "[boat]" in d["_highlight"]["description"]
        assert "<boat>" in d["_snippet"]["description"]
    by_year = db.query("items").match("description", "boat").sort("year").sort("id").execute()
    assert ids(by_year) == [d["id"] for d in sorted((d for d in items if d["id"] in expected),
                                                     key=lambda d: (d["year"], d["id"]))]
    sql = db.sql("SELECT id FROM items WHERE MATCH(description, 'boat') LIMIT 100")
    assert sorted(d["id"] for d in sql) == sorted(expected)


def test_sql_select_star_answers_as_the_builder_does(db, items):
    # Whole documents through SQL and through the builder: the same dicts (ranks
    # included), the same total; embedded, SQL takes the builder's way to Python objects.
    built = db.query("items").match("description", "boat").limit(5).total().execute()
    sql = db.sql("SELECT *, COUNT(*) FROM items WHERE MATCH(description, 'boat') LIMIT 5")
    assert sql.total > 0 and len(sql) == 5
    assert sql.items == built.items and sql.total == built.total and sql.affected is None
    built = db.query("items").where("year", ">", 2015).sort("year", desc=True).sort("id").limit(7).execute()
    sql = db.sql("SELECT * FROM items WHERE year > 2015 ORDER BY year DESC, id LIMIT 7")
    assert sql.items == built.items and len(sql) == 7 and sql.total is None
    explained = db.sql("EXPLAIN SELECT * FROM items WHERE year > 2015 LIMIT 1")
    built = db.query("items").where("year", ">", 2015).limit(1).explain()
    assert explained.items == built.items and set(explained.explain) == set(built.explain)


def test_search_across_namespaces(db, items):
    db.create_namespace("notes", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True},
                                          {"field": "body", "index": "text"}])
    db.upsert_many("notes", [{"id": 1, "body": "a boat on the lake"}, {"id": 2, "body": "nothing here"}])
    got = db.search({"query": "boat", "namespaces": ["items", "notes"], "limit": 500})
    assert {d["_namespace"] for d in got} == {"items", "notes"}
    assert got.total == len([d for d in items if "boat" in d["description"].split()]) + 1


def test_explain_and_to_dict(db, items):
    q = db.query("items").where("year", ">", 2020).sort("year").limit(4).total()
    plain = q.execute()
    explained = q.explain()
    assert explained.items == plain.items and explained.total == plain.total
    steps = [s["step"] for s in explained.explain["steps"]]
    assert "plan" in steps and explained.explain["total_ns"] > 0
    assert plain.explain is None
    assert q.to_dict() == {"namespace": "items",
                           "filter": {"field": "year", "op": ">", "values": [2020]},
                           "sort": [{"field": "year", "desc": False}], "limit": 4, "total": True}
    assert "Query(" in repr(q) and "Result(items=4, total=" in repr(plain)
    assert isinstance(plain, collections.abc.Sequence) and plain[-1] == plain.items[-1]
    assert plain[1:3] == plain.items[1:3] and list(plain) == plain.items


def test_bad_queries_raise_query_errors(db, items):
    q = db.query
    with pytest.raises(hotset.QueryError, match="unknown operator '~'"):
        q("items").where("year", "~", 1)
    with pytest.raises(hotset.QueryError, match="RANGE takes two values"):
        q("items").where("year", "range", [1])
    with pytest.raises(hotset.QueryError, match="use 'in'"):
        q("items").where("year", "=", [1, 2])
    with pytest.raises(hotset.QueryError, match="takes no value"):
        q("items").where("tags", "empty", 3)
    with pytest.raises(hotset.QueryError, match="unknown key"):
        q("items").filter({"field": "year", "opp": ">"})
    with pytest.raises(hotset.NotFoundError):
        q("nowhere").execute()
    with pytest.raises(hotset.QueryError):
        q("items").match("nosuchindex", "boat").execute()
    with pytest.raises(OverflowError):
        q("items").limit(-1)
    assert len(q("items").where("year", ">", 2000).execute()) > 0  # still fine afterwards


def test_a_query_past_its_time_limit_raises_and_nothing_is_returned(db):
    pk = [{"field": "id", "type": "int", "index": "hash", "pk": True}]
    db.create_namespace("t", indexes=pk)
    db.upsert_many("t", [{"id": i, "s": f"value {i}"} for i in range(100_000)])
    db.create_namespace("few", indexes=pk)
    db.upsert_many("few", [{"id": i, "below": -1} for i in range(200)])
    # 1 ms for an inner join whose ON never holds (every id is 0 or more, every `below` is
    # -1), so each of the 100,000 rows is compared with all 200 of "few", read from their
    # documents: seconds of work on any machine, thousands of times the limit. (The limit is
    # asked between rows, so the query stops soon after it passes.)
    with pytest.raises(hotset.QueryTimeoutError, match="timed out") as e:
        db.query("t").inner_join(db.query("few"), [("id", "<", "below")]).timeout(1).execute()
    assert isinstance(e.value, hotset.Error) and e.value.limit_ms == 1
    # 0 asks for no limit of the query's own (it once meant "already past").
    matches = [i for i in range(100_000) if "9" in f"value {i}"]
    assert len(db.query("t").where("s", "like", "%9%").timeout(0).execute()) == len(matches)
    assert len(db.query("t").where("s", "like", "%99%").timeout(60_000).execute()) == \
        len([i for i in range(100_000) if "99" in f"value {i}"])


# ---- SQL

def test_sql_reads_writes_and_ddl(db):
    assert db.sql("CREATE TABLE people (id INT PRIMARY KEY, name TEXT, age INT)").affected == 1
    assert db.sql("CREATE INDEX ON people (age)").affected == 1
    inserted = db.sql("INSERT INTO people (id, name, age) VALUES (1, 'ada', 36), (2, 'bob', 25), (3, 'cy', 41)")
    assert inserted.affected == 3
    got = db.sql("SELECT name FROM people WHERE age > 30 ORDER BY age DESC")
    assert got.items == [{"name": "cy"}, {"name": "ada"}]
    total = db.sql("SELECT *, COUNT(*) FROM people WHERE age > 20 ORDER BY id LIMIT 1")
    assert total.total == 3 and total[0]["id"] == 1
    assert db.sql("UPDATE people SET age = age + 1 WHERE id = 2").affected == 1
    assert db.get("people", 2)["age"] == 26
    assert db.sql("DELETE FROM people WHERE age < 30").affected == 1
    assert db.sql("SELECT COUNT(*) FROM people").items == [{"count(*)": 2}]
    explained = db.sql("EXPLAIN SELECT * FROM people WHERE age = 36")
    assert explained.explain and explained.explain["steps"]
    assert db.sql("DROP TABLE people").affected == 1
    assert db.namespaces() == []


def test_bad_sql_raises_query_error_and_the_database_goes_on(db, items):
    with pytest.raises(hotset.QueryError) as e:
        db.sql("SELECT * FROM items WHERE")
    assert str(e.value)
    with pytest.raises(hotset.QueryError):
        db.sql("SELEKT 1")
    with pytest.raises(hotset.NotFoundError):
        db.sql("SELECT * FROM nowhere")
    assert len(db.sql("SELECT * FROM items LIMIT 3")) == 3


# ---- transactions

def test_transaction_commits_on_exit_and_rolls_back_on_error(db, items):
    with db.transaction("items") as tx:
        tx.upsert({"id": 700, "name": "t", "year": 2000})
        tx.insert({"id": 701, "name": "t", "year": 2000})
        tx.update(dict(items[5], name="t"))
        tx.delete(6)
        assert len(tx) == 4 and tx.namespace == "items"
        assert db.get("items", 700) is None  # nothing applied before commit
    assert sorted(ids(db.query("items").where("name", "=", "t").execute())) == [5, 700, 701]
    assert db.get("items", 6) is None

    with pytest.raises(RuntimeError, match="boom"):
        with db.transaction("items") as tx:
            tx.upsert({"id": 800, "name": "u"})
            raise RuntimeError("boom")
    assert db.get("items", 800) is None


def test_a_failing_operation_fails_the_whole_transaction(db, items):
    tx = db.transaction("items")
    tx.upsert({"id": 801, "name": "v"})
    tx.delete(7)
    tx.insert(dict(items[3]))
    with pytest.raises(hotset.AlreadyExistsError, match="duplicate primary key 3"):
        tx.commit()
    assert db.get("items", 801) is None and db.get("items", 7) == items[7]
    with pytest.raises(hotset.Error, match="already committed"):
        tx.upsert({"id": 802})
    other = db.transaction("items")
    other.upsert({"id": 803})
    other.rollback()
    with pytest.raises(hotset.Error, match="rolled back"):
        other.commit()
    assert db.get("items", 803) is None
    with pytest.raises(hotset.NotFoundError):
        with db.transaction("nowhere") as tx:
            tx.upsert({"id": 1})


def test_a_transaction_writes_several_namespaces_in_one_commit(db, items):
    db.create_namespace("lines", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    with db.transaction("items") as tx:
        tx.upsert({"id": 900, "name": "order"})
        tx.insert({"id": 1, "item": 900, "amount": 10}, namespace="lines")
        tx.insert({"id": 2, "item": 900, "amount": 20}, namespace="lines")
        tx.delete(8)
        assert len(tx) == 4 and tx.namespace == "items"
        assert db.get("items", 900) is None and db.get("lines", 1) is None  # nothing before commit
    assert db.get("items", 900)["name"] == "order" and db.get("items", 8) is None
    assert [db.get("lines", i)["amount"] for i in (1, 2)] == [10, 20]

    # A refused operation in one namespace leaves every namespace as it was.
    tx = db.transaction("lines")
    tx.delete(1)
    tx.upsert({"id": 901, "name": "another"}, namespace="items")
    tx.insert({"id": 2, "item": 901}, namespace="lines")
    with pytest.raises(hotset.AlreadyExistsError, match="duplicate primary key 2"):
        tx.commit()
    assert db.get("lines", 1) is not None and db.get("items", 901) is None

    with pytest.raises(hotset.NotFoundError, match="nowhere"):
        with db.transaction("items") as tx:
            tx.upsert({"id": 902})
            tx.delete(1, namespace="nowhere")
    assert db.get("items", 902) is None
