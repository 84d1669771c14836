"""Client-side caching (CLIENT TRACKING) against the real hotset binary, as Redis 7.0 does it:
the invalidation pushes of the default, BCAST, OPTIN/OPTOUT and NOLOOP modes, redirection to
a RESP2 connection subscribed to __redis__:invalidate (or to a RESP3 one), a broken
redirection, flushes, expiry, the tracking table's size limit, and what CLIENT GETREDIR,
CLIENT TRACKINGINFO, CLIENT LIST and INFO say about it.

Each test starts its own server (see test_redis_py.Server). With HOTSET_TEST_REDIS_PORT set,
the tests run instead against a redis-server already listening on that port (flushed at the
start of each test), which is how the expected frames were checked to be Redis' behaviour
(7.0.15).

Pushes need exact control of the wire, so the tests talk through `Conn`, a raw RESP2/RESP3
client that reads one frame at a time, each read with a timeout: a push that never comes
fails the test instead of hanging it. That no push came is checked with `quiet`: a PING on
the connection, whose PONG must be the very next frame (a queued push would come first).
"""

import socket
import time

import pytest

from peer import server  # noqa: F401 (server: a fixture)

TIMEOUT = 5


class Push(list):
    """A RESP3 push frame (`>`)."""


class Set(list):
    """A RESP3 set frame (`~`), kept in wire order."""


class Error(str):
    """An error reply (`-` or `!`)."""


class Conn:
    """One connection speaking raw RESP: `send` a command, `read` exactly one frame."""

    def __init__(self, server, protocol=2):
        self.sock = socket.create_connection((server.host, server.port), timeout=TIMEOUT)
        self.file = self.sock.makefile("rb")
        self.protocol = protocol
        self.subscribed = False
        if protocol == 3:
            hello = self.call("HELLO", 3)
            assert isinstance(hello, dict) and hello["proto"] == 3, hello
        self.id = self.call("CLIENT", "ID")
        assert isinstance(self.id, int), self.id

    def send(self, *args):
        parts = [str(a).encode() for a in args]
        self.sock.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))

    def read(self):
        line = self.file.readline()
        assert line.endswith(b"\r\n"), f"connection closed or cut: {line!r}"
        kind, rest = line[:1], line[1:-2].decode()
        if kind == b"+":
            return rest
        if kind == b"-":
            return Error(rest)
        if kind in (b":", b"("):
            return int(rest)
        if kind == b",":
            return float(rest)
        if kind == b"#":
            return rest == "t"
        if kind == b"_":
            return None
        if kind in (b"$", b"=", b"!"):
            if int(rest) < 0:
                return None
            data = self.file.read(int(rest) + 2)
            assert data.endswith(b"\r\n"), data
            text = data[:-2].decode()
            return Error(text) if kind == b"!" else text[4:] if kind == b"=" else text
        if kind in (b"*", b"~", b">"):
            if int(rest) < 0:
                return None
            items = [self.read() for _ in range(int(rest))]
            return {b"*": list, b"~": Set, b">": Push}[kind](items)
        if kind == b"%":
            pairs = [(self.read(), self.read()) for _ in range(int(rest))]
            return dict(pairs)
        raise AssertionError(f"not a RESP frame: {line!r}")

    def call(self, *args):
        self.send(*args)
        return self.read()

    def ok(self, *args):
        reply = self.call(*args)
        assert reply == "OK" and not isinstance(reply, Error), (args, reply)

    def error(self, *args):
        reply = self.call(*args)
        assert isinstance(reply, Error), (args, reply)
        return reply

    def close(self):
        """QUIT, then reads to the end: once the server has closed the socket, this client is gone."""
        try:
            self.send("QUIT")
            while self.sock.recv(65536):
                pass
        except OSError:
            pass
        self.sock.close()


