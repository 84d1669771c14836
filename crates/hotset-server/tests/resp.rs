//! The Redis protocol, black box: the real `hotset` binary driven by real clients (the
//! `redis` crate, `redis-cli`, `redis-benchmark`) and by raw bytes for malformed frames.

mod common;

use common::{Server, curl, exchange, redis_cli};
use redis::{Commands, RedisResult, cmd};
use std::process::Command;

fn error_text<T: std::fmt::Debug>(result: RedisResult<T>) -> String {
    let error = result.expect_err("the command fails");
    // "ERR wrong number ..." as the server sent it: the code, then the detail.
    format!("{} {}", error.code().unwrap_or("?"), error.detail().unwrap_or(""))
}

#[test]
fn strings_counters_and_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let _: () = c.set("s", "v").unwrap();
    assert_eq!(c.get::<_, String>("s").unwrap(), "v");
    let nx: Option<String> = cmd("SET").arg("s").arg("w").arg("NX").query(&mut c).unwrap();
    assert_eq!(nx, None, "NX on an existing key answers null");
    let old: String = cmd("SET").arg("s").arg("w").arg("XX").arg("GET").query(&mut c).unwrap();
    assert_eq!(old, "v");
    let _: () = cmd("SET").arg("t").arg("1").arg("EX").arg(100).query(&mut c).unwrap();
    let ttl: i64 = c.ttl("t").unwrap();
    assert!((99..=100).contains(&ttl), "{ttl}");
    let _: () = cmd("SET").arg("t").arg("2").arg("KEEPTTL").query(&mut c).unwrap();
    assert!(c.pttl::<_, i64>("t").unwrap() > 98_000);
    assert_eq!(
        error_text(cmd("SET").arg("t").arg("2").arg("EX").arg(1).arg("KEEPTTL").query::<()>(&mut c)),
        "ERR syntax error"
    );
    assert_eq!(
        error_text(cmd("SET").arg("t").arg("2").arg("EX").arg(0).query::<()>(&mut c)),
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(c.incr::<_, _, i64>("n", 5).unwrap(), 5);
    assert_eq!(cmd("INCR").arg("n").query::<i64>(&mut c).unwrap(), 6);
    assert_eq!(cmd("DECRBY").arg("n").arg(10).query::<i64>(&mut c).unwrap(), -4);
    assert_eq!(cmd("INCRBYFLOAT").arg("f").arg("1.5").query::<String>(&mut c).unwrap(), "1.5");
    assert_eq!(error_text(cmd("INCR").arg("s").query::<i64>(&mut c)), "ERR value is not an integer or out of range");
    assert_eq!(
        error_text(cmd("INCRBY").arg("n").arg("x").query::<i64>(&mut c)),
        "ERR value is not an integer or out of range"
    );
    let _: () = c.set("big", i64::MAX).unwrap();
    assert_eq!(error_text(cmd("INCR").arg("big").query::<i64>(&mut c)), "ERR increment or decrement would overflow");
    assert_eq!(error_text(cmd("GET").query::<()>(&mut c)), "ERR wrong number of arguments for 'get' command");
    assert_eq!(cmd("APPEND").arg("s").arg("xy").query::<i64>(&mut c).unwrap(), 3);
    assert_eq!(cmd("STRLEN").arg("s").query::<i64>(&mut c).unwrap(), 3);
    assert_eq!(cmd("GETDEL").arg("s").query::<String>(&mut c).unwrap(), "wxy");
    assert_eq!(cmd("GETSET").arg("s").arg("z").query::<Option<String>>(&mut c).unwrap(), None);
    assert_eq!(cmd("SETNX").arg("s").arg("q").query::<i64>(&mut c).unwrap(), 0);
    let _: () = cmd("MSET").arg("a").arg(1).arg("b").arg(2).query(&mut c).unwrap();
    let got: Vec<Option<String>> = cmd("MGET").arg("a").arg("nope").arg("b").query(&mut c).unwrap();
    assert_eq!(got, vec![Some("1".into()), None, Some("2".into())]);
    assert_eq!(cmd("MSETNX").arg("a").arg(9).arg("c").arg(9).query::<i64>(&mut c).unwrap(), 0);
    assert_eq!(c.get::<_, Option<String>>("c").unwrap(), None, "MSETNX sets nothing when one key exists");
    assert_eq!(
        error_text(cmd("MSET").arg("a").query::<()>(&mut c)),
        "ERR wrong number of arguments for 'mset' command"
    );
    let _: () = cmd("PSETEX").arg("p").arg(50_000).arg("v").query(&mut c).unwrap();
    assert!(c.pttl::<_, i64>("p").unwrap() > 40_000);
    let _: () = c.hset("h", "f", "v").unwrap();
    assert_eq!(
        error_text(c.get::<_, String>("h")),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    let unknown = error_text(cmd("FROB").arg("x").query::<()>(&mut c));
    assert_eq!(unknown, "ERR unknown command 'FROB', with args beginning with: 'x'");
    server.stop();
}

#[test]
fn keys_expiry_scan_and_rename() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    for i in 0..300 {
        let _: () = c.set(format!("k:{i}"), i).unwrap();
    }
    let _: () = c.set("other", 1).unwrap();
    assert_eq!(cmd("DBSIZE").query::<i64>(&mut c).unwrap(), 301);
    assert_eq!(cmd("EXISTS").arg("k:1").arg("k:1").arg("zz").query::<i64>(&mut c).unwrap(), 2);
    // SCAN until the cursor comes back to 0: every matching key exactly as stored.
    let mut cursor = "0".to_string();
    let mut seen = std::collections::BTreeSet::new();
    loop {
        let (next, keys): (String, Vec<String>) =
            cmd("SCAN").arg(&cursor).arg("MATCH").arg("k:*").arg("COUNT").arg(25).query(&mut c).unwrap();
        seen.extend(keys);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen.len(), 300);
    assert!(seen.iter().all(|k| k.starts_with("k:")));
    let mut keys: Vec<String> = cmd("KEYS").arg("k:1?").query(&mut c).unwrap();
    keys.sort();
    assert_eq!(keys, (10..20).map(|i| format!("k:{i}")).collect::<Vec<_>>());
    assert_eq!(error_text(cmd("SCAN").arg("x").query::<()>(&mut c)), "ERR invalid cursor");
    assert_eq!(cmd("EXPIRE").arg("k:1").arg(100).query::<i64>(&mut c).unwrap(), 1);
    assert_eq!(cmd("EXPIRE").arg("k:1").arg(50).arg("GT").query::<i64>(&mut c).unwrap(), 0);
    assert_eq!(cmd("TTL").arg("k:1").query::<i64>(&mut c).unwrap(), 100);
    assert_eq!(cmd("TTL").arg("k:2").query::<i64>(&mut c).unwrap(), -1);
    assert_eq!(cmd("TTL").arg("missing").query::<i64>(&mut c).unwrap(), -2);
    assert_eq!(cmd("PERSIST").arg("k:1").query::<i64>(&mut c).unwrap(), 1);
    assert_eq!(cmd("PEXPIRE").arg("k:3").arg(-1).query::<i64>(&mut c).unwrap(), 1, "a past expiry deletes");
    assert!(!c.exists::<_, bool>("k:3").unwrap());
    assert_eq!(error_text(cmd("EXPIRE").arg("k:4").arg(1).arg("YY").query::<i64>(&mut c)), "ERR Unsupported option YY");
    assert_eq!(cmd("TYPE").arg("k:4").query::<String>(&mut c).unwrap(), "string");
    assert_eq!(cmd("TYPE").arg("nothing").query::<String>(&mut c).unwrap(), "none");
    let _: () = cmd("RENAME").arg("k:4").arg("renamed").query(&mut c).unwrap();
    assert_eq!(c.get::<_, i64>("renamed").unwrap(), 4);
    assert_eq!(error_text(cmd("RENAME").arg("k:4").arg("x").query::<()>(&mut c)), "ERR no such key");
    assert_eq!(cmd("DEL").arg("renamed").arg("k:5").arg("nope").query::<i64>(&mut c).unwrap(), 2);
    assert_eq!(cmd("UNLINK").arg("k:6").query::<i64>(&mut c).unwrap(), 1);
    let _: () = cmd("FLUSHDB").query(&mut c).unwrap();
    assert_eq!(cmd("DBSIZE").query::<i64>(&mut c).unwrap(), 0);
    server.stop();
}

