//! FUNCTION DUMP and RESTORE: the libraries as one payload of our own format, and the three
//! restore policies.
//!
//! The payload (all integers little-endian):
//!
//! ```text
//! "HSFN" | version u16 (1) | count u32 | count × (code length u32 | code bytes) | CRC-32 u32
//! ```
//!
//! Each code is a whole library, shebang included, so restoring is loading. The CRC-32 (IEEE)
//! covers every byte before it. This module must never link a restored library before every
//! library of the payload has loaded and the policy's checks have passed: a failed RESTORE
//! changes nothing.

use crate::errors::ScriptError;
use crate::functions::{Functions, Library};

const MAGIC: &[u8; 4] = b"HSFN";
const VERSION: u16 = 1;

/// How RESTORE treats libraries already loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestorePolicy {
    /// Delete every loaded library first.
    Flush,
    /// Add the payload's libraries; fail if one of them is already loaded. The default.
    #[default]
    Append,
    /// Add the payload's libraries, replacing loaded ones of the same name.
    Replace,
}

impl RestorePolicy {
    /// The policy named by RESTORE's last argument.
    pub fn from_argument(argument: &[u8]) -> Result<RestorePolicy, ScriptError> {
        if argument.eq_ignore_ascii_case(b"flush") {
            Ok(RestorePolicy::Flush)
        } else if argument.eq_ignore_ascii_case(b"append") {
            Ok(RestorePolicy::Append)
        } else if argument.eq_ignore_ascii_case(b"replace") {
            Ok(RestorePolicy::Replace)
        } else {
            Err(ScriptError::Function(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.".into(),
            ))
        }
    }
}

/// The payload for `codes`.
pub fn encode<'a>(codes: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(MAGIC);
    payload.extend_from_slice(&VERSION.to_le_bytes());
    payload.extend_from_slice(&u32::try_from(codes.len()).expect("fewer than 2^32 libraries").to_le_bytes());
    for code in codes {
        payload.extend_from_slice(&u32::try_from(code.len()).expect("a library's code is under 4 GiB").to_le_bytes());
        payload.extend_from_slice(code);
    }
    let checksum = crc32(&payload);
    payload.extend_from_slice(&checksum.to_le_bytes());
    payload
}

fn bad_payload() -> ScriptError {
    ScriptError::Function("ERR DUMP payload version or checksum are wrong".into())
}

/// The library codes in `payload`, or Redis' error for a payload it would not accept.
pub fn decode(payload: &[u8]) -> Result<Vec<Vec<u8>>, ScriptError> {
    let header = MAGIC.len() + 2 + 4;
    if payload.len() < header + 4 || &payload[..4] != MAGIC {
        return Err(bad_payload());
    }
    let (body, checksum) = payload.split_at(payload.len() - 4);
    if crc32(body).to_le_bytes() != checksum || u16::from_le_bytes([body[4], body[5]]) != VERSION {
        return Err(bad_payload());
    }
    let count = u32::from_le_bytes(body[6..10].try_into().expect("four bytes")) as usize;
    let mut codes = Vec::with_capacity(count.min(body.len() / 4));
    let mut offset = header;
    for _ in 0..count {
        let length_bytes = body.get(offset..offset + 4).ok_or_else(truncated)?;
        let length = u32::from_le_bytes(length_bytes.try_into().expect("four bytes")) as usize;
        offset += 4;
        let code = body.get(offset..offset.checked_add(length).ok_or_else(truncated)?).ok_or_else(truncated)?;
        codes.push(code.to_vec());
        offset += length;
    }
    if offset != body.len() {
        return Err(truncated());
    }
    Ok(codes)
}

fn truncated() -> ScriptError {
    ScriptError::Function("ERR failed loading the given functions payload".into())
}

/// Loads every library of `codes`, then adds them by `policy`; all or nothing.
pub(crate) fn restore(functions: &mut Functions, codes: &[Vec<u8>], policy: RestorePolicy) -> Result<(), ScriptError> {
    let mut incoming: Vec<Library> = Vec::with_capacity(codes.len());
    for code in codes {
        let library = functions.build(code)?;
        if incoming.iter().any(|other| other.name == library.name) {
            return Err(ScriptError::Function(format!("ERR Library {} already exists", library.name)));
        }
        incoming.push(library);
    }
    if let Some(clash) = first_clash_within(&incoming) {
        return Err(ScriptError::Function(format!("ERR Function {clash} already exists")));
    }
    match policy {
        RestorePolicy::Flush => {
            functions.take_all();
            for library in incoming {
                functions.link(library);
            }
            Ok(())
        }
        RestorePolicy::Append | RestorePolicy::Replace => join(functions, incoming, policy == RestorePolicy::Replace),
    }
}

/// A function name two incoming libraries both register.
fn first_clash_within(libraries: &[Library]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    for library in libraries {
        for function in &library.functions {
            if !seen.insert(function.name.to_ascii_lowercase()) {
                return Some(function.name.clone());
            }
        }
    }
    None
}

fn join(functions: &mut Functions, incoming: Vec<Library>, replace: bool) -> Result<(), ScriptError> {
    let mut replaced = Vec::new();
    let mut failure = None;
    for library in &incoming {
        if functions.contains_library(&library.name) {
            if !replace {
                failure = Some(ScriptError::Function(format!("ERR Library {} already exists", library.name)));
                break;
            }
            replaced.extend(functions.unlink(&library.name));
        }
    }
    if failure.is_none() {
        failure = incoming.iter().find_map(|library| functions.check_collisions(library, None).err());
    }
    if let Some(failure) = failure {
        // Put back what was taken out for replacement.
        for library in replaced {
            functions.link(library);
        }
        return Err(failure);
    }
    for library in incoming {
        functions.link(library);
    }
    Ok(())
}

/// CRC-32 (IEEE 802.3, reflected, as zlib computes it).
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_zlib() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn payload_round_trips_and_refuses_damage() {
        let codes: Vec<&[u8]> = vec![b"#!lua name=a\ncode", b""];
        let payload = encode(codes.iter().copied());
        assert_eq!(decode(&payload).unwrap(), vec![b"#!lua name=a\ncode".to_vec(), Vec::new()]);
        for damaged in [&payload[..payload.len() - 1], &payload[1..], b"HSFN"] {
            assert!(decode(damaged).is_err());
        }
        let mut flipped = payload.clone();
        flipped[12] ^= 1;
        assert_eq!(decode(&flipped).unwrap_err().to_string(), "ERR DUMP payload version or checksum are wrong");
        assert_eq!(RestorePolicy::from_argument(b"Replace").unwrap(), RestorePolicy::Replace);
        assert!(RestorePolicy::from_argument(b"merge").is_err());
    }
}
