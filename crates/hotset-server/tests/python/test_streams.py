"""redis-py against the real hotset binary: streams (XADD and the X* family, consumer groups,
the blocking reads), their replies in RESP2 and RESP3, Redis 7.0's error texts, and a
stream's state across DUMP/RESTORE and kill -9.

Each test starts its own server (see test_redis_py.Server). With HOTSET_TEST_REDIS_PORT set,
the tests run instead against a redis-server already listening on that port (flushed at
the start of each test), which is how the expected values were checked to be Redis'
behaviour (7.0.15); the kill -9 test is skipped then.

Most checks go through `raw`, a client without redis-py's reply callbacks, so a reply is
what came off the wire. An entry is `[id, [field, value, ...]]` in both protocols; XREAD and
XREADGROUP answer an array of `[key, entries]` in RESP2 and a map in RESP3 (`streams` builds
either); XINFO answers flat name/value arrays in RESP2 and maps in RESP3 (`fields` reads
either). Idle times and delivery times come from the clock, so only their type and range
are checked; radix-tree-keys/-nodes describe Redis' memory layout, so only their presence.
"""
import concurrent.futures
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from peer import REDIS_PORT, raw, server, wire  # noqa: F401 (server: a fixture)
from test_redis_py import Server

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
INVALID_ID = "Invalid stream ID specified as stream command argument"
NOT_GREATER = "The ID specified in XADD is equal or smaller than the target stream top item"
EXHAUSTED = "The stream has exhausted the last possible ID, unable to add more items"
UNBALANCED = "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
NOT_COMPATIBLE = "syntax error, MAXLEN and MINID options at the same time are not compatible"
NO_KEY_FOR_XGROUP = (
    "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
    "the MKSTREAM option to create an empty stream automatically."
)
MAX_ID = "18446744073709551615-18446744073709551615"


def fails(r, text, *command):
    """`command` is refused with exactly `text` (redis-py drops a leading "ERR ")."""
    try:
        reply = r.execute_command(*command)
    except redis.ResponseError as error:
        assert str(error) == text, command
    else:
        pytest.fail(f"{command} answered {reply!r}, not the error {text!r}")


def all_fail(r, cases):
    for command, text in cases:
        fails(r, text, *command)


def fill(r, key, *numbers):
    """XADD `n-0` with field n = `n` for each n; answers the entries as XRANGE shows them."""
    pipe = r.pipeline(transaction=False)
    for n in numbers:
        pipe.execute_command("XADD", key, f"{n}-0", "n", n)
    assert pipe.execute() == [f"{n}-0" for n in numbers]
    return [[f"{n}-0", ["n", str(n)]] for n in numbers]


def ids(entries):
    return [entry[0] for entry in entries]


def streams(protocol, *pairs):
    """An XREAD/XREADGROUP reply: [[key, entries], ...] in RESP2, {key: entries} in RESP3."""
    return [[key, entries] for key, entries in pairs] if protocol == 2 else dict(pairs)


def fields(reply):
    """An XINFO reply as a dict: RESP2 sends a flat name/value array, RESP3 a map."""
    if isinstance(reply, dict):
        return reply
    assert len(reply) % 2 == 0, reply
    return dict(zip(reply[::2], reply[1::2]))


def xinfo_stream(r, key):
    return fields(r.execute_command("XINFO", "STREAM", key))


def groups(r, key):
    """XINFO GROUPS as {name: fields}."""
    return {g["name"]: g for g in map(fields, r.execute_command("XINFO", "GROUPS", key))}


def stream_state(r, key):
    """XINFO STREAM FULL COUNT 0 (all entries) without clocks and memory layout: what must
    survive DUMP/RESTORE and a restart. Works in either protocol."""
    full = fields(r.execute_command("XINFO", "STREAM", key, "FULL", "COUNT", 0))
    full.pop("radix-tree-keys")
    full.pop("radix-tree-nodes")
    full["groups"] = [fields(g) for g in full["groups"]]
    for group in full["groups"]:
        # [id, consumer, delivery time, delivery count] -> without the time.
        group["pending"] = [[i, consumer, count] for i, consumer, _, count in group["pending"]]
        group["consumers"] = [fields(c) for c in group["consumers"]]
        for consumer in group["consumers"]:
            assert isinstance(consumer.pop("seen-time"), int)
            consumer["pending"] = [[i, count] for i, _, count in consumer["pending"]]
    return full


def pending(r, key, group, *extra):
    """XPENDING's extended form without the idle times: [[id, consumer, deliveries], ...]."""
    rows = r.execute_command("XPENDING", key, group, "-", "+", 100, *extra)
    for row in rows:
        assert isinstance(row[2], int) and row[2] >= 0, row
    return [[i, consumer, count] for i, consumer, _, count in rows]


def idles(r, key, group):
    return {row[0]: row[2] for row in r.execute_command("XPENDING", key, group, "-", "+", 100)}


def wait_blocked(r, count):
    """Polls INFO until `count` clients are blocked (the server's own count); fails after 10 s."""
    deadline = time.monotonic() + 10
    while int(r.info("clients")["blocked_clients"]) != count:
        assert time.monotonic() < deadline, f"never {count} blocked clients"


class Waiter:
    """Another connection whose commands run in a thread, for the blocking reads."""

    def __init__(self, server, protocol):
        # No retries: a blocking read sent again on a new connection would hide what happened.
        self.client = raw(server, protocol, retry=Retry(NoBackoff(), 0))
        self.pool = concurrent.futures.ThreadPoolExecutor(1)

    def send(self, *command):
        return self.pool.submit(self.client.execute_command, *command)

    def close(self):
        # Shutting the socket down wakes a thread still blocked because its test failed.
        self.client.connection_pool.disconnect()
        self.pool.shutdown()


@pytest.fixture
def waiter(server):
    made = []

    def make(protocol=2):
        made.append(Waiter(server, protocol))
        return made[-1]

    yield make
    for w in made:
        w.close()


# XADD and XLEN


def test_xadd_explicit_partial_and_sequence_ids(server):
    r = raw(server, 2)
    assert r.execute_command("XADD", "s", "1-1", "a", 1) == "1-1"
    for stale in ("1-1", "1-0", "0-5", "1"):
        fails(r, NOT_GREATER, "XADD", "s", stale, "a", 1)
    # ms-* takes the next sequence in the top item's millisecond, else sequence 0.
    assert r.execute_command("XADD", "s", "1-*", "a", 1) == "1-2"
    assert r.execute_command("XADD", "s", "2-*", "a", 1) == "2-0"
    fails(r, NOT_GREATER, "XADD", "s", "1-*", "a", 1)
    # A bare millisecond means sequence 0.
    assert r.execute_command("XADD", "s", "5", "a", 1) == "5-0"
    fails(r, NOT_GREATER, "XADD", "s", "5", "a", 1)
    assert r.execute_command("XLEN", "s") == 4 and r.execute_command("XLEN", "missing") == 0
    # 0-0 is never an entry, on a new key or an old one; 0-* on a new key is 0-1.
    for command in (("XADD", "s", "0-0", "a", 1), ("XADD", "new", "0-0", "a", 1), ("XADD", "new", "0", "a", 1)):
        fails(r, "The ID specified in XADD must be greater than 0-0", *command)
    assert r.execute_command("EXISTS", "new") == 0
    assert r.execute_command("XADD", "new", "0-*", "a", 1) == "0-1"
    # The last possible id: after it nothing more, and that check comes before the id order's.
    assert r.execute_command("XADD", "big", MAX_ID, "a", 1) == MAX_ID
    for id_ in ("*", "18446744073709551615-*", "1-0", "1-*"):
        fails(r, EXHAUSTED, "XADD", "big", id_, "a", 1)
    fails(r, EXHAUSTED, "XADD", "big", "MAXLEN", 0, "*", "a", 1)
    assert r.execute_command("XLEN", "big") == 1, "a refused XADD trims nothing"
    # A millisecond whose sequences are used up: ms-* is refused, the next ms is fine.
    assert r.execute_command("XADD", "seq", "7-18446744073709551615", "a", 1) == "7-18446744073709551615"
    fails(r, "Elements are too large to be stored", "XADD", "seq", "7-*", "a", 1)
    assert r.execute_command("XADD", "seq", "8-*", "a", 1) == "8-0"


def test_xadd_star_takes_the_clock_unless_the_top_item_is_ahead(server):
    r = raw(server, 2)
    before = int(time.time() * 1000)
    generated = [r.execute_command("XADD", "s", "*", "n", i) for i in range(20)]
    after = int(time.time() * 1000)
    parsed = [tuple(map(int, g.split("-"))) for g in generated]
    # Same host, same clock: the millisecond part is the time of the XADD (1 s of slack).
    assert all(before - 1000 <= ms <= after + 1000 for ms, _ in parsed), (before, generated, after)
    assert parsed == sorted(set(parsed)), "strictly increasing, even within one millisecond"
    # An id far in the future: * continues from it instead of going back to the clock.
    assert r.execute_command("XADD", "f", "99999999999999-5", "a", 1) == "99999999999999-5"
    assert r.execute_command("XADD", "f", "*", "a", 1) == "99999999999999-6"
    assert r.execute_command("XADD", "f", "99999999999999-*", "a", 1) == "99999999999999-7"
    assert r.execute_command("XADD", "f", "100000000000000-*", "a", 1) == "100000000000000-0"


