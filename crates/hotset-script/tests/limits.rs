//! The memory limit of a Lua state and the kill switch (the host's tick).

mod common;

use common::{FakeHost, bulk, engine, engine_with, eval, sha1};
use hotset_script::{Limits, ScriptError, Value};

#[test]
fn a_script_over_the_memory_limit_fails_and_the_state_recovers() {
    let limits = Limits { memory_bytes_max: 8 * 1024 * 1024, ..Limits::default() };
    let (mut engine, _) = engine_with(limits);
    let mut host = FakeHost::new();
    let body = "local t = {} for i = 1, 10000000 do t[i] = string.rep('x', 100) .. i end return #t";
    let expected = ScriptError::MemoryLimit { name: sha1(body), limit_bytes: 8 * 1024 * 1024 };
    let keys: [&[u8]; 0] = [];
    assert_eq!(engine.eval(body.as_bytes(), &keys, &keys, &mut host, Default::default()), Err(expected.clone()));
    assert_eq!(expected.to_string(), format!("ERR Lua memory limit of 8388608 bytes reached running {}", sha1(body)));
    // pcall cannot hide it for long either: the limit holds inside it too.
    let body = "local ok = pcall(function() local t = {} for i = 1, 10000000 do t[i] = string.rep('y', 100) .. i end end) return ok";
    assert_eq!(eval(&mut engine, &mut host, body), Ok(Value::Null));
    // The garbage is collected and the state goes on working.
    assert_eq!(eval(&mut engine, &mut host, "return string.rep('z', 1000):len()"), Ok(Value::Int(1000)));
    let (_, _, used) = engine.script_stats();
    assert!(used < 4 * 1024 * 1024, "used {used} bytes after the failed script");
}

#[test]
fn a_killed_script_stops_with_redis_error_even_inside_pcall_and_coroutines() {
    let (mut engine, _) = engine();
    let bodies = [
        "local i = 0 while true do i = i + 1 end",
        "local i = 0 while true do pcall(function() while true do i = i + 1 end end) end",
        "while true do local co = coroutine.wrap(function() while true do end end) pcall(co) end",
        "while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
    ];
    for body in bodies {
        let mut host = FakeHost { kill_at_tick: Some(3), ..FakeHost::default() };
        let reply = eval(&mut engine, &mut host, body);
        let error = reply.unwrap_err();
        assert!(
            error.starts_with(&format!(
                "ERR Script killed by user with SCRIPT KILL... script: {}, on @user_script:",
                sha1(body)
            )),
            "{body}: {error}"
        );
        assert!(host.ticks >= 3);
    }
    // The state works after a kill.
    let mut host = FakeHost::new();
    assert_eq!(eval(&mut engine, &mut host, "return 'alive'"), Ok(bulk("alive")));
}

#[test]
fn the_kill_error_names_the_function_and_its_line() {
    let (mut engine, _) = engine();
    engine
        .function_load(b"#!lua name=spin\nredis.register_function('spin', function()\n  while true do end\nend)", false)
        .unwrap();
    let mut host = FakeHost { kill_at_tick: Some(2), ..FakeHost::default() };
    let keys: [&[u8]; 0] = [];
    let error = engine.fcall(b"spin", &keys, &keys, &mut host, Default::default()).unwrap_err();
    assert_eq!(error, ScriptError::Killed { name: "spin".into(), location: "@user_function:3".into() });
    assert_eq!(error.to_string(), "ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:3.");
}

#[test]
fn the_host_decides_a_script_that_wrote_cannot_be_killed() {
    let (mut engine, _) = engine();
    // The fake host refuses to kill once a write went through, as Redis answers UNKILLABLE;
    // the script then runs to its end.
    let mut host = FakeHost { kill_at_tick: Some(1), ..FakeHost::default() };
    let body = "redis.call('set', 'k', 'v') local i = 0 while i < 1000000 do i = i + 1 end return i";
    assert_eq!(eval(&mut engine, &mut host, body), Ok(Value::Int(1_000_000)));
    assert!(host.kill_refused);
    assert!(host.ticks >= 5, "the host was asked {} times", host.ticks);
}
