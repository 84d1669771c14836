#!/usr/bin/env bash
# redis-server (appendonly yes, appendfsync everysec) and one or more `hotset serve`
# processes side by side, driven by the same redis-benchmark commands
# (redis-benchmark -t TEST for each of TESTS, 50 clients, random keys, pipeline 1 and 16), the
# runs interleaved (redis, side 1, side 2, ..., redis, ...), median of RUNS each.
#
# usage: bench/kv_sides.sh NAME=BINARY:FSYNC [NAME=BINARY:FSYNC ...]
#   e.g. bench/kv_sides.sh periodic=target/release/hotset:periodic never=target/release/hotset:never
#        bench/kv_sides.sh old=/tmp/old-target/release/hotset:periodic new=target/release/hotset:periodic
#   env: RUNS [3] REQUESTS [300000] LABEL [sides] (the result file's name:
#        bench/results/<date>-<LABEL>.json) TESTS [set,get,incr] (redis-benchmark's -t
#        names, and two of our own: evalsha and fcall, a script that INCRs a counter and
#        GETs it, loaded on every side first) PIPELINES ["1 16"] KEYSPACE [1000000]
#        CLIENTS [50] VALUE [8]
# Needs: redis-server, redis-benchmark, python3.
# Output: a table (requests/s; each side's ratio to redis, and to the first side) and one
# JSON line.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n 2,16p "$0" >&2; exit 2; }
RUNS=${RUNS:-3}
LABEL=${LABEL:-sides}
export REQUESTS=${REQUESTS:-300000}
TESTS=${TESTS:-set,get,incr}
PIPELINES=${PIPELINES:-"1 16"}
KEYSPACE=${KEYSPACE:-1000000}
CLIENTS=${CLIENTS:-50}
VALUE=${VALUE:-8}
WORK=$(mktemp -d /tmp/kv_sides.XXXXXX)
pids=()
# Hotset sides start inside `$(...)` (a subshell, whose `pids` the script never sees), so
# each leaves its pid in a file.
cleanup() {
  local all=("${pids[@]}") file pid
  for file in "$WORK"/pid_*; do [ -f "$file" ] && all+=("$(cat "$file")"); done
  for pid in "${all[@]}"; do kill "$pid" 2>/dev/null || true; done
  # The folder goes once they have stopped writing into it.
  for pid in "${all[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

redis_port=$(free_port)
mkdir -p "$WORK/redis"
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec \
  --dir "$WORK/redis" --logfile "$WORK/redis/log" --daemonize no &
pids+=($!)

# Starts side $1 (binary $2, `--fsync $3`); prints its RESP port once it is ready.
start_hotset() {
  mkfifo "$WORK/ready_$1"
  "$2" serve --data "$WORK/data_$1" --resp-port 0 --http-port 0 --fsync "$3" > "$WORK/ready_$1" 2>/dev/null &
  echo $! > "$WORK/pid_$1"
  # "hotset ready: resp 127.0.0.1:N http ..."
  read -r line < "$WORK/ready_$1"
  echo "$line" | awk '{print $4}' | cut -d: -f2
}
# The script of the evalsha and fcall tests (issue 18): a GET and an INCR of one counter.
SCRIPT="redis.call('INCR', KEYS[1]) return redis.call('GET', KEYS[1])"
LIBRARY="#!lua name=kvbench
redis.register_function('incr_get', function(keys) ${SCRIPT//KEYS/keys} end)"
# Loads the script and the library into the server on port $1; prints the script's SHA1.
load_scripts() {
  redis-cli -p "$1" FUNCTION LOAD REPLACE "$LIBRARY" >/dev/null
  redis-cli -p "$1" SCRIPT LOAD "$SCRIPT"
}
# redis-benchmark's arguments for test $1 ($2: the script's SHA1).
test_args() {
  case $1 in
    evalsha) echo "EVALSHA $2 1 counter:__rand_int__" ;;
    fcall) echo "FCALL incr_get 1 counter:__rand_int__" ;;
    *) echo "-t $1" ;;
  esac
}
# One run of every test at every pipeline depth against the server on port $1; prints
# {"results": [{"test", "pipeline", "rps"}...]}. A test's figure is redis-benchmark's last
# CSV row: LRANGE_100 and LRANGE_600 first print the LPUSH that fills their list.
drive() {
  local out="$WORK/csv_$1" p t sha
  mkdir -p "$out"
  sha=$(load_scripts "$1")
  # GET reads keys that exist.
  redis-benchmark -p "$1" -t set -n "$REQUESTS" -r "$KEYSPACE" -d "$VALUE" -c "$CLIENTS" -P 16 -q >/dev/null 2>&1
  for p in $PIPELINES; do
    for t in ${TESTS//,/ }; do
      # shellcheck disable=SC2046 # the test's arguments are words
      redis-benchmark -p "$1" -n "$REQUESTS" -r "$KEYSPACE" -d "$VALUE" -c "$CLIENTS" -P "$p" --csv \
        $(test_args "$t" "$sha") > "$out/${t}_$p.csv" 2>/dev/null
    done
  done
  python3 - "$out" "$TESTS" "$PIPELINES" <<'PY'
import csv, json, sys
out, tests, pipelines = sys.argv[1:]
results = []
for p in pipelines.split():
    for t in tests.split(","):
        rows = list(csv.DictReader(open(f"{out}/{t}_{p}.csv")))
        assert rows, f"redis-benchmark -t {t} -P {p} printed nothing"
        last = rows[-1]
        results.append({"test": last["test"].split(" ")[0], "pipeline": int(p), "rps": float(last["rps"])})
print(json.dumps({"results": results}))
PY
}

sides=("redis:$redis_port")
names=()
for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}; binary=${rest%:*}; fsync=${rest##*:}
  [ -x "$binary" ] || { echo "no executable at $binary" >&2; exit 2; }
  sides+=("$name:$(start_hotset "$name" "$binary" "$fsync")")
  names+=("$name")
done
for _ in $(seq 200); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.05; done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for run in $(seq 1 "$RUNS"); do
  for side in "${sides[@]}"; do
    name=${side%%:*}; port=${side##*:}
    drive "$port" > "$WORK/${name}_$run.json"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p bench/results
python3 - "$WORK" "$RUNS" "$load_before" "$load_after" "$(git rev-parse --short HEAD)" "$LABEL" "$*" "${names[@]}" <<'PY'
import datetime, json, statistics, sys
work, runs, before, after, commit, label, specs = sys.argv[1:8]
names, runs = sys.argv[8:], int(runs)
def load(side):
    out = {}
    for r in range(1, runs + 1):
        for row in json.load(open(f"{work}/{side}_{r}.json"))["results"]:
            out.setdefault((row["test"], row["pipeline"]), []).append(row["rps"])
    return out
redis = load("redis")
sides = {name: load(name) for name in names}
first = names[0]
head = f"{'test':>10} {'P':>3} {'redis everysec':>15}" + "".join(f" {n:>12} {'/redis':>7}" for n in names)
head += "".join(f" {n + '/' + first:>14}" for n in names[1:])
print(head)
rows = []
for key, runs_redis in redis.items():
    r = statistics.median(runs_redis)
    row = {"test": key[0], "pipeline": key[1], "redis_everysec_rps": r, "redis_runs": runs_redis}
    line = f"{key[0]:>10} {key[1]:>3} {r:>15,.0f}"
    for n in names:
        v = statistics.median(sides[n][key])
        row[f"{n}_rps"], row[f"{n}_runs"], row[f"{n}_vs_redis"] = v, sides[n][key], round(v / r, 3)
        line += f" {v:>12,.0f} {v / r:>7.2f}"
    for n in names[1:]:
        ratio = row[f"{n}_rps"] / row[f"{first}_rps"]
        row[f"{n}_vs_{first}"] = round(ratio, 3)
        line += f" {ratio:>14.3f}"
    rows.append(row)
    print(line)
result = {"bench": "kv_sides", "date": datetime.date.today().isoformat(), "commit": commit, "sides": specs,
          "runs": runs, "load_before": before, "load_after": after, "results": rows}
print(f"load average before {before}, after {after}")
with open(f"bench/results/{result['date']}-{label}.json", "w") as f:
    json.dump(result, f, indent=1)
print(json.dumps(result))
PY
