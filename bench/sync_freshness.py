#!/usr/bin/env python3
"""Freshness of live sync under load: a source taking about 10,000 rows/s (inserts and
updates in transactions of 1 to 10 rows, at a fixed rate) while Hotset follows it, and
the lag and queue sampled every second, to see whether it grows.

- PostgreSQL (pgbench at a fixed rate): the commit-to-visible delay of every transaction,
  measured inside Hotset from the source's commit timestamp (`visible_ms` in the source's
  status: p50, p99, max).
- MariaDB: its binlog stamps commits to the second, so the delay is measured from the
  outside: four writer threads (PyMySQL, one round trip per transaction) stamp each
  inserted event row with the database's `NOW(6)`, and a reader polls Hotset for the
  events it has not seen (`id > w`, the ids below w all seen); a row's delay is the
  reader's clock when the answer holding it arrived minus its stamp. That counts the rest
  of the transaction after the stamp and up to one poll too, so it is an upper bound.

usage: bench/sync_freshness.py [--source pg|maria|both] [--seconds 60] [--tps 1800] [--runs 3] [--hotset BIN]
Prints a line per run and one JSON line (medians over the runs, the load average).
MariaDB's side needs PyMySQL (`pip install pymysql`).
"""

import argparse
import datetime
import http.client
import json
import random
import threading
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sources import Hotset, MariaDb, Postgres  # noqa: E402

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


