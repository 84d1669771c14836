//! The WAL's error type: every way writing or replaying the log can fail, with its context.
//!
//! Owns: [`WalError`]. Never: a bare string without the file, offset or lsn at fault.

use std::io;
use std::path::PathBuf;

/// An operating error of the write-ahead log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
    /// A file operation failed.
    #[error("WAL {op} failed for {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A segment holds invalid bytes followed by valid records (or is not the last segment),
    /// so cutting it there would lose records that were written: recovery stops.
    #[error(
        "WAL corrupt in {} at byte offset {offset}: {reason}; to start anyway, keeping the records \
         before this offset, recover with RecoveryMode::TruncateCorrupt (it cuts this file there and \
         renames every later segment to *.corrupt)",
        file.display()
    )]
    Corrupt { file: PathBuf, offset: u64, reason: String },
    /// A segment's header names a format version this build does not read (a newer build
    /// wrote it). Recovery stops in every mode and changes no file: the records are not
    /// damaged, only unreadable here.
    #[error(
        "WAL segment {} is in format version {version}, which this build does not read (it reads \
         versions {readable}); open the folder with the build that wrote it, or a newer one",
        file.display()
    )]
    UnsupportedFormat { file: PathBuf, version: u32, readable: String },
    /// No segment holds the records `first_lsn..=last_lsn`, which replay needs.
    #[error(
        "WAL segment missing: no file holds records {first_lsn}..={last_lsn}; the next segment found \
         is {} (first lsn {next_first_lsn})",
        next_file.display()
    )]
    MissingSegment { first_lsn: u64, last_lsn: u64, next_file: PathBuf, next_first_lsn: u64 },
    /// The log is in its failed state and takes no writes.
    #[error("WAL unwritable: {reason}")]
    Unwritable { reason: String },
    /// The log's writer has stopped.
    #[error("WAL closed")]
    Closed,
    /// Replay's `apply` callback refused a record that checked out (a bug or a format
    /// mismatch, not damage: recovery stops in every mode and changes no file).
    #[error("WAL replay: record {lsn} in {} at byte offset {offset} does not apply: {reason}", file.display())]
    Apply { lsn: u64, file: PathBuf, offset: u64, reason: String },
    /// `Wal::start` was asked to write records that a segment on disk already holds or
    /// follows: starting would overwrite or misorder the log.
    #[error(
        "WAL start at lsn {next_lsn} conflicts with {}, which holds records at or after it; start \
         at the next_lsn that replay returned",
        file.display()
    )]
    StartConflict { next_lsn: u64, file: PathBuf },
}

impl WalError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> WalError {
        WalError::Io { op, path: path.into(), source }
    }
}
