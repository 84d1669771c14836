//! EVAL end to end through a fake host: conversions, redis.call/pcall, error texts. Every
//! expected text or reply here was checked against redis-server 7.0.15.

mod common;

use common::{FakeHost, bulk, engine, eval, eval_with, sha1, wire};
use hotset_script::{Protocol, RunOptions, Value};

#[test]
fn lua_values_become_replies_like_redis() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let cases: &[(&str, Value)] = &[
        ("return 'hello'", bulk("hello")),
        ("return 100.5", Value::Int(100)),
        ("return -3.7", Value::Int(-3)),
        ("return 2^63", Value::Int(i64::MIN)),
        ("return 0/0", Value::Int(i64::MIN)),
        ("return true", Value::Int(1)),
        ("return false", Value::Null),
        ("return nil", Value::Null),
        ("return {ok='fine'}", Value::Simple(b"fine".to_vec())),
        ("return {ok='a\\r\\nb'}", Value::Simple(b"a  b".to_vec())),
        ("return {err='ERR this is an error'}", Value::Error(b"ERR this is an error".to_vec())),
        ("return {err='-bad thing'}", Value::Error(b"-bad thing".to_vec())),
        ("return {1,2,err='x'}", Value::Error(b"x".to_vec())),
        ("return {err=1}", Value::Array(vec![])),
        (
            "return {1,2,3,'ciao',{1,2}}",
            Value::Array(vec![
                Value::Int(1),
                Value::Int(2),
                Value::Int(3),
                bulk("ciao"),
                Value::Array(vec![Value::Int(1), Value::Int(2)]),
            ]),
        ),
        ("return {1, nil, 3}", Value::Array(vec![Value::Int(1)])),
        ("return {1,false,3}", Value::Array(vec![Value::Int(1), Value::Null, Value::Int(3)])),
        ("local t = {}; t[1]=1; t[2]=2; t[4]=4; return t", Value::Array(vec![Value::Int(1), Value::Int(2)])),
        ("return _G", Value::Array(vec![])),
        ("return setmetatable({}, {__index=function() return 1 end})", Value::Array(vec![])),
        ("return {double=3.5}", Value::Double(3.5)),
        (
            "return {big_number='123456789012345678901234567890'}",
            Value::BigNumber(b"123456789012345678901234567890".to_vec()),
        ),
        (
            "return {verbatim_string={format='txt', string='hello'}}",
            Value::Verbatim { format: *b"txt", text: b"hello".to_vec() },
        ),
        ("return {map={a=1}}", Value::Map(vec![(bulk("a"), Value::Int(1))])),
        ("return {set={a=true}}", Value::Set(vec![bulk("a")])),
        ("return 'a\\0b'", bulk("a\0b")),
        ("return function() end", Value::Null),
    ];
    for (body, expected) in cases {
        assert_eq!(eval(&mut engine, &mut host, body).as_ref(), Ok(expected), "{body}");
    }
}

#[test]
fn resp3_types_are_written_down_for_resp2_clients_as_redis_does() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let cases: &[(&str, &str, &str)] = &[
        ("return {double=3.5}", "$3\r\n3.5\r\n", ",3.5\r\n"),
        ("return {double=3}", "$1\r\n3\r\n", ",3\r\n"),
        ("return {double=1/0}", "$3\r\ninf\r\n", ",inf\r\n"),
        ("return {double=-1/0}", "$4\r\n-inf\r\n", ",-inf\r\n"),
        ("return {double=0/0}", "$4\r\n-nan\r\n", ",-nan\r\n"),
        (
            "return {big_number='123456789012345678901234567890'}",
            "$30\r\n123456789012345678901234567890\r\n",
            "(123456789012345678901234567890\r\n",
        ),
        ("return {verbatim_string={format='txt', string='hello'}}", "$5\r\nhello\r\n", "=9\r\ntxt:hello\r\n"),
        ("return true", ":1\r\n", ":1\r\n"),
        ("return false", "$-1\r\n", "_\r\n"),
        ("return nil", "$-1\r\n", "_\r\n"),
        ("return {map={a=1}}", "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n$1\r\na\r\n:1\r\n"),
        ("return {set={a=true}}", "*1\r\n$1\r\na\r\n", "~1\r\n$1\r\na\r\n"),
        ("return {1,false,3}", "*3\r\n:1\r\n$-1\r\n:3\r\n", "*3\r\n:1\r\n_\r\n:3\r\n"),
        ("redis.setresp(3); return true", ":1\r\n", "#t\r\n"),
        ("redis.setresp(3); return false", ":0\r\n", "#f\r\n"),
    ];
    for (body, resp2, resp3) in cases {
        let reply = eval(&mut engine, &mut host, body).unwrap();
        assert_eq!(wire(&reply, Protocol::Resp2), *resp2, "{body} to a RESP2 client");
        assert_eq!(wire(&reply, Protocol::Resp3), *resp3, "{body} to a RESP3 client");
    }
}

