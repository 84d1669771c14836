"""Procedures from Python: `db.function_load`, `db.functions` and `db.call` in both modes.

Embedded, the Lua runs in this process against the embedded engine, with no server
anywhere (the `db` fixture's embedded side starts none); as a client, through FUNCTION
LOAD, FUNCTION LIST and DOC.CALL. Both give the Python value of the JSON answer the HTTP
API gives; a procedure's writes are applied together or not at all; the errors are the
same classes. The last tests check one answer across client, embedded and HTTP, and that
an embedded database on a folder keeps its libraries (a server opened on it has them).
"""
import json
import tempfile
import urllib.request

import hotset
import pytest

from conftest import Server

LIBRARY = """#!lua name=pytest_procedures
redis.register_function{function_name='shape', description='answers a shape', callback=function(keys, args)
  if args[1] == 'nested' then
    return {name = 'ada', none = hotset.null, empty_object = {}, empty_array = hotset.array(),
            big = hotset.int('9007199254740993'), ratio = 0.5, yes = true, list = {1, 'two', {three = 3}}}
  elseif args[1] == 'err' then return {err = 'NOPE not this'}
  elseif args[1] == 'raise' then error('boom')
  end
  return {args = args, keys = #keys}
end}
redis.register_function{function_name='decode', flags={'no-writes'}, callback=function(keys, args)
  local out = hotset.array()
  for i, arg in ipairs(args) do out[i] = hotset.fromjson(arg) end
  return out
end}
redis.register_function('write', function(keys, args)
  local first = hotset.get('people', 1)
  for i = 1, #args - 1 do hotset.insert('people', {id = tonumber(args[i]), name = 'n' .. args[i]}) end
  if args[#args] == 'fail' then error('changed my mind') end
  return {first = first, written = #args - 1}
end)
redis.register_function('keys', function(keys, args) return redis.call('GET', 'k') end)
"""

NESTED = {
    "name": "ada",
    "none": None,
    "empty_object": {},
    "empty_array": [],
    "big": 9007199254740993,
    "ratio": 0.5,
    "yes": True,
    "list": [1, "two", {"three": 3}],
}


@pytest.fixture
def procedures(db):
    db.create_namespace("people", [{"field": "id", "type": "int", "index": "hash", "pk": True}])
    db.insert("people", {"id": 1, "name": "ada"})
    # The client's server is shared by the session: replace what an earlier test loaded.
    assert db.function_load(LIBRARY, replace=True) == "pytest_procedures"
    return db


def test_call_answers_python_values(procedures):
    db = procedures
    assert db.call("shape", "nested") == NESTED
    # A str goes as it is, anything else as its JSON text.
    answer = db.call("shape", "s", 1, 2.5, True, None, {"a": [1]}, [2], b"raw")
    assert answer == {"args": ["s", "1", "2.5", "true", "null", '{"a":[1]}', "[2]", "raw"], "keys": 0}
    assert db.call("decode", 7, {"a": {"b": None}}, [], "[1]") == [7, {"a": {"b": None}}, [], [1]]
    assert db.call("SHAPE", "nested") == NESTED, "function names are matched without regard to case"


def test_functions_lists_the_libraries(procedures):
    (library,) = [lib for lib in procedures.functions() if lib["library_name"] == "pytest_procedures"]
    assert library["engine"] == "LUA"
    assert library["functions"] == [
        {"name": "decode", "description": None, "flags": ["no-writes"]},
        {"name": "keys", "description": None, "flags": []},
        {"name": "shape", "description": "answers a shape", "flags": []},
        {"name": "write", "description": None, "flags": []},
    ]


