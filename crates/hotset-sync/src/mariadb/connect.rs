//! Connections to a MariaDB/MySQL source: the declaration's URL to connection options, the
//! session every connection of a sync gets (UTC time zone, utf8mb4), and the source's errors
//! sorted into what the runner does next.
//!
//! Owns: `connect`, `Source` (the URL's parts a driver needs), `classify` (a driver error to
//! a `SyncError`). Never: run a statement that changes the source's data or settings
//! beyond the session's own variables.

use crate::source::{Declaration, SyncError};
use mysql_async::{Conn, Opts, OptsBuilder};
use std::time::Duration;

/// How long connecting (TCP, TLS-free handshake, login, session setup) may take before it
/// counts as a transient failure: mysql_async has no limit of its own, and an unreachable
/// host would otherwise hold a sync for the kernel's SYN retries.
const CONNECT_WAIT_MAX: Duration = Duration::from_secs(10);

/// What a driver needs of the declaration's URL.
pub(crate) struct Source {
    /// Connection options (the URL's host, port, user, password, database).
    pub opts: Opts,
    /// The URL's database: the schema of a declared table written without `db.`.
    pub database: Option<String>,
}

/// Reads the declaration's URL (`mysql://` or `mariadb://`).
pub(crate) fn source(decl: &Declaration) -> Result<Source, SyncError> {
    let url = match decl.url.strip_prefix("mariadb://") {
        Some(rest) => format!("mysql://{rest}"),
        None => decl.url.clone(),
    };
    let opts = Opts::from_url(&url).map_err(|error| {
        SyncError::declaration(format!(
            "source {}: the url is not a valid mysql://user:password@host:port/database url ({error})",
            decl.name
        ))
    })?;
    let database = opts.db_name().map(str::to_string).filter(|db| !db.is_empty());
    Ok(Source { opts, database })
}

/// A connection with the sync's session: time zone UTC (TIMESTAMP values are read in
/// the session's zone) and utf8mb4 text.
pub(crate) async fn connect(decl: &Declaration) -> Result<Conn, SyncError> {
    let source = source(decl)?;
    let opts = OptsBuilder::from_opts(source.opts)
        .init(vec!["SET time_zone = '+00:00', NAMES utf8mb4"])
        .stmt_cache_size(Some(0))
        .prefer_socket(Some(false));
    match tokio::time::timeout(CONNECT_WAIT_MAX, Conn::new(opts)).await {
        Ok(connected) => connected.map_err(|error| classify(decl, "connecting", &error)),
        Err(_) => Err(SyncError::transient(format!(
            "source {}: connecting took longer than {CONNECT_WAIT_MAX:?} (retrying)",
            decl.name
        ))),
    }
}

/// Sorts a driver error: a refused login, an unknown database or a missing privilege is
/// the declaration's fault; a purged binlog is lost for good; anything else (refused or
/// broken connections, timeouts, a server shutting down) is worth a retry.
pub(crate) fn classify(decl: &Declaration, doing: &str, error: &mysql_async::Error) -> SyncError {
    let name = &decl.name;
    let mysql_async::Error::Server(server) = error else {
        return SyncError::transient(format!("source {name}: {doing}: {error} (retrying)"));
    };
    let text = &server.message;
    match server.code {
        1045 => SyncError::declaration(format!(
            "source {name}: the server refused the login ({text}): check the user and password in the url"
        )),
        1044 | 1049 => SyncError::declaration(format!(
            "source {name}: the url's database cannot be used ({text}): check its name and the user's grants"
        )),
        1142 | 1143 | 1227 => SyncError::declaration(format!(
            "source {name}: {doing}: a privilege is missing ({text}): GRANT SELECT, REPLICATION SLAVE ON *.* TO the user"
        )),
        1236 if is_purged(text) => SyncError::lost(format!(
            "source {name}: the source no longer has the binlog Hotset needs to go on ({text}); \
             its binlogs were purged past Hotset's position: resync the source (POST /api/v1/sources/{name}/resync)"
        )),
        _ => SyncError::transient(format!("source {name}: {doing}: server error {}: {text} (retrying)", server.code)),
    }
}

/// Whether a binlog dump's error 1236 says the position is gone from the source's
/// binlogs (purged, or never there: a source reset), rather than a passing failure.
fn is_purged(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    ["purged", "could not find gtid state", "not in the master's binlog", "could not find first log file"]
        .iter()
        .any(|needle| message.contains(needle))
}

/// `'text'` as an SQL string literal (quotes and backslashes escaped).
pub(crate) fn literal(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for c in text.chars() {
        match c {
            '\'' => quoted.push_str("''"),
            '\\' => quoted.push_str("\\\\"),
            '\0' => quoted.push_str("\\0"),
            c => quoted.push(c),
        }
    }
    quoted.push('\'');
    quoted
}

/// `` `name` `` as an SQL identifier (backticks doubled).
pub(crate) fn identifier(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(literal("it's a \\ test"), "'it''s a \\\\ test'");
        assert_eq!(identifier("we`ird"), "`we``ird`");
        assert!(is_purged(
            "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old and required binlog files have been purged."
        ));
        assert!(!is_purged("binlog truncated in the middle of event"));
    }
}
