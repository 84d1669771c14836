#!/usr/bin/env python3
"""The profile-search procedure (issue 18): Hotset's stored procedure called over RESP and
HTTP with 8 connections, against the same search as a Tarantool Lua function and as a
MariaDB stored procedure, side by side in one run; and what the procedure call itself costs.

Owns: loading the three servers with the profile data and prefix pairs of
bench/profile_search.py (whose data files, Hotset and MariaDB start-up and loading it
imports); the Hotset procedure library (examples/procedures/profiles.lua, unchanged, loaded
with FUNCTION LOAD REPLACE, plus `search_profiles_json`, appended to the same library text,
which answers the search's value as JSON text whether the example returns JSON text or a Lua
table) and a library `procbench` with `passthrough_sql` and `constant`; the throwaway
Tarantool instance (bench/tarantool/profiles.lua) and its client (bench/tarantool/drive.lua);
the MariaDB procedure; checking that all three find the same totals and first pages for sample pairs;
R interleaved rounds, medians, and bench/results/<date>-procedure-search.json. Never leaves
a server or a temporary folder behind, or waits on a sleep.

What is timed, every side with 8 connections, pipelining 1, for --seconds, the pairs cycled:
  hotset_resp  `FCALL_RO search_profiles 0 <first> <last> 0 20` (--resp-command DOC.CALL sends
               `DOC.CALL search_profiles <first> <last> 0 20` instead), driven by
               `hotset-bench`'s resp_drive (bench/runner/src/bin/resp_drive.rs: a thread and
               a blocking connection per connection). If the example returns a table, which
               FCALL_RO answers by Redis's conversion rather than as the page, FCALL_RO calls
               `search_profiles_json` instead, and the report says so.
  hotset_http  `POST /api/v1/functions/search_profiles` with `["<first>", "<last>", 0, 20]`
               under wrk -t1 -c8; skipped, with a message, while the route answers 404.
  tarantool    `search_profiles(first, last, offset, limit)`, a Lua function in a memtx
               instance (TREE index on (first_name, last_name) with unicode_ci; a seek per
               first name), called over net.box by 8 fibers of one tarantool client process.
               wal_mode 'none': the run only reads, so a log would slow the load and nothing
               else (Hotset and MariaDB keep their default logs, which reads do not touch).
  mariadb      `CALL search_profiles('<first>', '<last>', 0, 20)` (InnoDB, the indexes of
               profile_search.py; the page then COUNT(*)) under mariadb-slap --concurrency=8;
               its rate is the SELECTs it ran over mariadb-slap's wall time, two per call
               (its driver CPU includes the short run that sizes the timed one).
  overhead     one connection, pipelining 1: `FCALL_RO passthrough_sql 0 <sql>` (a procedure
               returning `hotset.tojson(hotset.sql(sql))`, checked equal to the direct answer as
               JSON values: the fields' order is not kept through a Lua table)
               against `DOC.SQL <sql>`, for the same query as the procedure's:
               SELECT COUNT(*), * FROM profiles WHERE first_name LIKE 'p%' AND last_name LIKE
               'q%' ORDER BY first_name, last_name, id LIMIT 20; the difference of the means.
               Beside it, the call alone: `FCALL_RO constant 0` (returns a string) against PING.
Each round runs the sides in turn, in the opposite order every other round; the medians of
the rounds are reported, with the load average before and after, and each load driver's CPU
(seconds of CPU per second timed). All drivers share the 2 cores with the servers.

usage: bench/procedure_search.py [-r 3] [--seconds 10] [--n 1000006] [--pairs 2000]
                                 [--resp-command FCALL_RO|DOC.CALL]
Quick try: --n 100000 -r 1 --seconds 3.
Needs: wrk, tarantool (Debian's 2.6), mariadb-server (mariadbd, mariadb-install-db, mariadb,
mariadb-slap), a release build (built here: hotset and resp_drive). Prints a table and one
JSON line; writes bench/results/<date>-procedure-search.json.
"""
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_search import (Hotset, MariaDB, arguments, condition, data_files, free_port,  # noqa: E402
                            prefix_pairs, write_result)