def test_xadd_id_syntax_and_argument_errors(server):
    r = raw(server, 2)
    fill(r, "s", 1)
    bad_ids = ["abc", "1-abc", "-1", "1-", "1-2-3", "18446744073709551616-0", "1-18446744073709551616",
               "0x10", "6.5", "", "*-1", "**", "1-*-2", "-", "+", "$", ">"]
    for bad in bad_ids:
        fails(r, INVALID_ID, "XADD", "s", bad, "a", 1)
    arity = "wrong number of arguments for 'xadd' command"
    all_fail(r, [
        (("XADD", "s"), arity),
        (("XADD", "s", "2-0"), arity),
        (("XADD", "s", "2-0", "a"), arity),
        (("XADD", "s", "2-0", "a", 1, "b"), arity),
        (("XADD", "s", "MAXLEN", 5), arity),
        (("XADD", "s", "MINID", 5, "*", "a"), arity),
        (("XADD", "s", "MAXLEN", -1, "2-0", "a", 1), "The MAXLEN argument must be >= 0."),
        (("XADD", "s", "MAXLEN", "x", "2-0", "a", 1), "value is not an integer or out of range"),
        (("XADD", "s", "MAXLEN", 1, "LIMIT", 10, "2-0", "a", 1), "syntax error, LIMIT cannot be used without the special ~ option"),
        (("XADD", "s", "MAXLEN", "=", 1, "LIMIT", 10, "2-0", "a", 1), "syntax error, LIMIT cannot be used without the special ~ option"),
        (("XADD", "s", "LIMIT", 5, "2-0", "a", 1), "syntax error, LIMIT cannot be used without specifying a trimming strategy"),
        (("XADD", "s", "MAXLEN", "~", 1, "LIMIT", -1, "2-0", "a", 1), "The LIMIT argument must be >= 0."),
        (("XADD", "s", "MAXLEN", "~", 1, "LIMIT", "x", "2-0", "a", 1), "value is not an integer or out of range"),
        (("XADD", "s", "MAXLEN", 1, "MINID", 1, "2-0", "a", 1), NOT_COMPATIBLE),
        # Even the same strategy twice is "not compatible".
        (("XADD", "s", "MAXLEN", 1, "MAXLEN", 2, "2-0", "a", 1), NOT_COMPATIBLE),
        (("XADD", "s", "MINID", "x", "2-0", "a", 1), INVALID_ID),
        (("XADD", "s", "MINID", "~", "1-x", "2-0", "a", 1), INVALID_ID),
        # An unknown word is where the id should be.
        (("XADD", "s", "FOO", "2-0", "a", 1), INVALID_ID),
    ])
    assert r.execute_command("XRANGE", "s", "-", "+") == [["1-0", ["n", "1"]]], "no refused XADD added anything"
    r.execute_command("SET", "str", "v")
    fails(r, WRONGTYPE, "XADD", "str", "*", "a", 1)
    fails(r, WRONGTYPE, "XADD", "str", "NOMKSTREAM", "*", "a", 1)
    fails(r, WRONGTYPE, "XLEN", "str")


@pytest.mark.parametrize("protocol", [2, 3])
def test_xadd_nomkstream_answers_null_for_a_missing_key(server, protocol):
    r = raw(server, protocol)
    assert r.execute_command("XADD", "s", "NOMKSTREAM", "*", "a", 1) is None
    assert r.execute_command("EXISTS", "s") == 0
    assert wire(server, protocol, "XADD", "s", "NOMKSTREAM", "MAXLEN", 5, "*", "a", 1) == (
        b"$-1\r\n" if protocol == 2 else b"_\r\n"
    )
    fill(r, "s", 1)
    assert r.execute_command("XADD", "s", "NOMKSTREAM", "MAXLEN", 1, "2-0", "a", "b") == "2-0"
    assert r.execute_command("XRANGE", "s", "-", "+") == [["2-0", ["a", "b"]]]
    # Fields keep their order and may repeat; values are bytes as given.
    assert r.execute_command("XADD", "s", "3", "z", "1", "a", "", "z", "2") == "3-0"
    assert r.execute_command("XRANGE", "s", 3, 3) == [["3-0", ["z", "1", "a", "", "z", "2"]]]


def test_xadd_trims_exactly_with_maxlen_and_minid(server):
    r = raw(server, 2)
    fill(r, "s", 1, 2, 3, 4)
    assert r.execute_command("XADD", "s", "MAXLEN", 3, "5", "n", 5) == "5-0"
    assert ids(r.execute_command("XRANGE", "s", "-", "+")) == ["3-0", "4-0", "5-0"]
    assert r.execute_command("XADD", "s", "MAXLEN", "=", 2, "6", "n", 6) == "6-0"
    assert ids(r.execute_command("XRANGE", "s", "-", "+")) == ["5-0", "6-0"]
    # MINID keeps ids >= the threshold, the new entry counted.
    assert r.execute_command("XADD", "s", "MINID", 6, "7", "n", 7) == "7-0"
    assert ids(r.execute_command("XRANGE", "s", "-", "+")) == ["6-0", "7-0"]
    assert r.execute_command("XADD", "s", "MINID", "=", "7-0", "8", "n", 8) == "8-0"
    assert ids(r.execute_command("XRANGE", "s", "-", "+")) == ["7-0", "8-0"]
    assert r.execute_command("XADD", "s", "MINID", 100, "9", "n", 9) == "9-0", "even the new entry goes"
    assert r.execute_command("XLEN", "s") == 0
    assert r.execute_command("XADD", "s", "MAXLEN", 0, "10", "n", 10) == "10-0"
    # An emptied stream is not deleted: it keeps its last id and counters.
    assert r.execute_command("EXISTS", "s") == 1 and r.execute_command("TYPE", "s") == "stream"
    info = xinfo_stream(r, "s")
    assert (info["length"], info["last-generated-id"], info["entries-added"]) == (0, "10-0", 10)
    assert (info["first-entry"], info["last-entry"], info["recorded-first-entry-id"]) == (None, None, "0-0")
    assert info["max-deleted-entry-id"] == "0-0", "trimming is not deleting"
    fails(r, NOT_GREATER, "XADD", "s", "10", "n", 1)


def approximately_trimmed(before, after, removed, keep_at_least):
    """What both Redis (whole nodes only) and an exact trim satisfy after MAXLEN/MINID ~."""
    assert removed == len(before) - len(after)
    assert len(after) >= keep_at_least
    assert after == before[len(before) - len(after):], "the entries kept are the newest, unchanged"


def test_approximate_trimming_keeps_at_least_the_threshold_and_the_newest(server):
    r = raw(server, 2)
    before = fill(r, "s", *range(1, 1001))
    removed = r.execute_command("XTRIM", "s", "MAXLEN", "~", 10)
    after = r.execute_command("XRANGE", "s", "-", "+")
    approximately_trimmed(before, after, removed, 10)
    # LIMIT caps how many one trim removes.
    before = fill(r, "t", *range(1, 1001))
    removed = r.execute_command("XTRIM", "t", "MAXLEN", "~", 10, "LIMIT", 150)
    after = r.execute_command("XRANGE", "t", "-", "+")
    approximately_trimmed(before, after, removed, 10)
    assert removed <= 150
    # MINID ~ keeps every id at or above the threshold.
    before = after
    removed = r.execute_command("XTRIM", "t", "MINID", "~", 550)
    after = r.execute_command("XRANGE", "t", "-", "+")
    approximately_trimmed(before, after, removed, 451)
    assert after[-451][0] == "550-0"
    # XADD with ~: the new entry is there and the invariants hold.
    before = r.execute_command("XRANGE", "t", "-", "+") + [["2000-0", ["n", "x"]]]
    assert r.execute_command("XADD", "t", "MAXLEN", "~", 1, "2000", "n", "x") == "2000-0"
    after = r.execute_command("XRANGE", "t", "-", "+")
    approximately_trimmed(before, after, len(before) - len(after), 1)


def test_wrongtype_both_ways(server):
    r = raw(server, 2)
    r.execute_command("SET", "str", "v")
    fill(r, "s", 1)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    for command in (
        ("XRANGE", "str", "-", "+"), ("XREVRANGE", "str", "+", "-"), ("XDEL", "str", 1), ("XTRIM", "str", "MAXLEN", 1),
        ("XSETID", "str", 1), ("XREAD", "STREAMS", "str", 0), ("XREAD", "STREAMS", "missing", "str", 0, 0),
        ("XGROUP", "CREATE", "str", "g", "$"), ("XGROUP", "CREATE", "str", "g", "$", "MKSTREAM"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "str", ">", ">"),
        ("XACK", "str", "g", 1), ("XPENDING", "str", "g"), ("XCLAIM", "str", "g", "c", 0, 1),
        ("XAUTOCLAIM", "str", "g", "c", 0, 0), ("XINFO", "STREAM", "str"),
        ("GET", "s"), ("LPUSH", "s", "x"), ("SADD", "s", "x"), ("HSET", "s", "f", "v"), ("ZADD", "s", 1, "m"),
        ("INCR", "s"), ("APPEND", "s", "x"),
    ):
        fails(r, WRONGTYPE, *command)
    assert r.execute_command("XLEN", "s") == 1


# XRANGE and XREVRANGE


def test_xrange_and_xrevrange_bounds(server):
    r = raw(server, 2)
    r.execute_command("XADD", "s", "1-1", "a", 1)
    r.execute_command("XADD", "s", "1-2", "b", 2)
    r.execute_command("XADD", "s", "2-0", "c", 3)
    r.execute_command("XADD", "s", "5-0", "d", 4)
    r.execute_command("XADD", "s", "5-1", "e", 5)
    r.execute_command("XADD", "s", "7-3", "f", 6)
    xrange = lambda *args: ids(r.execute_command("XRANGE", "s", *args))  # noqa: E731
    xrev = lambda *args: ids(r.execute_command("XREVRANGE", "s", *args))  # noqa: E731
    everything = ["1-1", "1-2", "2-0", "5-0", "5-1", "7-3"]
    assert r.execute_command("XRANGE", "s", "-", "+")[0] == ["1-1", ["a", "1"]]
    assert xrange("-", "+") == everything and xrev("+", "-") == everything[::-1]
    # A bare millisecond is ms-0 as a start and ms-<max> as an end.
    assert xrange(1, 1) == ["1-1", "1-2"] and xrange(5, 5) == ["5-0", "5-1"]
    assert xrange(3, 4) == [] and xrange("+", "-") == [] and xrev("-", "+") == []
    assert xrev(5, 1) == ["5-1", "5-0", "2-0", "1-2", "1-1"]
    # "(" excludes that id; with a bare millisecond it excludes ms-0 (start) or ms-<max> (end).
    assert xrange("(1-1", 5) == ["1-2", "2-0", "5-0", "5-1"]
    assert xrange("(1", "+") == everything
    assert xrange("-", "(5") == ["1-1", "1-2", "2-0", "5-0", "5-1"]
    assert xrange("-", "(5-1") == ["1-1", "1-2", "2-0", "5-0"]
    assert xrange("(5-1", "+") == ["7-3"]
    assert xrange("(0-0", "+") == everything and xrange("-", "(0") == []
    assert xrev("(5-1", "(1-1") == ["5-0", "2-0", "1-2"] and xrev(5, "(5") == ["5-1"]
    # COUNT; the last COUNT wins.
    assert xrange("-", "+", "COUNT", 2) == ["1-1", "1-2"]
    assert xrev("+", "-", "COUNT", 2) == ["7-3", "5-1"]
    assert xrange("-", "+", "COUNT", 1, "COUNT", 2) == ["1-1", "1-2"]
    assert xrange("(1-2", "+", "COUNT", 100) == everything[2:]
    assert r.execute_command("XRANGE", "missing", "-", "+") == []
    assert r.execute_command("XREVRANGE", "missing", "+", "-") == []


