#!/usr/bin/env python3
"""Hotset embedded (the `hotset` Python package) against Reindexer's builtin engine
(pyreindexer), side by side on the same data and the same seeded queries, in one run.

Each run starts the sides as fresh processes, one after the other (interleaved, so load
on this shared machine falls on both alike): bench/python_hotset.py,
../shared/bench/query_pyreindexer.py (--api builder --no-loop-insert) and, for the extra
shapes, bench/query_pyreindexer_extra.py (its own namespace with a name+year composite
index, the same seeded parameters: bench/extra_shapes.py). Figures are the
median of the runs; ratios are Hotset/Reindexer for throughput and Reindexer/Hotset for
memory (above 1: Hotset better).

  get by id        query WHERE id = ? (Hotset also: db.get, its key lookup)
  name_year        WHERE name = ? AND year > 2010 ORDER BY year LIMIT 10, with total
  year_range       year 2010..2020 ORDER BY year DESC LIMIT 20 OFFSET 100
  fulltext         one dictionary word, LIMIT 10
  in_range         name IN (5 names) AND year BETWEEN lo AND hi ORDER BY year DESC, id
                   LIMIT 10 OFFSET 10, with total (builder; composite name+year index)
  fulltext sql     the full-text query through SQL (Hotset MATCH(description, 'w'),
                   Reindexer description = 'w'); "fulltext builder" the same run's builder form
  upsert           upsert of an existing record (name and year changed)
  bulk insert      100k records through one transaction (json.loads per line included)
  RSS after load   the whole Python process, data set lines included on both sides

usage: bench/python_compare.py [-r 3] [--seconds 3] [--memory]
Both packages must be importable by this interpreter: `pip install ./bindings/python
pyreindexer`. Prints each run, the medians and ratios, and one JSON line last; saves it
to bench/results/<date>-python.json.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared", "bench")
DATA = os.path.join(HERE, "data", "items_100k.jsonl")

# (label, Hotset key, Reindexer key, what is compared)
QUERIES = [
    ("get_by_id (query)", "a_get_by_id[builder]", "a_get_by_id[builder]"),
    ("get_by_key (db.get)", "a_get_by_key", "a_get_by_id[builder]"),
    ("name_year + total", "b_name_year[builder]", "b_name_year[builder]"),
    ("year_range offset", "c_year_range[builder]", "c_year_range[builder]"),
    ("fulltext one word", "d_fulltext[builder]", "d_fulltext[builder]"),
    ("upsert", "e_upsert", "e_upsert"),
]
# The extra shapes: Hotset's keys from python_hotset.py, Reindexer's from query_pyreindexer_extra.py.
EXTRA = [
    ("in_range + total", "g_in_range[builder]", "g_in_range[builder]"),
    ("fulltext sql", "h_fulltext[sql]", "h_fulltext[sql]"),
    ("fulltext builder", "h_fulltext[builder]", "h_fulltext[builder]"),
]


def last_json(text):
    return json.loads([ln for ln in text.splitlines() if ln.startswith("{")][-1])


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return last_json(out.stdout)


def figures(result, side, extra=None):
    r = result["results"]
    f = {label: r[h if side == "hotset" else x]["ops_s"] for label, h, x in QUERIES}
    e = r if side == "hotset" else extra["results"]
    f.update({label: e[h if side == "hotset" else x]["ops_s"] for label, h, x in EXTRA})
    f["bulk_insert rows/s"] = r["f_bulk_insert_tx"]["rows_s"]
    f["rss_mb_after_load"] = result["rss_mb_after_load"]
    f["rss_mb_before_load"] = result["rss_mb_before_load"]
    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-r", "--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--memory", action="store_true", help="Hotset in memory only (default: on a folder, logged)")
    a = ap.parse_args()
    py = sys.executable
    hotset_cmd = [py, os.path.join(HERE, "python_hotset.py"), "--data", DATA, "--seconds", str(a.seconds)]
    if a.memory:
        hotset_cmd.append("--memory")
    rx_cmd = [py, os.path.join(SHARED, "query_pyreindexer.py"), "--data", DATA, "--seconds", str(a.seconds),
              "--api", "builder", "--no-loop-insert"]
    rx_extra_cmd = [py, os.path.join(HERE, "query_pyreindexer_extra.py"), "--data", DATA, "--seconds", str(a.seconds)]
    runs = {"hotset": [], "reindexer": []}
    for i in range(a.runs):
        result = run(hotset_cmd)
        sanity = result["sanity_rows"]
        runs["hotset"].append(figures(result, "hotset"))
        print(f"# run {i + 1} hotset: {json.dumps(runs['hotset'][-1])}", file=sys.stderr)
        result, extra = run(rx_cmd), run(rx_extra_cmd)
        rx_sanity, rx_extra_sanity = result["sanity_rows"], extra["sanity_rows"]
        runs["reindexer"].append(figures(result, "reindexer", extra))
        print(f"# run {i + 1} reindexer: {json.dumps(runs['reindexer'][-1])}", file=sys.stderr)
    # Both sides must have answered the same queries with the same row counts.
    # (Reindexer's counts are pairs: its builder and SQL answers.)
    assert (sanity["b"], sanity["b_total"], sanity["c"], sanity["d"]) == \
        (rx_sanity["b"][0], rx_sanity["b_total"], rx_sanity["c"][0], rx_sanity["d"][0]), (sanity, rx_sanity)
    # The extra shapes: the same page of ids and the same totals; SQL and builder agree.
    for key in ("g_ids", "g_total", "g_totals", "h"):
        assert sanity[key] == rx_extra_sanity[key], (key, sanity[key], rx_extra_sanity[key])
    median = {side: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for side, rs in runs.items()}
    ratios = {}
    print(f"{'':24s} {'hotset':>12s} {'reindexer':>12s} {'ratio':>7s}")
    for key in median["hotset"]:
        h, x = median["hotset"][key], median["reindexer"][key]
        ratio = (x / h) if key.startswith("rss") else (h / x)
        ratios[key] = round(ratio, 2)
        print(f"{key:24s} {h:12.1f} {x:12.1f} {ratio:6.2f}x")
    out = {"bench": "python_compare", "date": datetime.date.today().isoformat(), "runs": a.runs,
           "seconds": a.seconds, "hotset_mode": "memory" if a.memory else "folder", "runs_figures": runs, "median": median,
           "ratios": ratios, "sanity_rows": sanity}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", f"{out['date']}-python.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, separators=(",", ":")))


if __name__ == "__main__":
    main()