@pytest.fixture
def connect(server):  # noqa: F811 (server: the fixture)
    """`connect(protocol)` opens a Conn; all are closed (and gone from the server) after the test."""
    conns = []

    def open_conn(protocol=2):
        conn = Conn(server, protocol)
        conns.append(conn)
        return conn

    yield open_conn
    for conn in conns:
        conn.close()


def invalidated(conn):
    """Reads one frame, which must be an invalidation (a push in RESP3, a __redis__:invalidate
    message in a subscribed RESP2 connection), and returns its keys: None for a flush."""
    frame = conn.read()
    if conn.protocol == 3:
        assert isinstance(frame, Push) and len(frame) == 2 and frame[0] == "invalidate", frame
        return frame[1]
    assert type(frame) is list and frame[:2] == ["message", "__redis__:invalidate"] and len(frame) == 3, frame
    return frame[2]


def quiet(conn):
    """Asserts that nothing was pushed to `conn`: the reply to a PING is its next frame."""
    frame = conn.call("PING")
    expected = ["pong", ""] if conn.subscribed and conn.protocol == 2 else "PONG"
    assert frame == expected and not isinstance(frame, Push), f"expected only the PONG, got {frame!r}"


def track(conn, *options):
    conn.ok("CLIENT", "TRACKING", "on", *options)


def subscribe_to_invalidations(conn):
    assert conn.call("SUBSCRIBE", "__redis__:invalidate") == ["subscribe", "__redis__:invalidate", 1]
    conn.subscribed = True


def info(conn, section):
    text = conn.call("INFO", section)
    assert isinstance(text, str) and not isinstance(text, Error), text
    return dict(line.split(":", 1) for line in text.splitlines() if line and not line.startswith("#"))


def client_list_entry(conn, client_id):
    text = conn.call("CLIENT", "LIST")
    for line in text.splitlines():
        fields = dict(field.partition("=")[::2] for field in line.split())
        if fields["id"] == str(client_id):
            return fields
    raise AssertionError(f"client {client_id} is not in CLIENT LIST: {text}")


def trackinginfo(conn):
    """CLIENT TRACKINGINFO as a dict, its flags as a Python set (the order is Redis' own)."""
    reply = conn.call("CLIENT", "TRACKINGINFO")
    if conn.protocol == 2:
        assert type(reply) is list and reply[0::2] == ["flags", "redirect", "prefixes"], reply
        reply = dict(zip(reply[0::2], reply[1::2]))
    else:
        assert isinstance(reply, dict) and isinstance(reply["flags"], Set), reply
    return {**reply, "flags": set(reply["flags"])}


def test_default_mode_invalidates_each_key_read_once(connect):
    a, b = connect(3), connect(2)
    b.ok("SET", "k", "v1")
    track(a)
    assert a.call("GET", "k") == "v1"
    b.ok("SET", "k", "v2")
    assert invalidated(a) == ["k"]
    b.ok("SET", "k", "v3")
    quiet(a)  # forgotten after one invalidation
    b.ok("SET", "never-read", "x")
    quiet(a)
    assert a.call("GET", "k") == "v3", "read again: tracked again"
    assert b.call("DEL", "k") == 1
    assert invalidated(a) == ["k"]
    # A missing key read is tracked too; every key of an MGET is, and each gets its own push.
    assert a.call("MGET", "m1", "m2", "m3") == [None, None, None]
    b.ok("MSET", "m1", "1", "m2", "2", "m3", "3", "other", "4")
    assert sorted(invalidated(a) for _ in range(3)) == [["m1"], ["m2"], ["m3"]]
    quiet(a)