#[test]
fn replies_become_lua_values_in_resp2_and_resp3() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    // What `type` and the fields are, per reply type and script protocol (Redis' DEBUG PROTOCOL).
    let describe = "local r = redis.call('proto', ARGV[1]); if type(r) == 'table' then local o = {} for k, v in pairs(r) do o[#o+1] = tostring(k) .. '=' .. (type(v) == 'table' and 'T' or tostring(v)) end table.sort(o) return 'table:' .. table.concat(o, ',') end return type(r) .. ':' .. tostring(r)";
    let cases: &[(&str, u8, &str)] = &[
        ("null", 2, "boolean:false"),
        ("null", 3, "nil:nil"),
        ("double", 2, "string:3.141"),
        ("double", 3, "table:double=3.141"),
        ("true", 2, "number:1"),
        ("true", 3, "boolean:true"),
        ("false", 2, "number:0"),
        ("false", 3, "boolean:false"),
        ("map", 2, "table:1=0,2=0,3=1,4=1,5=2,6=0"),
        ("map", 3, "table:map=T"),
        ("set", 2, "table:1=0,2=1,3=2"),
        ("set", 3, "table:set=T"),
        ("verbatim", 2, "string:This is a verbatim\nstring"),
        ("verbatim", 3, "table:verbatim_string=T"),
        ("bignum", 2, "string:1234567999999999999999999999999999999"),
        ("bignum", 3, "table:big_number=1234567999999999999999999999999999999"),
    ];
    for (kind, resp, expected) in cases {
        let body = format!("redis.setresp({resp}); {describe}");
        let reply = eval_with(&mut engine, &mut host, &body, &[], &[kind], RunOptions::default()).unwrap();
        assert_eq!(reply, bulk(expected), "{kind} in RESP{resp}");
    }
    // A RESP3 map reply returned as it is reaches a RESP2 client flattened, its booleans as
    // :1/:0 (the script's protocol is 3).
    let reply = eval_with(
        &mut engine,
        &mut host,
        "redis.setresp(3); return redis.call('proto', ARGV[1])",
        &[],
        &["map"],
        RunOptions::default(),
    )
    .unwrap();
    // (Lua keeps keys 1 and 2 in the array part, 0 in the hash part: `pairs` order is 1, 2, 0.)
    assert_eq!(wire(&reply, Protocol::Resp2), "*6\r\n:1\r\n:1\r\n:2\r\n:0\r\n:0\r\n:0\r\n");
    let reply = eval_with(
        &mut engine,
        &mut host,
        "redis.setresp(3); return redis.call('proto', ARGV[1])",
        &[],
        &["double"],
        RunOptions::default(),
    )
    .unwrap();
    assert_eq!(wire(&reply, Protocol::Resp3), ",3.141\r\n");
}

