#!/usr/bin/env python3
"""The hotset server against redis-server over the Redis protocol (issue 4), side by side.

Owns: building and starting `hotset serve` (data in a temporary folder, ports the kernel
picks, ready once it prints its ready line), running the shared `kv_compare.sh` against it
(which starts its own redis-server and interleaves the runs), measuring the server's CPU
time per request over the same runs, and writing bench/results/<date>-server.json. Never:
leaves a server or a data folder behind, or waits on a sleep.

What runs (`../shared/bench/kv_compare.sh`): redis-benchmark SET, GET, INCR, HSET and MSET,
50 clients, 8-byte values, 1M random keys, pipeline 1 and 16, against redis-server 7
(no persistence: `--save '' --appendonly no`) and against hotset (`--fsync periodic`: every
write is logged and fsynced once a second, like Redis' `appendfsync everysec`, which the
Redis side here does not even do). Median of R runs, interleaved.

usage: bench/run_server.py [-r 3] [--requests 300000] [--date YYYY-MM-DD]
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared", "bench")
HOTSET = os.path.join(ROOT, "target", "release", "hotset")
# redis-benchmark's HSET grows one hash to hundreds of thousands of fields; each HSET logs
# only the field it set (`KvChange::HashFields`), so it is measured like the others.
TESTS = "set,get,incr,hset,mset"


def cpu_seconds(pid):
    """User plus system CPU time of a process so far (from /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf(os.sysconf_names["SC_CLK_TCK"])
    return (int(fields[11]) + int(fields[12])) / ticks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--requests", type=int, default=300_000)
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    a = ap.parse_args()
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "hotset-server", "--bin", "hotset"], cwd=ROOT)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    data = tempfile.mkdtemp(prefix="hotset-server-bench-")
    server = subprocess.Popen([HOTSET, "serve", "--data", data, "--resp-port", "0", "--http-port", "0",
                               "--fsync", "periodic"],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "HOTSET_LOG": "warn"})
    try:
        words = server.stdout.readline().split()
        if words[:3] != ["hotset", "ready:", "resp"]:
            sys.exit(f"hotset did not start: {words}")
        port = words[3].rsplit(":", 1)[1]
        env = {**os.environ, "RUNS": str(a.r), "REQUESTS": str(a.requests), "TESTS": TESTS}
        cpu_before = cpu_seconds(server.pid)
        out = subprocess.run([os.path.join(SHARED, "kv_compare.sh"), "127.0.0.1", port], env=env,
                             capture_output=True, text=True, check=True)
        cpu = cpu_seconds(server.pid) - cpu_before
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(data, ignore_errors=True)
    print(out.stdout.rstrip())
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # Every request of every run: the tests times the pipelines times R runs (plus the GET prefill).
    requests = a.requests * len(TESTS.split(",")) * 2 * a.r + a.requests
    report = {
        "bench": "run_server", "date": a.date, "commit": commit, "median_of": a.r,
        "command": f"../shared/bench/kv_compare.sh with RUNS={a.r} REQUESTS={a.requests} TESTS={TESTS}; "
                   "hotset serve --fsync periodic; redis-server --save '' --appendonly no",
        "hotset_cpu_seconds": round(cpu, 2), "hotset_cpu_us_per_request": round(cpu * 1e6 / requests, 2),
        "result": result,
    }
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", f"{a.date}-server.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    print(f"# hotset CPU: {report['hotset_cpu_seconds']} s for {requests:,} requests "
          f"({report['hotset_cpu_us_per_request']} µs each, all runs)", file=sys.stderr)
    print(f"# wrote {os.path.relpath(path, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
