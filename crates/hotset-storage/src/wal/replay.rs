//! Replay: reads the segments from an lsn on, hands every record to the caller, and repairs
//! what a crash can leave behind.
//!
//! Owns: the scan of segments and frames and the rules that tell a torn tail (cut it, go on)
//! from corruption (stop, or cut and set the rest aside in `TruncateCorrupt` mode):
//!
//! - Segments wholly before `from_lsn` are skipped unread; the first segment read must start
//!   at or before `from_lsn`, and each next one right after the previous one's last record,
//!   else a segment is missing.
//! - The first invalid frame (incomplete, bad checksum, oversize length, unexpected lsn) at
//!   offset O of the **last** segment is a torn tail when no frame that checks out, with one
//!   of the lsns that would follow, exists anywhere after O: a crash cut the last write
//!   short. The file is cut at O.
//! - Anything else is corruption: valid records after the bad bytes (a flipped bit, not a
//!   crash, put them there), or any invalid frame or header in a segment that is not the
//!   last one.
//!
//! Each record goes to `apply` with the format of its segment (from the segment's header);
//! a segment whose header names a format this build does not read stops replay with
//! [`WalError::UnsupportedFormat`] in every mode, before anything of it is applied or cut.
//!
//! Never: skips a record, applies one twice or out of order, applies a record that did not
//! check out, or changes a file in `Strict` mode except to cut a torn tail.
//!
//! Invariants: records are applied with consecutive lsns; `next_lsn` is one past the last
//! valid record (or `from_lsn`, if greater).

use std::path::{Path, PathBuf};

use hotset_core::change::Format;

use super::segment::{self, HeaderError, SEGMENT_HEADER_BYTES, SegmentFile};
use super::{WalError, WalOptions};
use crate::disk::Disk;
use crate::frame::{self, FRAME_HEADER_BYTES, FrameRead};

/// Report progress at least this often, counted in records...
const PROGRESS_RECORDS_MAX: u64 = 65_536;
/// ...and in bytes.
const PROGRESS_BYTES_MAX: u64 = 16 << 20;

/// How recovery treats corruption (invalid bytes that a crash cannot explain).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecoveryMode {
    /// Stop with [`WalError::Corrupt`]: an operator decides.
    #[default]
    Strict,
    /// Keep the records before the corruption: cut the file there, rename every later
    /// segment to `*.corrupt` (kept for forensics), report it and go on.
    TruncateCorrupt,
}

/// A torn tail that replay cut off the last segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    pub file: PathBuf,
    /// Where the file was cut (0: the segment's header was torn and the file removed).
    pub offset: u64,
    pub bytes_cut: u64,
}

/// What a replay found and did.
#[derive(Debug)]
pub struct ReplayReport {
    /// The lsn the next record must get: pass it to `Wal::start`.
    pub next_lsn: u64,
    /// Records applied (those with lsn >= `from_lsn`).
    pub records: u64,
    /// Bytes of the segment files read, up to the end of the last valid record.
    pub bytes: u64,
    /// Segment files read.
    pub segments: usize,
    pub torn_tail: Option<TornTail>,
    /// The corruption that `TruncateCorrupt` mode cut off (never set in `Strict` mode).
    pub truncated_corruption: Option<WalError>,
}

/// The callback replay hands each record to: `apply(lsn, format, payload)`, `format` being
/// the one its segment's header names (decode the payload in it); an `Err` stops replay
/// with [`WalError::Apply`].
pub type ApplyRecord<'a> = dyn FnMut(u64, Format, &[u8]) -> Result<(), String> + 'a;

/// Reads every segment needed from `from_lsn` on and calls `apply(lsn, format, payload)` for each
/// record with lsn >= `from_lsn`, in order. `progress(bytes_done, bytes_total)` is called at
/// least every 65 536 records or 16 MiB, and once at the end.
pub fn replay(
    opts: &WalOptions,
    from_lsn: u64,
    mode: RecoveryMode,
    apply: &mut ApplyRecord<'_>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ReplayReport, WalError> {
    assert!(from_lsn >= 1, "lsns start at 1");
    let disk = &*opts.disk;
    let segments = segment::list_segments(disk, &opts.dir)?;
    let needed = &segments[first_needed(&segments, from_lsn)?..];
    let mut bytes_total = 0;
    for segment in needed {
        bytes_total += disk.file_len(&segment.path).map_err(|e| WalError::io("stat", &segment.path, e))?;
    }
    let report = ReplayReport {
        next_lsn: from_lsn,
        records: 0,
        bytes: 0,
        segments: 0,
        torn_tail: None,
        truncated_corruption: None,
    };
    let mut scan = Scan {
        disk,
        opts,
        mode,
        from_lsn,
        apply,
        progress,
        report,
        expected_lsn: None,
        bytes_total,
        unreported: (0, 0),
    };
    for (index, segment) in needed.iter().enumerate() {
        if scan.segment(segment, &needed[index + 1..])? == Flow::Stop {
            break;
        }
    }
    (scan.progress)(scan.report.bytes, bytes_total);
    let mut report = scan.report;
    report.next_lsn = scan.expected_lsn.unwrap_or(from_lsn).max(from_lsn);
    tracing::info!(
        dir = %opts.dir.display(), from_lsn, records = report.records, bytes = report.bytes,
        segments = report.segments, next_lsn = report.next_lsn, "WAL replayed"
    );
    Ok(report)
}

