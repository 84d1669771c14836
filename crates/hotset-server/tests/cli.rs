//! The client subcommands (`hotset import`, `export`, `status`, `sql`) and the binary's
//! logging, black box: the real `hotset` binary against a real server, a listener that
//! never answers, a closed pipe and a pseudo-terminal.

mod common;

use common::Server;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

fn hotset(server: &Server, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hotset")).args(args).args(["--addr", &server.resp]).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn documents(server: &Server, namespace: &str) -> u64 {
    let info: String = redis::cmd("DOC.NSINFO").arg(namespace).query(&mut server.client()).unwrap();
    serde_json::from_str::<serde_json::Value>(&info).unwrap()["documents"].as_u64().unwrap()
}

/// Regression: invalid JSON went to the server inside a batch, whose refusal named no
/// document, so the import said "lines 1001-1502" instead of the bad line.
#[test]
fn import_names_the_line_and_column_of_invalid_json() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut text = String::new();
    for id in 0..1_500 {
        text.push_str(&format!("{{\"id\":{id}}}\n"));
    }
    text.push('\n'); // line 1501: blank, skipped
    text.push_str("  {\"id\": 1500, \"name\" \"x\"}\n"); // line 1502: `"x"` at column 23, no `:` before it
    text.push_str("{\"id\":1501}\n");
    let file = dir.path().join("bad.jsonl");
    std::fs::write(&file, &text).unwrap();

    let output = hotset(&server, &["import", file.to_str().unwrap(), "--ns", "people", "--create-pk", "id"]);
    assert_eq!(output.status.code(), Some(1));
    let error = stderr(&output);
    assert!(error.contains("bad.jsonl: line 1502, column 23: invalid JSON: expected `:`"), "{error}");
    assert!(error.contains("1000 documents before line 1001 were imported"), "{error}");
    assert_eq!(documents(&server, "people"), 1_000);
    server.stop();
}

/// Regression: a file holding one JSON array was read as JSON Lines, so its first "line"
/// (`[{...},`) had no primary key: "the first document has no int or string 'id'".
#[test]
fn import_streams_a_json_array_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    // Pretty-printed over several lines, brackets, commas and escaped quotes inside
    // strings, and over a megabyte so elements straddle the reader's buffers.
    let padding = "p".repeat(500);
    let mut text = String::from("\u{feff}\n [\n");
    for id in 0..2_500 {
        let separator = if id == 0 { "" } else { ",\n" };
        text.push_str(&format!(
            "{separator}  {{\"id\": {id},\n   \"name\": \"a,]}}[\\\"{id}\", \"pad\": \"{padding}\"}}"
        ));
    }
    text.push_str("\n]\n\n");
    let file = dir.path().join("people.json");
    std::fs::write(&file, &text).unwrap();
    let output = hotset(&server, &["import", file.to_str().unwrap(), "--ns", "people", "--create-pk", "id"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("imported 2500 documents into 'people'"), "{}", stderr(&output));
    assert_eq!(documents(&server, "people"), 2_500);
    let stored: String = redis::cmd("DOC.GET").arg("people").arg("1234").query(&mut server.client()).unwrap();
    assert_eq!(stored, format!("{{\"id\":1234,\"name\":\"a,]}}[\\\"1234\",\"pad\":\"{padding}\"}}"));

    // Each kind of broken array names its line and column.
    let cases = [
        ("[{\"id\": 1},\n {\"id\": 2, \"x\": [1,}]\n", "line 2, column 20: invalid JSON: expected value"),
        ("[{\"id\": 1},\n{\"id\": 2}\n", "line 3, column 1: the file ends before the array's closing `]`"),
        ("[{\"id\": 1},,{\"id\": 2}]", "line 1, column 12: expected a document before `,`"),
        ("[{\"id\": 1},]", "line 1, column 12: expected a document before `]`"),
        ("[{\"id\": 1} {\"id\": 2}]", "line 1, column 12: expected `,` or `]` after a document, found `{`"),
        ("[{\"id\": 1}]\n[{\"id\": 2}]\n", "line 2, column 1: unexpected `[` after the array's closing `]`"),
    ];
    for (text, expected) in cases {
        std::fs::write(&file, text).unwrap();
        let output = hotset(&server, &["import", file.to_str().unwrap(), "--ns", "people"]);
        assert_eq!(output.status.code(), Some(1), "{text}");
        assert!(stderr(&output).contains(expected), "{text:?}: {}", stderr(&output));
    }
    server.stop();
}