#[test]
fn hashes() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(cmd("HSET").arg("h").arg("a").arg(1).arg("b").arg(2).query::<i64>(&mut c).unwrap(), 2);
    assert_eq!(cmd("HSET").arg("h").arg("a").arg(3).query::<i64>(&mut c).unwrap(), 0);
    assert_eq!(c.hget::<_, _, i64>("h", "a").unwrap(), 3);
    let got: Vec<Option<String>> = cmd("HMGET").arg("h").arg("a").arg("x").query(&mut c).unwrap();
    assert_eq!(got, vec![Some("3".into()), None]);
    let all: std::collections::BTreeMap<String, String> = c.hgetall("h").unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(cmd("HINCRBY").arg("h").arg("a").arg(10).query::<i64>(&mut c).unwrap(), 13);
    assert_eq!(cmd("HINCRBYFLOAT").arg("h").arg("f").arg("0.5").query::<String>(&mut c).unwrap(), "0.5");
    assert_eq!(cmd("HLEN").arg("h").query::<i64>(&mut c).unwrap(), 3);
    assert_eq!(cmd("HEXISTS").arg("h").arg("b").query::<i64>(&mut c).unwrap(), 1);
    let mut keys: Vec<String> = cmd("HKEYS").arg("h").query(&mut c).unwrap();
    keys.sort();
    assert_eq!(keys, ["a", "b", "f"]);
    assert_eq!(cmd("HVALS").arg("h").query::<Vec<String>>(&mut c).unwrap().len(), 3);
    let (next, pairs): (String, Vec<String>) =
        cmd("HSCAN").arg("h").arg(0).arg("MATCH").arg("a").query(&mut c).unwrap();
    assert_eq!((next.as_str(), pairs), ("0", vec!["a".to_string(), "13".to_string()]));
    assert_eq!(cmd("HDEL").arg("h").arg("a").arg("zz").query::<i64>(&mut c).unwrap(), 1);
    assert_eq!(
        error_text(cmd("HSET").arg("h").arg("a").query::<()>(&mut c)),
        "ERR wrong number of arguments for 'hset' command"
    );
    assert_eq!(
        error_text(cmd("HINCRBY").arg("h").arg("f").arg(1).query::<i64>(&mut c)),
        "ERR hash value is not an integer"
    );
    server.stop();
}

