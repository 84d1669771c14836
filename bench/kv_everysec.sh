#!/usr/bin/env bash
# What `--fsync periodic` costs, side by side with what users compare it to: redis-server
# with `appendonly yes, appendfsync everysec` (it writes each command to its AOF before it
# replies, fsyncs once a second), hotset with `--fsync periodic` (each write is in the log
# file before its answer, fsynced once a second) and hotset with `--fsync never` (answers
# before the write; the old meaning of periodic, minus its fsync). bench/kv_sides.sh runs
# them (SET, GET, INCR, 50 clients, pipeline 1 and 16, interleaved, median of RUNS).
#
# usage: bench/kv_everysec.sh            (env: RUNS [3] REQUESTS [300000])
# Needs: redis-server, redis-benchmark, a release build (cargo build --release).
# Output: a table and one JSON line (also written to bench/results/<date>-everysec.json).
set -euo pipefail
cd "$(dirname "$0")/.."
LABEL=everysec exec bench/kv_sides.sh periodic=target/release/hotset:periodic never=target/release/hotset:never
