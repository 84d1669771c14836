//! Snapshot files: the whole database as checksummed frames, written beside the log.
//!
//! ```text
//! snapshots/<start lsn, 20 digits>.snap
//!   magic b"HSSNAP02"      `HSSNAP`, then the format version in 2 decimal digits
//!   frame 1        payload: 0xF0, start_lsn u64 LE, created_unix_ms u64 LE
//!   frames 2..n-1  payload: one encoded change each (a namespace, a chunk of documents,
//!                  a keyspace, a chunk of keys), as `hotset_core::change` defines
//!   frame n        payload: 0xF1, end_lsn u64 LE, change frames u64 LE
//! ```
//! Frames use the WAL's layout (`frame.rs`) with the frame's position (1, 2, …) in the
//! lsn field, so a frame moved or lost is a mismatch. `start_lsn` is the journal's next
//! lsn when the copy began (replay starts there); `end_lsn` its next lsn when the copy
//! ended (records below it may meet a newer state and replay in fuzzy mode).
//!
//! The version in the magic is the format of the blocks' payloads
//! (`hotset_core::change::Format`: 1, index definitions as JSON; 2, binary). A snapshot is
//! written in `Format::CURRENT` and read in the format its magic names; one in a format this
//! build does not read is refused ([`SnapshotError::UnsupportedFormat`]), never passed over
//! as damaged: an older snapshot plus the log would then be a state the folder never had.
//!
//! Owns: writing a snapshot to `<name>.tmp`, fsyncing it, renaming it into place and
//! fsyncing the folder; reading one back, checking every frame; listing and retiring old
//! snapshots. Never: rename a file into place before it is complete and durable, or
//! apply a snapshot block before the frame around it checked out.

use crate::disk::Disk;
use crate::frame::{FRAME_HEADER_BYTES, FRAME_PAYLOAD_BYTES_MAX, FrameRead, encode_frame, read_frame};
use crate::lanes::{self, Router};
use hotset_core::change::Format;
use hotset_core::{Database, SnapshotCounts};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The magic's first 6 bytes; 2 decimal digits of the format version follow.
const MAGIC_PREFIX: &[u8; 6] = b"HSSNAP";
const MAGIC_BYTES: usize = 8;
const META: u8 = 0xF0;
const FOOTER: u8 = 0xF1;
/// Frames are gathered up to this many bytes before one write.
const WRITE_BUFFER_BYTES: usize = 4 << 20;

/// A snapshot file that checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub path: PathBuf,
    pub start_lsn: u64,
    pub end_lsn: u64,
    pub bytes: u64,
    pub counts: SnapshotCounts,
    pub duration_ms: u64,
}

/// Why a snapshot could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: io::Error },
    #[error(
        "snapshot {path} is damaged at byte {offset}: {reason}. Move the file away to start from the \
         previous snapshot (if the log still reaches back to it)"
    )]
    Corrupt { path: PathBuf, offset: u64, reason: String },
    #[error("snapshot {path}: a block at byte {offset} does not apply: {source}")]
    Apply { path: PathBuf, offset: u64, source: Box<hotset_core::Error> },
    /// The magic names a format version this build does not read (a newer build wrote it).
    #[error(
        "snapshot {path} is in format version {version}, which this build does not read (it reads \
         versions {readable}); open the folder with the build that wrote it, or a newer one"
    )]
    UnsupportedFormat { path: PathBuf, version: u32, readable: String },
    #[error("snapshot aborted: {0}")]
    Aborted(String),
}

/// Test and operations hooks around snapshot writing.
#[derive(Clone, Default)]
pub struct SnapshotHooks {
    /// Called after each write of frames to the temporary file, with the bytes written
    /// so far (the crash tests stop the process here to leave a partial file).
    pub after_write: Option<Arc<dyn Fn(u64) + Send + Sync>>,
}

impl std::fmt::Debug for SnapshotHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotHooks").field("after_write", &self.after_write.is_some()).finish()
    }
}

/// The magic of a snapshot in format `version` (`HSSNAP02` for 2).
pub fn magic(version: u32) -> [u8; MAGIC_BYTES] {
    assert!(version <= 99, "a snapshot's version has two digits");
    let mut magic = [0; MAGIC_BYTES];
    magic[..6].copy_from_slice(MAGIC_PREFIX);
    magic[6..].copy_from_slice(format!("{version:02}").as_bytes());
    magic
}

