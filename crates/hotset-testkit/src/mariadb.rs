//! A throwaway MariaDB server for live-sync tests: `mariadb-install-db` and `mariadbd` in a
//! temporary folder on a free port, with the row binlog a sync needs, a user with a
//! password (grants are checked), and SQL run through the `mariadb` client on the server's
//! socket.
//!
//! Owns: the server process (started, stopped with SIGTERM, restarted on the same data and
//! port, killed on drop) and its folder. Never: sleep to synchronise (it polls a condition
//! under a deadline), or skip a test when MariaDB is missing (it panics saying what to
//! install).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to accept connections after it was started.
const READY_WAIT_MAX: Duration = Duration::from_secs(60);
/// How long a server may take to exit after SIGTERM.
const STOP_WAIT_MAX: Duration = Duration::from_secs(60);
/// The pause between two looks at a condition that is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// The user a sync connects as (created with the privileges a sync needs).
pub const USER: &str = "hotset";
/// Its password.
pub const PASSWORD: &str = "hotset-pw";
/// The database created for the tests.
pub const DATABASE: &str = "app";

/// A running throwaway MariaDB server. Dropping it kills the server.
pub struct MariaDb {
    folder: tempfile::TempDir,
    port: u16,
    server_args: Vec<String>,
    child: Option<Child>,
}

impl MariaDb {
    /// Starts a server with the binlog a sync needs (ROW format, FULL row image, FULL row
    /// metadata, server id 1), the user `USER` and the database `DATABASE`.
    pub fn start() -> MariaDb {
        MariaDb::start_with(&[])
    }

    /// Like `start`, with more server options (a later option wins: `--binlog-format=STATEMENT`).
    pub fn start_with(extra_args: &[&str]) -> MariaDb {
        let binary = find_binary("mariadbd", &["/usr/sbin/mariadbd", "/usr/bin/mariadbd"]);
        let install = find_binary("mariadb-install-db", &["/usr/bin/mariadb-install-db"]);
        let folder = tempfile::Builder::new().prefix("hotset-mariadb-").tempdir().expect("a temporary folder");
        let data = folder.path().join("data");
        // Each server's own temporary folder: servers started at once (parallel tests)
        // otherwise meet on /tmp's `#sql-temptable-*` names during install.
        let tmp = folder.path().join("tmp");
        std::fs::create_dir(&tmp).expect("a temporary folder for the server");
        let output = Command::new(&install)
            .env("TMPDIR", &tmp)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg("--user=root")
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg("--auth-root-authentication-method=normal")
            .output()
            .expect("mariadb-install-db runs");
        assert!(
            output.status.success(),
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let mut server_args: Vec<String> = vec![
            format!("--datadir={}", data.display()),
            "--user=root".into(),
            format!("--tmpdir={}", tmp.display()),
            "--bind-address=127.0.0.1".into(),
            "--skip-name-resolve".into(),
            format!("--log-bin={}", data.join("binlog").display()),
            "--server-id=1".into(),
            "--binlog-format=ROW".into(),
            "--binlog-row-image=FULL".into(),
            "--binlog-row-metadata=FULL".into(),
            "--innodb-buffer-pool-size=32M".into(),
            "--innodb-log-file-size=16M".into(),
            "--innodb-flush-log-at-trx-commit=2".into(),
            "--sync-binlog=0".into(),
            "--lock-wait-timeout=20".into(),
        ];
        server_args.extend(extra_args.iter().map(|a| a.to_string()));
        let mut server = MariaDb { folder, port: free_port(), server_args, child: None };
        server.launch(&binary);
        server.root_sql(&format!(
            "DELETE FROM mysql.global_priv WHERE User = ''; FLUSH PRIVILEGES; \
             CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'; \
             GRANT SELECT, REPLICATION SLAVE ON *.* TO '{USER}'@'%'; \
             CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4;"
        ));
        server
    }

    /// `mysql://hotset:hotset-pw@127.0.0.1:<port>/app`.
    pub fn url(&self) -> String {
        self.url_as(USER, PASSWORD)
    }

    /// The URL for another user and password.
    pub fn url_as(&self, user: &str, password: &str) -> String {
        format!("mysql://{user}:{password}@127.0.0.1:{}/{DATABASE}", self.port)
    }

    /// The TCP port the server listens on (kept across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The folder holding the data, the socket and the error log.
    pub fn folder(&self) -> &Path {
        self.folder.path()
    }

    /// Runs SQL as root in `DATABASE` (several statements allowed) and returns the
    /// client's tab-separated output without column names. Panics on an error.
    pub fn sql(&self, sql: &str) -> String {
        self.try_sql(sql).unwrap_or_else(|error| panic!("SQL failed: {sql}\n{error}"))
    }

    /// Runs SQL as root in `DATABASE`; the client's error text on failure.
    pub fn try_sql(&self, sql: &str) -> Result<String, String> {
        self.client(Some(DATABASE), sql)
    }

    /// One value: the first column of the first row of `sql` (panics when there is none).
    pub fn value(&self, sql: &str) -> String {
        let output = self.sql(sql);
        output.lines().next().and_then(|line| line.split('\t').next()).unwrap_or_else(|| panic!("no row: {sql}")).into()
    }

    /// Stops the server with SIGTERM and waits for it to exit.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let status = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().expect("kill runs");
        assert!(status.success(), "kill -TERM {} failed", child.id());
        let deadline = Instant::now() + STOP_WAIT_MAX;
        loop {
            if child.try_wait().expect("wait on mariadbd").is_some() {
                return;
            }
            assert!(Instant::now() < deadline, "mariadbd did not exit within {STOP_WAIT_MAX:?} of SIGTERM");
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Starts the server again on the same data and port (after `stop`).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "restart needs a stopped server");
        let binary = find_binary("mariadbd", &["/usr/sbin/mariadbd", "/usr/bin/mariadbd"]);
        self.launch(&binary);
    }