from run_http import http as curl, log, lua_script, wrk  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESP_DRIVE = os.path.join(ROOT, "target", "release", "resp_drive")
EXAMPLE = os.path.join(ROOT, "examples", "procedures", "profiles.lua")
TARANTOOL_SERVER = os.path.join(HERE, "tarantool", "profiles.lua")
TARANTOOL_DRIVE = os.path.join(HERE, "tarantool", "drive.lua")
HTTP_PATH = "/api/v1/functions/search_profiles"
# The namespace the example queries.
NAMESPACE = "profiles"
PAGE = 20
CONNECTIONS = 8
WARMUP_S = 0.5
TARANTOOL_MEMTX_MB = 1024
CHECKED_PAIRS = 20
# Appended to the example's text: its search as JSON text, whatever the example returns.
JSON_WRAPPER = """
redis.register_function{
  function_name = 'search_profiles_json',
  callback = function(keys, args)
    local answer = search_profiles(keys, args)
    if type(answer) == 'table' then return hotset.tojson(answer) end
    return answer
  end,
  flags = {'no-writes'},
}
"""
PASSTHROUGH = """#!lua name=procbench
redis.register_function{
  function_name = 'passthrough_sql',
  callback = function(keys, args) return hotset.tojson(hotset.sql(args[1])) end,
  flags = {'no-writes'},
}
redis.register_function{
  function_name = 'constant',
  callback = function(keys, args) return 'PONG' end,
  flags = {'no-writes'},
}
"""
MARIADB_PROCEDURE = """DELIMITER //
CREATE PROCEDURE search_profiles(IN first VARCHAR(64) CHARSET utf8mb4 COLLATE utf8mb4_general_ci,
    IN last VARCHAR(64) CHARSET utf8mb4 COLLATE utf8mb4_general_ci, IN page_offset INT, IN page_limit INT)
READS SQL DATA
BEGIN
  SELECT * FROM users WHERE first_name LIKE CONCAT(first, '%') AND last_name LIKE CONCAT(last, '%')
    ORDER BY first_name, last_name, id LIMIT page_offset, page_limit;
  SELECT COUNT(*) FROM users WHERE first_name LIKE CONCAT(first, '%') AND last_name LIKE CONCAT(last, '%');
END//
DELIMITER ;"""
SIDES = ["hotset_resp", "hotset_http", "tarantool", "mariadb"]


class RespError(Exception):
    pass


class Resp:
    """One blocking RESP2 connection, for set-up and checks (the load goes through resp_drive)."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=600)
        self.replies = self.sock.makefile("rb")

    def call(self, *args):
        parts = [f"*{len(args)}\r\n".encode()]
        for arg in args:
            data = arg.encode() if isinstance(arg, str) else str(arg).encode()
            parts += [f"${len(data)}\r\n".encode(), data, b"\r\n"]
        self.sock.sendall(b"".join(parts))
        return self.read()

    def read(self):
        line = self.replies.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RespError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            return None if int(rest) < 0 else self.replies.read(int(rest) + 2)[:-2].decode()
        if kind == b"*":
            return None if int(rest) < 0 else [self.read() for _ in range(int(rest))]
        raise RespError(f"not RESP: {line!r}")

    def close(self):
        self.sock.close()


class Tarantool:
    """A throwaway instance in its own folder and process group, loaded before it is ready."""

    def __init__(self, work, tsv):
        folder = os.path.join(work, "tarantool")
        os.mkdir(folder)
        self.addr = f"127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen(["tarantool", TARANTOOL_SERVER, self.addr, folder, os.path.abspath(tsv),
                                      str(TARANTOOL_MEMTX_MB)], stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        words = self.proc.stdout.readline().split()
        if words[:1] != ["ready"]:
            log_path = os.path.join(folder, "tarantool.log")
            sys.exit(f"tarantool did not start: {open(log_path).read()[-2000:] if os.path.exists(log_path) else words}")
        self.rows, self.load_s = int(words[1]), float(words[2])

    def client(self, *args):
        out = subprocess.run(["tarantool", TARANTOOL_DRIVE, *map(str, args)], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"tarantool client failed: {out.stderr[-2000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    def stop(self):
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=60)


def page_of(answer):
    """The {total, items} a procedure answered, whether as JSON text or as JSON of JSON text."""
    while isinstance(answer, str):
        answer = json.loads(answer)
    assert isinstance(answer, dict) and "total" in answer, answer
    return answer["total"], [item["id"] for item in answer["items"]]


def direct_sql(first, last):
    return (f"SELECT COUNT(*), * FROM {NAMESPACE} WHERE {condition(first, last)} "
            f"ORDER BY first_name, last_name, id LIMIT {PAGE}")


def load_procedures(resp):
    """The example library (with the JSON wrapper appended) and `procbench`."""
    example = open(EXAMPLE).read()
    if "local function search_profiles(" not in example:
        sys.exit(f"{EXAMPLE} no longer defines `local function search_profiles`: update JSON_WRAPPER")
    assert resp.call("FUNCTION", "LOAD", "REPLACE", example + JSON_WRAPPER) == "profiles"
    assert resp.call("FUNCTION", "LOAD", "REPLACE", PASSTHROUGH) == "procbench"


def resp_search_command(resp, command, first, last):
    """The RESP command that asks for the search's page; FCALL_RO's answer to a table is
    Redis's conversion, not the page, so FCALL_RO then calls the JSON wrapper."""
    if command == "DOC.CALL":
        return ["DOC.CALL", "search_profiles", first, last, 0, PAGE]
    answer = resp.call("FCALL_RO", "search_profiles", 0, first, last, 0, PAGE)
    if isinstance(answer, str):
        return ["FCALL_RO", "search_profiles", 0, first, last, 0, PAGE]
    log(f"FCALL_RO search_profiles answers {type(answer).__name__} (a converted table): timing search_profiles_json")
    return ["FCALL_RO", "search_profiles_json", 0, first, last, 0, PAGE]


