"""Procedures over documents against the real hotset binary: the `hotset` table EVAL scripts
and FUNCTION libraries see (`hotset.get`, `hotset.query`, `hotset.sql` with parameters),
documents as Lua tables (JSON null as `hotset.null`, empty arrays and objects kept apart,
integers beyond 2^53 boxed and exact), the engine's refusals as Lua errors with its code,
and a server that goes on after every kind of bad input; and writes (`hotset.insert`,
`upsert`, `update`, `delete`), applied together when the procedure succeeds and not at all
when it fails (raises, returns an error, is killed, or one of them is refused), with what a
writing procedure may not do yet refused clearly.

Each test starts its own server (test_redis_py.Server). Hotset's alone: redis-server has no
documents.
"""

import json
import os
import threading
import urllib.request

import pytest
import redis

from test_redis_py import Server
from test_scripting import busy, deferred, until

PEOPLE = [
    {"id": 1, "first": "Ada", "last": "Lovelace", "age": 36, "nick": None, "tags": [], "meta": {}},
    {"id": 2, "first": "Alan", "last": "Turing", "age": 41, "tags": ["math", "code"], "meta": {"born": 1912}},
    {"id": 3, "first": "Grace", "last": "Hopper", "age": 85, "tags": ["navy"], "meta": {"ranks": [1, [2, []]]}},
    {"id": 4, "first": "Scarlett", "last": "O'Hara", "age": 28, "tags": [], "meta": {}},
    {"id": 5, "first": "Annie", "last": "Easley", "age": 78, "big": 9007199254740993, "tags": [], "meta": {}},
]


@pytest.fixture
def server(tmp_path):
    s = Server(str(tmp_path / "data"))
    r = s.client(decode_responses=True)
    r.execute_command(
        "DOC.NSCREATE",
        "people",
        json.dumps(
            [
                {"field": "id", "type": "int", "index": "hash", "pk": True},
                {"field": "last", "type": "string", "index": "tree", "collate": "ascii_ci"},
                {"field": "age", "type": "int", "index": "tree"},
            ]
        ),
    )
    r.execute_command("DOC.UPSERT", "people", *[json.dumps(p) for p in PEOPLE])
    yield s
    s.kill()


def evaluate(r, body, *args):
    """Runs `body` as EVAL with no keys and `args` as ARGV."""
    return r.eval(body, 0, *args)


def error_of(call):
    with pytest.raises(redis.ResponseError) as raised:
        call()
    return str(raised.value)


def test_get_returns_the_document_as_a_table_or_nil(server):
    r = server.client(decode_responses=True)
    assert evaluate(r, "return hotset.get('people', 2).last") == "Turing"
    assert evaluate(r, "return hotset.get('people', tonumber(ARGV[1])).first", "3") == "Grace"
    assert evaluate(r, "return hotset.get('people', 99) == nil and 'none' or 'some'") == "none"
    # A document comes back as it is stored, through hotset.tojson.
    for person in PEOPLE:
        text = evaluate(r, "return hotset.tojson(hotset.get('people', tonumber(ARGV[1])))", str(person["id"]))
        assert json.loads(text) == person


def test_null_empty_containers_and_big_integers_are_kept(server):
    r = server.client(decode_responses=True)
    body = """
        local ada = hotset.get('people', 1)
        local annie = hotset.get('people', 5)
        return {
          tostring(ada.nick == hotset.null), tostring(ada.nick == cjson.null), tostring(ada.missing == nil),
          tostring(getmetatable(ada.tags) == hotset.array_mt), tostring(getmetatable(ada.meta) == nil),
          type(annie.big), tostring(annie.big), tostring(annie.big == hotset.int('9007199254740993')),
          tostring(annie.big < hotset.int('9007199254740994')), type(annie.age),
          hotset.tojson({a = hotset.array(), b = {}, c = hotset.null, d = annie.big, e = {1, 2.5, 'x'}}),
        }
    """
    got = evaluate(r, body)
    assert got[:10] == ["true", "true", "true", "true", "true", "userdata", "9007199254740993", "true", "true", "number"]
    assert json.loads(got[10]) == {"a": [], "b": {}, "c": None, "d": 9007199254740993, "e": [1, 2.5, "x"]}
    # cjson writes the same null (hotset.null is cjson.null).
    assert json.loads(evaluate(r, "return cjson.encode({n = hotset.null})")) == {"n": None}
    assert json.loads(evaluate(r, "return hotset.tojson(hotset.fromjson(ARGV[1]))", '{"x":[[],{}],"y":-9223372036854775808}')) == {
        "x": [[], {}],
        "y": -9223372036854775808,
    }