    /// Whether the server process is running (started and not stopped).
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    fn socket(&self) -> PathBuf {
        self.folder.path().join("mariadb.sock")
    }

    fn error_log(&self) -> PathBuf {
        self.folder.path().join("error.log")
    }

    fn launch(&mut self, binary: &Path) {
        let child = Command::new(binary)
            .arg("--no-defaults")
            .args(&self.server_args)
            .arg(format!("--port={}", self.port))
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--pid-file={}", self.folder.path().join("mariadb.pid").display()))
            .arg(format!("--log-error={}", self.error_log().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mariadbd starts");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Polls until root can run a statement over the socket and the TCP port accepts,
    /// failing with the error log when the server exits or the deadline passes.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_WAIT_MAX;
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().expect("wait on mariadbd")) {
                self.child = None;
                panic!("mariadbd exited ({status}) while starting:\n{}", self.error_log_tail());
            }
            let tcp = std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok();
            if tcp && self.socket().exists() && self.client(None, "SELECT 1").is_ok() {
                return;
            }
            if Instant::now() >= deadline {
                panic!("mariadbd did not accept connections within {READY_WAIT_MAX:?}:\n{}", self.error_log_tail());
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    fn root_sql(&self, sql: &str) {
        if let Err(error) = self.client(None, sql) {
            panic!("SQL failed: {sql}\n{error}");
        }
    }

    fn client(&self, database: Option<&str>, sql: &str) -> Result<String, String> {
        let client = find_binary("mariadb", &["/usr/bin/mariadb"]);
        let mut command = Command::new(client);
        command
            .arg("--no-defaults")
            .arg(format!("--socket={}", self.socket().display()))
            .arg("--user=root")
            .arg("--batch")
            .arg("--default-character-set=utf8mb4")
            .arg("--skip-column-names")
            .arg("--init-command=SET time_zone='+00:00', lock_wait_timeout=20, innodb_lock_wait_timeout=20")
            .arg("-e")
            .arg(sql);
        if let Some(database) = database {
            command.arg(database);
        }
        let output = command.output().map_err(|error| format!("the mariadb client did not run: {error}"))?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }

    fn error_log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.error_log()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A test that failed half-way must not leave a server behind: SIGKILL is enough,
            // the folder goes with it.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The first of `paths` that exists, or `name` on the PATH; panics saying what to install.
fn find_binary(name: &str, paths: &[&str]) -> PathBuf {
    if let Some(found) = paths.iter().map(PathBuf::from).find(|p| p.exists()) {
        return found;
    }
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.exists()))
        .unwrap_or_default();
    on_path.unwrap_or_else(|| {
        panic!(
            "{name} is not installed: install MariaDB 10.11 (`apt-get install mariadb-server`; scripts/test does this)"
        )
    })
}

/// A TCP port nobody listens on now (the OS's choice for port 0).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("a bound address").port()
}
