"""The client mode against a real `hotset serve`: addresses, passwords, a server that goes
away, connections shared by threads, and data written through the client read back by
the server's other protocols (and the other way round). And, against a fake server that
holds its reply, that a call waiting inside Rust lets other Python threads run."""
import socket
import subprocess
import tempfile
import threading

import hotset
import pytest

from conftest import ITEM_INDEXES, Server, sample_items


def test_code_moves_between_embedded_and_server_by_changing_one_line(server, tmp_path):
    def app(db):
        for name in db.namespaces():
            db.drop_namespace(name)
        db.create_namespace("items", indexes=ITEM_INDEXES)
        db.upsert_many("items", sample_items(100))
        with db.transaction("items") as tx:
            tx.delete(1)
        r = db.query("items").where("year", ">", 2010).match("description", "red").sort("year").sort("id") \
            .limit(5).total().execute()
        return r.items, r.total, db.sql("SELECT COUNT(*) FROM items").items

    embedded = app(hotset.open(tmp_path))
    remote = app(hotset.connect(server.url))
    assert embedded == remote and embedded[1] > 0


def test_writes_through_the_client_are_seen_by_redis_cli_and_back(server):
    db = hotset.connect(server.url)
    db.create_namespace("shared", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    try:
        db.upsert("shared", {"id": 1, "who": "python"})
        host, port = server.address.rsplit(":", 1)
        cli = ["redis-cli", "-h", host, "-p", port]
        seen = subprocess.run(cli + ["DOC.GET", "shared", "1"], capture_output=True, text=True, check=True)
        assert '"who":"python"' in seen.stdout
        subprocess.run(cli + ["DOC.UPSERT", "shared", '{"id": 2, "who": "cli"}'], capture_output=True, check=True)
        assert db.get("shared", 2) == {"id": 2, "who": "cli"}
    finally:
        db.drop_namespace("shared")


def test_addresses_are_checked():
    with pytest.raises(hotset.ConnectionError, match="not a hotset:// address"):
        hotset.connect("redis://127.0.0.1:7379")
    with pytest.raises(hotset.ConnectionError, match="not a port number"):
        hotset.connect("hotset://127.0.0.1:http")
    with pytest.raises(ValueError, match="timeout"):
        hotset.connect("hotset://127.0.0.1:1", timeout=-1)
    # nothing listens on port 1
    with pytest.raises(hotset.ConnectionError, match="127.0.0.1:1"):
        hotset.connect("hotset://127.0.0.1:1", timeout=5)


def test_a_password_protected_server():
    with tempfile.TemporaryDirectory() as data:
        s = Server(data, "--password", "s3cret")
        try:
            # AuthError is a ConnectionError: code written for either catches it.
            for url in (s.url, f"hotset://:wrong@{s.address}"):
                with pytest.raises(hotset.AuthError) as raised:
                    hotset.connect(url, timeout=10)
                assert raised.value.code == "auth"
                assert isinstance(raised.value, hotset.ConnectionError)
            db = hotset.connect(f"hotset://:s3cret@{s.address}", timeout=10)
            db.create_namespace("n", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
            assert db.namespaces() == ["n"]
        finally:
            s.stop()


def test_a_stopped_server_raises_connection_error_and_a_restarted_one_serves_again():
    with tempfile.TemporaryDirectory() as data:
        s = Server(data)
        db = hotset.connect(s.url, timeout=10)
        db.create_namespace("n", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
        db.upsert("n", {"id": 1})
        s.stop()
        with pytest.raises(hotset.ConnectionError):
            db.get("n", 1)
        s = Server(data)  # the data folder comes back on a new port
        try:
            assert hotset.connect(s.url).get("n", 1) == {"id": 1}
        finally:
            s.stop()


def test_threads_share_one_client(server):
    db = hotset.connect(server.url)
    db.create_namespace("par", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True},
                                        {"field": "g", "type": "int", "index": "tree"}])
    try:
        db.upsert_many("par", [{"id": i, "g": i % 10} for i in range(1000)])
        errors = []

        def worker(k):
            try:
                for i in range(100):
                    g = (k + i) % 10
                    r = db.query("par").where("g", "=", g).limit(0).total().execute()
                    assert r.total == 100
                    db.upsert("par", {"id": 5000 + k * 100 + i, "g": 99})
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert db.query("par").where("g", "=", 99).total().limit(0).execute().total == 600
    finally:
        db.drop_namespace("par")


def test_server_errors_keep_the_connection_usable(server):
    db = hotset.connect(server.url)
    for _ in range(3):
        with pytest.raises(hotset.QueryError):
            db.sql("SELEKT * FROM items")
        with pytest.raises(hotset.NotFoundError):
            db.get("nowhere", 1)
    assert isinstance(db.namespaces(), list)


# ---- the GIL is released while a call works: a fake server holds the reply

def read_command(reader):
    """One RESP command (an array of bulk strings) from `reader`, as a list of bytes."""
    count = int(reader.readline()[1:])
    args = []
    for _ in range(count):
        size = int(reader.readline()[1:])
        args.append(reader.read(size + 2)[:-2])
    return args


def test_a_call_waiting_inside_rust_lets_other_python_threads_run():
    """A call is inside Rust (it sent its request and waits for the reply) while another
    Python thread runs from start to end; only then does the fake server, a thread of this
    process, reply. Were the GIL held through the call, neither the fake server nor the
    main thread nor the other thread could run while it waits: the handshake below would
    stall until the client's timeout ended the call with an error, and the test fails.
    Covers `Database` calls and `Query.execute`, the two ways a call reaches the backend
    (the same code runs them embedded)."""
    listener = socket.create_server(("127.0.0.1", 0))
    url = "hotset://127.0.0.1:%d" % listener.getsockname()[1]
    calls = [
        (lambda db: db.namespaces(), b"*1\r\n$5\r\nitems\r\n", ["items"]),
        (lambda db: db.query("items").execute().items, b'$20\r\n{"items":[{"id":7}]}\r\n', [{"id": 7}]),
    ]
    request_seen, release = threading.Event(), threading.Event()
    events = []

    def serve():
        conn, _ = listener.accept()
        reader = conn.makefile("rb")
        with conn, reader:
            assert read_command(reader) == [b"DOC.ERRORS", b"JSON"]
            conn.sendall(b"+OK\r\n")
            for _, reply, _ in calls:
                events.append(("request", read_command(reader)[0]))
                request_seen.set()
                if release.wait(timeout=60):
                    conn.sendall(reply)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    # The client's timeout only ends a call whose reply never comes (the GIL held).
    db = hotset.connect(url, timeout=30)
    try:
        for call, _, expected in calls:
            request_seen.clear()
            release.clear()
            answers = []

            def caller():
                try:
                    answers.append(call(db))
                except Exception as e:  # noqa: BLE001 (reported below)
                    answers.append(e)

            inside = threading.Thread(target=caller)
            inside.start()
            # The request reached the server: the call is inside Rust, waiting for its reply.
            assert request_seen.wait(timeout=60), "the request never arrived"
            other = threading.Thread(target=lambda: events.append("another thread ran"))
            other.start()
            other.join(timeout=60)
            assert not other.is_alive()
            # No reply was sent yet, so the call cannot have returned.
            assert inside.is_alive() and answers == []
            release.set()
            inside.join(timeout=60)
            assert answers == [expected]
        assert events == [("request", b"DOC.NSLIST"), "another thread ran", ("request", b"DOC.QUERY"),
                          "another thread ran"]
    finally:
        release.set()
        db.close()
        server.join(timeout=60)
        listener.close()


def test_after_names_a_source_and_results_carry_positions(server, tmp_path):
    # Without live-sync sources: a result's positions are empty, and waiting for a source
    # that does not exist is a NotFoundError, from a server and embedded alike (the wait
    # itself, against a real PostgreSQL, is in crates/hotset-server/tests/sync_pg.rs).
    db = hotset.connect(server.url)
    db.create_namespace("plain", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    try:
        db.upsert("plain", {"id": 1})
        assert db.query("plain").execute().positions == {}
        with pytest.raises(hotset.NotFoundError, match="source app does not exist"):
            db.query("plain").after("app", "0/16B6C50").execute()
        with pytest.raises(hotset.Error, match="no source position"):
            db.query("plain").after("app", "not a position").execute()
    finally:
        db.drop_namespace("plain")
    embedded = hotset.open(tmp_path)
    embedded.create_namespace("plain", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    assert embedded.query("plain").execute().positions == {}
    with pytest.raises(hotset.NotFoundError, match="source app does not exist"):
        embedded.query("plain").after("app", "0/16B6C50").execute()
