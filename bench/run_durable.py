#!/usr/bin/env python3
"""Durability benchmarks (issue 3), side by side with Redis under appendfsync always.

Owns: running `durable` (bench/runner/src/bin/durable.rs) R times per figure, starting and
stopping the Redis it compares with, the medians, bench/results/<date>-durable.json and the
Markdown tables. Never: leaves a Redis or a data folder behind, or waits on a sleep.

  1. Hotset, embedded (bench/runner `durable`): acknowledged upserts of ~490-byte catalogue
     documents from 1 and 50 threads under fsync always, periodic and never; recovery of
     the 1,000,006 user profiles from the log alone and from a snapshot; get, query and
     upsert latency while snapshots run back to back, against a baseline and a control
     (a third thread that only burns CPU).
  2. Redis (redis-server --appendonly yes --appendfsync always, on a spare port with its
     data in a temporary folder, started and stopped by this script for each run) and the
     hotset server (`hotset serve --fsync always`, the same way), each driven by
     redis-benchmark -t set -P 1 with 1 and 50 clients and 490-byte values, in the same
     run as the embedded writes.

Every figure is the median of R runs (default 3); the runs are interleaved.

usage: bench/run_durable.py [-r 3] [--seconds 5] [--users PATH] [--date YYYY-MM-DD]
       bench/run_durable.py --report bench/results/<date>-durable.json   (tables only)
The user profiles default to bench/data/users_1m.jsonl (what run_core.py uses; identical to
`gen_dataset.py users`, the default 1,000,006 rows, seed 42) and are generated if missing.
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
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared", "bench")
DATA = os.path.join(HERE, "data")
DURABLE = os.path.join(ROOT, "target", "release", "durable")
HOTSET = os.path.join(ROOT, "target", "release", "hotset")
VALUE_BYTES = 490
WRITE_CONFIGS = [("always", 1), ("always", 50), ("periodic", 1), ("periodic", 50), ("never", 1), ("never", 50)]


def log(text):
    print(f"# {text}", file=sys.stderr, flush=True)


def last_json(stdout):
    return json.loads([ln for ln in stdout.splitlines() if ln.strip().startswith("{")][-1])


def median_tree(objs):
    first = objs[0]
    if isinstance(first, dict):
        return {k: median_tree([o[k] for o in objs if k in o]) for k in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        values = [o for o in objs if isinstance(o, (int, float))]
        return round(statistics.median(values), 3)
    return first


def durable(*args):
    cmd = [DURABLE, *map(str, args)]
    log(" ".join(cmd[1:]))
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed (rc={out.returncode}):\n{out.stderr[-4000:]}")
    return last_json(out.stdout)


class SetBenchmark:
    """redis-benchmark SET against a server on 127.0.0.1:self.port."""

    def set_benchmark(self, clients, requests):
        cmd = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(self.port), "-t", "set", "-n", str(requests),
               "-c", str(clients), "-P", "1", "-d", str(VALUE_BYTES), "-r", "100000", "--csv"]
        log(" ".join(cmd))
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        row = next(csv.DictReader(io.StringIO(out.stdout)))
        return {"clients": clients, "requests": requests, "ops_s": float(row["rps"]),
                "p50_us": float(row["p50_latency_ms"]) * 1000, "p99_us": float(row["p99_latency_ms"]) * 1000}

    def stop(self):
        """Stops the server (SIGTERM, waited for) and removes its data folder."""
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class HotsetServer(SetBenchmark):
    """The hotset binary with --fsync always on ports the kernel picks, data in a temporary
    folder; ready once it prints its ready line (read, not waited for)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="hotset-durable-server-")
        self.proc = subprocess.Popen(
            [HOTSET, "serve", "--data", self.dir, "--resp-port", "0", "--http-port", "0", "--fsync", "always"],
            stdout=subprocess.PIPE, text=True, env={**os.environ, "HOTSET_LOG": "warn"})
        words = self.proc.stdout.readline().split()
        if words[:3] != ["hotset", "ready:", "resp"]:
            self.stop()
            sys.exit(f"hotset did not start: {words}")
        self.port = int(words[3].rsplit(":", 1)[1])



