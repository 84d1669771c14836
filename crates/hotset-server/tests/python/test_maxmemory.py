"""redis-py and HTTP against the real hotset binary: `maxmemory` and its eight eviction
policies, the OOM refusals (denyoom commands, MULTI/EXEC, document writes), the access
stamps eviction ranks keys by (OBJECT IDLETIME/FREQ, RESTORE IDLETIME/FREQ), the evicted
keys' counter and keyspace notification, and evictions surviving kill -9.

Each test starts its own server (see test_redis_py.Server). With HOTSET_TEST_REDIS_PORT
set, the tests that take the `server` fixture run instead against a redis-server already
listening on that port (flushed at the start of each test, its eviction settings put back
at the end), which is how their expected values were checked to be Redis' behaviour
(7.0.15); the documents and kill -9 tests are Hotset's own.

A limit is set a few MB above what the server holds when the test begins, then filled past
it with pipelined SETs (`BATCH` a round trip). The server checks its memory once per batch
of requests, so what eviction judges (`used_memory - mem_not_counted_for_evict`) may pass
the limit by one batch of writes; `used_memory` itself by the empty key slots on top (one
64 KiB slab chunk per shard, 16 shards, plus hash-table headroom: `SLOT_SLACK`); the
process' RSS (binary, allocator pages) by `RSS_SLACK`, which still catches memory never
given back. Eviction is sampled, so which keys go is checked as a clear majority, never
key by key. The only waits are polls of a condition with a deadline (an idle time that
must reach 2 seconds, a subscriber's messages), never sleeps standing for one.
"""
import json
import random
import statistics
import time
import urllib.error
import urllib.request

import pytest
import redis

from peer import REDIS_PORT, raw, server, wire  # noqa: F401 (server: a fixture)
from test_redis_py import Server

MB = 1024 * 1024
# Redis' refusal; redis-py drops the "OOM " code from the exception's text.
OOM = "OOM command not allowed when used memory > 'maxmemory'."
OOM_TEXT = OOM[len("OOM "):]
EXECABORT_OOM = "Transaction discarded because of: " + OOM
POLICIES = [
    "noeviction",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
]
HEADROOM = 3 * MB
VALUE = "v" * 512
BATCH = 1000
# Written in a fill: 25 batches, about 13 MB of values, over four times the headroom.
FILL_KEYS = 25 * BATCH
# One batch of writes: its values, keys and the per-key bookkeeping of either server.
ONE_BATCH = BATCH * (len(VALUE) + 160)
SLOT_SLACK = 1.5 * MB
RSS_SLACK = 64 * MB
INFO_SLACK = 16 * 1024
DEFAULTS = {
    "maxmemory": "0",
    "maxmemory-policy": "noeviction",
    "maxmemory-samples": "5",
    "notify-keyspace-events": "",
    "lfu-decay-time": "1",
}
NOT_LFU = (
    "An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when "
    "switching between policies at runtime LRU and LFU data will take some time to adjust."
)
IS_LFU = (
    "An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching "
    "between policies at runtime LRU and LFU data will take some time to adjust."
)


@pytest.fixture
def r(server):
    """A client of `server`; the eviction settings are put back afterwards (a real
    redis-server outlives the test)."""
    client = server.client(decode_responses=True)
    yield client
    if REDIS_PORT:
        client.config_set("maxmemory", 0)
        client.flushall()
        for name, value in DEFAULTS.items():
            client.config_set(name, value)


def memory(r):
    return r.info("memory")


def judged(m):
    """What eviction holds against the limit."""
    return m["used_memory"] - m["mem_not_counted_for_evict"]


def set_limit(r, headroom=HEADROOM):
    """Sets maxmemory `headroom` bytes above what the server holds now; answers it."""
    limit = memory(r)["used_memory"] + headroom
    assert r.config_set("maxmemory", limit)
    return limit


def is_oom(reply):
    return isinstance(reply, redis.exceptions.OutOfMemoryError) and str(reply) == OOM_TEXT


def fill(r, prefix, count, ttl=lambda i: None):
    """SETs `prefix:i` = VALUE for i in [0, count), with the TTL `ttl(i)` answers (seconds,
    None for none), BATCH per pipeline. Answers the keys stored and the keys refused; every
    refusal must be exactly Redis' OOM error."""
    stored, refused = [], []
    for first in range(0, count, BATCH):
        pipe = r.pipeline(transaction=False)
        keys = [f"{prefix}:{i}" for i in range(first, min(first + BATCH, count))]
        for i, key in enumerate(keys, first):
            pipe.set(key, VALUE, ex=ttl(i))
        for key, reply in zip(keys, pipe.execute(raise_on_error=False)):
            if reply is True:
                stored.append(key)
            else:
                assert is_oom(reply), f"SET {key} answered {reply!r}, not OK or {OOM!r}"
                refused.append(key)
    return stored, refused