def check_answers(resp, tarantool, mariadb, pairs, work):
    """All three find the same total and first page for a sample of the pairs, and the
    passthrough answers what DOC.SQL answers."""
    sample = pairs[:CHECKED_PAIRS]
    sample_file = os.path.join(work, "sample_pairs.json")
    with open(sample_file, "w") as f:
        json.dump(sample, f)
    theirs = tarantool.client("check", tarantool.addr, sample_file)
    for (first, last), (tarantool_total, tarantool_ids) in zip(sample, theirs):
        ours = page_of(resp.call("FCALL_RO", "search_profiles_json", 0, first, last, 0, PAGE))
        lines = mariadb.sql(f"CALL search_profiles('{first}', '{last}', 0, {PAGE})").splitlines()
        mariadb_answer = (int(lines[-1]), [int(line.split("\t")[0]) for line in lines[:-1]])
        assert ours == (tarantool_total, tarantool_ids) == mariadb_answer, (first, last, ours, theirs, mariadb_answer)
        direct = json.loads(resp.call("DOC.SQL", direct_sql(first, last)))
        passed = json.loads(resp.call("FCALL_RO", "passthrough_sql", 0, direct_sql(first, last)))
        assert passed == direct, (first, last, passed, direct)
    log(f"hotset, tarantool and mariadb agree on {len(sample)} pairs (totals and first pages)")


def http_route(addr, first, last, expected):
    """Whether POST /api/v1/functions/search_profiles exists (and answers the page)."""
    status, text = curl(addr, "POST", HTTP_PATH, json.dumps([first, last, 0, PAGE]))
    if status == 404:
        log(f"skipping hotset_http: POST {HTTP_PATH} answers 404 ({text.strip()})")
        return False
    assert status == 200 and page_of(json.loads(text)) == expected, (status, text)
    return True


