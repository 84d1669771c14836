"""redis-py against the real hotset binary: lists and sets, their replies in RESP2 and
RESP3, Redis' error texts, and their state across kill -9 (a big list's pushes, pops and
trims are logged as what they changed, and must replay to the same list).

Each test starts its own server (see test_redis_py.Server).
"""
import pytest
import redis

from test_redis_py import Server


@pytest.fixture
def server(tmp_path):
    s = Server(str(tmp_path / "data"))
    yield s
    s.kill()


@pytest.mark.parametrize("protocol", [2, 3])
def test_list_commands(server, protocol):
    r = server.client(protocol=protocol, decode_responses=True)
    assert r.rpush("l", "b", "c") == 2
    assert r.lpush("l", "a") == 3
    assert r.lrange("l", 0, -1) == ["a", "b", "c"]
    assert r.lrange("l", -2, 100) == ["b", "c"]
    assert r.lrange("l", 2, 1) == []
    assert (r.llen("l"), r.lindex("l", -1), r.lindex("l", 3)) == (3, "c", None)
    assert r.lset("l", 1, "B") is True
    with pytest.raises(redis.ResponseError, match="^index out of range$"):
        r.lset("l", 5, "x")
    with pytest.raises(redis.ResponseError, match="^no such key$"):
        r.lset("missing", 0, "x")
    assert r.linsert("l", "after", "B", "b2") == 4
    assert r.linsert("l", "before", "nope", "x") == -1
    assert r.linsert("missing", "before", "a", "x") == 0
    assert r.rpush("l", "a", "a") == 6
    assert r.lrem("l", -1, "a") == 1
    assert r.lrange("l", 0, -1) == ["a", "B", "b2", "c", "a"]
    assert r.lpos("l", "a") == 0
    assert r.lpos("l", "a", rank=-1) == 4
    assert r.lpos("l", "a", count=0) == [0, 4]
    assert r.lpos("l", "a", rank=2, maxlen=3) is None
    with pytest.raises(redis.ResponseError, match="RANK can't be zero"):
        r.lpos("l", "a", rank=0)
    assert r.lpop("l") == "a"
    assert r.rpop("l", 2) == ["a", "c"]
    assert r.lpop("l", 0) == []
    assert r.lpop("missing") is None and r.lpop("missing", 2) is None
    with pytest.raises(redis.ResponseError, match="must be positive"):
        r.lpop("l", -1)
    assert r.ltrim("l", 0, 0) is True and r.lrange("l", 0, -1) == ["B"]
    assert r.lpushx("missing", "x") == 0 and r.exists("missing") == 0
    assert r.rpushx("l", "z") == 2
    assert r.lmove("l", "m", "LEFT", "RIGHT") == "B"
    assert r.rpoplpush("l", "m") == "z"
    assert r.exists("l") == 0, "an emptied list is deleted"
    assert r.lrange("m", 0, -1) == ["z", "B"]
    assert r.type("m") == "list"
    assert r.lmpop(2, "missing", "m", direction="RIGHT", count=5) == ["m", ["B", "z"]]
    assert r.lmpop(1, "missing", direction="LEFT") is None
    r.set("s", "text")
    r.rpush("l2", "x")
    for call in (lambda: r.lpush("s", "x"), lambda: r.lrange("s", 0, -1), lambda: r.lmove("l2", "s", "LEFT", "LEFT")):
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            call()
    assert r.lrange("l2", 0, -1) == ["x"], "LMOVE onto a string moved nothing"
    with pytest.raises(redis.ResponseError, match="numkeys should be greater than 0"):
        r.execute_command("LMPOP", 0, "k", "LEFT")


@pytest.mark.parametrize("protocol", [2, 3])
def test_set_commands(server, protocol):
    r = server.client(protocol=protocol, decode_responses=True)
    assert r.sadd("a", "1", "2", "3", "3") == 3
    assert r.sadd("b", "2", "3", "4") == 3
    assert r.smembers("a") == {"1", "2", "3"}
    assert (r.scard("a"), r.sismember("a", "2"), r.sismember("a", "9")) == (3, True, False)
    assert r.smismember("a", ["1", "9"]) == [True, False]
    assert r.sinter("a", "b") == {"2", "3"}
    assert r.sunion("a", "b") == {"1", "2", "3", "4"}
    assert r.sdiff("a", "b") == {"1"}
    assert r.sinter("a", "missing") == set()
    assert r.sintercard(2, ["a", "b"]) == 2 and r.sintercard(2, ["a", "b"], limit=1) == 1
    assert r.sinterstore("i", "a", "b") == 2 and r.smembers("i") == {"2", "3"}
    assert r.sdiffstore("i", "a", "a") == 0 and r.exists("i") == 0, "an empty result deletes the destination"
    assert r.sunionstore("u", "a", "b") == 4
    assert r.smove("a", "b", "1") is True and r.smove("a", "b", "9") is False
    assert r.srem("a", "2", "9") == 1
    assert r.srandmember("b") in {"1", "2", "3", "4"}
    assert len(r.srandmember("b", 10)) == 4
    assert len(r.srandmember("b", -10)) == 10
    popped = r.spop("b", 2)
    assert len(popped) == 2 and r.scard("b") == 2
    assert r.spop("missing") is None
    cursor, found = 0, set()
    while True:
        cursor, members = r.sscan("u", cursor, count=1)
        found |= set(members)
        if cursor == 0:
            break
    assert found == {"1", "2", "3", "4"}
    r.set("s", "x")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.sadd("s", "m")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.sunion("u", "s")
    assert r.type("u") == "set"


