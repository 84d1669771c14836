//! Function libraries end to end: load, replace, delete, list, stats, FCALL, dump and restore,
//! and Redis' error texts (checked against redis-server 7.0.15).

mod common;

use common::{FakeHost, bulk, engine};
use hotset_script::{Engine, Protocol, RestorePolicy, RunOptions, RunningScript, ScriptError, ScriptFlags, Value};

fn load(engine: &mut Engine, code: &str) -> Result<String, String> {
    engine.function_load(code.as_bytes(), false).map_err(|error| error.to_string())
}

fn fcall(
    engine: &mut Engine,
    host: &mut FakeHost,
    name: &str,
    keys: &[&str],
    args: &[&str],
    read_only: bool,
) -> Result<Value, String> {
    let keys: Vec<&[u8]> = keys.iter().map(|key| key.as_bytes()).collect();
    let args: Vec<&[u8]> = args.iter().map(|arg| arg.as_bytes()).collect();
    engine
        .fcall(name.as_bytes(), &keys, &args, host, RunOptions { read_only, ..RunOptions::default() })
        .map_err(|error| error.to_string())
}

const LIB1: &str = "#!lua name=lib1\nredis.register_function('f1', function(keys, args) return x end)\nredis.register_function{function_name='f2', callback=function(keys, args) return {keys, args} end, flags={'no-writes'}, description='desc2'}";

#[test]
fn load_and_call_functions() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    assert_eq!(load(&mut engine, LIB1), Ok("lib1".to_string()));
    assert_eq!(
        fcall(&mut engine, &mut host, "f1", &[], &[], false),
        Err("ERR user_function:2: Script attempted to access nonexistent global variable 'x' script: f1, on @user_function:2.".into())
    );
    // Function names are matched without regard to case; keys and args are the parameters.
    assert_eq!(
        fcall(&mut engine, &mut host, "F2", &["a"], &["b"], false),
        Ok(Value::Array(vec![Value::Array(vec![bulk("a")]), Value::Array(vec![bulk("b")])]))
    );
    assert_eq!(
        fcall(&mut engine, &mut host, "f1", &[], &[], true),
        Err("ERR Can not execute a script with write flag using *_ro command.".into())
    );
    assert_eq!(
        fcall(&mut engine, &mut host, "f2", &[], &[], true),
        Ok(Value::Array(vec![Value::Array(vec![]), Value::Array(vec![])]))
    );
    assert_eq!(fcall(&mut engine, &mut host, "nosuch", &[], &[], false), Err("ERR Function not found".into()));
    assert_eq!(engine.function_flags(b"F2"), Some(ScriptFlags::NO_WRITES));
    assert_eq!(engine.function_flags(b"nosuch"), None);
    // Functions have no KEYS/ARGV globals and no register_function at run time.
    load(&mut engine, "#!lua name=lib4\nredis.register_function('k', function(keys, args) return redis.register_function end)\nredis.register_function('k2', function() return KEYS end)").unwrap();
    assert_eq!(fcall(&mut engine, &mut host, "k", &[], &[], false), Ok(Value::Null));
    assert_eq!(
        fcall(&mut engine, &mut host, "k2", &[], &[], false),
        Err("ERR user_function:3: Script attempted to access nonexistent global variable 'KEYS' script: k2, on @user_function:3.".into())
    );
    // no-writes functions are read-only through FCALL too.
    load(&mut engine, "#!lua name=lib6\nredis.register_function{function_name='k6', callback=function(keys, args) return redis.call('set', 'a', 1) end, flags={'no-writes'}}").unwrap();
    assert_eq!(
        fcall(&mut engine, &mut host, "k6", &[], &[], false),
        Err("ERR Write commands are not allowed from read-only scripts. script: k6, on @user_function:2.".into())
    );
    load(&mut engine, "#!lua name=lib5\nredis.register_function('k5', function(keys, args) return redis.call('set', keys[1], args[1]) end)").unwrap();
    assert_eq!(fcall(&mut engine, &mut host, "k5", &["key"], &["value"], false), Ok(Value::ok()));
    assert_eq!(host.data.get(&b"key"[..]), Some(&common::Entry::Text(b"value".to_vec())));
    assert_eq!(
        fcall(&mut engine, &mut host, "k5", &["key"], &["value"], true),
        Err("ERR Can not execute a script with write flag using *_ro command.".into())
    );
}