/// The format a snapshot's magic names: `Err` with the reason for a file that is no
/// snapshot, or the unreadable version.
fn check_magic(path: &Path, magic: &[u8]) -> Result<Format, SnapshotError> {
    let digits = &magic[MAGIC_PREFIX.len()..];
    if &magic[..MAGIC_PREFIX.len()] != MAGIC_PREFIX || !digits.iter().all(u8::is_ascii_digit) {
        return Err(SnapshotError::Corrupt { path: path.into(), offset: 0, reason: "not a snapshot file".into() });
    }
    let version = digits.iter().fold(0, |number, digit| number * 10 + u32::from(digit - b'0'));
    Format::from_number(version).ok_or_else(|| SnapshotError::UnsupportedFormat {
        path: path.into(),
        version,
        readable: Format::readable_list(),
    })
}

/// The file name of the snapshot starting at `start_lsn`.
pub fn file_name(start_lsn: u64) -> String {
    format!("{start_lsn:020}.snap")
}

/// The start lsn a snapshot file name carries, if it is one.
pub fn parse_name(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let digits = name.strip_suffix(".snap")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok())?
}

/// Snapshots in `dir`, newest (highest start lsn) first.
pub fn list(disk: &dyn Disk, dir: &Path) -> Result<Vec<(u64, PathBuf)>, SnapshotError> {
    let files = disk.list(dir).map_err(|source| SnapshotError::Io { op: "list", path: dir.into(), source })?;
    let mut found: Vec<(u64, PathBuf)> = files.into_iter().filter_map(|p| parse_name(&p).map(|lsn| (lsn, p))).collect();
    found.sort_by_key(|(lsn, _)| std::cmp::Reverse(*lsn));
    Ok(found)
}