def test_writers_own_invalidation_comes_after_its_reply(connect):
    a = connect(3)
    track(a)
    assert a.call("HSET", "h", "f", "1") == 1
    assert a.call("HGET", "h", "f") == "1"
    reply = a.call("HDEL", "h", "f")
    assert reply == 1 and not isinstance(reply, Push), reply
    assert invalidated(a) == ["h"]
    quiet(a)
    # In a transaction: the EXEC array, then the invalidation.
    assert a.call("HSET", "h", "f", "2") == 1
    assert a.call("HGET", "h", "f") == "2"
    a.ok("MULTI")
    assert a.call("HSET", "h", "f", "3") == "QUEUED"
    assert a.call("HGET", "h", "f") == "QUEUED"
    reply = a.call("EXEC")
    assert reply == [0, "3"] and not isinstance(reply, Push), reply
    assert invalidated(a) == ["h"]
    quiet(a)


def test_noloop_skips_the_clients_own_writes(connect):
    a, b = connect(3), connect(2)
    track(a, "NOLOOP")
    assert a.call("GET", "k") is None
    a.ok("SET", "k", "mine")
    quiet(a)
    assert a.call("GET", "k") == "mine"
    b.ok("SET", "k", "theirs")
    assert invalidated(a) == ["k"]
    quiet(a)


def test_redirect_to_resp2_subscriber_and_to_resp3_connection(connect):
    a, b = connect(2), connect(2)
    sub2, sub3 = connect(2), connect(3)
    subscribe_to_invalidations(sub2)
    track(a, "REDIRECT", sub2.id)
    assert a.call("GET", "k") is None
    b.ok("SET", "k", "1")
    assert invalidated(sub2) == ["k"]
    quiet(sub2)
    quiet(a)
    assert a.call("GET", "k") == "1"
    b.ok("FLUSHALL")
    assert invalidated(sub2) is None  # the message's keys: a null bulk ($-1)
    quiet(sub2)
    b.ok("SET", "k", "1")
    a.ok("CLIENT", "TRACKING", "off")
    track(a, "REDIRECT", sub3.id)
    assert a.call("GET", "k") == "1"
    b.ok("SET", "k", "2")
    assert invalidated(sub3) == ["k"]
    quiet(sub3)
    quiet(a)
    assert a.error("CLIENT", "TRACKING", "on", "REDIRECT", 987654321) == (
        "ERR The client ID you want redirect to does not exist"
    )


def test_broken_redirect_is_reported_to_the_tracking_client(connect):
    a, b, target = connect(3), connect(2), connect(3)
    track(a, "REDIRECT", target.id)
    assert a.call("GET", "k") is None
    target.ok("QUIT")
    assert target.sock.recv(1) == b"", "QUIT closes the connection"
    b.ok("SET", "k", "1")
    frame = a.read()
    assert isinstance(frame, Push) and frame == ["tracking-redir-broken", target.id], frame
    quiet(a)
    assert trackinginfo(a) == {"flags": {"on", "broken_redirect"}, "redirect": target.id, "prefixes": []}
    entry = client_list_entry(b, a.id)
    assert "t" in entry["flags"] and "R" in entry["flags"], entry
    assert entry["redir"] == str(target.id)


def test_bcast_prefixes_batch_the_keys_of_one_transaction(connect):
    a, every, b = connect(3), connect(3), connect(2)
    track(a, "BCAST", "PREFIX", "a:", "PREFIX", "b:")
    track(every, "BCAST")
    b.ok("MULTI")
    for key in ("a:1", "a:2", "b:1", "c:1"):
        assert b.call("SET", key, "v") == "QUEUED"
    assert b.call("EXEC") == ["OK"] * 4
    assert sorted(sorted(invalidated(a)) for _ in range(2)) == [["a:1", "a:2"], ["b:1"]]
    quiet(a)
    assert sorted(invalidated(every)) == ["a:1", "a:2", "b:1", "c:1"]
    quiet(every)
    # Keys needn't have been read; a write outside every prefix reaches only `every`.
    b.ok("SET", "zzz", "1")
    assert invalidated(every) == ["zzz"]
    quiet(a)
    b.ok("SET", "b:2", "1")
    assert invalidated(a) == ["b:2"]
    assert invalidated(every) == ["b:2"]


