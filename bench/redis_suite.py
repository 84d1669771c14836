#!/usr/bin/env python3
"""Redis 7.0.15's own test suite in external mode, file by file, against redis-server and
against Hotset in the same run: the per-file count of passed tests on each, and Hotset's
share of redis-server's.

The suite is not part of this project: give a checkout of redis/redis at tag 7.0.15 (only
its `tests/` folder is used, copied into a temporary folder for the run):

    git clone --depth 1 --branch 7.0.15 https://github.com/redis/redis /tmp/redis-7.0.15
    python3 bench/redis_suite.py --redis /tmp/redis-7.0.15 [--hotset target/release/hotset]
        [--files unit/type/list unit/expire ...] [--timeout 600]

Each file runs as `tclsh tests/test_helper.tcl --host 127.0.0.1 --port PORT --singledb
--ignore-encoding --durable --tags -needs:debug --tags -needs:repl --tags
-needs:config-maxmemory --tags -needs:save --tags -needs:reset --clients 1 --single FILE`
against a fresh server of each kind (redis-server with `--save '' --appendonly no`; `hotset
serve` on a new data folder). `--durable` keeps the suite going past a failed test; a Tcl
exception still ends the file there, and the tests after it count as not passed. Prints a
table, the failed tests of Hotset per file (with `--failures`), and one JSON line.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = [
    "unit/type/string", "unit/type/incr", "unit/type/hash", "unit/type/list", "unit/type/set", "unit/type/zset",
    "unit/type/stream", "unit/type/stream-cgroups", "unit/expire", "unit/keyspace", "unit/multi", "unit/scan", "unit/protocol",
    "unit/info-command", "unit/pubsub", "unit/bitops", "unit/hyperloglog", "unit/sort", "unit/geo",
]
TAGS = ["-needs:debug", "-needs:repl", "-needs:config-maxmemory", "-needs:save", "-needs:reset"]
# The helper prints `[ok]: name (N ms)`, `[err]: name in file`, `[exception]: ...`,
# `[skip]: ...`, `[ignore]: ...`, in colour whatever its output is: the escapes go first.
STATUS = re.compile(r"^\[(ok|err|exception|skip|ignore)\]: (.*)$")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} is not listening on {port}")


class RedisServer:
    def __init__(self, work):
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", work], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.port, self.proc, "redis-server")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


class HotsetServer:
    def __init__(self, binary, work):
        self.data = tempfile.mkdtemp(dir=work)
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "serve", "--data", self.data, "--resp-port", str(self.port), "--http-port", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.port, self.proc, "hotset")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)


def run_file(suite, port, unit, timeout):
    """Counts of each status for one file, its failed tests, and whether it ran to its end
    (no Tcl exception, no time-out)."""
    cmd = ["tclsh", "tests/test_helper.tcl", "--host", "127.0.0.1", "--port", str(port), "--singledb",
           "--ignore-encoding", "--durable", "--clients", "1", "--single", unit]
    for tag in TAGS:
        cmd += ["--tags", tag]
    try:
        out = subprocess.run(cmd, cwd=suite, capture_output=True, text=True, timeout=timeout).stdout
        timed_out = False
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        timed_out = True
    counts = {"ok": 0, "err": 0, "exception": 0, "skip": 0, "ignore": 0}
    failed = []
    for line in out.splitlines():
        match = STATUS.match(COLOUR.sub("", line).strip())
        if match:
            counts[match.group(1)] += 1
            if match.group(1) in ("err", "exception"):
                failed.append(f"[{match.group(1)}] {match.group(2)}")
    return {"counts": counts, "failed": failed, "timed_out": timed_out,
            "completed": not timed_out and not counts["exception"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis", required=True, help="a checkout of redis/redis at 7.0.15 (its tests/ is used)")
    parser.add_argument("--hotset", default=os.path.join(ROOT, "target/release/hotset"))
    parser.add_argument("--files", nargs="*", default=FILES)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per file and server")
    parser.add_argument("--failures", action="store_true", help="list Hotset's failed tests per file")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="redis_suite.")
    suite = os.path.join(work, "redis")
    os.makedirs(suite)
    shutil.copytree(os.path.join(args.redis, "tests"), os.path.join(suite, "tests"))
    results = {}
    load_before = os.getloadavg()
    try:
        for unit in args.files:
            results[unit] = {}
            for name in ("redis", "hotset"):
                server = RedisServer(work) if name == "redis" else HotsetServer(args.hotset, work)
                try:
                    results[unit][name] = run_file(suite, server.port, unit, args.timeout)
                finally:
                    server.stop()
            r, h = results[unit]["redis"]["counts"]["ok"], results[unit]["hotset"]["counts"]["ok"]
            print(f"{unit:22} redis {r:4}  hotset {h:4}  {h / r if r else 0:6.1%}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total_r = sum(v["redis"]["counts"]["ok"] for v in results.values())
    total_h = sum(v["hotset"]["counts"]["ok"] for v in results.values())
    print(f"{'file':22} {'redis ok':>8} {'hotset ok':>9} {'share':>7}")
    for unit, v in results.items():
        r, h = v["redis"]["counts"]["ok"], v["hotset"]["counts"]["ok"]
        print(f"{unit:22} {r:8} {h:9} {h / r if r else 0:7.1%}")
    print(f"{'all':22} {total_r:8} {total_h:9} {total_h / total_r if total_r else 0:7.1%}")
    if args.failures:
        for unit, v in results.items():
            for failed in v["hotset"]["failed"]:
                print(f"{unit}: {failed}")
    print(json.dumps({"files": results, "redis_ok": total_r, "hotset_ok": total_h, "load_before": load_before,
                      "load_after": os.getloadavg()}))


if __name__ == "__main__":
    main()