/// The segment file holding record `lsn`, and the record's byte offset in it: how an
/// error found after replay (a record that failed to apply on another thread) names its
/// place. `None` when no segment holds it (any more).
pub fn locate(opts: &WalOptions, lsn: u64) -> Option<(PathBuf, u64)> {
    let disk = &*opts.disk;
    let segments = segment::list_segments(disk, &opts.dir).ok()?;
    let segment = segments.iter().rev().find(|segment| segment.first_lsn <= lsn)?;
    let bytes = disk.read(&segment.path).ok()?;
    let mut offset = SEGMENT_HEADER_BYTES;
    while let FrameRead::Frame { lsn: found, next, .. } = frame::read_frame(&bytes, offset) {
        if found == lsn {
            return Some((segment.path.clone(), offset as u64));
        }
        offset = next;
    }
    None
}

/// The index of the first segment to read: the last one starting at or before `from_lsn`
/// (every earlier one ends before it). `segments.len()` when there are none at all.
fn first_needed(segments: &[SegmentFile], from_lsn: u64) -> Result<usize, WalError> {
    let Some(first) = segments.first() else { return Ok(0) };
    match segments.iter().rposition(|segment| segment.first_lsn <= from_lsn) {
        Some(index) => Ok(index),
        None => Err(WalError::MissingSegment {
            first_lsn: from_lsn,
            last_lsn: first.first_lsn - 1,
            next_file: first.path.clone(),
            next_first_lsn: first.first_lsn,
        }),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}

/// One replay in progress.
struct Scan<'a> {
    disk: &'a dyn Disk,
    opts: &'a WalOptions,
    mode: RecoveryMode,
    from_lsn: u64,
    apply: &'a mut ApplyRecord<'a>,
    progress: &'a mut dyn FnMut(u64, u64),
    report: ReplayReport,
    /// The lsn the next valid record must carry; `None` before the first segment.
    expected_lsn: Option<u64>,
    bytes_total: u64,
    /// Records and bytes since the last progress call.
    unreported: (u64, u64),
}

/// An invalid spot in a segment, and whether a crash could explain it.
struct Invalid {
    offset: usize,
    reason: String,
    may_be_torn: bool,
}

