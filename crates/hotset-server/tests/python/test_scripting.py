"""Lua scripting against the real hotset binary, as Redis 7.0 does it: EVAL, EVALSHA and
their _RO forms, SCRIPT LOAD/EXISTS/FLUSH/KILL, FUNCTION LOAD/DELETE/LIST/DUMP/RESTORE/
FLUSH/STATS/KILL, FCALL and FCALL_RO; conversions both ways in RESP2 and RESP3 (exact
bytes), error texts, the sandbox, atomicity against clients on other I/O threads, -BUSY,
SCRIPT KILL and an unkillable script, scripts inside MULTI, and function libraries kept
across a kill -9 while SCRIPT LOAD's cache is not.

Each test starts its own server (see test_redis_py.Server). With HOTSET_TEST_REDIS_PORT set,
the tests run instead against a redis-server already listening on that port (flushed at the
start of each test), which is how the expected values were checked to be Redis' behaviour
(7.0.15); the tests that restart or stop the server are Hotset's alone. Waiting is always
polling a condition under a deadline, never a sleep standing for one.
"""

import hashlib
import threading
import time
import urllib.request

import pytest
import redis

from peer import REDIS_PORT, raw, server, wire  # noqa: F401 (server: a fixture)
from test_redis_py import Server

DEADLINE = 10


def until(condition, what, deadline=DEADLINE):
    """Polls `condition` until it returns something true; fails naming `what` past the deadline."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.005)
    pytest.fail(f"timed out waiting for {what}")


def error_of(call):
    """The text of the error `call` raises."""
    with pytest.raises(redis.ResponseError) as raised:
        call()
    return str(raised.value)


def busy(r):
    """Whether the server answers PING with -BUSY (a script holds it past the threshold)."""
    try:
        r.ping()
        return False
    except redis.exceptions.BusyLoadingError:
        return True
    except redis.ResponseError as error:
        return str(error).startswith("BUSY")


def stop_scripts(r):
    """Ends whatever script still runs (a failed test must not leave the shared
    redis-server busy)."""
    for kill in (("SCRIPT", "KILL"), ("FUNCTION", "KILL")):
        try:
            r.execute_command(*kill)
        except redis.ResponseError:
            pass


BUSY_EVAL = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
BUSY_FUNCTION = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."


def deferred(r, *command):
    """Sends `command` on a connection of its own and returns the connection, whose
    `read_response()` gives the reply when it comes."""
    conn = r.connection_pool.get_connection()
    conn.send_command(*command)
    return conn


LIBRARY = """#!lua name=mylib
local function incr(keys, args)
  return redis.call('incrby', keys[1], args[1])
end
redis.register_function('my_incr', incr)
redis.register_function{function_name='my_get', callback=function(keys) return redis.call('get', keys[1]) end,
  flags={'no-writes'}, description='reads a key'}
