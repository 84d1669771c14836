//! `hotset import` and `hotset export`: documents between files and a running server's
//! namespace, over the Redis protocol.
//!
//! Owns: reading the input (JSON Lines, or one JSON array streamed element by element),
//! checking that each document is well-formed JSON so a syntax error names its line and
//! column, batching, the progress bar, pipelining `DOC.UPSERT` batches and walking
//! `DOC.SCAN`. Never: judge documents beyond their syntax (the server checks each one and
//! names the bad one), or hide a failure: a document the server refuses, or one that is
//! not JSON, stops the import with its line and how many documents went in (the batches
//! before it, and any of the few sent after it).
//!
//! Each batch is one `DOC.UPSERT` (a transaction: all of it or none), and a few batches
//! are in flight at once so the server never waits for the next one.

use crate::client::{Client, Reply};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::path::Path;

/// Documents in one `DOC.UPSERT`, and the bytes after which a batch is sent anyway.
const BATCH_DOCS: usize = 1_000;
const BATCH_BYTES: usize = 4 << 20;
/// Batches sent and not yet answered.
const IN_FLIGHT: usize = 4;
/// Documents one `DOC.SCAN` asks for.
const SCAN_COUNT: usize = 1_000;
/// The largest document read from the input: the server's largest RESP argument by
/// default, so a bigger one could never be sent; it also bounds the memory of an array
/// element whose brackets never pair up.
const DOCUMENT_BYTES_MAX: usize = 512 << 20;
/// Read buffer of the input file; the format is told from its first non-blank byte in
/// the first buffer.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// Where and how to import.
pub struct Import<'a> {
    pub file: &'a Path,
    pub namespace: &'a str,
    /// Creates the namespace when it is missing, with a hash primary key on this field
    /// (typed like the first document's value).
    pub create_pk: Option<&'a str>,
}

/// Upserts every document of a JSON Lines file (blank lines skipped) or of a file holding
/// one JSON array; returns the count.
pub fn import(client: &mut Client, job: &Import<'_>) -> Result<u64, String> {
    let name = job.file.display();
    let file = std::fs::File::open(job.file).map_err(|e| format!("{name}: {e}"))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut documents =
        Documents::new(BufReader::with_capacity(READ_BUFFER_BYTES, file)).map_err(|e| format!("{name}: {e}"))?;
    let bar = bar(total, "{elapsed_precise} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta}) {msg}");
    let mut pipeline = Pipeline { client, namespace: job.namespace, in_flight: VecDeque::new(), imported: 0 };
    let mut batch = Batch::default();
    let mut checked = false;
    loop {
        let next = documents.next();
        bar.set_position(documents.bytes_read);
        let document = match next {
            Ok(Some(document)) => document,
            Ok(None) => break,
            Err(error) => {
                let refused = pipeline.drain();
                bar.abandon();
                refused?;
                let from = batch.lines.first().copied().unwrap_or(error.line);
                let imported = pipeline.imported;
                return Err(format!(
                    "{name}: {error} (the import stopped there: {imported} documents before line {from} were imported, none from it on)"
                ));
            }
        };
        if !checked {
            ensure_namespace(pipeline.client, job, &document.text, document.line)?;
            checked = true;
        }
        batch.push(document);
        if batch.full() {
            pipeline.send(&mut batch, &bar)?;
        }
    }
    if !batch.lines.is_empty() {
        pipeline.send(&mut batch, &bar)?;
    }
    let drained = pipeline.drain();
    if drained.is_err() {
        bar.abandon();
    }
    drained?;
    bar.finish_with_message(format!("{} documents", pipeline.imported));
    Ok(pipeline.imported)
}

/// Documents gathered for one `DOC.UPSERT`, with the file line each starts on.
#[derive(Default)]
struct Batch {
    texts: Vec<Vec<u8>>,
    lines: Vec<usize>,
    bytes: usize,
}

impl Batch {
    fn push(&mut self, document: Document) {
        self.bytes += document.text.len();
        self.texts.push(document.text);
        self.lines.push(document.line);
    }

    fn full(&self) -> bool {
        self.texts.len() >= BATCH_DOCS || self.bytes >= BATCH_BYTES
    }
}

/// Batches sent and not yet answered, and the documents of those answered.
struct Pipeline<'c> {
    client: &'c mut Client,
    namespace: &'c str,
    in_flight: VecDeque<Vec<usize>>,
    imported: u64,
}