def test_bcast_and_prefix_errors(connect):
    a = connect(3)
    overlap = "Prefixes for a single client must not overlap."
    assert a.error("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FOOBAR", "PREFIX", "FOO") == (
        f"ERR Prefix 'FOOBAR' overlaps with another provided prefix 'FOO'. {overlap}"
    )
    assert a.error("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FOO", "PREFIX", "FOOBAR") == (
        f"ERR Prefix 'FOO' overlaps with another provided prefix 'FOOBAR'. {overlap}"
    )
    assert trackinginfo(a)["flags"] == {"off"}, "a rejected command turns nothing on"
    track(a, "BCAST", "PREFIX", "FOO")
    assert a.error("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FOOBAR") == (
        f"ERR Prefix 'FOOBAR' overlaps with an existing prefix 'FOO'. {overlap}"
    )
    assert a.error("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "F") == (
        f"ERR Prefix 'F' overlaps with an existing prefix 'FOO'. {overlap}"
    )
    track(a, "BCAST", "PREFIX", "BAR")
    assert trackinginfo(a)["prefixes"] == ["BAR", "FOO"]
    switch = (
        "ERR You can't switch BCAST mode on/off before disabling tracking for this client, "
        "and then re-enabling it with a different mode."
    )
    assert a.error("CLIENT", "TRACKING", "on") == switch
    a.ok("CLIENT", "TRACKING", "off")
    track(a)
    assert a.error("CLIENT", "TRACKING", "on", "BCAST") == switch
    a.ok("CLIENT", "TRACKING", "off")
    assert a.error("CLIENT", "TRACKING", "on", "PREFIX", "x") == "ERR PREFIX option requires BCAST mode to be enabled"
    assert trackinginfo(a)["flags"] == {"off"}


def test_optin_and_optout_follow_client_caching(connect):
    a, b = connect(3), connect(2)
    assert a.error("CLIENT", "CACHING", "yes") == (
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
    )
    track(a)
    assert a.error("CLIENT", "CACHING", "yes") == (
        "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
    )
    a.ok("CLIENT", "TRACKING", "off")
    track(a, "OPTIN")
    assert a.call("GET", "plain") is None
    a.ok("CLIENT", "CACHING", "yes")
    assert a.call("GET", "cached") is None
    assert a.call("GET", "after") is None, "CACHING YES covers only the next command"
    b.ok("MSET", "plain", "1", "cached", "1", "after", "1")
    assert invalidated(a) == ["cached"]
    quiet(a)
    a.ok("CLIENT", "TRACKING", "off")
    track(a, "OPTOUT")
    assert a.error("CLIENT", "CACHING", "yes") == (
        "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
    )
    a.ok("CLIENT", "CACHING", "no")
    assert a.call("GET", "plain") == "1"
    assert a.call("GET", "after") == "1", "CACHING NO covers only the next command"
    b.ok("MSET", "plain", "2", "after", "2")
    assert invalidated(a) == ["after"]
    quiet(a)


def test_flushes_invalidate_every_tracking_client(connect):
    a, bcast, b = connect(3), connect(3), connect(2)
    untracked = connect(3)
    track(a)
    track(bcast, "BCAST", "PREFIX", "x:")
    b.ok("MSET", "k", "1", "x:1", "1")
    assert invalidated(bcast) == ["x:1"]
    assert a.call("GET", "k") == "1"
    b.ok("FLUSHALL")
    assert invalidated(a) is None
    assert invalidated(bcast) is None
    quiet(a)
    quiet(bcast)
    quiet(untracked)
    b.ok("SET", "k", "2")
    quiet(a)  # the flush forgot it
    assert a.call("GET", "k") == "2"
    b.ok("FLUSHDB")
    assert invalidated(a) is None
    assert invalidated(bcast) is None
    quiet(a)
    quiet(bcast)
    # The flushing client itself: its reply, then the push.
    a.ok("FLUSHALL")
    assert invalidated(a) is None
    assert invalidated(bcast) is None
    quiet(a)