#[test]
fn multi_exec_is_atomic_and_reports_errors_like_redis() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let (a, b, missing): (i64, i64, Option<String>) =
        redis::pipe().atomic().incr("x", 1).incr("x", 2).get("nope").query(&mut c).unwrap();
    assert_eq!((a, b, missing), (1, 3, None));
    // An error while queueing aborts EXEC; an error while executing is that command's reply.
    let mut raw = server.raw();
    let reply = exchange(&mut raw, b"MULTI\r\nSET q 1\r\nNOSUCH\r\nEXEC\r\n", b"EXECABORT");
    let text = String::from_utf8_lossy(&reply);
    assert!(text.starts_with("+OK\r\n+QUEUED\r\n-ERR unknown command 'NOSUCH'"), "{text}");
    assert!(text.ends_with("-EXECABORT Transaction discarded because of previous errors.\r\n"), "{text}");
    assert_eq!(c.get::<_, Option<i64>>("q").unwrap(), None, "nothing of an aborted transaction ran");
    let reply = exchange(&mut raw, b"MULTI\r\nSET s v\r\nINCR s\r\nGET s\r\nEXEC\r\n", b"$1\r\nv\r\n");
    let text = String::from_utf8_lossy(&reply);
    assert!(text.ends_with("*3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n$1\r\nv\r\n"), "{text}");
    let reply = exchange(&mut raw, b"EXEC\r\nDISCARD\r\nMULTI\r\nMULTI\r\nDISCARD\r\n", b"nested\r\n+OK\r\n");
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n+OK\r\n-ERR MULTI calls can not be nested\r\n+OK\r\n"
    );
    // Each MULTI rule of the command table: PING and ECHO run inside EXEC (PING's own arity
    // check too), INFO is queued and refused there, FLUSHALL fails EXEC as a whole, and
    // SELECT is refused while queueing.
    let reply = exchange(&mut raw, b"MULTI\r\nPING\r\nECHO hi\r\nPING a b\r\nINFO\r\nEXEC\r\n", b"MULTI\r\n");
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*4\r\n+PONG\r\n$2\r\nhi\r\n\
         -ERR wrong number of arguments for 'ping' command\r\n-ERR INFO cannot run inside MULTI\r\n"
    );
    let reply = exchange(&mut raw, b"MULTI\r\nSET f 1\r\nFLUSHALL\r\nEXEC\r\n", b"FLUSHDB\r\n");
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n-ERR FLUSHALL is not allowed inside MULTI; use FLUSHDB\r\n"
    );
    let reply = exchange(&mut raw, b"MULTI\r\nSELECT 1\r\nEXEC\r\n", b"errors.\r\n");
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "+OK\r\n-ERR Command not allowed inside a transaction: SELECT\r\n\
         -EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    assert_eq!(c.get::<_, Option<i64>>("f").unwrap(), None, "nothing of a refused transaction ran");

    // Concurrent transfers inside MULTI/EXEC never show a sum other than the total.
    let _: () = redis::pipe().set("acct:a", 1000).set("acct:b", 0).query(&mut c).unwrap();
    let writer = {
        let addr = server.resp.clone();
        std::thread::spawn(move || {
            let mut w = redis::Client::open(format!("redis://{addr}/")).unwrap().get_connection().unwrap();
            for _ in 0..500 {
                let _: (i64, i64) = redis::pipe().atomic().decr("acct:a", 1).incr("acct:b", 1).query(&mut w).unwrap();
            }
        })
    };
    for _ in 0..500 {
        let (a, b): (i64, i64) = redis::pipe().atomic().get("acct:a").get("acct:b").query(&mut c).unwrap();
        assert_eq!(a + b, 1000);
    }
    writer.join().unwrap();
    assert_eq!(c.get::<_, i64>("acct:b").unwrap(), 500);
    server.stop();
}

#[test]
fn keyspaces_by_number_and_by_name_are_independent() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let _: () = c.set("k", "zero").unwrap();
    let _: () = cmd("SELECT").arg(1).query(&mut c).unwrap();
    assert_eq!(c.get::<_, Option<String>>("k").unwrap(), None);
    let _: () = c.set("k", "one").unwrap();
    let _: () = cmd("SELECT").arg("sessions").query(&mut c).unwrap();
    let _: () = c.set("k", "named").unwrap();
    assert_eq!(cmd("DBSIZE").query::<i64>(&mut c).unwrap(), 1);
    assert_eq!(error_text(cmd("SELECT").arg(16).query::<()>(&mut c)), "ERR DB index is out of range");
    assert!(error_text(cmd("SELECT").arg("bad name!").query::<()>(&mut c)).starts_with("ERR invalid keyspace name"));
    let mut other = server.client();
    assert_eq!(other.get::<_, String>("k").unwrap(), "zero", "a new connection starts in keyspace 0");
    let _: () = cmd("SELECT").arg("sessions").query(&mut other).unwrap();
    assert_eq!(other.get::<_, String>("k").unwrap(), "named");
    let _: () = cmd("FLUSHDB").query(&mut other).unwrap();
    let _: () = cmd("SELECT").arg(1).query(&mut other).unwrap();
    assert_eq!(other.get::<_, String>("k").unwrap(), "one", "FLUSHDB empties only its keyspace");
    let _: () = cmd("FLUSHALL").query(&mut other).unwrap();
    let _: () = cmd("SELECT").arg(0).query(&mut other).unwrap();
    assert_eq!(other.get::<_, Option<String>>("k").unwrap(), None, "FLUSHALL empties all");
    server.stop();
}