@pytest.mark.parametrize("protocol", [2, 3])
def test_xrange_count_zero_or_negative_is_a_null_reply(server, protocol):
    r = raw(server, protocol)
    fill(r, "s", 1, 2)
    null = b"*-1\r\n" if protocol == 2 else b"_\r\n"
    assert r.execute_command("XRANGE", "s", "-", "+", "COUNT", 0) is None
    assert wire(server, protocol, "XRANGE", "s", "-", "+", "COUNT", 0) == null
    assert wire(server, protocol, "XREVRANGE", "s", "+", "-", "COUNT", -1) == null
    # ...but a missing key is an empty array whatever the count.
    assert wire(server, protocol, "XRANGE", "missing", "-", "+", "COUNT", 0) == b"*0\r\n"
    # An entry is an array of id and a flat field/value array, in RESP3 too (not a map).
    assert wire(server, protocol, "XRANGE", "s", "-", "+", "COUNT", 1) == (
        b"*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nn\r\n$1\r\n1\r\n"
    )


def test_xrange_errors(server):
    r = raw(server, 2)
    fill(r, "s", 1)
    all_fail(r, [
        (("XRANGE", "s", "(-", "+"), INVALID_ID),
        (("XRANGE", "s", "-", "(+"), INVALID_ID),
        (("XRANGE", "s", "abc", "+"), INVALID_ID),
        (("XRANGE", "s", 2, "1-x"), INVALID_ID),
        (("XRANGE", "s", "1-*", "+"), INVALID_ID),
        (("XRANGE", "s", "-", "(0-0"), "invalid end ID for the interval"),
        (("XREVRANGE", "s", "(0-0", "-"), "invalid end ID for the interval"),
        (("XRANGE", "s", f"({MAX_ID}", "+"), "invalid start ID for the interval"),
        (("XRANGE", "s", "-", "+", "FOO"), "syntax error"),
        (("XRANGE", "s", "-", "+", "COUNT"), "syntax error"),
        (("XRANGE", "s", "-", "+", "COUNT", 1, "extra"), "syntax error"),
        (("XRANGE", "s", "-", "+", "COUNT", "x"), "value is not an integer or out of range"),
        (("XRANGE", "s", "-"), "wrong number of arguments for 'xrange' command"),
    ])


# XDEL, XTRIM, XSETID


def test_xdel_counts_what_it_deleted_and_deleted_ids_stay_used(server):
    r = raw(server, 2)
    fill(r, "s", 1, 2, 3, 4)
    assert r.execute_command("XDEL", "s", 2, "2-0", 9, 3) == 2, "a repeated or missing id counts nothing"
    assert r.execute_command("XDEL", "s", 4) == 1
    assert r.execute_command("XRANGE", "s", "-", "+") == [["1-0", ["n", "1"]]]
    # The deleted top item's id is still the top: XADD must go above it.
    fails(r, NOT_GREATER, "XADD", "s", 4, "n", 4)
    fails(r, NOT_GREATER, "XADD", "s", "3-5", "n", 4)
    info = xinfo_stream(r, "s")
    assert (info["length"], info["last-generated-id"], info["max-deleted-entry-id"], info["entries-added"]) == (1, "4-0", "4-0", 4)
    assert info["first-entry"] == info["last-entry"] == ["1-0", ["n", "1"]]
    assert r.execute_command("XDEL", "missing", 1) == 0
    # Deleting the last entry leaves an empty stream, not a deleted key.
    assert r.execute_command("XDEL", "s", 1) == 1
    assert r.execute_command("EXISTS", "s") == 1 and r.execute_command("XLEN", "s") == 0
    info = xinfo_stream(r, "s")
    assert (info["recorded-first-entry-id"], info["first-entry"], info["max-deleted-entry-id"]) == ("0-0", None, "4-0")
    assert r.execute_command("XADD", "s", "4-1", "n", 5) == "4-1"
    # One bad id refuses the whole XDEL: nothing is deleted.
    fails(r, INVALID_ID, "XDEL", "s", "4-1", "x")
    fails(r, INVALID_ID, "XDEL", "s", "1-x")
    fails(r, "wrong number of arguments for 'xdel' command", "XDEL", "s")
    assert r.execute_command("XLEN", "s") == 1


def test_xtrim_exact(server):
    r = raw(server, 2)
    fill(r, "t", 1, 2, 3, 4, 5)
    assert r.execute_command("XTRIM", "t", "MAXLEN", 3) == 2
    assert ids(r.execute_command("XRANGE", "t", "-", "+")) == ["3-0", "4-0", "5-0"]
    assert r.execute_command("XTRIM", "t", "MAXLEN", "=", 5) == 0
    assert r.execute_command("XTRIM", "t", "MINID", 5) == 2
    assert ids(r.execute_command("XRANGE", "t", "-", "+")) == ["5-0"]
    assert r.execute_command("XTRIM", "t", "MINID", "=", "5-1") == 1
    assert r.execute_command("EXISTS", "t") == 1 and r.execute_command("XLEN", "t") == 0
    info = xinfo_stream(r, "t")
    assert (info["last-generated-id"], info["entries-added"], info["max-deleted-entry-id"]) == ("5-0", 5, "0-0")
    assert r.execute_command("XTRIM", "missing", "MAXLEN", 0) == 0 and r.execute_command("EXISTS", "missing") == 0
    all_fail(r, [
        (("XTRIM", "t"), "wrong number of arguments for 'xtrim' command"),
        (("XTRIM", "t", "MAXLEN"), "wrong number of arguments for 'xtrim' command"),
        (("XTRIM", "t", "FOO", 1), "syntax error"),
        (("XTRIM", "t", "MAXLEN", 1, "extra"), "syntax error"),
        (("XTRIM", "t", "MAXLEN", -1), "The MAXLEN argument must be >= 0."),
        (("XTRIM", "t", "MAXLEN", 1, "LIMIT", 5), "syntax error, LIMIT cannot be used without the special ~ option"),
        (("XTRIM", "t", "MAXLEN", "~", 1, "LIMIT", -1), "The LIMIT argument must be >= 0."),
        (("XTRIM", "t", "MAXLEN", 1, "MINID", 1), NOT_COMPATIBLE),
        (("XTRIM", "t", "MINID", "x"), INVALID_ID),
    ])


def test_xsetid_moves_the_last_id(server):
    r = raw(server, 2)
    fails(r, "no such key", "XSETID", "missing", "1-1")
    assert r.execute_command("EXISTS", "missing") == 0
    fill(r, "s", 1, 2, 3)
    fails(r, "The ID specified in XSETID is smaller than the target stream top item", "XSETID", "s", 2)
    assert r.execute_command("XSETID", "s", 10) == "OK"
    assert xinfo_stream(r, "s")["last-generated-id"] == "10-0"
    fails(r, NOT_GREATER, "XADD", "s", 5, "n", 5)
    # It may move back down, as far as the top entry.
    assert r.execute_command("XSETID", "s", 3) == "OK"
    assert r.execute_command("XADD", "s", "3-*", "n", 4) == "3-1"
    info = xinfo_stream(r, "s")
    assert (info["entries-added"], info["max-deleted-entry-id"]) == (4, "0-0"), "no option: the counters stay"
    # An empty stream takes any id, even 0-0.
    r.execute_command("XDEL", "s", 1, 2, 3, "3-1")
    assert r.execute_command("XSETID", "s", "0-0") == "OK"
    assert r.execute_command("XADD", "s", "0-*", "n", 1) == "0-1"
    all_fail(r, [
        (("XSETID", "s", "0-0"), "The ID specified in XSETID is smaller than the target stream top item"),
        (("XSETID", "s", "x"), INVALID_ID),
        (("XSETID", "s"), "wrong number of arguments for 'xsetid' command"),
    ])


def test_xsetid_entriesadded_and_maxdeletedid(server):
    r = raw(server, 2)
    fill(r, "s", 1, 2, 3)
    fails(r, "The entries_added specified in XSETID is smaller than the target stream length",
          "XSETID", "s", "10-1", "ENTRIESADDED", 2)
    assert r.execute_command("XSETID", "s", "10-1", "ENTRIESADDED", 3) == "OK"
    assert r.execute_command("XSETID", "s", "10-1", "ENTRIESADDED", 7, "MAXDELETEDID", "9-9") == "OK"
    info = xinfo_stream(r, "s")
    assert (info["last-generated-id"], info["entries-added"], info["max-deleted-entry-id"]) == ("10-1", 7, "9-9")
    fails(r, "The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
          "XSETID", "s", "10-1", "MAXDELETEDID", "10-2")
    # MAXDELETEDID 0-0 is "not given": the recorded one stays.
    assert r.execute_command("XSETID", "s", "10-1", "MAXDELETEDID", "0-0") == "OK"
    assert xinfo_stream(r, "s")["max-deleted-entry-id"] == "9-9"
    assert r.execute_command("XSETID", "s", "10-1", "MAXDELETEDID", "5-0") == "OK"
    assert xinfo_stream(r, "s")["max-deleted-entry-id"] == "5-0", "it may move down"
    all_fail(r, [
        (("XSETID", "s", "10-1", "ENTRIESADDED", -1), "entries_added must be positive"),
        (("XSETID", "s", "10-1", "ENTRIESADDED", "x"), "value is not an integer or out of range"),
        (("XSETID", "s", "10-1", "MAXDELETEDID", "x"), INVALID_ID),
        (("XSETID", "s", "10-1", "ENTRIESADDED"), "syntax error"),
        (("XSETID", "s", "10-1", "FOO"), "syntax error"),
        (("XSETID", "s", "1-0", "ENTRIESADDED", 100, "MAXDELETEDID", "0-1"),
         "The ID specified in XSETID is smaller than the target stream top item"),
    ])
    info = xinfo_stream(r, "s")
    assert (info["last-generated-id"], info["entries-added"], info["max-deleted-entry-id"]) == ("10-1", 7, "5-0")


# XREAD


@pytest.mark.parametrize("protocol", [2, 3])
def test_xread_several_streams(server, protocol):
    r = raw(server, protocol)
    a = fill(r, "a", 1, 2, 3)
    b = fill(r, "b", 1)
    assert r.execute_command("XREAD", "STREAMS", "a", "b", 0, 0) == streams(protocol, ("a", a), ("b", b))
    # COUNT applies per stream; the id is exclusive and may be any id, present or not.
    assert r.execute_command("XREAD", "COUNT", 1, "STREAMS", "a", "b", 1, "0-0") == streams(protocol, ("a", a[1:2]), ("b", b))
    assert r.execute_command("XREAD", "STREAMS", "a", "2-5") == streams(protocol, ("a", a[2:]))
    # Streams with nothing newer, and missing keys, are left out; nothing at all is null.
    assert r.execute_command("XREAD", "STREAMS", "a", "missing", 2, 0) == streams(protocol, ("a", a[2:]))
    assert r.execute_command("XREAD", "STREAMS", "a", "b", 3, 1) is None
    assert r.execute_command("XREAD", "STREAMS", "a", "b", "$", "$") is None
    assert r.execute_command("XREAD", "STREAMS", "a", MAX_ID) is None
    assert wire(server, protocol, "XREAD", "STREAMS", "missing", 0) == (b"*-1\r\n" if protocol == 2 else b"_\r\n")
    # COUNT 0 or negative means no limit here (unlike XRANGE); the last COUNT wins.
    assert r.execute_command("XREAD", "COUNT", 0, "STREAMS", "a", 0) == streams(protocol, ("a", a))
    assert r.execute_command("XREAD", "COUNT", -1, "STREAMS", "a", 0) == streams(protocol, ("a", a))
    assert r.execute_command("XREAD", "COUNT", 1, "COUNT", 2, "STREAMS", "a", 0) == streams(protocol, ("a", a[:2]))
    # With data there, BLOCK does not wait.
    assert r.execute_command("XREAD", "BLOCK", 0, "STREAMS", "a", 0) == streams(protocol, ("a", a))


