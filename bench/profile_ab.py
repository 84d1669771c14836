#!/usr/bin/env python3
"""Two builds of Hotset side by side on the profile-search task (issue 15): a change's
effect measured in one run, on the same machine state, instead of against figures taken
on another day (this shared machine's speed varies by 2x from one hour to the next).

Owns: starting both `hotset serve` binaries (each its own data folder and ports), loading
the 1M profiles into each over HTTP (timed: the load rate), checking that both count the
same matches for sample pairs, then R rounds in which every variant runs under wrk on
each server in turn (the first server alternating from round to round). Prints the
medians per variant and side, and one JSON line. Never leaves a server or a data folder
behind, or waits on a sleep.

The queries, pairs and variants are `profile_search.py`'s (wrk -t1 -c8 over HTTP SQL).

usage: bench/profile_ab.py --old BINARY [--new BINARY] [-r 3] [--seconds 10]
                           [--variants plain,sorted,total,sorted_total] [--n 1000006]
The old binary is built from another commit, e.g.:
  git worktree add /tmp/old <commit> && (cd /tmp/old && CARGO_TARGET_DIR=/tmp/old-target \\
    cargo build --release -p hotset-server --bin hotset)   # then --old /tmp/old-target/release/hotset
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_search import HOTSET, VARIANTS, Hotset, condition, data_files, hotset_sql, prefix_pairs  # noqa: E402
from run_http import log, lua_script, wrk  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", default=HOTSET)
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--n", type=int, default=1_000_006)
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    a = ap.parse_args()
    variants = a.variants.split(",")
    if not shutil.which("wrk"):
        sys.exit("wrk is missing: apt-get install -y wrk")
    jsonl, _ = data_files(a.n)
    pairs = prefix_pairs(jsonl, a.pairs)
    work = tempfile.mkdtemp(prefix="hotset-profile-ab-")
    load_before = os.getloadavg()
    servers = {}
    try:
        loads = {}
        for side, binary in (("old", a.old), ("new", a.new)):
            servers[side] = Hotset(work, binary, side)
            rows, seconds = servers[side].load(jsonl)
            loads[side] = round(rows / seconds)
            log(f"{side}: loaded {rows} rows in {seconds:.1f} s ({loads[side]:,} rows/s)")
        for first, last in pairs[:20]:
            counts = {side: server.sql(f"SELECT COUNT(*) FROM users WHERE {condition(first, last)}")
                      for side, server in servers.items()}
            assert counts["old"] == counts["new"], (first, last, counts)
        scripts = {}
        for variant in variants:
            scripts[variant] = os.path.join(work, f"{variant}.lua")
            with open(scripts[variant], "w") as f:
                f.write(lua_script("/api/v1/sql", [hotset_sql(variant, p, q) for p, q in pairs]))
        runs = {v: {"old": [], "new": []} for v in variants}
        for i in range(a.r):
            order = ("old", "new") if i % 2 == 0 else ("new", "old")
            for variant in variants:
                for side in order:
                    log(f"round {i + 1}/{a.r}: {variant}: {side}")
                    runs[variant][side].append(wrk(servers[side].addr, scripts[variant], a.seconds, connections=8))
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    median = {v: {side: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for side, rs in sides.items()}
              for v, sides in runs.items()}
    print("| variant | old requests/s | old p99 µs | new requests/s | new p99 µs | new/old |")
    print("|---|---:|---:|---:|---:|---:|")
    for variant, m in median.items():
        o, n = m["old"], m["new"]
        print(f"| {variant} | {o['requests_s']:,.0f} | {o['p99_us']:,.0f} | {n['requests_s']:,.0f} | "
              f"{n['p99_us']:,.0f} | {n['requests_s'] / o['requests_s']:.2f} |")
    print(f"load over HTTP: old {loads['old']:,} rows/s, new {loads['new']:,} rows/s; "
          f"load average {load_before} -> {load_after}")
    print(json.dumps({"bench": "profile_ab", "rows": a.n, "median_of": a.r, "seconds": a.seconds,
                      "load_rows_s": loads, "load_before": load_before, "load_after": load_after,
                      "median": median, "runs": runs}))


if __name__ == "__main__":
    main()