#[test]
fn resp3_hello_and_connection_commands() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut raw = server.raw();
    let reply = exchange(&mut raw, b"HELLO 3\r\n", b"modules");
    let text = String::from_utf8_lossy(&reply);
    assert!(text.starts_with("%7\r\n$6\r\nserver\r\n$6\r\nhotset\r\n"), "{text}");
    let reply = exchange(&mut raw, b"*1\r\n$4\r\nTIME\r\n", b"\r\n");
    assert!(reply.starts_with(b"*2\r\n"));
    let reply = exchange(&mut raw, b"HSET h f v\r\nHGETALL h\r\nGET nothing\r\n", b"_\r\n");
    assert_eq!(
        String::from_utf8_lossy(&reply).trim_start_matches(|c| c != ':'),
        ":1\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n_\r\n"
    );
    assert!(exchange(&mut raw, b"HELLO 4\r\n", b"\r\n").starts_with(b"-NOPROTO"));

    let mut c = server.client();
    let _: () = cmd("CLIENT").arg("SETNAME").arg("tester").query(&mut c).unwrap();
    assert_eq!(cmd("CLIENT").arg("GETNAME").query::<String>(&mut c).unwrap(), "tester");
    let id: i64 = cmd("CLIENT").arg("ID").query(&mut c).unwrap();
    let list: String = cmd("CLIENT").arg("LIST").query(&mut c).unwrap();
    assert!(list.lines().any(|l| l.starts_with(&format!("id={id} ")) && l.contains("name=tester")), "{list}");
    assert!(error_text(cmd("CLIENT").arg("SETNAME").arg("a b").query::<()>(&mut c)).contains("cannot contain spaces"));
    let count: i64 = cmd("COMMAND").arg("COUNT").query(&mut c).unwrap();
    assert!(count > 60, "{count}");
    // Key positions (first, last, step) as Redis reports them, from the command table; the
    // flags are a RESP3 set here (MSET may add data: refused over maxmemory, `denyoom`).
    let info = exchange(
        &mut raw,
        b"COMMAND INFO mset get dbsize\r\n",
        b"dbsize\r\n:1\r\n~1\r\n+readonly\r\n:0\r\n:0\r\n:0\r\n",
    );
    assert_eq!(
        String::from_utf8_lossy(&info),
        "*3\r\n*6\r\n$4\r\nmset\r\n:-3\r\n~2\r\n+write\r\n+denyoom\r\n:1\r\n:-1\r\n:2\r\n\
         *6\r\n$3\r\nget\r\n:2\r\n~1\r\n+readonly\r\n:1\r\n:1\r\n:1\r\n\
         *6\r\n$6\r\ndbsize\r\n:1\r\n~1\r\n+readonly\r\n:0\r\n:0\r\n:0\r\n"
    );
    let config: Vec<String> = cmd("CONFIG").arg("GET").arg("append*").query(&mut c).unwrap();
    assert_eq!(config, ["appendfsync", "everysec", "appendonly", "yes"]);
    let info: String = cmd("INFO").arg("keyspace").query(&mut c).unwrap();
    assert!(info.contains("db0:keys=1,"), "{info}");
    assert_eq!(cmd("ECHO").arg("hi").query::<String>(&mut c).unwrap(), "hi");
    assert_eq!(cmd("PING").query::<String>(&mut c).unwrap(), "PONG");
    let _: () = cmd("SAVE").query(&mut c).unwrap();
    let saved: i64 = cmd("LASTSAVE").query(&mut c).unwrap();
    assert!(saved > 1_700_000_000, "{saved}");
    assert!(error_text(cmd("AUTH").arg("pw").query::<()>(&mut c)).contains("without any password configured"));
    let reply = exchange(&mut raw, b"QUIT\r\n", b"+OK\r\n");
    assert!(reply.ends_with(b"+OK\r\n"));
    assert_eq!(exchange(&mut raw, b"PING\r\n", b"PONG"), b"", "QUIT closes the connection");
    server.stop();
}

#[test]
fn password_is_required_when_configured() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--password", "s3cret"]);
    let mut raw = server.raw();
    assert!(exchange(&mut raw, b"GET k\r\n", b"\r\n").starts_with(b"-NOAUTH Authentication required."));
    assert!(exchange(&mut raw, b"AUTH nope\r\n", b"\r\n").starts_with(b"-WRONGPASS"));
    assert_eq!(exchange(&mut raw, b"AUTH s3cret\r\nSET k v\r\n", b"+OK\r\n+OK\r\n"), b"+OK\r\n+OK\r\n");
    let mut c = redis::Client::open(format!("redis://:s3cret@{}/", server.resp)).unwrap().get_connection().unwrap();
    assert_eq!(c.get::<_, String>("k").unwrap(), "v");
    server.stop();
}

#[test]
fn malformed_frames_get_an_error_and_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-bulk-bytes", "1048576"]);
    let mut c = server.client();
    let _: () = c.set("kept", "value").unwrap();
    let cases: [&[u8]; 6] = [
        b"*2\r\n$3\r\nGET\r\n+k\r\n",
        b"*1\r\n$99999999999\r\n",
        b"*1\r\n$2000000\r\n",
        b"*abc\r\n",
        b"*1\r\n$3\r\nGETX\r\n",
        b"SET \"unterminated\r\n",
    ];
    for case in cases {
        let mut raw = server.raw();
        let reply = exchange(&mut raw, case, b"\r\n");
        assert!(
            reply.starts_with(b"-ERR Protocol error: "),
            "{:?} -> {:?}",
            String::from_utf8_lossy(case),
            String::from_utf8_lossy(&reply)
        );
        assert_eq!(exchange(&mut raw, b"", b"\r\n"), b"", "the connection is closed after a protocol error");
    }
    // A truncated frame, then the client goes away: nothing breaks.
    let mut raw = server.raw();
    std::io::Write::write_all(&mut raw, b"*3\r\n$3\r\nSET\r\n$1\r\nk").unwrap();
    drop(raw);
    // Pipelined requests split at arbitrary points are reassembled.
    let mut raw = server.raw();
    let pipeline = b"*3\r\n$3\r\nSET\r\n$1\r\np\r\n$2\r\n42\r\n*2\r\n$4\r\nINCR\r\n$1\r\np\r\nPING\r\n";
    for chunk in pipeline.chunks(5) {
        std::io::Write::write_all(&mut raw, chunk).unwrap();
    }
    assert_eq!(exchange(&mut raw, b"", b"+PONG\r\n"), b"+OK\r\n:43\r\n+PONG\r\n");
    assert_eq!(c.get::<_, String>("kept").unwrap(), "value", "stored data is intact");
    assert_eq!(cmd("PING").query::<String>(&mut c).unwrap(), "PONG", "other clients go on");
    let info: String = cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert!(info.contains("protocol_errors:6"), "{info}");
    server.stop();
}