def with_cpu(run):
    """run()'s figures, with the CPU its child processes used per timed second."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return figures, cpu_s


def resp_drive(addr, commands_file, connections, seconds):
    out = subprocess.run([RESP_DRIVE, "--addr", addr, "--commands", commands_file, "--connections", str(connections),
                          "--seconds", str(seconds), "--warmup", str(WARMUP_S)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"resp_drive failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def timed_sides(hotset, tarantool, mariadb, files, seconds, http):
    """What each side's one timed run is: figures and the driver's CPU seconds."""
    def tarantool_run():
        return tarantool.client("drive", tarantool.addr, files["pairs"], CONNECTIONS, seconds, WARMUP_S)

    def mariadb_run():
        # Sized from a short first measure so the run takes about `seconds`; two SELECTs a call.
        calls = max(400, int(mariadb.slap(files["mariadb"], 800) / 2 * seconds))
        return {"requests_s": mariadb.slap(files["mariadb"], calls * 2) / 2}

    sides = {
        "hotset_resp": lambda: resp_drive(hotset.resp_addr, files["resp"], CONNECTIONS, seconds),
        "hotset_http": lambda: wrk(hotset.addr, files["http"], seconds, connections=CONNECTIONS),
        "tarantool": tarantool_run,
        "mariadb": mariadb_run,
    }
    if not http:
        del sides["hotset_http"]
    return sides


def overhead(hotset, files, seconds):
    """Mean latencies, one connection: the passthrough procedure and the direct query; and,
    to tell the call from the conversions, a procedure returning a constant and PING."""
    mean_us = {name: resp_drive(hotset.resp_addr, files[name], 1, seconds)["mean_us"]
               for name in ("passthrough", "direct", "constant", "ping")}
    return {"procedure_mean_us": mean_us["passthrough"], "direct_mean_us": mean_us["direct"],
            "difference_us": round(mean_us["passthrough"] - mean_us["direct"], 2),
            "constant_mean_us": mean_us["constant"], "ping_mean_us": mean_us["ping"],
            "call_only_us": round(mean_us["constant"] - mean_us["ping"], 2)}


def driver_inputs(work, pairs, command):
    """The files the load drivers read, by name: one request a pair, in the pairs' order."""
    lines = {
        "pairs.json": [json.dumps(pairs)],
        "resp.jsonl": [json.dumps(command[:-4] + [p, q, 0, PAGE]) for p, q in pairs],
        "http.lua": [lua_script(HTTP_PATH, [json.dumps([p, q, 0, PAGE]) for p, q in pairs])],
        "mariadb.sql": [f"CALL search_profiles('{p}', '{q}', 0, {PAGE});" for p, q in pairs],
        "passthrough.jsonl": [json.dumps(["FCALL_RO", "passthrough_sql", 0, direct_sql(p, q)]) for p, q in pairs],
        "direct.jsonl": [json.dumps(["DOC.SQL", direct_sql(p, q)]) for p, q in pairs],
        "constant.jsonl": [json.dumps(["FCALL_RO", "constant", 0])],
        "ping.jsonl": [json.dumps(["PING"])],
    }
    return {name.split(".")[0]: write_lines(os.path.join(work, name), text) for name, text in lines.items()}


def prepare(a, work):
    """Starts and loads the three servers, checks them, writes the drivers' inputs."""
    jsonl, tsv = data_files(a.n)
    pairs = prefix_pairs(jsonl, a.pairs)
    servers = {"hotset": Hotset(work)}
    rows, load_s = servers["hotset"].load(jsonl, namespace=NAMESPACE)
    log(f"hotset loaded {rows} rows in {load_s:.1f} s")
    servers["tarantool"] = Tarantool(work, tsv)
    log(f"tarantool loaded {servers['tarantool'].rows} rows in {servers['tarantool'].load_s:.1f} s")
    servers["mariadb"] = MariaDB(work)
    mariadb_rows, mariadb_load_s = servers["mariadb"].load(tsv)
    log(f"mariadb loaded {mariadb_rows} rows in {mariadb_load_s:.1f} s")
    assert rows == servers["tarantool"].rows == mariadb_rows == a.n, (rows, servers["tarantool"].rows, mariadb_rows)
    servers["mariadb"].sql(MARIADB_PROCEDURE)
    resp = Resp(servers["hotset"].resp_addr)
    try:
        load_procedures(resp)
        check_answers(resp, servers["tarantool"], servers["mariadb"], pairs, work)
        first, last = pairs[0]
        command = resp_search_command(resp, a.resp_command, first, last)
        expected = page_of(resp.call("FCALL_RO", "search_profiles_json", 0, first, last, 0, PAGE))
        try:
            assert page_of(resp.call(*command)) == expected, command
        except RespError as e:
            sys.exit(f"{command[0]} failed ({e}): is it in this build?")
    finally:
        resp.close()
    http = http_route(servers["hotset"].addr, first, last, expected)
    files = driver_inputs(work, pairs, command)
    loads = {"hotset_load_s": round(load_s, 2), "tarantool_load_s": round(servers["tarantool"].load_s, 2),
             "mariadb_load_s": round(mariadb_load_s, 2)}
    return servers, files, http, command[:2], loads


