#!/usr/bin/env python3
"""Freshness of live sync under load: a PostgreSQL taking about 10,000 rows/s (inserts and
updates in transactions of 1 to 10 rows, pgbench at a fixed rate) while Hotset follows
it; the commit-to-visible delay of every transaction, measured inside Hotset from the
source's commit timestamp (`visible_ms` in the source's status: p50, p99, max), and the
lag and queue sampled every second, to see whether it grows.

usage: bench/sync_freshness.py [--seconds 60] [--tps 1800] [--runs 3] [--hotset BIN]
Prints a line per run and one JSON line (medians over the runs, the load average).
MariaDB's binlog stamps commits to the second, so this measures PostgreSQL only.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sources import Hotset, Postgres  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACCOUNTS = 100_000

# One transaction: n in 1..10 rows, about half inserted, the rest updated.
SCRIPT = """\\set n random(1, 10)
\\set k random(1, 100000)
BEGIN;
INSERT INTO events (account, amount, note) SELECT :k, g, 'load' FROM generate_series(1, (:n + 1) / 2) g;
UPDATE accounts SET balance = balance + 1, touched = now() WHERE id BETWEEN :k AND :k + :n / 2 - 1;
COMMIT;
"""


def one_run(args, work, pg):
    pg.sql("DROP TABLE IF EXISTS events, accounts", db="appdb", user="hotset")
    pg.sql("CREATE TABLE accounts (id int PRIMARY KEY, balance bigint, touched timestamptz);"
           "CREATE TABLE events (id bigserial PRIMARY KEY, account int, amount int, note text);"
           f"INSERT INTO accounts SELECT g, 0, now() FROM generate_series(1, {ACCOUNTS + 10}) g;",
           db="appdb", user="hotset")
    hotset = Hotset(args.hotset, work)
    try:
        decl = {"name": "load", "url": pg.url, "tables": [{"table": "public.accounts"}, {"table": "public.events"}]}
        hotset.call("POST", "/api/v1/sources", decl)
        hotset.wait_state("load", "streaming")
        script = os.path.join(work, "load.sql")
        with open(script, "w") as f:
            f.write(SCRIPT)
        env = dict(os.environ, PGPASSWORD="pw")
        bench = subprocess.Popen(
            [f"{pg.bin}/pgbench", "-n", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "hotset", "-c", "4", "-j", "2",
             "-R", str(args.tps), "-T", str(args.seconds), "-f", script, "appdb"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        samples = []
        while bench.poll() is None:
            status = hotset.call("GET", "/api/v1/sources/load")
            samples.append((status["lag_ms"] or 0, status["pending_events"]))
            time.sleep(1)
        output = bench.stdout.read()
        if bench.returncode != 0:
            raise SystemExit(f"pgbench failed: {output}")
        lsn = pg.sql("SELECT pg_current_wal_lsn()", db="appdb").strip()
        hotset.call("POST", f"/api/v1/namespaces/events/query?after=load:{lsn}", {"limit": 0})
        status = hotset.call("GET", "/api/v1/sources/load")
        rows = int(pg.sql("SELECT count(*) FROM events", db="appdb").strip())
        tps = next((line.split()[2] for line in output.splitlines() if line.startswith("tps =")), "?")
        third = max(1, len(samples) // 3)
        return {
            "visible_ms": status["visible_ms"],
            "transactions": status["transactions"],
            "pgbench_tps": float(tps) if tps != "?" else None,
            "rows_inserted": rows,
            # The mean lag of the first and last third of the samples: growth shows here.
            "lag_ms_first_third": statistics.mean(s[0] for s in samples[:third]),
            "lag_ms_last_third": statistics.mean(s[0] for s in samples[-third:]),
            "pending_max": max(s[1] for s in samples),
        }
    finally:
        hotset.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--tps", type=int, default=1800, help="transactions/s (5.5 rows each on average)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hotset", default=os.path.join(ROOT, "target/release/hotset"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    work = tempfile.mkdtemp(prefix="sync_freshness.")
    os.chmod(work, 0o755)
    pg = Postgres(work)
    try:
        runs = []
        for number in range(args.runs):
            result = one_run(args, work, pg)
            runs.append(result)
            print(f"run {number + 1}: {json.dumps(result)}", file=sys.stderr)
        median = {
            key: statistics.median(run["visible_ms"][key] for run in runs) for key in ["p50", "p99", "max"]
        }
        print(json.dumps({"seconds": args.seconds, "tps_target": args.tps, "visible_ms_median": median,
                          "load_before": load_before, "load_after": os.getloadavg(), "runs": runs}))
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
