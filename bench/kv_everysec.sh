#!/usr/bin/env bash
# What `--fsync periodic` costs, side by side with what users compare it to: redis-server
# with `appendonly yes, appendfsync everysec` (it writes each command to its AOF before it
# replies, fsyncs once a second), hotset with `--fsync periodic` (each write is in the log
# file before its answer, fsynced once a second) and hotset with `--fsync never` (answers
# before the write; the old meaning of periodic, minus its fsync). Same redis-benchmark
# commands (../shared/bench/kv_redis_protocol.sh: SET, GET, INCR, 50 clients, pipeline 1
# and 16), runs interleaved (redis, periodic, never, redis, ...), median of RUNS.
#
# usage: bench/kv_everysec.sh            (env: RUNS [3] REQUESTS [300000])
# Needs: redis-server, redis-benchmark, a release build (cargo build --release).
# Output: a table and one JSON line (also written to bench/results/<date>-everysec.json).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
export REQUESTS=${REQUESTS:-300000}
SHARED=../shared/bench
WORK=$(mktemp -d /tmp/kv_everysec.XXXXXX)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

redis_port=$(free_port)
mkdir -p "$WORK/redis"
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec \
  --dir "$WORK/redis" --logfile "$WORK/redis/log" --daemonize no &
pids+=($!)

# Starts hotset with `--fsync $1`; prints its RESP port once it is ready.
start_hotset() {
  mkfifo "$WORK/ready_$1"
  ./target/release/hotset serve --data "$WORK/data_$1" --resp-port 0 --http-port 0 --fsync "$1" \
    > "$WORK/ready_$1" 2>/dev/null &
  pids+=($!)
  # "hotset ready: resp 127.0.0.1:N http ..."
  read -r line < "$WORK/ready_$1"
  echo "$line" | awk '{print $4}' | cut -d: -f2
}
periodic_port=$(start_hotset periodic)
never_port=$(start_hotset never)
for _ in $(seq 200); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.05; done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for run in $(seq 1 "$RUNS"); do
  for side in redis:$redis_port periodic:$periodic_port never:$never_port; do
    name=${side%%:*}; port=${side##*:}
    RUNS=1 OUTDIR="$WORK/out_${name}_$run" "$SHARED/kv_redis_protocol.sh" 127.0.0.1 "$port" | tail -n 1 \
      > "$WORK/${name}_$run.json"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p bench/results
python3 - "$WORK" "$RUNS" "$load_before" "$load_after" "$(git rev-parse --short HEAD)" <<'PY'
import datetime, json, statistics, sys
work, runs, before, after, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def load(side):
    out = {}
    for r in range(1, runs + 1):
        for row in json.load(open(f"{work}/{side}_{r}.json"))["results"]:
            out.setdefault((row["test"], row["pipeline"]), []).append(row["rps"])
    return {k: statistics.median(v) for k, v in out.items()}
redis, periodic, never = load("redis"), load("periodic"), load("never")
rows = []
print(f"{'test':>6} {'P':>3} {'redis everysec':>15} {'hotset periodic':>16} {'ratio':>6} {'hotset never':>13} {'periodic/never':>15}")
for key in redis:
    r, p, n = redis[key], periodic[key], never[key]
    rows.append({"test": key[0], "pipeline": key[1], "redis_everysec_rps": r, "hotset_periodic_rps": p,
                 "hotset_never_rps": n, "periodic_vs_redis": round(p / r, 3), "periodic_vs_never": round(p / n, 3)})
    print(f"{key[0]:>6} {key[1]:>3} {r:>15,.0f} {p:>16,.0f} {p / r:>6.2f} {n:>13,.0f} {p / n:>15.2f}")
result = {"bench": "kv_everysec", "date": datetime.date.today().isoformat(), "commit": commit, "runs": runs,
          "load_before": before, "load_after": after, "results": rows}
print(f"load average before {before}, after {after}")
with open(f"bench/results/{result['date']}-everysec.json", "w") as f:
    json.dump(result, f, indent=1)
print(json.dumps(result))
PY