def test_active_expiry_invalidates(connect):
    a, b = connect(3), connect(2)
    track(a)
    b.ok("SET", "k", "v", "PX", 50)
    assert a.call("GET", "k") == "v", "read before it expired (or the test can't tell)"
    assert invalidated(a) == ["k"]  # waits (up to TIMEOUT) for active expiry
    quiet(a)
    assert b.call("EXISTS", "k") == 0


def test_tracking_table_max_keys_sheds_keys(connect):
    a, admin = connect(3), connect(2)
    keys = [f"k{i}" for i in range(50)]
    admin.ok("MSET", *[x for key in keys for x in (key, "v")])
    track(a)
    assert a.call("MGET", *keys) == ["v"] * 50
    assert info(admin, "stats")["tracking_total_keys"] == "50"
    old = admin.call("CONFIG", "GET", "tracking-table-max-keys")
    assert old[0] == "tracking-table-max-keys"
    admin.ok("CONFIG", "SET", "tracking-table-max-keys", 10)
    try:
        shed = [invalidated(a) for _ in range(40)]
        quiet(a)
        assert all(len(keys_) == 1 for keys_ in shed), shed
        shed = {keys_[0] for keys_ in shed}
        assert len(shed) == 40 and shed <= set(keys), shed
        stats = info(admin, "stats")
        assert (stats["tracking_total_keys"], stats["tracking_total_items"]) == ("10", "10")
        # The 10 kept are still tracked.
        admin.ok("MSET", *[x for key in keys for x in (key, "w")])
        kept = sorted(invalidated(a)[0] for _ in range(10))
        assert sorted(set(keys) - shed) == kept
        quiet(a)
    finally:
        admin.ok("CONFIG", "SET", "tracking-table-max-keys", old[1])
    assert admin.call("CONFIG", "GET", "tracking-table-max-keys") == old


def test_info_getredir_trackinginfo_and_client_list(connect):
    a, b, c, d, off, admin = connect(3), connect(3), connect(3), connect(3), connect(2), connect(2)
    track(a)
    track(b, "REDIRECT", a.id)
    track(c, "BCAST", "PREFIX", "a:", "PREFIX", "b:")
    track(d, "BCAST", "PREFIX", "a:")
    assert a.call("MGET", "k1", "k2") == [None, None]
    assert b.call("MGET", "k2", "k3") == [None, None]
    assert info(admin, "clients")["tracking_clients"] == "4"
    stats = info(admin, "stats")
    assert (
        stats["tracking_total_keys"],
        stats["tracking_total_items"],
        stats["tracking_total_prefixes"],
    ) == ("3", "4", "2")

    assert off.call("CLIENT", "GETREDIR") == -1
    assert a.call("CLIENT", "GETREDIR") == 0
    assert b.call("CLIENT", "GETREDIR") == a.id
    assert c.call("CLIENT", "GETREDIR") == 0

    assert trackinginfo(off) == {"flags": {"off"}, "redirect": -1, "prefixes": []}
    assert trackinginfo(a) == {"flags": {"on"}, "redirect": 0, "prefixes": []}
    assert trackinginfo(b) == {"flags": {"on"}, "redirect": a.id, "prefixes": []}
    assert trackinginfo(c) == {"flags": {"on", "bcast"}, "redirect": 0, "prefixes": ["a:", "b:"]}
    off.ok("CLIENT", "TRACKING", "on", "OPTIN", "NOLOOP")
    off.ok("CLIENT", "CACHING", "yes")
    assert trackinginfo(off) == {"flags": {"on", "optin", "caching-yes", "noloop"}, "redirect": 0, "prefixes": []}
    assert trackinginfo(off) == {"flags": {"on", "optin", "caching-yes", "noloop"}, "redirect": 0, "prefixes": []}
    off.ok("CLIENT", "TRACKING", "off")
    off.ok("CLIENT", "TRACKING", "on", "OPTOUT")
    off.ok("CLIENT", "CACHING", "no")
    assert trackinginfo(off) == {"flags": {"on", "optout", "caching-no"}, "redirect": 0, "prefixes": []}
    off.ok("CLIENT", "TRACKING", "off")

    entries = {conn.id: client_list_entry(admin, conn.id) for conn in (a, b, c, admin)}
    assert "t" in entries[a.id]["flags"] and "B" not in entries[a.id]["flags"]
    assert entries[a.id]["redir"] == "0"
    assert entries[b.id]["redir"] == str(a.id)
    assert "t" in entries[c.id]["flags"] and "B" in entries[c.id]["flags"]
    assert "t" not in entries[admin.id]["flags"] and entries[admin.id]["redir"] == "-1"

    b.ok("CLIENT", "TRACKING", "off")
    d.ok("CLIENT", "TRACKING", "off")
    assert info(admin, "clients")["tracking_clients"] == "2"
    assert info(admin, "stats")["tracking_total_prefixes"] == "2"  # c still has a: and b:
    c.ok("CLIENT", "TRACKING", "off")
    a.ok("CLIENT", "TRACKING", "off")
    assert info(admin, "clients")["tracking_clients"] == "0"
    assert info(admin, "stats")["tracking_total_prefixes"] == "0"


