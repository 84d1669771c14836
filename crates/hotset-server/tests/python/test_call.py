"""A procedure called from every interface with the same answer, against the real hotset
binary: `DOC.CALL name arg...` over RESP2 and RESP3 (the function's return value as JSON
text by the document mapping: nested tables, null, an empty array apart from an empty
object, integers beyond 2^53 exact; `{err=}` and raised errors as errors), and the HTTP
routes `GET|POST /api/v1/functions` and `POST /api/v1/functions/{name}` (arguments from a
JSON array; bad bodies, an unknown function, a Lua error and a refused commit as the API's
errors; a procedure that writes then fails leaves nothing; the password; a call that waits
for a running script rather than answering -BUSY).

Each test starts its own server (test_redis_py.Server). Hotset's alone: redis-server has no
documents.
"""

import json
import os
import tempfile
import threading
import urllib.error
import urllib.request

import pytest
import redis

from test_redis_py import Server
from test_scripting import busy, deferred, until

LIBRARY = """#!lua name=shapes
redis.register_function{function_name='shape', description='answers a shape', callback=function(keys, args)
  local which = args[1]
  if which == 'nested' then
    return {name = 'ada', tags = {'a', 'b'}, none = hotset.null, empty_object = {}, empty_array = hotset.array(),
            big = hotset.int('9007199254740993'), ratio = 0.5, yes = true, inner = {{x = 1, y = {false}}}}
  elseif which == 'err' then return {err = 'NOPE not this'}
  elseif which == 'raise' then error('boom')
  elseif which == 'echo' then return {args = args, keys = #keys}
  elseif which == 'function' then return {f = tostring}
  end
  return which
end}
redis.register_function{function_name='add', flags={'no-writes'}, callback=function(keys, args)
  local doc = hotset.fromjson(args[1])
  return {sum = doc.a + doc.b, count = #args}
end}
redis.register_function('write', function(keys, args)
  local first = hotset.get('people', 1)
  for i = 1, #args - 1 do hotset.insert('people', {id = tonumber(args[i]), name = 'n' .. args[i]}) end
  if args[#args] == 'fail' then error('changed my mind') end
  return first
end)
redis.register_function{function_name='read_only_write', flags={'no-writes'}, callback=function(keys, args)
  hotset.insert('people', {id = 99, name = 'no'})
  return 1
end}
redis.register_function('spin', function(keys, args)
  local n = 0
  for i = 1, tonumber(args[1]) do n = n + 1 end
  return {spun = n}
end)
"""

NESTED = {
    "name": "ada",
    "tags": ["a", "b"],
    "none": None,
    "empty_object": {},
    "empty_array": [],
    "big": 9007199254740993,
    "ratio": 0.5,
    "yes": True,
    "inner": [{"x": 1, "y": [False]}],
}


def start(*extra):
    data = tempfile.mkdtemp()
    s = Server(data, *extra)
    r = s.client(decode_responses=True, password=password_of(extra))
    r.execute_command(
        "DOC.NSCREATE", "people", json.dumps([{"field": "id", "type": "int", "index": "hash", "pk": True}])
    )
    r.execute_command("DOC.UPSERT", "people", json.dumps({"id": 1, "name": "ada"}))
    r.function_load(LIBRARY)
    return s


def password_of(extra):
    return extra[extra.index("--password") + 1] if "--password" in extra else None


@pytest.fixture
def server():
    s = start()
    yield s
    s.kill()