def existing(r, keys):
    """The subset of `keys` that exist (EXISTS: no access)."""
    found = []
    for at in range(0, len(keys), BATCH):
        chunk = keys[at:at + BATCH]
        pipe = r.pipeline(transaction=False)
        for key in chunk:
            pipe.exists(key)
        found += [key for key, n in zip(chunk, pipe.execute()) if n == 1]
    return found


def assert_within(r, limit, what):
    """The server holds no more than the limit allows (see the module's docstring)."""
    m = memory(r)
    figures = {k: m[k] for k in ("used_memory", "mem_not_counted_for_evict", "maxmemory", "used_memory_rss")}
    assert m["maxmemory"] == limit, figures
    assert judged(m) <= limit + ONE_BATCH, f"{what}: eviction lets the server pass its limit by more than a batch: {figures}"
    assert m["used_memory"] <= limit + SLOT_SLACK, f"{what}: used_memory past the limit by more than {SLOT_SLACK}: {figures}"
    assert m["used_memory_rss"] <= limit + RSS_SLACK, f"{what}: the process' RSS grew past the limit: {figures}"
    assert m["used_memory_peak"] >= m["used_memory"], figures
    return m


def settle(r, limit):
    """Commands until eviction has brought the server under `limit` (every command first
    makes room, within a time budget); answers INFO memory then. INFO counts the memory
    its own reply takes while built, hence `INFO_SLACK`."""
    for _ in range(1000):
        m = memory(r)
        if judged(m) <= limit + INFO_SLACK:
            return m
    pytest.fail(f"eviction never brought the server under {limit}: {m}")


def evicted_keys(r):
    return r.info("stats")["evicted_keys"]


def size_and_evicted(r, keys=()):
    """DBSIZE, INFO's evicted_keys and which of `keys` exist, at one moment: read until no
    eviction came between (any command may evict first while the server is over its
    limit, and reading takes memory too)."""
    for _ in range(100):
        before = evicted_keys(r)
        size, present = r.dbsize(), existing(r, list(keys))
        if evicted_keys(r) == before:
            return size, before, present
    pytest.fail("evictions never stopped")


def test_config_maxmemory_policy_and_samples(r):
    assert r.config_get("maxmemory-samples") == {"maxmemory-samples": "5"}
    assert r.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
    assert r.config_set("maxmemory", "100mb")
    assert r.config_get("maxmemory") == {"maxmemory": str(100 * MB)}
    assert memory(r)["maxmemory"] == 100 * MB
    for policy in POLICIES[1:] + POLICIES[:1]:
        assert r.config_set("maxmemory-policy", policy)
        assert r.config_get("maxmemory-policy") == {"maxmemory-policy": policy}
        assert memory(r)["maxmemory_policy"] == policy
    # Bad values are refused, naming the parameter, and change nothing.
    r.config_set("maxmemory-policy", "allkeys-lru")
    for name, value in [
        ("maxmemory-policy", "sometimes-lru"),
        ("maxmemory-policy", ""),
        ("maxmemory", "-1"),
        ("maxmemory", "lots"),
        ("maxmemory", "12qb"),
        ("maxmemory-samples", "0"),
    ]:
        with pytest.raises(redis.ResponseError, match=f"CONFIG SET failed \\(possibly related to argument '{name}'\\)"):
            r.config_set(name, value)
    assert r.config_get("maxmemory*") == {
        "maxmemory": str(100 * MB),
        "maxmemory-policy": "allkeys-lru",
        "maxmemory-samples": "5",
        "maxmemory-clients": "0",
        "maxmemory-eviction-tenacity": "10",
    }
    assert r.config_set("maxmemory-samples", 64) and r.config_get("maxmemory-samples") == {"maxmemory-samples": "64"}
    m = memory(r)
    assert m["maxmemory"] == 100 * MB and m["maxmemory_policy"] == "allkeys-lru"
    assert 0 < m["used_memory"] <= m["used_memory_peak"] and m["used_memory_rss"] > 0
    assert m["mem_not_counted_for_evict"] >= 0
    assert "evicted_keys" in r.info("stats")
    assert r.config_set("maxmemory", 0) and memory(r)["maxmemory"] == 0