impl Pipeline<'_> {
    /// Sends the batch (emptying it), after waiting for the oldest answer when
    /// `IN_FLIGHT` batches are already on their way.
    fn send(&mut self, batch: &mut Batch, bar: &ProgressBar) -> Result<(), String> {
        assert!(!batch.texts.is_empty(), "an empty batch is never sent");
        while self.in_flight.len() >= IN_FLIGHT {
            let received = self.receive();
            if received.is_err() {
                bar.abandon();
            }
            received?;
            bar.set_message(format!("{} documents", self.imported));
        }
        let mut args: Vec<&[u8]> = vec![b"DOC.UPSERT", self.namespace.as_bytes()];
        args.extend(batch.texts.iter().map(Vec::as_slice));
        self.client.send(&args);
        self.client.flush()?;
        self.in_flight.push_back(std::mem::take(&mut batch.lines));
        batch.texts.clear();
        batch.bytes = 0;
        Ok(())
    }

    /// Takes the oldest batch's answer; a refusal names the line of the refused document.
    fn receive(&mut self) -> Result<(), String> {
        let lines = self.in_flight.pop_front().expect("a batch in flight");
        match self.client.read() {
            Ok(Reply::Int(count)) => {
                self.imported += count as u64;
                Ok(())
            }
            Ok(other) => Err(format!("unexpected reply to DOC.UPSERT: {other}")),
            Err(error) => {
                // Batches sent after this one may have gone in: count them too.
                for _ in 0..self.in_flight.len() {
                    if let Ok(Reply::Int(count)) = self.client.read() {
                        self.imported += count as u64;
                    }
                }
                self.in_flight.clear();
                Err(refused(&error, &lines, self.imported))
            }
        }
    }

    /// Takes every answer still due.
    fn drain(&mut self) -> Result<(), String> {
        while !self.in_flight.is_empty() {
            self.receive()?;
        }
        Ok(())
    }
}

/// The error of a refused batch, naming the file line of the document the server named
/// (`CODE document N: ...`, whatever the code word).
fn refused(error: &str, lines: &[usize], imported: u64) -> String {
    let line = error
        .split_once(' ')
        .and_then(|(_, rest)| rest.strip_prefix("document "))
        .and_then(|rest| rest.split(':').next())
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| lines.get(n.wrapping_sub(1)));
    let first = lines.first().copied().unwrap_or(0);
    let last = lines.last().copied().unwrap_or(0);
    let place = match line {
        Some(line) => format!("line {line}"),
        None => format!("lines {first}-{last}"),
    };
    format!("{place}: {error} (the batch of lines {first}-{last} was not imported; {imported} other documents were)")
}

/// One document of the input: its JSON text and the line and column it starts at.
struct Document {
    text: Vec<u8>,
    line: usize,
    column: usize,
}

