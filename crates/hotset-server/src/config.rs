//! Server configuration: defaults, the TOML file, and the command-line flags and
//! environment variables that override it (in that order of precedence, lowest first).
//!
//! Owns: `Config` and its validation. Never: open files other than the config file, or
//! bind sockets; `main` and `server` do that with what this returns.

use hotset_storage::{FsyncPolicy, RecoveryMode};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// Everything `hotset serve` needs. Every field has a default, so no file is required.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The data folder (created if missing).
    pub data: PathBuf,
    /// Address every listener binds to. The default keeps the server local.
    pub bind: String,
    /// Plain (unencrypted) Redis protocol; `off` for a TLS-only server.
    pub resp_port: Port,
    /// Plain HTTP; `off` for a TLS-only server.
    pub http_port: Port,
    /// The Redis protocol over TLS (Redis' `tls-port`); off unless set.
    pub tls_port: Port,
    /// HTTPS; off unless set.
    pub http_tls_port: Port,
    /// `always`, `periodic` (fsync every second) or `never`.
    pub fsync: String,
    /// `strict` (stop on corruption) or `truncate-corrupt` (cut the log there).
    pub recovery: String,
    /// When set, clients must AUTH (or HELLO ... AUTH) with it over RESP, and send it as
    /// `Authorization: Bearer` (or Basic) over HTTP.
    pub password: Option<String>,
    /// Whether `/metrics` answers without the password (scrapers often send none).
    pub metrics_public: bool,
    /// Keyspaces reachable by number with SELECT (0 .. databases-1); names reach any.
    pub databases: usize,
    /// Threads serving connections; 0 means one per core.
    pub threads: usize,
    pub limits: LimitsConfig,
    pub tls: TlsConfig,
    /// Live-sync sources (`[[sources]]`): tables of PostgreSQL or MariaDB/MySQL followed
    /// into namespaces. Stored in the data folder once declared, so a restart without this
    /// file goes on following them.
    pub sources: Vec<hotset_sync::Declaration>,
    /// Redis' runtime parameters (`[redis]`: `maxmemory = "100mb"`,
    /// `maxmemory-policy = "allkeys-lru"`...), applied at start as CONFIG SET would;
    /// CONFIG REWRITE writes this table.
    pub redis: toml::Table,
    /// The file this came from, if any (CONFIG REWRITE writes there).
    #[serde(skip)]
    pub file: Option<PathBuf>,
}

/// A listener's port: a number (0 picks a free one) or `off` (no listener). In TOML an
/// integer or the string `"off"`; on the command line and in the environment, the same
/// words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    Off,
    Number(u16),
}

/// The certificate and key that `tls_port` and `http_tls_port` serve, all PEM.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// The server's certificate chain, leaf first.
    pub cert_file: Option<PathBuf>,
    /// Its private key: PKCS#8, RSA (PKCS#1) or SEC1.
    pub key_file: Option<PathBuf>,
    /// When set, clients must present a certificate this CA bundle signed (Redis'
    /// `tls-auth-clients yes`); when not, any client may connect.
    pub ca_file: Option<PathBuf>,
    /// Longest a client may take over its handshake before the connection is closed.
    pub handshake_timeout_ms: u64,
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
    /// Largest document stored (its minified JSON), however it arrives (RESP, HTTP, SQL).
    pub max_document_bytes: usize,
    /// Longest a query (JSON DSL or SQL, over RESP or HTTP) may run before it stops with
    /// an error; 0 means no limit. A query may ask for less (`timeout_ms`), not more.
    pub query_timeout_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data: PathBuf::from("hotset-data"),
            bind: "127.0.0.1".into(),
            resp_port: Port::Number(7379),
            http_port: Port::Number(7380),
            tls_port: Port::Off,
            http_tls_port: Port::Off,
            fsync: "periodic".into(),
            recovery: "strict".into(),
            password: None,
            metrics_public: false,
            databases: 16,
            threads: 0,
            limits: LimitsConfig::default(),
            tls: TlsConfig::default(),
            sources: Vec::new(),
            redis: toml::Table::new(),
            file: None,
        }
    }
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig { cert_file: None, key_file: None, ca_file: None, handshake_timeout_ms: 10_000 }
    }
}

impl Port {
    pub fn number(self) -> Option<u16> {
        match self {
            Port::Off => None,
            Port::Number(number) => Some(number),
        }
    }
}

impl std::fmt::Display for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Port::Off => f.write_str("off"),
            Port::Number(number) => write!(f, "{number}"),
        }
    }
}

impl std::str::FromStr for Port {
    type Err = String;

    fn from_str(text: &str) -> Result<Port, String> {
        if text.eq_ignore_ascii_case("off") {
            return Ok(Port::Off);
        }
        text.parse().map(Port::Number).map_err(|_| format!("a port is a number up to 65535 or off, not {text:?}"))
    }
}

