//! What `inspect` checks on a MariaDB source before anything else happens: the login, the
//! server (MariaDB, not MySQL, for now), the binlog settings, the replication privilege,
//! and each declared table (exists, is a base table, has a primary key or may use its
//! whole row, has the declared columns); then its columns, key and estimated rows.
//!
//! Owns: `inspect` and `read_table` (also used by the stream after an ALTER TABLE).
//! Never: change anything on the source; every refusal names its cause and what to do.

use super::connect::{classify, connect, source};
use crate::source::{Column, Declaration, Kind, SyncError, TableInfo};
use mysql_async::Conn;
use mysql_async::prelude::Queryable;

/// Checks the source and reads the declared tables (see the module doc).
pub async fn inspect(decl: &Declaration) -> Result<Vec<TableInfo>, SyncError> {
    if decl.kind()? != Kind::MySql {
        return Err(SyncError::declaration(format!("source {}: not a mysql:// url", decl.name)));
    }
    let mut conn = connect(decl).await?;
    check_server(decl, &mut conn).await?;
    check_privileges(decl, &mut conn).await?;
    let mut tables = Vec::with_capacity(decl.tables.len());
    for index in 0..decl.tables.len() {
        tables.push(read_table(decl, &mut conn, index).await?);
    }
    let _ = conn.disconnect().await;
    Ok(tables)
}

/// The server must be MariaDB with the row binlog a sync reads.
async fn check_server(decl: &Declaration, conn: &mut Conn) -> Result<(), SyncError> {
    let name = &decl.name;
    let sql = "SELECT @@version, @@log_bin, @@binlog_format, @@binlog_row_image, @@binlog_row_metadata";
    let row: Option<(String, String, String, String, String)> =
        conn.query_first(sql).await.map_err(|e| classify(decl, "reading the server's settings", &e))?;
    let (version, log_bin, format, image, metadata) =
        row.ok_or_else(|| SyncError::transient(format!("source {name}: the server returned no settings")))?;
    if !version.contains("MariaDB") {
        return Err(SyncError::declaration(format!(
            "source {name}: the server is MySQL {version}; this Hotset follows MariaDB 10.6+ only (MySQL 8 is planned)"
        )));
    }
    let setting = |what: &str, have: &str, want: &str| {
        SyncError::declaration(format!(
            "source {name}: the server's {what} is {have}, a sync needs {want}: set `{what} = {want}` in the server's \
             configuration and restart it"
        ))
    };
    if log_bin != "1" && !log_bin.eq_ignore_ascii_case("ON") {
        return Err(setting("log_bin", "off", "ON (and a server_id)"));
    }
    if !format.eq_ignore_ascii_case("ROW") {
        return Err(setting("binlog_format", &format, "ROW"));
    }
    if !image.eq_ignore_ascii_case("FULL") {
        return Err(setting("binlog_row_image", &image, "FULL"));
    }
    if !metadata.eq_ignore_ascii_case("FULL") {
        return Err(setting("binlog_row_metadata", &metadata, "FULL"));
    }
    Ok(())
}

/// The user needs REPLICATION SLAVE (a binlog dump) as a global privilege.
async fn check_privileges(decl: &Declaration, conn: &mut Conn) -> Result<(), SyncError> {
    let current: Option<String> =
        conn.query_first("SELECT CURRENT_USER()").await.map_err(|e| classify(decl, "reading the user", &e))?;
    let current = current.unwrap_or_default();
    let (user, host) = current.rsplit_once('@').unwrap_or((&current, "%"));
    let grantee = format!("'{}'@'{}'", user.replace('\'', "''"), host);
    let rows: Vec<(String, String)> = conn
        .query("SELECT GRANTEE, PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES")
        .await
        .map_err(|e| classify(decl, "reading the user's privileges", &e))?;
    let replication = rows.iter().any(|(who, what)| *who == grantee && what == "REPLICATION SLAVE");
    if !replication {
        return Err(SyncError::declaration(format!(
            "source {}: the user {current} lacks the REPLICATION SLAVE privilege a binlog reader needs: \
             GRANT REPLICATION SLAVE ON *.* TO {grantee}",
            decl.name
        )));
    }
    Ok(())
}