/// Why the input stopped: where, and what is wrong there.
#[derive(Debug)]
struct InputError {
    line: usize,
    column: usize,
    message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

/// How the input holds its documents, told from its first non-blank byte: `[` starts one
/// JSON array, anything else is JSON Lines.
enum Format {
    Lines,
    Array(ArrayScan),
}

/// Where a scan of a JSON array stands: elements are cut at the commas outside strings
/// and brackets, so only one element is in memory at a time; each is then checked by
/// serde_json, whose error position is moved to the file's.
#[derive(Default)]
struct ArrayScan {
    opened: bool,
    closed: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The element's text is complete (a closing bracket or quote at depth 0, or blank
    /// after it): only `,` or `]` may follow.
    element_done: bool,
    /// A `,` was read and no element after it yet.
    after_comma: bool,
}

/// The documents of an input file, in order, each checked to be well-formed JSON.
struct Documents<R> {
    input: R,
    format: Format,
    /// The position of the next byte to read (1-based; columns count bytes).
    line: usize,
    column: usize,
    bytes_read: u64,
    /// A JSON Lines line being read.
    buffer: Vec<u8>,
}

impl<R: BufRead> Documents<R> {
    fn new(mut input: R) -> std::io::Result<Self> {
        let head = input.fill_buf()?;
        let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
        let format = match head.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'[') => Format::Array(ArrayScan::default()),
            _ => Format::Lines,
        };
        Ok(Documents { input, format, line: 1, column: 1, bytes_read: 0, buffer: Vec::new() })
    }

    /// The next document, `None` at the end of the input.
    fn next(&mut self) -> Result<Option<Document>, InputError> {
        let document = match self.format {
            Format::Lines => self.next_line()?,
            Format::Array(_) => self.next_element()?,
        };
        let Some(document) = document else { return Ok(None) };
        check_syntax(&document)?;
        Ok(Some(document))
    }

    fn next_line(&mut self) -> Result<Option<Document>, InputError> {
        loop {
            self.buffer.clear();
            let read = self.input.read_until(b'\n', &mut self.buffer).map_err(|e| read_error((self.line, 1), &e))?;
            if read == 0 {
                return Ok(None);
            }
            if self.bytes_read == 0 && self.buffer.starts_with(b"\xEF\xBB\xBF") {
                self.buffer.drain(..3);
            }
            let line = self.line;
            self.line += 1;
            self.bytes_read += read as u64;
            let text = self.buffer.trim_ascii();
            if text.is_empty() {
                continue;
            }
            let column = self.buffer.len() - self.buffer.trim_ascii_start().len() + 1;
            let document = Document { text: text.to_vec(), line, column };
            check_size(&document)?;
            return Ok(Some(document));
        }
    }

    /// Cuts the next element out of the array, reading as many buffers as it spans.
    fn next_element(&mut self) -> Result<Option<Document>, InputError> {
        let mut element = Document { text: Vec::new(), line: 0, column: 0 };
        loop {
            let at = (self.line, self.column);
            let chunk = self.input.fill_buf().map_err(|e| read_error(at, &e))?;
            if chunk.is_empty() {
                return self.end_of_array(element);
            }
            let Format::Array(scan) = &mut self.format else { unreachable!("called on arrays only") };
            let (used, complete) = scan_chunk(scan, chunk, &mut element, (&mut self.line, &mut self.column))?;
            self.input.consume(used);
            self.bytes_read += used as u64;
            check_size(&element)?;
            if complete {
                return Ok(Some(element));
            }
        }
    }

    /// The input ended: after the closing `]` that is the end; anywhere else it is cut.
    fn end_of_array(&self, element: Document) -> Result<Option<Document>, InputError> {
        let Format::Array(scan) = &self.format else { unreachable!("called on arrays only") };
        if scan.closed {
            assert!(element.text.is_empty(), "nothing is gathered after the closing `]`");
            return Ok(None);
        }
        // A document cut short, or one whose brackets do not pair up (so the scan never
        // found its end): serde_json names the first error in it.
        if !element.text.is_empty() {
            check_syntax(&element)?;
        }
        Err(InputError {
            line: self.line,
            column: self.column,
            message: "the file ends before the array's closing `]`".into(),
        })
    }
}

/// A failure to read the input at a place in it.
fn read_error((line, column): (usize, usize), error: &std::io::Error) -> InputError {
    InputError { line, column, message: format!("reading: {error}") }
}

/// Scans one buffer of an array: appends the element's bytes, advances the position;
/// answers the bytes used and whether an element is complete (the bytes after it stay for
/// the next call).
fn scan_chunk(
    scan: &mut ArrayScan,
    chunk: &[u8],
    element: &mut Document,
    (line, column): (&mut usize, &mut usize),
) -> Result<(usize, bool), InputError> {
    let mut used = 0;
    while used < chunk.len() {
        let byte = chunk[used];
        let at = (*line, *column);
        if used == 0 && !scan.opened && chunk.starts_with(b"\xEF\xBB\xBF") {
            used = 3;
            continue;
        }
        used += 1;
        if byte == b'\n' {
            *line += 1;
            *column = 1;
        } else {
            *column += 1;
        }
        if element.text.is_empty() {
            (element.line, element.column) = at;
        }
        match scan_byte(scan, byte, element) {
            Ok(true) => return Ok((used, true)),
            Ok(false) => {}
            Err(message) => return Err(InputError { line: at.0, column: at.1, message }),
        }
    }
    Ok((used, false))
}

