"""Errors are the same in both modes: every case runs against the engine embedded in this
process and against a real server through `hotset.connect`, and the two exceptions must
agree on class, message and every context attribute (not merely both raise). The
embedded outcome is the reference; each case also says which class it expects, so a case
that stops raising in both modes fails too.

`close()` closes in both modes, and a client reads a server's error lines by their code,
never by their words (a fake server below sends lines the real one never does)."""
import socket
import threading

import hotset
from error_classes import CLASS_OF_CODE
import pytest

from conftest import ITEM_INDEXES, sample_items

# Every exception has these (None where its error names nothing of the kind).
ATTRIBUTES = ("code", "namespace", "index", "field", "key", "pattern", "limit_name", "limit", "actual",
              "limit_ms", "line", "column")


PK = [{"field": "id", "type": "int", "index": "hash", "pk": True}]


@pytest.fixture
def both(server):
    """The same data embedded in memory and on the shared server (emptied first)."""
    embedded = hotset.open()
    client = hotset.connect(server.url)
    for name in client.namespaces():
        client.drop_namespace(name)
    for db in (embedded, client):
        db.create_namespace("items", indexes=ITEM_INDEXES)
        db.upsert_many("items", sample_items(50))
    yield embedded, client
    embedded.close()
    client.close()


def outcome(call):
    """What a call raised: class, message and every context attribute; None if it did not."""
    try:
        call()
    except hotset.Error as e:
        return type(e), str(e), {name: getattr(e, name) for name in ATTRIBUTES}
    return None


def assert_same_error(both, call, expected, **context):
    """`call(db)` raises `expected` embedded, and exactly the same exception as a client;
    `context`: attributes the error must carry."""
    embedded, client = both
    reference = outcome(lambda: call(embedded))
    assert reference is not None, "the call raises"
    cls, message, attributes = reference
    assert cls is expected, reference
    assert {name: attributes[name] for name in context} == context, reference
    if attributes["code"] is not None:
        assert CLASS_OF_CODE[attributes["code"]] is cls, reference
    assert outcome(lambda: call(client)) == reference


def test_unknown_namespace(both):
    context = {"code": "not_found", "namespace": "zz"}
    assert_same_error(both, lambda db: db.describe("zz"), hotset.NotFoundError, **context)
    assert_same_error(both, lambda db: db.drop_namespace("zz"), hotset.NotFoundError, **context)
    assert_same_error(both, lambda db: db.get("zz", 1), hotset.NotFoundError, **context)
    assert_same_error(both, lambda db: db.delete("zz", 1), hotset.NotFoundError, **context)
    assert_same_error(both, lambda db: db.insert("zz", {"id": 1}), hotset.NotFoundError, **context)
    assert_same_error(both, lambda db: db.upsert_many("zz", [{"id": 1}]), hotset.NotFoundError, **context)
    assert_same_error(both, lambda db: db.query("zz").execute(), hotset.NotFoundError, **context)
    assert_same_error(both, lambda db: db.transaction("zz").commit(), hotset.NotFoundError, **context)
    assert_same_error(both, lambda db: db.sql("SELECT * FROM zz"), hotset.NotFoundError, **context)


def test_unknown_and_existing_names(both):
    assert_same_error(both, lambda db: db.drop_index("items", "nope"), hotset.NotFoundError,
                      code="not_found", namespace="items", index="nope")
    assert_same_error(both, lambda db: db.create_namespace("items", PK), hotset.AlreadyExistsError,
                      code="already_exists", namespace="items")
    assert_same_error(both, lambda db: db.add_index("items", {"field": "year", "type": "int", "index": "tree"}),
                      hotset.AlreadyExistsError, code="already_exists", namespace="items", index="year")


def test_duplicate_and_missing_keys(both):
    # A one-document write names no position: the message is the engine's, as embedded.
    assert_same_error(both, lambda db: db.insert("items", {"id": 3}), hotset.AlreadyExistsError,
                      code="already_exists", namespace="items", key="3")
    assert_same_error(both, lambda db: db.update("items", {"id": 10_000}), hotset.NotFoundError,
                      code="not_found", namespace="items", key="10000")
    assert_same_error(both, lambda db: db.insert("items", {"name": "no key"}), hotset.DocumentError,
                      code="bad_document", namespace="items", field="id")
    assert_same_error(both, lambda db: db.upsert("items", {"name": "no key"}), hotset.DocumentError,
                      code="bad_document", namespace="items", field="id")
    for db in both:
        with pytest.raises(hotset.AlreadyExistsError) as e:
            db.insert("items", {"id": 3})
        assert str(e.value) == "duplicate primary key 3 in namespace 'items'"