impl Scan<'_> {
    fn segment(&mut self, segment: &SegmentFile, later: &[SegmentFile]) -> Result<Flow, WalError> {
        let overlap = self.check_continuity(segment)?;
        self.expected_lsn = Some(segment.first_lsn);
        let bytes = self.disk.read(&segment.path).map_err(|e| WalError::io("read", &segment.path, e))?;
        self.report.segments += 1;
        let invalid = match (overlap, segment::check_header(&bytes, segment.first_lsn)) {
            (Some(reason), _) => Some(Invalid { offset: 0, reason, may_be_torn: false }),
            (None, Err(HeaderError::Unsupported { version })) => {
                return Err(WalError::UnsupportedFormat {
                    file: segment.path.clone(),
                    version,
                    readable: Format::readable_list(),
                });
            }
            (None, Err(HeaderError::Invalid(reason))) => Some(Invalid { offset: 0, reason, may_be_torn: true }),
            (None, Ok(format)) => {
                self.advance(SEGMENT_HEADER_BYTES);
                self.frames(&segment.path, &bytes, format)?
            }
        };
        match invalid {
            None => Ok(Flow::Continue),
            Some(invalid) => self.invalid(segment, later, &bytes, invalid),
        }
    }

    /// Checks that `segment` starts right after the records read so far. A gap is a missing
    /// segment (an error in every mode: nothing can be cut to explain it); an overlap is
    /// returned as the reason this segment is corrupt.
    fn check_continuity(&self, segment: &SegmentFile) -> Result<Option<String>, WalError> {
        let Some(expected) = self.expected_lsn else { return Ok(None) };
        if segment.first_lsn > expected {
            return Err(WalError::MissingSegment {
                first_lsn: expected,
                last_lsn: segment.first_lsn - 1,
                next_file: segment.path.clone(),
                next_first_lsn: segment.first_lsn,
            });
        }
        Ok((segment.first_lsn < expected).then(|| {
            format!(
                "segment starts at lsn {} but the previous segment holds records up to {}",
                segment.first_lsn,
                expected - 1
            )
        }))
    }

    /// Applies the frames after the header; returns the first invalid spot, if any.
    fn frames(&mut self, path: &Path, bytes: &[u8], format: Format) -> Result<Option<Invalid>, WalError> {
        let mut offset = SEGMENT_HEADER_BYTES;
        while offset < bytes.len() {
            // Set by `segment` before the frames are read.
            let expected = self.expected_lsn.expect("expected lsn is set");
            let reason = match frame::read_frame(bytes, offset) {
                FrameRead::Frame { lsn, payload, next } if lsn == expected => {
                    self.apply_record(lsn, format, payload, path, offset)?;
                    self.expected_lsn = Some(expected + 1);
                    self.advance(next - offset);
                    offset = next;
                    continue;
                }
                FrameRead::Frame { lsn, .. } => format!("record has lsn {lsn}, expected {expected}"),
                FrameRead::Incomplete => "record runs past the end of the file".to_owned(),
                FrameRead::Corrupt(reason) => format!("record {expected}: {reason}"),
            };
            return Ok(Some(Invalid { offset, reason, may_be_torn: true }));
        }
        Ok(None)
    }

    /// Applies one record (at `offset` of `file`) unless it lies before `from_lsn`.
    fn apply_record(
        &mut self,
        lsn: u64,
        format: Format,
        payload: &[u8],
        file: &Path,
        offset: usize,
    ) -> Result<(), WalError> {
        if lsn >= self.from_lsn {
            (self.apply)(lsn, format, payload).map_err(|reason| WalError::Apply {
                lsn,
                file: file.to_path_buf(),
                offset: offset as u64,
                reason,
            })?;
            self.report.records += 1;
            self.unreported.0 += 1;
        }
        Ok(())
    }

    /// Counts `bytes` as read and calls `progress` when enough went by.
    fn advance(&mut self, bytes: usize) {
        self.report.bytes += bytes as u64;
        self.unreported.1 += bytes as u64;
        if self.unreported.0 >= PROGRESS_RECORDS_MAX || self.unreported.1 >= PROGRESS_BYTES_MAX {
            (self.progress)(self.report.bytes, self.bytes_total);
            self.unreported = (0, 0);
        }
    }

    fn invalid(
        &mut self,
        segment: &SegmentFile,
        later: &[SegmentFile],
        bytes: &[u8],
        invalid: Invalid,
    ) -> Result<Flow, WalError> {
        // Set by `segment` before anything is read.
        let expected = self.expected_lsn.expect("expected lsn is set");
        if invalid.may_be_torn && later.is_empty() && !valid_frame_follows(bytes, invalid.offset, expected) {
            self.cut_torn_tail(segment, bytes.len() as u64, invalid.offset as u64)?;
            return Ok(Flow::Stop);
        }
        let error =
            WalError::Corrupt { file: segment.path.clone(), offset: invalid.offset as u64, reason: invalid.reason };
        match self.mode {
            RecoveryMode::Strict => Err(error),
            RecoveryMode::TruncateCorrupt => {
                self.cut_corruption(segment, later, invalid.offset as u64, &error)?;
                self.report.truncated_corruption = Some(error);
                Ok(Flow::Stop)
            }
        }
    }

    fn cut_torn_tail(&mut self, segment: &SegmentFile, file_len: u64, offset: u64) -> Result<(), WalError> {
        let path = &segment.path;
        if offset < SEGMENT_HEADER_BYTES as u64 {
            // The crash came before the header was complete: the file holds nothing.
            self.disk.remove(path).map_err(|e| WalError::io("remove torn segment", path, e))?;
            self.sync_dir()?;
        } else {
            self.disk.truncate(path, offset).map_err(|e| WalError::io("cut torn tail", path, e))?;
        }
        let bytes_cut = file_len - offset;
        tracing::warn!(file = %path.display(), offset, bytes_cut, "WAL torn tail cut off (a write interrupted by a crash)");
        self.report.torn_tail = Some(TornTail { file: path.clone(), offset, bytes_cut });
        Ok(())
    }

    /// `TruncateCorrupt`: keeps what precedes the corruption, sets the rest aside.
    fn cut_corruption(
        &mut self,
        segment: &SegmentFile,
        later: &[SegmentFile],
        offset: u64,
        error: &WalError,
    ) -> Result<(), WalError> {
        let path = &segment.path;
        if offset < SEGMENT_HEADER_BYTES as u64 {
            // A segment without a valid header holds nothing usable: set all of it aside.
            self.set_aside(segment)?;
        } else {
            self.disk.truncate(path, offset).map_err(|e| WalError::io("cut corruption", path, e))?;
        }
        for segment in later {
            self.set_aside(segment)?;
        }
        self.sync_dir()?;
        tracing::warn!(
            file = %path.display(), offset, later_segments_set_aside = later.len(), %error,
            "WAL corruption cut off (RecoveryMode::TruncateCorrupt); records after it are lost"
        );
        Ok(())
    }

    fn set_aside(&self, segment: &SegmentFile) -> Result<(), WalError> {
        let target = segment::corrupt_path(&segment.path);
        self.disk.rename(&segment.path, &target).map_err(|e| WalError::io("rename to .corrupt", &segment.path, e))
    }

    fn sync_dir(&self) -> Result<(), WalError> {
        self.disk.sync_dir(&self.opts.dir).map_err(|e| WalError::io("sync directory", &self.opts.dir, e))
    }
}