@pytest.mark.parametrize("policy", POLICIES)
def test_a_fill_past_the_limit(server, r, policy):
    """noeviction refuses with OOM and keeps every key; allkeys-* never refuse; volatile-*
    evict only keys with a TTL and refuse once none is left. Either way the server stays
    within its limit and evicted_keys counts the keys that went."""
    volatile = policy.startswith("volatile")
    assert r.config_set("maxmemory-policy", policy)
    evicted_before = evicted_keys(r)
    limit = set_limit(r)
    # Under volatile-* every other key has a TTL.
    stored, refused = fill(r, "k", FILL_KEYS, ttl=lambda i: 3600 if volatile and i % 2 else None)
    m = assert_within(r, limit, policy)
    names = ("used_memory", "mem_not_counted_for_evict", "maxmemory", "used_memory_rss", "used_memory_peak")
    figures = ", ".join(f"{name}={m[name]}" for name in names)
    assert not existing(r, refused), "a refused SET stored nothing"
    if policy.startswith("allkeys"):
        assert not refused, f"{policy} makes room for every write"
        size, evicted, _ = size_and_evicted(r)
        evicted -= evicted_before
        assert 0 < size < FILL_KEYS and evicted == FILL_KEYS - size, (size, evicted)
        assert r.set("probe", "x")
    else:
        assert refused, f"{policy} refuses writes past the limit ({len(stored)} stored; {figures})"
        assert len(stored) * len(VALUE) >= HEADROOM // 2, f"{policy} refused before the limit was near: {len(stored)} stored"
        # A write while over (its 1 MB argument is sure to be): evicts what keys with a TTL
        # remain, then is refused.
        with pytest.raises(redis.exceptions.OutOfMemoryError) as refusal:
            r.set("probe", "x" * MB, ex=3600)
        assert str(refusal.value) == OOM_TEXT
        assert wire(server, 2, "SET", "probe", "x" * MB) == f"-{OOM}\r\n".encode()
        assert r.exists("probe") == 0
        survivors = set(existing(r, stored))
        evicted = evicted_keys(r) - evicted_before
        size = r.dbsize()
        assert size == len(survivors)
        if policy == "noeviction":
            assert judged(memory(r)) >= limit - ONE_BATCH, f"noeviction refused with room left: {figures}"
            assert survivors == set(stored) and evicted == 0, "noeviction keeps every key"
        else:
            persistent = {key for key in stored if int(key.split(":")[1]) % 2 == 0}
            assert survivors == persistent, (
                f"{policy} evicts only keys with a TTL, all of them before refusing: "
                f"{len(persistent - survivors)} without a TTL gone, {len(survivors - persistent)} with one left"
            )
            assert evicted == len(stored) - len(survivors)
    print(f"{policy}: {len(stored)} stored, {len(refused)} refused, {evicted} evicted, {size} left; {figures}")


