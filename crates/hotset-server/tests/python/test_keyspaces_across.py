"""MOVE, COPY ... DB and SWAPDB against the real hotset binary: what Redis 7.0 answers, that
each is one logged change a kill -9 keeps whole, and what Hotset refuses (these commands
inside MULTI).

With HOTSET_TEST_REDIS_PORT set, the tests that need no restart run against a redis-server
already listening on that port instead (how their expected replies were checked).
"""
import pytest
import redis

from peer import REDIS_PORT, server  # noqa: F401 (server: a fixture)
from test_redis_py import Server


def db(server, n, **kwargs):
    return server.client(db=n, decode_responses=True, **kwargs)


def test_move_keeps_value_and_deadline_and_refuses_what_redis_refuses(server):
    r0, r1 = db(server, 0), db(server, 1)
    r0.set("k", "v", px=100_000)
    r0.rpush("list", "a", "b")
    assert r0.move("k", 1) is True
    assert r0.exists("k") == 0
    assert r1.get("k") == "v"
    assert 0 < r1.pttl("k") <= 100_000, "the deadline moves with the key"
    assert r0.move("missing", 1) is False
    r1.set("list", "there")
    assert r0.move("list", 1) is False, "not over a key the target has"
    assert r0.lrange("list", 0, -1) == ["a", "b"]
    with pytest.raises(redis.ResponseError, match="source and destination objects are the same"):
        r0.move("list", 0)
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r0.execute_command("MOVE", "list", "notanumber")
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        r0.execute_command("MOVE", "list", "16")
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        r0.execute_command("MOVE", "list", "-1")


def test_copy_to_another_db(server):
    r0, r1 = db(server, 0), db(server, 1)
    r0.hset("h", mapping={"a": "1", "b": "2"})
    r0.expire("h", 1000)
    assert r0.copy("h", "h2", destination_db=1) is True
    assert r1.hgetall("h2") == {"a": "1", "b": "2"}
    assert 0 < r1.ttl("h2") <= 1000
    assert r0.hgetall("h") == {"a": "1", "b": "2"}, "the source stays"
    r1.set("s", "old")
    r0.set("s", "new")
    assert r0.copy("s", "s", destination_db=1) is False, "no REPLACE: the target keeps its value"
    assert r1.get("s") == "old"
    assert r0.copy("s", "s", destination_db=1, replace=True) is True
    assert r1.get("s") == "new"
    r0.set("s", "changed")
    assert r1.get("s") == "new", "a copy, not a shared value"
    assert r0.copy("s", "same", destination_db=0) is True, "DB naming the selected one: a plain COPY"
    assert r0.get("same") == "changed"
    with pytest.raises(redis.ResponseError, match="source and destination objects are the same"):
        r0.copy("s", "s", destination_db=0)
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r0.execute_command("COPY", "s", "t", "DB", "notanumber")
    assert r0.copy("missing", "t", destination_db=1) is False


def test_swapdb_exchanges_contents_for_connected_clients(server):
    r0, r1 = db(server, 0), db(server, 1)
    r0.set("a", "from0")
    r0.sadd("set", "x")
    r1.set("b", "from1", ex=1000)
    assert r0.swapdb(0, 1) is True
    assert (r0.get("a"), r0.get("b")) == (None, "from1"), "the same connection sees the other's data"
    assert 0 < r0.ttl("b") <= 1000
    assert r1.smembers("set") == {"x"} and r1.get("a") == "from0"
    assert r0.dbsize() == 1 and r1.dbsize() == 2
    assert r0.swapdb(3, 3) is True, "the same index: nothing happens"
    with pytest.raises(redis.ResponseError, match="invalid first DB index"):
        r0.execute_command("SWAPDB", "x", "1")
    with pytest.raises(redis.ResponseError, match="invalid second DB index"):
        r0.execute_command("SWAPDB", "1", "y")
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        r0.execute_command("SWAPDB", "0", "99")