def test_lists_and_sets_survive_kill_9(tmp_path):
    data = str(tmp_path / "data")
    server = Server(data, "--fsync", "always")
    r = server.client(decode_responses=True)
    r.rpush("big", *[f"v{i}" for i in range(2000)])
    r.sadd("members", *[f"m{i}" for i in range(500)])
    # Writes that log what they changed (window and elements, members), then ones that
    # log the list whole, then more window writes on top.
    r.lpush("big", "h1", "h2")
    r.rpop("big", 3)
    r.lset("big", 10, "changed")
    r.ltrim("big", 1, -2)
    r.linsert("big", "before", "v100", "inserted")
    r.lpop("big", 2)
    r.rpush("big", "tail")
    r.srem("members", "m1", "m2")
    r.sadd("members", "new")
    r.spop("members", 3)
    r.rpush("gone", "x")
    r.lpop("gone")
    expected_list = r.lrange("big", 0, -1)
    expected_set = r.smembers("members")
    server.kill()
    server = Server(data)
    try:
        r = server.client(decode_responses=True)
        assert r.lrange("big", 0, -1) == expected_list
        assert r.smembers("members") == expected_set
        assert r.exists("gone") == 0
        # And on after the restart: positions carried over.
        r.lpush("big", "again")
        assert r.lindex("big", 0) == "again" and r.llen("big") == len(expected_list) + 1
    finally:
        server.kill()
    server = Server(data)
    try:
        r = server.client(decode_responses=True)
        assert r.lrange("big", 0, -1) == ["again"] + expected_list
    finally:
        server.stop()


def wait_blocked(r, count):
    """Polls INFO until `count` clients are blocked (the server's own count, as Redis'
    suite waits for it); fails after 10 s."""
    import time

    deadline = time.monotonic() + 10
    while int(r.info("clients")["blocked_clients"]) != count:
        assert time.monotonic() < deadline, f"never {count} blocked clients"


def test_blocked_clients_are_served_in_order_across_connections(server):
    import concurrent.futures

    r = server.client(decode_responses=True)
    pool = concurrent.futures.ThreadPoolExecutor(4)
    clients = [server.client(decode_responses=True) for _ in range(3)]
    # Three clients block on the same list, one after the other.
    first = pool.submit(clients[0].blpop, ["jobs", "other"], 0)
    wait_blocked(r, 1)
    second = pool.submit(clients[1].brpop, ["jobs"], 0)
    wait_blocked(r, 2)
    third = pool.submit(clients[2].blmpop, 0, 1, "jobs", direction="LEFT", count=5)
    wait_blocked(r, 3)
    assert sum(client["flags"] == "b" for client in r.client_list()) == 3
    # One push of three elements: the first comes first, and LPUSH answers the length
    # before anyone popped.
    assert r.rpush("jobs", "a", "b", "c") == 3
    assert first.result(timeout=10) == ("jobs", "a")
    assert second.result(timeout=10) == ("jobs", "c")
    assert third.result(timeout=10) == ["jobs", ["b"]]
    assert r.exists("jobs") == 0
    wait_blocked(r, 0)
    pool.shutdown()


def test_blocking_commands_time_out_move_and_unblock(server):
    import concurrent.futures

    r = server.client(decode_responses=True)
    pool = concurrent.futures.ThreadPoolExecutor(2)
    waiter = server.client(decode_responses=True)
    # A timeout answers null, and the client is no longer blocked.
    assert waiter.blpop(["nothing"], 0.05) is None
    assert int(r.info("clients")["blocked_clients"]) == 0
    # BLMOVE: served by a push onto its source, it pushes onto its destination, which
    # serves a client blocked there in turn.
    moved = pool.submit(waiter.blmove, "src", "dst", 0, "LEFT", "RIGHT")
    wait_blocked(r, 1)
    other = server.client(decode_responses=True)
    chained = pool.submit(other.blpop, ["dst"], 0)
    wait_blocked(r, 2)
    r.lpush("src", "x")
    assert moved.result(timeout=10) == "x"
    assert chained.result(timeout=10) == ("dst", "x")
    # Served onto a destination of another type: the blocked client gets WRONGTYPE and the
    # element stays in the source.
    r.set("text-dst", "x")
    wrong = pool.submit(waiter.blmove, "src2", "text-dst", 0, "LEFT", "RIGHT")
    wait_blocked(r, 1)
    r.lpush("src2", "kept")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        wrong.result(timeout=10)
    assert r.lrange("src2", 0, -1) == ["kept"]
    # CLIENT UNBLOCK ends a wait as a timeout would, or with an error.
    waiter_id = waiter.client_id()
    blocked = pool.submit(waiter.brpop, ["nothing"], 0)
    wait_blocked(r, 1)
    assert r.client_unblock(waiter_id) is True
    assert blocked.result(timeout=10) is None
    blocked = pool.submit(waiter.blpop, ["nothing"], 0)
    wait_blocked(r, 1)
    assert r.client_unblock(waiter_id, error=True) is True
    with pytest.raises(redis.ResponseError, match="UNBLOCKED"):
        blocked.result(timeout=10)
    assert r.client_unblock(waiter_id) is False
    # Errors come before any wait.
    with pytest.raises(redis.ResponseError, match="timeout is negative"):
        waiter.blpop(["nothing"], -1)
    r.set("text", "x")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        waiter.blpop(["text"], 0)
    # Inside MULTI nothing blocks: null for an empty list.
    pipe = waiter.pipeline(transaction=True)
    pipe.blpop(["nothing"], 0)
    pipe.rpush("later", "y")
    pipe.blpop(["later"], 0)
    assert pipe.execute() == [None, 1, ("later", "y")]
    pool.shutdown()


