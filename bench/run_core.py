#!/usr/bin/env python3
"""Side-by-side run of the core engine benchmarks (issue 2), printing one JSON line last.

  1. Hotset (bench/runner, native Rust, embedded) on the catalogue at 100k and 1M items and
     on the user profiles at 100k and 1M, R runs each, interleaved; median of each figure.
  2. The peers on the 100k catalogue through ../shared/bench: Reindexer (pyreindexer,
     builtin engine) and SQLite (in memory), R runs each, median.
  3. Growth: p50 latency at 1M divided by p50 at 100k for every indexed query.

usage: bench/run_core.py [-r 3] [--seconds 3] [--skip-peers]
Data sets are generated into bench/data/ on first use (seeded, identical to the peers').
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared", "bench")
DATA = os.path.join(HERE, "data")
RUNNER = os.path.join(ROOT, "target", "release", "hotset-bench")


def dataset(kind, n, label):
    path = os.path.join(DATA, f"{kind}_{label}.jsonl")
    if not os.path.exists(path):
        os.makedirs(DATA, exist_ok=True)
        subprocess.check_call([sys.executable, os.path.join(SHARED, "gen_dataset.py"), kind, "--n", str(n), "--out", path])
    params = path.replace(".jsonl", ".params.json")
    if not os.path.exists(params):
        subprocess.check_call([sys.executable, os.path.join(HERE, "params.py"), kind, path, params])
    return path, params


def last_json(stdout):
    return json.loads([ln for ln in stdout.splitlines() if ln.strip().startswith("{")][-1])


def median_tree(objs):
    first = objs[0]
    if isinstance(first, dict):
        return {k: median_tree([o[k] for o in objs if k in o]) for k in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return round(statistics.median(objs), 3)
    return first


def run_hotset(kind, path, params, seconds):
    out = subprocess.run([RUNNER, kind, path, params, "--seconds", str(seconds)], capture_output=True, text=True, check=True)
    return last_json(out.stdout)


def run_peer(script, extra, seconds):
    cmd = [sys.executable, os.path.join(SHARED, script), "--data", os.path.join(DATA, "items_100k.jsonl"),
           "--seconds", str(seconds)] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return last_json(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--skip-peers", action="store_true")
    a = ap.parse_args()
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "hotset-bench"], cwd=ROOT)
    sets = {
        "items_100k": ("items",) + dataset("items", 100_000, "100k"),
        "items_1m": ("items",) + dataset("items", 1_000_000, "1m"),
        "users_100k": ("users",) + dataset("users", 100_000, "100k"),
        "users_1m": ("users",) + dataset("users", 1_000_006, "1m"),
    }
    runs = {name: [] for name in sets}
    peers = {"reindexer": [], "sqlite": []}
    for i in range(a.r):
        for name, (kind, path, params) in sets.items():
            print(f"# run {i + 1}/{a.r}: hotset {name}", file=sys.stderr)
            runs[name].append(run_hotset(kind, path, params, a.seconds))
        if not a.skip_peers:
            print(f"# run {i + 1}/{a.r}: reindexer, sqlite", file=sys.stderr)
            peers["reindexer"].append(run_peer("query_pyreindexer.py", ["--api", "builder", "--no-loop-insert"], a.seconds))
            peers["sqlite"].append(run_peer("query_sqlite.py", [], a.seconds))
    hotset = {name: median_tree(objs) for name, objs in runs.items()}
    growth = {}
    for query in ["a_get_by_id", "b_name_year", "c_year_range", "e_upsert"]:
        small, big = hotset["items_100k"]["results"][query], hotset["items_1m"]["results"][query]
        growth[query] = round(big["p50_us"] / small["p50_us"], 2)
    for query in ["g_prefix_page", "g_prefix_page_total"]:
        small, big = hotset["users_100k"]["results"][query], hotset["users_1m"]["results"][query]
        growth[f"users_{query}"] = round(big["p50_us"] / small["p50_us"], 2)
    report = {"bench": "run_core", "median_of": a.r, "seconds": a.seconds, "hotset": hotset, "growth_p50_1m_over_100k": growth}
    if not a.skip_peers:
        report["peers"] = {name: median_tree(objs) for name, objs in peers.items()}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
