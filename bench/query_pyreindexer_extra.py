#!/usr/bin/env python3
"""Reindexer (pyreindexer, builtin engine in process): the Python comparison's extra shapes,
beside ../shared/bench/query_pyreindexer.py (which stays as it is). The mirror of the
`g_*` and `h_*` measurements of bench/python_hotset.py: same data, same seeded parameters
(bench_common.Params and bench/extra_shapes.py), same timing loop, results read into dicts.

Loads the items data set with the shared script's indexes
  id (int, hash, pk), name (string, hash), year (int, tree), description (text)
plus a composite tree index name+year, then measures:
  g_in_range[builder]  name IN (5 names) AND year RANGE lo..hi ORDER BY year DESC, id
                       LIMIT 10 OFFSET 10, with the total
  h_fulltext[sql]      SELECT * FROM items WHERE description = 'word' LIMIT 10
  h_fulltext[builder]  the same through the query builder

usage: query_pyreindexer_extra.py [--data F] [--dsn builtin:///tmp/rxdb_bench_extra] [--seconds 3]
Last stdout line is a JSON object with all figures.
"""
import argparse
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "bench"))
sys.path.insert(0, HERE)
from bench_common import Params, cycle, ensure_items, read_lines, report, rss_mb, timed_run  # noqa: E402
from extra_shapes import COMPOSITE, LIMIT, OFFSET, in_range_params  # noqa: E402

from pyreindexer import RxConnector  # noqa: E402
from pyreindexer.query import CondType  # noqa: E402


def idx(name, field_type, index_type, pk=False, paths=None):
    return {"name": name, "json_paths": paths or [name], "field_type": field_type, "index_type": index_type,
            "is_pk": pk, "is_array": False, "is_dense": False, "is_sparse": False,
            "is_no_column": False, "collate_mode": "none", "sort_order_letters": "",
            "expire_after": 0, "config": {}}


INDEXES = [idx("id", "int", "hash", pk=True), idx("name", "string", "hash"),
           idx("year", "int", "tree"), idx("description", "string", "text"),
           idx("+".join(COMPOSITE), "composite", "tree", paths=list(COMPOSITE))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, "data", "items_100k.jsonl"))
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dsn", default="builtin:///tmp/rxdb_bench_extra")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    a = ap.parse_args()

    lines = read_lines(ensure_items(a.data, a.n))
    P = Params(lines)
    in_range = in_range_params(P)
    if a.dsn.startswith("builtin:///"):
        shutil.rmtree(a.dsn[len("builtin://"):], ignore_errors=True)
    db = RxConnector(a.dsn)
    ns = "items"
    db.namespace_open(ns)
    for d in INDEXES:
        db.index_add(ns, d)
    out = {"bench": "query_pyreindexer_extra", "dsn": a.dsn, "records": len(lines), "seconds": a.seconds,
           "results": {}}
    R = out["results"]
    loads = json.loads
    t0 = time.perf_counter()
    tx = db.new_transaction(ns)
    for ln in lines:
        tx.insert(loads(ln))
    tx.commit()
    out["load_s"] = round(time.perf_counter() - t0, 3)
    out["rss_mb_after_load"] = rss_mb()
    # The first full-text query builds the text index.
    list(db.new_query(ns).where("description", CondType.CondEq, P.words[0]).limit(10).execute())

    q = db.new_query

    def in_range_query(params):
        names, lo, hi = params
        qr = (q(ns).where("name", CondType.CondSet, names).where("year", CondType.CondRange, [lo, hi])
              .sort("year", desc=True).sort("id").offset(OFFSET).limit(LIMIT).request_total().execute())
        return list(qr), qr.total_count()

    def g_builder(params):
        items, _ = in_range_query(params)
        return len(items)

    def h_sql(word):
        return len(list(db.exec_sql(f"SELECT * FROM items WHERE description = '{word}' LIMIT 10")))

    def h_builder(word):
        return len(list(q(ns).where("description", CondType.CondEq, word).limit(10).execute()))

    items, total = in_range_query(in_range[0])
    out["sanity_rows"] = {"g_ids": [d["id"] for d in items], "g_total": total,
                          "g_totals": [in_range_query(p)[1] for p in in_range[:50]],
                          "h": (h_sql(P.words[1]), h_builder(P.words[1]))}

    R["g_in_range[builder]"] = timed_run(g_builder, cycle(in_range), a.seconds, a.warmup)
    R["h_fulltext[sql]"] = timed_run(h_sql, cycle(P.words), a.seconds, a.warmup)
    R["h_fulltext[builder]"] = timed_run(h_builder, cycle(P.words), a.seconds, a.warmup)
    db.close()
    if a.dsn.startswith("builtin:///"):
        shutil.rmtree(a.dsn[len("builtin://"):], ignore_errors=True)
    for k, v in R.items():
        print(f"# {k:28s} {v}", file=sys.stderr)
    report(out)


if __name__ == "__main__":
    main()
