//! The `hotset` table end to end through a fake host: documents as Lua tables and back
//! (null, empty arrays and objects, big integers), a query DSL and SQL parameters as the
//! host receives them, the host's refusals and bad arguments as Lua errors, and the
//! sandbox around it.

mod common;

use common::{FakeHost, bulk, engine, eval, eval_with};
use hotset_script::{RunOptions, Value};
use serde_json::{Value as Json, json};

fn host_with_people() -> FakeHost {
    let mut host = FakeHost::new();
    for doc in [
        json!({"id": 1, "name": "ada", "nick": null, "tags": [], "meta": {}, "list": [1, null, [2, {}]]}),
        json!({"id": 2, "name": "alan", "big": 9_007_199_254_740_993i64, "min": i64::MIN, "max": u64::MAX}),
    ] {
        host.documents.insert(("people".into(), doc["id"].to_string()), doc);
    }
    host
}

fn text(value: Result<Value, String>) -> String {
    match value {
        Ok(Value::Bulk(bytes)) => String::from_utf8(bytes).unwrap(),
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

fn json_of(value: Result<Value, String>) -> Json {
    serde_json::from_str(&text(value)).unwrap()
}

#[test]
fn documents_come_back_whole_through_lua() {
    let (mut engine, _) = engine();
    let mut host = host_with_people();
    for id in [1, 2] {
        let body = format!("return hotset.tojson(hotset.get('people', {id}))");
        let expected = host.documents[&("people".to_string(), id.to_string())].clone();
        assert_eq!(json_of(eval(&mut engine, &mut host, &body)), expected);
    }
    assert_eq!(eval(&mut engine, &mut host, "return hotset.get('people', 3) == nil"), Ok(Value::Int(1)));
    let body = "local d = hotset.get('people', 1)
        return {tostring(d.nick == hotset.null), tostring(d.nick == cjson.null), type(d.tags), #d.tags,
                tostring(getmetatable(d.tags) == hotset.array_mt), tostring(getmetatable(d.meta)),
                tostring(d.list[2] == hotset.null)}";
    let expected = ["true", "true", "table", "0", "true", "nil", "true"];
    let expected =
        Value::Array(expected.iter().map(|item| if *item == "0" { Value::Int(0) } else { bulk(item) }).collect());
    assert_eq!(eval(&mut engine, &mut host, body), Ok(expected));
}

#[test]
fn big_integers_are_boxed_and_compare_exactly() {
    let (mut engine, _) = engine();
    let mut host = host_with_people();
    let body = "local d = hotset.get('people', 2)
        return {type(d.big), tostring(d.big), tostring(d.big == hotset.int('9007199254740993')),
                tostring(d.big < hotset.int(ARGV[1])), tostring(d.max), tostring(d.min),
                type(hotset.int(ARGV[2])), tostring(hotset.int(2^53) == 2^53)}";
    let got = eval_with(&mut engine, &mut host, body, &[], &["9007199254740994", "42"], RunOptions::default());
    let expected = [
        "userdata",
        "9007199254740993",
        "true",
        "true",
        "18446744073709551615",
        "-9223372036854775808",
        "number",
        "true",
    ];
    assert_eq!(got, Ok(Value::Array(expected.iter().map(|item| bulk(item)).collect())));
    // The boxed value goes back to the host exact.
    let body = "return hotset.sql('SELECT ?', hotset.get('people', 2).big)";
    let _ = eval(&mut engine, &mut host, body);
    assert_eq!(host.document_calls.last(), Some(&json!({"sql": "SELECT ?", "parameters": [9_007_199_254_740_993i64]})));
}

#[test]
fn a_query_table_reaches_the_host_as_the_json_dsl() {
    let (mut engine, _) = engine();
    let mut host = host_with_people();
    let body = "return hotset.tojson(hotset.query('echo', {
        filter = {{field = 'age', op = '>', value = 30}, {['or'] = {{field = 'name', op = 'like', value = 'a%'}}}},
        sort = {'-age', {field = 'id', desc = false}}, limit = 10, total = true, joins = hotset.array(),
        aggregations = {}}))";
    let expected = json!({"query": {
        "filter": [{"field": "age", "op": ">", "value": 30}, {"or": [{"field": "name", "op": "like", "value": "a%"}]}],
        "sort": ["-age", {"field": "id", "desc": false}], "limit": 10, "total": true, "joins": [], "aggregations": {},
    }});
    assert_eq!(json_of(eval(&mut engine, &mut host, body)), expected);
    let result = eval(&mut engine, &mut host, "local r = hotset.query('people', {}) return {r.total, r.items[1].name}");
    assert_eq!(result, Ok(Value::Array(vec![Value::Int(2), bulk("ada")])));
}