def http(server, method, path, body=None, headers=None):
    """(status, parsed JSON body) of one HTTP request."""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(server.http + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def doc_call(r, name, *args):
    return json.loads(r.execute_command("DOC.CALL", name, *args))


@pytest.mark.parametrize("protocol", [2, 3])
def test_doc_call_answers_the_return_value_as_json(server, protocol):
    r = server.client(decode_responses=True, protocol=protocol)
    assert doc_call(r, "shape", "nested") == NESTED
    assert doc_call(r, "shape", "plain") == "plain"
    # Arguments reach the function as ARGV does for FCALL, with no keys.
    assert doc_call(r, "shape", "echo", "x", "") == {"args": ["echo", "x", ""], "keys": 0}
    # FCALL of the same function keeps Redis' reply conversion (the hash part is dropped).
    assert r.fcall("shape", 0, "nested") == []
    refusals = [
        (("shape", "err"), "^NOPE not this$"),
        (("shape", "raise"), "boom"),
        (("shape", "function"), "return value is not JSON: value.f"),
        (("nosuch",), "Function not found"),
        ((), "wrong number of arguments"),
    ]
    for args, error in refusals:
        with pytest.raises(redis.ResponseError, match=error):
            r.execute_command("DOC.CALL", *args)


def test_doc_call_is_a_script_call(server):
    """Flags, atomicity and the commit are FCALL's: no-writes refuses a write, a failing
    procedure leaves nothing, a succeeding one commits its writes together, and a
    DOC.CALL inside MULTI runs at EXEC."""
    r = server.client(decode_responses=True)
    with pytest.raises(redis.ResponseError, match="READ_ONLY"):
        r.execute_command("DOC.CALL", "read_only_write")
    with pytest.raises(redis.ResponseError, match="changed my mind"):
        r.execute_command("DOC.CALL", "write", "2", "3", "fail")
    assert r.execute_command("DOC.GET", "people", "2") is None
    assert doc_call(r, "write", "2", "3", "ok") == {"id": 1, "name": "ada"}
    assert json.loads(r.execute_command("DOC.GET", "people", "3")) == {"id": 3, "name": "n3"}
    with pytest.raises(redis.ResponseError, match="ALREADY_EXISTS operation 2"):
        r.execute_command("DOC.CALL", "write", "4", "3", "ok")
    assert r.execute_command("DOC.GET", "people", "4") is None
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("DOC.CALL", "shape", "plain")
    assert pipe.execute() == ['"plain"']
    (entry,) = r.execute_command("COMMAND", "INFO", "DOC.CALL").values()
    assert entry["arity"] == -2


def test_http_lists_loads_and_calls_functions(server):
    status, listed = http(server, "GET", "/api/v1/functions")
    assert status == 200
    (library,) = listed["items"]
    assert library["library_name"] == "shapes" and library["engine"] == "LUA"
    functions = {f["name"]: f for f in library["functions"]}
    assert sorted(functions) == ["add", "read_only_write", "shape", "spin", "write"]
    assert functions["shape"]["description"] == "answers a shape" and functions["shape"]["flags"] == []
    assert functions["add"]["flags"] == ["no-writes"] and functions["add"]["description"] is None

    assert http(server, "POST", "/api/v1/functions/shape", ["nested"]) == (200, NESTED)
    # Numbers, booleans and null as their JSON text, objects and arrays as compact JSON.
    status, echoed = http(server, "POST", "/api/v1/functions/shape", ["echo", 1, 2.5, True, None, {"a": [1]}, [2]])
    assert status == 200
    assert echoed == {"args": ["echo", "1", "2.5", "true", "null", '{"a":[1]}', "[2]"], "keys": 0}
    assert http(server, "POST", "/api/v1/functions/add", [{"a": 2, "b": 40}]) == (200, {"sum": 42, "count": 1})

    other = "#!lua name=other\nredis.register_function('hello', function(keys, args) return {hi = args[1]} end)"
    assert http(server, "POST", "/api/v1/functions", other.encode()) == (201, {"library_name": "other"})
    status, error = http(server, "POST", "/api/v1/functions", other.encode())
    assert status == 400 and "already exists" in error["error"]
    replaced = other.replace("hi = args[1]", "hello = args[1]")
    assert http(server, "POST", "/api/v1/functions?replace=true", replaced.encode()) == (
        201,
        {"library_name": "other"},
    )
    assert http(server, "POST", "/api/v1/functions/hello", ["you"]) == (200, {"hello": "you"})
    # Loaded over HTTP means loaded: RESP sees it, and it survives a restart (logged).
    r = server.client(decode_responses=True)
    assert doc_call(r, "hello", "resp") == {"hello": "resp"}
    # DOC.FUNCTIONS lists over RESP what HTTP lists.
    assert json.loads(r.execute_command("DOC.FUNCTIONS")) == http(server, "GET", "/api/v1/functions")[1]
    assert [lib["library_name"] for lib in json.loads(r.execute_command("DOC.FUNCTIONS"))["items"]] == [
        "other",
        "shapes",
    ]
    status, error = http(server, "POST", "/api/v1/functions", b"return 1")
    assert status == 400 and error["code"] == "bad_request"


def test_http_errors(server):
    def call(body, name="shape"):
        return http(server, "POST", "/api/v1/functions/" + name, body)

    status, error = call(b"not json")
    assert status == 400 and error["code"] == "bad_request" and "not valid JSON" in error["error"]
    status, error = call({"args": ["nested"]})
    assert (status, error["error"]) == (400, "expected a JSON array of arguments")
    status, error = call(["x"], name="nosuch")
    assert (status, error["code"], error["error"]) == (404, "not_found", "ERR Function not found")
    status, error = call(["raise"])
    assert status == 400 and error["code"] == "bad_request" and "boom" in error["error"]
    status, error = call(["err"])
    assert (status, error["error"]) == (400, "NOPE not this")
    status, error = call([], name="read_only_write")
    assert status == 409 and error["code"] == "read_only"
    # A procedure that writes and then fails leaves nothing; a refused commit names the
    # operation and keeps the engine's status.
    status, error = call(["7", "8", "fail"], name="write")
    assert status == 400 and "changed my mind" in error["error"]
    status, error = call(["7", "1", "ok"], name="write")
    assert (status, error["code"]) == (409, "already_exists") and "operation 2" in error["error"]
    r = server.client(decode_responses=True)
    assert r.execute_command("DOC.GET", "people", "7") is None
    assert r.execute_command("DOC.GET", "people", "8") is None
    status, answer = call(["7", "8", "ok"], name="write")
    assert (status, answer) == (200, {"id": 1, "name": "ada"})
    assert json.loads(r.execute_command("DOC.GET", "people", "8")) == {"id": 8, "name": "n8"}


def test_an_oversize_body_is_refused_by_the_body_limit():
    config = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    config.write("[limits]\nmax_body_bytes = 1024\n")
    config.close()
    s = start("--config", config.name)
    try:
        status, error = http(s, "POST", "/api/v1/functions/shape", ["x" * 2000])
        assert status == 413 and error["code"] == "limit"
        assert http(s, "POST", "/api/v1/functions/shape", ["small"]) == (200, "small")
    finally:
        s.kill()
        os.unlink(config.name)


def test_http_functions_need_the_password():
    s = start("--password", "pw")
    try:
        for method, path, body in [
            ("GET", "/api/v1/functions", None),
            ("POST", "/api/v1/functions/shape", ["plain"]),
            ("POST", "/api/v1/functions", b"#!lua name=x\nredis.register_function('x', function() return 1 end)"),
        ]:
            status, error = http(s, method, path, body)
            assert (status, error["code"]) == (401, "auth"), path
        bearer = {"Authorization": "Bearer pw"}
        assert http(s, "POST", "/api/v1/functions/shape", ["plain"], bearer) == (200, "plain")
        with pytest.raises(redis.AuthenticationError):
            s.client().execute_command("DOC.CALL", "shape", "plain")
        assert doc_call(s.client(password="pw"), "shape", "plain") == "plain"
    finally:
        s.kill()


def test_every_interface_gives_the_same_answer(server):
    r2 = server.client(protocol=2)
    r3 = server.client(protocol=3)
    for args in (["nested"], ["echo", "1", "x"], ["plain"]):
        text2 = r2.execute_command("DOC.CALL", "shape", *args)
        text3 = r3.execute_command("DOC.CALL", "shape", *args)
        assert text2 == text3
        assert http(server, "POST", "/api/v1/functions/shape", args) == (200, json.loads(text2))


def test_an_http_call_waits_for_a_running_script_and_is_atomic_like_fcall(server):
    """While a script holds the gate a RESP client gets -BUSY (DOC.CALL too), and an HTTP
    call waits for its turn instead, then runs."""
    r = server.client(decode_responses=True)
    r.config_set("busy-reply-threshold", 50)
    running = deferred(r, "FCALL", "spin", 0, 150000000)
    until(lambda: busy(r), "-BUSY from the running function")
    with pytest.raises(redis.ResponseError, match="^BUSY"):
        r.execute_command("DOC.CALL", "shape", "plain")
    answered = []
    caller = threading.Thread(
        target=lambda: answered.append(http(server, "POST", "/api/v1/functions/write", ["20", "ok"]))
    )
    caller.start()
    # The spinning function sees nothing of the call: it has not run while the gate is
    # closed, so the document is not there yet.
    assert not answered
    assert r.function_kill() in (b"OK", "OK", True)
    with pytest.raises(redis.ResponseError, match="killed"):
        running.read_response()
    caller.join(60)
    assert answered == [(200, {"id": 1, "name": "ada"})]
    assert json.loads(r.execute_command("DOC.GET", "people", "20")) == {"id": 20, "name": "n20"}
