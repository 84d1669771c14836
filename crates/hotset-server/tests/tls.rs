//! TLS against the real binary: a throwaway CA and certificates made at test time (rcgen),
//! `redis-cli --tls` and `curl --cacert` as clients, plain ports beside the TLS ones,
//! clients that fail or never start the handshake, client certificates, and start-up
//! errors for bad certificate files.

mod common;

use common::Server;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// PEM files of a test CA, a server certificate for 127.0.0.1 and a client certificate
/// it signed, and a second CA that signed nothing the server has.
struct Pki {
    ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
    stranger_ca: PathBuf,
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn certificate_authority(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// A certificate `ca` signed for `names` with `usage`; its PEM and its key's (PKCS#8).
fn leaf(ca: &CertifiedIssuer<'static, KeyPair>, names: &[&str], usage: ExtendedKeyUsagePurpose) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(DnType::CommonName, names[0]);
    params.extended_key_usages = vec![usage];
    (params.signed_by(&key, ca).unwrap().pem(), key.serialize_pem())
}

fn make_pki(dir: &Path) -> Pki {
    std::fs::create_dir_all(dir).unwrap();
    let ca = certificate_authority("hotset test CA");
    let (server_cert, server_key) = leaf(&ca, &["127.0.0.1", "localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    let (client_cert, client_key) = leaf(&ca, &["hotset test client"], ExtendedKeyUsagePurpose::ClientAuth);
    Pki {
        ca: write(dir, "ca.pem", &ca.pem()),
        server_cert: write(dir, "server.pem", &server_cert),
        server_key: write(dir, "server.key", &server_key),
        client_cert: write(dir, "client.pem", &client_cert),
        client_key: write(dir, "client.key", &client_key),
        stranger_ca: write(dir, "stranger-ca.pem", &certificate_authority("someone else's CA").pem()),
    }
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Starts a server with both TLS ports (kernel-picked) beside the plain ones.
fn start_tls(dir: &Path, pki: &Pki, extra: &[&str]) -> Server {
    start_tls_with_plain(dir, pki, &["--resp-port", "0", "--http-port", "0"], extra)
}

/// Starts a server with both TLS ports and `plain` (flags for the plain ports).
fn start_tls_with_plain(dir: &Path, pki: &Pki, plain: &[&str], extra: &[&str]) -> Server {
    let mut args = vec!["--tls-port", "0", "--http-tls-port", "0"];
    args.extend(["--tls-cert-file", text(&pki.server_cert), "--tls-key-file", text(&pki.server_key)]);
    args.extend(extra);
    let server = Server::start_with_ports(&dir.join("data"), plain, &args);
    assert!(server.tls.is_some() && server.https.is_some(), "the ready line names both TLS listeners");
    server
}

fn port(addr: &str) -> &str {
    addr.rsplit(':').next().unwrap()
}

/// Runs `redis-cli --tls` against the server's TLS port with `tls_args` (the CA, a client
/// certificate...) and `command`.
fn redis_cli_tls(server: &Server, tls_args: &[&str], command: &[&str]) -> Output {
    Command::new("redis-cli")
        .args(["--tls", "-h", "127.0.0.1", "-p", port(server.tls.as_deref().unwrap())])
        .args(tls_args)
        .args(command)
        .stdin(Stdio::null())
        .output()
        .expect("running redis-cli (Debian's redis-tools)")
}

/// The trimmed stdout of a redis-cli call that must succeed.
fn redis_cli_ok(server: &Server, tls_args: &[&str], command: &[&str]) -> String {
    let output = redis_cli_tls(server, tls_args, command);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "redis-cli {command:?}: {stdout} {}", String::from_utf8_lossy(&output.stderr));
    stdout.trim().to_string()
}

/// curl over HTTPS with `tls_args`; the status and body, or curl's exit code when the
/// connection failed (60: the certificate was not trusted; 35, 56: the handshake failed).
fn curl_tls(
    server: &Server,
    tls_args: &[&str],
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Result<(u16, String), i32> {
    let url = format!("https://{}{path}", server.https.as_deref().unwrap());
    let output = Command::new("curl")
        .args(["-s", "-S", "-X", method, "-w", "\n%{http_code}", "-H", "content-type: application/json"])
        .args(tls_args)
        .args(body.map_or(vec![], |body| vec!["--data-binary", body]))
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .expect("running curl");
    if !output.status.success() {
        return Err(output.status.code().unwrap_or(-1));
    }
    let text = String::from_utf8(output.stdout).unwrap();
    let (body, status) = text.rsplit_once('\n').unwrap();
    Ok((status.parse().unwrap(), body.to_string()))
}

#[test]
fn redis_cli_and_curl_over_tls_beside_the_plain_ports() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"));
    let mut server = start_tls(dir.path(), &pki, &[]);
    let ca = ["--cacert", text(&pki.ca)];

    assert_eq!(redis_cli_ok(&server, &ca, &["PING"]), "PONG");
    assert_eq!(redis_cli_ok(&server, &ca, &["SET", "greeting", "over tls"]), "OK");
    assert_eq!(redis_cli_ok(&server, &ca, &["GET", "greeting"]), "over tls");
    // The plain port serves the same data beside it.
    assert_eq!(common::redis_cli(&server, &["GET", "greeting"]).trim(), "over tls");
    assert_eq!(common::redis_cli(&server, &["SET", "plain", "yes"]).trim(), "OK");
    assert_eq!(redis_cli_ok(&server, &ca, &["GET", "plain"]), "yes");

    let ca = ["--cacert", text(&pki.ca)];
    assert_eq!(curl_tls(&server, &ca, "GET", "/health", None).map(|(status, _)| status), Ok(200));
    let namespace = r#"{"name": "books", "indexes": [{"field": "id", "type": "int", "index": "hash", "pk": true}]}"#;
    assert_eq!(curl_tls(&server, &ca, "POST", "/api/v1/namespaces", Some(namespace)).unwrap().0, 201);
    let items = "{\"id\": 1, \"title\": \"Dune\"}\n{\"id\": 2, \"title\": \"Emma\"}";
    assert_eq!(curl_tls(&server, &ca, "POST", "/api/v1/namespaces/books/items", Some(items)).unwrap().0, 200);
    let (status, body) =
        curl_tls(&server, &ca, "POST", "/api/v1/sql", Some("SELECT title FROM books WHERE id = 2")).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Emma") && !body.contains("Dune"), "{body}");
    // Plain HTTP beside HTTPS.
    let (status, body) = common::curl(&server, "GET", "/api/v1/namespaces/books/items/1", None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Dune"), "{body}");

    // Clients that do not trust the server's CA fail the handshake; the server goes on.
    assert_eq!(curl_tls(&server, &[], "GET", "/health", None), Err(60), "curl trusts only the system's CAs");
    assert!(curl_tls(&server, &["--cacert", text(&pki.stranger_ca)], "GET", "/health", None).is_err());
    let untrusting = redis_cli_tls(&server, &["--cacert", text(&pki.stranger_ca)], &["PING"]);
    let said = String::from_utf8_lossy(&untrusting.stdout) + String::from_utf8_lossy(&untrusting.stderr);
    assert!(!said.contains("PONG"), "a client that does not trust the CA got an answer: {said}");
    // A client speaking plain RESP to the TLS port gets no answer, only a closed connection.
    let mut plain = TcpStream::connect(server.tls.as_deref().unwrap()).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let got = common::exchange(&mut plain, b"*1\r\n$4\r\nPING\r\n", b"+PONG");
    assert!(!got.windows(5).any(|w| w == b"+PONG"), "{got:?}");
    // The same goes for plain HTTP to the HTTPS port.
    let http_to_https = Command::new("curl")
        .args(["-s", &format!("http://{}/health", server.https.as_deref().unwrap())])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&http_to_https.stdout).contains("ok"));

    assert!(server.alive());
    assert_eq!(redis_cli_ok(&server, &ca, &["GET", "greeting"]), "over tls");
    assert_eq!(curl_tls(&server, &ca, "GET", "/health", None).map(|(status, _)| status), Ok(200));
    assert_eq!(common::redis_cli(&server, &["PING"]).trim(), "PONG");
    server.stop();
}

/// A client that connects and never starts the handshake is closed, on both TLS ports; the
/// server keeps serving others. (That it is closed when `tls.handshake_timeout_ms` has
/// passed, not before and not at the default, the unit test in src/tls.rs measures on a
/// paused clock; here the wait is only bounded.)
#[test]
fn a_client_that_never_handshakes_is_closed_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"));
    let config = write(dir.path(), "hotset.toml", "[tls]\nhandshake_timeout_ms = 200\n");
    let server = start_tls(dir.path(), &pki, &["--config", text(&config)]);
    let ca = ["--cacert", text(&pki.ca)];
    for addr in [server.tls.as_deref().unwrap(), server.https.as_deref().unwrap()] {
        let mut silent = TcpStream::connect(addr).unwrap();
        // A bound on a server that never closes it, not a measure of the timeout.
        silent.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        assert_eq!(redis_cli_ok(&server, &ca, &["PING"]), "PONG", "others are served while one stays silent");
        let mut buf = [0u8; 64];
        match silent.read(&mut buf) {
            Ok(0) => {}
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {}
            other => panic!("the server did not close a connection that never handshook: {other:?}"),
        }
        // Writing after the close fails or is ignored; either way the server is fine.
        let _ = silent.write_all(b"late");
    }
    assert_eq!(redis_cli_ok(&server, &ca, &["PING"]), "PONG");
    server.stop();
}

/// With `tls.ca_file` set, clients must present a certificate that CA signed.
#[test]
fn client_certificates_are_required_when_a_ca_file_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"));
    let server = start_tls(dir.path(), &pki, &["--tls-ca-file", text(&pki.ca)]);
    let ca = ["--cacert", text(&pki.ca)];
    let identified = ["--cacert", text(&pki.ca), "--cert", text(&pki.client_cert), "--key", text(&pki.client_key)];

    let anonymous = redis_cli_tls(&server, &ca, &["PING"]);
    let said = String::from_utf8_lossy(&anonymous.stdout) + String::from_utf8_lossy(&anonymous.stderr);
    assert!(!said.contains("PONG"), "a client without a certificate got an answer: {said}");
    assert_eq!(redis_cli_ok(&server, &identified, &["PING"]), "PONG");
    assert!(curl_tls(&server, &ca, "GET", "/health", None).is_err(), "curl without a client certificate");
    assert_eq!(curl_tls(&server, &identified, "GET", "/health", None).map(|(status, _)| status), Ok(200));
    server.stop();
}

/// A TLS-only deployment: both plain ports off, the ready line shows `-` for them.
#[test]
fn plain_ports_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"));
    let server = start_tls_with_plain(dir.path(), &pki, &["--resp-port", "off", "--http-port", "off"], &[]);
    assert_eq!((server.resp.as_str(), server.http.as_str()), ("-", "-"));
    let ca = ["--cacert", text(&pki.ca)];
    assert_eq!(redis_cli_ok(&server, &ca, &["SET", "k", "v"]), "OK");
    assert_eq!(redis_cli_ok(&server, &ca, &["GET", "k"]), "v");
    assert_eq!(curl_tls(&server, &ca, "GET", "/health", None).map(|(status, _)| status), Ok(200));
    server.stop();
}