def over_the_limit(r, keys=2000, by=MB // 4):
    """Stores `keys` keys, then sets maxmemory `by` bytes below what the server holds:
    under noeviction (or with nothing evictable) it stays over. Answers the keys."""
    stored, refused = fill(r, "k", keys)
    assert not refused
    m = memory(r)
    r.config_set("maxmemory", judged(m) - by)
    return stored


def test_denyoom_commands_refused_and_the_rest_go_on(server, r):
    evicted_before = evicted_keys(r)
    r.rpush("list", "a")
    r.expire("list", 3600)
    r.rpush("pops", "a", "b")
    r.sadd("set", "a", "b")
    r.zadd("zset", {"a": 1, "b": 2})
    r.hset("hash", mapping={"a": "1", "b": "2"})
    r.set("getdel", "x")
    r.set("renamed", "x")
    stored = over_the_limit(r)
    refusals = [
        ("SET", "new", "x"),
        ("SET", stored[0], "x"),
        ("SETEX", "new", 100, "x"),
        ("LPUSH", "list", "b"),
        ("RPUSH", "new", "b"),
        ("SADD", "new", "m"),
        ("ZADD", "new", 1, "m"),
        ("HSET", "new", "f", "v"),
        ("INCR", "counter"),
        ("APPEND", stored[0], "more"),
        ("MSET", "a", "1", "b", "2"),
        ("XADD", "new", "*", "f", "v"),
        ("SETNX", "new", "x"),
        ("GETSET", stored[0], "x"),
        ("SETRANGE", stored[0], 0, "x"),
        ("SETBIT", "new", 7, 1),
        ("INCRBYFLOAT", "counter", 1.5),
        ("HINCRBY", "hash", "a", 1),
        ("ZINCRBY", "zset", 1, "a"),
        ("LSET", "list", 0, "x"),
        ("LINSERT", "list", "BEFORE", "a", "x"),
        ("SUNIONSTORE", "new", "set"),
        ("PFADD", "new", "a"),
        ("GEOADD", "new", 13.36, 38.11, "palermo"),
    ]
    assert wire(server, 2, "SET", "new", "x") == f"-{OOM}\r\n".encode()
    for protocol in (2, 3):
        client = server.client(protocol=protocol)
        for command in refusals:
            with pytest.raises(redis.exceptions.OutOfMemoryError) as refusal:
                client.execute_command(*command)
            assert str(refusal.value) == OOM_TEXT, (protocol, command)
    assert r.exists("new", "counter", "a", "b") == 0, "the refused commands changed nothing"
    assert r.get(stored[0]) == VALUE and r.lrange("list", 0, -1) == ["a"]
    # Reads, and the commands that free memory or change only metadata, go on.
    assert r.get(stored[1]) == VALUE and r.mget(stored[:3]) == [VALUE] * 3
    assert r.exists(stored[2]) == 1 and r.type(stored[2]) == "string" and r.ttl(stored[2]) == -1
    assert r.llen("list") == 1 and r.strlen(stored[3]) == len(VALUE)
    assert r.expire(stored[4], 3600) and r.persist(stored[4])
    assert r.delete(stored[5]) == 1 and r.exists(stored[5]) == 0
    assert r.lpop("pops") == "a" and r.srem("set", "b") == 1 and r.zrem("zset", "b") == 1 and r.hdel("hash", "b") == 1
    assert r.getdel("getdel") == "x" and r.rename("renamed", "renamed2") and r.unlink("renamed2") == 1
    # The filled keys but the one deleted, and list, pops, set, zset, hash.
    assert r.dbsize() == len(stored) - 1 + 5 and r.ping()
    assert evicted_keys(r) == evicted_before, "noeviction evicts nothing"
    # Deleting data makes room again.
    r.delete(*stored[: len(stored) * 3 // 4])
    assert r.set("new", "x") and r.lpush("list", "b") == 2 and r.incr("counter") == 1


def test_multi_and_exec_over_the_limit(server, r):
    # Replies as they come off the wire (no redis-py callbacks), one connection each.
    connect = lambda: raw(server, 2, single_connection_client=True)  # noqa: E731
    stored, refused = fill(r, "k", 2000)
    assert not refused
    # Queued while under the limit: a write, and reads only.
    writer, reader = connect(), connect()
    for client, command in [(writer, ("SET", "tx:a", "1")), (reader, ("GET", stored[1]))]:
        assert client.execute_command("MULTI") == "OK"
        assert client.execute_command(*command) == "QUEUED"
        assert client.execute_command("EXISTS", stored[2]) == "QUEUED"
    r.config_set("maxmemory", judged(memory(r)) - MB // 4)
    # EXEC while over: refused whole when a queued command needs memory.
    with pytest.raises(redis.exceptions.ExecAbortError) as refusal:
        writer.execute_command("EXEC")
    assert str(refusal.value) == EXECABORT_OOM
    assert r.exists("tx:a") == 0
    assert reader.execute_command("EXEC") == [VALUE, 1], "a transaction of reads runs"
    # MULTI while over: every queued command is refused (queueing takes memory), reads
    # too, and EXEC then discards the transaction.
    late = connect()
    assert late.execute_command("MULTI") == "OK"
    for command in [("GET", stored[0]), ("SET", "tx:b", "1"), ("PING",)]:
        with pytest.raises(redis.exceptions.OutOfMemoryError) as refusal:
            late.execute_command(*command)
        assert str(refusal.value) == OOM_TEXT, command
    with pytest.raises(redis.exceptions.ExecAbortError) as refusal:
        late.execute_command("EXEC")
    assert str(refusal.value) == "Transaction discarded because of previous errors."
    assert r.exists("tx:b") == 0
    # DISCARD goes on; outside MULTI reads run again.
    assert late.execute_command("MULTI") == "OK"
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        late.execute_command("GET", stored[0])
    assert late.execute_command("DISCARD") == "OK"
    assert late.execute_command("GET", stored[0]) == VALUE


def test_evictions_are_announced_and_counted(server, r):
    """Each evicted key fires `evicted` (class e) once, and evicted_keys grows by the keys
    that went."""
    assert r.config_set("notify-keyspace-events", "Ee")
    subscriber = server.client(decode_responses=True).pubsub()
    subscriber.subscribe("__keyevent@0__:evicted")
    confirmation = subscriber.get_message(timeout=10)
    assert confirmation and confirmation["type"] == "subscribe", confirmation
    assert r.config_set("maxmemory-policy", "allkeys-random")
    evicted_before = evicted_keys(r)
    limit = set_limit(r, 2 * MB)
    stored, refused = fill(r, "k", 10 * BATCH)
    assert not refused
    size, evicted, present = size_and_evicted(r, stored)
    evicted -= evicted_before
    assert size > 0 and evicted == len(stored) - size, (size, evicted)
    gone = set(stored) - set(present)
    assert len(gone) == evicted
    announced = []
    while len(announced) < evicted:
        message = subscriber.get_message(ignore_subscribe_messages=True, timeout=10)
        assert message is not None, f"{len(announced)} of {evicted} evictions announced"
        assert message["channel"] == "__keyevent@0__:evicted", message
        announced.append(message["data"])
    assert r.exists(announced[0]) == 0, "an announced key is gone"
    assert len(set(announced)) == len(announced), "each key is announced once"
    assert set(announced) == gone, "the keys announced are the keys that went"
    subscriber.close()


def test_expired_keys_are_counted_apart_from_evicted_ones(r):
    """INFO's expired_keys counts keys whose deadline passed once they are deleted (here
    by active expiry, polled with a deadline), and evicted_keys does not move."""
    before = r.info("stats")
    assert r.set("soon", "v", px=1)
    deadline = time.monotonic() + 10
    while r.dbsize() > 0:
        assert time.monotonic() < deadline, "active expiry never deleted the key"
        time.sleep(0.02)
    after = r.info("stats")
    assert after["expired_keys"] == before["expired_keys"] + 1, (before, after)
    assert after["evicted_keys"] == before["evicted_keys"]


def fails(r, text, *command):
    """`command` is refused with exactly `text` (redis-py drops a leading "ERR ")."""
    with pytest.raises(redis.ResponseError) as refusal:
        r.execute_command(*command)
    assert str(refusal.value) == text, command


def wait_idle(r, key, seconds):
    """Waits (a poll with a deadline) until `key` has been idle `seconds` by OBJECT
    IDLETIME, which is no access itself."""
    deadline = time.monotonic() + seconds + 5
    while r.object("idletime", key) < seconds:
        assert time.monotonic() < deadline, f"{key} never idle {seconds}s"
        time.sleep(0.05)


def test_object_idletime_and_freq_answer_under_their_policy(r):
    r.set("k", "v")
    for policy in ["noeviction", "allkeys-lru", "volatile-ttl", "allkeys-random"]:
        assert r.config_set("maxmemory-policy", policy)
        assert r.object("idletime", "k") >= 0
        fails(r, NOT_LFU, "OBJECT", "FREQ", "k")
    assert r.object("idletime", "missing") is None
    for policy in ["allkeys-lfu", "volatile-lfu"]:
        assert r.config_set("maxmemory-policy", policy)
        assert r.object("freq", "k") >= 0
        fails(r, IS_LFU, "OBJECT", "IDLETIME", "k")
    assert r.object("freq", "missing") is None
    fails(r, "Invalid IDLETIME value, must be >= 0", "RESTORE", "x", 0, r.dump("k"), "IDLETIME", -1)
    fails(r, "Invalid FREQ value, must be >= 0 and <= 255", "RESTORE", "x", 0, r.dump("k"), "FREQ", 256)
    fails(r, "Invalid FREQ value, must be >= 0 and <= 255", "RESTORE", "x", 0, r.dump("k"), "FREQ", -1)
    # One or the other: Redis takes no key stamped both ways.
    fails(r, "syntax error", "RESTORE", "x", 0, r.dump("k"), "IDLETIME", 10, "FREQ", 10)
    fails(r, "syntax error", "RESTORE", "x", 0, r.dump("k"), "FREQ", 10, "IDLETIME", 10)
    assert r.exists("x") == 0


def test_a_new_key_under_lfu_starts_at_frequency_5(r):
    """Redis' LFU_INIT_VAL: a key is born with counter 5, whichever command makes it."""
    assert r.config_set("maxmemory-policy", "allkeys-lfu") and r.config_set("lfu-decay-time", 0)
    r.set("string", "v")
    r.hset("hash", "f", "v")
    r.rpush("list", "a")
    r.sadd("set", "a")
    r.zadd("zset", {"a": 1})
    # (Not INCR: Redis gives small integers a shared object, with a shared counter.)
    freqs = {key: r.object("freq", key) for key in ["string", "hash", "list", "set", "zset"]}
    assert freqs == dict.fromkeys(freqs, 5), freqs


def test_restore_idletime_sets_the_idle_time_under_lru(r):
    assert r.config_set("maxmemory-policy", "allkeys-lru")
    r.set("src", "v")
    payload = r.dump("src")
    assert r.restore("k", 0, payload, idletime=1000)
    assert 1000 <= r.object("idletime", "k") <= 1010
    assert r.restore("k", 0, payload, replace=True, idletime=500)
    assert 500 <= r.object("idletime", "k") <= 510
    # What does not count as an access leaves it; a read resets it.
    assert r.type("k") == "string" and r.exists("k") == 1 and r.ttl("k") == -1 and r.pttl("k") == -1
    assert r.object("encoding", "k") and r.object("idletime", "k") >= 500
    assert r.get("k") == "v"
    assert r.object("idletime", "k") <= 10
    # FREQ is taken under an LRU policy, and means nothing there.
    assert r.restore("f", 0, payload, frequency=100, idletime=None)
    assert r.object("idletime", "f") <= 10


def test_restore_freq_sets_the_frequency_under_lfu(r):
    assert r.config_set("maxmemory-policy", "allkeys-lfu") and r.config_set("lfu-decay-time", 0)
    r.set("src", "v")
    payload = r.dump("src")
    for freq in [255, 100, 5, 0]:
        assert r.restore(f"k{freq}", 0, payload, frequency=freq)
    assert {freq: r.object("freq", f"k{freq}") for freq in [255, 100, 5, 0]} == {255: 255, 100: 100, 5: 5, 0: 0}
    assert r.restore("k100", 0, payload, replace=True, frequency=7) and r.object("freq", "k100") == 7
    assert r.restore("i", 0, payload, idletime=1000) and r.object("freq", "i") == 5, "IDLETIME means nothing under LFU"


def test_lfu_counts_reads_and_not_peeks(r):
    """Under LFU a counter of 5 grows on an access for sure, one of 6 with probability 1/11:
    300 accesses that left it alone would be a 1e-12 chance."""
    assert r.config_set("maxmemory-policy", "allkeys-lfu") and r.config_set("lfu-decay-time", 0)
    r.set("src", "v")
    assert r.restore("k", 0, r.dump("src"), frequency=5)
    before = r.object("freq", "k")
    pipe = r.pipeline(transaction=False)
    for _ in range(300):
        pipe.type("k").exists("k").ttl("k").pttl("k").object("encoding", "k").object("freq", "k")
    pipe.execute()
    assert r.object("freq", "k") == before, "TYPE, EXISTS, TTL, PTTL and OBJECT are no access"
    pipe = r.pipeline(transaction=False)
    for _ in range(300):
        pipe.get("k")
    pipe.execute()
    assert r.object("freq", "k") > before, "GET is an access"


def test_lru_counts_reads_and_not_peeks(r):
    """Idle time is in whole seconds: this waits (a poll) until a key is 2 seconds idle."""
    assert r.config_set("maxmemory-policy", "allkeys-lru")
    r.set("peeked", "v")
    r.set("read", "v")
    wait_idle(r, "read", 2)
    assert r.type("peeked") == "string" and r.exists("peeked") == 1 and r.ttl("peeked") == -1
    assert r.pttl("peeked") == -1 and r.object("encoding", "peeked")
    assert r.get("read") == "v"
    assert r.object("idletime", "peeked") >= 2, "TYPE, EXISTS, TTL, PTTL and OBJECT are no access"
    assert r.object("idletime", "read") <= 1, "GET is an access"


def halve(r, base):
    """Lowers maxmemory to halfway between `base` (what the server held before the test's
    keys) and what it holds now, and lets eviction bring it there; answers the limit."""
    m = memory(r)
    limit = base + (judged(m) - base) // 2
    assert r.config_set("maxmemory", limit)
    settle(r, limit)
    return limit


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu"])
def test_eviction_keeps_the_keys_being_read(r, policy):
    """4000 keys, 800 of them read after all were written (LRU: once, two seconds later;
    LFU: 20 times each), then the limit halved. The 3200 others outnumber the keys that
    must go, so a sample holding none of them is rare: the keys read survive (95%, where
    Redis keeps them all), the others mostly go."""
    lfu = policy == "allkeys-lfu"
    assert r.config_set("maxmemory-policy", policy)
    if lfu:
        assert r.config_set("lfu-decay-time", 0)
    base = judged(memory(r))
    keys = [f"k:{i}" for i in range(4000)]
    stored, _ = fill(r, "k", len(keys))
    assert stored == keys
    hot = set(random.Random(7).sample(keys, 800))
    if not lfu:
        wait_idle(r, keys[-1], 2)
    pipe = r.pipeline(transaction=False)
    for key in hot:
        for _ in range(20 if lfu else 1):
            pipe.get(key)
    assert all(value == VALUE for value in pipe.execute())
    halve(r, base)
    _, _, present = size_and_evicted(r, keys)
    present = set(present)
    hot_kept = len(present & hot) / len(hot)
    cold_kept = len(present - hot) / (len(keys) - len(hot))
    print(f"{policy}: kept {hot_kept:.1%} of the keys read, {cold_kept:.1%} of the others")
    assert 0 < len(present) < len(keys) * 3 / 4, f"halving the limit evicted about half: {len(present)} kept"
    assert hot_kept >= 0.95, f"{policy} kept {hot_kept:.1%} of the keys read, {cold_kept:.1%} of the others"
    assert cold_kept <= 0.5, f"{policy} kept {hot_kept:.1%} of the keys read, {cold_kept:.1%} of the others"


def test_volatile_ttl_evicts_the_nearest_deadlines_first(r):
    """4000 keys with TTLs from 10000 s to 50000 s (written in random order), 1000 without;
    with maxmemory-samples 64 and the limit halved, the keys with a TTL that survive are
    mostly those with the latest deadlines, and every key without one survives."""
    assert r.config_set("maxmemory-policy", "volatile-ttl") and r.config_set("maxmemory-samples", 64)
    base = judged(memory(r))
    ttls = {f"v:{i}": 10000 + 10 * i for i in range(4000)}
    order = list(ttls)
    random.Random(11).shuffle(order)
    for at in range(0, len(order), BATCH):
        pipe = r.pipeline(transaction=False)
        for key in order[at:at + BATCH]:
            pipe.set(key, VALUE, ex=ttls[key])
        assert all(pipe.execute())
    persistent, _ = fill(r, "p", 1000)
    halve(r, base)
    _, _, present = size_and_evicted(r, order + persistent)
    survivors = [ttls[key] for key in present if key in ttls]
    assert set(persistent) <= set(present), "volatile-ttl evicts only keys with a TTL"
    assert 0 < len(survivors) < 3000, f"{len(survivors)} keys with a TTL kept"
    median_all, median_kept = statistics.median(ttls.values()), statistics.median(survivors)
    print(f"volatile-ttl: {len(survivors)} kept, median TTL {median_kept} (all: {median_all}), lowest {min(survivors)}")
    # All keys: median 30000 s. Had exactly the nearest deadlines gone, the survivors' median
    # would sit halfway between the fewest kept and 50000; a random choice would leave it
    # near 30000, and keep keys from the whole range.
    assert median_kept >= median_all + 0.5 * (max(ttls.values()) - median_all), (median_all, median_kept, len(survivors))
    assert min(survivors) >= 20000, f"a key among the nearest quarter of deadlines survived: {min(survivors)}"


def http(server, method, path, body=None):
    """(status, JSON body) of an HTTP request to `server` (its address from the ready line);
    a str body is sent as it is (SQL text), anything else as JSON."""
    data = body.encode() if isinstance(body, str) else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.http + path, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def people(server):
    """Creates the namespace `people` over HTTP and stores document 1 in it."""
    index = {"field": "id", "type": "int", "index": "hash", "pk": True}
    status, body = http(server, "POST", "/api/v1/namespaces", {"name": "people", "indexes": [index]})
    assert status == 201, body
    assert http(server, "POST", "/api/v1/namespaces/people/items", {"id": 1, "name": "ada"}) == (200, {"count": 1})


@pytest.mark.skipif(bool(REDIS_PORT), reason="documents and HTTP are Hotset's own")
def test_documents_are_never_evicted_and_refused_when_no_room_is_left(tmp_path):
    """Under allkeys-lru, documents written past the limit evict keys; once no key is
    left a document write is refused (HTTP 507 `oom`, RESP -OOM), and every document
    stored stays readable."""
    server = Server(str(tmp_path / "data"))
    try:
        r = server.client(decode_responses=True)
        people(server)
        assert r.config_set("maxmemory-policy", "allkeys-lru")
        limit = set_limit(r)
        keys, refused = fill(r, "k", 6 * BATCH)
        assert not refused and r.dbsize() > 0
        # Documents of about 2 KB, 20 a request, until one is refused.
        bio = "b" * 2000
        written, answer = 1, None
        for first in range(2, 20000, 20):
            docs = [{"id": i, "name": f"person {i}", "bio": bio} for i in range(first, first + 20)]
            answer = http(server, "POST", "/api/v1/namespaces/people/items", docs)
            if answer[0] != 200:
                break
            assert answer == (200, {"count": 20}), answer
            written += 20
        status, body = answer
        assert status == 507 and body["code"] == "oom" and isinstance(body["error"], str) and body["error"], answer
        assert written > 1 + HEADROOM // len(bio) // 2, f"refused with room left: {written} documents"
        # Documents are not evicted: the keys went first, every one of them.
        assert r.dbsize() == 0 and not existing(r, keys), "a document write is refused only once no key is left"
        # Refused at the limit: what a request holds while it is parsed (its 40 KB body and
        # the documents read from it) counts until it is done, so a refusal may leave the
        # server that much under.
        m = memory(r)
        assert m["used_memory_namespaces"] > 0 and judged(m) > limit - MB // 4, m
        assert m["used_memory_rss"] <= limit + RSS_SLACK, m
        # The refused request stored nothing of its 20. The server sits at its limit: a
        # write of 256 KB is sure to pass it, and is refused over RESP too.
        assert http(server, "GET", f"/api/v1/namespaces/people/items/{written + 1}")[0] == 404
        big = "x" * (MB // 4)
        reply = wire(server, 2, "DOC.UPSERT", "people", json.dumps({"id": 99999, "name": "late", "bio": big}))
        assert reply.startswith(b"-OOM"), reply
        assert http(server, "GET", "/api/v1/namespaces/people/items/99999")[0] == 404
        # With no key left to evict, key writes are refused too.
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            r.set("k", big)
        # Everything stored stays readable.
        assert http(server, "GET", "/api/v1/namespaces/people/items/1") == (200, {"id": 1, "name": "ada"})
        for i in [2, written // 2, written]:
            assert http(server, "GET", f"/api/v1/namespaces/people/items/{i}") == (200, {"id": i, "name": f"person {i}", "bio": bio}), i
        status, body = http(server, "GET", "/api/v1/namespaces/people")
        assert status == 200 and body["documents"] == written, body
    finally:
        server.kill()


@pytest.mark.skipif(bool(REDIS_PORT), reason="kill -9 and restart are Hotset's own")
def test_evicted_keys_stay_gone_after_kill_9(tmp_path):
    """Each eviction is a logged delete: after kill -9 and a restart on the same folder
    (without the limit, a runtime setting) the evicted keys are still gone and the rest
    are there."""
    data = str(tmp_path / "data")
    server = Server(data, "--fsync", "always")
    try:
        r = server.client(decode_responses=True)
        assert r.config_set("maxmemory-policy", "allkeys-random")
        limit = set_limit(r, 2 * MB)
        stored, refused = fill(r, "k", 10 * BATCH)
        assert not refused
        settle(r, limit)
        size, evicted, present = size_and_evicted(r, stored)
        assert 0 < size < len(stored) and evicted == len(stored) - size
        gone = sorted(set(stored) - set(present), key=lambda k: int(k.split(":")[1]))
    finally:
        server.kill()
    server = Server(data)
    try:
        r = server.client(decode_responses=True)
        assert memory(r)["maxmemory"] == 0
        assert r.dbsize() == size, "the keys after the restart are the keys before the kill"
        sample = gone[::max(1, len(gone) // 200)]
        assert not existing(r, sample), "evicted keys stay gone"
        assert set(existing(r, present)) == set(present)
        assert r.mget(present[:100]) == [VALUE] * len(present[:100])
    finally:
        server.kill()


@pytest.mark.skipif(bool(REDIS_PORT), reason="documents and HTTP are Hotset's own")
def test_document_writes_refused_under_noeviction(tmp_path):
    server = Server(str(tmp_path / "data"))
    try:
        r = server.client(decode_responses=True)
        people(server)
        stored = over_the_limit(r)
        status, body = http(server, "POST", "/api/v1/namespaces/people/items", {"id": 2, "name": "bob"})
        assert status == 507 and body["code"] == "oom" and body["error"], (status, body)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            r.execute_command("DOC.UPSERT", "people", json.dumps({"id": 3, "name": "cy"}))
        # SQL over HTTP takes the same gate; a SELECT goes on.
        status, body = http(server, "POST", "/api/v1/sql", "INSERT INTO people (id, name) VALUES (4, 'di')")
        assert status == 507 and body["code"] == "oom", (status, body)
        assert http(server, "POST", "/api/v1/sql", "SELECT * FROM people WHERE id = 1")[0] == 200
        assert http(server, "GET", "/api/v1/namespaces/people/items/2")[0] == 404
        assert http(server, "GET", "/api/v1/namespaces/people/items/3")[0] == 404
        assert http(server, "GET", "/api/v1/namespaces/people/items/1") == (200, {"id": 1, "name": "ada"})
        assert r.dbsize() == len(stored) and evicted_keys(r) == 0, "noeviction evicts nothing for a document either"
        # Room made by deleting keys lets documents in again.
        r.delete(*stored[: len(stored) * 3 // 4])
        assert http(server, "POST", "/api/v1/namespaces/people/items", {"id": 2, "name": "bob"}) == (200, {"count": 1})
    finally:
        server.kill()