def test_query_takes_the_dsl_as_a_table(server):
    r = server.client(decode_responses=True)
    body = """
        local result = hotset.query('people', {
          filter = {{field = 'age', op = '>', value = 30}, {field = 'last', op = 'like', value = ARGV[1]}},
          sort = {{field = 'age', desc = true}}, limit = 2, total = true,
        })
        local names = {}
        for i, item in ipairs(result.items) do names[i] = item.first end
        return {result.total, names}
    """
    assert evaluate(r, body, "%") == [4, ["Grace", "Annie"]]
    assert evaluate(r, body, "t%") == [1, ["Alan"]]
    # An empty page is an empty array, and the namespace in the table must agree.
    assert evaluate(r, "return #hotset.query('people', {filter = {field = 'age', op = '>', value = 500}}).items") == 0
    assert "BAD_QUERY" in error_of(lambda: evaluate(r, "return hotset.query('people', {namespace = 'other'})"))


def test_sql_binds_positional_parameters(server):
    r = server.client(decode_responses=True)
    body = """
        local result = hotset.sql('SELECT * FROM people WHERE last = ? AND age > $2 ORDER BY age', ARGV[1], tonumber(ARGV[2]))
        local names = {}
        for i, item in ipairs(result.items) do names[i] = item.first end
        return names
    """
    assert evaluate(r, body, "O'Hara", "20") == ["Scarlett"]
    assert evaluate(r, body, "O'Hara", "30") == []
    # A parameter is a value, never SQL: this finds nothing and drops nothing.
    assert evaluate(r, body, "x' OR '1'='1", "0") == []
    assert evaluate(r, body, "x'; DROP TABLE people; --", "0") == []
    assert evaluate(r, "return hotset.sql('SELECT COUNT(*) AS n FROM people WHERE age IN (?)', {36, 41, 85}).items[1].n") == 3
    assert evaluate(r, "return #hotset.sql('SELECT * FROM people').items") == 5


def test_refusals_are_lua_errors_with_the_engine_code_and_the_server_goes_on(server):
    r = server.client(decode_responses=True)
    cases = {
        "return hotset.get('nope', 1)": "NOT_FOUND",
        "return hotset.query('nope', {})": "NOT_FOUND",
        "return hotset.query('people', {filter = {field = 'age', op = '~~', value = 1}})": "BAD_QUERY",
        "return hotset.query('people', {limit = 'many'})": "BAD_QUERY",
        "return hotset.query('people', 'age > 3')": "hotset.query: the query must be a table",
        "return hotset.query('people', {filter = tostring})": "hotset.query: query.filter: a function is not JSON",
        "return hotset.query('people', {filter = {1, nil, 3}})": "hotset.query: query.filter: an array with holes",
        "return hotset.get('people')": "hotset.get: a key is required",
        "return hotset.get(1, 1)": "hotset.get: the namespace must be a string",
        "return hotset.sql('SELECT * FROM people WHERE')": "BAD_QUERY",
        "return hotset.sql('SELECT * FROM people WHERE id = ?')": "BAD_QUERY",
        "return hotset.sql('SELECT * FROM people WHERE id = ?', 1, 2)": "BAD_QUERY parameter 2 is not used",
        "return hotset.sql('DELETE FROM people')": "BAD_REQUEST hotset.sql runs SELECT and EXPLAIN only",
        "return hotset.sql('SELECT * FROM people WHERE id = ?', 0/0)": "hotset.sql: parameter 1: NaN is not a JSON number",
        "return hotset.int('12x')": "hotset.int: '12x' is not an integer",
        "return hotset.tojson({[1.5] = 1})": "hotset.tojson: value: a table key",
    }
    for body, expected in cases.items():
        text = error_of(lambda: evaluate(r, body))
        assert expected in text, (body, text)
        assert "script:" in text
    # pcall catches them, with the message.
    assert evaluate(r, "local ok, e = pcall(hotset.get, 'nope', 1) return {tostring(ok), e}")[1].startswith("NOT_FOUND")
    assert r.ping()
    assert evaluate(r, "return #hotset.sql('SELECT * FROM people').items") == 5


