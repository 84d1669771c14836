//! Server configuration: defaults, the TOML file, and the command-line flags and
//! environment variables that override it (in that order of precedence, lowest first).
//!
//! Owns: `Config` and its validation. Never: open files other than the config file, or
//! bind sockets; `main` and `server` do that with what this returns.

use hotset_storage::{FsyncPolicy, RecoveryMode};
use serde::Deserialize;
use std::path::PathBuf;

/// Everything `hotset serve` needs. Every field has a default, so no file is required.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The data folder (created if missing).
    pub data: PathBuf,
    /// Address both listeners bind to. The default keeps the server local.
    pub bind: String,
    pub resp_port: u16,
    pub http_port: u16,
    /// `always`, `periodic` (fsync every second) or `never`.
    pub fsync: String,
    /// `strict` (stop on corruption) or `truncate-corrupt` (cut the log there).
    pub recovery: String,
    /// When set, clients must AUTH (or HELLO ... AUTH) with it.
    pub password: Option<String>,
    /// Keyspaces reachable by number with SELECT (0 .. databases-1); names reach any.
    pub databases: usize,
    /// Threads serving connections; 0 means one per core.
    pub threads: usize,
    pub limits: LimitsConfig,
}

/// Limits a client can run into; breaking one gets that client an error.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    pub max_clients: usize,
    /// Largest RESP bulk string (Redis `proto-max-bulk-len`).
    pub max_bulk_bytes: usize,
    /// Most arguments in one RESP request.
    pub max_args: usize,
    /// Largest HTTP request body.
    pub max_body_bytes: usize,
    /// Longest a query (JSON DSL or SQL, over RESP or HTTP) may run before it stops with
    /// an error; 0 means no limit. A query may ask for less (`timeout_ms`), not more.
    pub query_timeout_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data: PathBuf::from("hotset-data"),
            bind: "127.0.0.1".into(),
            resp_port: 7379,
            http_port: 7380,
            fsync: "periodic".into(),
            recovery: "strict".into(),
            password: None,
            databases: 16,
            threads: 0,
            limits: LimitsConfig::default(),
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_clients: 10_000,
            max_bulk_bytes: 512 << 20,
            max_args: 1 << 20,
            max_body_bytes: 256 << 20,
            query_timeout_ms: 10_000,
        }
    }
}

impl Config {
    /// Reads a TOML file over the defaults.
    pub fn from_file(path: &std::path::Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn fsync_policy(&self) -> Result<FsyncPolicy, String> {
        match self.fsync.as_str() {
            "always" => Ok(FsyncPolicy::Always),
            "periodic" => Ok(FsyncPolicy::default()),
            "never" => Ok(FsyncPolicy::Never),
            other => Err(format!("fsync must be always, periodic or never, not {other:?}")),
        }
    }

    pub fn recovery_mode(&self) -> Result<RecoveryMode, String> {
        match self.recovery.as_str() {
            "strict" => Ok(RecoveryMode::Strict),
            "truncate-corrupt" => Ok(RecoveryMode::TruncateCorrupt),
            other => Err(format!("recovery must be strict or truncate-corrupt, not {other:?}")),
        }
    }

    /// The time limit for a query that asked for `asked` (the smaller of the two; `None`
    /// when neither sets one).
    pub fn query_timeout(&self, asked: Option<std::time::Duration>) -> Option<std::time::Duration> {
        let limit =
            (self.limits.query_timeout_ms > 0).then(|| std::time::Duration::from_millis(self.limits.query_timeout_ms));
        match (asked, limit) {
            (Some(asked), Some(limit)) => Some(asked.min(limit)),
            (asked, limit) => asked.or(limit),
        }
    }

    /// Checks what the types cannot.
    pub fn validate(&self) -> Result<(), String> {
        self.fsync_policy()?;
        self.recovery_mode()?;
        if self.databases == 0 {
            return Err("databases must be at least 1".into());
        }
        if self.limits.max_clients == 0 || self.limits.max_args == 0 {
            return Err("limits.max_clients and limits.max_args must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_overrides_defaults_and_refuses_unknown_keys() {
        let config: Config =
            toml::from_str("resp_port = 1234\nfsync = \"always\"\n[limits]\nmax_clients = 5\n").unwrap();
        assert_eq!((config.resp_port, config.http_port, config.limits.max_clients), (1234, 7380, 5));
        assert_eq!(config.fsync_policy(), Ok(FsyncPolicy::Always));
        assert!(toml::from_str::<Config>("resp_prot = 1").is_err());
        let bad = Config { fsync: "sometimes".into(), ..Config::default() };
        assert!(bad.validate().unwrap_err().contains("sometimes"));
    }

    #[test]
    fn a_query_gets_the_smaller_of_its_own_and_the_server_time_limit() {
        use std::time::Duration;
        let ms = Duration::from_millis;
        let config: Config = toml::from_str("[limits]\nquery_timeout_ms = 100\n").unwrap();
        assert_eq!(config.query_timeout(None), Some(ms(100)));
        assert_eq!(config.query_timeout(Some(ms(5))), Some(ms(5)));
        assert_eq!(config.query_timeout(Some(ms(500))), Some(ms(100)));
        let unlimited: Config = toml::from_str("[limits]\nquery_timeout_ms = 0\n").unwrap();
        assert_eq!(unlimited.query_timeout(None), None);
        assert_eq!(unlimited.query_timeout(Some(ms(7))), Some(ms(7)));
    }
}
