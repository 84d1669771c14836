"""Procedures over documents against the real hotset binary: the `hotset` table EVAL scripts
and FUNCTION libraries see (`hotset.get`, `hotset.query`, `hotset.sql` with parameters),
documents as Lua tables (JSON null as `hotset.null`, empty arrays and objects kept apart,
integers beyond 2^53 boxed and exact), the engine's refusals as Lua errors with its code,
and a server that goes on after every kind of bad input.

Each test starts its own server (test_redis_py.Server). Hotset's alone: redis-server has no
documents.
"""

import json

import pytest
import redis

from test_redis_py import Server

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