"""


def test_eval_evalsha_and_the_script_cache(server):
    r = server.client(decode_responses=True)
    assert r.eval("return {KEYS[1], ARGV[1], redis.call('set', KEYS[1], ARGV[1])}", 1, "k", "v") == ["k", "v", "OK"]
    assert r.get("k") == "v"
    sha = r.script_load("return 'loaded'")
    assert sha == "b534286061d4b9e4026607613b95c06c06015ae8"
    assert r.evalsha(sha, 0) == "loaded"
    assert r.evalsha(sha.upper(), 0) == "loaded", "a SHA1 in any case"
    assert r.script_exists(sha, "0" * 40) == [True, False]
    assert error_of(lambda: r.evalsha("0" * 40, 0)) == "No matching script. Please use EVAL."
    assert error_of(lambda: r.evalsha("short", 0)) == "No matching script. Please use EVAL."
    # EVAL caches its body too.
    assert r.eval("return 7", 0) == 7
    assert r.script_exists(hashlib.sha1(b"return 7").hexdigest()) == [True]
    assert r.script_flush() is True
    assert r.script_exists(sha) == [False]
    assert r.script_flush("ASYNC") is True and r.script_flush("SYNC") is True
    assert "only support SYNC|ASYNC" in error_of(lambda: r.execute_command("SCRIPT", "FLUSH", "SOON"))
    assert "unknown subcommand 'NOPE'" in error_of(lambda: r.execute_command("SCRIPT", "NOPE"))
    assert "wrong number of arguments for 'script|load'" in error_of(lambda: r.execute_command("SCRIPT", "LOAD"))


@pytest.mark.parametrize("protocol", [2, 3])
def test_lua_values_become_replies(server, protocol):
    cases = [
        ("return 1", b":1\r\n"),
        ("return 3.99", b":3\r\n"),
        ("return 'x'", b"$1\r\nx\r\n"),
        ("return nil", b"$-1\r\n" if protocol == 2 else b"_\r\n"),
        ("return false", b"$-1\r\n" if protocol == 2 else b"_\r\n"),
        ("return true", b":1\r\n"),
        ("return {1, 'a', {2}, nil, 3}", b"*3\r\n:1\r\n$1\r\na\r\n*1\r\n:2\r\n"),
        ("return {ok='fine'}", b"+fine\r\n"),
        ("return {err='plain'}", b"-plain\r\n"),
        ("return redis.error_reply('MY_ERR custom')", b"-MY_ERR custom\r\n"),
        ("return redis.status_reply('DONE')", b"+DONE\r\n"),
        # RESP3 types a script builds: down-converted for a RESP2 client.
        ("return {double=3.5}", b"$3\r\n3.5\r\n" if protocol == 2 else b",3.5\r\n"),
        ("return {map={a=1}}", b"*2\r\n$1\r\na\r\n:1\r\n" if protocol == 2 else b"%1\r\n$1\r\na\r\n:1\r\n"),
        ("return {set={a=true}}", b"*1\r\n$1\r\na\r\n" if protocol == 2 else b"~1\r\n$1\r\na\r\n"),
        ("return {big_number='123456789012345678901234567890'}",
         b"$30\r\n123456789012345678901234567890\r\n" if protocol == 2 else b"(123456789012345678901234567890\r\n"),
    ]
    for body, expected in cases:
        assert wire(server, protocol, "EVAL", body, 0) == expected, body


@pytest.mark.parametrize("resp", [2, 3])
def test_replies_become_lua_values(server, resp):
    r = server.client(decode_responses=True)
    r.hset("h", mapping={"f": "v"})
    r.sadd("s", "m")
    r.zadd("z", {"a": 1.5})
    r.set("n", "10")
    script = f"""
    redis.setresp({resp})
    local out = {{}}
    local function show(v)
      if type(v) == 'table' then
        local keys = {{}}
        for k, _ in pairs(v) do keys[#keys + 1] = tostring(k) end
        table.sort(keys)
        return 'table:' .. table.concat(keys, ',')
      end
      return type(v) .. ':' .. tostring(v)
    end
    out[#out + 1] = show(redis.call('get', 'n'))
    out[#out + 1] = show(redis.call('get', 'missing'))
    out[#out + 1] = show(redis.call('incr', 'n'))
    out[#out + 1] = show(redis.call('set', 'x', 'y'))
    out[#out + 1] = show(redis.call('hgetall', 'h'))
    out[#out + 1] = show(redis.call('smembers', 's'))
    out[#out + 1] = show(redis.call('zscore', 'z', 'a'))
    out[#out + 1] = show(redis.pcall('lpush', 'n', 'v'))
    out[#out + 1] = show(redis.pcall('lpush', 'n', 'v')['err'])
    return out
    """
    got = r.eval(script, 0)
    expected = {
        2: ["string:10", "boolean:false", "number:11", "table:ok", "table:1,2", "table:1", "string:1.5",
            "table:err,ignore_error_stats_update", "string:WRONGTYPE Operation against a key holding the wrong kind of value"],
        3: ["string:10", "nil:nil", "number:11", "table:ok", "table:map", "table:set", "table:double",
            "table:err,ignore_error_stats_update", "string:WRONGTYPE Operation against a key holding the wrong kind of value"],
    }
    assert got == expected[resp]


def test_read_only_scripts_refuse_writes(server):
    r = server.client(decode_responses=True)
    r.set("k", "1")
    assert r.eval_ro("return redis.call('get', KEYS[1])", 1, "k") == "1"
    assert error_of(lambda: r.eval_ro("return redis.call('set', 'k', 2)", 0)).startswith(
        "Write commands are not allowed from read-only scripts. script: ")
    assert error_of(lambda: r.eval("#!lua flags=no-writes\nreturn redis.call('set', 'k', 2)", 0)).startswith(
        "Write commands are not allowed from read-only scripts.")
    assert error_of(lambda: r.eval_ro("#!lua\nreturn 1", 0)) == (
        "Can not execute a script with write flag using *_ro command.")
    sha = r.script_load("return redis.call('del', 'k')")
    assert "read-only scripts" in error_of(lambda: r.evalsha_ro(sha, 0))
    assert r.get("k") == "1", "nothing was written"
    assert r.evalsha(sha, 0) == 1


def test_errors_keep_redis_texts(server):
    r = server.client(decode_responses=True)
    script_error = [
        ("return redis.call('nosuch')", "Unknown Redis command called from script"),
        ("return redis.call('get')", "Wrong number of args calling Redis command from script"),
        ("return redis.call('multi')", "This Redis command is not allowed from script"),
        ("return redis.call('blpop', 'l', 0)", "This Redis command is not allowed from script"),
        ("return redis.call('xread', 'BLOCK', 0, 'STREAMS', 's', '$')",
         "xread command is not allowed with BLOCK option from scripts"),
        ("a = 1", "user_script:1: Attempt to modify a readonly table"),
        ("return print", "user_script:1: Script attempted to access nonexistent global variable 'print'"),
        ("return loadfile", "user_script:1: Script attempted to access nonexistent global variable 'loadfile'"),
        ("return os.exit", "user_script:1: Script attempted to access nonexistent global variable 'os'"),
    ]
    for body, text in script_error:
        message = error_of(lambda: r.eval(body, 0))
        assert message.startswith(text + " script: "), (body, message)
        assert message.endswith(", on @user_script:1."), (body, message)
    # redis.pcall hands the error back as a value, which the script returns.
    assert error_of(lambda: r.eval("return redis.pcall('nosuch')", 0)) == "Unknown Redis command called from script"
    assert error_of(lambda: r.eval("x", 0)) == (
        "Error compiling script (new function): user_script:1: '=' expected near '<eof>'")
    assert error_of(lambda: r.eval("return 1", -1)) == "Number of keys can't be negative"
    assert error_of(lambda: r.eval("return 1", 2, "a")) == "Number of keys can't be greater than number of args"
    assert error_of(lambda: r.execute_command("EVAL", "return 1", "x")) == "value is not an integer or out of range"
    assert error_of(lambda: r.eval("#!js\nreturn 1", 0)) == "Unexpected engine in script shebang: #!js"
    assert error_of(lambda: r.fcall("nosuch", 0)) == "Function not found"
    assert error_of(lambda: r.eval("return redis.error_reply('MY_ERR custom')", 0)) == "MY_ERR custom"
    # The sandbox's libraries are there.
    assert r.eval("return cjson.encode({1, 2})", 0) == "[1,2]"
    assert r.eval("return redis.sha1hex('')", 0) == "da39a3ee5e6b4b0d3255bfef95601890afd80709"
    assert r.eval("return struct.pack('>I2', 258)", 0) == "\x01\x02"
    assert r.eval("return bit.band(6, 3)", 0) == 2


def test_key_positions_and_command_info(server):
    assert wire(server, 2, "COMMAND", "GETKEYS", "EVAL", "return 1", 2, "a", "b", "c") == b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    assert wire(server, 2, "COMMAND", "GETKEYS", "FCALL", "f", 1, "x", "y") == b"*1\r\n$1\r\nx\r\n"
    info = wire(server, 2, "COMMAND", "INFO", "EVAL")
    assert info.startswith(b"*1\r\n*") and b"$4\r\neval\r\n:-3\r\n" in info and b"+noscript\r\n" in info
    assert b"$6\r\nscript\r\n:-2\r\n" in wire(server, 2, "COMMAND", "INFO", "SCRIPT")


def test_a_script_is_atomic_for_clients_on_other_threads(server):
    """A script makes a pair of keys unequal between its commands, again and again; readers
    on other connections (served by other I/O threads) never see them unequal, whether
    they read both in one command or in two pipelined ones."""
    r = server.client(decode_responses=True)
    r.mset({"a": 0, "b": 0})
    script = """
    for i = 1, 2000 do
      redis.call('incr', KEYS[1])
      redis.call('incr', KEYS[2])
    end
    return redis.call('get', KEYS[1])
    """
    stop = threading.Event()
    seen = []
    failures = []

    def reader(pipelined):
        c = server.client(decode_responses=True)
        while not stop.is_set():
            if pipelined:
                pipe = c.pipeline(transaction=False)
                pipe.get("a").get("b")
                a, b = pipe.execute()
            else:
                a, b = c.mget("a", "b")
            seen.append(a)
            if a != b:
                failures.append((a, b))

    readers = [threading.Thread(target=reader, args=(pipelined,)) for pipelined in (False, True, False, True)]
    for thread in readers:
        thread.start()
    try:
        for round_ in range(1, 16):
            assert r.eval(script, 2, "a", "b") == str(2000 * round_)
        until(lambda: len(set(seen)) > 2, "readers to see several states")
    finally:
        stop.set()
        for thread in readers:
            thread.join()
    assert not failures, failures[:5]
    assert r.mget("a", "b") == ["30000", "30000"]


def test_busy_script_kill_and_function_kill(server):
    r = server.client(decode_responses=True)
    r.config_set("busy-reply-threshold", 50)
    assert r.config_get("lua-time-limit") == {"lua-time-limit": "50"}
    try:
        kill_them(server, r)
    finally:
        stop_scripts(r)


def kill_them(server, r):
    looping = deferred(r, "EVAL", "local i = 0 while true do i = i + 1 end", 0)
    until(lambda: busy(r), "-BUSY")
    assert error_of(r.ping) == BUSY_EVAL
    # FUNCTION KILL and FUNCTION STATS are for functions, and say so.
    assert error_of(lambda: r.execute_command("FUNCTION", "KILL")) == BUSY_EVAL
    assert error_of(lambda: r.execute_command("FUNCTION", "STATS")) == BUSY_EVAL
    assert r.script_kill() is True
    with pytest.raises(redis.ResponseError, match="Script killed by user with SCRIPT KILL"):
        looping.read_response()
    until(lambda: r.ping(), "PONG after the kill")
    assert error_of(r.script_kill) == "NOTBUSY No scripts in execution right now."

    r.function_load("#!lua name=spin\nredis.register_function('spin', function() while true do end end)", replace=True)
    spinning = deferred(r, "FCALL", "spin", 0)
    until(lambda: busy(r), "-BUSY from a function")
    assert error_of(r.ping) == BUSY_FUNCTION
    stats = raw(server, 2).execute_command("FUNCTION", "STATS")
    running = dict(zip(stats[1][::2], stats[1][1::2]))
    assert running["name"] == "spin" and running["command"] == ["FCALL", "spin", "0"]
    assert error_of(r.script_kill) == BUSY_FUNCTION
    assert r.execute_command("FUNCTION", "KILL") == "OK"
    with pytest.raises(redis.ResponseError, match="Script killed by user"):
        spinning.read_response()
    until(lambda: r.ping(), "PONG after FUNCTION KILL")


def test_a_transaction_meeting_busy_is_discarded(server):
    r = server.client(decode_responses=True)
    r.config_set("busy-reply-threshold", 50)
    r.set("xx", 1)
    try:
        discard_on_busy(server, r)
    finally:
        stop_scripts(r)


def discard_on_busy(server, r):
    other = server.client(decode_responses=True)
    conn = other.connection_pool.get_connection()
    conn.send_command("MULTI")
    assert conn.read_response() == "OK"
    conn.send_command("INCR", "xx")
    assert conn.read_response() == "QUEUED"
    looping = deferred(r, "EVAL", "while true do end", 0)
    until(lambda: busy(r), "-BUSY")
    conn.send_command("EXEC")
    with pytest.raises(redis.ResponseError, match="^Transaction discarded because of: BUSY"):
        conn.read_response()
    r.script_kill()
    with pytest.raises(redis.ResponseError):
        looping.read_response()
    until(lambda: r.ping(), "PONG")
    assert r.get("xx") == "1"
    conn.send_command("PING", "out of multi")
    assert conn.read_response() == "out of multi"


def test_a_script_that_wrote_cannot_be_killed(server, tmp_path):
    r = server.client(decode_responses=True)
    r.config_set("busy-reply-threshold", 50)
    # Against the shared redis-server the script ends by itself (its SHUTDOWN NOSAVE
    # would stop that server); against Hotset it loops until the server stops.
    loop = "for i = 1, 200000000 do end" if REDIS_PORT else "while true do end"
    looping = deferred(r, "EVAL", f"redis.call('set', KEYS[1], 'half') {loop} return 'done'", 1, "half")
    until(lambda: busy(r), "-BUSY")
    assert error_of(r.script_kill) == (
        "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the "
        "script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
    assert error_of(lambda: r.execute_command("FUNCTION", "KILL")) == (
        "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the "
        "script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
    assert error_of(lambda: r.execute_command("SHUTDOWN")) == BUSY_EVAL, "only NOSAVE while busy"
    if REDIS_PORT:
        assert looping.read_response() == "done"
        assert r.get("half") == "half"
        return
    try:
        r.shutdown(nosave=True)
    except redis.ConnectionError:
        pass
    assert server.proc.wait(timeout=DEADLINE) == 0
    # The script's write was never logged: a script's writes are one record, at its end.
    again = Server(str(tmp_path / "data"))
    try:
        assert again.client().get("half") is None
    finally:
        again.kill()


def test_function_libraries(server):
    r = server.client(decode_responses=True)
    r.function_flush()
    assert r.function_load(LIBRARY) == "mylib"
    assert "already exists" in error_of(lambda: r.function_load(LIBRARY))
    assert r.function_load(LIBRARY, replace=True) == "mylib"
    assert r.fcall("my_incr", 1, "n", 5) == 5
    assert r.fcall("MY_INCR", 1, "n", 5) == 10, "function names in any case"
    assert r.fcall_ro("my_get", 1, "n") == "10"
    assert error_of(lambda: r.fcall_ro("my_incr", 1, "n", 1)) == (
        "Can not execute a script with write flag using *_ro command.")
    plain = raw(server, 2)
    listed = plain.execute_command("FUNCTION", "LIST")
    assert listed == [["library_name", "mylib", "engine", "LUA", "functions", [
        ["name", "my_get", "description", "reads a key", "flags", ["no-writes"]],
        ["name", "my_incr", "description", None, "flags", []],
    ]]]
    with_code = plain.execute_command("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "my*")
    assert with_code[0][-2:] == ["library_code", LIBRARY]
    assert plain.execute_command("FUNCTION", "LIST", "LIBRARYNAME", "nope*") == []
    stats = plain.execute_command("FUNCTION", "STATS")
    assert stats == ["running_script", None, "engines", ["LUA", ["libraries_count", 1, "functions_count", 2]]]
    dump = server.client().function_dump()
    assert plain.execute_command("FUNCTION", "DELETE", "mylib") == "OK"
    assert error_of(lambda: r.function_delete("mylib")) == "Library not found"
    assert error_of(lambda: r.fcall("my_incr", 1, "n", 1)) == "Function not found"
    assert plain.execute_command("FUNCTION", "RESTORE", dump) == "OK"
    assert r.fcall("my_incr", 1, "n", 1) == 11
    assert "already exists" in error_of(lambda: server.client().function_restore(dump, "APPEND"))
    assert plain.execute_command("FUNCTION", "RESTORE", dump, "REPLACE") == "OK"
    assert plain.execute_command("FUNCTION", "RESTORE", dump, "FLUSH") == "OK"
    assert "payload version or checksum are wrong" in error_of(lambda: r.function_restore("bad"))
    assert "Wrong restore policy" in error_of(lambda: server.client().function_restore(dump, "SOMETIMES"))
    assert r.function_flush() is True
    assert plain.execute_command("FUNCTION", "LIST") == []
    assert "Missing library metadata" in error_of(lambda: r.function_load("return 1"))
    assert "Unknown option given: FOO" in error_of(lambda: r.execute_command("FUNCTION", "LOAD", "FOO", LIBRARY))
    assert "No functions registered" in error_of(lambda: r.function_load("#!lua name=empty\nlocal x = 1"))


def test_libraries_survive_a_kill_and_the_script_cache_does_not(tmp_path):
    if REDIS_PORT:
        pytest.skip("restarts the server")
    data = str(tmp_path / "data")
    server = Server(data, "--fsync", "always")
    r = server.client(decode_responses=True)
    r.function_load(LIBRARY)
    r.function_load("#!lua name=gone\nredis.register_function('g', function() return 1 end)")
    r.function_load("#!lua name=other\nredis.register_function('o', function() return 'o1' end)")
    r.function_delete("gone")
    r.function_load("#!lua name=other\nredis.register_function('o', function() return 'o2' end)", replace=True)
    sha = r.script_load("return 'cached'")
    # A snapshot holds them too: the log before it may go.
    assert r.save()
    r.function_load("#!lua name=after\nredis.register_function('a', function() return 'after' end)")
    listed = raw(server, 2).execute_command("FUNCTION", "LIST", "WITHCODE")
    server.kill()
    server = Server(data)
    try:
        r = server.client(decode_responses=True)
        assert raw(server, 2).execute_command("FUNCTION", "LIST", "WITHCODE") == listed
        assert r.fcall("my_incr", 1, "n", 2) == 2
        assert r.fcall("o", 0) == "o2" and r.fcall("a", 0) == "after"
        assert error_of(lambda: r.fcall("g", 0)) == "Function not found"
        assert r.script_exists(sha) == [False], "SCRIPT LOAD's cache is a cache"
        r.function_flush()
        server.kill()
        server = Server(data)
        assert raw(server, 2).execute_command("FUNCTION", "LIST") == []
    finally:
        server.kill()


def test_scripts_inside_multi_and_with_blocked_clients(server):
    r = server.client(decode_responses=True)
    pipe = r.pipeline(transaction=True)
    pipe.eval("return redis.call('incr', KEYS[1])", 1, "c")
    pipe.eval("return redis.call('incr', KEYS[1])", 1, "c")
    pipe.get("c")
    assert pipe.execute() == [1, 2, "2"]
    # A client blocked on a list is served by a script's push.
    blocked = deferred(r, "BLPOP", "queue", 0)
    until(lambda: r.info("clients")["blocked_clients"] == 1, "the client to block")
    assert r.eval("return redis.call('rpush', KEYS[1], 'job')", 1, "queue") == 1
    assert blocked.read_response() == ["queue", "job"]
    # A script runs in the selected keyspace.
    other = server.client(db=3, decode_responses=True)
    other.eval("redis.call('set', 'here', 'db3')", 0)
    assert other.get("here") == "db3" and r.get("here") is None


def test_info_counts_scripts_and_their_errors_once(server):
    r = server.client(decode_responses=True)
    r.script_flush()
    r.config_resetstat()
    r.script_load("return 1")
    r.eval("return redis.call('set', 'x', 'y')", 1, "x")
    error_of(lambda: r.eval("return redis.call('lpush', 'x', 'v')", 1, "x"))
    info = r.info("everything")
    assert info["number_of_cached_scripts"] == 3
    assert info["used_memory_lua"] > 0
    assert info["cmdstat_eval"]["calls"] == 2 and info["cmdstat_eval"]["failed_calls"] == 1
    assert info["cmdstat_set"]["calls"] == 1 and info["cmdstat_lpush"]["failed_calls"] == 1
    assert info["errorstat_WRONGTYPE"] == {"count": 1}, "the script's error is the command's, counted once"
    assert info["total_error_replies"] == 1


def test_a_busy_script_over_maxmemory_can_still_be_killed(server):
    """Judging memory reads every shard, which a running script holds: a server over
    maxmemory must still answer -BUSY, SCRIPT KILL and (Hotset) /metrics meanwhile."""
    r = server.client(decode_responses=True, socket_timeout=DEADLINE)
    r.set("k", "v")
    r.config_set("busy-reply-threshold", 50)
    r.config_set("maxmemory", 1)
    try:
        looping = deferred(r, "EVAL", "while true do end", 0)
        until(lambda: busy(r), "-BUSY over maxmemory")
        if not REDIS_PORT:
            during = urllib.request.urlopen(server.http + "/metrics", timeout=DEADLINE).read().decode()
            assert "hotset_uptime_seconds" in during and "hotset_keyspace_keys{" not in during
        assert r.script_kill() is True
        with pytest.raises(redis.ResponseError, match="Script killed"):
            looping.read_response()
        if not REDIS_PORT:
            after = urllib.request.urlopen(server.http + "/metrics", timeout=DEADLINE).read().decode()
            assert 'hotset_keyspace_keys{keyspace="0"} 1' in after
    finally:
        stop_scripts(r)
        r.config_set("maxmemory", 0)
    assert r.get("k") == "v"


def test_errors_inside_exec_are_counted_once(server):
    r = server.client(decode_responses=True)
    r.config_resetstat()
    r.hset("h", "f", "v")
    pipe = r.pipeline(transaction=True)
    pipe.eval("return redis.call('incr', KEYS[1])", 1, "h")
    pipe.incr("h")
    results = pipe.execute(raise_on_error=False)
    assert [str(result).split()[0] for result in results] == ["WRONGTYPE", "WRONGTYPE"]
    assert error_of(lambda: r.get("h")).startswith("WRONGTYPE")
    info = r.info("everything")
    assert info["errorstat_WRONGTYPE"] == {"count": 3}
    assert info["total_error_replies"] == 3


def test_keyed_scripts_run_side_by_side_and_stay_atomic(server):
    """EVALSHA and FCALL with declared keys run without the server-wide gate, each with its
    keys' shards locked: many connections move one unit between two counters at once, and
    readers (one command, or a transaction) never see the units out of balance."""
    r = server.client(decode_responses=True)
    r.mset({"left": 0, "right": 0})
    move = r.script_load(
        "local l = tonumber(redis.call('get', KEYS[1])) redis.call('set', KEYS[1], l - 1) "
        "local r = tonumber(redis.call('get', KEYS[2])) redis.call('set', KEYS[2], r + 1) return r + 1")
    r.function_load("#!lua name=mover\nredis.register_function('move', function(keys) "
                    "redis.call('decr', keys[1]) return redis.call('incr', keys[2]) end)", replace=True)
    stop = threading.Event()
    failures = []

    def reader(transaction):
        c = server.client(decode_responses=True)
        while not stop.is_set():
            if transaction:
                pipe = c.pipeline(transaction=True)
                pipe.get("left").get("right")
                left, right = pipe.execute()
            else:
                left, right = c.mget("left", "right")
            if int(left) + int(right) != 0:
                failures.append((left, right))

    def writer(by_function):
        c = server.client(decode_responses=True)
        for _ in range(500):
            if by_function:
                c.fcall("move", 2, "left", "right")
            else:
                c.evalsha(move, 2, "left", "right")

    readers = [threading.Thread(target=reader, args=(t,)) for t in (False, True)]
    writers = [threading.Thread(target=writer, args=(i % 2 == 1,)) for i in range(6)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert not failures, failures[:5]
    assert r.mget("left", "right") == ["-3000", "3000"]


def other_shard_keys(prefix, count):
    """Keys named alike: among a few dozen, several land on other shards than the first."""
    return [f"{prefix}:{i}" for i in range(count)]


def test_a_keyed_script_reaching_beyond_its_keys(server):
    """A script may reach keys it did not declare, and the whole keyspace, as in Redis:
    before it writes it runs again with every shard; after, it takes the shards it needs."""
    r = server.client(decode_responses=True)
    others = other_shard_keys("undeclared", 40)
    r.mset({key: 1 for key in others})
    # Reads beyond its keys, then writes: the keyed run is abandoned and done again.
    read_then_write = r.script_load(
        "local n = 0 for i = 1, #ARGV do n = n + tonumber(redis.call('get', ARGV[i])) end "
        "redis.call('set', KEYS[1], n) return n")
    assert r.evalsha(read_then_write, 1, "total", *others) == 40
    assert r.get("total") == "40"
    # Writes its key, then keys it did not declare, then the whole keyspace.
    write_then_reach = r.script_load(
        "redis.call('set', KEYS[1], 'first') for i = 1, #ARGV do redis.call('incr', ARGV[i]) end "
        "return #redis.call('keys', 'undeclared:*')")
    assert r.evalsha(write_then_reach, 1, "mine", *others) == 40
    assert r.get("mine") == "first"
    assert r.mget(others) == ["2"] * 40
    # A function likewise.
    r.function_load("#!lua name=reach\nredis.register_function('reach', function(keys, args) "
                    "redis.call('set', keys[1], 'x') return redis.call('dbsize') end)", replace=True)
    assert r.fcall("reach", 1, "fn-key") == r.dbsize()


def test_a_long_keyed_script_can_be_killed_or_keeps_the_server_busy(server, tmp_path):
    """A keyed script that runs long without writing goes the gated way and SCRIPT KILL
    stops it; one that wrote keeps the server busy (-BUSY, UNKILLABLE) like a gated one."""
    r = server.client(decode_responses=True)
    r.config_set("busy-reply-threshold", 50)
    loop = r.script_load("local i = 0 while true do i = i + 1 end")
    try:
        looping = deferred(r, "EVALSHA", loop, 1, "spin")
        until(lambda: busy(r), "-BUSY")
        assert error_of(r.ping) == BUSY_EVAL
        assert r.script_kill() is True
        with pytest.raises(redis.ResponseError, match="Script killed by user with SCRIPT KILL"):
            looping.read_response()
        until(lambda: r.ping(), "PONG after the kill")
    finally:
        stop_scripts(r)
    if REDIS_PORT:
        return
    wrote = r.script_load("redis.call('set', KEYS[1], 'half') while true do end")
    writing = deferred(r, "EVALSHA", wrote, 1, "half")
    until(lambda: busy(r), "-BUSY after a write")
    assert error_of(r.ping) == BUSY_EVAL
    assert error_of(r.script_kill).startswith("UNKILLABLE")
    try:
        r.shutdown(nosave=True)
    except redis.ConnectionError:
        pass
    assert server.proc.wait(timeout=DEADLINE) == 0
    writing.disconnect()
    again = Server(str(tmp_path / "data"))
    try:
        assert again.client().get("half") is None, "a script's writes are one record, at its end"
    finally:
        again.kill()
