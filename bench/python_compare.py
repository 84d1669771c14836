#!/usr/bin/env python3
"""Hotset embedded (the `hotset` Python package) against Reindexer's builtin engine
(pyreindexer), side by side on the same data and the same seeded queries, in one run.

Each run starts both sides as fresh processes, one after the other (interleaved, so load
on this shared machine falls on both alike): bench/python_hotset.py and
../shared/bench/query_pyreindexer.py (--api builder --no-loop-insert). Figures are the
median of the runs; ratios are Hotset/Reindexer for throughput and Reindexer/Hotset for
memory (above 1: Hotset better).

  get by id        query WHERE id = ? (Hotset also: db.get, its key lookup)
  name_year        WHERE name = ? AND year > 2010 ORDER BY year LIMIT 10, with total
  year_range       year 2010..2020 ORDER BY year DESC LIMIT 20 OFFSET 100
  fulltext         one dictionary word, LIMIT 10
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


def last_json(text):
    return json.loads([ln for ln in text.splitlines() if ln.startswith("{")][-1])


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return last_json(out.stdout)


def figures(result, side):
    r = result["results"]
    f = {label: r[h if side == "hotset" else x]["ops_s"] for label, h, x in QUERIES}
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
    runs = {"hotset": [], "reindexer": []}
    for i in range(a.runs):
        for side, cmd in (("hotset", hotset_cmd), ("reindexer", rx_cmd)):
            result = run(cmd)
            runs[side].append(figures(result, side))
            print(f"# run {i + 1} {side}: {json.dumps(runs[side][-1])}", file=sys.stderr)
            if side == "hotset":
                sanity = result["sanity_rows"]
            else:
                rx_sanity = result["sanity_rows"]
    # Both sides must have answered the same queries with the same row counts.
    # (Reindexer's counts are pairs: its builder and SQL answers.)
    assert (sanity["b"], sanity["b_total"], sanity["c"], sanity["d"]) == \
        (rx_sanity["b"][0], rx_sanity["b_total"], rx_sanity["c"][0], rx_sanity["d"][0]), (sanity, rx_sanity)
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
