//! Snapshot files (`hotset_storage::snapshot::load`) read through an in-memory `Disk`.
//!
//! The first input byte picks how the rest becomes a file:
//! - even: the rest is the file, byte for byte (magic, framing, lengths and checksums
//!   as the fuzzer leaves them; the seeds are real snapshots);
//! - odd: the rest is records separated by `crate::SEPARATOR`: the header payload,
//!   change blocks, and the footer payload, each put in a frame with a valid checksum at
//!   its position, so the fuzzer reaches the checks behind the checksum.
//!
//! Checks: loading returns Ok or an error, never panics; a snapshot that loads leaves a
//! database whose indexes agree, and writing that database as a snapshot and loading it
//! again gives the same contents.

use crate::{MemDisk, check_database, empty_database, split_records};
use hotset_storage::frame::encode_frame;
use hotset_storage::snapshot;
use std::path::{Path, PathBuf};

const MAGIC: &[u8] = b"HSSNAP02";

/// One input of the target.
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let file = if mode % 2 == 0 { rest.to_vec() } else { framed(rest) };
    let dir = Path::new("/snapshots");
    let path = dir.join(snapshot::file_name(start_lsn(&file)));
    let disk = MemDisk::new();
    disk.put(&path, file);
    let db = empty_database();
    let Ok(info) = snapshot::load(&disk, &path, &db, &mut |_, _| {}) else { return };
    assert_eq!(info.path, path);
    check_database(&db, "after loading a snapshot");
    check_rewrite(&db, info.start_lsn);
}

/// The magic, then each record in a frame numbered by its position.
fn framed(rest: &[u8]) -> Vec<u8> {
    let mut file = MAGIC.to_vec();
    for (position, record) in (1..).zip(split_records(rest)) {
        encode_frame(&mut file, position, &mut |out| out.extend_from_slice(record));
    }
    file
}

/// The start lsn the header frame claims, if the file gets that far (so the file name
/// matches it and loading goes on), else 1.
fn start_lsn(file: &[u8]) -> u64 {
    // magic (8), frame header (16), header kind (1), start lsn (8).
    file.get(25..33).map_or(1, |bytes| u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
}

/// The loaded database written as a snapshot loads back the same.
fn check_rewrite(db: &hotset_core::Database, start_lsn: u64) {
    let disk = MemDisk::new();
    let dir = PathBuf::from("/again");
    let info = snapshot::write(&disk, &dir, db, start_lsn, &mut || Ok(start_lsn), &Default::default())
        .unwrap_or_else(|e| panic!("writing the loaded database as a snapshot: {e}"));
    let copy = empty_database();
    snapshot::load(&disk, &info.path, &copy, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("a snapshot just written does not load: {e}"));
    assert_eq!(hotset_testkit::durable::dump(&copy), hotset_testkit::durable::dump(db), "a rewritten snapshot differs");
}
