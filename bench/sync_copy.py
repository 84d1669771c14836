#!/usr/bin/env python3
"""Live sync's initial copy of the 1,000,006-row profiles table, from PostgreSQL and from
MariaDB, against the time each source itself takes to export the same table, in one run.

Starts a throwaway PostgreSQL and MariaDB (temporary folders, free ports; PostgreSQL as the
`postgres` user when run as root), loads `bench/data/users_1000006.tsv` into a table
`profiles (id, first_name, last_name, birth_date, city, about)` (the profile-search task's
shape: birth date from the age, about from the interests), then, RUNS times interleaved:

- the source's own export: PostgreSQL `COPY profiles TO '/dev/null'` (server side, as the
  superuser); MariaDB `mariadb -e 'SELECT * FROM profiles' > /dev/null` (through a client);
- Hotset: a fresh `hotset serve` on a new data folder, the source declared over HTTP with
  the task's indexes (first_name and last_name tree utf8_ci, their composite), the clock
  stopped when its status says `streaming` (every row copied, indexes built, logged).

Prints a table and one JSON line (medians, rows/s, the ratio Hotset time / export time, the
load average before and after). usage: bench/sync_copy.py [--runs 3] [--hotset BIN]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench/data/users_1000006.tsv")
ROWS = 1_000_006
IS_ROOT = os.geteuid() == 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def profiles_tsv(path):
    """The data set in the table's shape: id, first, last, birth date, city, about."""
    with open(DATA) as src, open(path, "w") as out:
        for line in src:
            id_, first, last, age, city, interests = line.rstrip("\n").split("\t")
            year = 2026 - int(age)
            day = int(id_) % 28 + 1
            month = int(id_) % 12 + 1
            about = "Likes " + interests.replace(",", ", ") if interests else "Likes nothing much"
            out.write(f"{id_}\t{first}\t{last}\t{year}-{month:02d}-{day:02d}\t{city}\t{about}\n")


class Postgres:
    def __init__(self, work, tsv):
        versions = sorted(os.listdir("/usr/lib/postgresql"))
        self.bin = f"/usr/lib/postgresql/{versions[-1]}/bin"
        self.dir = os.path.join(work, "pg")
        os.makedirs(os.path.join(self.dir, "data"))
        os.chmod(work, 0o755)
        self.port = free_port()
        if IS_ROOT:
            shutil.chown(self.dir, "postgres", "postgres")
            shutil.chown(os.path.join(self.dir, "data"), "postgres", "postgres")
        self.owner([f"{self.bin}/initdb", "-D", f"{self.dir}/data", "-U", "postgres", "--auth-host=scram-sha-256",
                    "--auth-local=trust", "--no-sync"])
        with open(f"{self.dir}/data/postgresql.auto.conf", "a") as conf:
            conf.write("wal_level = logical\nmax_replication_slots = 8\nmax_wal_senders = 8\n"
                       "listen_addresses = '127.0.0.1'\nshared_buffers = '512MB'\n")
        self.owner([f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-l", f"{self.dir}/log", "-w", "-o",
                    f"-p {self.port} -k {self.dir}", "start"])
        self.sql("CREATE ROLE hotset LOGIN REPLICATION PASSWORD 'pw'")
        self.sql("CREATE DATABASE appdb OWNER hotset")
        self.sql("CREATE TABLE profiles (id int PRIMARY KEY, first_name text, last_name text, birth_date date, "
                 "city text, about text)", db="appdb", user="hotset")
        with open(tsv) as f:
            subprocess.run([f"{self.bin}/psql", "-X", "-q", "-h", self.dir, "-p", str(self.port), "-U", "hotset",
                            "-d", "appdb", "-c", "COPY profiles FROM STDIN"], stdin=f, check=True)
        self.sql("VACUUM ANALYZE profiles", db="appdb")
        self.url = f"postgres://hotset:pw@127.0.0.1:{self.port}/appdb"

    def owner(self, cmd):
        return run((["runuser", "-u", "postgres", "--"] if IS_ROOT else []) + cmd, cwd=self.dir)

    def sql(self, text, db="postgres", user="postgres"):
        return run([f"{self.bin}/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.dir, "-p",
                    str(self.port), "-U", user, "-d", db, "-c", text])

    def export(self):
        started = time.perf_counter()
        self.sql("COPY profiles TO '/dev/null'", db="appdb")
        return time.perf_counter() - started

    def drop_slot(self):
        self.sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots", db="appdb")
        self.sql("DROP PUBLICATION IF EXISTS hotset_pg", db="appdb")

    def stop(self):
        self.owner([f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-m", "immediate", "-w", "stop"])


class MariaDb:
    def __init__(self, work, tsv):
        self.dir = os.path.join(work, "maria")
        os.makedirs(os.path.join(self.dir, "tmp"))
        self.port = free_port()
        self.socket = os.path.join(self.dir, "sock")
        run(["mariadb-install-db", f"--datadir={self.dir}/data", "--user=root" if IS_ROOT else f"--user={os.getlogin()}",
             "--auth-root-authentication-method=normal"])
        self.proc = subprocess.Popen(
            ["mariadbd", "--no-defaults", f"--datadir={self.dir}/data", f"--socket={self.socket}",
             f"--port={self.port}", "--bind-address=127.0.0.1", f"--tmpdir={self.dir}/tmp", "--log-bin=binlog",
             "--server-id=1", "--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL",
             "--innodb-buffer-pool-size=512M", "--local-infile=1"] + (["--user=root"] if IS_ROOT else []),
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "log"), "w"))
        deadline = time.time() + 60
        while subprocess.run(["mariadb", f"--socket={self.socket}", "-uroot", "-e", "SELECT 1"],
                             capture_output=True).returncode != 0:
            if time.time() > deadline:
                raise SystemExit("MariaDB did not start")
            time.sleep(0.1)
        self.sql("CREATE DATABASE appdb; CREATE USER hotset@'%' IDENTIFIED BY 'pw'; "
                 "GRANT ALL ON appdb.* TO hotset@'%'; GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO hotset@'%';"
                 "CREATE TABLE appdb.profiles (id int PRIMARY KEY, first_name varchar(64), last_name varchar(64), "
                 "birth_date date, city varchar(64), about text) CHARACTER SET utf8mb4")
        self.sql(f"LOAD DATA LOCAL INFILE '{tsv}' INTO TABLE appdb.profiles", extra=["--local-infile=1"])
        self.url = f"mysql://hotset:pw@127.0.0.1:{self.port}/appdb"

    def sql(self, text, extra=()):
        return run(["mariadb", f"--socket={self.socket}", "-uroot", *extra, "-e", text])

    def export(self):
        started = time.perf_counter()
        with open(os.devnull, "w") as null:
            subprocess.run(["mariadb", f"--socket={self.socket}", "-uroot", "-e", "SELECT * FROM appdb.profiles"],
                           stdout=null, check=True)
        return time.perf_counter() - started

    def drop_slot(self):
        pass

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def http(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read() or b"null")