/// Whether a frame that checks out, with one of the lsns that would follow the invalid spot
/// at `offset`, starts anywhere after it. `expected_lsn` is the lsn the invalid spot should
/// have held (for a bad header at offset 0: the segment's first lsn, at offset 16 or later).
///
/// Every frame takes at least [`FRAME_HEADER_BYTES`], so a frame at `p` can carry at most
/// `(p - base) / 16` lsns past the first candidate's: that bound rejects almost every offset
/// before a checksum is computed, which keeps the byte-by-byte search cheap.
fn valid_frame_follows(bytes: &[u8], offset: usize, expected_lsn: u64) -> bool {
    let (base, first_lsn) = if offset < SEGMENT_HEADER_BYTES {
        (SEGMENT_HEADER_BYTES, expected_lsn)
    } else {
        (offset + FRAME_HEADER_BYTES, expected_lsn + 1)
    };
    (base..bytes.len()).any(|position| {
        let Some(lsn) = frame::peek_lsn(bytes, position) else { return false };
        let lsn_max = first_lsn + ((position - base) / FRAME_HEADER_BYTES) as u64;
        (first_lsn..=lsn_max).contains(&lsn)
            && matches!(frame::read_frame(bytes, position), FrameRead::Frame { lsn: found, .. } if found == lsn)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::encode_frame;

    fn frames(first_lsn: u64, count: u64) -> Vec<u8> {
        let mut bytes = segment::encode_header(first_lsn).to_vec();
        for lsn in first_lsn..first_lsn + count {
            encode_frame(&mut bytes, lsn, &mut |b| b.extend_from_slice(&lsn.to_le_bytes()));
        }
        bytes
    }

    #[test]
    fn valid_frame_follows_finds_later_records_only() {
        let bytes = frames(5, 3);
        let second = SEGMENT_HEADER_BYTES + 24;
        assert!(valid_frame_follows(&bytes, SEGMENT_HEADER_BYTES, 5), "records 6 and 7 follow record 5");
        assert!(valid_frame_follows(&bytes, second, 6), "record 7 follows record 6");
        assert!(!valid_frame_follows(&bytes, second + 24, 7), "nothing follows the last record");
        assert!(!valid_frame_follows(&bytes, second, 9), "records with other lsns do not count");
        assert!(valid_frame_follows(&bytes, 0, 5), "a bad header followed by records");
    }

    #[test]
    fn first_needed_skips_segments_before_from_lsn() {
        let segments: Vec<_> = [1, 10, 20]
            .iter()
            .map(|&lsn| SegmentFile { first_lsn: lsn, path: PathBuf::from(lsn.to_string()) })
            .collect();
        assert_eq!(first_needed(&segments, 1).unwrap(), 0);
        assert_eq!(first_needed(&segments, 10).unwrap(), 1);
        assert_eq!(first_needed(&segments, 15).unwrap(), 1);
        assert_eq!(first_needed(&segments, 99).unwrap(), 2);
        assert!(matches!(
            first_needed(&segments[1..], 5),
            Err(WalError::MissingSegment { first_lsn: 5, last_lsn: 9, .. })
        ));
        assert_eq!(first_needed(&[], 7).unwrap(), 0);
    }
}
