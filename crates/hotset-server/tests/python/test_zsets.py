"""redis-py against the real hotset binary: sorted sets (the ZADD family), their replies in
RESP2 and RESP3, Redis 7.0's error texts and score formatting, the blocking pops, and a
sorted set's state across kill -9.

Each test starts its own server (see test_redis_py.Server). With HOTSET_TEST_REDIS_PORT set,
the tests run instead against a redis-server already listening on that port (flushed at
the start of each test), which is how the expected values were checked to be Redis'
behaviour (7.0.15); the kill -9 test is skipped then.

Most checks go through `raw`, a client without redis-py's reply callbacks, so a reply is
what came off the wire: in RESP2 a score is the bulk string Redis formats with %.17g
("1.1000000000000001"), in RESP3 a double (`double` builds the expected value of either).
"""

import pytest
import redis

from peer import REDIS_PORT, raw, server, wire  # noqa: F401 (server: a fixture)
from test_redis_py import Server

WRONGTYPE = "^WRONGTYPE Operation against a key holding the wrong kind of value$"


class Double(float):
    """Equal only to a float: RESP3 must send a double (`,1`), not an integer or a string."""

    def __eq__(self, other):
        return isinstance(other, float) and float(self) == other

    __hash__ = float.__hash__


def double(protocol, text):
    """A score as `raw` reads it: the bulk string `text` in RESP2, a double in RESP3."""
    return text if protocol == 2 else Double(text)


def wait_blocked(r, count):
    """Polls INFO until `count` clients are blocked (the server's own count); fails after 10 s."""
    import time

    deadline = time.monotonic() + 10
    while int(r.info("clients")["blocked_clients"]) != count:
        assert time.monotonic() < deadline, f"never {count} blocked clients"


def test_zadd_options_and_what_they_count(server):
    r = raw(server, 2)
    assert r.execute_command("ZADD", "z", 1, "a", 2, "b") == 2
    assert r.execute_command("ZADD", "z", 5, "a", 3, "c") == 1, "without CH only additions count"
    assert r.execute_command("ZADD", "z", "CH", 5, "a", 6, "b", 4, "d") == 2, "CH: an unchanged score is no change"
    assert r.execute_command("ZADD", "z", "NX", 100, "a", 7, "e") == 1
    assert r.execute_command("ZADD", "z", "XX", "CH", 8, "e", 1, "new") == 1
    assert r.execute_command("ZSCORE", "z", "new") is None, "XX adds nothing"
    assert r.execute_command("ZRANGE", "z", 0, -1, "WITHSCORES") == ["c", "3", "d", "4", "a", "5", "b", "6", "e", "8"]
    # GT and LT only move a score up (down), and still add new members unless XX.
    assert r.execute_command("ZADD", "z", "GT", "CH", 9, "a", 0, "b", 1, "f") == 2
    assert r.execute_command("ZADD", "z", "LT", "CH", 0, "c", 99, "d") == 1
    assert r.execute_command("ZADD", "z", "XX", "GT", "CH", 10, "a", 10, "g") == 1
    assert r.execute_command("ZADD", "z", "NX", "CH", 10, "a", 5, "h") == 1
    assert r.execute_command("ZRANGE", "z", 0, -1, "WITHSCORES") == [
        "c", "0", "f", "1", "d", "4", "h", "5", "b", "6", "e", "8", "a", "10"
    ]
    # Equal scores order by member, bytewise ("B" < "a" < "aa", "" first).
    assert r.execute_command("ZADD", "t", 1, "a", 1, "B", 1, "b", 1, "aa", 1, "") == 5
    assert r.execute_command("ZRANGE", "t", 0, -1) == ["", "B", "a", "aa", "b"]
    # Several pairs for the same member: the last one wins and counts once.
    assert r.execute_command("ZADD", "dup", 1, "m", 2, "m") == 1
    assert r.execute_command("ZSCORE", "dup", "m") == "2"


def test_zadd_and_zincrby_errors(server):
    r = raw(server, 2)
    r.execute_command("ZADD", "z", 1, "a")
    errors = [
        (("ZADD", "z", "NX", "XX", 1, "a"), "XX and NX options at the same time are not compatible"),
        (("ZADD", "z", "NX", "XX", "INCR", 1, "a", 2, "b"), "XX and NX options at the same time are not compatible"),
        (("ZADD", "z", "GT", "LT", 1, "a"), "GT, LT, and/or NX options at the same time are not compatible"),
        (("ZADD", "z", "NX", "GT", 1, "a"), "GT, LT, and/or NX options at the same time are not compatible"),
        (("ZADD", "z", "LT", "NX", 1, "a"), "GT, LT, and/or NX options at the same time are not compatible"),
        (("ZADD", "z", 1, "a", 2), "syntax error"),
        (("ZADD", "z", "GT", "NX", 1), "syntax error"),
        (("ZADD", "z", "FOO", 1, "a"), "syntax error"),
        (("ZADD", "z", "INCR", 1), "syntax error"),
        (("ZADD", "z"), "wrong number of arguments for 'zadd' command"),
        (("ZADD", "z", 1), "wrong number of arguments for 'zadd' command"),
        (("ZADD", "z", "abc", "a"), "value is not a valid float"),
        (("ZADD", "z", "nan", "a"), "value is not a valid float"),
        (("ZADD", "z", " 1", "a"), "value is not a valid float"),
        (("ZADD", "z", "1e400", "a"), "value is not a valid float"),
        (("ZADD", "z", 1, "ok", "x", "bad"), "value is not a valid float"),
        (("ZADD", "z", "INCR", 1, "a", 2, "b"), "INCR option supports a single increment-element pair"),
        (("ZADD", "z", "GT", "XX", "INCR", 1, "a", 2, "b"), "INCR option supports a single increment-element pair"),
        (("ZINCRBY", "z", "x", "a"), "value is not a valid float"),
        (("ZINCRBY", "z", 1), "wrong number of arguments for 'zincrby' command"),
    ]
    for command, text in errors:
        with pytest.raises(redis.ResponseError, match=f"^{text}$"):
            r.execute_command(*command)
    assert r.execute_command("ZRANGE", "z", 0, -1, "WITHSCORES") == ["a", "1"], "a failed ZADD changes nothing"
    # inf + -inf is NaN: refused, and the score stays.
    assert r.execute_command("ZADD", "z", "INCR", "inf", "a") == "inf"
    with pytest.raises(redis.ResponseError, match=r"^resulting score is not a number \(NaN\)$"):
        r.execute_command("ZADD", "z", "INCR", "-inf", "a")
    with pytest.raises(redis.ResponseError, match=r"^resulting score is not a number \(NaN\)$"):
        r.execute_command("ZINCRBY", "z", "-inf", "a")
    assert r.execute_command("ZSCORE", "z", "a") == "inf"