/// Regression: `hotset export | head -1` ended with "writing: Broken pipe" and exit 1, and
/// `hotset status` into a closed pipe panicked in println!.
#[test]
fn a_closed_standard_output_is_a_normal_end() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let lines: String = (0..20_000).map(|id| format!("{{\"id\":{id},\"name\":\"name number {id}\"}}\n")).collect();
    let file = dir.path().join("people.jsonl");
    std::fs::write(&file, lines).unwrap();
    assert!(
        hotset(&server, &["import", file.to_str().unwrap(), "--ns", "people", "--create-pk", "id"]).status.success()
    );

    // As `| head -1`: read one line, then close the pipe while the export still writes.
    let mut export = Command::new(env!("CARGO_BIN_EXE_hotset"))
        .args(["export", "--ns", "people", "--addr", &server.resp])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(export.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("{\"id\":"), "{first}");
    let mut error = String::new();
    export.stderr.take().unwrap().read_to_string(&mut error).unwrap();
    let status = export.wait().unwrap();
    assert!(status.success() && error.is_empty(), "{status}: {error}");

    // A pipe closed before anything is written.
    for args in [&["status"][..], &["sql", "SELECT * FROM people LIMIT 5"], &["export", "--ns", "people"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = Command::new(env!("CARGO_BIN_EXE_hotset"))
            .args(args)
            .args(["--addr", &server.resp])
            .stdout(writer)
            .output()
            .unwrap();
        assert!(output.status.success() && output.stderr.is_empty(), "{args:?}: {output:?}");
    }
    server.stop();
}

