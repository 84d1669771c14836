//! CONFIG: GET, SET, RESETSTAT, REWRITE over Redis' runtime parameters.
//!
//! Owns: the command's replies and CONFIG REWRITE's edit of the config file (its `[redis]`
//! table, the rest of the file and its comments kept). Never: decide what a parameter
//! accepts or means (`params` does), or write a file the server was not started from.

use super::Session;
use super::args::{self, CmdError, CmdResult, unknown_subcommand};
use crate::resp::reply::Reply;
use crate::state::ServerState;
use std::sync::Arc;
use std::sync::atomic::Ordering;

pub fn config(state: &Arc<ServerState>, _: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = a[1];
    let arity = || {
        CmdError(format!(
            "ERR wrong number of arguments for 'config|{}' command",
            String::from_utf8_lossy(sub).to_ascii_lowercase()
        ))
    };
    if args::is(sub, "GET") {
        if a.len() < 3 {
            return Err(arity());
        }
        let found = state.params.get(&a[2..]);
        r.map(found.len());
        for (name, value) in found {
            r.bulk(name.as_bytes());
            r.bulk(value.as_bytes());
        }
    } else if args::is(sub, "SET") {
        if a.len() < 4 || !a.len().is_multiple_of(2) {
            return Err(arity());
        }
        let pairs: Vec<(&[u8], &[u8])> = a[2..].chunks_exact(2).map(|pair| (pair[0], pair[1])).collect();
        state.params.set(&pairs).map_err(|refused| CmdError(refused.0))?;
        // A lower tracking-table-max-keys sheds keys now, as Redis' next cron would.
        state.tracking.enforce_limit();
        r.ok();
    } else if args::is(sub, "RESETSTAT") {
        if a.len() != 2 {
            return Err(arity());
        }
        let stats = &state.stats;
        for counter in [
            &stats.commands,
            &stats.protocol_errors,
            &stats.batches,
            &stats.connections_received,
            &stats.connections_rejected,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        // Redis' RESETSTAT clears the error and per-command counts too.
        stats.errors.lock().clear();
        for command in stats.per_command.iter() {
            for counter in [&command.calls, &command.failed, &command.rejected, &command.usec] {
                counter.store(0, Ordering::Relaxed);
            }
        }
        r.ok();
    } else if args::is(sub, "REWRITE") {
        if a.len() != 2 {
            return Err(arity());
        }
        rewrite(state)?;
        r.ok();
    } else {
        return Err(unknown_subcommand("CONFIG", sub));
    }
    Ok(())
}

/// Writes the parameters that differ from Redis' defaults into the config file's
/// `[redis]` table (under a temporary name, then renamed, so a crash never leaves half a
/// file).
fn rewrite(state: &ServerState) -> CmdResult {
    let Some(path) = &state.config.file else {
        return Err(CmdError("ERR The server is running without a config file".into()));
    };
    let failed = |e: &dyn std::fmt::Display| CmdError(format!("ERR Rewriting config file: {e}"));
    let text = std::fs::read_to_string(path).map_err(|e| failed(&e))?;
    let mut document: toml_edit::DocumentMut = text.parse().map_err(|e| failed(&e))?;
    let changed = state.params.changed();
    if changed.is_empty() {
        document.remove("redis");
    } else {
        let table = document.entry("redis").or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
        let Some(table) = table.as_table_mut() else {
            return Err(failed(&"`redis` is not a table"));
        };
        table.retain(|name, _| changed.iter().any(|(changed, _)| *changed == name));
        for (name, value) in changed {
            table[name] = toml_edit::value(value);
        }
    }
    let partial = path.with_extension("rewrite");
    std::fs::write(&partial, document.to_string()).map_err(|e| failed(&e))?;
    std::fs::rename(&partial, path).map_err(|e| failed(&e))?;
    Ok(())
}
