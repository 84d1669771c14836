#!/usr/bin/env python3
"""The profile-search task (issue 15): first AND last name prefixes over HTTP SQL, against
MariaDB with its composite index, side by side in one run.

Owns: generating the user profiles (../shared/bench/gen_dataset.py users, JSONL for Hotset
and TSV for MariaDB) and the seeded prefix pairs; starting `hotset serve` and a throwaway
MariaDB (its own data folder, socket and port, buffer pool big enough for everything);
loading both (Hotset through `POST /api/v1/namespaces/users/items` NDJSON, timed: the load
rate; MariaDB with LOAD DATA); checking that both count the same matches for sample pairs;
then, per variant, R interleaved runs of Hotset under wrk and MariaDB under mariadb-slap.
Never leaves a server or a data folder behind, or waits on a sleep.

The query, for prefix pairs of 1-3 letters each drawn from the data (lower case; both sides
compare case-insensitively: Hotset `utf8_ci`, MariaDB `utf8mb4_general_ci`):

  plain         SELECT * FROM users WHERE first_name LIKE 'p%' AND last_name LIKE 'q%' LIMIT 20
  sorted        ... ORDER BY first_name, last_name LIMIT 20
  total         plain + the number of matches (Hotset: `SELECT COUNT(*), *` in one request;
                MariaDB: the page, then `SELECT COUNT(*)` with the same condition)
  sorted_total  sorted + the number of matches

Hotset: id (int hash pk), first_name and last_name (string tree utf8_ci), first_name+last_name
(composite tree utf8_ci). MariaDB (InnoDB): PRIMARY KEY (id), KEY (first_name, last_name),
KEY (first_name), KEY (last_name). Load generators: wrk -t1 -c8 (HTTP keep-alive) and
mariadb-slap --concurrency=8 (C client); MariaDB's rate is the statements it executed
(Com_select) over the wall time of mariadb-slap. Both share the 2 cores with their server.

With --follow (issue 16, the task end to end): MariaDB runs with its row binlog and is
loaded first; Hotset then follows the table as the README's MariaDB walkthrough declares it
(`POST /api/v1/sources` with the same indexes; the pk comes from the table), timed from
the declaration to its status saying `streaming` (every row copied and indexed), and the
search runs against what it copied.

usage: bench/profile_search.py [-r 3] [--seconds 10] [--n 1000006] [--pairs 2000] [--follow]
Needs: wrk, mariadb-server (mariadbd, mariadb-install-db, mariadb, mariadb-slap), a release
build (built here). Prints a table and one JSON line; writes bench/results/<date>-profile.json.
"""
import argparse
import datetime
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_http import http as curl, log, lua_script, wrk  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HOTSET = os.path.join(ROOT, "target", "release", "hotset")
GEN = os.path.join(ROOT, "..", "shared", "bench", "gen_dataset.py")
INDEXES = [
    {"field": "id", "type": "int", "index": "hash", "pk": True},
    {"field": "first_name", "type": "string", "index": "tree", "collate": "utf8_ci"},
    {"field": "last_name", "type": "string", "index": "tree", "collate": "utf8_ci"},
    {"field": ["first_name", "last_name"], "type": "string", "index": "tree", "collate": "utf8_ci"},
]
LOAD_LINES = 200_000
# What live sync needs of MariaDB (the README's list).
BINLOG = ["--log-bin=binlog", "--server-id=1", "--binlog-format=ROW", "--binlog-row-image=FULL",
          "--binlog-row-metadata=FULL"]
