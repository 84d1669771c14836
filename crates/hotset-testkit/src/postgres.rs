//! A throwaway PostgreSQL server for live-sync tests: its own cluster in a temporary
//! folder, on a free port, with logical replication on, stopped and removed when dropped.
//!
//! Owns: initdb, starting and stopping the server (pg_ctl waits for it), running SQL as
//! the superuser or as the test's role through psql. Never: touch a system cluster, or run
//! the server as root (PostgreSQL refuses; as root, every command runs as `postgres`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The role tests connect as: it owns the database and its tables and may replicate.
pub const USER: &str = "hotset";
/// Its password (connections over TCP use SCRAM; over the socket, trust).
pub const PASSWORD: &str = "hotset-pw";
/// The database made for the test.
pub const DATABASE: &str = "appdb";

/// A running throwaway cluster.
pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    running: bool,
}

fn bin_dir() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| {
            dirs.filter_map(|d| d.ok()).map(|d| d.path().join("bin")).filter(|b| b.join("initdb").exists()).collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions
        .pop()
        .expect("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install postgresql")
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|out| out.stdout.trim_ascii() == b"0").unwrap_or(false)
}

/// A free TCP port on 127.0.0.1 (free when asked; the server binds it right after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

impl Postgres {
    /// Creates and starts a cluster with `wal_level=logical`, the role [`USER`] (LOGIN
    /// REPLICATION, password [`PASSWORD`]) and the database [`DATABASE`] it owns.
    pub fn start() -> Postgres {
        Postgres::start_with(&[])
    }

    /// [`Postgres::start`] with more server settings (`("wal_level", "replica")`).
    pub fn start_with(settings: &[(&str, &str)]) -> Postgres {
        let bin = bin_dir();
        let dir = tempfile::tempdir().expect("a temporary folder");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("the data folder");
        let pg = Postgres { dir, bin, port: free_port(), running: false };
        pg.own(pg.dir.path());
        pg.own(&data);
        let out = pg.as_owner(
            &pg.bin.join("initdb"),
            &[
                "-D",
                data.to_str().expect("a UTF-8 path"),
                "-U",
                "postgres",
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                "--no-sync",
            ],
        );
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        let mut conf = String::from(
            "wal_level = logical\nmax_replication_slots = 16\nmax_wal_senders = 16\nfsync = off\n\
             synchronous_commit = on\nfull_page_writes = off\nlisten_addresses = '127.0.0.1'\n\
             wal_sender_timeout = 60s\nlog_min_messages = warning\n",
        );
        for (name, value) in settings {
            conf.push_str(&format!("{name} = '{value}'\n"));
        }
        let path = data.join("postgresql.auto.conf");
        std::fs::write(&path, conf).expect("the settings");
        pg.own(&path);
        let mut pg = pg;
        pg.resume();
        pg.sql(&format!("CREATE ROLE {USER} LOGIN REPLICATION PASSWORD '{PASSWORD}'"));
        pg.sql(&format!("CREATE DATABASE {DATABASE} OWNER {USER}"));
        pg
    }

    fn own(&self, path: &Path) {
        if is_root() {
            let out = Command::new("chown").arg("postgres:postgres").arg(path).output().expect("chown");
            assert!(out.status.success(), "chown {}", path.display());
        }
    }

    /// Runs a PostgreSQL program as the cluster's owner.
    fn as_owner(&self, program: &Path, args: &[&str]) -> Output {
        let mut command = if is_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        command.args(args).current_dir(self.dir.path()).output().expect("a PostgreSQL program runs")
    }

    fn pg_ctl(&self, args: &[&str]) -> Output {
        let data = self.dir.path().join("data");
        let log = self.dir.path().join("server.log");
        let mut all = vec!["-D", data.to_str().expect("UTF-8"), "-l", log.to_str().expect("UTF-8")];
        all.extend_from_slice(args);
        self.as_owner(&self.bin.join("pg_ctl"), &all)
    }

    /// Starts the server again on the same data and port (after `stop`); returns once it
    /// accepts connections.
    pub fn resume(&mut self) {
        let options = format!("-p {} -k {}", self.port, self.dir.path().display());
        let out = self.pg_ctl(&["-w", "-t", "60", "-o", &options, "start"]);
        let log = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        assert!(out.status.success(), "PostgreSQL did not start: {}\n{log}", String::from_utf8_lossy(&out.stderr));
        self.running = true;
    }

    /// Stops the server at once (`immediate`: like a crash of the source).
    pub fn stop(&mut self) {
        let out = self.pg_ctl(&["-w", "-m", "immediate", "stop"]);
        assert!(out.status.success(), "pg_ctl stop: {}", String::from_utf8_lossy(&out.stderr));
        self.running = false;
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A `postgres://` URL for the test role on the test database, over TCP.
    pub fn url(&self) -> String {
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{DATABASE}", self.port)
    }

    fn psql(&self, user: &str, database: &str, sql: &str) -> std::result::Result<String, String> {
        let port = self.port.to_string();
        let host = self.dir.path().display().to_string();
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                &host,
                "-p",
                &port,
                "-U",
                user,
                "-d",
                database,
            ])
            .args(["-c", sql])
            .output()
            .expect("psql runs");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Runs SQL as the superuser on the `postgres` database; panics on an error. Returns
    /// the rows as psql's unaligned output (`|` between columns, a line per row).
    pub fn sql(&self, sql: &str) -> String {
        self.psql("postgres", "postgres", sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Runs SQL as [`USER`] on [`DATABASE`]; panics on an error.
    pub fn app(&self, sql: &str) -> String {
        self.try_app(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Runs SQL as [`USER`] on [`DATABASE`]; the error text when it fails.
    pub fn try_app(&self, sql: &str) -> std::result::Result<String, String> {
        self.psql(USER, DATABASE, sql)
    }

    /// Runs SQL as the superuser on [`DATABASE`]; panics on an error.
    pub fn admin(&self, sql: &str) -> String {
        self.psql("postgres", DATABASE, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.running {
            let _ = self.pg_ctl(&["-w", "-m", "immediate", "stop"]);
        }
    }
}