/// Runs `hotset serve` where it must fail at start-up; returns its stderr.
fn serve_fails(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_hotset"))
        .args(["serve", "--data"])
        .arg(dir.join("data"))
        .args(["--resp-port", "0", "--http-port", "0", "--threads", "1"])
        .args(args)
        .env("HOTSET_LOG", "info")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "hotset serve {args:?} should exit 1: {stderr}");
    assert!(output.stdout.is_empty(), "no ready line: {}", String::from_utf8_lossy(&output.stdout));
    assert!(!stderr.contains("recovered"), "start-up failed before recovery: {stderr}");
    stderr
}

#[test]
fn bad_certificate_files_stop_start_up_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"));
    let missing = dir.path().join("no-such-cert.pem");
    let tls = |cert: &Path, key: &Path| {
        serve_fails(dir.path(), &["--tls-port", "0", "--tls-cert-file", text(cert), "--tls-key-file", text(key)])
    };

    let stderr = tls(&missing, &pki.server_key);
    assert!(stderr.contains(&format!("reading tls.cert_file {}", missing.display())), "{stderr}");
    let stderr = tls(&pki.server_cert, &missing);
    assert!(stderr.contains(&format!("reading tls.key_file {}", missing.display())), "{stderr}");
    // A key file with no key in it (a certificate), and a certificate file with none.
    let stderr = tls(&pki.server_cert, &pki.server_cert);
    assert!(
        stderr.contains(&format!("tls.key_file {}: no PKCS#8, RSA or SEC1", pki.server_cert.display())),
        "{stderr}"
    );
    let stderr = tls(&pki.server_key, &pki.server_key);
    assert!(stderr.contains(&format!("tls.cert_file {}: no PEM certificate", pki.server_key.display())), "{stderr}");
    // The client's key does not belong to the server's certificate.
    let stderr = tls(&pki.server_cert, &pki.client_key);
    let mismatch = format!(
        "tls.key_file {} is not the private key of tls.cert_file {}",
        pki.client_key.display(),
        pki.server_cert.display()
    );
    assert!(stderr.contains(&mismatch), "{stderr}");
    let stderr = serve_fails(dir.path(), &["--http-tls-port", "0"]);
    assert!(stderr.contains("need tls.cert_file and tls.key_file"), "{stderr}");
    let garbage = write(dir.path(), "garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n");
    let stderr = tls(&garbage, &pki.server_key);
    assert!(stderr.contains(&format!("tls.cert_file {}", garbage.display())), "{stderr}");
}