INDEXES = [
    {"name": "first_name", "field": "first_name", "type": "string", "index": "tree", "collate": "utf8_ci"},
    {"name": "last_name", "field": "last_name", "type": "string", "index": "tree", "collate": "utf8_ci"},
    {"name": "first_name+last_name", "field": ["first_name", "last_name"], "type": "string", "index": "tree",
     "collate": "utf8_ci"},
]


def hotset_copy(binary, work, name, source):
    """Seconds from declaring the source to its status saying streaming."""
    data = tempfile.mkdtemp(dir=work)
    proc = subprocess.Popen([binary, "serve", "--data", data, "--resp-port", "0", "--http-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        http_addr = proc.stdout.readline().split()[5]
        table = "public.profiles" if name == "pg" else "appdb.profiles"
        decl = {"name": name, "url": source.url, "tables": [{"table": table, "namespace": "profiles",
                                                              "indexes": INDEXES}]}
        started = time.perf_counter()
        http("POST", f"http://{http_addr}/api/v1/sources", decl)
        while True:
            status = http("GET", f"http://{http_addr}/api/v1/sources/{name}")
            if status["state"] == "streaming":
                break
            if status["state"] == "failed":
                raise SystemExit(f"the copy failed: {status}")
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
        rows = status["tables"][0]["rows_copied"]
        if rows != ROWS:
            raise SystemExit(f"copied {rows} rows, not {ROWS}")
        http("DELETE", f"http://{http_addr}/api/v1/sources/{name}")
        return elapsed
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(data, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hotset", default=os.path.join(ROOT, "target/release/hotset"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    work = tempfile.mkdtemp(prefix="sync_copy.")
    os.chmod(work, 0o755)
    tsv = os.path.join(work, "profiles.tsv")
    profiles_tsv(tsv)
    os.chmod(tsv, 0o644)
    sources = {}
    try:
        sources["pg"] = Postgres(work, tsv)
        sources["maria"] = MariaDb(work, tsv)
        times = {key: [] for key in ["pg_export", "pg_hotset", "maria_export", "maria_hotset"]}
        for run_number in range(args.runs):
            for name, source in sources.items():
                times[f"{name}_export"].append(source.export())
                times[f"{name}_hotset"].append(hotset_copy(args.hotset, work, name, source))
                print(f"run {run_number + 1} {name}: export {times[name + '_export'][-1]:.2f} s, "
                      f"hotset {times[name + '_hotset'][-1]:.2f} s", file=sys.stderr)
        medians = {key: statistics.median(values) for key, values in times.items()}
        result = {"rows": ROWS, "runs": args.runs, "load_before": load_before, "load_after": os.getloadavg(),
                  "seconds": medians, "all": times}
        for name in sources:
            result[f"{name}_hotset_rows_per_s"] = round(ROWS / medians[f"{name}_hotset"])
            result[f"{name}_ratio_to_export"] = round(medians[f"{name}_hotset"] / medians[f"{name}_export"], 2)
        print(f"{'source':8} {'export s':>9} {'hotset s':>9} {'rows/s':>9} {'hotset/export':>14}")
        for name in sources:
            print(f"{name:8} {medians[name + '_export']:9.2f} {medians[name + '_hotset']:9.2f} "
                  f"{result[name + '_hotset_rows_per_s']:9} {result[name + '_ratio_to_export']:14}")
        print(json.dumps(result))
    finally:
        for source in sources.values():
            source.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
