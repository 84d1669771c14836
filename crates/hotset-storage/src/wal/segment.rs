//! Segment files: their names, their header, and listing them in lsn order.
//!
//! ```text
//! <dir>/<first_lsn as 20 decimal digits>.wal
//! offset 0          8              16
//!        | HSWAL002 | first_lsn u64 LE | frames, lsns first_lsn, first_lsn + 1, ...
//! ```
//! The magic is `HSWAL` and the format version as three decimal digits: the version of
//! `hotset_core::change` that the records' payloads are encoded in (1: index definitions
//! as JSON, 2: binary). A segment is written in `Format::CURRENT` only and read in the
//! format its header names; a version this build does not read is refused, naming it.
//!
//! Owns: the file-name scheme, the 16-byte header and the version in it, [`list_segments`].
//!
//! Never: reads frames (that is `replay`) or writes them (that is the writer).
//!
//! Invariants: a segment's name and its header carry the same first lsn; zero-padded names
//! sort in lsn order. Files that do not follow the scheme (such as `*.wal.corrupt`) are not
//! segments and are ignored.

use std::io;
use std::path::{Path, PathBuf};

use hotset_core::change::Format;

use super::WalError;
use crate::disk::Disk;
use crate::frame::u64_at;

/// Bytes of the segment header: magic, then the first lsn.
pub const SEGMENT_HEADER_BYTES: usize = 16;
/// The magic's first 5 bytes; 3 decimal digits of the format version follow.
pub const SEGMENT_MAGIC_PREFIX: &[u8; 5] = b"HSWAL";
/// The segment file extension.
const SEGMENT_EXTENSION: &str = "wal";
/// Digits of the first lsn in a segment's name: all of u64's range.
const NAME_DIGITS: usize = 20;

/// A segment file found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentFile {
    pub first_lsn: u64,
    pub path: PathBuf,
}

/// The path of the segment whose first record is `first_lsn`.
pub fn segment_path(dir: &Path, first_lsn: u64) -> PathBuf {
    dir.join(format!("{first_lsn:0NAME_DIGITS$}.{SEGMENT_EXTENSION}"))
}

/// The first lsn a segment's file name claims, or `None` if the file is not a segment.
pub fn parse_segment_name(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let digits = name.strip_suffix(SEGMENT_EXTENSION)?.strip_suffix('.')?;
    if digits.len() != NAME_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The 8-byte magic of a segment in format `version` (`HSWAL002` for 2).
pub fn segment_magic(version: u32) -> [u8; 8] {
    assert!(version <= 999, "a segment's version has three digits");
    let mut magic = [0; 8];
    magic[..5].copy_from_slice(SEGMENT_MAGIC_PREFIX);
    magic[5..].copy_from_slice(format!("{version:03}").as_bytes());
    magic
}

/// The header of a segment starting at `first_lsn`, in the format this build writes.
pub fn encode_header(first_lsn: u64) -> [u8; SEGMENT_HEADER_BYTES] {
    let mut header = [0; SEGMENT_HEADER_BYTES];
    header[..8].copy_from_slice(&segment_magic(Format::CURRENT.number()));
    header[8..].copy_from_slice(&first_lsn.to_le_bytes());
    header
}

/// Why a segment's header does not check out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderError {
    /// Cut short, wrong magic, or a first lsn its name contradicts: damage (or a torn
    /// header, if the segment is the last one).
    Invalid(String),
    /// A well-formed magic naming a format version this build does not read (a newer
    /// build wrote it): never damage, never cut, never read.
    Unsupported { version: u32 },
}