def test_functions_call_procedures_and_the_table_is_read_only(server):
    r = server.client(decode_responses=True)
    library = """#!lua name=profiles
local function search(keys, args)
  local page = hotset.query('people', {
    filter = {{field = 'last', op = 'like', value = args[1] .. '%'}},
    sort = {'last', 'id'}, offset = tonumber(args[2]) or 0, limit = tonumber(args[3]) or 10, total = true,
  })
  local names = {}
  for i, item in ipairs(page.items) do names[i] = item.first .. ' ' .. item.last end
  return {page.total, names}
end
redis.register_function{function_name = 'search_profiles', callback = search, flags = {'no-writes'}}
"""
    assert r.execute_command("FUNCTION", "LOAD", library) == "profiles"
    assert r.execute_command("FCALL", "search_profiles", 0, "h", 0, 10) == [1, ["Grace Hopper"]]
    assert r.execute_command("FCALL_RO", "search_profiles", 0, "", 1, 2) == [5, ["Grace Hopper", "Ada Lovelace"]]
    # Not at load time: a library's top level has no hotset, as it has no redis.call.
    early = "#!lua name=early\nlocal x = hotset.get('people', 1)\nredis.register_function('f', function() return 1 end)"
    assert "nonexistent global variable 'hotset'" in error_of(lambda: r.execute_command("FUNCTION", "LOAD", early))
    # Shared between scripts, so read-only, the array marker too.
    assert "readonly" in error_of(lambda: evaluate(r, "hotset.get = nil"))
    assert "readonly" in error_of(lambda: evaluate(r, "getmetatable(hotset.get('people', 1).tags).__index = {}"))
    assert "readonly" in error_of(lambda: evaluate(r, "rawset(hotset.array_mt, 'x', 1)"))
    assert evaluate(r, "return tostring(getmetatable(hotset.array()).x)") == "nil"


def test_documents_outlive_read_only_scripts(server):
    r = server.client(decode_responses=True)
    assert r.execute_command("EVAL_RO", "return hotset.get('people', 4).first", 0) == "Scarlett"
    assert evaluate(r, "redis.call('SET', 'k', hotset.get('people', 2).first) return redis.call('GET', 'k')") == "Alan"


def names(r):
    """The first names stored, by id."""
    return evaluate(r, "local n = {} for i, d in ipairs(hotset.query('people', {sort = {'id'}}).items) do n[i] = d.first end return n")


def test_writes_apply_together_when_the_procedure_succeeds(server):
    r = server.client(decode_responses=True)
    body = """
        local taken = hotset.upsert('people', {id = 10, first = 'Kathy', last = 'Johnson', age = 101, tags = hotset.array()})
        taken = taken + hotset.insert('people', {id = 11, first = 'Mary', last = 'Jackson', age = 83},
                                                {id = 12, first = 'Dorothy', last = 'Vaughan', age = 98})
        taken = taken + hotset.update('people', {id = 4, first = 'Katie', last = "O'Hara", age = 29})
        taken = taken + hotset.delete('people', 2, 3)
        return taken
    """
    assert evaluate(r, body) == 6
    assert names(r) == ["Ada", "Katie", "Annie", "Kathy", "Mary", "Dorothy"]
    kathy = json.loads(r.execute_command("DOC.GET", "people", "10"))
    assert kathy == {"id": 10, "first": "Kathy", "last": "Johnson", "age": 101, "tags": []}
    # A big integer written from Lua is stored exact.
    evaluate(r, "return hotset.upsert('people', {id = 13, big = hotset.int('9007199254740993')})")
    assert json.loads(r.execute_command("DOC.GET", "people", "13"))["big"] == 9007199254740993


def test_a_procedure_that_fails_leaves_no_document_behind(server):
    r = server.client(decode_responses=True)
    before = names(r)
    # Raised after writing.
    text = error_of(lambda: evaluate(r, "hotset.upsert('people', {id = 20, first = 'X'}) hotset.delete('people', 1) error('boom')"))
    assert "boom" in text
    # An error reply returned.
    evaluate_error = error_of(lambda: evaluate(r, "hotset.upsert('people', {id = 21}) return redis.error_reply('no')"))
    assert evaluate_error.startswith("no")
    # Refused when applied: the second operation's key is stored; the first is undone with it.
    text = error_of(lambda: evaluate(r, "hotset.upsert('people', {id = 22, first = 'Y'}) hotset.insert('people', {id = 1}) return 1"))
    assert text.startswith("ALREADY_EXISTS operation 2:"), text
    # A document the engine refuses (no primary key), among good ones.
    text = error_of(lambda: evaluate(r, "hotset.upsert('people', {id = 23}, {first = 'no key'}) return 1"))
    assert text.startswith("BAD_DOCUMENT operation 2:") or "operation 2" in text, text
    # A namespace that does not exist.
    text = error_of(lambda: evaluate(r, "hotset.upsert('people', {id = 24}) hotset.upsert('nope', {id = 1}) return 1"))
    assert text.startswith("NOT_FOUND"), text
    assert names(r) == before
    assert r.ping()