class Redis(SetBenchmark):
    """redis-server with an always-fsynced AOF on a spare port, data in a temporary folder.

    Started in the foreground; ready once it logs that it accepts connections (read from
    its output, not waited for). Automatic AOF rewrites are off, as Hotset's automatic
    snapshots are in these runs, so neither lands in a measurement.
    """

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.dir = tempfile.mkdtemp(prefix="hotset-durable-redis-")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
             "--appendonly", "yes", "--appendfsync", "always", "--auto-aof-rewrite-percentage", "0",
             "--save", "", "--daemonize", "no", "--logfile", ""],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.output = []
        for line in self.proc.stdout:
            self.output.append(line)
            if "Ready to accept connections" in line:
                break
        else:
            self.stop()
            sys.exit("redis-server did not start:\n" + "".join(self.output))
        # Keep draining its output so it never blocks on a full pipe.
        self.drain = threading.Thread(target=lambda: self.output.extend(self.proc.stdout), daemon=True)
        self.drain.start()



def users_data(path):
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        log(f"generating {path}")
        subprocess.check_call([sys.executable, os.path.join(SHARED, "gen_dataset.py"), "users", "--n", "1000006",
                               "--out", path])
    return path


def git(*args):
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def run_ratios(one):
    """The ratios of one run: Hotset and Redis saw the same noise within it."""
    hw, rw = one["hotset_writes"], one["redis_writes"]
    return {
        "hotset_50_over_1_always": hw["always_50"]["ops_s"] / hw["always_1"]["ops_s"],
        "redis_50_over_1_always": rw["always_50"]["ops_s"] / rw["always_1"]["ops_s"],
        "hotset_over_redis_1": hw["always_1"]["ops_s"] / rw["always_1"]["ops_s"],
        "hotset_over_redis_50": hw["always_50"]["ops_s"] / rw["always_50"]["ops_s"],
        **({
            "server_50_over_1_always": sw["always_50"]["ops_s"] / sw["always_1"]["ops_s"],
            "server_over_redis_1": sw["always_1"]["ops_s"] / rw["always_1"]["ops_s"],
            "server_over_redis_50": sw["always_50"]["ops_s"] / rw["always_50"]["ops_s"],
        } if (sw := one.get("hotset_server_writes")) else {}),
    }


def summarise(runs):
    """Median of every figure over the runs; ratios are taken within each run, then the median."""
    result = median_tree(runs)
    result["ratios"] = {k: round(v, 2) for k, v in median_tree([run_ratios(one) for one in runs]).items()}
    result["ratios_per_run"] = [{k: round(v, 2) for k, v in run_ratios(one).items()} for one in runs]
    return result