/// Checks a segment's header against the first lsn its name claims; returns the format
/// its records are in.
pub fn check_header(bytes: &[u8], named_first_lsn: u64) -> Result<Format, HeaderError> {
    if bytes.len() < SEGMENT_HEADER_BYTES {
        return Err(HeaderError::Invalid(format!(
            "segment header cut short at {} of {SEGMENT_HEADER_BYTES} bytes",
            bytes.len()
        )));
    }
    let digits = &bytes[5..8];
    if &bytes[..5] != SEGMENT_MAGIC_PREFIX || !digits.iter().all(u8::is_ascii_digit) {
        return Err(HeaderError::Invalid("segment header has the wrong magic".to_owned()));
    }
    let version = digits.iter().fold(0, |number, digit| number * 10 + u32::from(digit - b'0'));
    let format = Format::from_number(version).ok_or(HeaderError::Unsupported { version })?;
    let first_lsn = u64_at(bytes, 8);
    if first_lsn != named_first_lsn {
        return Err(HeaderError::Invalid(format!(
            "segment header says first lsn {first_lsn}, its name says {named_first_lsn}"
        )));
    }
    Ok(format)
}

/// The segments in `dir`, in lsn order. A missing directory holds no segments.
pub fn list_segments(disk: &dyn Disk, dir: &Path) -> Result<Vec<SegmentFile>, WalError> {
    let paths = match disk.list(dir) {
        Ok(paths) => paths,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(WalError::io("list", dir, error)),
    };
    let mut segments: Vec<SegmentFile> = paths
        .into_iter()
        .filter_map(|path| parse_segment_name(&path).map(|first_lsn| SegmentFile { first_lsn, path }))
        .collect();
    // Names are zero-padded, so this is the listing's order already; sorting by number does
    // not depend on that.
    segments.sort_by_key(|segment| segment.first_lsn);
    Ok(segments)
}

/// Where a segment is moved when recovery cuts the log before it.
pub fn corrupt_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".corrupt");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort_by_lsn() {
        let dir = Path::new("/x");
        let path = segment_path(dir, 42);
        assert_eq!(path, Path::new("/x/00000000000000000042.wal"));
        assert_eq!(parse_segment_name(&path), Some(42));
        assert_eq!(parse_segment_name(&segment_path(dir, u64::MAX)), Some(u64::MAX));
        assert!(segment_path(dir, 9) < segment_path(dir, 10));
    }

    #[test]
    fn other_files_are_not_segments() {
        for name in [
            "42.wal",
            "00000000000000000042.wal.corrupt",
            "0000000000000000004x.wal",
            "snapshot",
            "99999999999999999999.wal",
        ] {
            assert_eq!(parse_segment_name(Path::new(name)), None, "{name}");
        }
    }

    fn invalid(result: Result<Format, HeaderError>) -> String {
        match result {
            Err(HeaderError::Invalid(reason)) => reason,
            other => panic!("expected an invalid header, got {other:?}"),
        }
    }

    #[test]
    fn header_checks() {
        let header = encode_header(7);
        assert_eq!(&header[..8], b"HSWAL002");
        assert_eq!(check_header(&header, 7), Ok(Format::CURRENT));
        assert!(invalid(check_header(&header, 8)).contains("name says 8"));
        assert!(invalid(check_header(&header[..15], 7)).contains("cut short"));
        let mut wrong = header;
        wrong[0] = b'X';
        assert!(invalid(check_header(&wrong, 7)).contains("magic"));
        wrong = header;
        wrong[6] = b'x';
        assert!(invalid(check_header(&wrong, 7)).contains("magic"));
    }

    #[test]
    fn the_version_in_the_magic_picks_the_format() {
        let mut header = encode_header(7);
        header[..8].copy_from_slice(b"HSWAL001");
        assert_eq!(check_header(&header, 7), Ok(Format::V1));
        for (magic, version) in [(b"HSWAL099", 99), (b"HSWAL000", 0), (b"HSWAL003", 3)] {
            header[..8].copy_from_slice(magic);
            assert_eq!(check_header(&header, 7), Err(HeaderError::Unsupported { version }));
        }
        assert_eq!(&segment_magic(1), b"HSWAL001");
    }
}