def test_swapdb_wakes_a_client_blocked_on_the_new_contents(server):
    r1, r9 = db(server, 1), db(server, 9)
    r1.rpush("k", "hello")
    blocked = redis.Connection(host=server.host, port=server.port, db=9, decode_responses=True)
    blocked.send_command("BRPOP", "k", 5)
    control = db(server, 0)
    # Wait until it blocks (a poll on the server's own count, not a sleep).
    for _ in range(1000):
        if int(control.info("clients")["blocked_clients"]) == 1:
            break
    else:
        raise AssertionError("the client never blocked")
    r9.swapdb(1, 9)
    assert blocked.read_response() == ["k", "hello"]
    blocked.disconnect()


def test_a_watched_key_swapped_away_fails_exec(server):
    r0 = db(server, 0)
    r0.set("x", 30)
    with r0.pipeline() as pipe:
        pipe.watch("x")
        db(server, 5).swapdb(0, 1)
        pipe.multi()
        pipe.ping()
        with pytest.raises(redis.WatchError):
            pipe.execute()


def test_inside_multi_they_run_with_the_rest_of_the_transaction(server):
    r0, r1, r2 = db(server, 0), db(server, 1), db(server, 2)
    r0.set("k", "v")
    r0.set("c", "copied")
    r2.set("in2", "x")
    with r0.pipeline() as pipe:
        pipe.move("k", 1)
        pipe.exists("k")
        pipe.copy("c", "c", destination_db=2)
        pipe.execute_command("MOVE", "k", "0")
        pipe.swapdb(1, 2)
        pipe.execute_command("MOVE", "nothing", "notanumber")
        pipe.get("c")
        replies = pipe.execute(raise_on_error=False)
    assert replies[:3] == [True, 0, True]
    assert "source and destination objects are the same" in str(replies[3])
    assert replies[4] is True
    assert "value is not an integer or out of range" in str(replies[5])
    assert replies[6] == "copied"
    assert r1.get("in2") == "x" and r1.get("c") == "copied", "1 holds what 2 held"
    assert r2.get("k") == "v" and r2.dbsize() == 1
    assert r0.exists("k") == 0 and r0.get("c") == "copied"


def test_a_transaction_errors_inside_are_redis_errors(server):
    r0 = db(server, 0)
    r0.set("k", "v")
    with r0.pipeline() as pipe:
        pipe.execute_command("MOVE", "k", "0")
        pipe.execute_command("MOVE", "k", "notanumber")
        pipe.execute_command("SWAPDB", "0", "99")
        pipe.execute_command("COPY", "k", "k", "DB", "0")
        replies = pipe.execute(raise_on_error=False)
    texts = [str(reply) for reply in replies]
    assert "source and destination objects are the same" in texts[0]
    assert "value is not an integer or out of range" in texts[1]
    assert "DB index is out of range" in texts[2]
    assert "source and destination objects are the same" in texts[3]


@pytest.mark.skipif(REDIS_PORT is not None, reason="restarts the server")
def test_moves_copies_and_swaps_survive_kill_9(tmp_path):
    data = str(tmp_path / "data")
    s = Server(data, "--fsync", "always")
    r0, r1, r2 = db(s, 0), db(s, 1), db(s, 2)
    for i in range(200):
        r0.set(f"k{i}", i)
    r0.zadd("z", {"a": 1, "b": 2})
    for i in range(0, 200, 2):
        assert r0.move(f"k{i}", 1)
    assert r0.copy("z", "z", destination_db=2)
    r2.set("only2", "x")
    assert r0.swapdb(1, 2)
    r0.set("tx", "t")
    with r0.pipeline() as pipe:
        pipe.move("tx", 3)
        pipe.copy("k1", "k1copy", destination_db=3)
        assert pipe.execute() == [True, True]
    s.kill()
    s = Server(data)
    try:
        r0, r1, r2 = db(s, 0), db(s, 1), db(s, 2)
        assert r0.dbsize() == 101 and r0.get("k1") == "1" and r0.exists("k0") == 0
        assert r1.zrange("z", 0, -1, withscores=True) == [("a", 1.0), ("b", 2.0)]
        assert r1.get("only2") == "x" and r1.dbsize() == 2
        assert r2.dbsize() == 100 and r2.get("k0") == "0" and r2.get("k198") == "198"
        r3 = db(s, 3)
        assert (r3.get("tx"), r3.get("k1copy"), r0.exists("tx")) == ("t", "1", 0), "the transaction, whole"
    finally:
        s.stop()