#[test]
fn sql_parameters_reach_the_host_in_order() {
    let (mut engine, _) = engine();
    let mut host = host_with_people();
    let body =
        "return hotset.sql('SELECT * FROM t WHERE a = ? AND b = ? AND c = ? AND d IN (?)', 'x', 2.5, nil, {1, 2})";
    let _ = eval(&mut engine, &mut host, body);
    let expected = json!({"sql": "SELECT * FROM t WHERE a = ? AND b = ? AND c = ? AND d IN (?)",
                          "parameters": ["x", 2.5, null, [1, 2]]});
    assert_eq!(host.document_calls.last(), Some(&expected));
    let _ = eval(&mut engine, &mut host, "return hotset.sql('SELECT 1')");
    assert_eq!(host.document_calls.last(), Some(&json!({"sql": "SELECT 1", "parameters": []})));
}

#[test]
fn refusals_and_bad_arguments_are_lua_errors() {
    let (mut engine, _) = engine();
    let mut host = host_with_people();
    let cases = [
        ("return hotset.get('nope', 1)", "NOT_FOUND namespace 'nope' does not exist script:"),
        ("return hotset.get('people')", "ERR hotset.get: a key is required (argument #2 on) script:"),
        ("return hotset.get(nil, 1)", "ERR hotset.get: the namespace must be a string (argument #1) script:"),
        ("return hotset.query('people', 'x')", "ERR hotset.query: the query must be a table"),
        ("return hotset.query('people', {f = tostring})", "ERR hotset.query: query.f: a function is not JSON"),
        ("return hotset.query('people', {a = {1, nil, 3}})", "ERR hotset.query: query.a: an array with holes"),
        ("return hotset.query('people', {a = {1, b = 2}})", "ERR hotset.query: query.a: a table mixes"),
        ("return hotset.sql('SELECT ?', 1/0)", "ERR hotset.sql: parameter 1: inf is not a JSON number"),
        ("return hotset.sql(42)", "ERR hotset.sql: the SQL text must be a string"),
        (
            "return hotset.tojson({x = {y = coroutine.create(function() end)}})",
            "ERR hotset.tojson: value.x.y: a thread is not JSON",
        ),
        ("local t = {} t.t = t return hotset.tojson(t)", "nest deeper than 128 levels"),
        ("return hotset.fromjson('{')", "ERR hotset.fromjson: EOF while parsing"),
        ("return hotset.int('1.5')", "ERR hotset.int: '1.5' is not an integer"),
        ("return hotset.int('99999999999999999999')", "ERR hotset.int: out of the range"),
        ("return hotset.array(setmetatable({}, {}))", "ERR hotset.array: the table has a metatable of its own"),
    ];
    for (body, expected) in cases {
        let error = eval(&mut engine, &mut host, body).unwrap_err();
        assert!(error.contains(expected), "{body}: {error}");
    }
    let caught = "local ok, e = pcall(hotset.get, 'nope', 1) return {tostring(ok), e}";
    assert_eq!(
        eval(&mut engine, &mut host, caught),
        Ok(Value::Array(vec![bulk("false"), bulk("NOT_FOUND namespace 'nope' does not exist")]))
    );
}

#[test]
fn the_hotset_table_is_read_only_and_absent_while_a_library_loads() {
    let (mut engine, _) = engine();
    let mut host = host_with_people();
    for body in
        ["hotset.get = nil", "hotset.array_mt.x = 1", "rawset(hotset.array_mt, 'x', 1)", "setmetatable(hotset, nil)"]
    {
        let error = eval(&mut engine, &mut host, body).unwrap_err();
        assert!(error.contains("readonly table"), "{body}: {error}");
    }
    let early =
        "#!lua name=early\nlocal d = hotset.get('people', 1)\nredis.register_function('f', function() return 1 end)";
    let error = engine.function_load(early.as_bytes(), false).unwrap_err().to_string();
    assert!(error.contains("nonexistent global variable 'hotset'"), "{error}");
    let library = "#!lua name=people\nredis.register_function('name_of', function(keys, args)
        local d = hotset.get('people', tonumber(args[1])) return d and d.name or false end)";
    engine.function_load(library.as_bytes(), false).unwrap();
    let called = engine.fcall(b"name_of", &[], &[b"2"], &mut host, RunOptions::default());
    assert_eq!(called, Ok(bulk("alan")));
}