impl<'de> Deserialize<'de> for Port {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Port, D::Error> {
        struct PortVisitor;
        impl serde::de::Visitor<'_> for PortVisitor {
            type Value = Port;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a port number up to 65535 or \"off\"")
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Port, E> {
                u16::try_from(value).map(Port::Number).map_err(|_| E::custom(format!("port {value} is out of range")))
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Port, E> {
                u16::try_from(value).map(Port::Number).map_err(|_| E::custom(format!("port {value} is out of range")))
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Port, E> {
                text.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_any(PortVisitor)
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_clients: 10_000,
            max_bulk_bytes: 512 << 20,
            max_args: 1 << 20,
            max_body_bytes: 256 << 20,
            max_document_bytes: hotset_core::Limits::default().document_bytes_max,
            query_timeout_ms: 10_000,
        }
    }
}

impl Config {
    /// Reads a TOML file over the defaults.
    pub fn from_file(path: &std::path::Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let mut config: Config = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        config.file = Some(path.to_path_buf());
        Ok(config)
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

    /// The server's time limit for a query (`None`: no limit); a query asking for less
    /// keeps its own (`hotset_ops::Engine` applies it).
    pub fn query_time_limit(&self) -> Option<std::time::Duration> {
        (self.limits.query_timeout_ms > 0).then(|| std::time::Duration::from_millis(self.limits.query_timeout_ms))
    }

    /// Whether a TLS listener is configured (and so a certificate and key are needed).
    pub fn tls_enabled(&self) -> bool {
        self.tls_port != Port::Off || self.http_tls_port != Port::Off
    }

    pub fn tls_handshake_timeout(&self) -> Duration {
        Duration::from_millis(self.tls.handshake_timeout_ms)
    }

    /// Checks what the types cannot.
    pub fn validate(&self) -> Result<(), String> {
        self.fsync_policy()?;
        self.recovery_mode()?;
        if [self.resp_port, self.http_port, self.tls_port, self.http_tls_port].iter().all(|&port| port == Port::Off) {
            return Err("every listener is off: set resp_port, http_port, tls_port or http_tls_port".into());
        }
        if self.tls_enabled() && (self.tls.cert_file.is_none() || self.tls.key_file.is_none()) {
            return Err("tls_port and http_tls_port need tls.cert_file and tls.key_file".into());
        }
        if self.tls.handshake_timeout_ms == 0 {
            return Err("tls.handshake_timeout_ms must be at least 1".into());
        }
        if self.databases == 0 {
            return Err("databases must be at least 1".into());
        }
        if self.limits.max_clients == 0 || self.limits.max_args == 0 {
            return Err("limits.max_clients and limits.max_args must be at least 1".into());
        }
        crate::params::Params::new(&self.fixed_params())
            .set_all(&self.redis_params())
            .map_err(|refused| format!("[redis]: {}", refused.0))?;
        Ok(())
    }

    /// The `[redis]` table as parameter names and values (numbers and booleans written
    /// as Redis writes them).
    pub fn redis_params(&self) -> Vec<(String, String)> {
        self.redis
            .iter()
            .map(|(name, value)| {
                let text = match value {
                    toml::Value::String(text) => text.clone(),
                    toml::Value::Boolean(yes) => if *yes { "yes" } else { "no" }.to_string(),
                    other => other.to_string(),
                };
                (name.clone(), text)
            })
            .collect()
    }

    /// The parameters this configuration fixes, in Redis' names and forms.
    pub fn fixed_params(&self) -> Vec<(&'static str, String)> {
        let appendfsync = match self.fsync.as_str() {
            "periodic" => "everysec",
            other => other,
        };
        vec![
            ("appendfsync", appendfsync.to_string()),
            ("bind", self.bind.clone()),
            ("databases", self.databases.to_string()),
            ("dir", self.data.display().to_string()),
            ("maxclients", self.limits.max_clients.to_string()),
            ("port", self.resp_port.number().unwrap_or(0).to_string()),
            ("proto-max-bulk-len", self.limits.max_bulk_bytes.to_string()),
            ("requirepass", if self.password.is_some() { "********".into() } else { String::new() }),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_overrides_defaults_and_refuses_unknown_keys() {
        let config: Config =
            toml::from_str("resp_port = 1234\nfsync = \"always\"\n[limits]\nmax_clients = 5\n").unwrap();
        assert_eq!(
            (config.resp_port, config.http_port, config.limits.max_clients),
            (Port::Number(1234), Port::Number(7380), 5)
        );
        assert_eq!(config.fsync_policy(), Ok(FsyncPolicy::Always));
        assert!(toml::from_str::<Config>("resp_prot = 1").is_err());
        let bad = Config { fsync: "sometimes".into(), ..Config::default() };
        assert!(bad.validate().unwrap_err().contains("sometimes"));
    }

    #[test]
    fn ports_are_numbers_or_off_and_tls_ports_need_a_certificate() {
        let config: Config = toml::from_str("resp_port = \"off\"\nhttp_tls_port = 0\n").unwrap();
        assert_eq!((config.resp_port, config.http_port), (Port::Off, Port::Number(7380)));
        assert_eq!((config.tls_port, config.http_tls_port), (Port::Off, Port::Number(0)));
        assert!(config.validate().unwrap_err().contains("tls.cert_file"));
        assert!(toml::from_str::<Config>("tls_port = 70000").unwrap_err().to_string().contains("70000"));
        assert!(toml::from_str::<Config>("tls_port = \"on\"").unwrap_err().to_string().contains("\"on\""));
        assert_eq!("OFF".parse::<Port>(), Ok(Port::Off));
        assert_eq!("6380".parse::<Port>(), Ok(Port::Number(6380)));
        assert!("-1".parse::<Port>().is_err());
        let with_files: Config =
            toml::from_str("tls_port = 6380\n[tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\n").unwrap();
        assert_eq!(with_files.validate(), Ok(()));
        assert_eq!(with_files.tls_handshake_timeout(), Duration::from_secs(10));
        let nothing = Config { resp_port: Port::Off, http_port: Port::Off, ..Config::default() };
        assert!(nothing.validate().unwrap_err().contains("every listener is off"));
    }

    #[test]
    fn the_query_time_limit_is_off_at_zero() {
        let config: Config = toml::from_str("[limits]\nquery_timeout_ms = 100\n").unwrap();
        assert_eq!(config.query_time_limit(), Some(std::time::Duration::from_millis(100)));
        let unlimited: Config = toml::from_str("[limits]\nquery_timeout_ms = 0\n").unwrap();
        assert_eq!(unlimited.query_time_limit(), None);
    }
}