/// `db.table` of a declared table, the URL's database when it has no `db.`.
pub(crate) fn qualified_name(decl: &Declaration, index: usize) -> Result<(String, String), SyncError> {
    let table = &decl.tables[index].table;
    if let Some((database, name)) = table.split_once('.') {
        return Ok((database.to_string(), name.to_string()));
    }
    let database = source(decl)?.database.ok_or_else(|| {
        SyncError::declaration(format!(
            "source {}: table {table} names no database and the url has none: write it as database.{table}",
            decl.name
        ))
    })?;
    Ok((database, table.clone()))
}

/// Reads one declared table: its columns with their `COLUMN_TYPE` (`json` for a MariaDB
/// JSON column), primary key, and estimated rows.
pub(crate) async fn read_table(decl: &Declaration, conn: &mut Conn, index: usize) -> Result<TableInfo, SyncError> {
    let (database, table) = qualified_name(decl, index)?;
    let full = format!("{database}.{table}");
    let name = &decl.name;
    let failed = |e: mysql_async::Error| classify(decl, &format!("reading table {full}"), &e);
    let found: Option<(String, Option<u64>)> = conn
        .exec_first(
            "SELECT TABLE_TYPE, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
            (&database, &table),
        )
        .await
        .map_err(failed)?;
    let Some((table_type, rows)) = found else {
        return Err(SyncError::declaration(format!(
            "source {name}: table {full} does not exist (or the user may not read it): check the name, \
             and GRANT SELECT ON {database}.* to the user"
        )));
    };
    if table_type != "BASE TABLE" {
        return Err(SyncError::declaration(format!(
            "source {name}: {full} is a {table_type}, not a table: only tables have a binlog to follow"
        )));
    }
    let columns: Vec<(String, String)> = conn
        .exec(
            "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
            (&database, &table),
        )
        .await
        .map_err(failed)?;
    let key: Vec<String> = conn
        .exec(
            "SELECT COLUMN_NAME FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
            (&database, &table),
        )
        .await
        .map_err(failed)?;
    let checks: Vec<String> = conn
        .exec(
            "SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS \
             WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?",
            (&database, &table),
        )
        .await
        .map_err(failed)?;
    let json_columns: Vec<String> = checks.iter().filter_map(|check| json_valid_column(check)).collect();
    let columns: Vec<Column> = columns
        .into_iter()
        .map(|(name, column_type)| {
            let type_name = if json_columns.contains(&name) { "json".to_string() } else { column_type };
            Column { name, type_name }
        })
        .collect();
    let decl_table = &decl.tables[index];
    if let Some(wanted) = &decl_table.columns
        && let Some(missing) = wanted.iter().find(|w| !columns.iter().any(|c| &c.name == *w))
    {
        return Err(SyncError::declaration(format!(
            "source {name}: table {full} has no column {missing}: fix the declaration's columns"
        )));
    }
    let key = if !key.is_empty() {
        key
    } else if decl_table.full_row_identity {
        let info = TableInfo { index, table: full.clone(), key: vec![], columns: columns.clone(), estimated_rows: 0 };
        super::selected_columns(decl_table, &info).iter().map(|c| c.name.clone()).collect()
    } else {
        return Err(SyncError::declaration(format!(
            "source {name}: table {full} has no primary key: add one (ALTER TABLE {full} ADD PRIMARY KEY (...)), \
             or set full_row_identity = true to key its documents by every copied column"
        )));
    };
    Ok(TableInfo { index, table: full, key, columns, estimated_rows: rows.unwrap_or(0) })
}

/// The column of a `json_valid(`name`)` check (MariaDB's JSON type).
fn json_valid_column(check: &str) -> Option<String> {
    let rest = check.trim().strip_prefix("json_valid(")?.strip_suffix(')')?.trim();
    let name = rest.strip_prefix('`').and_then(|r| r.strip_suffix('`')).unwrap_or(rest);
    Some(name.replace("``", "`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_checks() {
        assert_eq!(json_valid_column("json_valid(`doc`)"), Some("doc".into()));
        assert_eq!(json_valid_column("json_valid(`a``b`)"), Some("a`b".into()));
        assert_eq!(json_valid_column("`price` > 0"), None);
    }
}