def test_a_procedure_killed_while_it_runs_writes_nothing(server):
    r = server.client(decode_responses=True)
    r.config_set("busy-reply-threshold", 50)
    looping = deferred(r, "EVAL", "hotset.upsert('people', {id = 30}) while true do end", 0)
    until(lambda: busy(r), "-BUSY")
    # Its writes are not applied yet, so it can be killed (a script that wrote keys cannot).
    assert r.script_kill() is True
    with pytest.raises(redis.ResponseError, match="Script killed by user"):
        looping.read_response()
    until(lambda: r.ping(), "PONG after the kill")
    assert r.execute_command("DOC.GET", "people", "30") is None


def test_what_a_writing_procedure_may_not_do_yet(server):
    r = server.client(decode_responses=True)
    cases = {
        # Its own pending writes are not readable.
        "hotset.upsert('people', {id = 40}) return hotset.get('people', 40)": "BAD_REQUEST hotset.get reads namespace 'people', which this procedure has written",
        "hotset.upsert('people', {id = 40}) return hotset.query('people', {})": "BAD_REQUEST hotset.query reads namespace 'people'",
        "hotset.upsert('people', {id = 40}) return hotset.sql('SELECT * FROM people')": "BAD_REQUEST hotset.sql reads namespace 'people'",
        # Keys and documents are not one transaction yet: either, not both.
        "redis.call('SET', 'k', 1) return hotset.upsert('people', {id = 40})": "BAD_REQUEST hotset.upsert: this procedure wrote keys",
        "hotset.upsert('people', {id = 40}) return redis.call('SET', 'k', 1)": "this procedure wrote documents",
        # Arguments.
        "return hotset.upsert('people', {1, 2})": "hotset.upsert: document 1 must be a table with string keys",
        "return hotset.insert('people')": "hotset.insert: a document is required",
        "return hotset.delete('people')": "hotset.delete: a key is required",
    }
    for body, expected in cases.items():
        text = error_of(lambda: evaluate(r, body))
        assert expected in text, (body, text)
    assert r.get("k") == "1", "the SET before the refused document write stays, as Redis keeps a failed script's writes"
    assert r.execute_command("DOC.GET", "people", "40") is None
    read_only = error_of(lambda: r.execute_command("EVAL_RO", "return hotset.upsert('people', {id = 41})", 0))
    assert read_only.startswith("READ_ONLY hotset.upsert: writes are not allowed from read-only scripts"), read_only
    pipe = r.pipeline(transaction=True)
    pipe.eval("return hotset.upsert('people', {id = 42})", 0)
    with pytest.raises(redis.ResponseError, match="inside MULTI"):
        pipe.execute()
    # Reading another namespace than the one written is fine, and reads before writes are.
    r.execute_command("DOC.NSCREATE", "log", json.dumps([{"field": "id", "type": "int", "index": "hash", "pk": True}]))
    body = "local a = hotset.get('people', 1) hotset.upsert('log', {id = 1, saw = a.first}) return hotset.get('people', 2).first"
    assert evaluate(r, body) == "Alan"
    assert json.loads(r.execute_command("DOC.GET", "log", "1")) == {"id": 1, "saw": "Ada"}


def test_a_function_library_writes_documents(server):
    r = server.client(decode_responses=True)
    library = """#!lua name=accounts
redis.register_function('rename', function(keys, args)
  local person = hotset.get('people', tonumber(args[1]))
  if not person then return redis.error_reply('NOT_FOUND no such person') end
  person.first = args[2]
  hotset.update('people', person)
  return hotset.tojson(person)
end)
"""
    r.execute_command("FUNCTION", "LOAD", library)
    renamed = json.loads(r.execute_command("FCALL", "rename", 0, 1, "Augusta"))
    assert renamed["first"] == "Augusta" and renamed["nick"] is None and renamed["tags"] == []
    assert json.loads(r.execute_command("DOC.GET", "people", "1")) == {**PEOPLE[0], "first": "Augusta"}
    assert error_of(lambda: r.execute_command("FCALL", "rename", 0, 99, "x")).startswith("NOT_FOUND no such person")
    assert "write flag" in error_of(lambda: r.execute_command("FCALL_RO", "rename", 0, 1, "x"))