/// One byte of an array: answers whether it completed an element.
fn scan_byte(scan: &mut ArrayScan, byte: u8, element: &mut Document) -> Result<bool, String> {
    let structural = scan.depth == 0 && !scan.in_string;
    if !structural {
        element.text.push(byte);
        if scan.in_string {
            match (scan.escaped, byte) {
                (true, _) => scan.escaped = false,
                (false, b'\\') => scan.escaped = true,
                (false, b'"') => scan.in_string = false,
                _ => {}
            }
        } else {
            match byte {
                b'{' | b'[' => scan.depth += 1,
                b'}' | b']' => scan.depth -= 1,
                b'"' => scan.in_string = true,
                _ => {}
            }
        }
        scan.element_done = scan.depth == 0 && !scan.in_string && matches!(byte, b'}' | b']' | b'"');
        return Ok(false);
    }
    let shown = char::from(byte).escape_default();
    match byte {
        _ if byte.is_ascii_whitespace() => {
            scan.element_done = !element.text.is_empty();
            Ok(false)
        }
        _ if scan.closed => Err(format!("unexpected `{shown}` after the array's closing `]`")),
        b'[' if !scan.opened => {
            scan.opened = true;
            Ok(false)
        }
        b',' | b']' if element.text.is_empty() && (byte == b',' || scan.after_comma) => {
            Err(format!("expected a document before `{shown}`"))
        }
        b',' | b']' => {
            scan.closed = byte == b']';
            scan.after_comma = byte == b',';
            scan.element_done = false;
            Ok(!element.text.is_empty())
        }
        _ if scan.element_done => Err(format!("expected `,` or `]` after a document, found `{shown}`")),
        b'}' => Err("unexpected `}`".into()),
        _ => {
            scan.after_comma = false;
            element.text.push(byte);
            match byte {
                b'{' | b'[' => scan.depth += 1,
                b'"' => scan.in_string = true,
                _ => {}
            }
            Ok(false)
        }
    }
}

/// Refuses a document over `DOCUMENT_BYTES_MAX`.
fn check_size(document: &Document) -> Result<(), InputError> {
    if document.text.len() <= DOCUMENT_BYTES_MAX {
        return Ok(());
    }
    let message = format!("the document starting here is over {} MiB (DOCUMENT_BYTES_MAX)", DOCUMENT_BYTES_MAX >> 20);
    Err(InputError { line: document.line, column: document.column, message })
}

/// Checks that the document is well-formed JSON; an error names its place in the file.
fn check_syntax(document: &Document) -> Result<(), InputError> {
    let Err(error) = serde_json::from_slice::<serde::de::IgnoredAny>(&document.text) else {
        return Ok(());
    };
    // serde_json counts from the document's first byte: move its position to the file's.
    let (line, column) = match error.line() {
        0 | 1 => (document.line, document.column + error.column().saturating_sub(1)),
        line => (document.line + line - 1, error.column()),
    };
    let text = error.to_string();
    let reason = text.rsplit_once(" at line ").map_or(text.as_str(), |(reason, _)| reason);
    let hint = if error.classify() == serde_json::error::Category::Eof {
        " (in JSON Lines each document is on one line; or give one JSON array)"
    } else {
        ""
    };
    Err(InputError { line, column, message: format!("invalid JSON: {reason}{hint}") })
}

