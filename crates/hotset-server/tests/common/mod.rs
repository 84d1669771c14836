//! Starting the real `hotset` binary for black-box tests: on ports the kernel picks, in a
//! temporary data folder, ready once it prints its ready line (no sleeps), stopped with
//! SIGTERM (a clean shutdown) or SIGKILL (a crash).

#![allow(dead_code)]

/// Live-sync helpers (sync_pg.rs, sync_mariadb.rs).
pub mod sync;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Server {
    child: Child,
    pub resp: String,
    pub http: String,
    pub dir: PathBuf,
    /// The TLS listeners' addresses, when the server was started with TLS ports.
    pub tls: Option<String>,
    pub https: Option<String>,
}

impl Server {
    /// Starts a server on `dir` with extra `serve` flags; returns once it is ready.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        Server::start_with_ports(dir, &["--resp-port", "0", "--http-port", "0"], extra)
    }

    /// Like `start`, with `ports` (flags choosing the listeners) instead of kernel-picked
    /// plain ports: clap refuses a flag given twice, so a test that turns a plain port off
    /// cannot pass it in `extra`.
    pub fn start_with_ports(dir: &Path, ports: &[&str], extra: &[&str]) -> Server {
        Server::start_with_env(dir, ports, extra, &[])
    }

    /// `start_with_ports` with environment variables for the server.
    pub fn start_with_env(dir: &Path, ports: &[&str], extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hotset"))
            .args(["serve", "--data"])
            .arg(dir)
            .args(ports)
            // Two I/O threads unless the test chooses (clap refuses a flag given twice).
            .args(if extra.contains(&"--threads") { &[][..] } else { &["--threads", "2"][..] })
            .args(extra)
            .env("HOTSET_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting hotset");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
        let ready = lines.next().expect("hotset printed a line before exiting").expect("reading hotset's stdout");
        // "hotset ready: resp 127.0.0.1:N http 127.0.0.1:M data DIR"
        let words: Vec<&str> = ready.split_whitespace().collect();
        assert_eq!(&words[..3], ["hotset", "ready:", "resp"], "{ready}");
        let (resp, http) = (words[3].to_string(), words[5].to_string());
        // "... data DIR tls 127.0.0.1:N https 127.0.0.1:M" when TLS ports are set ("-": off).
        let (mut tls, mut https) = (None, None);
        if words.len() >= 11 && words[words.len() - 4] == "tls" && words[words.len() - 2] == "https" {
            let listener = |addr: &str| (addr != "-").then(|| addr.to_string());
            (tls, https) = (listener(words[words.len() - 3]), listener(words[words.len() - 1]));
        }
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server { child, resp, http, dir: dir.to_path_buf(), tls, https }
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://{}/", self.resp)).unwrap().get_connection().unwrap()
    }

    /// The port of the RESP listener, for redis-cli and redis-benchmark.
    pub fn resp_port(&self) -> &str {
        self.resp.rsplit(':').next().unwrap()
    }

    /// A raw TCP connection to the RESP port.
    pub fn raw(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.resp).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream
    }

    /// Stops the server the way an operator does (SIGTERM) and waits for it to exit.
    pub fn stop(mut self) {
        let status = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status().unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        assert!(exit.success(), "hotset exited with {exit} after SIGTERM");
    }

    /// Kills the server (SIGKILL), as a crash would.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends raw bytes and reads until the server closes (or resets) the connection or `until`
/// is seen.
pub fn exchange(stream: &mut TcpStream, request: &[u8], until: &[u8]) -> Vec<u8> {
    if let Err(error) = stream.write_all(request) {
        // The server closed the connection already; what follows reads the close.
        let closed = matches!(error.kind(), std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset);
        assert!(closed, "sending a request: {error}");
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(until.len()).any(|w| w == until) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            // Writing to a connection the server already closed makes its kernel answer
            // with a reset: the connection is closed either way.
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(error) => panic!("reading a reply: {error}; got so far {:?}", String::from_utf8_lossy(&got)),
        }
    }
    got
}

/// Sends one HTTP request with curl; returns the status and the body as text.
pub fn curl(server: &Server, method: &str, path: &str, body: Option<&[u8]>) -> (u16, String) {
    curl_as(server, None, method, path, body)
}

/// `curl` with the server's password as a bearer token, when given.
pub fn curl_as(
    server: &Server,
    password: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
) -> (u16, String) {
    let authorization = password.map(|password| format!("Authorization: Bearer {password}"));
    let mut curl = Command::new("curl")
        .args(["-s", "-S", "-X", method, "-w", "\n%{http_code}", "-H", "content-type: application/json"])
        .args(authorization.iter().flat_map(|header| ["-H", header.as_str()]))
        .args(if body.is_some() { vec!["--data-binary", "@-"] } else { vec![] })
        .arg(format!("http://{}{path}", server.http))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running curl");
    if let Some(body) = body {
        curl.stdin.take().unwrap().write_all(body).unwrap();
    }
    let output = curl.wait_with_output().unwrap();
    assert!(output.status.success(), "curl {method} {path} failed");
    let text = String::from_utf8(output.stdout).unwrap();
    let (body, status) = text.rsplit_once('\n').unwrap();
    (status.parse().unwrap(), body.to_string())
}

/// Runs redis-cli against the server with `args`; returns its stdout.
pub fn redis_cli(server: &Server, args: &[&str]) -> String {
    let output =
        Command::new("redis-cli").args(["-p", server.resp_port()]).args(args).output().expect("running redis-cli");
    assert!(output.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// An HTTP answer with its headers (names in lower case).
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    /// The value of header `name` (any letter case), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// `curl` with the answer's headers too.
pub fn curl_full(server: &Server, method: &str, path: &str, body: Option<&[u8]>) -> Response {
    let address = server.http.clone();
    request_at(&address, method, path, body)
        .unwrap_or_else(|error| panic!("curl {method} {path} on {address} failed: {error}"))
}

/// One HTTP request with curl to `address` (host:port), headers included; the curl error
/// when there is no answer (a server that is down, for a test that restarts it).
pub fn request_at(address: &str, method: &str, path: &str, body: Option<&[u8]>) -> Result<Response, String> {
    let mut curl = Command::new("curl")
        .args(["-s", "-S", "-D", "-", "-X", method, "-w", "\n%{http_code}", "-H", "content-type: application/json"])
        // No `Expect: 100-continue` round trip (and no interim answer to skip) for large bodies.
        .args(["-H", "Expect:"])
        .args(if body.is_some() { vec!["--data-binary", "@-"] } else { vec![] })
        .arg(format!("http://{address}{path}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running curl");
    if let Some(body) = body {
        curl.stdin.take().unwrap().write_all(body).unwrap();
    }
    drop(curl.stdin.take());
    let output = curl.wait_with_output().unwrap();
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let text = String::from_utf8(output.stdout).unwrap();
    let (rest, status) = text.rsplit_once('\n').unwrap();
    let (head, body) = rest.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no header block in {rest:?}"));
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    Ok(Response { status: status.parse().unwrap(), headers, body: body.to_string() })
}
