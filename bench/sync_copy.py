#!/usr/bin/env python3
"""Live sync's initial copy of the 1,000,006-row profiles table, from PostgreSQL and from
MariaDB, against the time each source itself takes to export the same table, in one run.

Starts a throwaway PostgreSQL and MariaDB (temporary folders, free ports; PostgreSQL as the
`postgres` user when run as root), loads `bench/data/users_1000006.tsv` into a table
`profiles (id, first_name, last_name, birth_date, city, about)` (the profile-search task's
shape: birth date from the age, about from the interests), then, RUNS times interleaved:

- the source's own export: PostgreSQL `COPY profiles TO '/dev/null'` (server side, as the
  superuser), and the same through a client (`psql -c 'COPY profiles TO STDOUT' >
  /dev/null`, reported beside it); MariaDB `mariadb -e 'SELECT * FROM profiles' >
  /dev/null` (through a client);
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
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench/data/users_1000006.tsv")
ROWS = 1_000_006
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sources import Hotset, MariaDb, Postgres  # noqa: E402


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




INDEXES = [
    {"name": "first_name", "field": "first_name", "type": "string", "index": "tree", "collate": "utf8_ci"},
    {"name": "last_name", "field": "last_name", "type": "string", "index": "tree", "collate": "utf8_ci"},
    {"name": "first_name+last_name", "field": ["first_name", "last_name"], "type": "string", "index": "tree",
     "collate": "utf8_ci"},
]


def hotset_copy(binary, work, name, source, indexes=INDEXES):
    """Seconds from declaring the source to its status saying streaming."""
    hotset = Hotset(binary, work)
    try:
        table = "public.profiles" if name == "pg" else "appdb.profiles"
        decl = {"name": name, "url": source.url, "tables": [{"table": table, "namespace": "profiles",
                                                              "indexes": indexes}]}
        started = time.perf_counter()
        hotset.call("POST", "/api/v1/sources", decl)
        status = hotset.wait_state(name, "streaming")
        elapsed = time.perf_counter() - started
        rows = status["tables"][0]["rows_copied"]
        if rows != ROWS:
            raise SystemExit(f"copied {rows} rows, not {ROWS}")
        hotset.call("DELETE", f"/api/v1/sources/{name}")
        return elapsed
    finally:
        hotset.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hotset", default=os.path.join(ROOT, "target/release/hotset"))
    parser.add_argument("--no-indexes", action="store_true", help="the primary key only (what the indexes cost)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    work = tempfile.mkdtemp(prefix="sync_copy.")
    os.chmod(work, 0o755)
    tsv = os.path.join(work, "profiles.tsv")
    profiles_tsv(tsv)
    os.chmod(tsv, 0o644)
    sources = {}
    try:
        sources["pg"] = Postgres(work)
        sources["maria"] = MariaDb(work)
        for source in sources.values():
            source.load_profiles(tsv)
        times = {key: [] for key in ["pg_export", "pg_client_export", "pg_hotset", "maria_export", "maria_hotset"]}
        for run_number in range(args.runs):
            for name, source in sources.items():
                times[f"{name}_export"].append(source.export())
                if name == "pg":
                    times["pg_client_export"].append(source.export_client())
                indexes = [] if args.no_indexes else INDEXES
                times[f"{name}_hotset"].append(hotset_copy(args.hotset, work, name, source, indexes))
                print(f"run {run_number + 1} {name}: export {times[name + '_export'][-1]:.2f} s, "
                      f"hotset {times[name + '_hotset'][-1]:.2f} s", file=sys.stderr)
        medians = {key: statistics.median(values) for key, values in times.items()}
        result = {"rows": ROWS, "runs": args.runs, "indexes": not args.no_indexes, "load_before": load_before, "load_after": os.getloadavg(),
                  "seconds": medians, "all": times}
        for name in sources:
            result[f"{name}_hotset_rows_per_s"] = round(ROWS / medians[f"{name}_hotset"])
            result[f"{name}_ratio_to_export"] = round(medians[f"{name}_hotset"] / medians[f"{name}_export"], 2)
        result["pg_ratio_to_client_export"] = round(medians["pg_hotset"] / medians["pg_client_export"], 2)
        print(f"{'source':8} {'export s':>9} {'hotset s':>9} {'rows/s':>9} {'hotset/export':>14}")
        for name in sources:
            print(f"{name:8} {medians[name + '_export']:9.2f} {medians[name + '_hotset']:9.2f} "
                  f"{result[name + '_hotset_rows_per_s']:9} {result[name + '_ratio_to_export']:14}")
        print(f"pg through a client: export {medians['pg_client_export']:.2f} s, "
              f"hotset/export {result['pg_ratio_to_client_export']}")
        print(json.dumps(result))
    finally:
        for source in sources.values():
            source.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