def growth(samples):
    """From the (lag_ms, pending_events) status samples taken every second: the mean lag
    of the first and of the last third (growth shows there) and the most events queued."""
    third = max(1, len(samples) // 3)
    return {
        "lag_ms_first_third": statistics.mean(s[0] for s in samples[:third]),
        "lag_ms_last_third": statistics.mean(s[0] for s in samples[-third:]),
        "pending_max": max(s[1] for s in samples),
    }


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
        return {
            "visible_ms": status["visible_ms"],
            "transactions": status["transactions"],
            "pgbench_tps": float(tps) if tps != "?" else None,
            "rows_inserted": rows,
            **growth(samples),
        }
    finally:
        hotset.stop()


def maria_run(args, work, maria):
    import pymysql  # noqa: PLC0415 (only this side needs it)

    maria.sql("USE appdb; DROP TABLE IF EXISTS appdb.events, appdb.accounts;"
              "CREATE TABLE appdb.accounts (id int PRIMARY KEY, balance bigint, touched datetime(6));"
              "CREATE TABLE appdb.events (id bigint AUTO_INCREMENT PRIMARY KEY, account int, amount int, note text,"
              " at datetime(6));"
              f"INSERT INTO appdb.accounts SELECT seq, 0, NOW(6) FROM seq_1_to_{ACCOUNTS + 10};")
    hotset = Hotset(args.hotset, work)
    try:
        # A second index on the key, ordered: the reader asks for ids past what it saw.
        events = {"table": "appdb.events", "indexes": [{"name": "seq", "field": "id", "type": "int", "index": "tree"}]}
        decl = {"name": "load", "url": maria.url, "tables": [{"table": "appdb.accounts"}, events]}
        hotset.call("POST", "/api/v1/sources", decl)
        hotset.wait_state("load", "streaming")
        stop = threading.Event()
        committed = [0, 0]  # transactions, rows
        lock = threading.Lock()

        def writer(seed, tps):
            rng = random.Random(seed)
            conn = pymysql.connect(host="127.0.0.1", port=maria.port, user="hotset", password="pw", database="appdb",
                                   client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS, autocommit=True)
            cur = conn.cursor()
            started = time.perf_counter()
            done = 0
            while not stop.is_set():
                # Paced on a fixed schedule: a slow transaction is caught up, not skipped.
                due = started + done / tps
                wait = due - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                n = rng.randint(1, 10)
                k = rng.randint(1, ACCOUNTS)
                inserts = (n + 1) // 2
                values = ",".join(f"({k},{g},'load',NOW(6))" for g in range(inserts))
                sql = (f"BEGIN; INSERT INTO events (account, amount, note, at) VALUES {values};"
                       f" UPDATE accounts SET balance = balance + 1, touched = NOW(6)"
                       f" WHERE id BETWEEN {k} AND {k + n // 2 - 1}; COMMIT")
                cur.execute(sql)
                while cur.nextset():
                    pass
                done += 1
                with lock:
                    committed[0] += 1
                    committed[1] += n
            conn.close()

        host, port = hotset.http.split(":")
        delays = []
        seen_above = set()

        def reader():
            conn = http.client.HTTPConnection(host, int(port))
            watermark = 0
            while True:
                body = json.dumps({"filter": {"field": "id", "op": ">", "value": watermark}, "sort": "id",
                                   "limit": 2000})
                conn.request("POST", "/api/v1/namespaces/events/query", body=body,
                             headers={"content-type": "application/json"})
                answer = json.loads(conn.getresponse().read())
                now = time.time()
                for item in answer["items"]:
                    if item["id"] in seen_above:
                        continue
                    seen_above.add(item["id"])
                    stamp = datetime.datetime.fromisoformat(item["at"].replace("Z", "+00:00")).timestamp()
                    delays.append(now - stamp)
                while watermark + 1 in seen_above:
                    watermark += 1
                    seen_above.discard(watermark)
                if final.is_set() and len(delays) >= inserted[0]:
                    break

        final = threading.Event()
        inserted = [0]
        writers = [threading.Thread(target=writer, args=(seed, args.tps / 4)) for seed in range(4)]
        polling = threading.Thread(target=reader)
        for thread in writers + [polling]:
            thread.start()
        samples = []
        started = time.perf_counter()
        while time.perf_counter() - started < args.seconds:
            status = hotset.call("GET", "/api/v1/sources/load")
            samples.append((status["lag_ms"] or 0, status["pending_events"]))
            time.sleep(1)
        stop.set()
        for thread in writers:
            thread.join()
        elapsed = time.perf_counter() - started
        rows = int(maria.sql("SELECT COUNT(*) FROM appdb.events").split()[-1])
        inserted[0] = rows
        final.set()
        polling.join(timeout=120)
        if polling.is_alive():
            raise SystemExit(f"the reader saw {len(delays)} of {rows} rows in 120 s")
        ms = sorted(d * 1000 for d in delays)
        return {
            "visible_ms": {"p50": round(ms[len(ms) // 2], 2), "p99": round(ms[int(len(ms) * 0.99)], 2),
                           "max": round(ms[-1], 2), "count": len(ms)},
            "transactions_s": round(committed[0] / elapsed), "rows_s": round(committed[1] / elapsed),
            "rows_inserted": rows,
            **growth(samples),
        }
    finally:
        hotset.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", choices=["pg", "maria", "both"], default="both")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--tps", type=int, default=1800, help="transactions/s (5.5 rows each on average)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hotset", default=os.path.join(ROOT, "target/release/hotset"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    work = tempfile.mkdtemp(prefix="sync_freshness.")
    os.chmod(work, 0o755)
    sides = {}
    try:
        if args.source in ("pg", "both"):
            sides["pg"] = (Postgres(work), one_run)
        if args.source in ("maria", "both"):
            sides["maria"] = (MariaDb(work), maria_run)
        runs = {name: [] for name in sides}
        # Interleaved: run n of every source before run n + 1 of any.
        for number in range(args.runs):
            for name, (source, measure) in sides.items():
                result = measure(args, work, source)
                runs[name].append(result)
                print(f"run {number + 1} {name}: {json.dumps(result)}", file=sys.stderr)
        median = {name: {key: statistics.median(run["visible_ms"][key] for run in results)
                         for key in ["p50", "p99", "max"]} for name, results in runs.items()}
        print(json.dumps({"seconds": args.seconds, "tps_target": args.tps, "visible_ms_median": median,
                          "load_before": load_before, "load_after": os.getloadavg(), "runs": runs}))
    finally:
        for source, _ in sides.values():
            source.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
