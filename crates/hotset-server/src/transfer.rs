//! `hotset import` and `hotset export`: documents between JSON Lines files and a running
//! server's namespace, over the Redis protocol.
//!
//! Owns: reading and batching lines, the progress bar, pipelining `DOC.UPSERT` batches and
//! walking `DOC.SCAN`. Never: judge documents (the server checks each one and names the
//! bad one), or hide a failure: a batch the server refuses stops the import with the line
//! number and how many documents went in (the batches before it, and any of the few sent
//! after it).
//!
//! Each batch is one `DOC.UPSERT` (a transaction: all of it or none), and a few batches
//! are in flight at once so the server never waits for the next one.

use crate::client::{Client, Reply};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

/// Documents in one `DOC.UPSERT`, and the bytes after which a batch is sent anyway.
const BATCH_DOCS: usize = 1_000;
const BATCH_BYTES: usize = 4 << 20;
/// Batches sent and not yet answered.
const IN_FLIGHT: usize = 4;
/// Documents one `DOC.SCAN` asks for.
const SCAN_COUNT: usize = 1_000;

/// Where and how to import.
pub struct Import<'a> {
    pub file: &'a Path,
    pub namespace: &'a str,
    /// Creates the namespace when it is missing, with a hash primary key on this field
    /// (typed like the first document's value).
    pub create_pk: Option<&'a str>,
}

/// A batch on its way: the line number of each of its documents.
struct Sent {
    lines: Vec<usize>,
}

/// Upserts every line of a JSON Lines file (blank lines skipped); returns the count.
pub fn import(client: &mut Client, job: &Import<'_>) -> Result<u64, String> {
    let file = std::fs::File::open(job.file).map_err(|e| format!("{}: {e}", job.file.display()))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut input = BufReader::with_capacity(1 << 20, file);
    let bar = bar(total, "{elapsed_precise} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta}) {msg}");
    let mut line = Vec::new();
    let (mut batch, mut batch_lines, mut batch_bytes) = (Vec::<Vec<u8>>::new(), Vec::new(), 0);
    let mut in_flight = VecDeque::new();
    let (mut number, mut imported, mut checked) = (0usize, 0u64, false);
    loop {
        line.clear();
        let read = input.read_until(b'\n', &mut line).map_err(|e| format!("{}: {e}", job.file.display()))?;
        if read > 0 {
            number += 1;
            bar.inc(read as u64);
            let text = line.trim_ascii();
            if text.is_empty() {
                continue;
            }
            if !checked {
                ensure_namespace(client, job, text, number)?;
                checked = true;
            }
            batch_bytes += text.len();
            batch.push(text.to_vec());
            batch_lines.push(number);
        }
        let end = read == 0;
        if !batch.is_empty() && (end || batch.len() >= BATCH_DOCS || batch_bytes >= BATCH_BYTES) {
            let mut args: Vec<&[u8]> = vec![b"DOC.UPSERT", job.namespace.as_bytes()];
            args.extend(batch.iter().map(Vec::as_slice));
            client.send(&args);
            client.flush()?;
            in_flight.push_back(Sent { lines: std::mem::take(&mut batch_lines) });
            batch.clear();
            batch_bytes = 0;
        }
        while in_flight.len() >= IN_FLIGHT || (end && !in_flight.is_empty()) {
            let sent = in_flight.pop_front().expect("a batch in flight");
            match client.read() {
                Ok(Reply::Int(count)) => imported += count as u64,
                Ok(other) => return Err(format!("unexpected reply to DOC.UPSERT: {other}")),
                Err(error) => {
                    // Batches sent after this one may have gone in: count them too.
                    for _ in 0..in_flight.len() {
                        if let Ok(Reply::Int(count)) = client.read() {
                            imported += count as u64;
                        }
                    }
                    bar.abandon();
                    return Err(refused(&error, &sent, imported));
                }
            }
            bar.set_message(format!("{imported} documents"));
        }
        if end {
            break;
        }
    }
    bar.finish_with_message(format!("{imported} documents"));
    Ok(imported)
}