#[test]
fn keys_and_argv_and_redis_call() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let reply = eval_with(
        &mut engine,
        &mut host,
        "return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}",
        &["a{t}", "b{t}"],
        &["c{t}", "d{t}"],
        RunOptions::default(),
    );
    assert_eq!(reply, Ok(Value::Array(vec![bulk("a{t}"), bulk("b{t}"), bulk("c{t}"), bulk("d{t}")])));
    eval(&mut engine, &mut host, "redis.call('set', 'mykey', 'myval')").unwrap();
    assert_eq!(
        eval_with(&mut engine, &mut host, "return redis.call('get',KEYS[1])", &["mykey"], &[], RunOptions::default()),
        Ok(bulk("myval"))
    );
    assert_eq!(eval(&mut engine, &mut host, "return redis.call('get', 'nokey')"), Ok(Value::Null));
    assert_eq!(eval(&mut engine, &mut host, "return type(redis.call('get', 'nokey'))"), Ok(bulk("boolean")));
    assert_eq!(eval(&mut engine, &mut host, "return redis.call('ping')"), Ok(Value::Simple(b"PONG".to_vec())));
    assert_eq!(eval(&mut engine, &mut host, "return redis.call('ping').ok"), Ok(bulk("PONG")));
    // Numbers go to commands as %.17g, not Lua's %.14g.
    for (number, stored) in [
        ("1.5", "1.5"),
        ("0.1", "0.10000000000000001"),
        ("1e20", "1e+20"),
        ("1/0", "inf"),
        ("-0.0", "-0"),
        ("2^60", "1.152921504606847e+18"),
    ] {
        let body = format!("redis.call('set', 'x', {number}); return redis.call('get','x')");
        assert_eq!(eval(&mut engine, &mut host, &body), Ok(bulk(stored)), "{number}");
    }
    // The script's protocol travels with each call.
    eval(&mut engine, &mut host, "redis.call('ping'); redis.setresp(3); redis.call('ping')").unwrap();
    let protocols: Vec<Protocol> = host.calls.iter().rev().take(2).map(|(_, context)| context.protocol).collect();
    assert_eq!(protocols, vec![Protocol::Resp3, Protocol::Resp2]);
}

/// The runtime error text Redis writes: the message, then the script and the line.
fn runtime(message: &str, body: &str, line: u32) -> String {
    format!("{message} script: {}, on @user_script:{line}.", sha1(body))
}

