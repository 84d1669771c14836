"""Before and after, side by side: the Python comparison against Reindexer
(`python_compare.py`) run alternately under two interpreters, each with its own build of
the `hotset` package (and pyreindexer), R rounds; prints the median of every figure per
build, and new/old for Hotset's own figures and for its ratio to Reindexer.

    python bench/python_ab.py --old target/pyenv-old/bin/python --new target/pyenv/bin/python -r 3

Reindexer runs in both rounds, so its figures show how much the machine moved between
them; the ratio to Reindexer is the figure that carries over.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def compare(python, seconds):
    out = subprocess.run([python, os.path.join(HERE, "python_compare.py"), "-r", "1", "--seconds", str(seconds)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{python}: python_compare failed:\n{out.stderr[-3000:]}")
    return json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("-r", "--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    runs = {"old": [], "new": []}
    for i in range(a.runs):
        for side in ("old", "new"):
            result = compare(getattr(a, side), a.seconds)
            runs[side].append(result)
            print(f"# round {i + 1} {side}: {json.dumps(result['ratios'])}", file=sys.stderr)
    keys = list(runs["new"][0]["median"]["hotset"])
    out = {"bench": "python_ab", "runs": a.runs, "seconds": a.seconds, "figures": {}}
    print(f"{'':24s} {'old':>10s} {'new':>10s} {'new/old':>8s} {'old vs rx':>9s} {'new vs rx':>9s}")
    for key in keys:
        med = {side: statistics.median(r["median"]["hotset"][key] for r in runs[side]) for side in runs}
        ratio = {side: statistics.median(r["ratios"][key] for r in runs[side]) for side in runs}
        change = med["old"] / med["new"] if key.startswith("rss") else med["new"] / med["old"]
        out["figures"][key] = {"old": med["old"], "new": med["new"], "new_over_old": round(change, 3),
                               "old_vs_reindexer": ratio["old"], "new_vs_reindexer": ratio["new"]}
        print(f"{key:24s} {med['old']:10.1f} {med['new']:10.1f} {change:7.2f}x {ratio['old']:8.2f}x {ratio['new']:8.2f}x")
    print(json.dumps(out, separators=(",", ":")))


if __name__ == "__main__":
    main()