def run(a):
    # What is measured: the engine as committed, unless crates/ has uncommitted changes.
    commit, engine_dirty = git("rev-parse", "HEAD"), bool(git("status", "--porcelain", "--", "crates"))
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "hotset-bench", "--bin", "durable"], cwd=ROOT)
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "hotset-server", "--bin", "hotset"], cwd=ROOT)
    users = users_data(a.users)
    runs = []
    for i in range(a.r):
        log(f"run {i + 1}/{a.r}")
        one = {"hotset_writes": {}, "redis_writes": {}, "hotset_server_writes": {}}
        for policy, writers in WRITE_CONFIGS[:2]:
            one["hotset_writes"][f"{policy}_{writers}"] = durable(
                "writes", "--writers", writers, "--seconds", a.seconds, "--fsync", policy)
        # The two servers side by side, the same redis-benchmark run against each.
        for key, server in [("redis_writes", Redis), ("hotset_server_writes", HotsetServer)]:
            with server() as running:
                one[key]["always_1"] = running.set_benchmark(1, a.redis_requests_1)
                one[key]["always_50"] = running.set_benchmark(50, a.redis_requests_50)
        for policy, writers in WRITE_CONFIGS[2:]:
            one["hotset_writes"][f"{policy}_{writers}"] = durable(
                "writes", "--writers", writers, "--seconds", a.seconds, "--fsync", policy)
        one["recovery"] = durable("recovery", "--data", users)
        one["stall"] = durable("stall", "--data", users, "--seconds", a.seconds)
        runs.append(one)
    report = {
        "bench": "run_durable",
        "date": a.date,
        "median_of": a.r,
        "seconds": a.seconds,
        "commit": commit,
        "engine_tree_dirty": engine_dirty,
        "users": os.path.relpath(users, ROOT),
        "note": "Hotset (embedded) is a function call per upsert; Hotset (server) and Redis are servers behind a "
                "loopback socket, driven by the same redis-benchmark command on the same 2 cores.",
        "commands": {
            "redis_server": "redis-server --appendonly yes --appendfsync always --auto-aof-rewrite-percentage 0 "
                            "--save ''",
            "redis_benchmark": f"redis-benchmark -t set -P 1 -d {VALUE_BYTES} -r 100000 -c 1|50 "
                               f"-n {a.redis_requests_1}|{a.redis_requests_50}",
        },
        "result": summarise(runs),
        "runs": runs,
    }
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", f"{a.date}-durable.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    log(f"wrote {os.path.relpath(path, ROOT)}")
    return report


def fmt(x, digits=0):
    return f"{x:,.{digits}f}" if isinstance(x, (int, float)) and not isinstance(x, bool) else "–"


