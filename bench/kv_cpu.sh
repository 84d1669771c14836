#!/usr/bin/env bash
# Server CPU time per request (utime+stime from /proc/PID/stat), two hotset builds side by
# side, interleaved: a figure the machine's other work moves less than requests/s.
#   bench/kv_cpu.sh OLD_BINARY NEW_BINARY [RUNS]
# Prints "run side test pipeline µs-per-request" lines (SET and INCR, -P 1 and -P 16).
set -euo pipefail
OLD=$1 NEW=$2 RUNS=${3:-3}
W=$(mktemp -d /tmp/kv_cpu.XXXXXX)
declare -A PORT PID
for side in old new; do
  bin=$([ "$side" = old ] && echo "$OLD" || echo "$NEW")
  mkfifo "$W/ready_$side"
  "$bin" serve --data "$W/data_$side" --resp-port 0 --http-port 0 --fsync periodic > "$W/ready_$side" 2>/dev/null &
  PID[$side]=$!
  read -r line < "$W/ready_$side"
  PORT[$side]=$(echo "$line" | awk '{print $4}' | cut -d: -f2)
done
trap 'kill ${PID[old]} ${PID[new]} 2>/dev/null; rm -rf "$W"' EXIT
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14+$15)/t}' "/proc/$1/stat"; }
for run in $(seq 1 "$RUNS"); do
  for P in 1 16; do
    n=$([ "$P" = 1 ] && echo 200000 || echo 1000000)
    for t in set incr; do
      for side in old new; do
        a=$(cpu "${PID[$side]}")
        redis-benchmark -p "${PORT[$side]}" -t "$t" -n "$n" -P "$P" -c 50 -r 1000000 -d 8 -q > /dev/null 2>&1
        b=$(cpu "${PID[$side]}")
        echo "$run $side $t $P $(python3 -c "print(round(($b-$a)/$n*1e6,3))")"
      done
    done
  done
done