/// Checks that the namespace exists; creates it when asked to.
fn ensure_namespace(client: &mut Client, job: &Import<'_>, first: &[u8], line: usize) -> Result<(), String> {
    client.send(&[b"DOC.NSINFO", job.namespace.as_bytes()]);
    client.flush()?;
    let missing = match client.read() {
        Ok(_) => return Ok(()),
        // By the code word the error leads with (DOC.* errors are in TEXT form here).
        Err(error) if error.starts_with("NOT_FOUND ") => error,
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

/// How an export ended.
#[derive(Debug, PartialEq)]
pub enum Exported {
    /// Every document was written: how many.
    All(u64),
    /// The reader of the output went away (`hotset export | head`): a normal end.
    OutputClosed,
}

/// Writes every document of a namespace as JSON Lines to `out`.
pub fn export(client: &mut Client, namespace: &str, out: &mut dyn Write) -> Result<Exported, String> {
    client.send(&[b"DOC.NSINFO", namespace.as_bytes()]);
    client.flush()?;
    let documents = match client.read()? {
        Reply::Bulk(info) => serde_json::from_slice::<serde_json::Value>(&info)
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
            Reply::Array(mut parts) if parts.len() == 2 => match (parts.remove(0), parts.remove(0)) {
                (Reply::Bulk(next), Reply::Array(docs)) => (String::from_utf8_lossy(&next).into_owned(), docs),
                _ => return Err("unexpected reply to DOC.SCAN".into()),
            },
            _ => return Err("unexpected reply to DOC.SCAN".into()),
        };
        for doc in docs {
            let Reply::Bulk(doc) = doc else { return Err("unexpected document in DOC.SCAN's reply".into()) };
            if !output(out.write_all(&doc).and_then(|()| out.write_all(b"\n")))? {
                bar.abandon();
                return Ok(Exported::OutputClosed);
            }
            written += 1;
            bar.inc(1);
        }
        if next == "0" {
            break;
        }
        cursor = next;
    }
    if !output(out.flush())? {
        bar.abandon();
        return Ok(Exported::OutputClosed);
    }
    bar.finish();
    Ok(Exported::All(written))
}

/// Whether a write went through: `false` when the output's reader has gone (a broken
/// pipe), an error for anything else.
fn output(result: std::io::Result<()>) -> Result<bool, String> {
    match result {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(false),
        Err(error) => Err(format!("writing: {error}")),
    }
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
fn bar(total: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(ProgressStyle::with_template(template).expect("a valid template").progress_chars("=> "));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every document of `input` read through a buffer of `capacity` bytes, as (text, line,
    /// column), or the first error.
    fn read_all(input: &str, capacity: usize) -> Result<Vec<(String, usize, usize)>, String> {
        let mut documents = Documents::new(BufReader::with_capacity(capacity, input.as_bytes())).unwrap();
        let mut all = Vec::new();
        while let Some(document) = documents.next().map_err(|e| e.to_string())? {
            all.push((String::from_utf8(document.text).unwrap(), document.line, document.column));
        }
        assert_eq!(documents.bytes_read, input.len() as u64, "every byte is counted once");
        Ok(all)
    }

    #[test]
    fn arrays_split_into_their_elements_at_any_buffer_size() {
        let input = "[ {\"a\": \"x,]}\\\"[\"},\n  [1, {\"b\": []}] ,\"s\\\\\",-2.5e3,\r\n{}\n]\n";
        let expected = vec![
            ("{\"a\": \"x,]}\\\"[\"}".to_string(), 1, 3),
            ("[1, {\"b\": []}]".to_string(), 2, 3),
            ("\"s\\\\\"".to_string(), 2, 19),
            ("-2.5e3".to_string(), 2, 25),
            ("{}".to_string(), 3, 1),
        ];
        for capacity in [1, 2, 3, 7, 64, 1 << 20] {
            assert_eq!(read_all(input, capacity), Ok(expected.clone()), "a buffer of {capacity} bytes");
        }
        assert_eq!(read_all("[]", 1), Ok(vec![]));
        assert_eq!(read_all("\u{feff}[{}]", 8), Ok(vec![("{}".to_string(), 1, 2)]));
    }

    #[test]
    fn broken_arrays_name_the_place() {
        let error = |input: &str| read_all(input, 4).unwrap_err();
        assert_eq!(error("[{\"a\": 1}"), "line 1, column 10: the file ends before the array's closing `]`");
        assert_eq!(error("[\n{\"a\": [1}]"), "line 2, column 9: invalid JSON: expected `,` or `]`");
        assert_eq!(error("[{\"a\": 1},]"), "line 1, column 11: expected a document before `]`");
        assert_eq!(error("[,]"), "line 1, column 2: expected a document before `,`");
        assert_eq!(error("[1 2]"), "line 1, column 4: expected `,` or `]` after a document, found `2`");
        assert_eq!(error("[}]"), "line 1, column 2: unexpected `}`");
        assert_eq!(error("[1] 2"), "line 1, column 5: unexpected `2` after the array's closing `]`");
    }

    #[test]
    fn json_lines_skip_blank_lines_and_name_positions() {
        let input = "{\"a\": 1}\n\n   \t\n  {\"b\": 2}  \r\n";
        assert_eq!(read_all(input, 3), Ok(vec![("{\"a\": 1}".into(), 1, 1), ("{\"b\": 2}".into(), 4, 3)]));
        let error = read_all("{\"a\": 1}\n\n  {\"b\" 2}\n", 64).unwrap_err();
        assert_eq!(error, "line 3, column 8: invalid JSON: expected `:`");
        let error = read_all("{\n\"a\": 1}\n", 64).unwrap_err();
        assert!(
            error.starts_with("line 1, column 1: invalid JSON: EOF while parsing an object (in JSON Lines"),
            "{error}"
        );
    }
}