def test_xread_errors(server):
    r = raw(server, 2)
    fill(r, "a", 1)
    all_fail(r, [
        (("XREAD", "STREAMS", "a", "b", 0), UNBALANCED),
        (("XREAD", "STREAMS", "a"), "wrong number of arguments for 'xread' command"),
        (("XREAD", "a", 0), "wrong number of arguments for 'xread' command"),
        (("XREAD", "STREAMS", "a", "x"), INVALID_ID),
        (("XREAD", "STREAMS", "a", "(1"), INVALID_ID),
        (("XREAD", "STREAMS", "a", "+"), INVALID_ID),  # 7.4 and later only
        (("XREAD", "STREAMS", "a", "-"), INVALID_ID),
        (("XREAD", "STREAMS", "a", ">"),
         "The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."),
        (("XREAD", "NOACK", "STREAMS", "a", 0), "The NOACK option is only supported by XREADGROUP. You called XREAD instead."),
        (("XREAD", "COUNT", "x", "STREAMS", "a", 0), "value is not an integer or out of range"),
        (("XREAD", "BLOCK", -1, "STREAMS", "a", 0), "timeout is negative"),
        (("XREAD", "BLOCK", "x", "STREAMS", "a", 0), "timeout is not an integer or out of range"),
    ])


@pytest.mark.parametrize("protocol", [2, 3])
def test_xread_block_is_woken_by_xadd_from_another_connection(server, waiter, protocol):
    control = server.client(decode_responses=True)
    r = raw(server, protocol)
    w1, w2 = waiter(protocol), waiter(protocol)
    fill(r, "a", 1)
    # Blocked on two keys; $ on a stream is its last id when the read blocked.
    blocked = w1.send("XREAD", "BLOCK", 0, "STREAMS", "a", "b", "$", "$")
    wait_blocked(control, 1)
    assert r.execute_command("XADD", "b", "5-0", "f", "v") == "5-0"
    assert blocked.result(timeout=10) == streams(protocol, ("b", [["5-0", ["f", "v"]]]))
    # Two readers of one stream both get the entry: XREAD consumes nothing.
    first = w1.send("XREAD", "BLOCK", 0, "STREAMS", "a", "1-0")
    second = w2.send("XREAD", "BLOCK", 0, "STREAMS", "a", "$")
    wait_blocked(control, 2)
    r.execute_command("XADD", "a", "2-0", "f", "w")
    expected = streams(protocol, ("a", [["2-0", ["f", "w"]]]))
    assert first.result(timeout=10) == expected and second.result(timeout=10) == expected
    # Entries added by one transaction are all there when the reader wakes; COUNT still caps.
    blocked = w1.send("XREAD", "COUNT", 2, "BLOCK", 0, "STREAMS", "c", "$")
    wait_blocked(control, 1)
    pipe = r.pipeline(transaction=True)
    for n in (1, 2, 3):
        pipe.execute_command("XADD", "c", f"{n}-0", "n", n)
    pipe.execute()
    assert blocked.result(timeout=10) == streams(protocol, ("c", [["1-0", ["n", "1"]], ["2-0", ["n", "2"]]]))
    wait_blocked(control, 0)


@pytest.mark.parametrize("protocol", [2, 3])
def test_block_timeouts_answer_null(server, protocol):
    r = raw(server, protocol)
    fill(r, "a", 1)
    r.execute_command("XGROUP", "CREATE", "a", "g", "$")
    null = b"*-1\r\n" if protocol == 2 else b"_\r\n"
    assert r.execute_command("XREAD", "BLOCK", 10, "STREAMS", "a", "$") is None
    assert wire(server, protocol, "XREAD", "BLOCK", 10, "STREAMS", "missing", "$") == null
    assert wire(server, protocol, "XREAD", "BLOCK", 10, "STREAMS", "a", "missing", "1-0", 0) == null
    assert wire(server, protocol, "XREADGROUP", "GROUP", "g", "c", "BLOCK", 10, "STREAMS", "a", ">") == null
    # With an explicit id XREADGROUP reads history and never blocks.
    assert r.execute_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", 10, "STREAMS", "a", 0) == streams(protocol, ("a", []))


