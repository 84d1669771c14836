#!/usr/bin/env python3
"""Full-text search side by side: Hotset (bench/runner, embedded), SQLite FTS5 and Reindexer's
full-text index (pyreindexer, builtin engine), on the 100k catalogue (50-word descriptions).

Every system gets the same seeded query streams, drawn from the data set's descriptions:
  one_word       a description word                                     LIMIT 10 + total
  two_words_and  two words of one description, both required            LIMIT 10 + total
  two_words_or   the same two words, either one, ranked                 LIMIT 10 + total
  prefix         the first max(3, len-3) letters of a word, as prefix*   LIMIT 10 + total
  typo           a word of 5+ letters with one inner letter replaced    LIMIT 10 + total
                 (Hotset `w~`, Reindexer `w~`; FTS5 has no typo tolerance: null)
Results are ranked (best first) and the ten documents are fetched whole, as a user would.
Also: load time, the text index's build time alone, RSS and the raw text size.

usage: bench/fulltext_compare.py [-r 3] [--seconds 3] [--system hotset|sqlite|reindexer ...]
       bench/fulltext_compare.py --peer sqlite|reindexer DATA PARAMS --seconds S  (one run)
Prints each run, the medians, the ratios Hotset/peer, and one JSON line last; saves it to
bench/results/<date>-fulltext.json.
"""
import argparse
import datetime
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared", "bench")
sys.path.insert(0, SHARED)
from bench_common import cycle, read_lines, rss_mb, timed_run  # noqa: E402

RUNNER = os.path.join(ROOT, "target", "release", "hotset-bench")
KINDS = ["one_word", "two_words_and", "two_words_or", "prefix", "typo"]


def make_params(lines, out, seed=11, n=50_000):
    """Seeded query streams from the descriptions (see the module doc)."""
    rng = random.Random(seed)
    docs = [json.loads(lines[rng.randrange(len(lines))])["description"].split() for _ in range(n)]
    one = [rng.choice(d) for d in docs]
    two = [" ".join(rng.sample(d, 2)) for d in docs]
    prefix = [w[: max(3, len(w) - 3)] for w in one]
    typo = []
    for w in (rng.choice(d) for d in docs):
        if len(w) < 5:
            continue
        i = rng.randrange(1, len(w) - 1)
        c = rng.choice([x for x in "abcdefghijklmnopqrstuvwxyz" if x != w[i]])
        typo.append(w[:i] + c + w[i + 1:])
    params = {"one_word": one, "two_words": two, "prefix": prefix, "typo": typo}
    with open(out, "w") as f:
        json.dump(params, f)
    return params


def query_texts(params):
    """The query text each kind sends (Hotset's and Reindexer's language agree here)."""
    return {
        "one_word": params["one_word"],
        "two_words_and": [" ".join("+" + w for w in t.split()) for t in params["two_words"]],
        "two_words_or": params["two_words"],
        "prefix": [p + "*" for p in params["prefix"]],
        "typo": [w + "~" for w in params["typo"]],
    }


def run_sqlite(lines, params, seconds, warmup):
    rss_start = rss_mb()
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, year INTEGER, description TEXT)")
    con.execute("CREATE INDEX items_name ON items(name)")
    con.execute("CREATE INDEX items_year ON items(year)")
    rows = [(d["id"], d["name"], d["year"], d["description"]) for d in map(json.loads, lines)]
    t0 = time.perf_counter()
    con.execute("BEGIN")
    con.executemany("INSERT INTO items VALUES (?,?,?,?)", rows)
    con.execute("COMMIT")
    load_s = time.perf_counter() - t0
    rss_plain = rss_mb()
    t0 = time.perf_counter()
    con.execute("CREATE VIRTUAL TABLE items_fts USING fts5(description, content='items', content_rowid='id')")
    con.execute("INSERT INTO items_fts(items_fts) VALUES('rebuild')")
    build_s = time.perf_counter() - t0
    rss_loaded = rss_mb()
    page_sql = ("SELECT items.* FROM items_fts JOIN items ON items.id = items_fts.rowid "
                "WHERE items_fts MATCH ? ORDER BY items_fts.rank LIMIT 10")
    count_sql = "SELECT count(*) FROM items_fts WHERE items_fts MATCH ?"
    quoted = lambda w: '"' + w + '"'  # noqa: E731
    texts = {
        "one_word": [quoted(w) for w in params["one_word"]],
        "two_words_and": [" ".join(quoted(w) for w in t.split()) for t in params["two_words"]],
        "two_words_or": [" OR ".join(quoted(w) for w in t.split()) for t in params["two_words"]],
        "prefix": [quoted(p) + "*" for p in params["prefix"]],
    }
    totals = {}

    def run(text):
        page = con.execute(page_sql, (text,)).fetchall()
        totals.setdefault(run.kind, []).append(con.execute(count_sql, (text,)).fetchone()[0])
        return len(page)

    qps, latency = {}, {}
    for kind, stream in texts.items():
        run.kind = kind
        r = timed_run(run, cycle(stream), seconds, warmup)
        qps[kind], latency[kind] = r["ops_s"], {"p50_us": r["p50_us"], "p99_us": r["p99_us"]}
    qps["typo"] = None
    return {"system": "sqlite", "load_s": round(load_s, 3), "ft_build_s": round(build_s, 3),
            "rss_mb_start": rss_start, "rss_mb_before_text_index": rss_plain, "rss_mb_loaded": rss_loaded,
            "qps": qps, "latency": latency,
            "mean_total": {k: round(statistics.mean(v), 1) for k, v in totals.items()},
            "notes": "FTS5 has no typo tolerance (typo: null); two_words_and is implicit AND, or is OR"}


