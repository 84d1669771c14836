//! The script cache, shebang flags and read-only runs, checked against redis-server 7.0.15.

mod common;

use common::{FakeHost, engine, eval, eval_with, sha1};
use hotset_script::{RunOptions, ScriptError, ScriptFlags, Value, split_keys};

const RO: RunOptions = RunOptions { read_only: true, answer: hotset_script::Answer::Reply };

#[test]
fn script_load_exists_evalsha_and_flush() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let sha = engine.script_load(b"return 1").unwrap();
    assert_eq!(sha, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
    assert!(engine.script_exists(b"E0E1F9FABFC9D4800C877A703B823AC0578FF8DB"));
    assert!(!engine.script_exists(b"abc"));
    assert_eq!(
        engine.evalsha(b"E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", &[], &[], &mut host, RunOptions::default()),
        Ok(Value::Int(1))
    );
    assert_eq!(engine.evalsha(b"abc", &[], &[], &mut host, RunOptions::default()), Err(ScriptError::NoScript));
    assert_eq!(engine.evalsha(&[b'f'; 40], &[], &[], &mut host, RunOptions::default()), Err(ScriptError::NoScript));
    assert_eq!(ScriptError::NoScript.to_string(), "NOSCRIPT No matching script. Please use EVAL.");
    // EVAL caches what it runs; SCRIPT LOAD of a cached body is a no-op returning its SHA1.
    eval(&mut engine, &mut host, "return 2").unwrap();
    assert!(engine.script_exists(sha1("return 2").as_bytes()));
    assert_eq!(engine.script_load(b"return 2").unwrap(), sha1("return 2"));
    assert_eq!(engine.script_body(sha.as_bytes()), Some(&b"return 1"[..]));
    assert_eq!(engine.script_stats().0, 2);
    engine.script_flush().unwrap();
    assert!(!engine.script_exists(sha.as_bytes()));
    assert_eq!(engine.evalsha(sha.as_bytes(), &[], &[], &mut host, RunOptions::default()), Err(ScriptError::NoScript));
    assert_eq!(engine.script_stats().0, 0);
    // The fresh state works.
    assert_eq!(eval(&mut engine, &mut host, "return redis.call('ping')"), Ok(Value::Simple(b"PONG".to_vec())));
}

#[test]
fn compile_and_shebang_errors() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let cases: &[(&str, &str)] = &[
        ("x x", "ERR Error compiling script (new function): user_script:1: '=' expected near 'x'"),
        ("#!lua", "ERR Invalid script shebang"),
        ("#!js\nreturn 1", "ERR Unexpected engine in script shebang: #!js"),
        ("#!lua foo=bar\nreturn 1", "ERR Unknown lua shebang option: foo=bar"),
        ("#!lua flags=bad\nreturn 1", "ERR Unexpected flag in script shebang: bad"),
    ];
    for (body, message) in cases {
        assert_eq!(eval(&mut engine, &mut host, body), Err(message.to_string()), "{body}");
        assert_eq!(engine.script_load(body.as_bytes()).map_err(|error| error.to_string()), Err(message.to_string()));
        assert!(!engine.script_exists(sha1(body).as_bytes()), "a failed body is not cached");
    }
    assert_eq!(eval(&mut engine, &mut host, "#!lua\nreturn 1"), Ok(Value::Int(1)));
}

#[test]
fn read_only_runs_refuse_writes() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let body = "return redis.call('set','a','b')";
    let refused = format!(
        "ERR Write commands are not allowed from read-only scripts. script: {}, on @user_script:1.",
        sha1(body)
    );
    assert_eq!(eval_with(&mut engine, &mut host, body, &[], &[], RO), Err(refused));
    assert!(host.data.is_empty());
    assert_eq!(eval_with(&mut engine, &mut host, "return redis.call('get','a')", &[], &[], RO), Ok(Value::Null));
    // A script declaring flags without no-writes cannot run through *_RO at all.
    assert_eq!(
        eval_with(&mut engine, &mut host, "#!lua\nreturn 1", &[], &[], RO),
        Err("ERR Can not execute a script with write flag using *_ro command.".into())
    );
    // no-writes makes a plain EVAL read-only too, and is allowed through *_RO.
    let body = "#!lua flags=no-writes\nreturn redis.call('set','a','b')";
    let refused = format!(
        "ERR Write commands are not allowed from read-only scripts. script: {}, on @user_script:2.",
        sha1(body)
    );
    assert_eq!(eval(&mut engine, &mut host, body), Err(refused.clone()));
    assert_eq!(eval_with(&mut engine, &mut host, body, &[], &[], RO), Err(refused));
    // The host is told, with each call, that the run is read-only and what flags it declared.
    let (_, context) = host.calls.last().unwrap();
    assert!(context.read_only);
    assert_eq!(context.flags, Some(ScriptFlags::NO_WRITES));
    assert_eq!(engine.eval_flags(body.as_bytes()), Ok(Some(ScriptFlags::NO_WRITES)));
    assert_eq!(engine.eval_flags(b"return 1"), Ok(None));
    assert_eq!(engine.evalsha_flags(sha1(body).as_bytes()), Some(Some(ScriptFlags::NO_WRITES)));
    // Without a shebang, a write through plain EVAL goes to the host as a normal write.
    eval(&mut engine, &mut host, "return redis.call('set','a','b')").unwrap();
    assert!(!host.calls.last().unwrap().1.read_only);
    assert!(host.wrote);
}

#[test]
fn numkeys_is_checked_with_redis_texts() {
    let rest: Vec<&[u8]> = vec![b"a", b"b", b"c"];
    assert_eq!(split_keys(b"2", &rest, false), Ok((&rest[..2], &rest[2..])));
    assert_eq!(split_keys(b"x", &rest, false).unwrap_err().to_string(), "ERR value is not an integer or out of range");
    assert_eq!(
        split_keys(b"1.5", &rest, false).unwrap_err().to_string(),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(split_keys(b"x", &rest, true).unwrap_err().to_string(), "ERR Bad number of keys provided");
    assert_eq!(split_keys(b"-1", &rest, false).unwrap_err().to_string(), "ERR Number of keys can't be negative");
    assert_eq!(
        split_keys(b"4", &rest, false).unwrap_err().to_string(),
        "ERR Number of keys can't be greater than number of args"
    );
}

#[test]
fn the_engine_can_move_between_threads() {
    // The server keeps one engine behind a lock and runs scripts from any worker thread.
    fn assert_send<T: Send>() {}
    assert_send::<hotset_script::Engine>();
    let (mut engine, _) = engine();
    let handle = std::thread::spawn(move || {
        let mut host = FakeHost::new();
        eval(&mut engine, &mut host, "return redis.call('ping')")
    });
    assert_eq!(handle.join().unwrap(), Ok(Value::Simple(b"PONG".to_vec())));
}