VARIANTS = ["plain", "sorted", "total", "sorted_total"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def data_files(n):
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    jsonl = os.path.join(HERE, "data", f"users_{n}.jsonl")
    tsv = os.path.join(HERE, "data", f"users_{n}.tsv")
    for path, fmt in ((jsonl, "jsonl"), (tsv, "tsv")):
        if not os.path.exists(path):
            log(f"generating {os.path.relpath(path, ROOT)}")
            subprocess.check_call([sys.executable, GEN, "users", "--n", str(n), "--format", fmt, "--out", path])
    return jsonl, tsv


def prefix_pairs(jsonl, count, seed=15):
    """Seeded pairs of 1-3 letter prefixes of a first and a last name that occur together."""
    with open(jsonl) as f:
        rows = [json.loads(line) for line in f]
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        row = rng.choice(rows)
        pairs.append((row["first_name"][: rng.randint(1, 3)].lower(), row["last_name"][: rng.randint(1, 3)].lower()))
    return pairs


def condition(first, last):
    return f"first_name LIKE '{first}%' AND last_name LIKE '{last}%'"


def hotset_sql(variant, first, last):
    order = " ORDER BY first_name, last_name" if variant.startswith("sorted") else ""
    count = "COUNT(*), " if variant.endswith("total") else ""
    return f"SELECT {count}* FROM users WHERE {condition(first, last)}{order} LIMIT 20"


def mariadb_sql(variant, first, last):
    order = " ORDER BY first_name, last_name" if variant.startswith("sorted") else ""
    page = f"SELECT * FROM users WHERE {condition(first, last)}{order} LIMIT 20;"
    if variant.endswith("total"):
        page += f"\nSELECT COUNT(*) FROM users WHERE {condition(first, last)};"
    return page


class Hotset:
    def __init__(self, work, binary=HOTSET, name="hotset"):
        self.proc = subprocess.Popen([binary, "serve", "--data", os.path.join(work, name), "--resp-port", "0",
                                      "--http-port", "0"], stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, "HOTSET_LOG": "warn"})
        words = self.proc.stdout.readline().split()
        if words[:3] != ["hotset", "ready:", "resp"]:
            sys.exit(f"hotset did not start: {words}")
        self.resp_addr, self.addr = words[3], words[5]

    def load(self, jsonl, namespace="users"):
        status, text = curl(self.addr, "POST", "/api/v1/namespaces", json.dumps({"name": namespace, "indexes": INDEXES}))
        assert status == 201, text
        host, port = self.addr.split(":")
        started = time.monotonic()
        rows = 0
        with open(jsonl, "rb") as f:
            while True:
                chunk = b"".join(line for _, line in zip(range(LOAD_LINES), f))
                if not chunk:
                    break
                conn = http.client.HTTPConnection(host, int(port), timeout=600)
                conn.request("POST", f"/api/v1/namespaces/{namespace}/items", body=chunk,
                             headers={"content-type": "application/x-ndjson"})
                answer = conn.getresponse()
                text = answer.read().decode()
                assert answer.status == 200, text
                rows += chunk.count(b"\n")
                conn.close()
        return rows, time.monotonic() - started

    def follow(self, url):
        """Declares `url`'s bench.users as source `app` (the task's indexes); the seconds
        until it streams, and the rows copied."""
        indexes = [index for index in INDEXES if not index.get("pk")]
        declaration = {"name": "app", "url": url, "tables": [{"table": "bench.users", "indexes": indexes}]}
        started = time.monotonic()
        status, text = curl(self.addr, "POST", "/api/v1/sources", json.dumps(declaration))
        assert status == 201, text
        while True:
            status, text = curl(self.addr, "GET", "/api/v1/sources/app")
            answer = json.loads(text)
            assert answer["state"] != "failed", answer
            if answer["state"] == "streaming":
                return answer["tables"][0]["rows_copied"], time.monotonic() - started
            time.sleep(0.05)

    def sql(self, text):
        status, answer = curl(self.addr, "POST", "/api/v1/sql", text)
        assert status == 200, answer
        return json.loads(answer)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


