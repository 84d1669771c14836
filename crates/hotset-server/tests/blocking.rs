//! Engine calls that block (`hotset_ops::Request::blocks`: writes, index builds, searches)
//! leave the other connections of their I/O thread served: with one I/O thread, a client
//! pinging in a loop while another builds a large text index over RESP is never stalled
//! for the length of the build (HTTP hands such requests to the blocking pool).

mod common;

use common::{Server, exchange};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// One RESP command as bytes.
fn command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
    }
    out
}

#[test]
fn a_long_index_build_does_not_stall_the_other_connections_of_its_io_thread() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--threads", "1", "--fsync", "never"]);
    let mut loader = server.raw();
    let pk = r#"[{"field": "id", "type": "int", "index": "hash", "pk": true}]"#;
    assert_eq!(exchange(&mut loader, &command(&["DOC.NSCREATE", "t", pk]), b"\r\n"), b"+OK\r\n");
    let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"];
    const DOCS: usize = 300_000;
    const BATCH: usize = 10_000;
    for start in (0..DOCS).step_by(BATCH) {
        let docs: Vec<String> = (start..start + BATCH)
            .map(|i| {
                let text: Vec<String> = (0..12)
                    .map(|w| format!("{}{}", words[(i * 7 + w * 3) % words.len()], (i * 31 + w) % 997))
                    .collect();
                format!(r#"{{"id": {i}, "text": "{}"}}"#, text.join(" "))
            })
            .collect();
        let mut args = vec!["DOC.UPSERT", "t"];
        args.extend(docs.iter().map(String::as_str));
        assert_eq!(exchange(&mut loader, &command(&args), b"\r\n"), format!(":{BATCH}\r\n").as_bytes());
    }

    // The builder's request goes out; its reply is read only at the end.
    let mut builder = server.raw();
    let started = Instant::now();
    builder
        .write_all(&command(&["DOC.INDEXADD", "t", r#"{"field": "text", "type": "string", "index": "text"}"#]))
        .unwrap();
    builder.set_nonblocking(true).unwrap();
    let mut pinger = server.raw();
    let mut longest = Duration::ZERO;
    let mut pings = 0;
    let mut reply = Vec::new();
    let build = loop {
        let sent = Instant::now();
        assert_eq!(exchange(&mut pinger, &command(&["PING"]), b"\r\n"), b"+PONG\r\n");
        longest = longest.max(sent.elapsed());
        pings += 1;
        let mut chunk = [0u8; 64];
        match builder.read(&mut chunk) {
            Ok(0) => panic!("the server closed the builder's connection"),
            Ok(n) => reply.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
        if reply.ends_with(b"\r\n") {
            break started.elapsed();
        }
    };
    assert_eq!(reply, b"+OK\r\n");
    // The build must be long for the comparison to mean anything.
    assert!(build > Duration::from_millis(200), "the index built in {build:?}: too quick to show a stall");
    assert!(
        longest < build / 4,
        "a ping waited {longest:?} while the index built in {build:?} ({pings} pings): the build held the I/O thread"
    );
}