#[test]
fn load_errors_read_as_redis_writes_them() {
    let (mut engine, _) = engine();
    load(&mut engine, LIB1).unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "#!lua name=lib2\nlocal x = math.floor(1)",
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'math'",
        ),
        (
            "#!lua name=lib2\nredis.call('ping')",
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'",
        ),
        (
            "#!lua name=lib2\nerror('boom')",
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'error'",
        ),
        ("#!lua name=lib2\nreturn 1", "ERR No functions registered"),
        ("#!lua name=lib2\nx x", "ERR Error compiling function: user_function:2: '=' expected near 'x'"),
        ("#!lua name=lib2", "ERR Invalid library metadata"),
        ("#!lua\nreturn 1", "ERR Library name was not given"),
        (
            "#!lua name=a-b\nreturn 1",
            "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
        ),
        ("#!lua name=l foo=bar\nreturn 1", "ERR Invalid metadata value given: foo=bar"),
        ("#!lua name=l name=x\nreturn 1", "ERR Invalid metadata value, name argument was given multiple times"),
        ("#!js name=l\nreturn 1", "ERR Engine 'js' not found"),
        ("return 1", "ERR Missing library metadata"),
        ("#!lua name=lib1\nredis.register_function('f9', function() end)", "ERR Library 'lib1' already exists"),
        ("#!lua name=lib1\nx x", "ERR Library 'lib1' already exists"),
        ("#!lua name=lib3\nredis.register_function('f1', function() end)", "ERR Function f1 already exists"),
        ("#!lua name=lib3\nredis.register_function('F1', function() end)", "ERR Function F1 already exists"),
        (
            "#!lua name=lib3\nredis.register_function('f-1', function() end)",
            "ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
        ),
        (
            "#!lua name=lib3\nredis.register_function('g', function() end)\nredis.register_function('g', function() end)",
            "ERR Error registering functions: ERR Function already exists in the library",
        ),
        (
            "#!lua name=lib3\nredis.register_function{function_name='g', callback=function() end, flags={'bad'}}",
            "ERR Error registering functions: ERR unknown flag given",
        ),
        (
            "#!lua name=lib3\nredis.register_function{function_name='g', callback=function() end, flags={1}}",
            "ERR Error registering functions: ERR unknown flag given",
        ),
        (
            "#!lua name=lib3\nredis.register_function{function_name='g', callback=function() end, foo=1}",
            "ERR Error registering functions: ERR unknown argument given to redis.register_function",
        ),
        (
            "#!lua name=lib3\nredis.register_function{[1]=1}",
            "ERR Error registering functions: ERR unknown argument given to redis.register_function",
        ),
        (
            "#!lua name=lib3\nredis.register_function('g')",
            "ERR Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).",
        ),
        (
            "#!lua name=lib3\nredis.register_function(nil)",
            "ERR Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).",
        ),
        (
            "#!lua name=lib3\nredis.register_function(1, 2, 3)",
            "ERR Error registering functions: ERR wrong number of arguments to redis.register_function",
        ),
        (
            "#!lua name=lib3\nredis.register_function{callback=function() end}",
            "ERR Error registering functions: ERR redis.register_function must get a function name argument",
        ),
        (
            "#!lua name=lib3\nredis.register_function{function_name='x'}",
            "ERR Error registering functions: ERR redis.register_function must get a callback argument",
        ),
        (
            "#!lua name=lib3\nredis.register_function({}, function() end)",
            "ERR Error registering functions: ERR first argument to redis.register_function must be a string",
        ),
        (
            "#!lua name=lib3\nredis.register_function('g', 1)",
            "ERR Error registering functions: ERR second argument to redis.register_function must be a function",
        ),
        (
            "#!lua name=lib3\nredis.register_function{function_name='g', callback=1}",
            "ERR Error registering functions: ERR callback argument given to redis.register_function must be a function",
        ),
        (
            "#!lua name=lib3\nredis.register_function{function_name='g', flags='no-writes', callback=function() end}",
            "ERR Error registering functions: ERR flags argument to redis.register_function must be a table representing function flags",
        ),
        (
            "#!lua name=lib3\nreturn redis.setresp",
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'setresp'",
        ),
        (
            "#!lua name=lib3\nrawset(redis, 'a', 1)",
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'rawset'",
        ),
        (
            "#!lua name=lib3\nredis.x = 1",
            "ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table",
        ),
        (
            "#!lua name=lib3\nreturn _G",
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable '_G'",
        ),
        ("#!lua name=lib3\nwhile true do end", "ERR Error registering functions: ERR FUNCTION LOAD timeout"),
    ];
    for (code, message) in cases {
        assert_eq!(load(&mut engine, code), Err(message.to_string()), "{code}");
    }
    // Nothing of the failed loads is left.
    assert_eq!(engine.function_counts().0, 1);
    // Numbers are names; descriptions may be numbers too (Redis takes anything lua_isstring).
    assert_eq!(
        load(
            &mut engine,
            "#!lua name=lib13\nredis.register_function{function_name=1, description=2, callback=function() return 1 end}"
        ),
        Ok("lib13".into())
    );
    let mut host = FakeHost::new();
    assert_eq!(fcall(&mut engine, &mut host, "1", &[], &[], false), Ok(Value::Int(1)));
    // redis.log works at load time.
    assert_eq!(
        load(
            &mut engine,
            "#!lua name=lib14\nredis.log(redis.LOG_NOTICE, redis.REDIS_VERSION)\nredis.register_function('v', function() return 1 end)"
        ),
        Ok("lib14".into())
    );
}