def test_many_document_writes_and_transactions(both):
    fresh = [{"id": 1000 + i} for i in range(5)]
    assert_same_error(both, lambda db: db.insert_many("items", fresh + [{"id": 7}]), hotset.AlreadyExistsError,
                      code="already_exists", namespace="items", key="7")
    assert_same_error(both, lambda db: db.update_many("items", [{"id": 1}, {"id": 99_999}]), hotset.NotFoundError,
                      code="not_found", key="99999")
    assert_same_error(both, lambda db: db.upsert_many("items", [{"id": 2000}, {"id": 2001, "year": "x"}]),
                      hotset.DocumentError, code="bad_document", field="year", index="year")
    assert_same_error(both, lambda db: db.insert_many("items", [{"id": 2002}, ["x"]]), hotset.DocumentError,
                      code="bad_document")

    def transaction(db):
        tx = db.transaction("items")
        tx.upsert({"id": 3000})
        tx.delete(1)
        tx.update({"id": 77_777})
        tx.commit()
    assert_same_error(both, transaction, hotset.NotFoundError, code="not_found", namespace="items", key="77777")
    for db in both:
        assert db.get("items", 3000) is None and db.get("items", 1000) is None and db.get("items", 1) is not None


def test_wrong_field_types_and_documents(both):
    assert_same_error(both, lambda db: db.upsert("items", {"id": "text"}), hotset.DocumentError,
                      code="bad_document", index="id", field="id")
    assert_same_error(both, lambda db: db.insert("items", {"id": 900, "year": "x"}), hotset.DocumentError,
                      code="bad_document", index="year", field="year")
    assert_same_error(both, lambda db: db.update("items", {"id": 1, "tags": 5}), hotset.DocumentError,
                      code="bad_document", field="tags")
    assert_same_error(both, lambda db: db.upsert("items", ["not", "a", "dict"]), hotset.DocumentError,
                      code="bad_document")
    assert_same_error(both, lambda db: db.sql("UPDATE items SET id = 5 WHERE id = 1"), hotset.DocumentError,
                      code="bad_document", namespace="items", field="id")


def test_bad_index_definitions_and_names(both):
    bad_type = [{"field": "x", "type": "intt", "index": "hash", "pk": True}]
    assert_same_error(both, lambda db: db.create_namespace("bad", bad_type), hotset.SchemaError, code="schema")
    assert_same_error(both, lambda db: db.add_index("items", {"field": "x", "type": "int", "index": "fancy"}),
                      hotset.SchemaError, code="schema")
    assert_same_error(both, lambda db: db.create_namespace("nokey", [{"field": "x", "type": "int", "index": "hash"}]),
                      hotset.SchemaError, code="schema", namespace="nokey")
    assert_same_error(both, lambda db: db.create_namespace("bad name!", PK), hotset.SchemaError,
                      code="schema", namespace="bad name!")
    for db in both:
        assert db.namespaces() == ["items"]


def test_bad_queries(both):
    assert_same_error(both, lambda db: db.query("items").match("nosuchindex", "boat").execute(), hotset.QueryError,
                      code="bad_query")
    assert_same_error(both, lambda db: db.query("items").where("name", "like", "ab\\").execute(), hotset.QueryError,
                      code="bad_query", pattern="ab\\")
    assert_same_error(both, lambda db: db.query("items").join(db.query("nowhere"), [("id", "id")]).execute(),
                      hotset.NotFoundError, code="not_found", namespace="nowhere")
    assert_same_error(both, lambda db: db.search({"query": "boat", "namespaces": ["nowhere"]}), hotset.NotFoundError,
                      code="not_found", namespace="nowhere")


def test_bad_sql_names_line_and_column(both):
    assert_same_error(both, lambda db: db.sql("SELECT *\nFROM items WHERE id = = 1"), hotset.QueryError,
                      code="bad_query", line=2)
    embedded, _ = both
    with pytest.raises(hotset.QueryError) as e:
        embedded.sql("SELECT *\nFROM items WHERE id = = 1")
    assert e.value.column > 0 and f"line 2, column {e.value.column}" in str(e.value)
    assert_same_error(both, lambda db: db.sql("SELEKT 1"), hotset.QueryError, code="bad_query")
    assert_same_error(both, lambda db: db.sql("SELECT * FROM items WHERE"), hotset.QueryError, code="bad_query")


def test_limits(both):
    wide = [{"field": f"f{i}", "type": "int", "index": "hash", "pk": i == 0} for i in range(65)]
    assert_same_error(both, lambda db: db.create_namespace("wide", wide), hotset.LimitError,
                      code="limit", limit_name="indexes_max", limit=64, actual=65)