#[test]
fn redis_cli_and_redis_benchmark_work_against_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(redis_cli(&server, &["SET", "greeting", "hello world"]), "OK\n");
    assert_eq!(redis_cli(&server, &["GET", "greeting"]), "hello world\n");
    assert_eq!(redis_cli(&server, &["HSET", "h", "a", "1", "b", "2"]), "2\n");
    assert_eq!(redis_cli(&server, &["-3", "HGETALL", "h"]).lines().count(), 2);
    assert!(redis_cli(&server, &["NOSUCH"]).starts_with("ERR unknown command 'NOSUCH'"));
    let output = Command::new("redis-benchmark")
        .args([
            "-p",
            server.resp_port(),
            "-t",
            "set,get,incr,hset,mset",
            "-n",
            "2000",
            "-c",
            "8",
            "-P",
            "4",
            "-q",
            "--csv",
        ])
        .output()
        .expect("running redis-benchmark");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let csv = String::from_utf8_lossy(&output.stdout);
    for test in ["SET", "GET", "INCR", "HSET", "MSET (10 keys)"] {
        let line =
            csv.lines().find(|l| l.starts_with(&format!("\"{test}\""))).unwrap_or_else(|| panic!("{test} in {csv}"));
        let rps: f64 = line.split(',').nth(1).unwrap().trim_matches('"').parse().unwrap();
        assert!(rps > 0.0, "{line}");
    }
    // Without -r every INCR hits the same key: the count is exact.
    assert_eq!(redis_cli(&server, &["GET", "counter:__rand_int__"]), "2000\n");
    assert_eq!(redis_cli(&server, &["HGET", "myhash", "element:__rand_int__"]).trim().len(), 3);
    server.stop();
}

#[test]
fn data_survives_restart_and_crash() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let _: () = c.set("clean", "shutdown").unwrap();
    let _: () = cmd("SET").arg("ttl").arg("x").arg("EX").arg(1000).query(&mut c).unwrap();
    let _: () = cmd("SELECT").arg("named").query(&mut c).unwrap();
    let _: () = c.hset("h", "f", "v").unwrap();
    server.stop();

    let server = Server::start(dir.path(), &["--fsync", "always"]);
    let mut c = server.client();
    assert_eq!(c.get::<_, String>("clean").unwrap(), "shutdown");
    assert!(c.ttl::<_, i64>("ttl").unwrap() > 990, "the deadline survives");
    let _: () = cmd("SELECT").arg("named").query(&mut c).unwrap();
    assert_eq!(c.hget::<_, _, String>("h", "f").unwrap(), "v");
    // Under fsync always, what was acknowledged before a SIGKILL is there afterwards.
    for i in 0..200 {
        let _: () = c.set(format!("acked:{i}"), i).unwrap();
    }
    let counted: i64 = redis::pipe().incr("n", 1).ignore().incr("n", 1).query::<(i64,)>(&mut c).unwrap().0;
    assert_eq!(counted, 2);
    server.kill();

    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let _: () = cmd("SELECT").arg("named").query(&mut c).unwrap();
    for i in 0..200 {
        assert_eq!(c.get::<_, i64>(format!("acked:{i}")).unwrap(), i);
    }
    assert_eq!(c.get::<_, i64>("n").unwrap(), 2);
    server.stop();
}

#[test]
fn a_second_server_on_the_same_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let output = Command::new(env!("CARGO_BIN_EXE_hotset"))
        .args(["serve", "--data"])
        .arg(dir.path())
        .args(["--resp-port", "0", "--http-port", "0"])
        .env("HOTSET_LOG", "error")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is in use by another process"), "{stderr}");
    server.stop();
}

#[test]
fn max_clients_refuses_extra_connections_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-clients", "2"]);
    let mut first = server.client();
    let mut second = server.raw();
    assert_eq!(exchange(&mut second, b"PING\r\n", b"\r\n"), b"+PONG\r\n");
    let mut third = server.raw();
    assert_eq!(exchange(&mut third, b"PING\r\n", b"\r\n"), b"-ERR max number of clients reached\r\n");
    assert_eq!(cmd("PING").query::<String>(&mut first).unwrap(), "PONG");
    server.stop();
}

