//! A full disk under the real server: writes are refused (`-MISCONF` over RESP, `503` over
//! HTTP) while reads go on; once there is room again the log takes writes again, and a
//! restart finds every write that was acknowledged. The data folder is a small tmpfs the
//! test mounts (it runs as root, as CI does); where mounting is not allowed the test says
//! so and checks nothing.

mod common;

use common::Server;
use std::process::Command;

struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(path: &std::path::Path, size: &str) -> Option<Tmpfs> {
        let status =
            Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(path).status();
        status.ok().filter(|s| s.success()).map(|_| Tmpfs(path.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount").args(["-o", &format!("remount,size={size}")]).arg(&self.0).status().unwrap();
        assert!(status.success(), "remounting the tmpfs");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_refuses_writes_by_name_and_keeps_reads() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tmpfs) = Tmpfs::mount(dir.path(), "3m") else {
        eprintln!("disk_full: mounting a tmpfs is not allowed here; nothing checked");
        return;
    };
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]);
    let mut redis = server.client();
    let () = redis::cmd("SET").arg("kept").arg("before").query(&mut redis).unwrap();
    // Fill the log until a write is refused; every acknowledged one is remembered.
    let value = "v".repeat(64 << 10);
    let mut acknowledged = Vec::new();
    let refusal = loop {
        let key = format!("k{}", acknowledged.len());
        match redis::cmd("SET").arg(&key).arg(&value).query::<()>(&mut redis) {
            Ok(()) => acknowledged.push(key),
            Err(error) => break error.to_string(),
        }
        assert!(acknowledged.len() < 200, "3 MB cannot hold 200 writes of 64 KB");
    };
    assert!(refusal.contains("MISCONF"), "{refusal}");
    // More writes are refused up front, over both protocols, by name.
    let again = redis::cmd("SET").arg("more").arg("x").query::<()>(&mut redis).unwrap_err().to_string();
    assert!(again.contains("MISCONF"), "{again}");
    let (status, body) = common::curl(&server, "POST", "/api/v1/sql", Some(b"CREATE TABLE t (id INT PRIMARY KEY)"));
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("not durable"), "{body}");
    // Reads go on.
    let kept: String = redis::cmd("GET").arg("kept").query(&mut redis).unwrap();
    assert_eq!(kept, "before");
    let (status, _) = common::curl(&server, "GET", "/api/v1/namespaces", None);
    assert_eq!(status, 200);

    // Room again: the log retries (once a second) and takes writes again. Polled: each try
    // is refused up front until the log is writable; the deadline only bounds a log that
    // never recovers.
    tmpfs.resize("64m");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while let Err(error) = redis::cmd("SET").arg("after").arg("room").query::<()>(&mut redis) {
        assert!(error.to_string().contains("MISCONF"), "{error}");
        assert!(std::time::Instant::now() < deadline, "the log never became writable again: {error}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    server.kill();
    let server = Server::start(&data, &[]);
    let mut redis = server.client();
    for key in acknowledged.iter().chain([&"kept".to_string(), &"after".to_string()]) {
        let found: Option<String> = redis::cmd("GET").arg(key).query(&mut redis).unwrap();
        assert!(found.is_some(), "acknowledged {key} is gone after the restart");
    }
    server.stop();
}