def test_query_time_limit(both):
    for db in both:
        db.upsert_many("items", [{"id": i, "name": f"value {i}"} for i in range(100, 100_100)])
        db.create_namespace("few", indexes=PK)
        db.upsert_many("few", [{"id": i, "below": -1} for i in range(200)])
    # 1 ms for an inner join whose ON never holds: each of the 100,050 items is compared with
    # all 200 documents of "few", seconds of work on any machine, thousands of times the limit.
    def query(db):
        return db.query("items").inner_join(db.query("few"), [("id", "<", "below")]).timeout(1).execute()

    embedded, client = both
    reference = outcome(lambda: query(embedded))
    assert outcome(lambda: query(client)) == reference
    assert reference[0] is hotset.QueryTimeoutError and reference[2]["code"] == "timeout"
    assert reference[2]["limit_ms"] == 1


def test_closed_databases_raise_closed_error_in_both_modes(both):
    for db in both:
        assert db.closed is False
        db.close()
        assert db.closed is True
        db.close()  # closing twice is fine
    calls = [
        lambda db: db.namespaces(),
        lambda db: db.get("items", 1),
        lambda db: db.upsert("items", {"id": 1}),
        lambda db: db.sql("SELECT * FROM items"),
        lambda db: db.query("items").execute(),
    ]
    for call in calls:
        assert_same_error(both, call, hotset.ClosedError, code=None)


def test_a_client_closes_its_connections_and_refuses_calls(server):
    db = hotset.connect(server.url)
    db.create_namespace("c", indexes=PK)
    db.upsert("c", {"id": 1})
    query = db.query("c")
    tx = db.transaction("c")
    tx.upsert({"id": 2})
    db.close()
    assert db.closed
    for call in (db.namespaces, lambda: db.get("c", 1), query.execute, tx.commit, lambda: db.sql("SELECT 1")):
        with pytest.raises(hotset.ClosedError, match="the database is closed"):
            call()
    db.close()
    assert "client of hotset://" in repr(db)
    # Other clients and the server go on; the transaction was never sent.
    with hotset.connect(server.url) as other:
        assert other.get("c", 1) == {"id": 1} and other.get("c", 2) is None
        other.drop_namespace("c")
    assert other.closed


# ---- a fake server: lines the real one does not send

class FakeServer:
    """Answers DOC.ERRORS with `hello`, then every command with the next line of `lines`."""

    def __init__(self, hello, lines):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.url = "hotset://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.replies = [hello] + list(lines)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.listener.accept()
        reader = conn.makefile("rb")
        with conn, reader:
            for reply in self.replies:
                count = int(reader.readline()[1:])
                for _ in range(count):
                    size = int(reader.readline()[1:])
                    reader.read(size + 2)
                conn.sendall(reply.encode() + b"\r\n")

    def close(self):
        self.thread.join(timeout=10)
        self.listener.close()


def test_lines_that_are_not_json_are_classified_by_their_code_word_alone():
    lines = [
        "-NOT_FOUND something went missing",
        "-MISCONF the disk is full",
        "-TIMEOUT {\"code\":\"timeout\",\"error\":\"a kind this client does not know\",\"kind\":\"Future\"}",
        "-ERR namespace 'x' does not exist",
        "-BAD_REQUEST {\"code\":\"bad_request\",\"error\":\"unknown operation 'MERGE'\",\"operation\":1}",
    ]
    fake = FakeServer("+OK", lines)
    db = hotset.connect(fake.url, timeout=10)
    expected = [
        (hotset.NotFoundError, "something went missing", "not_found"),
        (hotset.StorageError, "the disk is full", None),
        (hotset.QueryTimeoutError, "a kind this client does not know", "timeout"),
        # No code word: the base class, whatever the words say.
        (hotset.Error, "namespace 'x' does not exist", None),
        (hotset.Error, "unknown operation 'MERGE'", "bad_request"),
    ]
    for cls, message, code in expected:
        with pytest.raises(hotset.Error) as e:
            db.namespaces()
        assert (type(e.value), str(e.value), e.value.code) == (cls, message, code)
    fake.close()


def test_a_write_to_a_synced_namespace_raises_read_only_error():
    # Only a server has live sync, so only a client meets read_only: the server's JSON line
    # is rebuilt as the engine's error, with the namespace it names.
    message = "namespace 'people' follows source 'app' and is read-only: change the rows in the source database"
    line = ("-READ_ONLY {\"code\":\"read_only\",\"error\":\"" + message +
            "\",\"kind\":\"ReadOnly\",\"namespace\":\"people\",\"owner\":\"app\"}")
    fake = FakeServer("+OK", [line])
    db = hotset.connect(fake.url, timeout=10)
    with pytest.raises(hotset.ReadOnlyError) as e:
        db.namespaces()
    assert (str(e.value), e.value.code, e.value.namespace) == (message, "read_only", "people")
    fake.close()


def test_a_server_without_json_errors_is_refused_at_connect():
    fake = FakeServer("-ERR unknown command 'DOC.ERRORS', with args beginning with: 'JSON'", [])
    with pytest.raises(hotset.ConnectionError, match="does not know DOC.ERRORS"):
        hotset.connect(fake.url, timeout=10)
    fake.close()
