//! Readers of the JSON text the text interfaces share (RESP's `DOC.*` arguments, HTTP
//! bodies and paths): so a namespace definition, a document, a key or a query given as
//! text is read one way, refused with one code, whichever door it came through.
//!
//! Owns: JSON with the code of what it should have been, keys from text, index lists,
//! names, and the scan step's bounds. Never: the engine's checks (a definition's fields,
//! a document's key): those run when the request is applied.

use crate::Refusal;
use hotset_core::IndexDef;
use hotset_core::error::ErrorCode;
use serde_json::Value;

/// Documents a scan step returns when not told, and the most it returns.
pub const SCAN_COUNT_DEFAULT: usize = 100;
/// The most documents a scan step returns.
pub const SCAN_COUNT_MAX: usize = 100_000;

/// `text` as JSON; `what` names it in the message, `code` says what text that does not
/// parse is (`schema` for definitions, `bad_document`, `bad_query`).
pub fn json(text: &[u8], what: &str, code: ErrorCode) -> Result<Value, Refusal> {
    serde_json::from_slice(text).map_err(|e| Refusal::request(code, format!("{what} is not valid JSON: {e}")))
}

/// A key given as text: JSON when it parses (numbers, arrays for composite keys, quoted
/// strings), the text itself as a string otherwise.
pub fn key(text: &[u8]) -> Value {
    serde_json::from_slice(text).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(text).into_owned()))
}

/// A namespace's or index's name given as bytes.
pub fn name(text: &[u8]) -> Result<String, Refusal> {
    String::from_utf8(text.to_vec()).map_err(|_| Refusal::bad_request("names must be UTF-8"))
}

/// A list of index definitions (a JSON array of objects, as `IndexDef::from_json` reads).
pub fn index_defs(defs: &Value) -> Result<Vec<IndexDef>, Refusal> {
    match defs {
        Value::Array(defs) => Ok(defs.iter().map(IndexDef::from_json).collect::<Result<Vec<_>, _>>()?),
        _ => Err(Refusal::request(ErrorCode::Schema, "the index definitions must be a JSON list")),
    }
}

/// One index definition given as JSON text.
pub fn index_def(text: &[u8]) -> Result<IndexDef, Refusal> {
    Ok(IndexDef::from_json(&json(text, "the index definition", ErrorCode::Schema)?)?)
}
