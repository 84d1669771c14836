//! Write-ahead log records: checksummed frames (`hotset_storage::frame`) on arbitrary
//! bytes, change payloads (`hotset_core::change`) decoded and applied, and a log segment
//! replayed through an in-memory disk.
//!
//! The input is one or more change payloads separated by `crate::SEPARATOR` (a
//! checksum is a wall the fuzzer cannot climb, so the target frames the payloads itself).
//!
//! Checks: never a panic; frames read from the raw bytes re-encode to the same bytes, and
//! framed payloads read back as written; a decoded change re-encodes to bytes that decode
//! to the same change (and to the input itself where the encoding is canonical: every kind
//! but those carrying index definitions as JSON); replay (exact and fuzzy) returns Ok or
//! Err and leaves a database whose indexes agree and whose snapshot loads back the same;
//! replaying a segment returns Ok or a clean error whichever bytes follow its records.

use crate::{MemDisk, check_database, empty_database, fixture, split_records};
use hotset_core::Replay;
use hotset_core::change::{Change, Format};
use hotset_storage::frame::{FrameRead, encode_frame, read_frame};
use hotset_storage::wal::segment::{encode_header, segment_path};
use hotset_storage::{RecoveryMode, WalOptions};
use std::path::Path;
use std::sync::Arc;

/// One input of the target.
pub fn run(data: &[u8]) {
    check_raw_frames(data);
    let records = split_records(data);
    check_framed(&records);
    for mode in [RecoveryMode::Strict, RecoveryMode::TruncateCorrupt] {
        check_segment_replay(&records, mode);
    }
    let mut decoded = 0;
    for record in &records {
        decoded += usize::from(check_change_codec(record));
    }
    if decoded == 0 {
        // Nothing would apply; spare building the fixture (most mutations land here).
        return;
    }
    for mode in [Replay::Exact, Replay::Fuzzy] {
        let db = fixture();
        for record in &records {
            let _ = db.apply_change(record, Format::CURRENT, mode);
        }
        check_database(&db, &format!("after replaying {} records ({mode:?})", records.len()));
    }
}

/// Frames read from the raw input, one after another, re-encode to their own bytes.
fn check_raw_frames(data: &[u8]) {
    let mut offset = 0;
    while let FrameRead::Frame { lsn, payload, next } = read_frame(data, offset) {
        assert!(next > offset && next <= data.len(), "frame at {offset} ends at {next}");
        let mut again = Vec::new();
        encode_frame(&mut again, lsn, &mut |out| out.extend_from_slice(payload));
        assert_eq!(again, &data[offset..next], "frame at {offset} re-encodes otherwise");
        offset = next;
    }
}

/// Records framed with consecutive lsns read back as written, and the stream ends there.
fn check_framed(records: &[&[u8]]) {
    let mut stream = Vec::new();
    for (lsn, record) in (1..).zip(records) {
        encode_frame(&mut stream, lsn, &mut |out| out.extend_from_slice(record));
    }
    let mut offset = 0;
    for (lsn, record) in (1..).zip(records) {
        match read_frame(&stream, offset) {
            FrameRead::Frame { lsn: read_lsn, payload, next } => {
                assert_eq!((read_lsn, payload), (lsn, *record), "frame {lsn} reads back otherwise");
                offset = next;
            }
            other => panic!("frame {lsn} does not read back: {other:?}"),
        }
    }
    assert_eq!(read_frame(&stream, offset), FrameRead::Incomplete);
}

/// Decode → encode → decode is stable, and canonical inputs re-encode to themselves.
/// Returns whether the record decoded.
fn check_change_codec(record: &[u8]) -> bool {
    // A format-1 record (index definitions as JSON) re-encodes in the current format to
    // the same change.
    if let Ok(old) = Change::decode(record, Format::V1) {
        let mut encoded = Vec::new();
        old.encode(&mut encoded);
        let again = Change::decode(&encoded, Format::CURRENT)
            .unwrap_or_else(|e| panic!("a format-1 change re-encoded does not decode: {e}"));
        assert_eq!(format!("{again:?}"), format!("{old:?}"), "a format-1 change reads otherwise re-encoded");
    }
    let Ok(change) = Change::decode(record, Format::CURRENT) else { return false };
    let mut encoded = Vec::new();
    change.encode(&mut encoded);
    let again = Change::decode(&encoded, Format::CURRENT)
        .unwrap_or_else(|e| panic!("a re-encoded change does not decode: {e}"));
    // Compared as printed: a text index's weights may be NaN bits, which round trip
    // exactly but are not equal to themselves.
    assert_eq!(format!("{again:?}"), format!("{change:?}"), "a change decodes otherwise after re-encoding");
    let mut twice = Vec::new();
    again.encode(&mut twice);
    assert_eq!(twice, encoded, "a change has two encodings");
    // Every field has one encoding (index definitions too, since format 2) but for
    // longer-than-needed varints, which only add bytes.
    assert!(encoded.len() <= record.len(), "re-encoding made a change longer");
    if encoded.len() == record.len() {
        assert_eq!(encoded, record, "a canonical change re-encodes to other bytes");
    }
    true
}

/// The records as the one segment of a log (its header, then a frame per record but the
/// last, whose bytes follow raw, as a torn or damaged tail would), replayed into an empty
/// database: Ok or a clean error, and a database that stays consistent.
fn check_segment_replay(records: &[&[u8]], mode: RecoveryMode) {
    let dir = Path::new("/wal");
    let disk = MemDisk::new();
    let mut segment = encode_header(1).to_vec();
    let (tail, framed) = records.split_last().expect("split_records gives at least one piece");
    for (lsn, record) in (1..).zip(framed) {
        encode_frame(&mut segment, lsn, &mut |out| out.extend_from_slice(record));
    }
    segment.extend_from_slice(tail);
    disk.put(&segment_path(dir, 1), segment);
    let mut opts = WalOptions::new(dir);
    opts.disk = Arc::new(disk);
    let db = empty_database();
    let mut applied = 0;
    let mut apply = |_lsn: u64, format: Format, payload: &[u8]| -> Result<(), String> {
        db.apply_change(payload, format, Replay::Exact).map_err(|e| e.to_string())?;
        applied += 1;
        Ok(())
    };
    if let Ok(report) = hotset_storage::replay(&opts, 1, mode, &mut apply, &mut |_, _| {}) {
        assert_eq!(report.next_lsn, 1 + report.records, "records are consecutive from lsn 1: {report:?}");
    }
    if applied > 0 {
        check_database(&db, &format!("after replaying a segment ({mode:?})"));
    }
}