def run_reindexer(lines, params, seconds, warmup):
    from pyreindexer import RxConnector
    from pyreindexer.query import CondType

    def idx(name, field_type, index_type, pk=False):
        return {"name": name, "json_paths": [name], "field_type": field_type, "index_type": index_type,
                "is_pk": pk, "is_array": False, "is_dense": False, "is_sparse": False, "is_no_column": False,
                "collate_mode": "none", "sort_order_letters": "", "expire_after": 0, "config": {}}

    folder = tempfile.mkdtemp(prefix="rx_ft_")
    rss_start = rss_mb()
    db = RxConnector("builtin://" + folder)
    db.namespace_open("items")
    for d in [idx("id", "int", "hash", True), idx("name", "string", "hash"), idx("year", "int", "tree"),
              idx("description", "string", "text")]:
        db.index_add("items", d)
    docs = [json.loads(ln) for ln in lines]
    t0 = time.perf_counter()
    tx = db.new_transaction("items")
    for d in docs:
        tx.insert(d)
    tx.commit()
    load_s = time.perf_counter() - t0
    rss_plain = rss_mb()
    # The full-text index is built by the first full-text query.
    t0 = time.perf_counter()
    list(db.new_query("items").where("description", CondType.CondEq, params["one_word"][0]).limit(10).execute())
    build_s = time.perf_counter() - t0
    rss_loaded = rss_mb()
    totals = {}

    def run(text):
        qr = db.new_query("items").where("description", CondType.CondEq, text).limit(10).request_total().execute()
        page = list(qr)
        totals.setdefault(run.kind, []).append(qr.total_count())
        return len(page)

    qps, latency = {}, {}
    for kind, stream in query_texts(params).items():
        run.kind = kind
        r = timed_run(run, cycle(stream), seconds, warmup)
        qps[kind], latency[kind] = r["ops_s"], {"p50_us": r["p50_us"], "p99_us": r["p99_us"]}
    db.close()
    shutil.rmtree(folder, ignore_errors=True)
    return {"system": "reindexer", "load_s": round(load_s, 3), "ft_build_s": round(build_s, 3),
            "rss_mb_start": rss_start, "rss_mb_before_text_index": rss_plain, "rss_mb_loaded": rss_loaded,
            "qps": qps, "latency": latency,
            "mean_total": {k: round(statistics.mean(v), 1) for k, v in totals.items()}}


def last_json(text):
    return json.loads([ln for ln in text.splitlines() if ln.strip().startswith("{")][-1])


def one_run(system, data, params_path, seconds):
    if system == "hotset":
        out = subprocess.run([RUNNER, "fulltext", data, params_path, "--seconds", str(seconds)],
                             check=True, capture_output=True, text=True).stdout
    else:
        out = subprocess.run([sys.executable, __file__, "--peer", system, data, params_path,
                              "--seconds", str(seconds)], check=True, capture_output=True, text=True).stdout
    return last_json(out)


def median_of(runs):
    first = runs[0]
    out = {}
    for key, value in first.items():
        if isinstance(value, dict):
            out[key] = median_of([r[key] for r in runs])
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            values = [r[key] for r in runs if r.get(key) is not None]
            out[key] = round(statistics.median(values), 3) if values else None
        else:
            out[key] = value
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-r", "--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--system", action="append", choices=["hotset", "sqlite", "reindexer"])
    ap.add_argument("--peer", nargs=3, metavar=("SYSTEM", "DATA", "PARAMS"))
    a = ap.parse_args()
    if a.peer:
        system, data, params_path = a.peer
        lines = read_lines(data)
        with open(params_path) as f:
            params = json.load(f)
        run = run_sqlite if system == "sqlite" else run_reindexer
        result = run(lines, params, a.seconds, a.warmup)
        result["raw_text_mb"] = round(sum(len(json.loads(ln)["description"]) for ln in lines) / 2**20, 1)
        print(json.dumps(result))
        return
    sys.path.insert(0, HERE)
    from run_core import dataset  # noqa: E402
    data, _ = dataset("items", 100_000, "100k")
    params_path = data.replace(".jsonl", ".fulltext.json")
    make_params(read_lines(data), params_path)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "hotset-bench"], cwd=ROOT, check=True)
    systems = a.system or ["hotset", "sqlite", "reindexer"]
    runs = {s: [] for s in systems}
    for round_no in range(a.runs):
        for system in systems:
            result = one_run(system, data, params_path, a.seconds)
            runs[system].append(result)
            print(f"# run {round_no + 1} {system}: qps {result['qps']} build {result['ft_build_s']} s",
                  file=sys.stderr)
    medians = {s: median_of(r) for s, r in runs.items()}
    ratios = {}
    if "hotset" in medians:
        for peer in [s for s in medians if s != "hotset"]:
            ratios[peer] = {k: (round(medians["hotset"]["qps"][k] / medians[peer]["qps"][k], 2)
                                if medians[peer]["qps"].get(k) else None) for k in KINDS}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    report = {"bench": "fulltext", "date": datetime.date.today().isoformat(), "commit": commit,
              "runs": a.runs, "seconds": a.seconds, "medians": medians, "hotset_over_peer_qps": ratios}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", f"{report['date']}-fulltext.json"), "w") as f:
        json.dump({"report": report, "all_runs": runs}, f, indent=1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