#[test]
fn writes_reach_the_host_as_json_documents_and_keys() {
    let (mut engine, _) = engine();
    let mut host = host_with_people();
    let body = "return hotset.tojson(hotset.upsert('echo', {id = 1, tags = hotset.array(), n = hotset.null},
                                                     {id = hotset.int('9007199254740993'), meta = {}}))";
    let expected = json!({"write": "Upsert", "documents": [
        {"id": 1, "tags": [], "n": null}, {"id": 9_007_199_254_740_993i64, "meta": {}}]});
    assert_eq!(json_of(eval(&mut engine, &mut host, body)), expected);
    let _ = eval(&mut engine, &mut host, "return hotset.delete('echo', 1, {2, 'b'})");
    assert_eq!(host.document_calls.last(), Some(&json!({"delete": [1, [2, "b"]]})));
    let _ = eval(&mut engine, &mut host, "return hotset.insert('echo', {id = 3})");
    assert_eq!(host.document_calls.last(), Some(&json!({"write": "Insert", "documents": [{"id": 3}]})));
    let cases = [
        ("return hotset.upsert('echo', {1, 2})", "ERR hotset.upsert: document 1 must be a table with string keys"),
        ("return hotset.update('echo', {id = 1}, 'x')", "ERR hotset.update: document 2 must be a table"),
        ("return hotset.insert('echo')", "ERR hotset.insert: a document is required"),
        ("return hotset.delete('echo')", "ERR hotset.delete: a key is required"),
        ("return hotset.delete('echo', 1, nil, 2)", "ERR hotset.delete: a key is required"),
        ("return hotset.upsert('echo', {id = tostring})", "ERR hotset.upsert: document 1.id: a function is not JSON"),
    ];
    for (body, expected) in cases {
        let error = eval(&mut engine, &mut host, body).unwrap_err();
        assert!(error.contains(expected), "{body}: {error}");
    }
}

/// `Answer::Json` (DOC.CALL, HTTP, Python): the function's return value as JSON text by
/// the document mapping, the same tables Redis' conversion would flatten kept whole;
/// an `{err=}` table and a raised error stay errors; a value with no JSON form is refused
/// naming its path.
#[test]
fn a_function_answers_json_by_the_document_mapping() {
    let (mut engine, _) = engine();
    let mut host = host_with_people();
    let code = b"#!lua name=shapes
        redis.register_function('shape', function(keys, args)
            local which = args[1]
            if which == 'nested' then
                return {name = 'ada', tags = {'a', 'b'}, none = hotset.null, empty = {}, list = hotset.array(),
                        big = hotset.get('people', 2).big, ratio = 0.5, yes = true, inner = {{x = 1}}}
            elseif which == 'err' then return {err = 'NOPE not this'}
            elseif which == 'raise' then error('boom')
            elseif which == 'nil' then return nil
            elseif which == 'fn' then return {f = tostring}
            end
            return args[2]
        end)";
    engine.function_load(code, false).unwrap();
    let json = RunOptions { answer: hotset_script::Answer::Json, ..RunOptions::default() };
    let mut call = |args: &[&[u8]]| engine.fcall(b"shape", &[], args, &mut host, json);
    let answer = |value: Result<Value, hotset_script::ScriptError>| match value {
        Ok(Value::Bulk(bytes)) => serde_json::from_slice::<Json>(&bytes).unwrap(),
        other => panic!("expected JSON text, got {other:?}"),
    };
    let nested = answer(call(&[b"nested"]));
    assert_eq!(
        nested,
        json!({"name": "ada", "tags": ["a", "b"], "none": null, "empty": {}, "list": [],
               "big": 9_007_199_254_740_993i64, "ratio": 0.5, "yes": true, "inner": [{"x": 1}]})
    );
    assert_eq!(answer(call(&[b"text", b"hi"])), json!("hi"));
    assert_eq!(answer(call(&[b"nil"])), Json::Null);
    assert_eq!(call(&[b"err"]), Ok(Value::Error(b"NOPE not this".to_vec())));
    assert!(matches!(call(&[b"raise"]), Err(error) if error.to_string().contains("boom")));
    match call(&[b"fn"]) {
        Ok(Value::Error(text)) => {
            let text = String::from_utf8(text).unwrap();
            assert!(text.starts_with("ERR the function's return value is not JSON: value.f"), "{text}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    // The same function through FCALL keeps Redis' reply conversion.
    let reply = engine.fcall(b"shape", &[], &[b"text", b"hi"], &mut host, RunOptions::default());
    assert_eq!(reply, Ok(bulk("hi")));
}
