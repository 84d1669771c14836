#!/usr/bin/env python3
"""Memory per element: the same data loaded into redis-server and into `hotset serve`, side
by side, and the growth of each process's resident memory (VmRSS from /proc) it caused.

    python3 bench/kv_memory.py [--hotset target/release/hotset] [--count 1000000]
        [--kinds strings,set,zset,list,stream]

Each kind is loaded into a fresh pair of servers: `strings` as COUNT keys `key:<i>` holding
`value:<i>`; `set`, `zset` (score i) and `list` as one key of COUNT members `member:<i>`;
`stream` as one key of COUNT entries (XADD *) holding the field `member` = `member:<i>`.
redis-server runs with `--save '' --appendonly no` (nothing on disk), Hotset with a data
folder of its own; both are measured after the load is acknowledged. RSS counts what the
allocator holds from the kernel, the honest measure for both (Redis' own `used_memory` is
printed beside it). Prints a table and one JSON line.
"""

import argparse
import json
import os
import socket
import subprocess
import tempfile
import time

import redis

BATCH = 1000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def wait_ready(port, proc):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            redis.Redis(port=port).ping()
            return
        except redis.ConnectionError:
            time.sleep(0.05)
    raise SystemExit("server did not start")


def start(kind, binary, folder):
    port = free_port()
    if kind == "redis":
        args = ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", folder]
    else:
        args = [binary, "serve", "--data", folder, "--resp-port", str(port), "--http-port", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc, port


def load(client, kind, count):
    pipe = client.pipeline(transaction=False)
    for start in range(0, count, BATCH):
        ids = range(start, min(start + BATCH, count))
        if kind == "strings":
            pipe.mset({f"key:{i}": f"value:{i}" for i in ids})
        elif kind == "set":
            pipe.sadd("big", *[f"member:{i}" for i in ids])
        elif kind == "zset":
            pipe.zadd("big", {f"member:{i}": i for i in ids})
        elif kind == "list":
            pipe.rpush("big", *[f"member:{i}" for i in ids])
        elif kind == "stream":
            for i in ids:
                pipe.xadd("big", {"member": f"member:{i}"})
        if start % (BATCH * 50) == 0:
            pipe.execute()
    pipe.execute()


def measure(server, binary, kind, count):
    with tempfile.TemporaryDirectory() as folder:
        proc, port = start(server, binary, folder)
        try:
            client = redis.Redis(port=port)
            before = rss_bytes(proc.pid)
            load(client, kind, count)
            size = client.dbsize() if kind == "strings" else {"set": client.scard, "zset": client.zcard, "list": client.llen, "stream": client.xlen}[kind]("big")
            assert size == count, (server, kind, size)
            after = rss_bytes(proc.pid)
            used = client.info("memory").get("used_memory")
            return {"rss_growth": after - before, "per_element": (after - before) / count, "used_memory": used}
        finally:
            proc.kill()
            proc.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hotset", default="target/release/hotset")
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--kinds", default="strings,set,zset,list")
    options = parser.parse_args()
    results = {}
    print(f"{'kind':8} {'redis B/elem':>13} {'hotset B/elem':>14} {'hotset/redis':>13}")
    for kind in options.kinds.split(","):
        redis_side = measure("redis", None, kind, options.count)
        hotset_side = measure("hotset", options.hotset, kind, options.count)
        ratio = hotset_side["per_element"] / redis_side["per_element"]
        results[kind] = {"redis": redis_side, "hotset": hotset_side, "ratio": ratio}
        print(f"{kind:8} {redis_side['per_element']:13.1f} {hotset_side['per_element']:14.1f} {ratio:13.2f}")
    print(json.dumps({"count": options.count, "results": results, "load": os.getloadavg()}))


if __name__ == "__main__":
    main()