#[test]
fn replace_delete_flush_list_and_stats() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    load(&mut engine, LIB1).unwrap();
    // REPLACE swaps the library; a failing replacement leaves the old one in place.
    let replacement = "#!lua name=lib1\nredis.register_function('f3', function() return 3 end)";
    assert_eq!(engine.function_load(replacement.as_bytes(), true), Ok("lib1".into()));
    assert_eq!(fcall(&mut engine, &mut host, "f1", &[], &[], false), Err("ERR Function not found".into()));
    assert_eq!(fcall(&mut engine, &mut host, "f3", &[], &[], false), Ok(Value::Int(3)));
    assert!(engine.function_load(b"#!lua name=lib1\nx x", true).is_err());
    assert_eq!(fcall(&mut engine, &mut host, "f3", &[], &[], false), Ok(Value::Int(3)));
    load(&mut engine, "#!lua name=lib22\nredis.register_function{function_name='G2', callback=function() return 1 end, flags={'NO-WRITES', 'allow-oom'}}").unwrap();
    let list = engine.function_list(&[b"libraryname", b"LIB2*", b"withcode"]).unwrap();
    let expected = "*1\r\n%4\r\n$12\r\nlibrary_name\r\n$5\r\nlib22\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*1\r\n%3\r\n$4\r\nname\r\n$2\r\nG2\r\n$11\r\ndescription\r\n_\r\n$5\r\nflags\r\n~2\r\n+no-writes\r\n+allow-oom\r\n$12\r\nlibrary_code\r\n$128\r\n#!lua name=lib22\nredis.register_function{function_name='G2', callback=function() return 1 end, flags={'NO-WRITES', 'allow-oom'}}\r\n";
    assert_eq!(common::wire(&list, Protocol::Resp3), expected);
    let list = engine.function_list(&[b"libraryname", b"lib2*"]).unwrap();
    assert!(common::wire(&list, Protocol::Resp2).starts_with("*1\r\n*6\r\n$12\r\nlibrary_name\r\n$5\r\nlib22\r\n"));
    assert_eq!(
        engine.function_list(&[]).map(|list| matches!(list, Value::Array(ref libraries) if libraries.len() == 2)),
        Ok(true)
    );
    assert_eq!(
        engine.function_list(&[b"libraryname"]).unwrap_err().to_string(),
        "ERR library name argument was not given"
    );
    assert_eq!(engine.function_list(&[b"foo"]).unwrap_err().to_string(), "ERR Unknown argument foo");
    let stats = engine.function_stats(None);
    assert_eq!(
        common::wire(&stats, Protocol::Resp2),
        "*4\r\n$14\r\nrunning_script\r\n$-1\r\n$7\r\nengines\r\n*2\r\n$3\r\nLUA\r\n*4\r\n$15\r\nlibraries_count\r\n:2\r\n$15\r\nfunctions_count\r\n:2\r\n"
    );
    let running = RunningScript {
        name: "f3".into(),
        command: vec![b"FCALL".to_vec(), b"f3".to_vec(), b"0".to_vec()],
        duration_ms: 7,
    };
    assert!(
        common::wire(&engine.function_stats(Some(&running)), Protocol::Resp3)
            .starts_with("%2\r\n$14\r\nrunning_script\r\n%3\r\n$4\r\nname\r\n$2\r\nf3\r\n")
    );
    assert_eq!(engine.function_delete(b"nosuch").unwrap_err().to_string(), "ERR Library not found");
    engine.function_delete(b"lib1").unwrap();
    assert_eq!(fcall(&mut engine, &mut host, "f3", &[], &[], false), Err("ERR Function not found".into()));
    engine.function_flush();
    assert_eq!(engine.function_counts().0, 0);
    assert_eq!(engine.function_list(&[]).unwrap(), Value::Array(vec![]));
}