@pytest.mark.parametrize("protocol", [2, 3])
def test_scores_are_doubles_formatted_as_redis_does(server, protocol):
    r = raw(server, protocol)
    d = lambda text: double(protocol, text)  # noqa: E731
    scores = {
        "a": "1.1", "b": "inf", "c": "-inf", "d": "+inf", "e": "12345678901234567890", "f": "9007199254740993",
        "g": "1e17", "h": "123456789012345678", "i": "0.5", "j": "-2.5", "k": "1e-5", "l": "1E2", "m": "+5",
        "n": ".5", "o": "3.0", "p": "0.1", "q": "-Infinity",
    }
    assert r.execute_command("ZADD", "z", *[x for m, s in scores.items() for x in (s, m)]) == len(scores)
    expected = {
        "a": "1.1000000000000001", "b": "inf", "c": "-inf", "d": "inf", "e": "1.2345678901234567e+19",
        "f": "9007199254740992", "g": "1e+17", "h": "1.2345678901234568e+17", "i": "0.5", "j": "-2.5",
        "k": "1.0000000000000001e-05", "l": "100", "m": "5", "n": "0.5", "o": "3", "p": "0.10000000000000001",
        "q": "-inf",
    }
    for member, text in expected.items():
        assert r.execute_command("ZSCORE", "z", member) == d(text), member
    assert r.execute_command("ZMSCORE", "z", "a", "nope", "b") == [d("1.1000000000000001"), None, d("inf")]
    assert r.execute_command("ZMSCORE", "missing", "a") == [None]
    assert r.execute_command("ZSCORE", "missing", "a") is None
    assert r.execute_command("ZINCRBY", "z", "0.2", "p") == d("0.30000000000000004")
    assert r.execute_command("ZINCRBY", "z", 2, "new") == d("2")
    # ZADD INCR answers the new score, or null when NX/XX/GT/LT stopped it; CH changes nothing.
    assert r.execute_command("ZADD", "z", "INCR", 1, "new") == d("3")
    assert r.execute_command("ZADD", "z", "CH", "INCR", 1, "new") == d("4")
    assert r.execute_command("ZADD", "z", "NX", "INCR", 1, "new") is None
    assert r.execute_command("ZADD", "z", "XX", "INCR", 1, "absent") is None
    assert r.execute_command("ZADD", "z", "GT", "INCR", -1, "new") is None
    assert r.execute_command("ZSCORE", "z", "new") == d("4")
    # -0 is a zero: it sorts and ranges as 0 (its printed sign is not asserted).
    r.execute_command("ZADD", "zero", "-0", "neg", 0, "pos", "-1e-300", "tiny")
    assert float(r.execute_command("ZSCORE", "zero", "neg")) == 0
    assert r.execute_command("ZRANGEBYSCORE", "zero", 0, 0) == ["neg", "pos"]
    assert r.execute_command("ZRANGEBYSCORE", "zero", "(-0", 1) == []
    # The bytes themselves: RESP2 a bulk string, RESP3 a double, both %.17g.
    if protocol == 2:
        assert wire(server, 2, "ZSCORE", "z", "a") == b"$18\r\n1.1000000000000001\r\n"
        assert wire(server, 2, "ZSCORE", "z", "c") == b"$4\r\n-inf\r\n"
    else:
        assert wire(server, 3, "ZSCORE", "z", "a") == b",1.1000000000000001\r\n"
        assert wire(server, 3, "ZSCORE", "z", "b") == b",inf\r\n"
        assert wire(server, 3, "ZSCORE", "z", "o") == b",3\r\n"
        assert wire(server, 3, "ZSCORE", "z", "nope") == b"_\r\n"
        assert wire(server, 3, "ZRANGE", "z", 0, 0, "WITHSCORES") == b"*1\r\n*2\r\n$1\r\nc\r\n,-inf\r\n"


@pytest.mark.parametrize("protocol", [2, 3])
def test_card_rank_count_and_rem(server, protocol):
    r = raw(server, protocol)
    r.execute_command("ZADD", "z", 1, "a", 2, "b", 2, "c", 3, "d", "inf", "e")
    assert r.execute_command("ZCARD", "z") == 5 and r.execute_command("ZCARD", "missing") == 0
    assert [r.execute_command("ZRANK", "z", m) for m in "abcde"] == [0, 1, 2, 3, 4]
    assert [r.execute_command("ZREVRANK", "z", m) for m in "abcde"] == [4, 3, 2, 1, 0]
    assert r.execute_command("ZRANK", "z", "nope") is None
    assert r.execute_command("ZREVRANK", "missing", "a") is None
    with pytest.raises(redis.ResponseError, match="^wrong number of arguments for 'zrank' command$"):
        r.execute_command("ZRANK", "z", "a", "WITHSCORE")  # 7.2 and later only
    assert r.execute_command("ZCOUNT", "z", "-inf", "+inf") == 5
    assert r.execute_command("ZCOUNT", "z", "(1", 2) == 2
    assert r.execute_command("ZCOUNT", "z", "(1", "(3") == 2
    assert r.execute_command("ZCOUNT", "z", 3, "inf") == 2
    assert r.execute_command("ZCOUNT", "z", 3, 1) == 0
    assert r.execute_command("ZCOUNT", "missing", "-inf", "inf") == 0
    with pytest.raises(redis.ResponseError, match="^min or max is not a float$"):
        r.execute_command("ZCOUNT", "z", "x", 3)
    r.execute_command("ZADD", "lex", 0, "a", 0, "b", 0, "c", 0, "d")
    assert r.execute_command("ZLEXCOUNT", "lex", "-", "+") == 4
    assert r.execute_command("ZLEXCOUNT", "lex", "[b", "+") == 3
    assert r.execute_command("ZLEXCOUNT", "lex", "(a", "(d") == 2
    assert r.execute_command("ZLEXCOUNT", "lex", "+", "-") == 0
    assert r.execute_command("ZLEXCOUNT", "missing", "-", "+") == 0
    with pytest.raises(redis.ResponseError, match="^min or max not valid string range item$"):
        r.execute_command("ZLEXCOUNT", "lex", "b", "+")
    assert r.execute_command("ZREM", "z", "a", "nope", "a") == 1
    assert r.execute_command("ZREM", "missing", "a") == 0
    assert r.execute_command("ZREM", "z", "b", "c", "d", "e") == 4
    assert r.execute_command("EXISTS", "z") == 0, "an emptied sorted set is deleted"