def test_writes_are_one_transaction(procedures):
    db = procedures
    assert db.call("write", 2, 3, "ok") == {"first": {"id": 1, "name": "ada"}, "written": 2}
    assert db.get("people", 2) == {"id": 2, "name": "n2"} and db.get("people", 3) == {"id": 3, "name": "n3"}
    with pytest.raises(hotset.Error, match="changed my mind"):
        db.call("write", 4, 5, "fail")
    assert db.get("people", 4) is None and db.get("people", 5) is None
    # The second insert is refused at the commit: the first is not applied either.
    with pytest.raises(hotset.AlreadyExistsError, match="operation 2") as refused:
        db.call("write", 6, 3, "ok")
    assert refused.value.code == "already_exists"
    assert db.get("people", 6) is None
    # No-writes: a write is refused as the server refuses it.
    read_only = (
        "#!lua name=pytest_read_only\n"
        "redis.register_function{function_name='write_ro', flags={'no-writes'},"
        " callback=function() hotset.insert('people', {id = 8}) return 1 end}"
    )
    db.function_load(read_only, replace=True)
    with pytest.raises(hotset.ReadOnlyError):
        db.call("write_ro")
    assert db.get("people", 8) is None


def test_errors_are_the_same_in_both_modes(procedures):
    db = procedures
    # An error line's first word is its code, as for every server error.
    with pytest.raises(hotset.Error, match="^not this$"):
        db.call("shape", "err")
    with pytest.raises(hotset.Error, match="boom"):
        db.call("shape", "raise")
    with pytest.raises(hotset.Error, match="Function not found"):
        db.call("nosuch")
    with pytest.raises(hotset.Error, match="Missing library metadata"):
        db.function_load("return 1")
    with pytest.raises(hotset.Error, match="already exists"):
        db.function_load(LIBRARY)
    with pytest.raises(hotset.Error):
        db.function_load("#!lua name=broken\nthis is not lua")


def test_embedded_refuses_redis_call_clearly():
    db = hotset.open()
    db.function_load(LIBRARY)
    with pytest.raises(hotset.Error, match="redis.call is not available in an embedded database: it has no key-value"):
        db.call("keys")
    # pcall sees the same refusal as an error reply, and the procedure goes on.
    db.function_load(
        "#!lua name=pcall\nredis.register_function('p', function() local r = redis.pcall('GET', 'k') return r.err end)"
    )
    assert db.call("p").startswith("ERR redis.call is not available in an embedded database")


def test_client_embedded_and_http_give_one_answer(server):
    client = hotset.connect(server.url)
    embedded = hotset.open()
    try:
        for db in (client, embedded):
            if "people" in db.namespaces():
                db.drop_namespace("people")
            db.create_namespace("people", [{"field": "id", "type": "int", "index": "hash", "pk": True}])
            db.insert("people", {"id": 1, "name": "ada"})
            db.function_load(LIBRARY, replace=True)
        for args in (["nested"], ["x", 1, {"a": None}], []):
            via_client, via_embedded = client.call("shape", *args), embedded.call("shape", *args)
            request = urllib.request.Request(
                f"http://{server.http_address}/api/v1/functions/shape", data=json.dumps(args).encode(), method="POST"
            )
            via_http = json.loads(urllib.request.urlopen(request, timeout=30).read())
            assert via_client == via_embedded == via_http
        (mine,) = [lib for lib in client.functions() if lib["library_name"] == "pytest_procedures"]
        assert [mine] == embedded.functions()
    finally:
        client.close()
        embedded.close()


def test_an_embedded_folder_keeps_its_libraries():
    with tempfile.TemporaryDirectory() as folder:
        db = hotset.open(folder)
        db.create_namespace("people", [{"field": "id", "type": "int", "index": "hash", "pk": True}])
        db.insert("people", {"id": 1, "name": "ada"})
        db.function_load(LIBRARY)
        assert db.call("write", 2, "ok")["written"] == 1
        db.close()
        db = hotset.open(folder)
        assert db.call("write", 3, "ok") == {"first": {"id": 1, "name": "ada"}, "written": 1}
        assert [lib["library_name"] for lib in db.functions()] == ["pytest_procedures"]
        db.close()
        # The same entry the server logs: a server on the folder has the library too.
        s = Server(folder)
        try:
            client = hotset.connect(s.url)
            assert client.call("shape", "nested") == NESTED
            assert client.get("people", 3) == {"id": 3, "name": "n3"}
            client.close()
        finally:
            s.stop()