def test_the_profile_search_example(server):
    """examples/procedures/profiles.lua, loaded and called as the README shows."""
    r = server.client(decode_responses=True)
    r.execute_command(
        "DOC.SQL",
        "CREATE TABLE profiles (id INT PRIMARY KEY, first_name TEXT COLLATE utf8_ci, "
        "last_name TEXT COLLATE utf8_ci, city TEXT)",
    )
    r.execute_command("DOC.SQL", "CREATE INDEX profiles_names ON profiles (first_name, last_name)")
    people = [("Anna", "Smith"), ("andrew", "smithson"), ("Anna", "Jones"), ("Bob", "Smith"), ("An_", "Smith"), ("Ann", "Sm%th")]
    r.execute_command(
        "DOC.UPSERT",
        "profiles",
        *[json.dumps({"id": i, "first_name": f, "last_name": l, "city": "Oslo"}) for i, (f, l) in enumerate(people, 1)],
    )
    path = os.path.join(os.path.dirname(__file__), "../../../../examples/procedures/profiles.lua")
    with open(path) as f:
        assert r.execute_command("FUNCTION", "LOAD", "REPLACE", f.read()) == "profiles"

    def search(*args):
        page = json.loads(r.execute_command("DOC.CALL", "search_profiles", *args))
        # HTTP answers the same page.
        request = urllib.request.Request(
            server.http + "/api/v1/functions/search_profiles", data=json.dumps(list(args)).encode(), method="POST"
        )
        assert json.loads(urllib.request.urlopen(request, timeout=60).read()) == page
        return page["total"], [(p["first_name"], p["last_name"]) for p in page["items"]]

    everyone = [("An_", "Smith"), ("andrew", "smithson"), ("Ann", "Sm%th"), ("Anna", "Smith")]
    assert search("an", "sm", 0, 20) == (4, everyone)
    assert search("an", "sm", 1, 2) == (4, everyone[1:3])
    assert search("an_", "", 0, 20) == (1, [("An_", "Smith")])
    assert search("", "sm%", 0, 20) == (1, [("Ann", "Sm%th")])
    assert search("zz", "", 0, 20) == (0, [])


def test_an_http_write_waits_for_a_running_procedure(server):
    """An HTTP write never lands between a procedure's read and its commit (it would be
    overwritten, a lost update): it waits for the script gate, as RESP clients do."""
    r = server.client(decode_responses=True)
    r.config_set("busy-reply-threshold", 50)
    body = """
        local ada = hotset.get('people', 1)
        for i = 1, tonumber(ARGV[1]) do end
        ada.age = ada.age + 1
        hotset.update('people', ada)
        return ada.age
    """
    running = deferred(r, "EVAL", body, 0, 150000000)
    until(lambda: busy(r), "-BUSY from the procedure")
    request = urllib.request.Request(
        server.http + "/api/v1/namespaces/people/items",
        data=json.dumps({"id": 1, "first": "Ada", "age": 1000}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    answered = []
    writer = threading.Thread(target=lambda: answered.append(urllib.request.urlopen(request, timeout=60).read()))
    writer.start()
    assert running.read_response() == 37
    writer.join(60)
    assert answered and json.loads(answered[0]) == {"count": 1}
    assert json.loads(r.execute_command("DOC.GET", "people", "1"))["age"] == 1000


def test_a_keyed_script_reaching_documents_by_a_built_name(server):
    """A script whose code does not name `hotset` runs keyed; when it reaches the documents
    anyway (a name built at run time) before writing, it runs again gated and is answered;
    after a write it gets a clear error and keeps what it wrote, as any script error does."""
    r = server.client(decode_responses=True)
    reads = r.script_load("local t = _G['hot' .. 'set'] return t.tojson(t.get('people', 2))")
    assert json.loads(r.evalsha(reads, 1, "some-key"))["first"] == "Alan"
    writes_first = r.script_load(
        "redis.call('set', KEYS[1], 'written') local t = _G['hot' .. 'set'] return t.tojson(t.get('people', 2))")
    message = error_of(lambda: r.evalsha(writes_first, 1, "some-key"))
    assert message.startswith("BAD_REQUEST a script that declares keys reaches the documents only before it writes")
    assert r.get("some-key") == "written"
    # The server goes on.
    assert json.loads(r.evalsha(reads, 1, "some-key"))["id"] == 2