#[test]
fn errors_read_as_redis_writes_them() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let cases: &[(&str, &str)] = &[
        ("return redis.call('nosuch')", "ERR Unknown Redis command called from script"),
        ("return redis.call()", "ERR Please specify at least one argument for this redis lib call"),
        ("return redis.call('set', {})", "ERR Lua redis lib command arguments must be strings or integers"),
        ("return redis.call('set', 'x', true)", "ERR Lua redis lib command arguments must be strings or integers"),
        ("return redis.call('set', 'x', nil)", "ERR Lua redis lib command arguments must be strings or integers"),
        ("return redis.call('incr')", "ERR Wrong number of args calling Redis command from script"),
        ("return redis.call('multi')", "ERR This Redis command is not allowed from script"),
        ("x = 1", "ERR user_script:1: Attempt to modify a readonly table"),
        ("return x", "ERR user_script:1: Script attempted to access nonexistent global variable 'x'"),
        ("redis.call = 1", "ERR user_script:1: Attempt to modify a readonly table"),
        ("error('boom')", "ERR user_script:1: boom"),
        ("error('')", "ERR user_script:1: "),
        ("error({err='MY boom'})", "MY boom"),
        ("error({err='MY code'}, 2)", "MY code"),
        ("error(5)", "ERR user_script:1: 5"),
        ("error(nil)", "ERR nil"),
        ("error('a\\nb')", "ERR user_script:1: a\nb"),
        ("return redis.sha1hex()", "ERR wrong number of arguments"),
        ("return redis.setresp(4)", "ERR RESP version must be 2 or 3."),
        ("return redis.setresp()", "ERR redis.setresp() requires one argument."),
        ("return redis.log(1)", "ERR redis.log() requires two arguments or more."),
        ("return redis.log('a', 'b')", "ERR First argument must be a number (log level)."),
        ("return redis.log(5, 'b')", "ERR Invalid debug level."),
        (
            "return redis.set_repl(99)",
            "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        ),
        ("return redis.set_repl()", "ERR redis.set_repl() requires two arguments."),
        ("return rawset(_G, 'x', 1)", "ERR Attempt to modify a readonly table"),
        ("return rawset(redis, 'x', 1)", "ERR Attempt to modify a readonly table"),
        ("return table.insert(redis, 1)", "ERR Attempt to modify a readonly table"),
        ("return setmetatable(redis, {})", "ERR Attempt to modify a readonly table"),
        ("setmetatable(_G, {})", "ERR Attempt to modify a readonly table"),
        ("local g = getmetatable(_G); g.__index = {}", "ERR user_script:1: Attempt to modify a readonly table"),
        ("getmetatable(_G).x = 1", "ERR user_script:1: Attempt to modify a readonly table"),
        ("getmetatable('').__index = {}", "ERR user_script:1: Attempt to modify a readonly table"),
        ("getmetatable('').__index.upper = nil", "ERR user_script:1: Attempt to modify a readonly table"),
        ("_G = {}", "ERR user_script:1: Attempt to modify a readonly table"),
        ("redis = function() return 1 end", "ERR user_script:1: Attempt to modify a readonly table"),
        ("cjson.encode = function() return 1 end", "ERR user_script:1: Attempt to modify a readonly table"),
        ("cmsgpack.pack = function() return 1 end", "ERR user_script:1: Attempt to modify a readonly table"),
        ("bit.lshift = function() return 1 end", "ERR user_script:1: Attempt to modify a readonly table"),
        (
            "loadfile('some file')",
            "ERR user_script:1: Script attempted to access nonexistent global variable 'loadfile'",
        ),
        ("dofile('some file')", "ERR user_script:1: Script attempted to access nonexistent global variable 'dofile'"),
        ("print('some data')", "ERR user_script:1: Script attempted to access nonexistent global variable 'print'"),
        ("return next()", "ERR user_script:1: bad argument #1 to 'next' (table expected, got no value)"),
        ("return next({}, 'nokey')", "ERR invalid key to 'next'"),
        ("return rawget(redis)", "ERR user_script:1: bad argument #2 to 'rawget' (value expected)"),
        ("return pairs()", "ERR user_script:1: bad argument #1 to 'pairs' (table expected, got no value)"),
        (
            "return setmetatable(1, {})",
            "ERR user_script:1: bad argument #1 to 'setmetatable' (table expected, got number)",
        ),
        ("return loadstring(string.dump(function() return 1 end))()", "ERR user_script:1: attempt to call a nil value"),
    ];
    for (body, message) in cases {
        assert_eq!(eval(&mut engine, &mut host, body), Err(runtime(message, body, 1)), "{body}");
    }
    for name in ["os", "io", "require", "package", "module", "debug", "getfenv", "setfenv", "newproxy"] {
        let body = format!("return type({name})");
        let message = format!("ERR user_script:1: Script attempted to access nonexistent global variable '{name}'");
        assert_eq!(eval(&mut engine, &mut host, &body), Err(runtime(&message, &body, 1)));
    }
    let body = "local a = 1\n\nreturn redis.call('nosuch')";
    assert_eq!(
        eval(&mut engine, &mut host, body),
        Err(runtime("ERR Unknown Redis command called from script", body, 3))
    );
    let body = "#!lua\nreturn redis.call('nosuch')";
    assert_eq!(
        eval(&mut engine, &mut host, body),
        Err(runtime("ERR Unknown Redis command called from script", body, 2))
    );
    assert_eq!(
        eval(&mut engine, &mut host, "return syntax error"),
        Err("ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'error'".to_string())
    );
}