def tables(report):
    r = report["result"]
    hw, rw, ratios = r["hotset_writes"], r["redis_writes"], r["ratios"]
    out = [f"Median of {report['median_of']} runs, {report['date']}, commit {str(report['commit'])[:10]}"
           f"{' (with uncommitted changes in crates/)' if report.get('engine_tree_dirty') else ''}.", ""]
    out.append("| system | fsync | writers / clients | acknowledged writes/s | p50 µs | p99 µs | fsyncs/s | "
               "records per log write |")
    out.append("|---|---|---|---|---|---|---|---|")
    for policy, writers in WRITE_CONFIGS:
        h = hw[f"{policy}_{writers}"]
        out.append(f"| Hotset (embedded) | {policy} | {writers} | {fmt(h['ops_s'])} | {fmt(h['p50_us'], 1)} | "
                   f"{fmt(h['p99_us'], 1)} | {fmt(h['fsyncs'] / h['seconds'])} | {fmt(h['records_per_batch'], 1)} |")
    for label, writes in [("Hotset (server)", r.get("hotset_server_writes")), ("Redis (server)", rw)]:
        for key, clients in [("always_1", 1), ("always_50", 50)] if writes else []:
            x = writes[key]
            out.append(f"| {label} | always | {clients} | {fmt(x['ops_s'])} | {fmt(x['p50_us'], 1)} | "
                       f"{fmt(x['p99_us'], 1)} | – | – |")
    out.append("")
    per_run = ", ".join(f"{x['hotset_50_over_1_always']}×" for x in r.get("ratios_per_run", []))
    out.append(f"- Group commit under fsync always, 50 writers over 1: Hotset {ratios['hotset_50_over_1_always']}× "
               f"(runs: {per_run}), Redis {ratios['redis_50_over_1_always']}× (target for Hotset: at least 5×). "
               f"Ratios are taken within each run, then the median.")
    if "server_over_redis_1" in ratios:
        out.append(f"- Server to server under fsync always (redis-benchmark SET, {VALUE_BYTES}-byte values): Hotset / "
                   f"Redis {ratios['server_over_redis_1']}× with 1 client, {ratios['server_over_redis_50']}× with 50; "
                   f"Hotset's 50 over 1: {ratios['server_50_over_1_always']}×.")
    out.append(f"- Hotset embedded / Redis under fsync always: {ratios['hotset_over_redis_1']}× with 1 writer, "
               f"{ratios['hotset_over_redis_50']}× with 50. {report['note']}")
    rec = r["recovery"]
    out.append("")
    out.append(f"Recovery of {fmt(rec['documents'])} user profiles (loaded one JSON line per call at "
               f"{fmt(rec['load_rows_s'])} rows/s, fsync periodic), each in a fresh process:")
    out.append("")
    out.append("| recovery from | seconds (Store::open) | documents | log records replayed | file bytes read | RSS after, MB |")
    out.append("|---|---|---|---|---|---|")
    fl, fs = rec["from_log"], rec["from_snapshot"]
    out.append(f"| log only | {fmt(rec['from_log_s'], 2)} | {fmt(fl['documents'])} | {fmt(fl['log_records_replayed'])} | "
               f"{fmt(rec['log_bytes'])} (log) | {fmt(fl['rss_mb'], 1)} |")
    out.append(f"| snapshot | {fmt(rec['from_snapshot_s'], 2)} | {fmt(fs['documents'])} | "
               f"{fmt(fs['log_records_replayed'])} | {fmt(rec['snapshot_bytes'])} (snapshot) | {fmt(fs['rss_mb'], 1)} |")
    out.append("")
    out.append(f"- Taking the snapshot: {fmt(rec['snapshot_s'], 2)} s ({fmt(rec['snapshot_bytes'])} bytes); "
               f"the log after it: {fmt(rec['log_bytes_after_snapshot'])} bytes. Target for recovery from the "
               f"snapshot: under 3 s.")
    st = r["stall"]
    snap = st["phases"]["snapshots"]
    out.append("")
    out.append(f"Latency with 1 reader (get by random key, then a page-of-10 query) and 1 writer (upsert) on "
               f"{fmt(st['documents'])} {st['namespace']}, fsync periodic, {st['seconds']} s per phase:")
    out.append("")
    out.append("| phase | operation | ops | p50 µs | p99 µs | p99.9 µs | max µs |")
    out.append("|---|---|---|---|---|---|---|")
    labels = {"baseline": "no snapshot", "snapshots": "snapshots back to back",
              "cpu_control": "control: a third thread burning CPU",
              "baseline_writer_elsewhere": "no snapshot, writer on another namespace",
              "snapshots_writer_elsewhere": "snapshots back to back, writer on another namespace"}
    for phase, label in labels.items():
        p = st["phases"][phase]
        for op, op_label in [("get", "get"), ("query", "query"), ("writes", "upsert")]:
            x = p[op]
            out.append(f"| {label} | {op_label} | {fmt(x['ops'])} | {fmt(x['p50_us'], 1)} | {fmt(x['p99_us'], 1)} | "
                       f"{fmt(x['p999_us'], 1)} | {fmt(x['max_us'], 1)} |")
    out.append("")
    elsewhere = st["phases"]["snapshots_writer_elsewhere"]
    out.append(f"- Snapshots completed per {st['seconds']} s phase: {fmt(snap['snapshots_completed'])} "
               f"(median {fmt(snap['snapshot_ms_median'])} ms each), {fmt(elsewhere['snapshots_completed'])} with the "
               f"writer on another namespace. Target: p99 under 5 ms while a snapshot runs.")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--users", default=os.path.join(DATA, "users_1m.jsonl"))
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    ap.add_argument("--redis-requests-1", type=int, default=15_000)
    ap.add_argument("--redis-requests-50", type=int, default=100_000)
    ap.add_argument("--report", help="print the tables of a saved result file instead of running")
    a = ap.parse_args()
    if a.report:
        with open(a.report) as f:
            report = json.load(f)
    else:
        report = run(a)
    print(tables(report))


if __name__ == "__main__":
    main()
