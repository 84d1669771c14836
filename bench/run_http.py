#!/usr/bin/env python3
"""The HTTP/JSON API under wrk (issue 4): the catalogue query with 50 connections.

Owns: building and starting `hotset serve` (temporary data folder, ports the kernel picks,
ready once it prints its ready line), loading the 100k catalogue with `hotset import`,
writing the wrk Lua script that cycles through seeded query bodies, running wrk R times
per endpoint (interleaved), checking one answer of each endpoint before timing it, and
writing bench/results/<date>-http.json. Never: leaves a server or a data folder behind,
or waits on a sleep.

What runs: `wrk -t1 -c50 -d{S}s --latency` against
  (a) POST /api/v1/query with the JSON DSL
      {"namespace": "items", "filter": [name = X, year > 2010], "sort": "year", "limit": 10, "total": true}
  (b) POST /api/v1/sql with the same query as SQL
      SELECT COUNT(*), * FROM items WHERE name = 'X' AND year > 2010 ORDER BY year LIMIT 10
X cycles through 1,000 names of the data set (`params.json` "names", seeded). Indexes:
id (hash, pk), name (hash), year (tree). Also reported: `hotset import` of the 100k lines
(documents/s). wrk and the server share the 2 cores: a whole-box figure.

usage: bench/run_http.py [-r 3] [--seconds 10] [--date YYYY-MM-DD]
"""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HOTSET = os.path.join(ROOT, "target", "release", "hotset")
ITEMS = os.path.join(HERE, "data", "items_100k.jsonl")
PARAMS = os.path.join(HERE, "data", "items_100k.params.json")
INDEXES = [
    {"field": "id", "type": "int", "index": "hash", "pk": True},
    {"field": "name", "type": "string", "index": "hash"},
    {"field": "year", "type": "int", "index": "tree"},
]


def log(text):
    print(f"# {text}", file=sys.stderr, flush=True)


def http(addr, method, path, body=None):
    """One request with curl; returns (status, text)."""
    out = subprocess.run(["curl", "-s", "-X", method, "-w", "\n%{http_code}", "--data-binary", "@-",
                          f"http://{addr}{path}"], input=(body or "").encode(), capture_output=True, check=True)
    text, status = out.stdout.decode().rsplit("\n", 1)
    return int(status), text


def bodies(names):
    dsl = [json.dumps({"namespace": "items", "filter": [{"field": "name", "op": "=", "value": n},
                                                         {"field": "year", "op": ">", "value": 2010}],
                       "sort": "year", "limit": 10, "total": True}) for n in names]
    sql = [f"SELECT COUNT(*), * FROM items WHERE name = '{n}' AND year > 2010 ORDER BY year LIMIT 10" for n in names]
    return {"query": ("/api/v1/query", dsl), "sql": ("/api/v1/sql", sql)}


def lua_script(path, requests):
    """A wrk script that sends the bodies in turn."""
    quoted = ",\n".join(json.dumps(b) for b in requests)  # JSON strings are valid Lua strings here
    return f"""
local bodies = {{
{quoted}
}}
local i = 0
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
request = function()
  i = i % #bodies + 1
  return wrk.format(nil, "{path}", nil, bodies[i])
end
"""


def micros(text):
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(value) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]


def wrk(addr, script, seconds, connections=50):
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", script, f"http://{addr}"],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    latency = {p: micros(re.search(rf"^\s+{p}%\s+(\S+)", out, re.M).group(1)) for p in ("50", "99")}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        sys.exit(f"wrk saw {errors.group(1)} error responses:\n{out}")
    return {"requests_s": rps, "p50_us": latency["50"], "p99_us": latency["99"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    a = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is missing: apt-get install -y wrk")
    if not os.path.exists(ITEMS):
        subprocess.check_call([sys.executable, os.path.join(ROOT, "..", "shared", "bench", "gen_dataset.py"),
                               "items", "--n", "100000", "--out", ITEMS])
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "hotset-server", "--bin", "hotset"], cwd=ROOT)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    names = json.load(open(PARAMS))["names"][:1000]
    work = tempfile.mkdtemp(prefix="hotset-http-bench-")
    server = subprocess.Popen([HOTSET, "serve", "--data", os.path.join(work, "data"), "--resp-port", "0",
                               "--http-port", "0", "--fsync", "periodic"],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "HOTSET_LOG": "warn"})
    try:
        words = server.stdout.readline().split()
        if words[:3] != ["hotset", "ready:", "resp"]:
            sys.exit(f"hotset did not start: {words}")
        resp, addr = words[3], words[5]
        status, text = http(addr, "POST", "/api/v1/namespaces", json.dumps({"name": "items", "indexes": INDEXES}))
        assert status == 201, text
        started = time.monotonic()
        subprocess.run([HOTSET, "import", ITEMS, "--ns", "items", "--addr", resp], check=True, capture_output=True)
        import_s = time.monotonic() - started
        status, text = http(addr, "GET", "/api/v1/namespaces/items")
        documents = json.loads(text)["documents"]
        assert status == 200 and documents == 100_000, text
        endpoints = bodies(names)
        scripts = {}
        for name, (path, requests) in endpoints.items():
            status, text = http(addr, "POST", path, requests[0])
            answer = json.loads(text)
            assert status == 200 and "total" in answer and len(answer["items"]) <= 10, text
            assert all(item["name"] == names[0] and item["year"] > 2010 for item in answer["items"]), text
            scripts[name] = os.path.join(work, f"{name}.lua")
            with open(scripts[name], "w") as f:
                f.write(lua_script(path, requests))
        runs = {name: [] for name in endpoints}
        for i in range(a.r):
            for name in endpoints:
                log(f"run {i + 1}/{a.r}: wrk {name}")
                runs[name].append(wrk(addr, scripts[name], a.seconds))
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)
    median = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    report = {
        "bench": "run_http", "date": a.date, "commit": commit, "median_of": a.r, "seconds": a.seconds,
        "command": f"wrk -t1 -c50 -d{a.seconds}s --latency (bench/run_http.py); hotset serve --fsync periodic",
        "import_100k_s": round(import_s, 2), "import_docs_s": round(100_000 / import_s),
        "median": median, "runs": runs,
    }
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", f"{a.date}-http.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    print("| endpoint | requests/s | p50 µs | p99 µs |")
    print("|---|---|---|---|")
    for name, m in median.items():
        print(f"| {endpoints[name][0]} | {m['requests_s']:,.0f} | {m['p50_us']:,.0f} | {m['p99_us']:,.0f} |")
    print(f"`hotset import` of 100,000 catalogue lines: {import_s:.2f} s ({100_000 / import_s:,.0f} documents/s)")
    log(f"wrote {os.path.relpath(path, ROOT)}")
    print(json.dumps({"bench": "run_http", "median": median, "import_docs_s": report["import_docs_s"]}))


if __name__ == "__main__":
    main()