/// The error of a refused batch, naming the file line of the document the server named
/// (`document N: ...`).
fn refused(error: &str, sent: &Sent, imported: u64) -> String {
    let line = error
        .strip_prefix("ERR document ")
        .and_then(|rest| rest.split(':').next())
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| sent.lines.get(n.wrapping_sub(1)));
    let first = sent.lines.first().copied().unwrap_or(0);
    let last = sent.lines.last().copied().unwrap_or(0);
    let place = match line {
        Some(line) => format!("line {line}"),
        None => format!("lines {first}-{last}"),
    };
    format!("{place}: {error} (the batch of lines {first}-{last} was not imported; {imported} other documents were)")
}

/// Checks that the namespace exists; creates it when asked to.
fn ensure_namespace(client: &mut Client, job: &Import<'_>, first: &[u8], line: usize) -> Result<(), String> {
    client.send(&[b"DOC.NSINFO", job.namespace.as_bytes()]);
    client.flush()?;
    let missing = match client.read() {
        Ok(_) => return Ok(()),
        Err(error) if error.contains("does not exist") => error,
        Err(error) => return Err(error),
    };
    let Some(pk) = job.create_pk else {
        return Err(format!("{missing} (create it first, or pass --create-pk FIELD)"));
    };
    let doc: serde_json::Value =
        serde_json::from_slice(first).map_err(|e| format!("line {line}: invalid JSON: {e}"))?;
    let field_type = match doc.get(pk) {
        Some(v) if v.is_i64() || v.is_u64() => "int",
        Some(v) if v.is_string() => "string",
        _ => return Err(format!("line {line}: --create-pk {pk}: the first document has no int or string '{pk}'")),
    };
    let defs = serde_json::json!([{"field": pk, "type": field_type, "index": "hash", "pk": true}]).to_string();
    client.send(&[b"DOC.NSCREATE", job.namespace.as_bytes(), defs.as_bytes()]);
    client.flush()?;
    client.read().map(drop)
}

/// Writes every document of a namespace as JSON Lines to `out`; returns the count.
pub fn export(client: &mut Client, namespace: &str, out: &mut dyn Write) -> Result<u64, String> {
    client.send(&[b"DOC.NSINFO", namespace.as_bytes()]);
    client.flush()?;
    let documents = match client.read()? {
        Reply::Text(info) => serde_json::from_str::<serde_json::Value>(&info)
            .ok()
            .and_then(|info| info.get("documents").and_then(serde_json::Value::as_u64))
            .unwrap_or(0),
        other => return Err(format!("unexpected reply to DOC.NSINFO: {other}")),
    };
    let bar = bar(documents, "{elapsed_precise} [{bar:40}] {pos}/{len} documents ({per_sec}, eta {eta})");
    let (mut cursor, mut written) = ("0".to_string(), 0u64);
    let count = SCAN_COUNT.to_string();
    loop {
        client.send(&[b"DOC.SCAN", namespace.as_bytes(), cursor.as_bytes(), b"COUNT", count.as_bytes()]);
        client.flush()?;
        let (next, docs) = match client.read()? {
            Reply::List(mut parts) if parts.len() == 2 => match (parts.remove(0), parts.remove(0)) {
                (Reply::Text(next), Reply::List(docs)) => (next, docs),
                _ => return Err("unexpected reply to DOC.SCAN".into()),
            },
            _ => return Err("unexpected reply to DOC.SCAN".into()),
        };
        for doc in docs {
            let Reply::Text(doc) = doc else { return Err("unexpected document in DOC.SCAN's reply".into()) };
            out.write_all(doc.as_bytes()).and_then(|()| out.write_all(b"\n")).map_err(|e| format!("writing: {e}"))?;
            written += 1;
            bar.inc(1);
        }
        if next == "0" {
            break;
        }
        cursor = next;
    }
    out.flush().map_err(|e| format!("writing: {e}"))?;
    bar.finish();
    Ok(written)
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
fn bar(total: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(ProgressStyle::with_template(template).expect("a valid template").progress_chars("=> "));
    bar
}