#[test]
fn dump_and_restore_round_trip_with_each_policy() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    load(&mut engine, "#!lua name=a\nredis.register_function('fa', function() return 'a' end)").unwrap();
    load(&mut engine, "#!lua name=b\nredis.register_function('fb', function() return 'b' end)").unwrap();
    let payload = engine.function_dump();
    let exported = engine.libraries();
    assert_eq!(exported.iter().map(|library| library.name.as_str()).collect::<Vec<_>>(), vec!["a", "b"]);

    // APPEND (the default) refuses a library already there, and changes nothing.
    assert_eq!(
        engine.function_restore(&payload, RestorePolicy::default()).unwrap_err().to_string(),
        "ERR Library a already exists"
    );
    // FLUSH replaces everything.
    load(&mut engine, "#!lua name=c\nredis.register_function('fc', function() return 'c' end)").unwrap();
    engine.function_restore(&payload, RestorePolicy::Flush).unwrap();
    assert_eq!(engine.libraries(), exported);
    assert_eq!(fcall(&mut engine, &mut host, "fc", &[], &[], false), Err("ERR Function not found".into()));
    assert_eq!(fcall(&mut engine, &mut host, "fa", &[], &[], false), Ok(bulk("a")));
    // REPLACE swaps same-named libraries, and refuses (changing nothing) when a function
    // would clash with another library's.
    engine.function_flush();
    load(&mut engine, "#!lua name=a\nredis.register_function('old', function() return 'old' end)").unwrap();
    engine.function_restore(&payload, RestorePolicy::Replace).unwrap();
    assert_eq!(engine.libraries(), exported);
    engine.function_flush();
    load(&mut engine, "#!lua name=a\nredis.register_function('old', function() return 'old' end)").unwrap();
    load(&mut engine, "#!lua name=other\nredis.register_function('fb', function() return 'other' end)").unwrap();
    assert_eq!(
        engine.function_restore(&payload, RestorePolicy::Replace).unwrap_err().to_string(),
        "ERR Function fb already exists"
    );
    assert_eq!(fcall(&mut engine, &mut host, "old", &[], &[], false), Ok(bulk("old")));
    // A damaged payload is refused with Redis' text.
    let mut damaged = payload.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    assert_eq!(
        engine.function_restore(&damaged, RestorePolicy::Flush).unwrap_err().to_string(),
        "ERR DUMP payload version or checksum are wrong"
    );
    assert_eq!(
        RestorePolicy::from_argument(b"x").unwrap_err().to_string(),
        "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
    );
    // The export loads back into a fresh engine.
    let (mut fresh, _) = common::engine();
    let codes: Vec<Vec<u8>> = exported.iter().map(|library| library.code.clone()).collect();
    fresh.restore_libraries(&codes, RestorePolicy::Append).unwrap();
    assert_eq!(fresh.libraries(), exported);
    assert_eq!(fcall(&mut fresh, &mut host, "fb", &[], &[], false), Ok(bulk("b")));
    let _ = ScriptError::FunctionNotFound;
}

#[test]
fn function_globals_are_the_eval_ones_without_eval_extras() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    load(&mut engine, "#!lua name=keys\nredis.register_function('gk', function() local t = {} for k in pairs(_G) do t[#t+1] = k end table.sort(t) local r = {} for k in pairs(redis) do r[#r+1] = k end table.sort(r) return {#t, r} end)").unwrap();
    let reply = fcall(&mut engine, &mut host, "gk", &[], &[], false).unwrap();
    let expected_redis = [
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
        "call",
        "error_reply",
        "log",
        "pcall",
        "set_repl",
        "setresp",
        "sha1hex",
        "status_reply",
    ];
    assert_eq!(
        reply,
        Value::Array(vec![Value::Int(33), Value::Array(expected_redis.iter().map(|name| bulk(name)).collect())])
    );
}
