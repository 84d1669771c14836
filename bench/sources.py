"""Throwaway source databases for the live-sync benchmarks (`sync_copy.py`,
`sync_freshness.py`): a PostgreSQL and a MariaDB in temporary folders on free ports
(PostgreSQL as the `postgres` user when run as root), and a `hotset serve` to follow them.
"""

import getpass
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

IS_ROOT = os.geteuid() == 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


class Postgres:
    def __init__(self, work):
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
        self.url = f"postgres://hotset:pw@127.0.0.1:{self.port}/appdb"

    def load_profiles(self, tsv):
        self.sql("CREATE TABLE profiles (id int PRIMARY KEY, first_name text, last_name text, birth_date date, "
                 "city text, about text)", db="appdb", user="hotset")
        with open(tsv) as f:
            subprocess.run([f"{self.bin}/psql", "-X", "-q", "-h", self.dir, "-p", str(self.port), "-U", "hotset",
                            "-d", "appdb", "-c", "COPY profiles FROM STDIN"], stdin=f, check=True)
        self.sql("VACUUM ANALYZE profiles", db="appdb")

    def owner(self, cmd):
        return run((["runuser", "-u", "postgres", "--"] if IS_ROOT else []) + cmd, cwd=self.dir)

    def sql(self, text, db="postgres", user="postgres"):
        return run([f"{self.bin}/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.dir, "-p",
                    str(self.port), "-U", user, "-d", db, "-c", text])

    def export(self):
        started = time.perf_counter()
        self.sql("COPY profiles TO '/dev/null'", db="appdb")
        return time.perf_counter() - started

    def export_client(self):
        """The same export through a client, as MariaDB's is: psql reads `COPY ... TO
        STDOUT` and writes it to /dev/null."""
        started = time.perf_counter()
        with open(os.devnull, "w") as null:
            subprocess.run([f"{self.bin}/psql", "-X", "-q", "-h", self.dir, "-p", str(self.port), "-U", "hotset",
                            "-d", "appdb", "-c", "COPY profiles TO STDOUT"], stdout=null, check=True)
        return time.perf_counter() - started

    def drop_slot(self):
        self.sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots", db="appdb")
        self.sql("DROP PUBLICATION IF EXISTS hotset_pg", db="appdb")

    def stop(self):
        self.owner([f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-m", "immediate", "-w", "stop"])


class MariaDb:
    def __init__(self, work):
        self.dir = os.path.join(work, "maria")
        os.makedirs(os.path.join(self.dir, "tmp"))
        self.port = free_port()
        self.socket = os.path.join(self.dir, "sock")
        run(["mariadb-install-db", f"--datadir={self.dir}/data", "--user=root" if IS_ROOT else f"--user={getpass.getuser()}",
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
        # The install's anonymous ''@localhost would shadow hotset@'%' for local logins.
        self.sql("DROP USER IF EXISTS ''@'localhost'; DROP USER IF EXISTS ''@'%'; CREATE DATABASE appdb; "
                 "CREATE USER hotset@'%' IDENTIFIED BY 'pw'; GRANT ALL ON appdb.* TO hotset@'%'; "
                 "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO hotset@'%';")
        self.url = f"mysql://hotset:pw@127.0.0.1:{self.port}/appdb"

    def load_profiles(self, tsv):
        self.sql("CREATE TABLE appdb.profiles (id int PRIMARY KEY, first_name varchar(64), last_name varchar(64), "
                 "birth_date date, city varchar(64), about text) CHARACTER SET utf8mb4")
        self.sql(f"LOAD DATA LOCAL INFILE '{tsv}' INTO TABLE appdb.profiles", extra=["--local-infile=1"])

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
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        raise SystemExit(f"{method} {url}: {error.code} {error.read().decode()}") from None




class Hotset:
    """A `hotset serve` on a fresh data folder; `http` is its HTTP address."""

    def __init__(self, binary, work):
        self.data = tempfile.mkdtemp(dir=work)
        self.proc = subprocess.Popen([binary, "serve", "--data", self.data, "--resp-port", "0", "--http-port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.http = self.proc.stdout.readline().split()[5]

    def call(self, method, path, body=None):
        return http(method, f"http://{self.http}{path}", body)

    def wait_state(self, name, wanted, poll=0.02):
        while True:
            status = self.call("GET", f"/api/v1/sources/{name}")
            if status["state"] == wanted:
                return status
            if status["state"] == "failed":
                raise SystemExit(f"source {name} failed: {status}")
            time.sleep(poll)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)
