"""One operation layer: every document operation answers the same through every interface.

Hotset has several doors into one engine: RESP `DOC.*` commands, the HTTP API, SQL (over
RESP as `DOC.SQL`, over HTTP as `POST /api/v1/sql`, and `db.sql()` in Python), and the
Python package (embedded in memory, and as a client of the server). They are meant to be
thin translations of the same engine calls, so the same input must give the same answer
and, when it fails, the same stable error code everywhere.

This file checks exactly that. `OPERATIONS` is a table of operations (each a few steps on
a namespace: create it, write, read, fail...). Every interface has an adapter with the
same methods (`insert`, `get`, `query`, `txn`...) that drives its own door and returns a
normalized answer: documents as parsed JSON, counts as ints, a missing document as
`ABSENT`, a failure as its stable code. Each operation runs once per interface, each on a
fresh namespace of its own, and every interface's outcomes must equal every other's (and,
where the answer is obvious, a hard-coded expectation too). A divergence in one interface
therefore fails the case.

An interface that truly lacks an operation is left out of that case (`LACKS` in each
adapter says which and why). A real divergence found between interfaces is not hidden:
its interface is taken out of the agreeing group and compared on its own with the first
agreeing interface in a case marked `xfail(strict=True)` whose reason says what differs,
so the suite stays green, the divergence stays recorded, and fixing it makes that case
XPASS (then remove the mark).
"""
import itertools
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field

import hotset
from error_classes import CLASS_OF_CODE
import pytest
import redis

# A document the read did not find: RESP answers nil, Python None, HTTP 404, SQL no row.
ABSENT = "<absent>"

PK = "id"  # every namespace here has its primary key on "id"

SCHEMA = [
    {"field": "id", "type": "int", "index": "hash", "pk": True},  # the primary key, a hash
    {"field": "year", "type": "int", "index": "tree"},
    {"field": "name", "type": "string", "index": "hash"},
]

DOCS = [
    {"id": 1, "name": "a", "year": 2001},
    {"id": 2, "name": "b", "year": 2002, "tags": ["x", "y"]},
    {"id": 3, "name": "b", "year": 2003, "meta": {"n": 1.5, "ok": True, "none": None}},
    {"id": 4, "name": "c", "year": 2004},
    {"id": 5, "name": "b", "year": 2005},
]
DOC = {d["id"]: d for d in DOCS}

# The primary key's type is not one Hotset has: a bad index definition.
BAD_SCHEMA = [{"field": "id", "type": "blob", "index": "hash", "pk": True}]

PRICE_INDEX = {"field": "price", "type": "double", "index": "tree"}