/// Waits for `child` to exit; kills it and fails the test if it has not within `deadline`
/// (it hung). Polls: the deadline is a bound, not a wait.
fn wait_within(child: &mut Child, deadline: Duration) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("still running after {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs the command; fails the test if it has not exited within `deadline` (it hung).
fn run_within(command: &mut Command, deadline: Duration) -> Output {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_within(&mut child, deadline);
    child.wait_with_output().unwrap()
}

/// Regression: `hotset status` against a server that accepts and never answers waited for
/// ever (no connect or read timeout). Each limit is checked by the message that names it
/// (the value the client set on its socket), never by timing the client.
#[test]
fn client_commands_time_out_on_a_server_that_never_answers() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    // Accepts every connection and keeps it open, silent.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("people.jsonl");
    std::fs::write(&file, "{\"id\": 1}\n").unwrap();
    let file = file.to_str().unwrap();
    let commands: [&[&str]; 4] =
        [&["status"], &["sql", "SELECT 1 FROM t"], &["import", file, "--ns", "t"], &["export", "--ns", "t"]];
    for args in commands {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hotset"));
        command.args(args).args(["--addr", &addr, "--timeout", "0.5"]);
        let output = run_within(&mut command, Duration::from_secs(20));
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let expected = format!("hotset: reading from {addr}: no reply within 0.5 s (--timeout, HOTSET_TIMEOUT)");
        assert!(stderr(&output).contains(&expected), "{args:?}: {}", stderr(&output));
    }
    // From the environment.
    let mut command = Command::new(env!("CARGO_BIN_EXE_hotset"));
    command.args(["status", "--addr", &addr]).env("HOTSET_TIMEOUT", "1");
    let output = run_within(&mut command, Duration::from_secs(20));
    assert!(stderr(&output).contains("no reply within 1 s"), "{}", stderr(&output));

    // 0 is no limit: a `status --timeout 0` that sent its request before a `status` with the
    // default limit (10 s) started still takes its reply after that one has given up. (Its
    // server is this test, which holds the reply until then.)
    let patient = TcpListener::bind("127.0.0.1:0").unwrap();
    let patient_addr = patient.local_addr().unwrap().to_string();
    let mut unlimited = Command::new(env!("CARGO_BIN_EXE_hotset"))
        .args(["status", "--addr", &patient_addr, "--timeout", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (sender, accepted) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(patient.accept().map(|(stream, _)| stream)));
    let mut held = accepted.recv_timeout(Duration::from_secs(60)).expect("`status --timeout 0` connects").unwrap();
    held.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut request = Vec::new();
    while !request.ends_with(b"INFO\r\n") {
        let mut buf = [0u8; 64];
        let n = held.read(&mut buf).expect("`status --timeout 0` sends INFO");
        assert!(n > 0, "`status --timeout 0` closed the connection: {request:?}");
        request.extend_from_slice(&buf[..n]);
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_hotset"));
    command.args(["status", "--addr", &addr]).env_remove("HOTSET_TIMEOUT");
    let output = run_within(&mut command, Duration::from_secs(40));
    assert!(stderr(&output).contains("no reply within 10 s"), "{}", stderr(&output));
    held.write_all(b"-ERR the reply held back until now\r\n").unwrap();
    let status = wait_within(&mut unlimited, Duration::from_secs(60));
    let mut error = String::new();
    unlimited.stderr.take().unwrap().read_to_string(&mut error).unwrap();
    assert_eq!(status.code(), Some(1), "{error}");
    assert!(error.contains("ERR the reply held back until now"), "{error}");
    // A limit must be a number of seconds.
    let output = Command::new(env!("CARGO_BIN_EXE_hotset")).args(["status", "--timeout", "soon"]).output().unwrap();
    assert!(stderr(&output).contains("'soon' is not a number of seconds"), "{}", stderr(&output));
}

/// Starts `hotset serve` on free ports, waits until it logged that it is ready, then stops
/// it (SIGTERM); returns what it wrote on standard error: to a pipe, or to a
/// pseudo-terminal.
fn serve_log(data: &Path, wrap_in_terminal: bool, no_color: Option<&str>) -> String {
    // The shell prints its pid, which `exec` hands to the server.
    let serve = format!(
        "echo pid $$; exec '{}' serve --data '{}' --resp-port 0 --http-port 0",
        env!("CARGO_BIN_EXE_hotset"),
        data.display()
    );
    let mut command = if wrap_in_terminal {
        // `script` runs the server with a pseudo-terminal as its standard streams and
        // copies what it writes to our standard output.
        let mut command = Command::new("script");
        command.args(["-q", "-e", "-c", &format!("{serve} 2>&1"), "/dev/null"]);
        command
    } else {
        let mut command = Command::new("sh");
        command.args(["-c", &format!("{serve} 2>&1 >/dev/null")]);
        command
    };
    command.env("HOTSET_LOG", "info").env_remove("NO_COLOR").stdin(Stdio::null()).stdout(Stdio::piped());
    if let Some(value) = no_color {
        command.env("NO_COLOR", value);
    }
    let mut child = command.spawn().expect("running the server under sh or script");
    // Lines as they come, on a thread, so waiting for one is bounded.
    let (sender, lines) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if sender.send(line.expect("reading the server's output")).is_err() {
                break;
            }
        }
    });
    let next = |what: &str| {
        lines.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("no {what} from the server"))
    };
    let first = next("pid");
    let pid = first.trim().strip_prefix("pid ").unwrap_or_else(|| panic!("{first:?}")).to_string();
    let mut log = String::new();
    loop {
        let line = next("ready line in its log");
        log.push_str(&line);
        log.push('\n');
        // The log's line, not the ready line on standard output.
        if line.contains("hotset::server") && line.contains(" ready") {
            break;
        }
    }
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success(), "kill -TERM {pid}");
    // The rest, up to the end of the output (the server has exited).
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(60)) {
        log.push_str(&line);
        log.push('\n');
    }
    let status = wait_within(&mut child, Duration::from_secs(60));
    assert!(status.success(), "the server under sh or script: {status}\n{log}");
    log
}

/// Regression: the log kept its colour codes when standard error was a file or a pipe.
#[test]
fn logs_are_coloured_only_on_a_terminal_without_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let escape = '\u{1b}';
    let piped = serve_log(&dir.path().join("a"), false, None);
    assert!(piped.contains("INFO hotset::server: ready"), "{piped}");
    assert!(!piped.contains(escape), "colour codes in a piped log: {piped:?}");
    let terminal = serve_log(&dir.path().join("b"), true, None);
    assert!(terminal.contains("ready") && terminal.contains(escape), "no colour on a terminal: {terminal:?}");
    let no_color = serve_log(&dir.path().join("c"), true, Some("1"));
    assert!(no_color.contains("ready") && !no_color.contains(escape), "colour despite NO_COLOR: {no_color:?}");
    let empty = serve_log(&dir.path().join("d"), true, Some(""));
    assert!(empty.contains(escape), "an empty NO_COLOR does not count: {empty:?}");
}