def test_zrange_by_rank_score_and_lex(server):
    r = raw(server, 2)
    r.execute_command("ZADD", "s", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
    zrange = lambda *args: r.execute_command("ZRANGE", "s", *args)  # noqa: E731
    assert zrange(0, -1) == ["a", "b", "c", "d", "e"]
    assert zrange(-2, -1) == ["d", "e"] and zrange(-100, 100) == ["a", "b", "c", "d", "e"]
    assert zrange(3, 1) == [] and zrange(5, 10) == []
    assert zrange(0, 1, "REV") == ["e", "d"]
    assert zrange(0, 0, "WITHSCORES", "WITHSCORES") == ["a", "1"]
    # BYSCORE: "(" excludes, -inf/+inf; REV takes max before min.
    assert zrange("(1", 3, "BYSCORE") == ["b", "c"]
    assert zrange("-inf", "(3", "BYSCORE", "WITHSCORES") == ["a", "1", "b", "2"]
    assert zrange("(2", "(2", "BYSCORE") == []
    assert zrange(5, 1, "BYSCORE", "REV", "LIMIT", 1, 2, "WITHSCORES") == ["d", "4", "c", "3"]
    assert zrange(1, 5, "BYSCORE", "REV") == []
    assert zrange("-inf", "+inf", "BYSCORE", "LIMIT", 1, -1) == ["b", "c", "d", "e"], "a negative count is all"
    assert zrange("-inf", "+inf", "BYSCORE", "LIMIT", -1, 2) == [], "a negative offset is nothing"
    assert zrange("-inf", "+inf", "BYSCORE", "LIMIT", 1, 0) == []
    assert r.execute_command("ZRANGEBYSCORE", "s", "-inf", "+inf", "LIMIT", 1, 2) == ["b", "c"]
    assert r.execute_command("ZRANGEBYSCORE", "s", "-inf", "+inf", "LIMIT", 0, 1, "WITHSCORES") == ["a", "1"]
    assert r.execute_command("ZRANGEBYSCORE", "s", 2, 1) == []
    assert r.execute_command("ZREVRANGEBYSCORE", "s", 5, "(3", "WITHSCORES") == ["e", "5", "d", "4"]
    assert r.execute_command("ZREVRANGEBYSCORE", "s", "-inf", "+inf") == []
    assert r.execute_command("ZREVRANGE", "s", 0, 0, "WITHSCORES") == ["e", "5"]
    # BYLEX (all scores equal): "[" includes, "(" excludes, "-" and "+" are the ends.
    r.execute_command("ZADD", "l", 0, "a", 0, "b", 0, "c", 0, "d", 0, "e")
    assert r.execute_command("ZRANGE", "l", "[a", "(c", "BYLEX") == ["a", "b"]
    assert r.execute_command("ZRANGE", "l", "(a", "[c", "BYLEX") == ["b", "c"]
    assert r.execute_command("ZRANGE", "l", "-", "+", "BYLEX", "LIMIT", 1, 2) == ["b", "c"]
    assert r.execute_command("ZRANGE", "l", "+", "-", "BYLEX", "REV") == ["e", "d", "c", "b", "a"]
    assert r.execute_command("ZRANGE", "l", "[c", "-", "BYLEX", "REV", "LIMIT", 0, 2) == ["c", "b"]
    assert r.execute_command("ZRANGE", "l", "-", "+", "BYLEX", "REV") == []
    assert r.execute_command("ZRANGEBYLEX", "l", "-", "+", "LIMIT", 1, 1) == ["b"]
    assert r.execute_command("ZRANGEBYLEX", "l", "[b", "[b") == ["b"]
    assert r.execute_command("ZREVRANGEBYLEX", "l", "+", "(c") == ["e", "d"]
    assert r.execute_command("ZREVRANGEBYLEX", "l", "[d", "[b", "LIMIT", 1, 5) == ["c", "b"]
    assert r.execute_command("ZRANGE", "missing", 0, -1) == []
    assert r.execute_command("ZRANGE", "missing", "-", "+", "BYLEX") == []


def test_zrange_errors(server):
    r = raw(server, 2)
    r.execute_command("ZADD", "s", 1, "a", 2, "b")
    errors = [
        (("ZRANGE", "s", 1, "abc", "BYSCORE"), "min or max is not a float"),
        (("ZRANGEBYSCORE", "s", "((1", 2), "min or max is not a float"),
        (("ZRANGEBYSCORE", "s", "nan", 2), "min or max is not a float"),
        (("ZREVRANGEBYSCORE", "s", "x", 2), "min or max is not a float"),
        (("ZRANGE", "s", "a", "c", "BYLEX"), "min or max not valid string range item"),
        (("ZRANGEBYLEX", "s", "-", "b"), "min or max not valid string range item"),
        (("ZREVRANGEBYLEX", "s", "", "-"), "min or max not valid string range item"),
        (("ZRANGE", "s", "a", "b"), "value is not an integer or out of range"),
        (("ZRANGE", "s", 0, -1, "LIMIT", 0, 1), "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"),
        (("ZRANGE", "s", "-", "+", "BYLEX", "WITHSCORES"), "syntax error, WITHSCORES not supported in combination with BYLEX"),
        (("ZRANGEBYLEX", "s", "-", "+", "WITHSCORES"), "syntax error, WITHSCORES not supported in combination with BYLEX"),
        (("ZRANGE", "s", 0, -1, "BYLEX", "BYSCORE"), "syntax error"),
        (("ZRANGE", "s", 0, -1, "LIMIT", 0), "syntax error"),
        (("ZRANGE", "s", 0, -1, "FOO"), "syntax error"),
        (("ZRANGEBYSCORE", "s", 1, 2, "LIMIT"), "syntax error"),
        (("ZRANGEBYLEX", "s", "-", "+", "LIMIT", 0), "syntax error"),
        (("ZRANGEBYSCORE", "s", 1, 2, "LIMIT", "x", 1), "value is not an integer or out of range"),
        (("ZRANGESTORE", "d", "s", 0, -1, "WITHSCORES"), "syntax error"),
    ]
    for command, text in errors:
        with pytest.raises(redis.ResponseError, match=f"^{text}$"):
            r.execute_command(*command)


@pytest.mark.parametrize("protocol", [2, 3])
def test_withscores_replies_are_flat_in_resp2_and_pairs_in_resp3(server, protocol):
    r = raw(server, protocol)
    d = lambda text: double(protocol, text)  # noqa: E731
    r.execute_command("ZADD", "s", "1.5", "a", 2, "b", "inf", "c")

    def scored(*pairs):
        if protocol == 2:
            return [x for pair in pairs for x in pair]
        return [list(pair) for pair in pairs]

    expected = scored(("a", d("1.5")), ("b", d("2")), ("c", d("inf")))
    assert r.execute_command("ZRANGE", "s", 0, -1, "WITHSCORES") == expected
    assert r.execute_command("ZRANGE", "s", "-inf", "+inf", "BYSCORE", "WITHSCORES") == expected
    assert r.execute_command("ZRANGEBYSCORE", "s", "-inf", "+inf", "WITHSCORES") == expected
    assert r.execute_command("ZREVRANGE", "s", 0, 0, "WITHSCORES") == scored(("c", d("inf")))
    assert r.execute_command("ZREVRANGEBYSCORE", "s", 2, "-inf", "WITHSCORES") == scored(("b", d("2")), ("a", d("1.5")))
    assert r.execute_command("ZUNION", 1, "s", "WITHSCORES") == expected
    assert r.execute_command("ZRANGE", "s", 0, -1) == ["a", "b", "c"]
    assert r.execute_command("ZRANGE", "s", 5, 6, "WITHSCORES") == []


def test_zrangestore(server):
    r = raw(server, 2)
    r.execute_command("ZADD", "s", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
    assert r.execute_command("ZRANGESTORE", "d", "s", 1, 3) == 3
    assert r.execute_command("ZRANGE", "d", 0, -1, "WITHSCORES") == ["b", "2", "c", "3", "d", "4"]
    assert r.execute_command("ZRANGESTORE", "d", "s", 4, 2, "BYSCORE", "REV", "LIMIT", 0, 2) == 2
    assert r.execute_command("ZRANGE", "d", 0, -1, "WITHSCORES") == ["c", "3", "d", "4"], "stored in score order"
    r.execute_command("ZADD", "l", 0, "a", 0, "b", 0, "c", 0, "d")
    assert r.execute_command("ZRANGESTORE", "d", "l", "[b", "[d", "BYLEX", "LIMIT", 1, 5) == 2
    assert r.execute_command("ZRANGE", "d", 0, -1, "WITHSCORES") == ["c", "0", "d", "0"]
    # An empty result deletes the destination, whatever it held.
    assert r.execute_command("ZRANGESTORE", "d", "s", 10, 20) == 0
    assert r.execute_command("EXISTS", "d") == 0
    r.execute_command("SET", "str", "v")
    assert r.execute_command("ZRANGESTORE", "str", "missing", 0, -1) == 0
    assert r.execute_command("EXISTS", "str") == 0
    # A destination of another type is replaced; a source of another type is an error.
    r.execute_command("RPUSH", "list", "x")
    assert r.execute_command("ZRANGESTORE", "list", "s", 0, 0) == 1
    assert r.execute_command("TYPE", "list") == "zset"
    r.execute_command("SET", "str", "v")
    with pytest.raises(redis.ResponseError, match=WRONGTYPE):
        r.execute_command("ZRANGESTORE", "d", "str", 0, -1)
    # Source and destination the same key.
    assert r.execute_command("ZRANGESTORE", "s", "s", 0, 1) == 2
    assert r.execute_command("ZRANGE", "s", 0, -1) == ["a", "b"]


def test_zremrange_by_rank_score_and_lex(server):
    r = raw(server, 2)
    r.execute_command("ZADD", "s", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e", 6, "f")
    assert r.execute_command("ZREMRANGEBYRANK", "s", 0, 0) == 1
    assert r.execute_command("ZREMRANGEBYRANK", "s", -1, -1) == 1
    assert r.execute_command("ZREMRANGEBYRANK", "s", 5, 10) == 0
    assert r.execute_command("ZREMRANGEBYSCORE", "s", "(2", 3) == 1
    assert r.execute_command("ZREMRANGEBYSCORE", "s", 10, "+inf") == 0
    assert r.execute_command("ZRANGE", "s", 0, -1) == ["b", "d", "e"]
    assert r.execute_command("ZREMRANGEBYSCORE", "s", "-inf", "+inf") == 3
    assert r.execute_command("EXISTS", "s") == 0
    r.execute_command("ZADD", "l", 0, "a", 0, "b", 0, "c", 0, "d")
    assert r.execute_command("ZREMRANGEBYLEX", "l", "-", "[b") == 2
    assert r.execute_command("ZREMRANGEBYLEX", "l", "(c", "+") == 1
    assert r.execute_command("ZRANGE", "l", 0, -1) == ["c"]
    assert r.execute_command("ZREMRANGEBYLEX", "l", "-", "+") == 1 and r.execute_command("EXISTS", "l") == 0
    for command in (("ZREMRANGEBYRANK", "missing", 0, -1), ("ZREMRANGEBYSCORE", "missing", 0, 1), ("ZREMRANGEBYLEX", "missing", "-", "+")):
        assert r.execute_command(*command) == 0
    for command, text in (
        (("ZREMRANGEBYSCORE", "s", "x", 1), "min or max is not a float"),
        (("ZREMRANGEBYLEX", "s", "x", "y"), "min or max not valid string range item"),
        (("ZREMRANGEBYRANK", "s", "a", 1), "value is not an integer or out of range"),
    ):
        with pytest.raises(redis.ResponseError, match=f"^{text}$"):
            r.execute_command(*command)


@pytest.mark.parametrize("protocol", [2, 3])
def test_zpop_and_zmpop_reply_shapes(server, protocol):
    r = raw(server, protocol)
    d = lambda text: double(protocol, text)  # noqa: E731
    r.execute_command("ZADD", "s", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e", 6, "f", 7, "g", 8, "h")
    # Without a count one flat pair, in both protocols.
    assert r.execute_command("ZPOPMIN", "s") == ["a", d("1")]
    assert r.execute_command("ZPOPMAX", "s") == ["h", d("8")]
    # With a count (even 1): flat in RESP2, pairs in RESP3.
    if protocol == 2:
        assert r.execute_command("ZPOPMIN", "s", 2) == ["b", "2", "c", "3"]
        assert r.execute_command("ZPOPMAX", "s", 1) == ["g", "7"]
    else:
        assert r.execute_command("ZPOPMIN", "s", 2) == [["b", d("2")], ["c", d("3")]]
        assert r.execute_command("ZPOPMAX", "s", 1) == [["g", d("7")]]
    assert r.execute_command("ZPOPMIN", "s", 0) == []
    assert r.execute_command("ZPOPMIN", "missing") == [] and r.execute_command("ZPOPMAX", "missing", 3) == []
    with pytest.raises(redis.ResponseError, match="^value is out of range, must be positive$"):
        r.execute_command("ZPOPMIN", "s", -1)
    # ZMPOP: the first non-empty key, then pairs in both protocols; null when all are empty.
    assert r.execute_command("ZMPOP", 2, "missing", "s", "MIN") == ["s", [["d", d("4")]]]
    assert r.execute_command("ZMPOP", 1, "s", "MAX", "COUNT", 5) == ["s", [["f", d("6")], ["e", d("5")]]]
    assert r.execute_command("EXISTS", "s") == 0, "popping the last member deletes the key"
    assert r.execute_command("ZMPOP", 2, "missing", "s", "MIN", "COUNT", 2) is None
    assert r.execute_command("ZPOPMAX", "s") == []
    r.execute_command("ZADD", "s", 1, "a")
    for command, text in (
        (("ZMPOP", 0, "s", "MIN"), "numkeys should be greater than 0"),
        (("ZMPOP", "x", "s", "MIN"), "numkeys should be greater than 0"),
        (("ZMPOP", 2, "s", "MIN"), "syntax error"),
        (("ZMPOP", 1, "s", "MIDDLE"), "syntax error"),
        (("ZMPOP", 1, "s", "MIN", "COUNT", 0), "count should be greater than 0"),
        (("ZMPOP", 1, "s", "MIN", "COUNT", -1), "count should be greater than 0"),
        (("ZMPOP", 1, "s", "MIN", "COUNT", 1, "COUNT", 2), "syntax error"),
        (("ZMPOP", 1, "s"), "wrong number of arguments for 'zmpop' command"),
    ):
        with pytest.raises(redis.ResponseError, match=f"^{text}$"):
            r.execute_command(*command)
    assert r.execute_command("ZCARD", "s") == 1, "a refused ZMPOP pops nothing"
    r.execute_command("RPUSH", "list", "x")
    with pytest.raises(redis.ResponseError, match=WRONGTYPE):
        r.execute_command("ZPOPMIN", "list")
    with pytest.raises(redis.ResponseError, match=WRONGTYPE):
        r.execute_command("ZMPOP", 2, "missing", "list", "MIN")


@pytest.mark.parametrize("protocol", [2, 3])
def test_zrandmember(server, protocol):
    r = raw(server, protocol)
    scores = {"a": "1", "b": "2.5", "c": "3"}
    r.execute_command("ZADD", "s", *[x for m, s in scores.items() for x in (s, m)])
    assert r.execute_command("ZRANDMEMBER", "s") in scores
    assert r.execute_command("ZRANDMEMBER", "missing") is None
    one = r.execute_command("ZRANDMEMBER", "s", 1)
    assert len(one) == 1 and one[0] in scores
    # A positive count: distinct members, at most all of them.
    for count in (2, 3, 10):
        got = r.execute_command("ZRANDMEMBER", "s", count)
        assert len(got) == min(count, 3) and len(set(got)) == len(got) and set(got) <= set(scores)
    # A negative count: exactly that many, repeats allowed.
    got = r.execute_command("ZRANDMEMBER", "s", -10)
    assert len(got) == 10 and set(got) <= set(scores)
    for count, size in ((2, 2), (5, 3), (-7, 7)):
        got = r.execute_command("ZRANDMEMBER", "s", count, "WITHSCORES")
        pairs = list(zip(got[::2], got[1::2])) if protocol == 2 else [tuple(p) for p in got]
        assert len(pairs) == size
        assert all(score == double(protocol, scores[m]) for m, score in pairs)
        if count > 0:
            assert len({m for m, _ in pairs}) == size
    assert r.execute_command("ZRANDMEMBER", "s", 0) == [] and r.execute_command("ZRANDMEMBER", "s", 0, "WITHSCORES") == []
    assert r.execute_command("ZRANDMEMBER", "missing", 2) == []
    assert r.execute_command("ZRANDMEMBER", "missing", -2, "WITHSCORES") == []
    for command, text in (
        (("ZRANDMEMBER", "s", "x"), "value is not an integer or out of range"),
        (("ZRANDMEMBER", "s", 1, "FOO"), "syntax error"),
        (("ZRANDMEMBER", "s", -9223372036854775807, "WITHSCORES"), "value is out of range"),
        (("ZRANDMEMBER", "s", -9223372036854775808), "value is out of range, value must between -9223372036854775807 and 9223372036854775807"),
    ):
        with pytest.raises(redis.ResponseError, match=f"^{text}$"):
            r.execute_command(*command)


@pytest.mark.parametrize("protocol", [2, 3])
def test_zscan_collects_every_member_with_its_score(server, protocol):
    r = raw(server, protocol)
    expected = {f"m{i}": str(i / 4).removesuffix(".0") for i in range(300)}
    r.execute_command("ZADD", "big", *[x for m, s in expected.items() for x in (s, m)])

    def scan(key, *options):
        cursor, found = "0", {}
        while True:
            cursor, flat = r.execute_command("ZSCAN", key, cursor, *options)
            # Scores come as strings in RESP3 too: a flat member, score list.
            assert all(isinstance(x, str) for x in flat)
            found.update(zip(flat[::2], flat[1::2]))
            if cursor == "0":
                return found

    assert scan("big", "COUNT", 10) == expected
    assert scan("big", "MATCH", "m1?", "COUNT", 7) == {f"m{i}": expected[f"m{i}"] for i in range(10, 20)}
    r.execute_command("ZADD", "small", "1.1", "a", 2, "ab", 3, "b")
    assert scan("small", "MATCH", "a*") == {"a": "1.1000000000000001", "ab": "2"}
    assert r.execute_command("ZSCAN", "missing", 0) == ["0", []]
    with pytest.raises(redis.ResponseError, match="^invalid cursor$"):
        r.execute_command("ZSCAN", "small", "x")


@pytest.mark.parametrize("protocol", [2, 3])
def test_zunion_zinter_zdiff(server, protocol):
    r = raw(server, protocol)
    d = lambda text: double(protocol, text)  # noqa: E731

    def scored(*pairs):
        return [x for pair in pairs for x in pair] if protocol == 2 else [list(pair) for pair in pairs]

    r.execute_command("ZADD", "a", 1, "x", 2, "y", 3, "z")
    r.execute_command("ZADD", "b", 10, "y", 20, "z", 30, "w")
    # Results in score order, then member order.
    assert r.execute_command("ZUNION", 2, "a", "b", "WITHSCORES") == scored(("x", d("1")), ("y", d("12")), ("z", d("23")), ("w", d("30")))
    assert r.execute_command("ZUNION", 2, "a", "b") == ["x", "y", "z", "w"]
    assert r.execute_command("ZUNION", 2, "a", "b", "WEIGHTS", 2, 1, "AGGREGATE", "MAX", "WITHSCORES") == scored(
        ("x", d("2")), ("y", d("10")), ("z", d("20")), ("w", d("30"))
    )
    assert r.execute_command("ZUNION", 2, "a", "b", "AGGREGATE", "MIN", "WITHSCORES") == scored(
        ("x", d("1")), ("y", d("2")), ("z", d("3")), ("w", d("30"))
    )
    assert r.execute_command("ZINTER", 2, "a", "b", "WITHSCORES") == scored(("y", d("12")), ("z", d("23")))
    assert r.execute_command("ZINTER", 2, "a", "b", "AGGREGATE", "MIN", "WITHSCORES") == scored(("y", d("2")), ("z", d("3")))
    assert r.execute_command("ZINTER", 2, "a", "b", "WEIGHTS", 1, -1, "WITHSCORES") == scored(("z", d("-17")), ("y", d("-8")))
    assert r.execute_command("ZINTER", 2, "a", "missing") == []
    assert r.execute_command("ZDIFF", 2, "a", "b", "WITHSCORES") == scored(("x", d("1")))
    assert r.execute_command("ZDIFF", 2, "b", "a") == ["w"]
    assert r.execute_command("ZDIFF", 2, "missing", "a") == []
    assert r.execute_command("ZDIFF", 1, "a") == ["x", "y", "z"]
    # inf + -inf aggregates to 0 (not NaN), and inf * weight 0 is 0.
    r.execute_command("ZADD", "pinf", "inf", "x", 1, "y")
    r.execute_command("ZADD", "ninf", "-inf", "x", 1, "y")
    assert r.execute_command("ZUNION", 2, "pinf", "ninf", "WITHSCORES") == scored(("x", d("0")), ("y", d("2")))
    assert r.execute_command("ZUNION", 2, "pinf", "ninf", "WEIGHTS", 0, 1, "WITHSCORES") == scored(("x", d("-inf")), ("y", d("1")))
    assert r.execute_command("ZINTER", 2, "pinf", "ninf", "AGGREGATE", "MAX", "WITHSCORES") == scored(("y", d("1")), ("x", d("inf")))
    # ZINTERCARD: LIMIT 0 is no limit.
    assert r.execute_command("ZINTERCARD", 2, "a", "b") == 2
    assert r.execute_command("ZINTERCARD", 2, "a", "b", "LIMIT", 1) == 1
    assert r.execute_command("ZINTERCARD", 2, "a", "b", "LIMIT", 0) == 2
    assert r.execute_command("ZINTERCARD", 2, "a", "missing") == 0


def test_store_forms_plain_sets_and_errors(server):
    r = raw(server, 2)
    r.execute_command("ZADD", "a", 1, "x", 2, "y", 3, "z")
    r.execute_command("ZADD", "b", 10, "y", 20, "z", 30, "w")
    r.execute_command("SADD", "set", "x", "w", "q")
    r.execute_command("SET", "str", "v")
    r.execute_command("RPUSH", "list", "x")
    assert r.execute_command("ZUNIONSTORE", "d", 2, "a", "b", "WEIGHTS", 1, 2) == 4
    assert r.execute_command("ZRANGE", "d", 0, -1, "WITHSCORES") == ["x", "1", "y", "22", "z", "43", "w", "60"]
    assert r.execute_command("ZINTERSTORE", "d", 2, "a", "b", "AGGREGATE", "MAX") == 2
    assert r.execute_command("ZRANGE", "d", 0, -1, "WITHSCORES") == ["y", "10", "z", "20"]
    assert r.execute_command("ZDIFFSTORE", "d", 2, "a", "b") == 1
    assert r.execute_command("ZRANGE", "d", 0, -1, "WITHSCORES") == ["x", "1"]
    # A plain set counts as a sorted set with every score 1.
    assert r.execute_command("ZUNIONSTORE", "d", 2, "a", "set") == 5
    assert r.execute_command("ZRANGE", "d", 0, -1, "WITHSCORES") == ["q", "1", "w", "1", "x", "2", "y", "2", "z", "3"]
    assert r.execute_command("ZINTERSTORE", "d", 2, "a", "set", "WEIGHTS", 5, 1) == 1
    assert r.execute_command("ZRANGE", "d", 0, -1, "WITHSCORES") == ["x", "6"]
    assert r.execute_command("ZINTER", 2, "set", "a", "WITHSCORES") == ["x", "2"]
    assert r.execute_command("ZDIFF", 2, "set", "a") == ["q", "w"]
    assert r.execute_command("ZINTERCARD", 2, "a", "set") == 1
    # An empty result deletes the destination; another type at the destination is replaced.
    assert r.execute_command("ZINTERSTORE", "d", 2, "a", "missing") == 0 and r.execute_command("EXISTS", "d") == 0
    r.execute_command("SET", "d", "v")
    assert r.execute_command("ZDIFFSTORE", "d", 2, "a", "a") == 0 and r.execute_command("EXISTS", "d") == 0
    r.execute_command("SET", "d", "v")
    assert r.execute_command("ZUNIONSTORE", "d", 1, "a") == 3 and r.execute_command("TYPE", "d") == "zset"
    for command in (
        ("ZUNION", 2, "a", "str"),
        ("ZUNIONSTORE", "d", 2, "a", "str"),
        ("ZINTER", 2, "a", "list"),
        ("ZINTER", 2, "missing", "str"),
        ("ZINTERSTORE", "d", 2, "missing", "str"),
        ("ZDIFF", 2, "missing", "str"),
        ("ZINTERCARD", 2, "missing", "str"),
    ):
        with pytest.raises(redis.ResponseError, match=WRONGTYPE):
            r.execute_command(*command)
    assert r.execute_command("ZCARD", "d") == 3, "a refused store leaves the destination"
    for command, text in (
        (("ZUNION", 0, "a"), "at least 1 input key is needed for 'zunion' command"),
        (("ZUNION", -1, "a"), "at least 1 input key is needed for 'zunion' command"),
        (("ZUNIONSTORE", "d", 0, "a"), "at least 1 input key is needed for 'zunionstore' command"),
        (("ZINTERSTORE", "d", 0, "a"), "at least 1 input key is needed for 'zinterstore' command"),
        (("ZDIFF", 0, "a"), "at least 1 input key is needed for 'zdiff' command"),
        (("ZINTERCARD", 0, "a"), "at least 1 input key is needed for 'zintercard' command"),
        (("ZUNION", "x", "a"), "value is not an integer or out of range"),
        (("ZUNION", 3, "a", "b"), "syntax error"),
        (("ZUNIONSTORE", "d", 5, "a"), "syntax error"),
        (("ZINTERCARD", 2, "a"), "syntax error"),
        (("ZUNION", 2, "a", "b", "WEIGHTS", 1), "syntax error"),
        (("ZUNIONSTORE", "d", 1, "a", "WEIGHTS", 1, 2), "syntax error"),
        (("ZUNION", 2, "a", "b", "WEIGHTS", 1, "x"), "weight value is not a float"),
        (("ZUNION", 2, "a", "b", "AGGREGATE", "AVG"), "syntax error"),
        (("ZDIFF", 2, "a", "b", "WEIGHTS", 1, 1), "syntax error"),
        (("ZUNIONSTORE", "d", 1, "a", "WITHSCORES"), "syntax error"),
        (("ZINTERCARD", 1, "a", "LIMIT", -1), "LIMIT can't be negative"),
        (("ZINTERCARD", 1, "a", "LIMIT", "x"), "LIMIT can't be negative"),
        (("ZINTERCARD", 1, "a", "FOO", 1), "syntax error"),
    ):
        with pytest.raises(redis.ResponseError, match=f"^{text}$"):
            r.execute_command(*command)


@pytest.mark.parametrize("protocol", [2, 3])
def test_blocking_pops_serve_at_once_time_out_and_refuse(server, protocol):
    r = raw(server, protocol)
    d = lambda text: double(protocol, text)  # noqa: E731
    r.execute_command("ZADD", "z", 1, "a", 2, "b", 3, "c", "inf", "d")
    # Data there: served at once. BZPOPMIN/MAX answer a flat [key, member, score].
    assert r.execute_command("BZPOPMIN", "missing", "z", 0) == ["z", "a", d("1")]
    assert r.execute_command("BZPOPMAX", "z", 0) == ["z", "d", d("inf")]
    assert r.execute_command("BZMPOP", 0, 2, "missing", "z", "MIN", "COUNT", 5) == ["z", [["b", d("2")], ["c", d("3")]]]
    assert r.execute_command("EXISTS", "z") == 0
    # Nothing within the timeout: null.
    assert r.execute_command("BZPOPMIN", "z", "0.01") is None
    assert r.execute_command("BZPOPMAX", "z", "missing", "0.01") is None
    assert r.execute_command("BZMPOP", "0.01", 1, "z", "MAX") is None
    # Errors come before any wait.
    r.execute_command("SET", "str", "v")
    for command, text in (
        (("BZPOPMIN", "z", -1), "timeout is negative"),
        (("BZPOPMIN", "z", "x"), "timeout is not a float or out of range"),
        (("BZMPOP", -1, 1, "z", "MIN"), "timeout is negative"),
        (("BZMPOP", 0, 0, "z", "MIN"), "numkeys should be greater than 0"),
        (("BZMPOP", 0, 1, "z", "MIN", "COUNT", 0), "count should be greater than 0"),
    ):
        with pytest.raises(redis.ResponseError, match=f"^{text}$"):
            r.execute_command(*command)
    with pytest.raises(redis.ResponseError, match=WRONGTYPE):
        r.execute_command("BZPOPMIN", "str", 0)
    with pytest.raises(redis.ResponseError, match=WRONGTYPE):
        r.execute_command("BZMPOP", 0, 2, "missing", "str", "MIN")
    # Inside MULTI nothing blocks: null for an empty key.
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("BZPOPMIN", "z", 0)
    pipe.execute_command("ZADD", "later", 5, "m")
    pipe.execute_command("BZPOPMAX", "later", 0)
    pipe.execute_command("BZMPOP", 0, 1, "later", "MIN")
    assert pipe.execute() == [None, 1, ["later", "m", d("5")], None]


@pytest.mark.parametrize("protocol", [2, 3])
def test_a_blocked_client_is_woken_by_a_write_from_another_connection(server, protocol):
    import concurrent.futures

    d = lambda text: double(protocol, text)  # noqa: E731
    control = server.client(decode_responses=True)
    r = raw(server, protocol)
    waiter = raw(server, protocol)
    pool = concurrent.futures.ThreadPoolExecutor(1)
    # BZPOPMAX on two keys, served by a ZADD of three members to the second.
    blocked = pool.submit(waiter.execute_command, "BZPOPMAX", "q1", "q2", 0)
    wait_blocked(control, 1)
    assert sum("b" in client["flags"] for client in control.client_list()) == 1
    assert r.execute_command("ZADD", "q2", 1, "a", 5, "b", 3, "c") == 3
    assert blocked.result(timeout=10) == ["q2", "b", d("5")]
    assert r.execute_command("ZRANGE", "q2", 0, -1) == ["a", "c"]
    wait_blocked(control, 0)
    # BZMPOP with a count takes up to that many.
    blocked = pool.submit(waiter.execute_command, "BZMPOP", 0, 2, "e1", "e2", "MIN", "COUNT", 2)
    wait_blocked(control, 1)
    r.execute_command("ZADD", "e2", 3, "x", 1, "y", 2, "z")
    assert blocked.result(timeout=10) == ["e2", [["y", d("1")], ["z", d("2")]]]
    assert r.execute_command("ZRANGE", "e2", 0, -1) == ["x"]
    # BZPOPMIN woken by a store that creates the key, and by ZINCRBY on a new key.
    blocked = pool.submit(waiter.execute_command, "BZPOPMIN", "u", 0)
    wait_blocked(control, 1)
    assert r.execute_command("ZUNIONSTORE", "u", 1, "q2") == 2
    assert blocked.result(timeout=10) == ["u", "a", d("1")]
    assert r.execute_command("ZRANGE", "u", 0, -1) == ["c"]
    blocked = pool.submit(waiter.execute_command, "BZPOPMIN", "inc", 0)
    wait_blocked(control, 1)
    r.execute_command("ZINCRBY", "inc", "2.5", "m")
    assert blocked.result(timeout=10) == ["inc", "m", d("2.5")]
    assert r.execute_command("EXISTS", "inc") == 0
    wait_blocked(control, 0)
    pool.shutdown()


def test_type_deletion_and_wrongtype(server):
    r = raw(server, 2)
    r.execute_command("ZADD", "z", 1, "a", 2, "b")
    assert r.execute_command("TYPE", "z") == "zset"
    r.execute_command("RPUSH", "list", "x")
    r.execute_command("SET", "str", "v")
    for command in (
        ("ZADD", "list", 1, "x"), ("ZINCRBY", "list", 1, "x"), ("ZSCORE", "list", "x"), ("ZMSCORE", "list", "x"),
        ("ZCARD", "list"), ("ZRANGE", "list", 0, -1), ("ZRANGEBYLEX", "str", "-", "+"), ("ZRANK", "str", "x"),
        ("ZREM", "list", "x"), ("ZCOUNT", "str", 0, 1), ("ZPOPMIN", "str"), ("ZRANDMEMBER", "str"), ("ZSCAN", "str", 0),
        ("ZREMRANGEBYRANK", "list", 0, -1), ("ZRANGESTORE", "d", "list", 0, -1),
        ("LPUSH", "z", "x"), ("LRANGE", "z", 0, -1), ("SADD", "z", "x"), ("SMEMBERS", "z"), ("GET", "z"),
        ("HSET", "z", "f", "v"), ("INCR", "z"),
    ):
        with pytest.raises(redis.ResponseError, match=WRONGTYPE):
            r.execute_command(*command)
    assert r.execute_command("ZRANGE", "z", 0, -1, "WITHSCORES") == ["a", "1", "b", "2"]
    # Every way of taking the last member away deletes the key.
    for remove in (
        ("ZREM", "z", "a", "b"),
        ("ZPOPMIN", "z", 5),
        ("ZPOPMAX", "z", 2),
        ("ZMPOP", 1, "z", "MIN", "COUNT", 2),
        ("ZREMRANGEBYSCORE", "z", "-inf", "+inf"),
        ("ZREMRANGEBYRANK", "z", 0, -1),
        ("ZREMRANGEBYLEX", "z", "-", "+"),
    ):
        r.execute_command("ZADD", "z", 1, "a", 1, "b")
        r.execute_command(*remove)
        assert r.execute_command("EXISTS", "z") == 0, remove
        assert r.execute_command("TYPE", "z") == "none"
    # And a deleted sorted set is gone for the other types too.
    assert r.execute_command("RPUSH", "z", "x") == 1 and r.execute_command("TYPE", "z") == "list"
    # SET replaces a sorted set; DEL removes it.
    r.execute_command("ZADD", "z2", 1, "a")
    r.execute_command("SET", "z2", "v")
    assert r.execute_command("TYPE", "z2") == "string"
    r.execute_command("ZADD", "z3", 1, "a")
    assert r.execute_command("DEL", "z3") == 1 and r.execute_command("ZCARD", "z3") == 0


@pytest.mark.skipif(bool(REDIS_PORT), reason="restarts hotset with kill -9")
def test_sorted_sets_survive_kill_9(tmp_path):
    data = str(tmp_path / "data")
    server = Server(data, "--fsync", "always")
    r = raw(server, 2)
    r.execute_command("ZADD", "big", *[x for i in range(3000) for x in (i * 1.1, f"m{i}")])
    r.execute_command("ZADD", "lex", *[x for i in range(1000) for x in (0, f"w{i:04}")])
    # Updates, removals and pops of every kind, then more additions on top.
    r.execute_command("ZADD", "big", "inf", "m5", "-inf", "m6", "-2.5", "m7", "12345678901234567890", "m8")
    r.execute_command("ZADD", "big", "GT", "CH", 10000, "m9", 0, "m10")
    r.execute_command("ZADD", "big", "INCR", "0.1", "m11")
    r.execute_command("ZINCRBY", "big", "-7", "m12")
    r.execute_command("ZREM", "big", "m1", "m2", "nope")
    r.execute_command("ZPOPMIN", "big", 3)
    r.execute_command("ZPOPMAX", "big")
    r.execute_command("ZMPOP", 1, "big", "MAX", "COUNT", 4)
    r.execute_command("ZREMRANGEBYSCORE", "big", 100, "(200")
    r.execute_command("ZREMRANGEBYRANK", "big", -10, -5)
    r.execute_command("ZADD", "big", "0.30000000000000004", "late", 1.1, "m1", "inf", "top", "-inf", "bottom")
    r.execute_command("ZREMRANGEBYLEX", "lex", "[w0100", "(w0200")
    r.execute_command("ZPOPMIN", "lex", 5)
    r.execute_command("ZUNIONSTORE", "union", 2, "big", "lex", "WEIGHTS", 2, 1)
    r.execute_command("ZRANGESTORE", "stored", "big", 0, 99)
    r.execute_command("ZADD", "gone", 1, "x")
    r.execute_command("ZPOPMIN", "gone")
    expected = {key: r.execute_command("ZRANGE", key, 0, -1, "WITHSCORES") for key in ("big", "lex", "union", "stored")}
    assert len(expected["big"]) > 5000 and expected["big"][:2] == ["bottom", "-inf"] and expected["big"][-2:] == ["top", "inf"]
    server.kill()
    server = Server(data)
    try:
        r = raw(server, 2)
        for key, flat in expected.items():
            assert r.execute_command("ZRANGE", key, 0, -1, "WITHSCORES") == flat, key
            assert r.execute_command("TYPE", key) == "zset"
        assert r.execute_command("EXISTS", "gone") == 0
        # And on after the restart.
        r.execute_command("ZADD", "big", "-1e300", "first")
        r.execute_command("ZINCRBY", "big", 1, "m20")
        r.execute_command("ZPOPMAX", "big", 2)
        expected["big"] = r.execute_command("ZRANGE", "big", 0, -1, "WITHSCORES")
        assert expected["big"][0:3:2] == ["bottom", "first"] and expected["big"][-2:] != ["top", "inf"]
    finally:
        server.kill()
    server = Server(data)
    try:
        r = raw(server, 2)
        for key, flat in expected.items():
            assert r.execute_command("ZRANGE", key, 0, -1, "WITHSCORES") == flat, key
    finally:
        server.stop()