/// Writes a snapshot of `db` whose copy starts now; `start_lsn` is the journal's next lsn
/// at this moment, `finish` is called once the copy is done and returns the end lsn after
/// making every record below it durable (so a crash after the rename cannot lose records
/// whose effects the snapshot already holds).
pub fn write(
    disk: &dyn Disk,
    dir: &Path,
    db: &Database,
    start_lsn: u64,
    finish: &mut dyn FnMut() -> Result<u64, String>,
    hooks: &SnapshotHooks,
) -> Result<SnapshotInfo, SnapshotError> {
    let started = Instant::now();
    let path = dir.join(file_name(start_lsn));
    let temporary = dir.join(format!("{}.tmp", file_name(start_lsn)));
    let io = |op: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| SnapshotError::Io { op, path, source }
    };
    let mut file = disk.create(&temporary).map_err(io("create", &temporary))?;
    let mut buffer = Vec::with_capacity(WRITE_BUFFER_BYTES + (1 << 20));
    buffer.extend_from_slice(&magic(Format::CURRENT.number()));
    let created_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    encode_frame(&mut buffer, 1, &mut |out| {
        out.push(META);
        out.extend_from_slice(&start_lsn.to_le_bytes());
        out.extend_from_slice(&created_ms.to_le_bytes());
    });
    let mut frames = 1u64;
    let mut written = 0u64;
    let mut flush = |buffer: &mut Vec<u8>, file: &mut Box<dyn crate::disk::DiskFile>| -> Result<(), SnapshotError> {
        file.write_all(buffer).map_err(io("write", &temporary))?;
        written += buffer.len() as u64;
        buffer.clear();
        if let Some(hook) = &hooks.after_write {
            hook(written);
        }
        Ok(())
    };
    let result = db.write_snapshot(&mut |payload: &[u8]| {
        frames += 1;
        encode_frame(&mut buffer, frames, &mut |out| out.extend_from_slice(payload));
        if buffer.len() >= WRITE_BUFFER_BYTES { flush(&mut buffer, &mut file) } else { Ok(()) }
    });
    let outcome = result.and_then(|counts| {
        let end_lsn = finish().map_err(SnapshotError::Aborted)?;
        encode_frame(&mut buffer, frames + 1, &mut |out| {
            out.push(FOOTER);
            out.extend_from_slice(&end_lsn.to_le_bytes());
            out.extend_from_slice(&(frames - 1).to_le_bytes());
        });
        flush(&mut buffer, &mut file)?;
        file.sync_data().map_err(io("fsync", &temporary))?;
        Ok((counts, end_lsn))
    });
    drop(file);
    let (counts, end_lsn) = match outcome {
        Ok(done) => done,
        Err(error) => {
            // Best effort: a leftover temporary file is removed at the next start anyway.
            let _ = disk.remove(&temporary);
            return Err(error);
        }
    };
    disk.rename(&temporary, &path).map_err(io("rename", &temporary))?;
    disk.sync_dir(dir).map_err(io("fsync", dir))?;
    Ok(SnapshotInfo {
        path,
        start_lsn,
        end_lsn,
        bytes: written,
        counts,
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// Reads frames one at a time from a stream, checking each.
struct FrameReader<'a> {
    input: Box<dyn Read + Send + 'a>,
    path: &'a Path,
    offset: u64,
    /// The file's length: no frame may claim more bytes than are left.
    total: u64,
    frame: Vec<u8>,
}

impl FrameReader<'_> {
    fn corrupt<T>(&self, offset: u64, reason: &str) -> Result<T, SnapshotError> {
        Err(SnapshotError::Corrupt { path: self.path.into(), offset, reason: reason.into() })
    }

    /// The next frame's payload (valid until the next call) and its offset.
    fn next(&mut self, expected: u64) -> Result<(u64, &[u8]), SnapshotError> {
        let at = self.offset;
        self.frame.resize(FRAME_HEADER_BYTES, 0);
        self.fill(0, at)?;
        let len = u32::from_le_bytes(self.frame[0..4].try_into().expect("4 bytes")) as usize;
        if len > FRAME_PAYLOAD_BYTES_MAX {
            return self.corrupt(at, "frame length over the limit");
        }
        // Checked before the buffer grows: a damaged length must not allocate (up to 1 GiB)
        // for bytes the file does not have.
        let left = self.total.saturating_sub(at + FRAME_HEADER_BYTES as u64);
        if len as u64 > left {
            return self.corrupt(at, &format!("the frame claims {len} bytes, the file has {left} left"));
        }
        self.frame.resize(FRAME_HEADER_BYTES + len, 0);
        self.fill(FRAME_HEADER_BYTES, at)?;
        self.offset += self.frame.len() as u64;
        match read_frame(&self.frame, 0) {
            FrameRead::Frame { lsn, payload, .. } if lsn == expected => Ok((at, payload)),
            FrameRead::Frame { .. } => self.corrupt(at, "frame out of sequence"),
            FrameRead::Corrupt(reason) => self.corrupt(at, reason),
            FrameRead::Incomplete => self.corrupt(at, "frame cut short"),
        }
    }

    fn fill(&mut self, from: usize, frame_at: u64) -> Result<(), SnapshotError> {
        match self.input.read_exact(&mut self.frame[from..]) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                self.corrupt(frame_at, "the file ends inside a frame")
            }
            Err(source) => Err(SnapshotError::Io { op: "read", path: self.path.into(), source }),
        }
    }
}

