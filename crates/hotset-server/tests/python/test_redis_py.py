"""redis-py against the real hotset binary (RESP2 and RESP3), as an application would use it.

The binary comes from HOTSET_BIN (scripts/test sets it after the release build). Each test
starts its own server on ports the kernel picks and waits for its ready line.
"""
import os
import signal
import subprocess
import tempfile

import pytest
import redis

BIN = os.environ.get("HOTSET_BIN", os.path.join(os.path.dirname(__file__), "../../../../target/release/hotset"))


class Server:
    def __init__(self, data, *extra):
        self.proc = subprocess.Popen(
            [BIN, "serve", "--data", data, "--resp-port", "0", "--http-port", "0", *extra],
            stdout=subprocess.PIPE,
            env={**os.environ, "HOTSET_LOG": "warn"},
            text=True,
        )
        words = self.proc.stdout.readline().split()
        assert words[:3] == ["hotset", "ready:", "resp"], words
        host, port = words[3].rsplit(":", 1)
        self.host, self.port = host, int(port)
        # The ready line goes on `http ADDR data DIR`.
        assert words[4] == "http", words
        self.http = f"http://{words[5]}"

    def client(self, **kwargs):
        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=30) == 0

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture
def data():
    with tempfile.TemporaryDirectory() as path:
        yield path


@pytest.mark.parametrize("protocol", [2, 3])
def test_everyday_commands(data, protocol):
    server = Server(data)
    try:
        r = server.client(protocol=protocol, decode_responses=True)
        assert r.ping()
        assert r.set("user:1", "ada", ex=100)
        assert r.get("user:1") == "ada"
        assert 99 <= r.ttl("user:1") <= 100
        assert r.set("user:1", "bob", nx=True) is None
        assert r.incr("visits") == 1 and r.incrby("visits", 9) == 10
        assert r.incrbyfloat("price", 2.5) == 2.5
        assert r.mset({"a": "1", "b": "2"}) and r.mget("a", "missing", "b") == ["1", None, "2"]
        assert r.hset("h", mapping={"x": "1", "y": "2"}) == 2
        assert r.hgetall("h") == {"x": "1", "y": "2"}
        assert r.hincrby("h", "x", 5) == 6
        assert sorted(r.scan_iter(match="user:*", count=5)) == ["user:1"]
        assert r.type("h") == "hash" and r.exists("a", "b", "zz") == 2
        assert r.delete("a", "b") == 2
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            r.get("h")
        with pytest.raises(redis.ResponseError, match="not an integer"):
            r.incr("user:1")
        with pytest.raises(redis.ResponseError, match="unknown command"):
            r.execute_command("NOSUCH")
        pipe = r.pipeline(transaction=True)
        pipe.incr("tx").incr("tx").get("tx")
        assert pipe.execute() == [1, 2, "2"]
        pipe = r.pipeline(transaction=False)
        for i in range(100):
            pipe.set(f"p:{i}", i)
        assert all(pipe.execute())
        assert r.dbsize() == len(r.keys("*"))
        r.select(3)
        assert r.get("visits") is None
        assert r.client_setname("app") and r.client_getname() == "app"
        assert r.info("server")["redis_version"]
    finally:
        server.stop()


def test_persistence_across_restart_and_kill(data):
    server = Server(data, "--fsync", "always")
    r = server.client()
    for i in range(100):
        r.set(f"k{i}", i)
    r.hset("h", "f", "v")
    server.kill()
    server = Server(data)
    try:
        r = server.client(decode_responses=True)
        assert [r.get(f"k{i}") for i in range(100)] == [str(i) for i in range(100)]
        assert r.hget("h", "f") == "v"
    finally:
        server.stop()
