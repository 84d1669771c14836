"""The `server` the Redis-validated test files run against: the hotset binary, or, with
HOTSET_TEST_REDIS_PORT set, a redis-server already listening on that port (flushed at the
start of each test), which is how their expected values were checked to be Redis'
behaviour. Import `server` (a pytest fixture), `REDIS_PORT`, `raw` and `wire` from here."""
import os
import socket

import pytest
import redis

from test_redis_py import Server

REDIS_PORT = os.environ.get("HOTSET_TEST_REDIS_PORT")


class RealRedis:
    """A redis-server someone else started, standing in for hotset."""

    host = "127.0.0.1"

    def __init__(self, port):
        self.port = int(port)
        self.client().flushall()

    def client(self, **kwargs):
        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def kill(self):
        pass


@pytest.fixture
def server(tmp_path):
    if REDIS_PORT:
        yield RealRedis(REDIS_PORT)
        return
    s = Server(str(tmp_path / "data"))
    yield s
    s.kill()


def raw(server, protocol, **kwargs):
    """A client whose replies are not reshaped by redis-py's callbacks."""
    r = server.client(protocol=protocol, decode_responses=True, **kwargs)
    r.response_callbacks.clear()
    return r


def wire(server, protocol, *command):
    """The exact bytes of the reply to `command` (sent after HELLO 3 for RESP3)."""
    with socket.create_connection((server.host, server.port)) as sock:
        f = sock.makefile("rb")

        def send(*args):
            parts = [str(a).encode() for a in args]
            sock.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))

        def read():
            line = f.readline()
            kind, size = line[:1], line[1:-2]
            if kind in (b"$", b"=") and size != b"-1":
                return line + f.read(int(size) + 2)
            if kind in (b"*", b"~", b">", b"%") and size != b"-1":
                return line + b"".join(read() for _ in range(int(size) * (2 if kind == b"%" else 1)))
            return line

        if protocol == 3:
            send("HELLO", 3)
            read()
        send(*command)
        return read()
