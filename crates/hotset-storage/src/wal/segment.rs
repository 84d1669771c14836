//! Segment files: their names, their header, and listing them in lsn order.
//!
//! ```text
//! <dir>/<first_lsn as 20 decimal digits>.wal
//! offset 0          8              16
//!        | HSWAL001 | first_lsn u64 LE | frames, lsns first_lsn, first_lsn + 1, ...
//! ```
//!
//! Owns: the file-name scheme, the 16-byte header, [`list_segments`].
//!
//! Never: reads frames (that is `replay`) or writes them (that is the writer).
//!
//! Invariants: a segment's name and its header carry the same first lsn; zero-padded names
//! sort in lsn order. Files that do not follow the scheme (such as `*.wal.corrupt`) are not
//! segments and are ignored.

use std::io;
use std::path::{Path, PathBuf};

use super::WalError;
use crate::disk::Disk;
use crate::frame::u64_at;

/// Bytes of the segment header: magic, then the first lsn.
pub const SEGMENT_HEADER_BYTES: usize = 16;
/// The segment header's first 8 bytes (the version is part of the magic).
pub const SEGMENT_MAGIC: &[u8; 8] = b"HSWAL001";
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

/// The header of a segment starting at `first_lsn`.
pub fn encode_header(first_lsn: u64) -> [u8; SEGMENT_HEADER_BYTES] {
    let mut header = [0; SEGMENT_HEADER_BYTES];
    header[..8].copy_from_slice(SEGMENT_MAGIC);
    header[8..].copy_from_slice(&first_lsn.to_le_bytes());
    header
}

/// Checks a segment's header against the first lsn its name claims.
pub fn check_header(bytes: &[u8], named_first_lsn: u64) -> Result<(), String> {
    if bytes.len() < SEGMENT_HEADER_BYTES {
        return Err(format!("segment header cut short at {} of {SEGMENT_HEADER_BYTES} bytes", bytes.len()));
    }
    if &bytes[..8] != SEGMENT_MAGIC {
        return Err("segment header has the wrong magic".to_owned());
    }
    let first_lsn = u64_at(bytes, 8);
    if first_lsn != named_first_lsn {
        return Err(format!("segment header says first lsn {first_lsn}, its name says {named_first_lsn}"));
    }
    Ok(())
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

    #[test]
    fn header_checks() {
        let header = encode_header(7);
        assert_eq!(check_header(&header, 7), Ok(()));
        assert!(check_header(&header, 8).unwrap_err().contains("name says 8"));
        assert!(check_header(&header[..15], 7).unwrap_err().contains("cut short"));
        let mut wrong = header;
        wrong[0] = b'X';
        assert!(check_header(&wrong, 7).unwrap_err().contains("magic"));
    }
}
