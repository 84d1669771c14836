//! Start-up order against the real binary: every listener is bound before the data
//! folder is recovered, so a port in use is reported at once, not after replaying the log.

mod common;

use common::Server;
use std::process::{Command, Stdio};

#[test]
fn a_port_in_use_stops_start_up_before_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A data folder with a log to replay.
    let server = Server::start(&data, &[]);
    assert_eq!(common::redis_cli(&server, &["SET", "kept", "yes"]).trim(), "OK");
    server.stop();

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    for (ports, setting) in [
        (["--resp-port", &port, "--http-port", "0"], "resp_port"),
        (["--resp-port", "0", "--http-port", &port], "http_port"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_hotset"))
            .args(["serve", "--data"])
            .arg(&data)
            .args(ports)
            .env("HOTSET_LOG", "info")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(output.stdout.is_empty(), "no ready line: {}", String::from_utf8_lossy(&output.stdout));
        let named = format!("binding 127.0.0.1:{port} ({setting}): ");
        assert!(stderr.contains(&named) && stderr.to_lowercase().contains("in use"), "{stderr}");
        // The folder was neither opened nor replayed: those lines come after binding.
        assert!(!stderr.contains("opening the data folder") && !stderr.contains("recovered"), "{stderr}");
    }
    drop(taken);

    let server = Server::start(&data, &[]);
    assert_eq!(common::redis_cli(&server, &["GET", "kept"]).trim(), "yes");
    server.stop();
}
