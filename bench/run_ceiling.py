#!/usr/bin/env python3
"""How fast could any server answer redis-benchmark on this machine? (issue 4)

Owns: compiling the two ceiling servers in bench/ceiling (C; `ep` answers with epoll like
Redis, `ur` batches every socket's receives and sends through io_uring), starting them
and a redis-server, running the same redis-benchmark commands against all three,
interleaved, and writing bench/results/<date>-ceiling.json. Never: leaves a process
behind or waits on a sleep.

The ceiling servers do no work per request (no parsing of keys, no storage): what they
reach is the most redis-benchmark can drive through the kernel's TCP path here. If that is
about Redis' own rate, no server can beat Redis by much at that pipeline depth on this
machine, whatever it does inside.

Needs gcc and liburing-dev (apt-get install -y gcc liburing-dev), redis-server, redis-benchmark.
usage: bench/run_ceiling.py [-r 3] [--requests 300000]
"""
import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile

from run_server import cpu_seconds

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "ceiling")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc):
    """Connects until the server accepts (or has exited): readiness, not a sleep."""
    while proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            continue
    sys.exit(f"server on {port} exited with {proc.returncode}")


def bench(port, test, pipeline, requests):
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", test, "-n", str(requests), "-r", "1000000",
                          "-d", "8", "-c", "50", "-P", str(pipeline), "--csv"],
                         capture_output=True, text=True, check=True).stdout
    row = [line for line in out.splitlines() if line.startswith('"')][-1]
    return float(row.split(",")[1].strip('"'))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--requests", type=int, default=300_000)
    a = ap.parse_args()
    build = tempfile.mkdtemp(prefix="hotset-ceiling-")
    subprocess.check_call(["gcc", "-O2", "-o", f"{build}/ep", f"{SRC}/ep.c"])
    subprocess.check_call(["gcc", "-O2", "-o", f"{build}/ur", f"{SRC}/ur.c", "-luring"])
    servers = {}
    procs = []
    try:
        specs = {"redis": ["redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--port"],
                 "epoll": [f"{build}/ep"], "io_uring": [f"{build}/ur"]}
        for name, argv in specs.items():
            port = free_port()
            extra = ["--dir", build] if name == "redis" else []
            proc = subprocess.Popen(argv + [str(port)] + extra + (["defer"] if name == "io_uring" else []),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(proc)
            wait_listening(port, proc)
            servers[name] = (port, proc.pid)
        rows = []
        for pipeline in (1, 16):
            for test in ("set", "get"):
                runs = {name: [] for name in servers}
                cpu = {name: [] for name in servers}
                for _ in range(a.r):
                    for name, (port, pid) in servers.items():
                        before = cpu_seconds(pid)
                        runs[name].append(bench(port, test, pipeline, a.requests))
                        cpu[name].append((cpu_seconds(pid) - before) / a.requests * 1e6)
                row = {"test": test.upper(), "pipeline": pipeline}
                for name in servers:
                    row[f"{name}_rps"] = statistics.median(runs[name])
                    row[f"{name}_cpu_us"] = round(statistics.median(cpu[name]), 2)
                for name in ("epoll", "io_uring"):
                    row[f"{name}_over_redis"] = round(row[f"{name}_rps"] / row["redis_rps"], 2)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    result = {"bench": "ceiling", "date": datetime.date.today().isoformat(), "runs": a.r,
              "requests": a.requests, "results": rows}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", f"{result['date']}-ceiling.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
