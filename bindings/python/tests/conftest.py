"""Fixtures: the same tests run against the engine embedded in this process and against a
real `hotset serve` through `hotset.connect`, so both modes are held to one behaviour.

The server binary comes from HOTSET_BIN (scripts/test sets it after the release build),
else target/release/hotset of this checkout. A server is started on ports the kernel picks
and is ready once it printed its ready line.
"""
import os
import signal
import subprocess
import tempfile

import hotset
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
BIN = os.environ.get("HOTSET_BIN", os.path.join(ROOT, "target/release/hotset"))

ITEM_INDEXES = [
    {"field": "id", "type": "int", "index": "hash", "pk": True},
    {"field": "name", "type": "string", "index": "hash"},
    {"field": "year", "type": "int", "index": "tree"},
    {"field": "tags", "type": "string", "index": "hash", "array": True},
    {"field": "description", "index": "text"},
]


class Server:
    """A real server process on a temporary folder."""

    def __init__(self, data, *extra):
        if not os.path.exists(BIN):
            pytest.fail(f"no server binary at {BIN}: build it with `cargo build --release` or set HOTSET_BIN")
        self.proc = subprocess.Popen(
            [BIN, "serve", "--data", data, "--resp-port", "0", "--http-port", "0", *extra],
            stdout=subprocess.PIPE,
            env={**os.environ, "HOTSET_LOG": "warn"},
            text=True,
        )
        words = self.proc.stdout.readline().split()
        assert words[:3] == ["hotset", "ready:", "resp"], words
        self.address = words[3]
        self.url = f"hotset://{self.address}"
        # `hotset ready: resp ADDR http ADDR data DIR`: the HTTP API's address.
        assert words[4] == "http", words
        self.http_address = words[5]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            assert self.proc.wait(timeout=30) == 0


@pytest.fixture(scope="session")
def server():
    with tempfile.TemporaryDirectory() as data:
        s = Server(data)
        yield s
        s.stop()


@pytest.fixture(params=["embedded", "client"])
def db(request):
    """An empty database: embedded in memory, or a client of the shared server (emptied)."""
    if request.param == "embedded":
        d = hotset.open()
    else:
        d = hotset.connect(request.getfixturevalue("server").url)
        for name in d.namespaces():
            d.drop_namespace(name)
    yield d
    d.close()


def sample_items(n=200):
    """Deterministic documents covering every indexed field kind."""
    words = ["red", "green", "blue", "bike", "car", "boat", "fast", "old", "new", "cheap"]
    docs = []
    for i in range(n):
        docs.append({
            "id": i,
            "name": f"name{i % 7}",
            "year": 2000 + (i * 7) % 30,
            "price": round(10 + (i * 13) % 97 + 0.25, 2),
            "tags": [words[i % 10], words[(i * 3) % 10]],
            "description": f"{words[i % 10]} {words[(i + 3) % 10]} {words[(i * 7) % 10]} item {i}",
            "meta": {"rank": i % 5, "ok": i % 2 == 0, "note": None},
        })
    return docs


@pytest.fixture
def items(db):
    docs = sample_items()
    db.create_namespace("items", indexes=ITEM_INDEXES)
    assert db.upsert_many("items", docs) == len(docs)
    return docs