class MariaDB:
    def __init__(self, work, binlog=False):
        self.dir = os.path.join(work, "mariadb")
        self.socket = os.path.join(work, "mariadb.sock")
        subprocess.run(["mariadb-install-db", f"--datadir={self.dir}", "--user=root", "--auth-root-authentication-method=normal"],
                       check=True, capture_output=True)
        self.proc = subprocess.Popen(["mariadbd", f"--datadir={self.dir}", f"--socket={self.socket}",
                                      f"--port={free_port()}", "--bind-address=127.0.0.1", "--user=root",
                                      "--innodb-buffer-pool-size=2G", "--local-infile=1",
                                      *(BINLOG if binlog else ["--skip-log-bin"]),
                                      "--max-connections=100", f"--log-error={self.dir}/error.log"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Ready once it answers; a bounded poll on the server's own answer, not a sleep.
        deadline = time.monotonic() + 120
        while subprocess.run(["mariadb-admin", f"--socket={self.socket}", "-uroot", "ping"],
                             capture_output=True).returncode != 0:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                sys.exit(f"mariadbd did not start: {open(self.dir + '/error.log').read()[-2000:]}")
            time.sleep(0.1)

    def sql(self, text, database="bench"):
        out = subprocess.run(["mariadb", f"--socket={self.socket}", "-uroot", "--local-infile=1", "-N", "-B",
                              database, "-e", text], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"mariadb: {out.stderr}")
        return out.stdout

    def load(self, tsv):
        self.sql("CREATE DATABASE bench", database="mysql")
        self.sql("""CREATE TABLE users (id INT PRIMARY KEY, first_name VARCHAR(64), last_name VARCHAR(64),
                    age INT, city VARCHAR(64), interests VARCHAR(255), KEY fl (first_name, last_name),
                    KEY f (first_name), KEY l (last_name))
                    ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci""")
        started = time.monotonic()
        self.sql(f"LOAD DATA LOCAL INFILE '{tsv}' INTO TABLE users FIELDS TERMINATED BY '\\t'")
        seconds = time.monotonic() - started
        self.sql("ANALYZE TABLE users")
        return int(self.sql("SELECT COUNT(*) FROM users")), seconds

    def follower(self):
        """A user for live sync, and the source URL it gives."""
        port = self.sql("SELECT @@port").strip()
        self.sql("DROP USER IF EXISTS ''@'localhost'; CREATE USER hotset@'%' IDENTIFIED BY 'pw'; "
                 "GRANT SELECT ON bench.* TO hotset@'%'; GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO hotset@'%'")
        return f"mysql://hotset:pw@127.0.0.1:{port}/bench"

    def selects(self):
        return int(self.sql("SHOW GLOBAL STATUS LIKE 'Com_select'").split()[1])

    def slap(self, query_file, queries):
        before = self.selects()
        started = time.monotonic()
        subprocess.run(["mariadb-slap", f"--socket={self.socket}", "-uroot", "--create-schema=bench",
                        "--concurrency=8", "--iterations=1", f"--number-of-queries={queries}",
                        f"--query={query_file}", "--delimiter=;"], check=True, capture_output=True)
        seconds = time.monotonic() - started
        return (self.selects() - before - 1) / seconds

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=120)


def arguments():
    """The options every profile runner takes: rounds, seconds a run, rows, pairs, date."""
    ap = argparse.ArgumentParser()
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--n", type=int, default=1_000_006)
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    return ap


def write_result(name, report):
    """Writes the report as bench/results/<name>; its path."""
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", name)
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    return path


def main():
    ap = arguments()
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--follow", action="store_true", help="Hotset follows MariaDB's table (live sync) instead of a load")
    a = ap.parse_args()
    variants = a.variants.split(",")
    for tool in ("wrk", "mariadbd", "mariadb-slap"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing: apt-get install -y wrk mariadb-server mariadb-client")
    jsonl, tsv = data_files(a.n)
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "hotset-server", "--bin", "hotset"], cwd=ROOT)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    pairs = prefix_pairs(jsonl, a.pairs)
    # The same pairs for the in-process runner (`hotset-bench profile`).
    with open(os.path.join(HERE, "data", f"users_{a.n}.pairs.json"), "w") as f:
        json.dump(pairs, f)
    work = tempfile.mkdtemp(prefix="hotset-profile-bench-")
    os.chmod(work, 0o755)
    load_before = os.getloadavg()
    hotset = mariadb = None
    try:
        if a.follow:
            mariadb = MariaDB(work, binlog=True)
            maria_rows, maria_load_s = mariadb.load(tsv)
            log(f"mariadb loaded {maria_rows} rows in {maria_load_s:.1f} s")
            url = mariadb.follower()
            hotset = Hotset(work)
            rows, load_s = hotset.follow(url)
            log(f"hotset followed {rows} rows in {load_s:.1f} s ({rows / load_s:,.0f} rows/s)")
        else:
            hotset = Hotset(work)
            rows, load_s = hotset.load(jsonl)
            log(f"hotset loaded {rows} rows in {load_s:.1f} s ({rows / load_s:,.0f} rows/s)")
            mariadb = MariaDB(work)
            maria_rows, maria_load_s = mariadb.load(tsv)
            log(f"mariadb loaded {maria_rows} rows in {maria_load_s:.1f} s")
        assert maria_rows == rows == a.n, (maria_rows, rows)
        # Both count the same matches (a sample of the pairs).
        for first, last in pairs[:20]:
            ours = hotset.sql(f"SELECT COUNT(*) FROM users WHERE {condition(first, last)}")
            theirs = int(mariadb.sql(f"SELECT COUNT(*) FROM users WHERE {condition(first, last)}"))
            total = ours.get("total", ours.get("items", [{}])[0].get("COUNT(*)"))
            assert total == theirs, (first, last, ours, theirs)
        scripts, query_files = {}, {}
        for variant in variants:
            scripts[variant] = os.path.join(work, f"{variant}.lua")
            with open(scripts[variant], "w") as f:
                f.write(lua_script("/api/v1/sql", [hotset_sql(variant, p, q) for p, q in pairs]))
            query_files[variant] = os.path.join(work, f"{variant}.sql")
            with open(query_files[variant], "w") as f:
                f.write("\n".join(mariadb_sql(variant, p, q) for p, q in pairs) + "\n")
        runs = {v: {"hotset": [], "mariadb": []} for v in variants}
        for i in range(a.r):
            for variant in variants:
                log(f"run {i + 1}/{a.r}: {variant}: hotset")
                runs[variant]["hotset"].append(wrk(hotset.addr, scripts[variant], a.seconds, connections=8))
                statements = 2 if variant.endswith("total") else 1
                # Sized from a short first measure so each run takes about --seconds.
                probe = mariadb.slap(query_files[variant], 400 * statements) / statements
                queries = max(400, int(probe * a.seconds)) * statements
                log(f"run {i + 1}/{a.r}: {variant}: mariadb ({queries} statements)")
                rate = mariadb.slap(query_files[variant], queries) / statements
                runs[variant]["mariadb"].append({"requests_s": rate})
    finally:
        for server in (hotset, mariadb):
            if server:
                server.stop()
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    median = {}
    for variant, sides in runs.items():
        h = {k: statistics.median(r[k] for r in sides["hotset"]) for k in sides["hotset"][0]}
        m = statistics.median(r["requests_s"] for r in sides["mariadb"])
        median[variant] = {"hotset": h, "mariadb_requests_s": m, "ratio": round(h["requests_s"] / m, 2)}
    report = {"bench": "profile_search", "date": a.date, "commit": commit, "rows": a.n, "median_of": a.r,
              "seconds": a.seconds, "pairs": a.pairs, "load_before": load_before, "load_after": load_after,
              "follow": a.follow, "hotset_load_s": round(load_s, 2),
              "hotset_load_rows_s": round(rows / load_s), "mariadb_load_s": round(maria_load_s, 1),
              "median": median, "runs": runs}
    path = write_result(f"{a.date}-profile-{a.n}{'-follow' if a.follow else ''}.json", report)
    print("| variant | hotset requests/s | p50 µs | p99 µs | mariadb requests/s | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for variant, m in median.items():
        h = m["hotset"]
        print(f"| {variant} | {h['requests_s']:,.0f} | {h['p50_us']:,.0f} | {h['p99_us']:,.0f} | "
              f"{m['mariadb_requests_s']:,.0f} | {m['ratio']} |")
    how = "followed from MariaDB (declared to streaming)" if a.follow else "load over HTTP"
    print(f"hotset {how}: {load_s:.2f} s, {rows / load_s:,.0f} rows/s; load average {load_before} -> {load_after}")
    log(f"wrote {os.path.relpath(path, ROOT)}")
    print(json.dumps({"bench": "profile_search", "rows": a.n, "median": median}))


if __name__ == "__main__":
    main()