#[test]
fn error_replies_and_pcall_as_redis() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let cases: &[(&str, Value)] = &[
        ("return redis.pcall('nosuch')", Value::Error(b"ERR Unknown Redis command called from script".to_vec())),
        ("local r = redis.pcall('nosuch'); return r.err", bulk("ERR Unknown Redis command called from script")),
        (
            "return redis.pcall('incr')",
            Value::Error(b"ERR Wrong number of args calling Redis command from script".to_vec()),
        ),
        (
            "return {pcall(redis.call, 'nosuch')}",
            Value::Array(vec![Value::Null, bulk("ERR Unknown Redis command called from script")]),
        ),
        ("local ok, e = pcall(error, {err='X y'}); return type(e)", bulk("string")),
        ("local ok, e = pcall(error, {foo='X y'}); return type(e)", bulk("table")),
        ("local ok, e = pcall(function() error('boom') end); return e", bulk("user_script:1: boom")),
        ("return redis.error_reply('My Error')", Value::Error(b"My Error".to_vec())),
        ("return redis.error_reply('-My Error')", Value::Error(b"My Error".to_vec())),
        ("return redis.error_reply('')", Value::Error(b"ERR ".to_vec())),
        ("return redis.error_reply(1)", Value::Error(b"ERR wrong number or type of arguments".to_vec())),
        ("return redis.error_reply()", Value::Error(b"ERR wrong number or type of arguments".to_vec())),
        ("return redis.status_reply('Fine')", Value::Simple(b"Fine".to_vec())),
        ("return redis.status_reply(1)", Value::Error(b"ERR wrong number or type of arguments".to_vec())),
        ("return redis.sha1hex('')", bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")),
        ("return redis.sha1hex('Pizza & Mandolino')", bulk("74822d82031af7493c20eefa13bd07ec4fada82f")),
        ("return redis.sha1hex(1)", bulk("356a192b7913b04c54574d18c28d46e6395428ab")),
        ("return redis.sha1hex({})", bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")),
        ("return redis.setresp('3')", Value::Null),
        ("return redis.set_repl(redis.REPL_ALL)", Value::Null),
        (
            "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}",
            Value::Array([0, 1, 2, 2, 3].map(Value::Int).to_vec()),
        ),
        (
            "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
            Value::Array([0, 1, 2, 3].map(Value::Int).to_vec()),
        ),
        ("return redis.replicate_commands()", Value::Int(1)),
        (
            "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}",
            Value::Array(vec![bulk("7.0.15"), Value::Int(458767)]),
        ),
        ("return {redis.breakpoint(), redis.debug('x')}", Value::Array(vec![Value::Null])),
    ];
    for (body, expected) in cases {
        assert_eq!(eval(&mut engine, &mut host, body).as_ref(), Ok(expected), "{body}");
    }
    host.data.insert(b"k".to_vec(), common::Entry::Text(b"v".to_vec()));
    assert_eq!(
        eval(&mut engine, &mut host, "return redis.pcall('incr','k')"),
        Ok(Value::Error(b"ERR value is not an integer or out of range".to_vec()))
    );
    let body = "return redis.call('incr','k')";
    assert_eq!(
        eval(&mut engine, &mut host, body),
        Err(runtime("ERR value is not an integer or out of range", body, 1))
    );
}

#[test]
fn log_lines_reach_the_logger() {
    let (mut engine, logged) = engine();
    let mut host = FakeHost::new();
    eval(&mut engine, &mut host, "redis.log(redis.LOG_WARNING, 'hello', 1, {}, 'x')").unwrap();
    assert_eq!(logged.lock().unwrap().as_slice(), &[(hotset_script::LogLevel::Warning, b"hello 1 x".to_vec())]);
}

#[test]
fn the_sandbox_exposes_what_redis_exposes() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let globals =
        eval(&mut engine, &mut host, "local t = {} for k in pairs(_G) do t[#t+1] = k end table.sort(t) return t")
            .unwrap();
    let expected = [
        "ARGV",
        "KEYS",
        "_G",
        "_VERSION",
        "__redis__err__handler",
        "assert",
        "bit",
        "cjson",
        "cmsgpack",
        "collectgarbage",
        "coroutine",
        "error",
        "gcinfo",
        "getmetatable",
        "hotset",
        "ipairs",
        "load",
        "loadstring",
        "math",
        "next",
        "pairs",
        "pcall",
        "rawequal",
        "rawget",
        "rawset",
        "redis",
        "select",
        "setmetatable",
        "string",
        "struct",
        "table",
        "tonumber",
        "tostring",
        "type",
        "unpack",
        "xpcall",
    ];
    assert_eq!(globals, Value::Array(expected.iter().map(|name| bulk(name)).collect()));
    let redis =
        eval(&mut engine, &mut host, "local t = {} for k in pairs(redis) do t[#t+1] = k end table.sort(t) return t")
            .unwrap();
    let expected = [
        "LOG_DEBUG",
        "LOG_NOTICE",
        "LOG_VERBOSE",
        "LOG_WARNING",
        "REDIS_VERSION",
        "REDIS_VERSION_NUM",
        "REPL_ALL",
        "REPL_AOF",
        "REPL_NONE",
        "REPL_REPLICA",
        "REPL_SLAVE",
        "acl_check_cmd",
        "breakpoint",
        "call",
        "debug",
        "error_reply",
        "log",
        "pcall",
        "replicate_commands",
        "set_repl",
        "setresp",
        "sha1hex",
        "status_reply",
    ];
    assert_eq!(redis, Value::Array(expected.iter().map(|name| bulk(name)).collect()));
    let cases: &[(&str, Value)] = &[
        ("return _VERSION", bulk("Lua 5.1")),
        ("return rawget(_G, 'redis') == redis", Value::Int(1)),
        ("return getmetatable(_G) == nil", Value::Null),
        ("return getmetatable(redis) == nil", Value::Int(1)),
        ("return type(getmetatable('').__index) .. tostring(getmetatable('').__index == string)", bulk("tabletrue")),
        ("return loadstring('return 1+1')()", Value::Int(2)),
        ("return {loadstring('x x')}", Value::Array(vec![])),
        (
            "local f, e = loadstring(string.dump(function() return 1 end)); return e",
            bulk("[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'"),
        ),
        ("return {load(function() return nil end)}", Value::Array(vec![Value::Null])),
        ("return string.format('%d', 3.7)", bulk("3")),
        (
            "return tostring(1e15) .. ' ' .. tostring(0.1) .. ' ' .. tostring(2^63)",
            bulk("1e+15 0.1 9.2233720368548e+18"),
        ),
        ("return coroutine.running()", Value::Null),
        ("return ('x'):upper()", bulk("X")),
        ("local n = 0 for _, v in ipairs({1,2,3}) do n = n + v end return n", Value::Int(6)),
        ("return pcall()", Value::Null),
        ("local co = coroutine.wrap(function(a) coroutine.yield(a + 1) end) return co(1)", Value::Int(2)),
    ];
    for (body, expected) in cases {
        assert_eq!(eval(&mut engine, &mut host, body).as_ref(), Ok(expected), "{body}");
    }
}