def test_blocked_blmove_reads_its_element_before_the_invalidation(connect):
    a, b, admin = connect(3), connect(2), connect(2)
    track(a)
    assert a.call("LRANGE", "dst", 0, -1) == []
    a.send("BLMOVE", "src", "dst", "LEFT", "RIGHT", 0)
    deadline = time.monotonic() + TIMEOUT
    while info(admin, "clients")["blocked_clients"] != "1":
        assert time.monotonic() < deadline, "BLMOVE never blocked"
    assert b.call("RPUSH", "src", "x") == 1
    reply = a.read()
    assert reply == "x" and not isinstance(reply, Push), reply
    assert invalidated(a) == ["dst"]
    quiet(a)
    assert b.call("LRANGE", "dst", 0, -1) == ["x"]


def test_resp2_tracking_without_redirect_pushes_nothing(connect):
    a, b = connect(2), connect(2)
    track(a)
    assert trackinginfo(a) == {"flags": {"on"}, "redirect": 0, "prefixes": []}
    assert a.call("GET", "k") is None
    b.ok("SET", "k", "1")
    quiet(a)
    assert a.call("GET", "k") == "1"
    b.ok("SET", "k", "2")
    assert a.call("MGET", "k", "nope") == ["2", None]
    b.ok("FLUSHALL")
    quiet(a)


def test_bad_tracking_arguments(connect):
    a, other = connect(3), connect(2)
    for args, message in [
        (("maybe",), "ERR syntax error"),
        (("on", "REDIRECT", "notanumber"), "ERR value is not an integer or out of range"),
        ((), "ERR wrong number of arguments for 'client|tracking' command"),
        (("on", "OPTIN", "OPTOUT"), "ERR You can't specify both OPTIN mode and OPTOUT mode"),
    ]:
        assert a.error("CLIENT", "TRACKING", *args) == message
        assert trackinginfo(a)["flags"] == {"off"}
        other.ok("SET", "k", "v")
        assert other.call("GET", "k") == "v"
    assert a.error("CLIENT", "CACHING", "maybe") in (
        "ERR syntax error",
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
    )
    track(a, "OPTIN")
    assert a.error("CLIENT", "CACHING", "maybe") == "ERR syntax error"
    assert a.error("CLIENT", "TRACKING", "on", "OPTOUT") == (
        "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, "
        "and then re-enabling it with a different mode."
    )
    assert a.call("PING") == "PONG"