class Refused(Exception):
    """An interface's failure, reduced to its stable code."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


@dataclass
class Q:
    """A query: ANDed `(field, op, value)` conditions, sort keys `(field, desc)`, a page."""

    where: list = field(default_factory=list)
    sort: list = field(default_factory=list)
    limit: int = None
    total: bool = False

    def dsl(self):
        """The JSON DSL body (HTTP, DOC.QUERY)."""
        body = {}
        if self.where:
            body["filter"] = [{"field": f, "op": op, "value": v} for f, op, v in self.where]
        if self.sort:
            body["sort"] = [("-" if desc else "") + f for f, desc in self.sort]
        if self.limit is not None:
            body["limit"] = self.limit
        if self.total:
            body["total"] = True
        return body

    def sql(self, ns):
        """The same query as a SELECT."""
        text = f"SELECT {'COUNT(*), ' if self.total else ''}* FROM {ns}"
        if self.where:
            text += " WHERE " + " AND ".join(f"{f} {op} {sql_literal(v)}" for f, op, v in self.where)
        if self.sort:
            text += " ORDER BY " + ", ".join(f"{f} {'DESC' if desc else 'ASC'}" for f, desc in self.sort)
        if self.limit is not None:
            text += f" LIMIT {self.limit}"
        return text


def sql_literal(value):
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return json.dumps(value)


def page(items, total):
    """A query's normalized answer (the order of items is the query's own: it sorts)."""
    return {"items": items, "total": total}


def describe_shape(info):
    """What describe must agree on: the document count and the index definitions (not
    the namespace's name, which differs per interface, nor memory figures)."""
    return {"documents": info["documents"], "indexes": sorted(info["indexes"], key=lambda d: d["name"])}


# ---------------------------------------------------------------------------------------
# Adapters: one per interface, the same methods, normalized answers; failures raise
# Refused(code). `LACKS` names the methods an interface does not have, with the reason.
# ---------------------------------------------------------------------------------------


class Resp:
    """RESP `DOC.*` commands through redis-py. `json_errors`: the connection asked for
    `DOC.ERRORS JSON`, so an error is `-CODE {json}`; otherwise TEXT, `-CODE message`."""

    LACKS = {"sql": "SQL text runs through the SQL interfaces (DOC.SQL is one of them)"}

    def __init__(self, address, json_errors):
        host, port = address.rsplit(":", 1)
        # One connection: DOC.ERRORS is a setting of the connection.
        self.r = redis.Redis(host=host, port=int(port), decode_responses=False, single_connection_client=True)
        self.json_errors = json_errors
        if json_errors:
            assert self.r.execute_command("DOC.ERRORS", "JSON") in (b"OK", True)

    def close(self):
        self.r.close()

    def call(self, *args):
        try:
            return self.r.execute_command(*args)
        except redis.ResponseError as e:
            raise Refused(self.code_of(str(e))) from None

    def code_of(self, line):
        word, _, rest = line.partition(" ")
        if not self.json_errors:
            return word.lower()
        try:
            code = json.loads(rest)["code"]
        except (ValueError, KeyError, TypeError):
            return f"{word.lower()} (not a JSON error line: {line[:80]!r})"
        # The prefix word and the JSON's code must be the same code.
        return code if word == code.upper() else f"{word.lower()} / json {code}"

    def create_namespace(self, ns, defs):
        self.call("DOC.NSCREATE", ns, json.dumps(defs))

    def has_namespace(self, ns):
        return ns.encode() in self.call("DOC.NSLIST")

    def describe(self, ns):
        return describe_shape(json.loads(self.call("DOC.NSINFO", ns)))

    def count(self, ns):
        return json.loads(self.call("DOC.NSINFO", ns))["documents"]

    def add_index(self, ns, definition):
        self.call("DOC.INDEXADD", ns, json.dumps(definition))

    def drop_index(self, ns, name):
        self.call("DOC.INDEXDROP", ns, name)

    def insert(self, ns, doc):
        return self.call("DOC.INSERT", ns, json.dumps(doc))

    def insert_many(self, ns, docs):
        return self.call("DOC.INSERT", ns, *[json.dumps(d) for d in docs])

    def update(self, ns, doc):
        return self.call("DOC.UPDATE", ns, json.dumps(doc))

    def upsert(self, ns, doc):
        return self.call("DOC.UPSERT", ns, json.dumps(doc))

    def get(self, ns, key):
        reply = self.call("DOC.GET", ns, json.dumps(key))
        return ABSENT if reply is None else json.loads(reply)

    def delete(self, ns, key):
        return as_bool(self.call("DOC.DEL", ns, json.dumps(key)))

    def query(self, ns, q):
        answer = json.loads(self.call("DOC.QUERY", ns, json.dumps(q.dsl())))
        return page(answer["items"], answer.get("total"))

    def txn(self, ns, ops):
        args = []
        for op, arg in ops:
            args += [op.upper(), json.dumps(arg)]
        return self.call("DOC.TXN", ns, *args)

    def truncate(self, ns):
        self.call("DOC.NSTRUNCATE", ns)

    def drop_namespace(self, ns):
        self.call("DOC.NSDROP", ns)


class Http:
    """The HTTP API through urllib (JSON bodies); errors are `{"error", "code"}`."""

    LACKS = {
        "sql": "SQL text runs through the SQL interfaces (POST /api/v1/sql is one of them)",
    }

    def __init__(self, address):
        self.base = f"http://{address}"

    def close(self):
        pass

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as e:
            payload = json.loads(e.read())
            raise Refused(payload["code"]) from None

    @staticmethod
    def ns_path(ns):
        return "/api/v1/namespaces/" + urllib.parse.quote(ns, safe="")

    @staticmethod
    def key_path(key):
        return urllib.parse.quote(json.dumps(key), safe="")

    def create_namespace(self, ns, defs):
        self.request("POST", "/api/v1/namespaces", {"name": ns, "indexes": defs})

    def has_namespace(self, ns):
        return ns in [item["name"] for item in self.request("GET", "/api/v1/namespaces")["items"]]

    def describe(self, ns):
        return describe_shape(self.request("GET", self.ns_path(ns)))

    def count(self, ns):
        return self.request("GET", self.ns_path(ns))["documents"]

    def add_index(self, ns, definition):
        self.request("POST", self.ns_path(ns) + "/indexes", definition)

    def drop_index(self, ns, name):
        self.request("DELETE", self.ns_path(ns) + "/indexes/" + urllib.parse.quote(name, safe=""))

    def write(self, ns, mode, body):
        return self.request("POST", self.ns_path(ns) + f"/items?mode={mode}", body)["count"]

    def insert(self, ns, doc):
        return self.write(ns, "insert", doc)

    def insert_many(self, ns, docs):
        return self.write(ns, "insert", docs)

    def update(self, ns, doc):
        return self.write(ns, "update", doc)

    def upsert(self, ns, doc):
        return self.write(ns, "upsert", doc)

    def txn(self, ns, ops):
        body = [{"op": op, ("key" if op == "delete" else "doc"): arg} for op, arg in ops]
        return self.request("POST", self.ns_path(ns) + "/transaction", body)["count"]

    def get(self, ns, key):
        url = self.base + self.ns_path(ns) + "/items/" + self.key_path(key)
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as e:
            payload = json.loads(e.read())
            # A missing document is a 404 `not_found`, the same code as a missing
            # namespace, and the body carries no `kind`: only the message tells "absent"
            # (the others' nil/None) from "no such namespace" (the others' not_found).
            if e.code == 404 and payload["error"].startswith("no document with primary key"):
                return ABSENT
            raise Refused(payload["code"]) from None

    def delete(self, ns, key):
        return self.request("DELETE", self.ns_path(ns) + "/items/" + self.key_path(key))["deleted"]

    def query(self, ns, q):
        answer = self.request("POST", self.ns_path(ns) + "/query", q.dsl())
        return page(answer["items"], answer.get("total"))

    def truncate(self, ns):
        self.request("POST", self.ns_path(ns) + "/truncate")

    def drop_namespace(self, ns):
        self.request("DELETE", self.ns_path(ns))




def py_code(e):
    """A Python exception's code; its class must be the one of that code, and anything
    else (no code, another class, a TypeError) shows in the outcome."""
    if not isinstance(e, hotset.Error):
        return f"<{type(e).__name__} raised, not a hotset.Error>"
    if CLASS_OF_CODE.get(e.code) is not type(e):
        return f"{e.code} <raised as {type(e).__name__}>"
    return e.code


def py_call(call):
    try:
        return call()
    except (hotset.Error, TypeError, ValueError) as e:
        raise Refused(py_code(e)) from None


class Python:
    """The Python package: `hotset.open()` (embedded, in memory) or `hotset.connect(url)`."""

    LACKS = {"sql": "SQL text runs through the SQL interfaces (db.sql() is one of them)"}

    def __init__(self, db):
        self.db = db

    def close(self):
        pass  # the fixture owning the database closes it

    def create_namespace(self, ns, defs):
        py_call(lambda: self.db.create_namespace(ns, indexes=defs))

    def has_namespace(self, ns):
        return ns in py_call(self.db.namespaces)

    def describe(self, ns):
        return describe_shape(py_call(lambda: self.db.describe(ns)))

    def count(self, ns):
        return py_call(lambda: self.db.describe(ns))["documents"]

    def add_index(self, ns, definition):
        py_call(lambda: self.db.add_index(ns, definition))

    def drop_index(self, ns, name):
        py_call(lambda: self.db.drop_index(ns, name))

    # The single-document writes answer None; the others answer how many were written,
    # so a write that returns counts as 1.
    def insert(self, ns, doc):
        py_call(lambda: self.db.insert(ns, doc))
        return 1

    def insert_many(self, ns, docs):
        return py_call(lambda: self.db.insert_many(ns, docs))

    def update(self, ns, doc):
        py_call(lambda: self.db.update(ns, doc))
        return 1

    def upsert(self, ns, doc):
        py_call(lambda: self.db.upsert(ns, doc))
        return 1

    def get(self, ns, key):
        doc = py_call(lambda: self.db.get(ns, key))
        return ABSENT if doc is None else doc

    def delete(self, ns, key):
        return py_call(lambda: self.db.delete(ns, key))

    def query(self, ns, q):
        def run():
            query = self.db.query(ns)
            for f, op, value in q.where:
                query = query.where(f, op, value)
            for f, desc in q.sort:
                query = query.sort(f, desc)
            if q.limit is not None:
                query = query.limit(q.limit)
            if q.total:
                query = query.total()
            return query.execute()

        result = py_call(run)
        return page(list(result.items), result.total)

    def txn(self, ns, ops):
        def run():
            tx = self.db.transaction(ns)
            for op, arg in ops:
                getattr(tx, op)(arg)
            return tx.commit()

        return py_call(run)

    def truncate(self, ns):
        py_call(lambda: self.db.truncate(ns))

    def drop_namespace(self, ns):
        py_call(lambda: self.db.drop_namespace(ns))


class Sql:
    """SQL statements, sent by `run` (DOC.SQL, POST /api/v1/sql, or db.sql()). Each method
    is the statement a SQL user writes for that operation; answers are the statement's
    JSON answer (`{"items", "total", "affected"}`), normalized as the others'."""

    LACKS = {
        "has_namespace": "SQL has no catalog statement (no SHOW TABLES / information_schema)",
        "describe": "SQL has no DESCRIBE statement",
        # UPDATE ... SET ... WHERE id = k is an update by query: a key that matches nothing
        # updates 0 rows (as in every SQL database), where the others answer not_found; and
        # SET changes the named fields instead of replacing the document.
        "update": "SQL UPDATE is an update by query, not a replacement by primary key",
        "txn": "SQL has no transactions over several statements (BEGIN/COMMIT are refused); "
               "one INSERT of several rows is all or nothing, covered by insert_many",
    }

    def __init__(self, run):
        self.run = run  # SQL text -> the answer as a dict; failures raise Refused

    def close(self):
        pass

    @staticmethod
    def json_rows(docs):
        # `INSERT INTO ns VALUES ('{json}')`: each document as one JSON string.
        return ", ".join("(" + sql_literal(json.dumps(doc)) + ")" for doc in docs)

    def affected(self, text):
        return self.run(text)["affected"]

    def create_namespace(self, ns, defs):
        # CREATE TABLE makes the namespace with its primary key; each other index is a
        # CREATE INDEX (a tree unless USING HASH), typed by WITH (type = ...): the same
        # definitions as the JSON ones, under the same names.
        types = {"int": "INT", "string": "TEXT", "double": "DOUBLE", "bool": "BOOLEAN"}
        pk = [d for d in defs if d.get("pk")]
        columns = ", ".join(f"{d['field']} {types.get(d['type'], d['type'].upper())} PRIMARY KEY" for d in pk)
        self.run(f"CREATE TABLE {ns} ({columns})")
        for d in defs:
            if not d.get("pk"):
                self.add_index(ns, d)

    def count(self, ns):
        return self.run(f"SELECT COUNT(*) AS n FROM {ns}")["items"][0]["n"]

    def add_index(self, ns, d):
        using = " USING HASH" if d["index"] == "hash" else ""
        self.run(f"CREATE INDEX {d.get('name', d['field'])} ON {ns}{using} ({d['field']}) WITH (type = '{d['type']}')")

    def drop_index(self, ns, name):
        self.run(f"DROP INDEX {name} ON {ns}")

    def insert(self, ns, doc):
        return self.affected(f"INSERT INTO {ns} VALUES {self.json_rows([doc])}")

    def insert_many(self, ns, docs):
        return self.affected(f"INSERT INTO {ns} VALUES {self.json_rows(docs)}")

    def upsert(self, ns, doc):
        # REPLACE INTO: the whole new document, inserted or replacing the stored one.
        return self.affected(f"REPLACE INTO {ns} VALUES {self.json_rows([doc])}")

    def get(self, ns, key):
        items = self.run(f"SELECT * FROM {ns} WHERE {PK} = {sql_literal(key)}")["items"]
        return items[0] if len(items) == 1 else (ABSENT if not items else items)

    def delete(self, ns, key):
        return as_bool(self.affected(f"DELETE FROM {ns} WHERE {PK} = {sql_literal(key)}"))

    def query(self, ns, q):
        answer = self.run(q.sql(ns))
        return page(answer["items"], answer.get("total"))

    def truncate(self, ns):
        self.run(f"TRUNCATE TABLE {ns}")

    def drop_namespace(self, ns):
        self.run(f"DROP TABLE {ns}")

    def sql(self, ns, text):
        return self.run(text.format(ns=ns))


def as_bool(n):
    """1/0 as True/False (anything else stays a number, so it shows)."""
    return {0: False, 1: True}.get(n, n)


def sql_answer(answer):
    """A SQL answer as the keys that carry something (Python's Result has them all)."""
    shaped = {"items": answer["items"]}
    for key in ("total", "affected"):
        if answer.get(key) is not None:
            shaped[key] = answer[key]
    if answer.get("aggregations"):
        shaped["aggregations"] = answer["aggregations"]
    return shaped


def sql_over_resp(r):
    def run(text):
        try:
            return sql_answer(json.loads(r.execute_command("DOC.SQL", text)))
        except redis.ResponseError as e:
            raise Refused(str(e).partition(" ")[0].lower()) from None

    return run


def sql_over_http(base):
    def run(text):
        request = urllib.request.Request(base + "/api/v1/sql", data=text.encode(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return sql_answer(json.loads(response.read()))
        except urllib.error.HTTPError as e:
            raise Refused(json.loads(e.read())["code"]) from None

    return run


def sql_over_python(db):
    def run(text):
        result = py_call(lambda: db.sql(text))
        return sql_answer({"items": list(result.items), "total": result.total, "affected": result.affected,
                           "aggregations": list(result.aggregations)})

    return run


# Every interface, in the order outcomes are compared (the first is the reference that a
# diverging interface is shown against).
INTERFACES = ["resp", "resp_json_errors", "http", "py_embedded", "py_client",
              "sql_resp", "sql_http", "sql_embedded", "sql_client"]


@pytest.fixture(scope="module")
def adapters(server):
    host_port = server.address
    embedded = hotset.open()
    client = hotset.connect(server.url)
    host, port = host_port.rsplit(":", 1)
    sql_redis = redis.Redis(host=host, port=int(port), decode_responses=False)
    made = {
        "resp": Resp(host_port, json_errors=False),
        "resp_json_errors": Resp(host_port, json_errors=True),
        "http": Http(server.http_address),
        "py_embedded": Python(embedded),
        "py_client": Python(client),
        "sql_resp": Sql(sql_over_resp(sql_redis)),
        "sql_http": Sql(sql_over_http(f"http://{server.http_address}")),
        "sql_embedded": Sql(sql_over_python(embedded)),
        "sql_client": Sql(sql_over_python(client)),
    }
    assert list(made) == INTERFACES
    yield made
    for adapter in made.values():
        adapter.close()
    sql_redis.close()
    embedded.close()
    client.close()


# ---------------------------------------------------------------------------------------
# The operations. Each runs `setup` then `steps` on a fresh namespace per interface; the
# outcome is the list of each step's ("ok", answer) or ("error", code). Steps go on after
# a failing one (a later step checks what the failure left behind).
# ---------------------------------------------------------------------------------------

def ok(value=None):
    return ("ok", value)


def err(code):
    return ("error", code)


@dataclass
class Op:
    id: str
    setup: str  # "none": no namespace; "schema": SCHEMA, empty; "seeded": SCHEMA with DOCS
    steps: list  # (method, *args): the adapter's method, called with the namespace first
    expect: list = None  # the outcome every interface must give, where it is obvious
    diverges: dict = field(default_factory=dict)  # interface -> the divergence, precisely

    def methods(self):
        needed = {"none": set(), "schema": {"create_namespace"}, "seeded": {"create_namespace", "insert_many"}}
        return needed[self.setup] | {step[0] for step in self.steps}


NEW = {"id": 6, "name": "n", "year": 2006, "price": 9.5}

OPERATIONS = [
    # Namespaces and indexes.
    Op("create_namespace", "none", [("create_namespace", SCHEMA), ("count",)], [ok(), ok(0)]),
    Op("create_existing_namespace", "schema", [("create_namespace", SCHEMA)], [err("already_exists")]),
    Op("create_bad_index_definition", "none", [("create_namespace", BAD_SCHEMA), ("count",)],
       [err("schema"), err("not_found")]),
    Op("list_namespaces", "schema", [("has_namespace",)], [ok(True)]),
    Op("describe_after_writes", "seeded", [("upsert", NEW), ("delete", 1), ("describe",)],
       # describe names each index (by its field when the definition has no name).
       [ok(1), ok(True), ok({"documents": 5, "indexes": sorted(({"name": d["field"], **d} for d in SCHEMA),
                                                                key=lambda d: d["name"])})]),
    Op("add_index", "seeded", [("add_index", PRICE_INDEX), ("upsert", NEW),
                               ("query", Q(where=[("price", ">", 9)], sort=[("price", False)]))],
       [ok(), ok(1), ok(page([NEW], None))]),
    Op("add_existing_index", "schema", [("add_index", {"field": "year", "type": "int", "index": "tree"})],
       [err("already_exists")]),
    Op("drop_index", "schema", [("drop_index", "name")], [ok()]),
    Op("drop_unknown_index", "schema", [("drop_index", "nope")], [err("not_found")]),

    # Writes.
    Op("insert", "schema", [("insert", DOC[3]), ("get", 3)], [ok(1), ok(DOC[3])]),
    Op("insert_duplicate_key", "seeded", [("insert", {"id": 1, "name": "dup"}), ("get", 1)],
       [err("already_exists"), ok(DOC[1])]),
    Op("insert_not_an_object", "schema", [("insert", 5), ("count",)], [err("bad_document"), ok(0)]),
    Op("insert_without_primary_key", "schema", [("insert", {"name": "x"}), ("count",)],
       [err("bad_document"), ok(0)]),
    Op("insert_wrong_field_type", "schema", [("insert", {"id": 7, "year": "old"}), ("count",)],
       [err("bad_document"), ok(0)]),
    Op("update_existing", "seeded", [("update", {"id": 1, "name": "z", "year": 2011}), ("get", 1)],
       [ok(1), ok({"id": 1, "name": "z", "year": 2011})]),
    Op("update_missing_key", "seeded", [("update", {"id": 99, "name": "z"}), ("count",)],
       [err("not_found"), ok(5)]),
    Op("upsert", "seeded", [("upsert", NEW), ("upsert", {"id": 1, "name": "r"}), ("get", 1), ("get", 6),
                            ("count",)],
       [ok(1), ok(1), ok({"id": 1, "name": "r"}), ok(NEW), ok(6)]),
    Op("insert_many_with_duplicate", "seeded", [("insert_many", [NEW, {"id": 2, "name": "dup"}]), ("get", 6),
                                                ("count",)],
       [err("already_exists"), ok(ABSENT), ok(5)]),
    Op("delete_existing", "seeded", [("delete", 1), ("get", 1), ("count",)], [ok(True), ok(ABSENT), ok(4)]),
    Op("delete_missing", "seeded", [("delete", 99), ("count",)], [ok(False), ok(5)]),
    Op("transaction", "seeded",
       [("txn", [("upsert", NEW), ("delete", 1), ("update", {"id": 2, "name": "t"})]), ("get", 2), ("get", 1),
        ("count",)],
       [ok(3), ok({"id": 2, "name": "t"}), ok(ABSENT), ok(5)]),
    Op("transaction_all_or_nothing", "seeded",
       [("txn", [("upsert", NEW), ("delete", 3), ("insert", {"id": 2, "name": "dup"})]), ("get", 6), ("get", 3),
        ("count",)],
       [err("already_exists"), ok(ABSENT), ok(DOC[3]), ok(5)]),
    Op("truncate", "seeded", [("truncate",), ("count",), ("get", 1)], [ok(), ok(0), ok(ABSENT)]),
    Op("drop_namespace_then_get", "seeded", [("drop_namespace",), ("get", 1)], [ok(), err("not_found")]),

    # Reads.
    Op("get", "seeded", [("get", 3)], [ok(DOC[3])]),
    Op("get_missing_key", "seeded", [("get", 99)], [ok(ABSENT)]),
    Op("query_filter_sort_limit_total", "seeded",
       [("query", Q(where=[("year", ">=", 2002), ("name", "=", "b")], sort=[("year", True)], limit=2, total=True))],
       [ok(page([DOC[5], DOC[3]], 3))]),
    Op("query_unknown_operator", "seeded", [("query", Q(where=[("year", "~~", 2000)]))], [err("bad_query")]),
    Op("query_unknown_namespace", "none", [("query", Q(where=[("year", ">", 2000)]))], [err("not_found")]),

    # SQL text (the SQL interfaces only; the statements above cover the others).
    Op("sql_insert_rows", "schema",
       [("sql", "INSERT INTO {ns} (id, name, year, \"meta.tag\") VALUES (10, 'p', 2010, 'x'), (11, 'q', 2011, NULL)"),
        ("get", 10), ("get", 11)],
       [ok({"items": [], "affected": 2}), ok({"id": 10, "name": "p", "year": 2010, "meta": {"tag": "x"}}),
        ok({"id": 11, "name": "q", "year": 2011, "meta": {"tag": None}})]),
    Op("sql_insert_duplicate", "seeded",
       [("sql", "INSERT INTO {ns} (id, name) VALUES (12, 'r'), (1, 'dup')"), ("get", 12), ("count",)],
       [err("already_exists"), ok(ABSENT), ok(5)]),
    Op("sql_select_where_order_limit", "seeded",
       [("sql", "SELECT COUNT(*), * FROM {ns} WHERE year > 2001 AND name = 'b' ORDER BY year DESC LIMIT 2")],
       [ok({"items": [DOC[5], DOC[3]], "total": 3})]),
    Op("sql_select_fields", "seeded", [("sql", "SELECT id, name AS n FROM {ns} WHERE year < 2004 ORDER BY id")],
       [ok({"items": [{"id": 1, "n": "a"}, {"id": 2, "n": "b"}, {"id": 3, "n": "b"}]})]),
    Op("sql_delete_where", "seeded", [("sql", "DELETE FROM {ns} WHERE year < 2003"), ("count",)],
       [ok({"items": [], "affected": 2}), ok(3)]),
    Op("sql_unknown_table", "none", [("sql", "SELECT * FROM {ns} WHERE id = 1")], [err("not_found")]),
    Op("sql_bad_statement", "seeded", [("sql", "SELEKT * FROM {ns}")], [err("bad_query")]),
]

ADAPTER_CLASS = {"resp": Resp, "resp_json_errors": Resp, "http": Http, "py_embedded": Python,
                 "py_client": Python, "sql_resp": Sql, "sql_http": Sql, "sql_embedded": Sql, "sql_client": Sql}


def supported(op, interface):
    return not (op.methods() & set(ADAPTER_CLASS[interface].LACKS))


def cases():
    """One case per operation over every interface that has it and agrees; one strict
    xfail case per recorded divergence, comparing that interface with the reference."""
    for op in OPERATIONS:
        members = [i for i in INTERFACES if supported(op, i)]
        agreeing = [i for i in members if i not in op.diverges]
        assert len(agreeing) >= 2 or (len(agreeing) == 1 and op.expect), op.id
        yield pytest.param(op, agreeing, id=op.id)
        for interface, reason in op.diverges.items():
            assert interface in members, (op.id, interface)
            yield pytest.param(op, [agreeing[0], interface], id=f"{op.id}-{interface}-diverges",
                               # raises: only the comparison failing counts as the divergence.
                               marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason))


_run_ids = itertools.count()
_token = uuid.uuid4().hex[:6]


def outcome(adapter, method, ns, args):
    try:
        return ok(getattr(adapter, method)(ns, *args))
    except Refused as e:
        return err(e.code)


def run(adapter, op, ns):
    if op.setup in ("schema", "seeded"):
        adapter.create_namespace(ns, SCHEMA)
    if op.setup == "seeded":
        assert adapter.insert_many(ns, DOCS) == len(DOCS)
    return [outcome(adapter, step[0], ns, step[1:]) for step in op.steps]


@pytest.mark.parametrize("op, interfaces", list(cases()))
def test_equivalence(op, interfaces, adapters):
    case = next(_run_ids)
    outcomes = {}
    try:
        for interface in interfaces:
            ns = f"eq{_token}_{case}_{interface}"
            outcomes[interface] = run(adapters[interface], op, ns)
    finally:
        # Leave nothing on the shared server (the namespace may not exist: ignore that).
        for interface in interfaces:
            try:
                adapters[interface].drop_namespace(f"eq{_token}_{case}_{interface}")
            except Refused:
                pass
    reference = interfaces[0]
    differing = {i: o for i, o in outcomes.items() if o != outcomes[reference]}
    table = "\n".join(f"  {i:>17}: {o}" for i, o in outcomes.items())
    assert not differing, f"{op.id}: interfaces disagree (steps {[s[0] for s in op.steps]}):\n{table}"
    if op.expect is not None:
        assert outcomes[reference] == op.expect, f"{op.id}: all agree, but not on the expected answer:\n{table}"


def test_every_interface_is_exercised():
    """Each interface runs most operations: a LACKS entry or a divergence that quietly
    swallowed an interface's cases would show here."""
    for interface in INTERFACES:
        ran = [op.id for op in OPERATIONS if supported(op, interface) and interface not in op.diverges]
        assert len(ran) >= 15, (interface, ran)