#[test]
fn math_random_follows_redis_generator() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    assert_eq!(eval(&mut engine, &mut host, "return tostring(math.random())"), Ok(bulk("0.39646477363839")));
    assert_eq!(
        eval(&mut engine, &mut host, "return {math.random(10), math.random(10), math.random(10)}"),
        Ok(Value::Array(vec![Value::Int(9), Value::Int(4), Value::Int(5)]))
    );
    let body = "return math.random(0)";
    assert_eq!(
        eval(&mut engine, &mut host, body),
        Err(runtime("ERR user_script:1: bad argument #1 to 'random' (interval is empty)", body, 1))
    );
}

#[test]
fn many_keys_and_arguments_and_big_replies() {
    // Regression: building KEYS from a collected Vec of Lua strings ran out of mlua's
    // reference slots (a few thousand) with many arguments.
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let keys: Vec<String> = (0..20_000).map(|index| format!("k{index}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let reply =
        eval_with(&mut engine, &mut host, "return {#KEYS, KEYS[20000], #ARGV}", &keys, &keys, RunOptions::default());
    assert_eq!(reply, Ok(Value::Array(vec![Value::Int(20_000), bulk("k19999"), Value::Int(20_000)])));
    let reply = eval(&mut engine, &mut host, "local t = {} for i = 1, 50000 do t[i] = i end return t").unwrap();
    assert!(matches!(reply, Value::Array(ref elements) if elements.len() == 50_000));
    let reply =
        eval(&mut engine, &mut host, "local m = {} for i = 1, 20000 do m['k' .. i] = i end return {map = m}").unwrap();
    assert!(matches!(reply, Value::Map(ref pairs) if pairs.len() == 20_000));
    // A table nested past the reply depth limit gets Redis' stack error in its place.
    let reply = eval(&mut engine, &mut host, "local t = {} t[1] = t return t").unwrap();
    let mut depth = 0;
    let mut current = &reply;
    while let Value::Array(elements) = current {
        depth += 1;
        current = &elements[0];
    }
    assert_eq!(current, &Value::Error(b"ERR reached lua stack limit".to_vec()));
    assert!(depth > 100);
}