/// Loads a snapshot into `db` (which should be empty), checking every frame before
/// applying it; `progress(bytes_done, bytes_total)` is called now and then. Returns the
/// snapshot's description. Blocks are applied on recovery's lanes (`lanes.rs`): each
/// namespace and keyspace on one thread, in file order, several of them at once.
pub fn load(
    disk: &dyn Disk,
    path: &Path,
    db: &Database,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SnapshotInfo, SnapshotError> {
    let started = Instant::now();
    let (read, applied) = lanes::apply_in_lanes(db, |router| read_into(disk, path, router, progress));
    let Some((offset, source)) = applied.error else {
        // Until the lanes applied every block, not only until the reader got to the end.
        return read.map(|info| SnapshotInfo { duration_ms: started.elapsed().as_millis() as u64, ..info });
    };
    match read {
        // Damage before the block that failed is what a reader on one thread met first.
        Err(SnapshotError::Corrupt { offset: damaged, .. }) if damaged < offset => read,
        Err(error @ SnapshotError::Io { .. }) => Err(error),
        _ => Err(SnapshotError::Apply { path: path.into(), offset, source: Box::new(source) }),
    }
}

/// Reads the snapshot's frames, checking each, and hands each block to `router` tagged
/// with its offset; stops early (`Aborted`) once the router says a block failed.
fn read_into(
    disk: &dyn Disk,
    path: &Path,
    router: &mut Router<'_>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SnapshotInfo, SnapshotError> {
    let started = Instant::now();
    let io = |op: &'static str| move |source| SnapshotError::Io { op, path: path.into(), source };
    let total = disk.file_len(path).map_err(io("stat"))?;
    let mut input = disk.open_read(path).map_err(io("open"))?;
    let mut magic = [0u8; MAGIC_BYTES];
    if input.read_exact(&mut magic).is_err() {
        return Err(SnapshotError::Corrupt { path: path.into(), offset: 0, reason: "not a snapshot file".into() });
    }
    let format = check_magic(path, &magic)?;
    let mut reader = FrameReader { input, path, offset: MAGIC_BYTES as u64, total, frame: Vec::new() };
    let (at, meta) = reader.next(1)?;
    if meta.len() != 17 || meta[0] != META {
        return reader.corrupt(at, "the first frame is not the snapshot header");
    }
    let start_lsn = u64::from_le_bytes(meta[1..9].try_into().expect("8 bytes"));
    if Some(start_lsn) != parse_name(path) {
        return reader.corrupt(at, "the start lsn does not match the file name");
    }
    let mut counts = SnapshotCounts::default();
    let mut last_progress = Instant::now();
    for position in 2.. {
        let (at, payload) = reader.next(position)?;
        if payload.first() == Some(&FOOTER) {
            if payload.len() != 17 || u64::from_le_bytes(payload[9..17].try_into().expect("8 bytes")) != position - 2 {
                return reader.corrupt(at, "the footer does not match the frames before it");
            }
            let end_lsn = u64::from_le_bytes(payload[1..9].try_into().expect("8 bytes"));
            progress(reader.offset, total);
            return Ok(SnapshotInfo {
                path: path.into(),
                start_lsn,
                end_lsn,
                bytes: reader.offset,
                counts,
                duration_ms: started.elapsed().as_millis() as u64,
            });
        }
        if !router.apply(at, payload, format, hotset_core::Replay::Exact) {
            return Err(SnapshotError::Aborted("a block before this one did not apply".into()));
        }
        counts.blocks += 1;
        counts.bytes += payload.len() as u64;
        if last_progress.elapsed().as_millis() >= 500 {
            progress(reader.offset, total);
            last_progress = Instant::now();
        }
    }
    unreachable!("the loop above only ends by returning")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::OsDisk;

    #[test]
    fn a_damaged_frame_length_is_refused_before_any_buffer_grows() {
        // What broke (found by the `snapshot_block` fuzz target): the reader sized its
        // buffer from a frame's length field before checking it against the file, so a
        // 29-byte file whose first length read 1 GiB made recovery allocate and zero 1 GiB,
        // then report "the file ends inside a frame". It must be refused from the length.
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join(file_name(1));
        let mut bytes = magic(Format::CURRENT.number()).to_vec();
        bytes.extend_from_slice(&(1u32 << 30).to_le_bytes());
        bytes.extend_from_slice(&[0; 17]);
        std::fs::write(&path, &bytes).expect("write the file");
        let error = load(&OsDisk, &path, &Database::new(), &mut |_, _| {}).expect_err("a damaged snapshot");
        match error {
            SnapshotError::Corrupt { offset, reason, .. } => {
                assert_eq!(offset, 8);
                assert_eq!(reason, "the frame claims 1073741824 bytes, the file has 5 left");
            }
            other => panic!("expected a damaged snapshot, got {other}"),
        }
    }

    #[test]
    fn the_version_in_the_magic_picks_the_format() {
        let path = Path::new("x.snap");
        assert_eq!(&magic(2), b"HSSNAP02");
        assert_eq!(check_magic(path, b"HSSNAP01").unwrap(), Format::V1);
        assert_eq!(check_magic(path, b"HSSNAP02").unwrap(), Format::V2);
        for (bytes, version) in [(b"HSSNAP99", 99), (b"HSSNAP00", 0), (b"HSSNAP03", 3)] {
            match check_magic(path, bytes) {
                Err(SnapshotError::UnsupportedFormat { version: found, readable, .. }) => {
                    assert_eq!((found, readable.as_str()), (version, "1, 2"));
                }
                other => panic!("{other:?}"),
            }
        }
        for bytes in [b"HSSNAPxx", b"HSWAL002", b"\0\0\0\0\0\0\0\0"] {
            assert!(matches!(check_magic(path, bytes), Err(SnapshotError::Corrupt { .. })));
        }
    }
}