def run_rounds(a, servers, files, http):
    rounds = []
    for i in range(a.r):
        sides = timed_sides(servers["hotset"], servers["tarantool"], servers["mariadb"], files, a.seconds, http)
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        figures = {}
        for side in order:
            log(f"round {i + 1}/{a.r}: {side}")
            result, cpu_s = with_cpu(sides[side])
            figures[side] = {**result, "driver_cpu_per_s": round(cpu_s / a.seconds, 2)}
        log(f"round {i + 1}/{a.r}: overhead")
        figures["overhead"] = overhead(servers["hotset"], files, a.seconds)
        rounds.append(figures)
    return rounds


def medians(rounds):
    median = {}
    for side in rounds[0]:
        keys = rounds[0][side].keys()
        median[side] = {k: round(statistics.median(r[side][k] for r in rounds), 2) for k in keys}
    for hotset_side in ("hotset_resp", "hotset_http"):
        for peer in ("tarantool", "mariadb"):
            if hotset_side in median:
                ratio = median[hotset_side]["requests_s"] / median[peer]["requests_s"]
                median[f"{hotset_side}_over_{peer}"] = round(ratio, 2)
    return median


def print_table(median, loads, load_before, load_after):
    print("| side | requests/s | p50 µs | p99 µs | driver CPU/s |")
    print("|---|---:|---:|---:|---:|")
    for side in SIDES:
        if side in median:
            m = median[side]
            p50, p99 = (f"{m[k]:,.0f}" if k in m else "–" for k in ("p50_us", "p99_us"))
            print(f"| {side} | {m['requests_s']:,.0f} | {p50} | {p99} | {m['driver_cpu_per_s']} |")
    for side in ("hotset_resp", "hotset_http"):
        if side in median:
            over_mariadb, over_tarantool = median[f"{side}_over_mariadb"], median[f"{side}_over_tarantool"]
            print(f"{side}: {over_mariadb}× mariadb (goal 10×: {'met' if over_mariadb >= 10 else 'not met'}), "
                  f"{over_tarantool}× tarantool (goal 50×: {'met' if over_tarantool >= 50 else 'not met'})")
    o = median["overhead"]
    print("procedure call overhead (FCALL_RO passthrough_sql against DOC.SQL, 1 connection): "
          f"{o['procedure_mean_us']} - {o['direct_mean_us']} = {o['difference_us']} µs "
          f"(goal < 5: {'met' if o['difference_us'] < 5 else 'not met'}); the call alone (FCALL_RO constant "
          f"against PING): {o['constant_mean_us']} - {o['ping_mean_us']} = {o['call_only_us']} µs")
    print(f"loads: {loads}; load average {load_before} -> {load_after}")


def main():
    ap = arguments()
    ap.add_argument("--resp-command", choices=["FCALL_RO", "DOC.CALL"], default="FCALL_RO")
    a = ap.parse_args()
    for tool in ("wrk", "tarantool", "mariadbd", "mariadb-slap"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing: apt-get install -y wrk tarantool mariadb-server mariadb-client")
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "hotset-server", "--bin", "hotset",
                           "-p", "hotset-bench", "--bin", "resp_drive"], cwd=ROOT)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    work = tempfile.mkdtemp(prefix="hotset-procedure-bench-")
    os.chmod(work, 0o755)
    load_before = os.getloadavg()
    servers = {}
    try:
        servers, files, http, command, loads = prepare(a, work)
        rounds = run_rounds(a, servers, files, http)
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    median = medians(rounds)
    report = {"bench": "procedure_search", "date": a.date, "commit": commit, "rows": a.n, "median_of": a.r,
              "seconds": a.seconds, "pairs": a.pairs, "connections": CONNECTIONS, "resp_command": command,
              "http_skipped": not http, "load_before": load_before, "load_after": load_after, **loads,
              "median": median, "rounds": rounds}
    path = write_result(f"{a.date}-procedure-search.json", report)
    print_table(median, loads, load_before, load_after)
    log(f"wrote {os.path.relpath(path, ROOT)}")
    print(json.dumps({"bench": "procedure_search", "rows": a.n, "resp_command": command, "median": median}))


if __name__ == "__main__":
    main()