#[test]
fn document_commands_over_resp() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let indexes = r#"[{"field": "id", "type": "int", "index": "hash", "pk": true}, {"field": "year", "type": "int", "index": "tree"}]"#;
    let _: () = cmd("DOC.NSCREATE").arg("books").arg(indexes).query(&mut c).unwrap();
    let again = error_text(cmd("DOC.NSCREATE").arg("books").arg(indexes).query::<()>(&mut c));
    assert_eq!(again, "ALREADY_EXISTS namespace 'books' already exists");
    let no_key = error_text(cmd("DOC.NSCREATE").arg("nokey").query::<()>(&mut c));
    assert_eq!(no_key, "SCHEMA namespace 'nokey' has no primary key index");
    let written: i64 = cmd("DOC.UPSERT")
        .arg("books")
        .arg(r#"{"id": 1, "year": 1999, "title": "a"}"#)
        .arg(r#"{"id": 2, "year": 2005, "title": "b"}"#)
        .arg(r#"{"id": 3, "year": 2012, "title": "c"}"#)
        .query(&mut c)
        .unwrap();
    assert_eq!(written, 3);
    let doc: String = cmd("DOC.GET").arg("books").arg("2").query(&mut c).unwrap();
    assert_eq!(serde_json::from_str::<serde_json::Value>(&doc).unwrap()["title"], "b");
    assert_eq!(cmd("DOC.GET").arg("books").arg("9").query::<Option<String>>(&mut c).unwrap(), None);
    let result: String = cmd("DOC.QUERY")
        .arg(r#"{"namespace": "books", "filter": {"field": "year", "op": ">=", "value": 2005}, "sort": "-year", "total": true}"#)
        .query(&mut c)
        .unwrap();
    let result: serde_json::Value = serde_json::from_str(&result).unwrap();
    assert_eq!(result["total"], 2);
    assert_eq!(result["items"][0]["id"], 3);
    let explained: String = cmd("DOC.EXPLAIN")
        .arg("books")
        .arg(r#"{"filter": {"field": "year", "op": "<", "value": 2000}}"#)
        .query(&mut c)
        .unwrap();
    let explained: serde_json::Value = serde_json::from_str(&explained).unwrap();
    assert!(explained["explain"]["steps"].as_array().is_some_and(|s| !s.is_empty()), "{explained}");
    // A bad document fails the whole write; nothing of it is stored.
    let error = error_text(cmd("DOC.INSERT").arg("books").arg(r#"{"id": 4}"#).arg(r#"{"id": 1}"#).query::<i64>(&mut c));
    assert!(error.starts_with("ALREADY_EXISTS document 2: duplicate primary key 1"), "{error}");
    assert_eq!(cmd("DOC.GET").arg("books").arg("4").query::<Option<String>>(&mut c).unwrap(), None);
    assert!(error_text(cmd("DOC.UPSERT").arg("books").arg("{oops").query::<i64>(&mut c)).contains("not valid JSON"));
    assert!(
        error_text(cmd("DOC.QUERY").arg(r#"{"namespace": "books", "limit": "x"}"#).query::<String>(&mut c))
            .contains("limit: must be")
    );
    assert!(error_text(cmd("DOC.GET").arg("nope").arg("1").query::<String>(&mut c)).contains("does not exist"));
    assert_eq!(cmd("DOC.DEL").arg("books").arg("1").query::<i64>(&mut c).unwrap(), 1);
    // DOC.TXN: mixed operations, all or nothing, the failing one named.
    let failed = error_text(
        cmd("DOC.TXN")
            .arg("books")
            .arg("upsert")
            .arg(r#"{"id": 5, "year": 2020}"#)
            .arg("DELETE")
            .arg("2")
            .arg("UPDATE")
            .arg(r#"{"id": 77, "year": 1}"#)
            .query::<i64>(&mut c),
    );
    assert!(failed.starts_with("NOT_FOUND operation 3: no document with primary key 77"), "{failed}");
    assert_eq!(cmd("DOC.GET").arg("books").arg("5").query::<Option<String>>(&mut c).unwrap(), None);
    assert!(cmd("DOC.GET").arg("books").arg("2").query::<Option<String>>(&mut c).unwrap().is_some());
    let odd = error_text(cmd("DOC.TXN").arg("books").arg("UPSERT").arg("{}").arg("DELETE").query::<i64>(&mut c));
    assert!(odd.contains("pairs"), "{odd}");
    let unknown = error_text(cmd("DOC.TXN").arg("books").arg("MERGE").arg("{}").query::<i64>(&mut c));
    assert_eq!(unknown, "BAD_REQUEST operation 1: unknown operation 'MERGE'");
    let applied: i64 = cmd("DOC.TXN")
        .arg("books")
        .arg("UPSERT")
        .arg(r#"{"id": 5, "year": 2020, "title": "e"}"#)
        .arg("DELETE")
        .arg("5")
        .arg("INSERT")
        .arg(r#"{"id": 6, "year": 2021, "title": "f"}"#)
        .arg("DELETE")
        .arg("6")
        .query(&mut c)
        .unwrap();
    assert_eq!(applied, 4);
    assert_eq!(cmd("DOC.GET").arg("books").arg("5").query::<Option<String>>(&mut c).unwrap(), None);
    assert_eq!(cmd("DOC.GET").arg("books").arg("6").query::<Option<String>>(&mut c).unwrap(), None);
    let _: () = cmd("DOC.INDEXADD")
        .arg("books")
        .arg(r#"{"field": "title", "type": "string", "index": "hash"}"#)
        .query(&mut c)
        .unwrap();
    let info: String = cmd("DOC.NSINFO").arg("books").query(&mut c).unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!((info["documents"].clone(), info["indexes"].as_array().unwrap().len()), (serde_json::json!(2), 3));
    assert_eq!(cmd("DOC.NSLIST").query::<Vec<String>>(&mut c).unwrap(), ["books"]);
    let queued = exchange(&mut server.raw(), b"MULTI\r\nDOC.NSLIST\r\n", b"DOC.NSLIST\r\n");
    assert_eq!(queued, b"+OK\r\n-ERR Command not allowed inside a transaction: DOC.NSLIST\r\n");
    server.stop();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let doc: String = cmd("DOC.GET").arg("books").arg("3").query(&mut c).unwrap();
    assert!(doc.contains("\"title\":\"c\""), "{doc}");
    server.stop();
}

#[test]
fn a_transaction_over_several_namespaces_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let pk = r#"[{"field": "id", "type": "int", "index": "hash", "pk": true}]"#;
    for namespace in ["orders", "lines"] {
        let _: () = cmd("DOC.NSCREATE").arg(namespace).arg(pk).query(&mut c).unwrap();
    }
    let get = |c: &mut redis::Connection, namespace: &str, id: i64| {
        cmd("DOC.GET").arg(namespace).arg(id).query::<Option<String>>(c).unwrap()
    };
    // An order and its lines in one transaction: NS turns to the namespace of what follows.
    let applied: i64 = cmd("DOC.TXN")
        .arg("orders")
        .arg("INSERT")
        .arg(r#"{"id": 1, "total": 30}"#)
        .arg("NS")
        .arg("lines")
        .arg("INSERT")
        .arg(r#"{"id": 10, "order": 1, "amount": 10}"#)
        .arg("INSERT")
        .arg(r#"{"id": 11, "order": 1, "amount": 20}"#)
        .query(&mut c)
        .unwrap();
    assert_eq!(applied, 3);
    assert!(
        get(&mut c, "orders", 1).is_some() && get(&mut c, "lines", 10).is_some() && get(&mut c, "lines", 11).is_some()
    );
    // A refused line refuses the order too; operations are counted without the NS pairs.
    let failed = error_text(
        cmd("DOC.TXN")
            .arg("orders")
            .arg("UPSERT")
            .arg(r#"{"id": 2, "total": 5}"#)
            .arg("ns")
            .arg("lines")
            .arg("DELETE")
            .arg("10")
            .arg("INSERT")
            .arg(r#"{"id": 11, "order": 2, "amount": 5}"#)
            .query::<i64>(&mut c),
    );
    assert!(failed.starts_with("ALREADY_EXISTS operation 3: "), "{failed}");
    assert_eq!(get(&mut c, "orders", 2), None);
    assert!(get(&mut c, "lines", 10).is_some(), "the delete before the refused insert was rolled back");
    // Back and forth between namespaces, and a namespace that does not exist.
    let applied: i64 = cmd("DOC.TXN")
        .arg("lines")
        .arg("DELETE")
        .arg("11")
        .arg("NS")
        .arg("orders")
        .arg("UPDATE")
        .arg(r#"{"id": 1, "total": 10}"#)
        .arg("NS")
        .arg("lines")
        .arg("UPSERT")
        .arg(r#"{"id": 12, "order": 1, "amount": 0}"#)
        .query(&mut c)
        .unwrap();
    assert_eq!(applied, 3);
    assert_eq!(get(&mut c, "lines", 11), None);
    assert!(get(&mut c, "orders", 1).unwrap().contains(r#""total":10"#));
    let unknown = error_text(
        cmd("DOC.TXN")
            .arg("orders")
            .arg("DELETE")
            .arg("1")
            .arg("NS")
            .arg("nope")
            .arg("DELETE")
            .arg("1")
            .query::<i64>(&mut c),
    );
    assert!(unknown.starts_with("NOT_FOUND ") && unknown.contains("nope"), "{unknown}");
    assert!(get(&mut c, "orders", 1).is_some());
    // The same over HTTP: an operation names its namespace, the route's is the default.
    let body = r#"[{"op": "upsert", "doc": {"id": 3, "total": 1}},
                   {"op": "upsert", "doc": {"id": 30, "order": 3, "amount": 1}, "namespace": "lines"}]"#;
    let (status, answer) = curl(&server, "POST", "/api/v1/namespaces/orders/transaction", Some(body.as_bytes()));
    assert_eq!((status, answer.as_str()), (200, r#"{"count":2}"#));
    assert!(get(&mut c, "orders", 3).is_some() && get(&mut c, "lines", 30).is_some());
    let body = r#"[{"op": "upsert", "doc": {"id": 4, "total": 1}},
                   {"op": "insert", "doc": {"id": 30, "order": 4, "amount": 1}, "namespace": "lines"}]"#;
    let (status, answer) = curl(&server, "POST", "/api/v1/namespaces/orders/transaction", Some(body.as_bytes()));
    assert_eq!(status, 409, "{answer}");
    assert!(answer.contains("operation 2: "), "{answer}");
    assert_eq!(get(&mut c, "orders", 4), None);
}

#[test]
fn sql_over_resp() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let indexes = r#"[{"field": "id", "type": "int", "index": "hash", "pk": true}]"#;
    let _: () = cmd("DOC.NSCREATE").arg("t").arg(indexes).query(&mut c).unwrap();
    let inserted: String = cmd("DOC.SQL").arg("INSERT INTO t (id, v) VALUES (1, 'x'), (2, 'y')").query(&mut c).unwrap();
    assert_eq!(inserted, r#"{"items":[],"affected":2}"#);
    let selected: String = cmd("DOC.SQL").arg("SELECT v FROM t WHERE id = 2").query(&mut c).unwrap();
    assert_eq!(selected, r#"{"items":[{"v":"y"}]}"#);
    let error = error_text(cmd("DOC.SQL").arg("SELECT * FROM t WHERE").query::<String>(&mut c));
    assert!(error.starts_with("BAD_QUERY Expected: an expression, found: EOF"), "{error}");
    server.stop();
}

#[test]
fn the_sql_and_status_subcommands_talk_to_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--password", "pw"]);
    let hotset = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hotset"))
            .args(args)
            .args(["--addr", &server.resp, "--password", "pw"])
            .output()
            .unwrap()
    };
    let mut c = redis::Client::open(format!("redis://:pw@{}/", server.resp)).unwrap().get_connection().unwrap();
    let indexes = r#"[{"field": "id", "type": "int", "index": "hash", "pk": true}]"#;
    let _: () = cmd("DOC.NSCREATE").arg("t").arg(indexes).query(&mut c).unwrap();
    let inserted = hotset(&["sql", "INSERT INTO t (id, v) VALUES (1, 'x')"]);
    assert!(inserted.status.success(), "{}", String::from_utf8_lossy(&inserted.stderr));
    assert_eq!(String::from_utf8_lossy(&inserted.stdout), "{\"items\":[],\"affected\":1}\n");
    let selected = hotset(&["sql", "SELECT v FROM t WHERE id = 1"]);
    assert_eq!(String::from_utf8_lossy(&selected.stdout), "{\"items\":[{\"v\":\"x\"}]}\n");
    let bad = hotset(&["sql", "SELECT * FROM nope"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("namespace 'nope' does not exist"));
    let status = hotset(&["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success() && text.contains("connected_clients:") && text.contains("wal_next_lsn:"), "{text}");
    let unauthorised =
        Command::new(env!("CARGO_BIN_EXE_hotset")).args(["status", "--addr", &server.resp]).output().unwrap();
    assert!(String::from_utf8_lossy(&unauthorised.stderr).contains("NOAUTH"));
    server.stop();
}

#[test]
fn import_and_export_move_json_lines_through_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let hotset = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hotset")).args(args).args(["--addr", &server.resp]).output().unwrap()
    };
    // 2,500 documents (three batches), a blank line and a repeated key (the later wins).
    let mut text = String::new();
    for id in 0..2_500 {
        text.push_str(&format!("{{\"id\":{id},\"name\":\"n{id}\",\"tags\":[{}]}}\n", id % 7));
        if id == 1_200 {
            text.push_str("\n{\"id\":3,\"name\":\"again\"}\n");
        }
    }
    let file = dir.path().join("people.jsonl");
    std::fs::write(&file, &text).unwrap();
    let path = file.to_str().unwrap();

    let missing = hotset(&["import", path, "--ns", "people"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--create-pk"), "{missing:?}");

    let imported = hotset(&["import", path, "--ns", "people", "--create-pk", "id"]);
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    assert!(String::from_utf8_lossy(&imported.stderr).contains("imported 2501 documents into 'people'"));
    let mut c = server.client();
    let info: String = cmd("DOC.NSINFO").arg("people").query(&mut c).unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["documents"], 2_500);
    assert_eq!(info["indexes"][0]["field"], "id");
    let again: String = cmd("DOC.GET").arg("people").arg("3").query(&mut c).unwrap();
    assert_eq!(again, r#"{"id":3,"name":"again"}"#);

    // Export to a file, then compare with what the server holds, document by document.
    let out = dir.path().join("out.jsonl");
    let exported = hotset(&["export", "--ns", "people", "--out", out.to_str().unwrap()]);
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2_500);
    let mut ids: Vec<i64> = lines.iter().map(|d| d["id"].as_i64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, (0..2_500).collect::<Vec<i64>>());
    for doc in lines.iter().step_by(97) {
        let stored: String = cmd("DOC.GET").arg("people").arg(doc["id"].to_string()).query(&mut c).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&stored).unwrap(), *doc);
    }
    // To standard output as well.
    let stdout = hotset(&["export", "--ns", "people"]);
    assert_eq!(String::from_utf8_lossy(&stdout.stdout).lines().count(), 2_500);

    // A bad document stops the import and names its line; earlier batches stay.
    let mut bad = String::new();
    for id in 10_000..11_500 {
        bad.push_str(&format!("{{\"id\":{id}}}\n"));
    }
    bad.push_str("{\"id\": \"not an int\"}\n");
    std::fs::write(&file, &bad).unwrap();
    let refused = hotset(&["import", path, "--ns", "people"]);
    assert_eq!(refused.status.code(), Some(1));
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(error.contains("line 1501:") && error.contains("1000 other documents were"), "{error}");
    let info: String = cmd("DOC.NSINFO").arg("people").query(&mut c).unwrap();
    assert_eq!(serde_json::from_str::<serde_json::Value>(&info).unwrap()["documents"], 3_500);

    // DOC.SCAN's own errors.
    let e = error_text(cmd("DOC.SCAN").arg("people").arg("x").query::<redis::Value>(&mut c));
    assert!(e.contains("invalid cursor"), "{e}");
    let e = error_text(cmd("DOC.SCAN").arg("people").arg("0").arg("COUNT").arg("0").query::<redis::Value>(&mut c));
    assert!(e.contains("out of range"), "{e}");
    let e = error_text(cmd("DOC.SCAN").arg("nope").arg("0").query::<redis::Value>(&mut c));
    assert!(e.contains("does not exist"), "{e}");
    server.stop();
}

#[test]
fn queries_past_their_time_limit_fail_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--query-timeout-ms", "1"]);
    let mut c = server.client();
    let indexes = r#"[{"field": "id", "type": "int", "index": "hash", "pk": true}]"#;
    let _: () = cmd("DOC.NSCREATE").arg("t").arg(indexes).query(&mut c).unwrap();
    for batch in 0..100 {
        let mut upsert = cmd("DOC.UPSERT");
        upsert.arg("t");
        for id in batch * 1_000..(batch + 1) * 1_000 {
            upsert.arg(format!(r#"{{"id":{id},"name":"name {id}","n":{}}}"#, (id * 7919) % 100_003));
        }
        let _: i64 = upsert.query(&mut c).unwrap();
    }
    // The slow query: an inner join whose ON condition never holds (every n is 0 or more,
    // every `below` is -1), so each of the 100,000 rows is compared with all 200 of "few",
    // read from their documents: seconds of work on any machine, thousands of times the
    // 1 ms limit. (The limit is asked between rows, so it stops soon after passing it.)
    let few = r#"[{"field": "id", "type": "int", "index": "hash", "pk": true}]"#;
    let _: () = cmd("DOC.NSCREATE").arg("few").arg(few).query(&mut c).unwrap();
    let mut upsert = cmd("DOC.UPSERT");
    upsert.arg("few");
    for id in 0..200 {
        upsert.arg(format!(r#"{{"id":{id},"below":-1}}"#));
    }
    let _: i64 = upsert.query(&mut c).unwrap();
    // A query's `timeout_ms: 0` asks for no limit of its own: the server's (1 ms) still
    // applies. (It once meant "already past" and failed every query.)
    let join = r#"[{"type": "inner", "namespace": "few", "on": [{"left": "n", "op": "<", "right": "below"}]}]"#;
    let zero = format!(r#"{{"namespace": "t", "joins": {join}, "limit": 5, "timeout_ms": 0}}"#);
    let e = error_text(cmd("DOC.QUERY").arg(&zero).query::<String>(&mut c));
    assert_eq!(e, "TIMEOUT query timed out after 1 ms (its time limit)");
    // SQL has no limit of its own: the server's applies.
    let e =
        error_text(cmd("DOC.SQL").arg("SELECT * FROM t JOIN few ON t.n < few.below LIMIT 5").query::<String>(&mut c));
    assert_eq!(e, "TIMEOUT query timed out after 1 ms (its time limit)");
    // The connection and the data go on. (No query here: under the server's 1 ms even a
    // quick one fails whenever something stalls the server for a millisecond.)
    let doc: String = cmd("DOC.GET").arg("t").arg("99999").query(&mut c).unwrap();
    assert!(doc.contains("\"name\":\"name 99999\""), "{doc}");
    // Over HTTP, the same refusal is a 503 with the message.
    let out = Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}", "-X", "POST", "--data-binary", zero.as_str()])
        .arg(format!("http://{}/api/v1/query", server.http))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text, "{\"error\":\"query timed out after 1 ms (its time limit)\",\"code\":\"timeout\"}\n503");
    server.stop();
}