def test_xread_block_survives_the_key_being_deleted(server, waiter):
    control = server.client(decode_responses=True)
    r = raw(server, 2)
    w = waiter()
    fill(r, "s", 5)
    blocked = w.send("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
    wait_blocked(control, 1)
    assert r.execute_command("DEL", "s") == 1
    # $ was 5-0 when it blocked: a new stream's 1-0 is not above it, 6-0 is. Had the DEL or
    # the 1-0 woken the reader, it would have answered something else than 6-0.
    assert r.execute_command("XADD", "s", "1-0", "f", "low") == "1-0"
    r.execute_command("XADD", "s", "6-0", "f", "high")
    assert blocked.result(timeout=10) == [["s", [["6-0", ["f", "high"]]]]]
    # A key turned into a string does not wake XREAD either; a stream there again does.
    blocked = w.send("XREAD", "BLOCK", 0, "STREAMS", "k", "$")
    wait_blocked(control, 1)
    r.execute_command("SET", "k", "v")
    r.execute_command("DEL", "k")
    r.execute_command("XADD", "k", "1-0", "f", "v")
    assert blocked.result(timeout=10) == [["k", [["1-0", ["f", "v"]]]]]


def test_blocking_reads_inside_multi_do_not_block(server):
    r = raw(server, 2)
    fill(r, "s", 1)
    r.execute_command("XGROUP", "CREATE", "s", "g", "$")
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
    pipe.execute_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", ">")
    pipe.execute_command("XREAD", "BLOCK", 0, "STREAMS", "s", 0)
    assert pipe.execute() == [None, None, [["s", [["1-0", ["n", "1"]]]]]]


# Consumer groups


def test_xgroup_create(server):
    r = raw(server, 2)
    fails(r, NO_KEY_FOR_XGROUP, "XGROUP", "CREATE", "s", "g", "$")
    assert r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == "OK"
    assert r.execute_command("TYPE", "s") == "stream" and r.execute_command("XLEN", "s") == 0
    fails(r, "BUSYGROUP Consumer Group name already exists", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    fails(r, "BUSYGROUP Consumer Group name already exists", "XGROUP", "CREATE", "s", "g", 0)
    fill(r, "s", 1, 2, 3)
    assert r.execute_command("XGROUP", "CREATE", "s", "at0", 0) == "OK"
    assert r.execute_command("XGROUP", "CREATE", "s", "atend", "$") == "OK"
    assert r.execute_command("XGROUP", "CREATE", "s", "read1", 1, "ENTRIESREAD", 1) == "OK"
    assert r.execute_command("XGROUP", "CREATE", "s", "unknown", 2, "ENTRIESREAD", -1) == "OK"
    assert r.execute_command("XGROUP", "CREATE", "s", "ahead", 99) == "OK", "an id past the end is allowed"
    got = groups(r, "s")
    assert list(got) == ["ahead", "at0", "atend", "g", "read1", "unknown"], "groups listed by name"
    assert got["at0"] == {"name": "at0", "consumers": 0, "pending": 0, "last-delivered-id": "0-0", "entries-read": None, "lag": 3}
    assert got["g"]["last-delivered-id"] == "0-0", "$ of the empty stream it was created on"
    assert (got["atend"]["last-delivered-id"], got["atend"]["entries-read"], got["atend"]["lag"]) == ("3-0", None, 0)
    assert (got["read1"]["entries-read"], got["read1"]["lag"]) == (1, 2)
    assert (got["ahead"]["last-delivered-id"], got["ahead"]["lag"]) == ("99-0", None)
    all_fail(r, [
        (("XGROUP", "CREATE", "s", "x", 2, "ENTRIESREAD", -2), "value for ENTRIESREAD must be positive or -1"),
        (("XGROUP", "CREATE", "s", "x", 2, "ENTRIESREAD", "x"), "value is not an integer or out of range"),
        (("XGROUP", "CREATE", "s", "x", "x"), INVALID_ID),
        (("XGROUP", "CREATE", "s", "x", ">"), INVALID_ID),
        (("XGROUP", "CREATE", "s", "x", 0, "FOO"), "unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP."),
        (("XGROUP", "CREATE", "s"), "wrong number of arguments for 'xgroup|create' command"),
        (("XGROUP", "FOO", "s", "g"), "unknown subcommand 'FOO'. Try XGROUP HELP."),
    ])
    assert "x" not in groups(r, "s")


def test_xgroup_setid(server):
    r = raw(server, 2)
    fill(r, "s", 1, 2, 3)
    r.execute_command("XGROUP", "CREATE", "s", "g", "$")
    assert r.execute_command("XGROUP", "SETID", "s", "g", 2) == "OK"
    assert groups(r, "s")["g"]["last-delivered-id"] == "2-0"
    assert r.execute_command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") == [["s", [["3-0", ["n", "3"]]]]]
    assert r.execute_command("XGROUP", "SETID", "s", "g", 0, "ENTRIESREAD", 0) == "OK"
    g = groups(r, "s")["g"]
    assert (g["last-delivered-id"], g["entries-read"], g["lag"], g["pending"]) == ("0-0", 0, 3, 1), "the PEL stays"
    assert r.execute_command("XGROUP", "SETID", "s", "g", "$", "ENTRIESREAD", 3) == "OK"
    g = groups(r, "s")["g"]
    assert (g["last-delivered-id"], g["entries-read"], g["lag"]) == ("3-0", 3, 0)
    all_fail(r, [
        (("XGROUP", "SETID", "s", "nog", 0), "NOGROUP No such consumer group 'nog' for key name 's'"),
        (("XGROUP", "SETID", "missing", "g", 0), NO_KEY_FOR_XGROUP),
        (("XGROUP", "SETID", "s", "g", "x"), INVALID_ID),
        (("XGROUP", "SETID", "s", "g", 0, "ENTRIESREAD", -5), "value for ENTRIESREAD must be positive or -1"),
    ])


def test_xgroup_destroy_createconsumer_delconsumer(server):
    r = raw(server, 2)
    fill(r, "s", 1, 2, 3)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    assert r.execute_command("XGROUP", "CREATECONSUMER", "s", "g", "alice") == 1
    assert r.execute_command("XGROUP", "CREATECONSUMER", "s", "g", "alice") == 0
    r.execute_command("XREADGROUP", "GROUP", "g", "bob", "COUNT", 2, "STREAMS", "s", ">")
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    assert [fields(c)["name"] for c in r.execute_command("XINFO", "CONSUMERS", "s", "g")] == ["alice", "bob"]
    # DELCONSUMER answers how many entries the consumer had pending, and they leave the group's PEL.
    assert r.execute_command("XGROUP", "DELCONSUMER", "s", "g", "bob") == 2
    assert r.execute_command("XGROUP", "DELCONSUMER", "s", "g", "nobody") == 0
    assert pending(r, "s", "g") == [["3-0", "alice", 1]]
    assert groups(r, "s")["g"]["consumers"] == 1
    # A deleted consumer's entries are not delivered again by ">": they were delivered.
    assert r.execute_command("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">") is None
    all_fail(r, [
        (("XGROUP", "CREATECONSUMER", "s", "nog", "c"), "NOGROUP No such consumer group 'nog' for key name 's'"),
        (("XGROUP", "DELCONSUMER", "s", "nog", "c"), "NOGROUP No such consumer group 'nog' for key name 's'"),
        (("XGROUP", "CREATECONSUMER", "missing", "g", "c"), NO_KEY_FOR_XGROUP),
        (("XGROUP", "DESTROY", "missing", "g"), NO_KEY_FOR_XGROUP),
        (("XGROUP", "DESTROY", "s"), "wrong number of arguments for 'xgroup|destroy' command"),
    ])
    assert r.execute_command("XGROUP", "DESTROY", "s", "g") == 1
    assert r.execute_command("XGROUP", "DESTROY", "s", "g") == 0
    assert r.execute_command("XINFO", "GROUPS", "s") == [] and xinfo_stream(r, "s")["groups"] == 0
    assert r.execute_command("XLEN", "s") == 3, "destroying a group leaves the entries"


def test_xreadgroup_new_entries_and_history(server):
    r = raw(server, 2)
    e = fill(r, "s", 1, 2, 3, 4)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    read = lambda consumer, *args: r.execute_command("XREADGROUP", "GROUP", "g", consumer, *args)  # noqa: E731
    assert read("alice", "COUNT", 2, "STREAMS", "s", ">") == [["s", e[0:2]]]
    assert read("bob", "COUNT", 1, "STREAMS", "s", ">") == [["s", e[2:3]]]
    # An explicit id reads the consumer's own pending entries above it.
    assert read("alice", "STREAMS", "s", 0) == [["s", e[0:2]]]
    assert read("alice", "COUNT", 1, "STREAMS", "s", 0) == [["s", e[0:1]]]
    assert read("alice", "STREAMS", "s", 1) == [["s", e[1:2]]]
    assert read("bob", "STREAMS", "s", 0) == [["s", e[2:3]]]
    assert read("carol", "STREAMS", "s", 0) == [["s", []]], "nothing pending: an empty list, not null"
    # Reading history counts as a delivery.
    assert pending(r, "s", "g") == [["1-0", "alice", 3], ["2-0", "alice", 3], ["3-0", "bob", 2]]
    # A pending entry deleted from the stream comes back as [id, null], and is not counted.
    r.execute_command("XDEL", "s", 2)
    assert read("alice", "STREAMS", "s", 0) == [["s", [e[0], ["2-0", None]]]]
    assert pending(r, "s", "g") == [["1-0", "alice", 4], ["2-0", "alice", 3], ["3-0", "bob", 2]]
    assert read("alice", "STREAMS", "s", ">") == [["s", e[3:4]]]
    assert read("alice", "STREAMS", "s", ">") is None
    g = groups(r, "s")["g"]
    assert (g["consumers"], g["pending"], g["last-delivered-id"]) == (3, 4, "4-0")


@pytest.mark.parametrize("protocol", [2, 3])
def test_xreadgroup_reply_shapes(server, protocol):
    r = raw(server, protocol)
    a, b = fill(r, "a", 1, 2), fill(r, "b", 1)
    for key in ("a", "b"):
        r.execute_command("XGROUP", "CREATE", key, "g", 0)
    read = lambda *args: r.execute_command("XREADGROUP", "GROUP", "g", "c", *args)  # noqa: E731
    assert read("COUNT", 1, "STREAMS", "a", "b", ">", ">") == streams(protocol, ("a", a[:1]), ("b", b))
    # History for one key, new entries for the other; a key with nothing new is left out.
    assert read("STREAMS", "a", "b", ">", 0) == streams(protocol, ("a", a[1:]), ("b", b))
    assert read("STREAMS", "a", "b", 0, ">") == streams(protocol, ("a", a))
    assert read("STREAMS", "a", "b", ">", ">") is None
    r.execute_command("XDEL", "a", 1)
    assert wire(server, protocol, "XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "a", 0) == (
        (b"*1\r\n*2\r\n" if protocol == 2 else b"%1\r\n") + b"$1\r\na\r\n*1\r\n*2\r\n$3\r\n1-0\r\n"
        + (b"*-1\r\n" if protocol == 2 else b"_\r\n")
    )


def test_xreadgroup_noack_and_consumer_creation(server):
    r = raw(server, 2)
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    consumers = lambda: [fields(c)["name"] for c in r.execute_command("XINFO", "CONSUMERS", "s", "g")]  # noqa: E731
    # ">" finding nothing does not create the consumer (blocking or not); an explicit id does.
    assert r.execute_command("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">") is None
    assert r.execute_command("XREADGROUP", "GROUP", "g", "bob", "BLOCK", 10, "STREAMS", "s", ">") is None
    assert consumers() == []
    assert r.execute_command("XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", 0) == [["s", []]]
    assert consumers() == ["carol"]
    e = fill(r, "s", 1, 2, 3)
    # NOACK: delivered (the group moves on) but nothing pending.
    assert r.execute_command("XREADGROUP", "GROUP", "g", "dave", "COUNT", 2, "NOACK", "STREAMS", "s", ">") == [["s", e[:2]]]
    assert r.execute_command("XPENDING", "s", "g") == [0, None, None, None]
    assert consumers() == ["carol", "dave"]
    assert r.execute_command("XREADGROUP", "GROUP", "g", "dave", "STREAMS", "s", ">") == [["s", e[2:]]]
    assert pending(r, "s", "g") == [["3-0", "dave", 1]]


def test_xreadgroup_errors(server):
    r = raw(server, 2)
    fill(r, "s", 1)
    fill(r, "other", 1)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    nogroup = "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option".format
    all_fail(r, [
        (("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"), nogroup("s", "nog")),
        (("XREADGROUP", "GROUP", "g", "c", "STREAMS", "missing", ">"), nogroup("missing", "g")),
        # A group missing on any key refuses the whole read.
        (("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "other", ">", ">"), nogroup("other", "g")),
        (("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$"),
         "The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by "
         "specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."),
        (("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "x"), INVALID_ID),
        (("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "other", ">"), UNBALANCED),
        (("XREADGROUP", "GROUP", "g", "STREAMS", "s", ">"), "wrong number of arguments for 'xreadgroup' command"),
        (("XREADGROUP", "STREAMS", "s", ">"), "wrong number of arguments for 'xreadgroup' command"),
    ])
    assert r.execute_command("XPENDING", "s", "g")[0] == 0, "a refused XREADGROUP delivers nothing"
    assert r.execute_command("XINFO", "CONSUMERS", "s", "g") == []


@pytest.mark.parametrize("protocol", [2, 3])
def test_xreadgroup_block_is_woken_by_xadd_and_each_entry_goes_to_one_consumer(server, waiter, protocol):
    control = server.client(decode_responses=True)
    r = raw(server, protocol)
    w1, w2 = waiter(protocol), waiter(protocol)
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    first = w1.send("XREADGROUP", "GROUP", "g", "c1", "BLOCK", 0, "STREAMS", "s", ">")
    wait_blocked(control, 1)
    second = w2.send("XREADGROUP", "GROUP", "g", "c2", "COUNT", 5, "BLOCK", 0, "STREAMS", "s", ">")
    wait_blocked(control, 2)
    r.execute_command("XADD", "s", "1-0", "f", "v")
    # The first to block is served; the other keeps waiting for the next entry.
    assert first.result(timeout=10) == streams(protocol, ("s", [["1-0", ["f", "v"]]]))
    wait_blocked(control, 1)
    r.execute_command("XADD", "s", "2-0", "f", "w")
    assert second.result(timeout=10) == streams(protocol, ("s", [["2-0", ["f", "w"]]]))
    assert pending(r, "s", "g") == [["1-0", "c1", 1], ["2-0", "c2", 1]]
    # NOACK while blocked: served, nothing pending.
    blocked = w1.send("XREADGROUP", "GROUP", "g", "c1", "BLOCK", 0, "NOACK", "STREAMS", "s", ">")
    wait_blocked(control, 1)
    r.execute_command("XADD", "s", "3-0", "f", "x")
    assert blocked.result(timeout=10) == streams(protocol, ("s", [["3-0", ["f", "x"]]]))
    assert r.execute_command("XPENDING", "s", "g")[0] == 2
    assert groups(r, "s")["g"]["last-delivered-id"] == "3-0"


def test_xreadgroup_block_ends_with_an_error_when_the_group_or_key_goes(server, waiter):
    control = server.client(decode_responses=True)
    r = raw(server, 2)
    w = waiter()
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    blocked = w.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", ">")
    wait_blocked(control, 1)
    assert r.execute_command("XGROUP", "DESTROY", "s", "g") == 1
    with pytest.raises(redis.ResponseError, match="^NOGROUP the consumer group this client was blocked on no longer exists$"):
        blocked.result(timeout=10)
    for end in (("DEL", "s"), ("SET", "s", "v")):
        r.execute_command("DEL", "s")
        r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        blocked = w.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", ">")
        wait_blocked(control, 1)
        r.execute_command(*end)
        with pytest.raises(redis.ResponseError, match="^UNBLOCKED the stream key no longer exists$"):
            blocked.result(timeout=10)
    wait_blocked(control, 0)


def test_xack(server):
    r = raw(server, 2)
    fill(r, "s", 1, 2, 3, 4, 5)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "COUNT", 3, "STREAMS", "s", ">")
    r.execute_command("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    assert r.execute_command("XACK", "s", "g", 1, 1, 3, 9) == 2, "a repeated or unknown id counts nothing"
    assert r.execute_command("XACK", "s", "g", 1) == 0
    # No such group or key: 0, not an error.
    assert r.execute_command("XACK", "s", "nog", 2) == 0 and r.execute_command("XACK", "missing", "g", 2) == 0
    # One bad id refuses the whole XACK.
    fails(r, INVALID_ID, "XACK", "s", "g", 2, "x")
    fails(r, "wrong number of arguments for 'xack' command", "XACK", "s", "g")
    assert pending(r, "s", "g") == [["2-0", "alice", 1], ["4-0", "bob", 1], ["5-0", "bob", 1]]
    # Acknowledged entries stay in the stream; XINFO CONSUMERS counts each one's pending.
    assert r.execute_command("XLEN", "s") == 5
    got = {c["name"]: c["pending"] for c in map(fields, r.execute_command("XINFO", "CONSUMERS", "s", "g"))}
    assert got == {"alice": 1, "bob": 2}


@pytest.mark.parametrize("protocol", [2, 3])
def test_xpending_summary(server, protocol):
    r = raw(server, protocol)
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    assert r.execute_command("XPENDING", "s", "g") == [0, None, None, None]
    assert wire(server, protocol, "XPENDING", "s", "g") == (
        b"*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n" if protocol == 2 else b"*4\r\n:0\r\n_\r\n_\r\n_\r\n"
    )
    assert r.execute_command("XPENDING", "s", "g", "-", "+", 10) == []
    fill(r, "s", 1, 2, 3)
    r.execute_command("XREADGROUP", "GROUP", "g", "bob", "COUNT", 1, "STREAMS", "s", ">")
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    # Consumers in name order, and their counts are bulk strings, in RESP3 too.
    assert r.execute_command("XPENDING", "s", "g") == [3, "1-0", "3-0", [["alice", "2"], ["bob", "1"]]]
    assert wire(server, protocol, "XPENDING", "s", "g").endswith(b"*2\r\n$5\r\nalice\r\n$1\r\n2\r\n*2\r\n$3\r\nbob\r\n$1\r\n1\r\n")
    for command, text in (
        (("XPENDING", "s", "nog"), "NOGROUP No such key 's' or consumer group 'nog'"),
        (("XPENDING", "missing", "g"), "NOGROUP No such key 'missing' or consumer group 'g'"),
        (("XPENDING", "missing", "g", "-", "+", 10), "NOGROUP No such key 'missing' or consumer group 'g'"),
    ):
        fails(r, text, *command)


def test_xpending_extended_form(server):
    r = raw(server, 2)
    fill(r, "s", 1, 2, 3, 4, 5)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "COUNT", 3, "STREAMS", "s", ">")
    r.execute_command("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    rows = r.execute_command("XPENDING", "s", "g", "-", "+", 10)
    assert [[i, consumer, count] for i, consumer, _, count in rows] == [
        ["1-0", "alice", 1], ["2-0", "alice", 1], ["3-0", "alice", 1], ["4-0", "bob", 1], ["5-0", "bob", 1]
    ]
    assert all(isinstance(idle, int) and 0 <= idle < 10_000 for _, _, idle, _ in rows), rows
    ext = lambda *args: [row[0] for row in r.execute_command("XPENDING", "s", "g", *args)]  # noqa: E731
    assert ext("-", "+", 10, "bob") == ["4-0", "5-0"]
    assert ext("-", "+", 10, "nobody") == []
    assert ext("(1-0", "(5-0", 10) == ["2-0", "3-0", "4-0"]
    assert ext("(1", "(5", 10) == ["2-0", "3-0", "4-0", "5-0"], "(5 excludes 5-<max> only"
    assert ext(2, "+", 2) == ["2-0", "3-0"]
    assert ext(5, 1, 10) == [] and ext("-", "(0", 10) == []
    assert ext("-", "+", 0) == [] and ext("-", "+", -1) == []
    # IDLE: only entries idle at least that long (-1 or 0: all of them).
    assert ext("IDLE", 0, "-", "+", 10, "alice") == ["1-0", "2-0", "3-0"]
    assert ext("IDLE", -1, "-", "+", 10) == ["1-0", "2-0", "3-0", "4-0", "5-0"]
    assert ext("IDLE", 3_600_000, "-", "+", 10) == []
    all_fail(r, [
        (("XPENDING", "s", "g", "-", "+"), "syntax error"),
        (("XPENDING", "s", "g", "-"), "syntax error"),
        (("XPENDING", "s", "g", "IDLE", 0), "syntax error"),
        (("XPENDING", "s", "g", "IDLE", "x", "-", "+", 10), "value is not an integer or out of range"),
        (("XPENDING", "s", "g", "-", "+", "x"), "value is not an integer or out of range"),
        (("XPENDING", "s", "g", "x", "+", 10), INVALID_ID),
        (("XPENDING", "s", "g", "-", "(0-0", 10), "invalid end ID for the interval"),
        (("XPENDING", "s", "g", f"({MAX_ID}", "+", 10), "invalid start ID for the interval"),
        (("XPENDING", "s", "nog", "-", "+", 10), "NOGROUP No such key 's' or consumer group 'nog'"),
    ])


def test_xclaim_moves_idle_entries_and_drops_deleted_ones(server):
    r = raw(server, 2)
    e = fill(r, "s", 1, 2, 3, 4, 5)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "COUNT", 4, "STREAMS", "s", ">")
    # Not idle long enough: nothing moves, and the claimer is not created.
    assert r.execute_command("XCLAIM", "s", "g", "bob", 3_600_000, 1, 2) == []
    assert [fields(c)["name"] for c in r.execute_command("XINFO", "CONSUMERS", "s", "g")] == ["alice"]
    # Claimed: bob owns them, their delivery count goes up; 9 is not pending and is skipped.
    assert r.execute_command("XCLAIM", "s", "g", "bob", 0, 1, 2, 9) == e[0:2]
    assert pending(r, "s", "g") == [["1-0", "bob", 2], ["2-0", "bob", 2], ["3-0", "alice", 1], ["4-0", "alice", 1]]
    assert all(idle < 10_000 for idle in idles(r, "s", "g").values())
    # Claiming one's own entry again still counts a delivery.
    assert r.execute_command("XCLAIM", "s", "g", "bob", 0, 2) == e[1:2]
    # An entry deleted from the stream is not returned, and leaves the PEL.
    r.execute_command("XDEL", "s", 4)
    assert r.execute_command("XCLAIM", "s", "g", "bob", 0, 4, 3) == e[2:3]
    assert pending(r, "s", "g") == [["1-0", "bob", 2], ["2-0", "bob", 3], ["3-0", "bob", 2]]
    got = {c["name"]: c["pending"] for c in map(fields, r.execute_command("XINFO", "CONSUMERS", "s", "g"))}
    assert got == {"alice": 0, "bob": 3}, "alice stays, with nothing pending"
    # 5 was never delivered: not claimable without FORCE.
    assert r.execute_command("XCLAIM", "s", "g", "bob", 0, 5) == []


def test_xclaim_options(server):
    r = raw(server, 2)
    e = fill(r, "s", 1, 2, 3, 4, 5)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "COUNT", 3, "STREAMS", "s", ">")
    # JUSTID answers ids and does not count a delivery.
    assert r.execute_command("XCLAIM", "s", "g", "bob", 0, 1, "JUSTID") == ["1-0"]
    # RETRYCOUNT sets the count; IDLE sets the idle time.
    assert r.execute_command("XCLAIM", "s", "g", "carol", 0, 2, "RETRYCOUNT", 7, "IDLE", 5000) == e[1:2]
    assert pending(r, "s", "g", "carol") == [["2-0", "carol", 7]]
    assert 5000 <= idles(r, "s", "g")["2-0"] < 15_000
    # TIME is the last delivery as a unix time in ms.
    past = int(time.time() * 1000) - 60_000
    assert r.execute_command("XCLAIM", "s", "g", "carol", 0, 3, "TIME", past, "JUSTID") == ["3-0"]
    assert 60_000 <= idles(r, "s", "g")["3-0"] < 70_000
    # min-idle-time sees the IDLE just set: 2-0 is idle >= 5 s, 1-0 is not.
    assert r.execute_command("XCLAIM", "s", "g", "dave", 4000, 1, 2, "JUSTID") == ["2-0"]
    # FORCE creates a pending entry for an id in the stream that nobody had (never for a missing
    # id), and this claim counts on top of its creation: 2 deliveries, not 1.
    assert r.execute_command("XCLAIM", "s", "g", "dave", 0, 5, 99, "FORCE") == e[4:5]
    assert pending(r, "s", "g") == [["1-0", "bob", 1], ["2-0", "dave", 7], ["3-0", "carol", 1], ["5-0", "dave", 2]]
    # LASTID moves the group's last delivered id forward only.
    r.execute_command("XCLAIM", "s", "g", "dave", 0, 5, "LASTID", 99, "JUSTID")
    assert groups(r, "s")["g"]["last-delivered-id"] == "99-0"
    r.execute_command("XCLAIM", "s", "g", "dave", 0, 5, "LASTID", 1, "JUSTID")
    assert groups(r, "s")["g"]["last-delivered-id"] == "99-0"
    # A negative min-idle-time or RETRYCOUNT is accepted (no minimum, count not set).
    assert r.execute_command("XCLAIM", "s", "g", "bob", -1, 1, "RETRYCOUNT", -1) == e[0:1]
    assert pending(r, "s", "g", "bob") == [["1-0", "bob", 2]]


def test_xclaim_errors(server):
    r = raw(server, 2)
    fill(r, "s", 1)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    all_fail(r, [
        # The ids end at the first word that is not one: the rest are options.
        (("XCLAIM", "s", "g", "c", 0, "x"), "Unrecognized XCLAIM option 'x'"),
        (("XCLAIM", "s", "g", "c", 0, 1, "FOO"), "Unrecognized XCLAIM option 'FOO'"),
        (("XCLAIM", "s", "g", "c", "x", 1), "Invalid min-idle-time argument for XCLAIM"),
        (("XCLAIM", "s", "g", "c", 0, 1, "IDLE", "x"), "Invalid IDLE option argument for XCLAIM"),
        (("XCLAIM", "s", "g", "c", 0, 1, "RETRYCOUNT", "x"), "Invalid RETRYCOUNT option argument for XCLAIM"),
        (("XCLAIM", "s", "g", "c", 0, 1, "LASTID", "x"), INVALID_ID),
        (("XCLAIM", "s", "nog", "c", 0, 1), "NOGROUP No such key 's' or consumer group 'nog'"),
        (("XCLAIM", "missing", "g", "c", 0, 1), "NOGROUP No such key 'missing' or consumer group 'g'"),
        (("XCLAIM", "s", "g", "c"), "wrong number of arguments for 'xclaim' command"),
    ])
    assert pending(r, "s", "g") == [["1-0", "alice", 1]], "a refused XCLAIM moves nothing"


@pytest.mark.parametrize("protocol", [2, 3])
def test_xautoclaim(server, protocol):
    r = raw(server, protocol)
    e = fill(r, "s", 1, 2, 3, 4, 5)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    r.execute_command("XDEL", "s", 2, 4)
    # [next cursor, claimed entries, ids deleted from the stream]. Deleted ids are dropped
    # from the PEL even when nothing is idle enough.
    assert r.execute_command("XAUTOCLAIM", "s", "g", "bob", 3_600_000, 0) == ["0-0", [], ["2-0", "4-0"]]
    assert pending(r, "s", "g") == [["1-0", "alice", 1], ["3-0", "alice", 1], ["5-0", "alice", 1]]
    # COUNT: the cursor is where the next call starts; 0-0 when the scan is done.
    assert r.execute_command("XAUTOCLAIM", "s", "g", "bob", 0, 0, "COUNT", 2) == ["5-0", [e[0], e[2]], []]
    assert pending(r, "s", "g") == [["1-0", "bob", 2], ["3-0", "bob", 2], ["5-0", "alice", 1]]
    assert r.execute_command("XAUTOCLAIM", "s", "g", "bob", 0, "3", "COUNT", 2) == ["0-0", [e[2], e[4]], []]
    # JUSTID: ids only, no delivery counted.
    assert r.execute_command("XAUTOCLAIM", "s", "g", "carol", 0, "-", "JUSTID") == ["0-0", ["1-0", "3-0", "5-0"], []]
    assert pending(r, "s", "g") == [["1-0", "carol", 2], ["3-0", "carol", 3], ["5-0", "carol", 2]]
    # The start may be exclusive; "+" finds nothing.
    assert r.execute_command("XAUTOCLAIM", "s", "g", "carol", 0, "(1", "JUSTID") == ["0-0", ["3-0", "5-0"], []]
    assert r.execute_command("XAUTOCLAIM", "s", "g", "carol", 0, "+") == ["0-0", [], []]
    assert r.execute_command("XAUTOCLAIM", "s", "g", "carol", -1, 0, "COUNT", 1, "JUSTID") == ["3-0", ["1-0"], []]
    # Deleted entries use up the COUNT too.
    r.execute_command("XDEL", "s", 1)
    assert r.execute_command("XAUTOCLAIM", "s", "g", "dave", 0, 0, "COUNT", 1) == ["3-0", [], ["1-0"]]
    # Not created when nothing was claimed.
    assert "dave" not in [fields(c)["name"] for c in r.execute_command("XINFO", "CONSUMERS", "s", "g")]
    assert wire(server, protocol, "XAUTOCLAIM", "s", "g", "dave", 3_600_000, 0) == b"*3\r\n$3\r\n0-0\r\n*0\r\n*0\r\n"


def test_xautoclaim_errors(server):
    r = raw(server, 2)
    fill(r, "s", 1)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    all_fail(r, [
        (("XAUTOCLAIM", "s", "g", "c", 0, 0, "COUNT", 0), "COUNT must be > 0"),
        (("XAUTOCLAIM", "s", "g", "c", 0, 0, "COUNT", -1), "COUNT must be > 0"),
        (("XAUTOCLAIM", "s", "g", "c", 0, 0, "COUNT", "x"), "COUNT must be > 0"),
        (("XAUTOCLAIM", "s", "g", "c", 0, 0, "FOO"), "syntax error"),
        (("XAUTOCLAIM", "s", "g", "c", 0, "x"), INVALID_ID),
        (("XAUTOCLAIM", "s", "g", "c", "x", 0), "Invalid min-idle-time argument for XAUTOCLAIM"),
        (("XAUTOCLAIM", "s", "nog", "c", 0, 0), "NOGROUP No such key 's' or consumer group 'nog'"),
        (("XAUTOCLAIM", "missing", "g", "c", 0, 0), "NOGROUP No such key 'missing' or consumer group 'g'"),
        (("XAUTOCLAIM", "s", "g", "c", 0), "wrong number of arguments for 'xautoclaim' command"),
    ])


# XINFO


@pytest.mark.parametrize("protocol", [2, 3])
def test_xinfo_stream(server, protocol):
    r = raw(server, protocol)
    fill(r, "s", 1, 2, 3, 4)
    r.execute_command("XDEL", "s", 2)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    reply = r.execute_command("XINFO", "STREAM", "s")
    assert isinstance(reply, list if protocol == 2 else dict)
    info = fields(reply)
    assert list(info) == [
        "length", "radix-tree-keys", "radix-tree-nodes", "last-generated-id", "max-deleted-entry-id",
        "entries-added", "recorded-first-entry-id", "groups", "first-entry", "last-entry",
    ]
    assert isinstance(info.pop("radix-tree-keys"), int) and isinstance(info.pop("radix-tree-nodes"), int)
    assert info == {
        "length": 3, "last-generated-id": "4-0", "max-deleted-entry-id": "2-0", "entries-added": 4,
        "recorded-first-entry-id": "1-0", "groups": 1, "first-entry": ["1-0", ["n", "1"]], "last-entry": ["4-0", ["n", "4"]],
    }
    # An empty stream: null first and last entries (a null bulk string in RESP2).
    r.execute_command("XADD", "e", "MAXLEN", 0, "1-0", "a", 1)
    assert wire(server, protocol, "XINFO", "STREAM", "e").endswith(
        b"$11\r\nfirst-entry\r\n$-1\r\n$10\r\nlast-entry\r\n$-1\r\n" if protocol == 2
        else b"$11\r\nfirst-entry\r\n_\r\n$10\r\nlast-entry\r\n_\r\n"
    )


@pytest.mark.parametrize("protocol", [2, 3])
def test_xinfo_stream_full(server, protocol):
    r = raw(server, protocol)
    before = int(time.time() * 1000)
    fill(r, "s", *range(1, 16))
    r.execute_command("XDEL", "s", 2)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "COUNT", 2, "STREAMS", "s", ">")
    r.execute_command("XGROUP", "CREATECONSUMER", "s", "g", "bob")
    full = fields(r.execute_command("XINFO", "STREAM", "s", "FULL"))
    after = int(time.time() * 1000)
    assert list(full) == [
        "length", "radix-tree-keys", "radix-tree-nodes", "last-generated-id", "max-deleted-entry-id",
        "entries-added", "recorded-first-entry-id", "entries", "groups",
    ]
    assert ids(full["entries"]) == ["1-0"] + [f"{n}-0" for n in range(3, 12)], "10 entries unless COUNT says"
    group = fields(full["groups"][0])
    assert list(group) == ["name", "last-delivered-id", "entries-read", "lag", "pel-count", "pending", "consumers"]
    assert (group["name"], group["last-delivered-id"], group["pel-count"]) == ("g", "3-0", 2)
    assert [[i, c, n] for i, c, _, n in group["pending"]] == [["1-0", "alice", 1], ["3-0", "alice", 1]]
    alice, bob = map(fields, group["consumers"])
    assert list(alice) == ["name", "seen-time", "pel-count", "pending"]
    assert (alice["name"], alice["pel-count"], [[i, n] for i, _, n in alice["pending"]]) == ("alice", 2, [["1-0", 1], ["3-0", 1]])
    assert (bob["name"], bob["pel-count"], bob["pending"]) == ("bob", 0, [])
    # seen-time and delivery times are unix times in ms.
    times = [alice["seen-time"], bob["seen-time"]] + [row[2] for row in group["pending"]] + [row[1] for row in alice["pending"]]
    assert all(isinstance(t, int) and before - 1000 <= t <= after + 1000 for t in times), times
    # COUNT caps the entries and each PEL listed (not pel-count); 0 means all, negative the default 10.
    full = fields(r.execute_command("XINFO", "STREAM", "s", "FULL", "COUNT", 1))
    group = fields(full["groups"][0])
    assert ids(full["entries"]) == ["1-0"] and len(group["pending"]) == 1 and group["pel-count"] == 2
    assert len(fields(group["consumers"][0])["pending"]) == 1
    assert len(fields(r.execute_command("XINFO", "STREAM", "s", "FULL", "COUNT", 0))["entries"]) == 14
    assert len(fields(r.execute_command("XINFO", "STREAM", "s", "FULL", "COUNT", -1))["entries"]) == 10, "negative: the default"


def test_xinfo_groups_entries_read_and_lag(server):
    r = raw(server, 2)
    fill(r, "s", 1, 2, 3, 4, 5)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    r.execute_command("XGROUP", "CREATE", "s", "late", "$")
    state = lambda name: (lambda g: (g["entries-read"], g["lag"]))(groups(r, "s")[name])  # noqa: E731
    assert state("g") == (None, 5) and state("late") == (None, 0)
    # ENTRIESREAD is trusted as given, even past entries-added.
    r.execute_command("XGROUP", "CREATE", "s", "odd", 2, "ENTRIESREAD", 10)
    assert state("odd") == (10, -5)
    r.execute_command("XREADGROUP", "GROUP", "g", "c", "COUNT", 2, "STREAMS", "s", ">")
    assert state("g") == (2, 3)
    r.execute_command("XADD", "s", "6-0", "n", 6)
    assert state("g") == (2, 4)
    assert state("late") == (None, None), "an unknown counter in the middle of the stream: no lag"
    # A deleted entry not yet read makes the lag unknown...
    r.execute_command("XDEL", "s", 4)
    assert state("g") == (2, None)
    r.execute_command("XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", ">")
    assert state("g") == (None, None)
    # ...until the group has read to the end, which is entries-added.
    r.execute_command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert state("g") == (6, 0)
    # Deletions behind the group do not matter.
    r.execute_command("XDEL", "s", 1)
    r.execute_command("XADD", "s", "7-0", "n", 7)
    assert state("g") == (6, 1)
    r.execute_command("XREADGROUP", "GROUP", "late", "c", "STREAMS", "s", ">")
    assert state("late") == (7, 0)
    assert state("odd") == (10, None), "a deleted entry ahead of it"


@pytest.mark.parametrize("protocol", [2, 3])
def test_xinfo_consumers(server, protocol):
    r = raw(server, protocol)
    fill(r, "s", 1, 2, 3)
    r.execute_command("XGROUP", "CREATE", "s", "g", 0)
    r.execute_command("XREADGROUP", "GROUP", "g", "bob", "COUNT", 2, "STREAMS", "s", ">")
    r.execute_command("XGROUP", "CREATECONSUMER", "s", "g", "alice")
    reply = r.execute_command("XINFO", "CONSUMERS", "s", "g")
    assert all(isinstance(c, list if protocol == 2 else dict) for c in reply)
    consumers = [fields(c) for c in reply]
    assert [list(c) for c in consumers] == [["name", "pending", "idle"]] * 2
    assert [(c["name"], c["pending"]) for c in consumers] == [("alice", 0), ("bob", 2)]
    assert all(isinstance(c["idle"], int) and 0 <= c["idle"] < 10_000 for c in consumers)
    all_fail(r, [
        (("XINFO", "STREAM", "missing"), "no such key"),
        (("XINFO", "GROUPS", "missing"), "no such key"),
        (("XINFO", "CONSUMERS", "missing", "g"), "no such key"),
        (("XINFO", "CONSUMERS", "s", "nog"), "NOGROUP No such consumer group 'nog' for key name 's'"),
        (("XINFO", "STREAM", "s", "FOO"), "unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP."),
        (("XINFO", "STREAM", "s", "FULL", "FOO"), "unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP."),
        (("XINFO", "STREAM", "s", "FULL", "COUNT", "x"), "value is not an integer or out of range"),
        (("XINFO", "FOO", "s"), "unknown subcommand 'FOO'. Try XINFO HELP."),
        (("XINFO", "STREAM"), "wrong number of arguments for 'xinfo|stream' command"),
        (("XINFO", "GROUPS", "s", "extra"), "wrong number of arguments for 'xinfo|groups' command"),
    ])


# The keyspace


def build_stream(r, key):
    """A stream with a bit of everything: deletions, a trimmed head, two groups, pending
    entries for two consumers, an acknowledged one, a claimed one, an idle consumer."""
    fill(r, key, *range(1, 21))
    r.execute_command("XADD", key, "21-0", "multi", "a", "field", "b", "", "")
    r.execute_command("XDEL", key, 5, 7, 21)
    r.execute_command("XTRIM", key, "MINID", 3)
    r.execute_command("XGROUP", "CREATE", key, "g", 0)
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "COUNT", 4, "STREAMS", key, ">")
    r.execute_command("XREADGROUP", "GROUP", "g", "bob", "COUNT", 3, "STREAMS", key, ">")
    r.execute_command("XACK", key, "g", 4)
    r.execute_command("XCLAIM", key, "g", "bob", 0, 6, "RETRYCOUNT", 5)
    # A second delivery for alice's two, by claiming them again.
    r.execute_command("XCLAIM", key, "g", "alice", 0, 3, 8)
    r.execute_command("XGROUP", "CREATE", key, "tail", "$", "ENTRIESREAD", 21)
    r.execute_command("XGROUP", "CREATECONSUMER", key, "tail", "idle")
    r.execute_command("XSETID", key, "30-0", "ENTRIESADDED", 25, "MAXDELETEDID", "29-0")


def assert_built(state):
    """build_stream's stream is what it means to be, so comparing it checks all of that."""
    assert state["length"] == 16 and state["entries"][0][0] == "3-0"
    assert (state["last-generated-id"], state["entries-added"], state["max-deleted-entry-id"]) == ("30-0", 25, "29-0")
    g, tail = state["groups"]
    assert (g["name"], g["last-delivered-id"], g["pel-count"]) == ("g", "11-0", 6)
    assert g["pending"] == [
        ["3-0", "alice", 2], ["6-0", "bob", 5], ["8-0", "alice", 2], ["9-0", "bob", 1], ["10-0", "bob", 1], ["11-0", "bob", 1]
    ]
    assert [(c["name"], c["pel-count"], c["pending"]) for c in g["consumers"]] == [
        ("alice", 2, [["3-0", 2], ["8-0", 2]]),
        ("bob", 4, [["6-0", 5], ["9-0", 1], ["10-0", 1], ["11-0", 1]]),
    ]
    assert (tail["name"], tail["last-delivered-id"], tail["entries-read"], tail["pel-count"]) == ("tail", "21-0", 21, 0)
    assert [c["name"] for c in tail["consumers"]] == ["idle"]


def test_type_encoding_exists_and_del(server):
    r = raw(server, 2)
    build_stream(r, "s")
    assert r.execute_command("TYPE", "s") == "stream"
    assert r.execute_command("OBJECT", "ENCODING", "s") == "stream"
    assert r.execute_command("EXISTS", "s", "missing") == 1
    r.execute_command("XADD", "empty", "MAXLEN", 0, "1-0", "a", 1)
    assert r.execute_command("TYPE", "empty") == "stream" and r.execute_command("OBJECT", "ENCODING", "empty") == "stream"
    assert r.execute_command("DEL", "s", "empty") == 2 and r.execute_command("EXISTS", "s", "empty") == 0
    assert r.execute_command("TYPE", "s") == "none"
    # Gone with its groups: a new stream under the name starts from nothing.
    assert r.execute_command("XADD", "s", "1-0", "a", 1) == "1-0"
    assert r.execute_command("XINFO", "GROUPS", "s") == []
    # SET replaces a stream.
    r.execute_command("SET", "s", "v")
    assert r.execute_command("TYPE", "s") == "string"


def test_rename_and_copy(server):
    r = raw(server, 3)
    build_stream(r, "s")
    state = stream_state(r, "s")
    assert r.execute_command("RENAME", "s", "t") == "OK"
    assert r.execute_command("EXISTS", "s") == 0 and stream_state(r, "t") == state
    assert r.execute_command("COPY", "t", "u") == 1
    assert stream_state(r, "u") == state
    # The copy's groups are its own.
    r.execute_command("XADD", "u", "31-0", "n", 31)
    r.execute_command("XREADGROUP", "GROUP", "g", "carol", "STREAMS", "u", ">")
    r.execute_command("XACK", "u", "g", 3)
    assert stream_state(r, "t") == state and stream_state(r, "u") != state
    assert r.execute_command("COPY", "t", "u") == 0
    assert r.execute_command("COPY", "t", "u", "REPLACE") == 1 and stream_state(r, "u") == state
    # The renamed stream keeps its last id.
    fails(r, NOT_GREATER, "XADD", "t", "30-0", "a", 1)


def test_dump_and_restore_round_trip(server):
    r = raw(server, 3)
    build_stream(r, "s")
    state = stream_state(r, "s")
    assert_built(state)
    entries = r.execute_command("XRANGE", "s", "-", "+")
    binary = server.client()
    payload = binary.dump("s")
    assert isinstance(payload, bytes) and payload
    assert binary.restore("copy", 0, payload)
    assert r.execute_command("XRANGE", "copy", "-", "+") == entries
    assert stream_state(r, "copy") == state
    assert r.execute_command("TYPE", "copy") == "stream"
    with pytest.raises(redis.ResponseError, match="^BUSYKEY Target key name already exists.$"):
        binary.restore("copy", 0, payload)
    r.execute_command("DEL", "s")
    assert binary.restore("s", 0, payload) and stream_state(r, "s") == state
    # An empty stream keeps its last id through the round trip.
    r.execute_command("XADD", "e", "MAXLEN", 0, "9-0", "a", 1)
    assert binary.restore("e2", 0, binary.dump("e"))
    assert stream_state(r, "e2") == stream_state(r, "e") and xinfo_stream(r, "e2")["last-generated-id"] == "9-0"


def test_scan_type_stream(server):
    r = raw(server, 2)
    for i in range(30):
        r.execute_command("XADD", f"s{i}", "1-0", "a", 1)
        r.execute_command("SET", f"str{i}", "v")
        r.execute_command("RPUSH", f"l{i}", "v")
    r.execute_command("XADD", "empty", "MAXLEN", 0, "1-0", "a", 1)

    def scan(type_name):
        found, cursor = [], "0"
        while True:
            cursor, keys = r.execute_command("SCAN", cursor, "TYPE", type_name, "COUNT", 10)
            found += keys
            if cursor == "0":
                return sorted(found)

    streams_ = sorted([f"s{i}" for i in range(30)] + ["empty"])
    assert scan("stream") == streams_, "an empty stream is a stream too"
    assert scan("STREAM") == streams_, "the type name is case-insensitive"
    assert scan("string") == sorted(f"str{i}" for i in range(30))


def snapshot(r, key):
    """What a restart must not change: the entries, the length, and stream_state."""
    return {"XRANGE": r.execute_command("XRANGE", key, "-", "+"), "XLEN": r.execute_command("XLEN", key), "full": stream_state(r, key)}


@pytest.mark.skipif(bool(REDIS_PORT), reason="restarts hotset with kill -9")
def test_streams_survive_kill_9(tmp_path):
    """Everything XINFO STREAM FULL shows but clocks must come back. That is what Redis keeps
    in an RDB file; its AOF keeps less (XREADGROUP is logged as XCLAIMs, without the group's
    entries-read, and a history read's delivery count is not logged at all)."""
    data = str(tmp_path / "data")
    server = Server(data, "--fsync", "always")
    r = raw(server, 3)
    build_stream(r, "s")
    # A history read counts a delivery for each entry it returns: that must be kept too.
    r.execute_command("XREADGROUP", "GROUP", "g", "bob", "COUNT", 2, "STREAMS", "s", 0)
    # A second stream with many entries, some consumed by a group and acked in bulk.
    fill(r, "big", *range(1, 3001))
    r.execute_command("XDEL", "big", *range(100, 200))
    r.execute_command("XTRIM", "big", "MAXLEN", 2500)
    r.execute_command("XGROUP", "CREATE", "big", "workers", 0)
    for worker in ("w1", "w2", "w3"):
        r.execute_command("XREADGROUP", "GROUP", "workers", worker, "COUNT", 300, "STREAMS", "big", ">")
    r.execute_command("XACK", "big", "workers", *range(600, 900))
    r.execute_command("XGROUP", "DELCONSUMER", "big", "workers", "w3")
    # One emptied but kept, one whose group was destroyed, one deleted.
    r.execute_command("XADD", "empty", "MAXLEN", 0, "5-0", "a", 1)
    r.execute_command("XGROUP", "CREATE", "nogroups", "gone", "$", "MKSTREAM")
    r.execute_command("XGROUP", "DESTROY", "nogroups", "gone")
    r.execute_command("XADD", "deleted", "1-0", "a", 1)
    r.execute_command("DEL", "deleted")
    keys = ("s", "big", "empty", "nogroups")
    expected = {key: snapshot(r, key) for key in keys}
    assert [row[2] for row in expected["s"]["full"]["groups"][0]["pending"]] == [2, 6, 2, 2, 1, 1]
    server.kill()
    server = Server(data)
    try:
        r = raw(server, 3)
        for key, state in expected.items():
            assert snapshot(r, key) == state, key
        assert r.execute_command("EXISTS", "deleted") == 0
        # And on after the restart: ids keep increasing, the groups carry on where they were.
        fails(r, NOT_GREATER, "XADD", "s", "30-0", "a", 1)
        assert int(r.execute_command("XADD", "s", "*", "a", 1).split("-")[0]) > 30, "the clock again"
        assert r.execute_command("XADD", "s", "99999999999999-0", "late", 1) == "99999999999999-0"
        assert r.execute_command("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")["s"][-1][0] == "99999999999999-0"
        r.execute_command("XACK", "s", "g", 3)
        r.execute_command("XREADGROUP", "GROUP", "workers", "w1", "COUNT", 10, "STREAMS", "big", ">")
        expected = {key: snapshot(r, key) for key in keys}
    finally:
        server.kill()
    server = Server(data)
    try:
        r = raw(server, 3)
        for key, state in expected.items():
            assert snapshot(r, key) == state, key
    finally:
        server.stop()
