#!/usr/bin/env python3
"""Streams side by side: redis-server (appendonly yes, everysec) and `hotset serve`
(`--fsync periodic`), driven by the same redis-benchmark commands, runs interleaved
(redis, hotset, redis, ...), median of --runs each, at -P 1 and -P 16 with 50 clients.

Commands (on 100 streams, `s:__rand_int__`):
  XADD s * f v            appending (each stream grows by about REQUESTS / 100 entries)
  XRANGE s - + COUNT 10   the first ten entries of a filled stream
  XREVRANGE s + - COUNT 10
  XLEN s

usage: bench/stream_sides.py --hotset target/release/hotset [--runs 3] [--requests 200000]
Prints a table and one JSON line (also written to bench/results/<date>-streams.json).
Needs: redis-server, redis-benchmark.
"""
import argparse
import csv
import datetime
import io
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = {
    "XADD": ["XADD", "s:__rand_int__", "*", "f", "v"],
    "XRANGE": ["XRANGE", "s:__rand_int__", "-", "+", "COUNT", "10"],
    "XREVRANGE": ["XREVRANGE", "s:__rand_int__", "+", "-", "COUNT", "10"],
    "XLEN": ["XLEN", "s:__rand_int__"],
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).stdout.strip() == b"PONG":
            return
        time.sleep(0.05)
    raise SystemExit(f"nothing answers on {port}")


def bench(port, command, pipeline, requests):
    """Requests per second of one redis-benchmark run."""
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-n", str(requests), "-r", "100", "-c", "50", "-P", str(pipeline),
         "--csv", *command], capture_output=True, text=True, check=True).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return float(rows[1][1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hotset", default=os.path.join(ROOT, "target/release/hotset"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200000)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="stream_sides.")
    procs = []
    try:
        redis_port, hotset_port = free_port(), free_port()
        procs.append(subprocess.Popen(
            ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
             "--appendfsync", "everysec", "--dir", work], stdout=subprocess.DEVNULL))
        procs.append(subprocess.Popen(
            [args.hotset, "serve", "--data", os.path.join(work, "hotset"), "--resp-port", str(hotset_port),
             "--http-port", "0", "--fsync", "periodic"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for port in (redis_port, hotset_port):
            wait_ready(port)
        sides = {"redis": redis_port, "hotset": hotset_port}
        load_before = open("/proc/loadavg").read().split()[:3]
        runs = {}
        for _ in range(args.runs):
            for pipeline in (1, 16):
                for name, command in COMMANDS.items():
                    for side, port in sides.items():
                        rps = bench(port, command, pipeline, args.requests)
                        runs.setdefault((name, pipeline, side), []).append(rps)
        load_after = open("/proc/loadavg").read().split()[:3]
        rows = []
        print(f"{'command':>10} {'P':>3} {'redis':>12} {'hotset':>12} {'ratio':>6}")
        for pipeline in (1, 16):
            for name in COMMANDS:
                r = statistics.median(runs[(name, pipeline, "redis")])
                h = statistics.median(runs[(name, pipeline, "hotset")])
                rows.append({"command": name, "pipeline": pipeline, "redis_rps": r, "hotset_rps": h,
                             "ratio": round(h / r, 3), "redis_runs": runs[(name, pipeline, "redis")],
                             "hotset_runs": runs[(name, pipeline, "hotset")]})
                print(f"{name:>10} {pipeline:>3} {r:>12,.0f} {h:>12,.0f} {h / r:>6.2f}")
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        result = {"bench": "stream_sides", "date": datetime.date.today().isoformat(), "commit": commit,
                  "runs": args.runs, "requests": args.requests, "load_before": load_before,
                  "load_after": load_after, "results": rows}
        print(f"load average before {' '.join(load_before)}, after {' '.join(load_after)}")
        os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
        with open(os.path.join(ROOT, f"bench/results/{result['date']}-streams.json"), "w") as f:
            json.dump(result, f, indent=1)
        print(json.dumps(result))
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