def test_a_blocked_client_that_leaves_is_forgotten(server):
    import socket

    r = server.client(decode_responses=True)
    sock = socket.create_connection((server.host, server.port))
    sock.sendall(b"BLPOP q 0\r\n")
    wait_blocked(r, 1)
    sock.close()
    wait_blocked(r, 0)
    # The push stays in the list: nobody took it.
    r.rpush("q", "kept")
    assert r.lrange("q", 0, -1) == ["kept"]


def test_watch_makes_exec_fail_when_a_watched_key_changes(server):
    r = server.client(decode_responses=True, single_connection_client=True)
    other = server.client(decode_responses=True)
    r.set("balance", 10)
    # Untouched: EXEC runs.
    with r.pipeline(transaction=True) as pipe:
        pipe.watch("balance")
        assert pipe.get("balance") == "10"
        pipe.multi()
        pipe.incrby("balance", 5)
        assert pipe.execute() == [15]
    # Changed by another connection (a list push counts too): EXEC runs nothing.
    for change in (lambda: other.set("balance", 0), lambda: other.rpush("queue", "x")):
        with r.pipeline(transaction=True) as pipe:
            pipe.watch("balance", "queue")
            pipe.multi()
            pipe.incrby("balance", 5)
            change()
            with pytest.raises(redis.WatchError):
                pipe.execute()
    assert r.get("balance") == "0", "the aborted transaction changed nothing"
    # A failed EXEC ends the watch: the next transaction runs.
    assert r.execute_command("MULTI") == "OK" and r.execute_command("ECHO", "e") == "QUEUED"
    assert r.execute_command("EXEC") == ["e"]
    # UNWATCH and DISCARD forget the watched keys.
    r.execute_command("WATCH", "balance")
    other.set("balance", 1)
    r.execute_command("UNWATCH")
    r.execute_command("MULTI")
    r.execute_command("INCR", "balance")
    assert r.execute_command("EXEC") == [2]
    # FLUSHDB touches a watched key that existed, not one that did not.
    r.execute_command("WATCH", "balance", "never")
    other.flushdb()
    r.execute_command("MULTI")
    r.execute_command("ECHO", "e")
    assert r.execute_command("EXEC") is None
    r.execute_command("WATCH", "never")
    other.flushdb()
    r.execute_command("MULTI")
    r.execute_command("ECHO", "e")
    assert r.execute_command("EXEC") == ["e"]
    # A watched key that expires meanwhile counts as changed.
    r.set("short", "x", px=30)
    r.execute_command("WATCH", "short")
    import time

    deadline = time.monotonic() + 10
    while other.exists("short"):
        assert time.monotonic() < deadline, "the key never expired"
    r.execute_command("MULTI")
    r.execute_command("ECHO", "e")
    assert r.execute_command("EXEC") is None
    r.execute_command("MULTI")
    with pytest.raises(redis.ResponseError, match="^WATCH inside MULTI is not allowed"):
        r.execute_command("WATCH", "x")
    r.execute_command("DISCARD")


def test_copy_and_randomkey(server):
    r = server.client(decode_responses=True)
    assert r.randomkey() is None
    r.rpush("l", "a", "b")
    r.sadd("s", "m")
    r.set("t", "v", ex=100)
    assert r.copy("l", "l2") is True and r.lrange("l2", 0, -1) == ["a", "b"]
    r.rpush("l2", "c")
    assert r.lrange("l", 0, -1) == ["a", "b"], "the copy is independent"
    assert r.copy("s", "l2") is False, "no REPLACE: an existing destination stays"
    assert r.copy("s", "l2", replace=True) is True and r.type("l2") == "set"
    assert r.copy("t", "t2") is True and 0 < r.ttl("t2") <= 100
    assert r.copy("missing", "x") is False
    with pytest.raises(redis.ResponseError, match="same"):
        r.copy("l", "l")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.execute_command("COPY", "l", "x", "DB", "notanumber")
    keys = {"l", "l2", "s", "t", "t2"}
    seen = {r.randomkey() for _ in range(200)}
    assert seen == keys, f"200 draws cover the {len(keys)} keys: {seen}"
