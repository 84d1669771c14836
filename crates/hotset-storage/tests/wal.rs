//! The write-ahead log end to end: round trips, every kind of damage replay must tell apart
//! (torn tails, corruption, missing segments), injected disk faults, group commit, waking
//! waiters, fsync policies, coalescing and segment removal.
//!
//! No test sleeps to synchronise or asserts on timing: waits for the writer thread are
//! bounded polls of a condition (`eventually`), batching is shown by holding the writer
//! inside a write or an fsync at a `Gate` until the other threads have appended (a
//! handshake), everything else is ordered by the WAL's own acknowledgements.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hotset_core::change::Format;
use hotset_storage::frame::{FRAME_HEADER_BYTES, FrameRead, read_frame};
use hotset_storage::wal::COALESCE_BYTES;
use hotset_storage::wal::segment::{SEGMENT_HEADER_BYTES, segment_path};
use hotset_storage::{
    FaultyDisk, FsyncPolicy, RecoveryMode, ReplayReport, Wal, WalError, WalOptions, WalStats, replay,
};
use hotset_testkit::block_on;
use proptest::prelude::*;

type Records = Vec<(u64, Vec<u8>)>;

/// A payload of varied size (0..=300 bytes) whose content depends on `seed`.
fn payload(seed: u64) -> Vec<u8> {
    let len = (seed * 7919 % 301) as usize;
    (0..len).map(|i| (seed as usize * 31 + i) as u8).collect()
}

fn options(dir: &Path, policy: FsyncPolicy, segment_bytes: u64) -> WalOptions {
    WalOptions { policy, segment_bytes, retry_interval: Duration::from_millis(10), ..WalOptions::new(dir) }
}

fn faulty_options(dir: &Path, policy: FsyncPolicy) -> (WalOptions, Arc<FaultyDisk>) {
    let disk = Arc::new(FaultyDisk::new());
    let opts = WalOptions { disk: disk.clone(), ..options(dir, policy, 64 << 20) };
    (opts, disk)
}

fn append(wal: &Wal, bytes: &[u8]) -> u64 {
    wal.append(&mut |buf| buf.extend_from_slice(bytes))
}

/// Appends `count` records with `payload(lsn)` and returns them.
fn append_many(wal: &Wal, count: u64) -> Records {
    (0..count)
        .map(|_| {
            let lsn = wal.next_lsn();
            let bytes = payload(lsn);
            assert_eq!(append(wal, &bytes), lsn);
            (lsn, bytes)
        })
        .collect()
}

/// Writes a closed log of `count` records (lsns 1..=count) with `payload(lsn)`, one batch
/// per record, so segments rotate at the same records every time.
fn write_log(dir: &Path, count: u64, segment_bytes: u64) -> Records {
    let wal = Wal::start(options(dir, FsyncPolicy::Never, segment_bytes), 1).unwrap();
    let records: Records = (1..=count)
        .map(|lsn| {
            assert_eq!(append(&wal, &payload(lsn)), lsn);
            eventually_fast("the record is written", || wal.stats().written_lsn == lsn);
            (lsn, payload(lsn))
        })
        .collect();
    wal.close().unwrap();
    records
}

/// Writes a closed log whose last record is in the last segment (a batch that fills a
/// segment leaves an empty one after it: that one is removed).
fn write_log_ending_in_a_record(dir: &Path, count: u64, segment_bytes: u64) -> Records {
    let written = write_log(dir, count, segment_bytes);
    let last = segments(dir).pop().unwrap();
    if frames_of(&last).is_empty() {
        fs::remove_file(last).unwrap();
    }
    written
}

/// The first lsn a segment file's name gives.
fn first_lsn_of(path: &Path) -> u64 {
    path.file_stem().unwrap().to_str().unwrap().parse().unwrap()
}

fn replay_records(opts: &WalOptions, from_lsn: u64, mode: RecoveryMode) -> Result<(Records, ReplayReport), WalError> {
    let mut records = Vec::new();
    let report = replay(
        opts,
        from_lsn,
        mode,
        &mut |lsn, format, bytes| {
            assert_eq!(format, Format::CURRENT, "this build writes its own format");
            records.push((lsn, bytes.to_vec()));
            Ok(())
        },
        &mut |_, _| {},
    )?;
    Ok((records, report))
}

fn replay_dir(dir: &Path, mode: RecoveryMode) -> Result<(Records, ReplayReport), WalError> {
    replay_records(&WalOptions::new(dir), 1, mode)
}

/// The segment files of `dir`, in lsn order.
fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "wal"))
        .collect();
    paths.sort();
    paths
}

/// `(lsn, offset, frame length)` of every record in a segment file.
fn frames_of(path: &Path) -> Vec<(u64, usize, usize)> {
    let bytes = fs::read(path).unwrap();
    let mut offset = SEGMENT_HEADER_BYTES;
    let mut frames = Vec::new();
    while let FrameRead::Frame { lsn, next, .. } = read_frame(&bytes, offset) {
        frames.push((lsn, offset, next - offset));
        offset = next;
    }
    assert_eq!(offset, bytes.len(), "{} holds only whole records", path.display());
    frames
}

/// Copies every file of `source` into a fresh directory.
fn copy_dir(source: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(source).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, copy.path().join(path.file_name().unwrap())).unwrap();
    }
    copy
}

fn flip_byte(path: &Path, offset: usize) {
    let mut bytes = fs::read(path).unwrap();
    bytes[offset] ^= 0x5a;
    fs::write(path, bytes).unwrap();
}

fn cut_file(path: &Path, len: usize) {
    let bytes = fs::read(path).unwrap();
    fs::write(path, &bytes[..len]).unwrap();
}

/// Like `eventually`, yielding instead of sleeping, for conditions that hold within microseconds.
fn eventually_fast(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::yield_now();
    }
}

/// Waits (boundedly) for a condition that the writer thread brings about.
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Starts a WAL where replay says, appends one record, closes, and checks that a replay
/// returns `before` followed by that record.
fn restart_and_append(dir: &Path, before: &[(u64, Vec<u8>)]) {
    let (_, report) = replay_dir(dir, RecoveryMode::Strict).unwrap();
    let expected_next = before.last().map_or(1, |(lsn, _)| lsn + 1);
    assert_eq!(report.next_lsn, expected_next);
    let wal = Wal::start(options(dir, FsyncPolicy::Never, 64 << 20), report.next_lsn).unwrap();
    let lsn = append(&wal, b"after restart");
    assert_eq!(lsn, expected_next);
    wal.close().unwrap();
    let (records, report) = replay_dir(dir, RecoveryMode::Strict).unwrap();
    assert!(report.torn_tail.is_none());
    assert_eq!(&records[..before.len()], before);
    assert_eq!(records[before.len()..], [(lsn, b"after restart".to_vec())]);
}

#[test]
fn round_trip_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let written = write_log(dir.path(), 300, 1024);
    let files = segments(dir.path());
    assert!(files.len() >= 5, "small segments rotate: {} files", files.len());

    let (records, report) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
    assert_eq!(records, written);
    assert_eq!((report.next_lsn, report.records, report.segments), (301, 300, files.len()));
    assert!(report.torn_tail.is_none() && report.truncated_corruption.is_none());
    let file_bytes: u64 = files.iter().map(|path| fs::metadata(path).unwrap().len()).sum();
    assert_eq!(report.bytes, file_bytes);

    let (records, report) = replay_records(&WalOptions::new(dir.path()), 150, RecoveryMode::Strict).unwrap();
    assert_eq!(records, written[149..]);
    assert_eq!(report.records, 151);
    assert!(report.segments < files.len(), "segments before lsn 150 are skipped");

    for (from_lsn, next_lsn) in [(301, 301), (500, 500)] {
        let (records, report) = replay_records(&WalOptions::new(dir.path()), from_lsn, RecoveryMode::Strict).unwrap();
        assert!(records.is_empty());
        assert_eq!(report.next_lsn, next_lsn);
    }
}

#[test]
fn every_segment_starts_after_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    write_log(dir.path(), 200, 700);
    let mut next_lsn = 1;
    for path in segments(dir.path()) {
        assert_eq!(path, segment_path(dir.path(), next_lsn));
        let bytes = fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"HSWAL002");
        assert_eq!(bytes[8..16], next_lsn.to_le_bytes());
        for (lsn, _, _) in frames_of(&path) {
            assert_eq!(lsn, next_lsn);
            next_lsn += 1;
        }
    }
    assert_eq!(next_lsn, 201);
}

#[test]
fn progress_is_reported_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    write_log(dir.path(), 50, 1024);
    let mut calls = Vec::new();
    let report =
        replay(&WalOptions::new(dir.path()), 1, RecoveryMode::Strict, &mut |_, _, _| Ok(()), &mut |done, total| {
            calls.push((done, total))
        })
        .unwrap();
    assert_eq!(calls.last(), Some(&(report.bytes, report.bytes)));
    assert!(calls.windows(2).all(|pair| pair[0].0 <= pair[1].0));
}

#[test]
fn an_empty_or_absent_directory_replays_to_from_lsn() {
    let dir = tempfile::tempdir().unwrap();
    let (records, report) = replay_records(&WalOptions::new(dir.path()), 7, RecoveryMode::Strict).unwrap();
    assert!(records.is_empty());
    assert_eq!((report.next_lsn, report.segments), (7, 0));
    let absent = dir.path().join("absent");
    let (_, report) = replay_records(&WalOptions::new(&absent), 1, RecoveryMode::Strict).unwrap();
    assert_eq!(report.next_lsn, 1);
}

/// A record that checks out but does not apply is a bug or a format mismatch, not damage:
/// replay stops naming the record, its file and offset, in `TruncateCorrupt` mode too, and
/// changes no file (cutting there would throw away the good records after it).
#[test]
fn apply_errors_stop_replay_naming_record_file_and_offset_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    write_log(dir.path(), 10, 1 << 20);
    let segment = segments(dir.path()).pop().unwrap();
    let (_, offset, _) = frames_of(&segment).into_iter().find(|(lsn, _, _)| *lsn == 4).unwrap();
    let before = fs::read(&segment).unwrap();
    for mode in [RecoveryMode::Strict, RecoveryMode::TruncateCorrupt] {
        let mut applied = Vec::new();
        let error = replay(
            &WalOptions::new(dir.path()),
            1,
            mode,
            &mut |lsn, _, _| {
                applied.push(lsn);
                if lsn == 4 { Err("bad record".to_owned()) } else { Ok(()) }
            },
            &mut |_, _| {},
        )
        .unwrap_err();
        let WalError::Apply { lsn: 4, file, offset: at, reason } = &error else { panic!("{mode:?}: {error}") };
        assert_eq!((file, *at as usize, reason.as_str()), (&segment, offset, "bad record"), "{mode:?}");
        let text = error.to_string();
        assert!(text.contains(&segment.display().to_string()) && text.contains(&format!("offset {offset}")), "{text}");
        assert_eq!(applied, [1, 2, 3, 4], "{mode:?}: nothing after the record");
        assert_eq!(fs::read(&segment).unwrap(), before, "{mode:?}: the segment is untouched");
        assert_eq!(segments(dir.path()), std::slice::from_ref(&segment), "{mode:?}: nothing set aside");
    }
}

#[test]
fn truncation_at_every_byte_of_the_last_record_is_a_torn_tail() {
    let template = tempfile::tempdir().unwrap();
    let mut written = write_log_ending_in_a_record(template.path(), 40, 1024);
    written.truncate(39);
    let last_segment = segments(template.path()).pop().unwrap();
    let &(last_lsn, start, len) = frames_of(&last_segment).last().unwrap();
    assert_eq!(last_lsn, 40);
    assert!(len > FRAME_HEADER_BYTES + 8, "the last record has a payload");

    for cut in start..start + len {
        let dir = copy_dir(template.path());
        let path = dir.path().join(last_segment.file_name().unwrap());
        cut_file(&path, cut);
        let (records, report) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
        assert_eq!(records, written, "cut at {cut}");
        assert_eq!(report.next_lsn, 40);
        match report.torn_tail {
            None => assert_eq!(cut, start, "only a cut at a record boundary is clean"),
            Some(torn) => {
                assert_eq!(
                    (torn.file, torn.offset, torn.bytes_cut),
                    (path.clone(), start as u64, (cut - start) as u64)
                );
                assert_eq!(fs::metadata(&path).unwrap().len(), start as u64, "the torn tail is cut off");
            }
        }
        let (records, report) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
        assert_eq!(records, written);
        assert!(report.torn_tail.is_none(), "the second replay sees a clean log (cut at {cut})");
        restart_and_append(dir.path(), &written);
    }
}

#[test]
fn a_torn_segment_header_removes_the_segment() {
    let template = tempfile::tempdir().unwrap();
    let mut written = write_log(template.path(), 30, 600);
    let last_segment = segments(template.path()).pop().unwrap();
    written.truncate(first_lsn_of(&last_segment) as usize - 1);

    for cut in 0..SEGMENT_HEADER_BYTES {
        let dir = copy_dir(template.path());
        let path = dir.path().join(last_segment.file_name().unwrap());
        cut_file(&path, cut);
        let (records, report) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
        assert_eq!(records, written);
        let torn = report.torn_tail.expect("a torn header is a torn tail");
        assert_eq!((torn.offset, torn.bytes_cut), (0, cut as u64));
        assert!(!path.exists(), "the segment with a torn header is removed");
        restart_and_append(dir.path(), &written);
    }
}

#[test]
fn a_flipped_byte_in_a_middle_record_is_corruption() {
    let template = tempfile::tempdir().unwrap();
    let written = write_log(template.path(), 20, 1 << 20);
    let segment = segments(template.path()).pop().unwrap();
    let (lsn, start, len) = frames_of(&segment)[9];
    assert_eq!(lsn, 10);

    // Every byte of the record: its length field too, which must not pass for a torn tail.
    for offset in start..start + len {
        let dir = copy_dir(template.path());
        let path = dir.path().join(segment.file_name().unwrap());
        flip_byte(&path, offset);
        let damaged = fs::read(&path).unwrap();
        let error = replay_dir(dir.path(), RecoveryMode::Strict).unwrap_err();
        let WalError::Corrupt { file, offset: reported, .. } = &error else { panic!("flip at {offset}: {error}") };
        assert_eq!((file, *reported), (&path, start as u64), "flip at {offset}");
        let message = error.to_string();
        assert!(
            message.contains(&path.display().to_string()) && message.contains(&format!("offset {start}")),
            "{message}"
        );
        assert!(message.contains("TruncateCorrupt"), "the message names the operator option: {message}");
        assert_eq!(fs::read(&path).unwrap(), damaged, "Strict mode leaves corruption alone");

        let (records, report) = replay_dir(dir.path(), RecoveryMode::TruncateCorrupt).unwrap();
        assert_eq!(records, written[..9]);
        assert!(matches!(report.truncated_corruption, Some(WalError::Corrupt { offset: o, .. }) if o == start as u64));
        assert_eq!(fs::metadata(&path).unwrap().len(), start as u64);
        restart_and_append(dir.path(), &written[..9]);
    }
}

#[test]
fn a_flipped_byte_in_a_middle_segment_is_corruption() {
    let template = tempfile::tempdir().unwrap();
    let written = write_log(template.path(), 100, 1024);
    let files = segments(template.path());
    assert!(files.len() >= 4);
    let middle = &files[1];
    let frames = frames_of(middle);
    // A middle record, the segment's last record and its header: all corruption, since a
    // segment that is not the last one can have no torn tail.
    let targets = [frames[frames.len() / 2], *frames.last().unwrap(), (frames[0].0, 0, SEGMENT_HEADER_BYTES)];
    for (lsn, start, _) in targets {
        let dir = copy_dir(template.path());
        let path = dir.path().join(middle.file_name().unwrap());
        flip_byte(&path, start + 3);
        let error = replay_dir(dir.path(), RecoveryMode::Strict).unwrap_err();
        assert!(
            matches!(&error, WalError::Corrupt { file, offset, .. } if *file == path && *offset == start as u64),
            "{error}"
        );

        let (records, report) = replay_dir(dir.path(), RecoveryMode::TruncateCorrupt).unwrap();
        let kept = &written[..lsn as usize - 1];
        assert_eq!(records, kept);
        assert!(report.truncated_corruption.is_some());
        for later in &files[2..] {
            let later = dir.path().join(later.file_name().unwrap());
            assert!(!later.exists());
            let mut corrupt = later.into_os_string();
            corrupt.push(".corrupt");
            assert!(Path::new(&corrupt).exists(), "later segments are kept for forensics");
        }
        if start == 0 {
            assert!(!path.exists(), "a segment with a bad header is set aside whole");
        }
        restart_and_append(dir.path(), kept);
    }
}

#[test]
fn a_flipped_byte_in_the_last_record_is_a_torn_tail() {
    let template = tempfile::tempdir().unwrap();
    let written = write_log_ending_in_a_record(template.path(), 30, 1024);
    let last_segment = segments(template.path()).pop().unwrap();
    let &(lsn, start, len) = frames_of(&last_segment).last().unwrap();
    assert_eq!(lsn, 30);
    for offset in start..start + len {
        let dir = copy_dir(template.path());
        let path = dir.path().join(last_segment.file_name().unwrap());
        flip_byte(&path, offset);
        let (records, report) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
        assert_eq!(records, written[..29], "flip at {offset}");
        let torn = report.torn_tail.expect("torn tail");
        assert_eq!((torn.offset, torn.bytes_cut), (start as u64, len as u64));
        assert!(report.truncated_corruption.is_none());
    }
}

#[test]
fn a_missing_segment_is_reported() {
    let template = tempfile::tempdir().unwrap();
    write_log(template.path(), 100, 1024);
    let files = segments(template.path());

    let dir = copy_dir(template.path());
    fs::remove_file(dir.path().join(files[2].file_name().unwrap())).unwrap();
    let error = replay_dir(dir.path(), RecoveryMode::TruncateCorrupt).unwrap_err();
    let WalError::MissingSegment { first_lsn, last_lsn, next_file, next_first_lsn } = &error else { panic!("{error}") };
    assert_eq!((*first_lsn, *last_lsn + 1), (first_lsn_of(&files[2]), first_lsn_of(&files[3])));
    assert_eq!((next_file, *next_first_lsn), (&dir.path().join(files[3].file_name().unwrap()), *last_lsn + 1));

    let dir = copy_dir(template.path());
    fs::remove_file(dir.path().join(files[0].file_name().unwrap())).unwrap();
    let error = replay_dir(dir.path(), RecoveryMode::Strict).unwrap_err();
    assert!(matches!(error, WalError::MissingSegment { first_lsn: 1, .. }), "{error}");
    // A replay that starts after the missing records does not need them.
    let from_lsn = first_lsn_of(&files[2]) + 1;
    let (records, _) = replay_records(&WalOptions::new(dir.path()), from_lsn, RecoveryMode::Strict).unwrap();
    assert_eq!(records.first().map(|(lsn, _)| *lsn), Some(from_lsn));
}

#[test]
fn a_full_disk_fails_the_batch_and_the_log_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Always);
    let wal = Wal::start(opts, 1).unwrap();
    let mut written = append_many(&wal, 10);
    for (lsn, _) in &written {
        wal.wait(*lsn).unwrap();
    }
    let segment = segment_path(dir.path(), 1);
    let good_len = fs::metadata(&segment).unwrap().len();

    disk.set_full(true);
    let failed = append_many(&wal, 1);
    let error = wal.wait(failed[0].0).unwrap_err();
    assert!(matches!(&error, WalError::Unwritable { reason } if reason.contains("No space")), "{error}");
    assert!(wal.writable().is_err());
    assert!(wal.stats().failed.is_some());
    // Appended while failed (callers should not, but nothing may be lost or reordered).
    let queued = append_many(&wal, 2);
    assert!(wal.wait(queued[1].0).is_err(), "the retry fails while the disk is full");
    assert_eq!(fs::metadata(&segment).unwrap().len(), good_len);
    assert_eq!(wal.stats().durable_lsn, 10, "acknowledged records stay");

    disk.set_full(false);
    eventually("the log is writable again", || wal.writable().is_ok());
    assert_eq!(wal.stats().failed, None);
    let later = append_many(&wal, 5);
    for (lsn, _) in &later {
        wal.wait(*lsn).unwrap();
    }
    wal.close().unwrap();
    written.extend(failed.into_iter().chain(queued).chain(later));
    let (records, _) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
    assert_eq!(records, written, "every record once, in order, no gaps");
}

#[test]
fn a_partial_write_is_cut_off_and_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Always);
    let wal = Wal::start(opts, 1).unwrap();
    let mut written = append_many(&wal, 3);
    wal.wait(3).unwrap();
    let segment = segment_path(dir.path(), 1);
    let good_len = fs::metadata(&segment).unwrap().len();

    disk.fail_after_bytes(20);
    let big = vec![7; 200];
    let lsn = append(&wal, &big);
    assert!(wal.wait(lsn).is_err());
    assert_eq!(fs::metadata(&segment).unwrap().len(), good_len, "the written prefix is cut off");
    assert!(wal.writable().is_err());

    disk.set_full(false);
    eventually("the log is writable again", || wal.writable().is_ok());
    written.push((lsn, big));
    written.extend(append_many(&wal, 3));
    wal.wait(written.last().unwrap().0).unwrap();
    wal.close().unwrap();
    let (records, _) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
    assert_eq!(records, written);
}

#[test]
fn a_full_disk_while_rotating_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FaultyDisk::new());
    let opts = WalOptions { disk: disk.clone(), ..options(dir.path(), FsyncPolicy::Always, 100) };
    let wal = Wal::start(opts, 1).unwrap();
    let first = vec![1; 200];
    // The batch fits exactly; the new segment's header does not.
    disk.fail_after_bytes((FRAME_HEADER_BYTES + first.len()) as u64);
    let lsn = append(&wal, &first);
    wal.wait(lsn).unwrap();
    eventually("the failed rotation is reported", || wal.stats().failed.is_some());
    assert!(!segment_path(dir.path(), 2).exists(), "the half-made segment is removed");

    disk.set_full(false);
    eventually("the log is writable again", || wal.writable().is_ok());
    let second = append(&wal, b"second");
    wal.wait(second).unwrap();
    wal.close().unwrap();
    assert_eq!(frames_of(&segment_path(dir.path(), 2)).len(), 1, "the second record went to the new segment");
    let (records, _) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
    assert_eq!(records, [(1, first), (2, b"second".to_vec())]);
}

#[test]
fn a_full_disk_under_concurrent_appends_loses_nothing() {
    const THREADS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Always);
    let wal = Arc::new(Wal::start(opts, 1).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (wal, stop) = (Arc::clone(&wal), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut appended = Vec::new();
                for i in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let bytes = format!("thread {thread} record {i}").into_bytes();
                    let lsn = append(&wal, &bytes);
                    let acknowledged = wal.wait(lsn).is_ok();
                    appended.push((lsn, bytes, acknowledged));
                }
                appended
            })
        })
        .collect();
    for _ in 0..3 {
        disk.set_full(true);
        eventually("the log fails", || wal.stats().failed.is_some());
        disk.set_full(false);
        eventually("the log recovers", || wal.writable().is_ok());
    }
    stop.store(true, Ordering::SeqCst);
    let mut appended: Vec<_> = workers.into_iter().flat_map(|worker| worker.join().unwrap()).collect();
    appended.sort();
    assert!(appended.iter().any(|record| !record.2), "some batches failed");
    Arc::into_inner(wal).unwrap().close().unwrap();
    let (records, _) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
    let expected: Records = appended.into_iter().map(|(lsn, bytes, _)| (lsn, bytes)).collect();
    assert_eq!(records, expected, "every record once, in order, no gaps");
}

#[test]
fn a_failed_fsync_fails_the_log_for_good() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Always);
    let wal = Wal::start(opts, 1).unwrap();
    let lsn = append(&wal, b"durable");
    wal.wait(lsn).unwrap();

    disk.set_sync_fails(true);
    let lsn = append(&wal, b"not durable");
    let error = wal.wait(lsn).unwrap_err();
    assert!(error.to_string().contains("fsync") && error.to_string().contains("restart"), "{error}");
    disk.set_sync_fails(false);
    assert!(wal.writable().is_err());
    let lsn = append(&wal, b"after the failure");
    assert!(wal.wait(lsn).is_err(), "no retry after a failed fsync");
    assert!(wal.sync().is_err());
    assert!(wal.rotate().is_err());
    assert!(wal.stats().failed.unwrap().contains("fsync"));
    assert_eq!(wal.stats().durable_lsn, 1);
    assert!(wal.close().is_err());
}

#[test]
fn a_failed_fsync_fails_periodic_sync_too() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Periodic(Duration::from_secs(3600)));
    let wal = Wal::start(opts, 1).unwrap();
    let lsn = append(&wal, b"record");
    wal.wait(lsn).unwrap();
    disk.set_sync_fails(true);
    assert!(wal.sync().is_err());
    // It was in the file before the fsync failed: what `Periodic` promised holds for it.
    assert!(wal.wait(lsn).is_ok());
    let later = append(&wal, b"after the failure");
    assert!(wal.wait(later).is_err(), "nothing is written after a failed fsync");
    assert!(wal.writable().is_err());
}

/// Regression: under `Periodic` a write was acknowledged before its record reached the
/// file, so a killed process lost acknowledged writes (10 of 10 tries lost some). Now
/// `wait` returns only once the record is written, like Redis' `everysec`.
#[test]
fn periodic_acknowledges_a_record_once_it_is_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Periodic(Duration::from_secs(3600)));
    let wal = Wal::start(opts, 1).unwrap();
    let syncs_at_start = disk.syncs();
    let mut written = Vec::new();
    for round in 0..50u64 {
        let lsn = append(&wal, format!("record {round}").as_bytes());
        written.push((lsn, format!("record {round}").into_bytes()));
        wal.wait(lsn).unwrap();
        assert!(wal.stats().written_lsn >= lsn, "acknowledged before it was written");
        // The record is in the file now: a reader opening it (recovery after a crash of
        // the process) finds every acknowledged record.
        assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, written, "round {round}");
    }
    assert_eq!(disk.syncs(), syncs_at_start, "written, not fsynced: the hour has not passed");
    assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, written, "a reader sees every record");
    wal.close().unwrap();
}

/// What a [`Gate`] can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    Writes,
    Syncs,
}

/// A gate in front of a disk's writes or fsyncs: a test closes it, waits (a handshake,
/// not a sleep) until the log's writer is blocked at it, does what must happen while the
/// writer is inside that call, then opens it.
#[derive(Debug, Default)]
struct Gate {
    state: std::sync::Mutex<GateState>,
    changed: std::sync::Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    held: Option<Held>,
    blocked: usize,
    /// The name of the thread behind each write that passed, in order.
    writers: Vec<String>,
}

impl Gate {
    fn close(&self, what: Held) {
        self.state.lock().unwrap().held = Some(what);
    }

    fn open(&self) {
        self.state.lock().unwrap().held = None;
        self.changed.notify_all();
    }

    /// Called by the disk before a write or fsync: blocks while that kind is held.
    fn pass(&self, what: Held) {
        let mut state = self.state.lock().unwrap();
        if what == Held::Writes {
            state.writers.push(std::thread::current().name().unwrap_or("unnamed").to_owned());
        }
        if state.held != Some(what) {
            return;
        }
        state.blocked += 1;
        self.changed.notify_all();
        while state.held == Some(what) {
            state = self.changed.wait(state).unwrap();
        }
        state.blocked -= 1;
    }

    /// Waits until a caller is blocked at the gate (a bounded wait: a writer that never
    /// comes fails the test instead of hanging it).
    fn until_blocked(&self) {
        let state = self.state.lock().unwrap();
        let (state, timeout) =
            self.changed.wait_timeout_while(state, Duration::from_secs(60), |state| state.blocked == 0).unwrap();
        assert!(!timeout.timed_out() && state.blocked > 0, "the writer reached the gate");
    }

    /// The names of the threads that wrote so far.
    fn writers(&self) -> Vec<String> {
        self.state.lock().unwrap().writers.clone()
    }
}

/// A disk whose files' writes and fsyncs pass a [`Gate`] first.
#[derive(Debug)]
struct GatedDisk {
    inner: Arc<dyn hotset_storage::Disk>,
    gate: Arc<Gate>,
}

#[derive(Debug)]
struct GatedFile {
    inner: Box<dyn hotset_storage::DiskFile>,
    gate: Arc<Gate>,
}

impl hotset_storage::DiskFile for GatedFile {
    fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.gate.pass(Held::Writes);
        self.inner.write_all(data)
    }
    fn sync_data(&mut self) -> std::io::Result<()> {
        self.gate.pass(Held::Syncs);
        self.inner.sync_data()
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len)
    }
}

impl GatedDisk {
    fn wrap(&self, file: Box<dyn hotset_storage::DiskFile>) -> Box<dyn hotset_storage::DiskFile> {
        Box::new(GatedFile { inner: file, gate: Arc::clone(&self.gate) })
    }
}

impl hotset_storage::Disk for GatedDisk {
    fn create(&self, path: &Path) -> std::io::Result<Box<dyn hotset_storage::DiskFile>> {
        Ok(self.wrap(self.inner.create(path)?))
    }
    fn open_append(&self, path: &Path) -> std::io::Result<Box<dyn hotset_storage::DiskFile>> {
        Ok(self.wrap(self.inner.open_append(path)?))
    }
    fn open_read(&self, path: &Path) -> std::io::Result<Box<dyn std::io::Read + Send>> {
        self.inner.open_read(path)
    }
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.inner.read(path)
    }
    fn list(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.inner.rename(from, to)
    }
    fn truncate(&self, path: &Path, len: u64) -> std::io::Result<()> {
        self.inner.truncate(path, len)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn file_len(&self, path: &Path) -> std::io::Result<u64> {
        self.inner.file_len(path)
    }
}

/// The test's hold on a gate, which opens it when dropped: a test that fails while the
/// writer is held lets it go, so the log can close and the failure is reported instead
/// of hanging (drop `GateHandle` before the log: declare it after).
struct GateHandle(Arc<Gate>);

impl std::ops::Deref for GateHandle {
    type Target = Gate;
    fn deref(&self) -> &Gate {
        &self.0
    }
}

impl Drop for GateHandle {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// A log on `inner` behind a gate.
fn gated_wal(dir: &Path, policy: FsyncPolicy, inner: Arc<dyn hotset_storage::Disk>) -> (Arc<Wal>, GateHandle) {
    let gate = Arc::new(Gate::default());
    let disk = Arc::new(GatedDisk { inner, gate: Arc::clone(&gate) });
    let wal = Wal::start(WalOptions { disk, ..options(dir, policy, 64 << 20) }, 1).unwrap();
    (Arc::new(wal), GateHandle(gate))
}

/// Group commit, by handshake: while the writer is inside the fsync (`Always`) or the
/// write (`Periodic`) of a first record, `THREADS` appenders each add a record and wait;
/// once they all have (a barrier), the gate opens, and all of them must be written as one
/// batch (under `Always` with one fsync). Under `Periodic` the first waiter is the one
/// writing (it combines) and the next to get the writer's lock writes for all the others.
/// Returns the log and the records, in lsn order.
fn group_commit_by_handshake(wal: &Arc<Wal>, gate: &Gate, held: Held) -> Records {
    const THREADS: usize = 50;
    let before = wal.stats();
    let reached = move |stats: &WalStats| match held {
        Held::Syncs => stats.durable_lsn,
        Held::Writes => stats.written_lsn,
    };
    gate.close(held);
    let first = {
        let wal = Arc::clone(wal);
        std::thread::spawn(move || {
            let lsn = append(&wal, b"first");
            wal.wait(lsn).unwrap();
            (lsn, b"first".to_vec())
        })
    };
    gate.until_blocked();
    let appended = Arc::new(std::sync::Barrier::new(THREADS + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (wal, appended) = (Arc::clone(wal), Arc::clone(&appended));
            std::thread::spawn(move || {
                let bytes = format!("thread {thread}").into_bytes();
                let lsn = append(&wal, &bytes);
                appended.wait();
                wal.wait(lsn).unwrap();
                assert!(reached(&wal.stats()) >= lsn, "record {lsn} acknowledged before its {held:?}");
                (lsn, bytes)
            })
        })
        .collect();
    appended.wait();
    assert_eq!(reached(&wal.stats()), reached(&before), "nothing is acknowledged while the gate is held");
    gate.open();
    let mut written = vec![first.join().unwrap()];
    written.extend(workers.into_iter().map(|worker| worker.join().unwrap()));
    written.sort();
    let after = wal.stats();
    assert_eq!(reached(&after), reached(&before) + THREADS as u64 + 1);
    assert_eq!(after.batches - before.batches, 2, "the first record, then all the others at once");
    if held == Held::Syncs {
        assert_eq!(after.fsyncs - before.fsyncs, 2, "one fsync per batch");
    }
    written
}

#[test]
fn group_commit_batches_concurrent_waiters() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FaultyDisk::new());
    let (wal, gate) = gated_wal(dir.path(), FsyncPolicy::Always, disk.clone());
    let syncs_before = disk.syncs();
    let written = group_commit_by_handshake(&wal, &gate, Held::Syncs);
    assert_eq!(disk.syncs() - syncs_before, 2, "the disk saw the two fsyncs");
    Arc::into_inner(wal).unwrap().close().unwrap();
    assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, written);
}

/// The same handshake with real fsyncs; then many threads at once, with no assertion on
/// how they happened to batch (that depends on timing), only on what is durable.
#[test]
fn group_commit_on_the_real_disk() {
    const THREADS: u64 = 50;
    const PER_THREAD: u64 = 10;
    let dir = tempfile::tempdir().unwrap();
    let (wal, gate) = gated_wal(dir.path(), FsyncPolicy::Always, Arc::new(hotset_storage::OsDisk));
    let mut written = group_commit_by_handshake(&wal, &gate, Held::Syncs);
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                (0..PER_THREAD)
                    .map(|i| {
                        let bytes = format!("{thread}:{i}").into_bytes();
                        let lsn = append(&wal, &bytes);
                        wal.wait(lsn).unwrap();
                        assert!(wal.stats().durable_lsn >= lsn, "record {lsn} acknowledged before its fsync");
                        (lsn, bytes)
                    })
                    .collect::<Records>()
            })
        })
        .collect();
    written.extend(workers.into_iter().flat_map(|worker| worker.join().unwrap()));
    written.sort();
    Arc::into_inner(wal).unwrap().close().unwrap();
    assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, written);
}

/// Under `Always` an acknowledgement waits for the fsync: while the writer is held inside
/// it, a wait for the record is still pending (polled once, no timing involved), and it
/// completes once the fsync does. Under `Periodic` it waits for the write: held inside the
/// write, pending; then complete with no fsync done.
#[test]
fn acknowledgements_wait_for_the_write_or_fsync_their_policy_promises() {
    let pending = |wal: &Arc<Wal>, lsn: u64| {
        let mut future = std::pin::pin!(wal.wait_async(lsn));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        future.as_mut().poll(&mut cx).is_pending()
    };
    let dir = tempfile::tempdir().unwrap();
    let (wal, gate) = gated_wal(dir.path(), FsyncPolicy::Always, Arc::new(FaultyDisk::new()));
    gate.close(Held::Syncs);
    let lsn = append(&wal, b"held in its fsync");
    gate.until_blocked();
    assert!(pending(&wal, lsn), "Always: not acknowledged before the fsync");
    gate.open();
    block_on(wal.wait_async(lsn)).unwrap();
    assert!(wal.stats().durable_lsn >= lsn);

    let dir = tempfile::tempdir().unwrap();
    let periodic = FsyncPolicy::Periodic(Duration::from_secs(3600));
    let (wal, gate) = gated_wal(dir.path(), periodic, Arc::new(FaultyDisk::new()));
    gate.close(Held::Writes);
    let lsn = append(&wal, b"held in its write");
    // The waiter writes its record itself (it combines) and is held inside that write.
    let waiter = {
        let wal = Arc::clone(&wal);
        std::thread::spawn(move || wal.wait(lsn))
    };
    gate.until_blocked();
    assert!(pending(&wal, lsn), "Periodic: not acknowledged before the write");
    gate.open();
    block_on(wal.wait_async(lsn)).unwrap();
    waiter.join().unwrap().unwrap();
    let stats = wal.stats();
    assert!(stats.written_lsn >= lsn && stats.durable_lsn < lsn, "Periodic: acknowledged once written, not fsynced");
}

/// Under `Periodic` a waiter writes the queue on its own thread when the writer is free
/// (no wakeup of the writer thread, no park): the writes of a single thread's records
/// happen on that thread. The writer thread looks once a second on its own, so an odd
/// write may still be its; most must not be.
#[test]
fn periodic_waiters_write_their_records_on_their_own_thread() {
    const RECORDS: u64 = 20;
    let dir = tempfile::tempdir().unwrap();
    let (wal, gate) =
        gated_wal(dir.path(), FsyncPolicy::Periodic(Duration::from_secs(3600)), Arc::new(FaultyDisk::new()));
    let written: Records = std::thread::Builder::new()
        .name("the-waiter".to_owned())
        .spawn({
            let wal = Arc::clone(&wal);
            move || {
                (0..RECORDS)
                    .map(|i| {
                        let bytes = payload(i);
                        let lsn = append(&wal, &bytes);
                        wal.wait(lsn).unwrap();
                        assert!(wal.stats().written_lsn >= lsn);
                        (lsn, bytes)
                    })
                    .collect()
            }
        })
        .unwrap()
        .join()
        .unwrap();
    let writers = gate.writers();
    let own = writers.iter().filter(|name| *name == "the-waiter").count();
    assert!(own as u64 >= RECORDS - 2, "writes on the waiting thread: {own} of {RECORDS} ({writers:?})");
    assert_eq!(wal.stats().durable_lsn, 0, "and no fsync: the interval is an hour");
    drop(gate);
    Arc::into_inner(wal).unwrap().close().unwrap();
    assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, written);
}

/// Under `Periodic` an append wakes nobody (its waiter writes it), so a record nobody
/// waits for must still reach the file: the writer thread looks at the queue on its own.
#[test]
fn periodic_writes_a_record_nobody_waits_for() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, _) = faulty_options(dir.path(), FsyncPolicy::Periodic(Duration::from_secs(3600)));
    let wal = Wal::start(opts, 1).unwrap();
    let lsn = append(&wal, b"nobody waits");
    eventually("the writer thread writes it", || wal.stats().written_lsn >= lsn);
    assert_eq!(wal.stats().durable_lsn, 0);
    assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, [(lsn, b"nobody waits".to_vec())]);
    wal.close().unwrap();
}

/// The group-commit handshake under `Periodic`, where waiters combine.
#[test]
fn periodic_waiters_behind_a_write_share_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let periodic = FsyncPolicy::Periodic(Duration::from_secs(3600));
    let (wal, gate) = gated_wal(dir.path(), periodic, Arc::new(FaultyDisk::new()));
    let written = group_commit_by_handshake(&wal, &gate, Held::Writes);
    assert_eq!(wal.stats().durable_lsn, 0, "no fsync: the interval is an hour");
    drop(gate);
    Arc::into_inner(wal).unwrap().close().unwrap();
    assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, written);
}

#[test]
fn a_waiter_returns_only_once_its_record_is_durable() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Always);
    disk.set_sync_delay(Duration::from_millis(2));
    let wal = Arc::new(Wal::start(opts, 1).unwrap());
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    let lsn = append(&wal, format!("{thread}:{i}").as_bytes());
                    wal.wait(lsn).unwrap();
                    assert!(wal.stats().durable_lsn >= lsn, "record {lsn} acknowledged before its fsync");
                }
            })
        })
        .collect();
    // Unparks that are not the writer's (as any other code in the process may do) must not
    // end a wait early.
    while !workers.iter().all(|worker| worker.is_finished()) {
        for worker in &workers {
            worker.thread().unpark();
        }
        std::thread::yield_now();
    }
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(wal.stats().durable_lsn, (THREADS * PER_THREAD) as u64);
}

#[test]
fn waiters_of_a_later_batch_wait_for_their_own_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Always);
    let wal = Arc::new(Wal::start(opts, 1).unwrap());
    let first = append(&wal, b"first");
    wal.wait(first).unwrap();
    // The next fsync fails: a waiter registered for it gets Err, and one that waits for a
    // record already durable gets Ok without waiting.
    disk.set_sync_fails(true);
    let second = append(&wal, b"second");
    let waiter = {
        let wal = Arc::clone(&wal);
        std::thread::spawn(move || wal.wait(second))
    };
    assert!(waiter.join().unwrap().is_err());
    wal.wait(first).unwrap();
}

#[test]
fn coalescing_holds_records_back_but_never_delays_sync_rotate_or_close() {
    // Only `Never` coalesces: under `Periodic` and `Always` writers wait for their records.
    {
        let policy = FsyncPolicy::Never;
        let dir = tempfile::tempdir().unwrap();
        let (opts, disk) = faulty_options(dir.path(), policy);
        let wal = Wal::start(opts, 1).unwrap();
        // With an hour's window nothing but a request (or a full queue) makes the writer
        // write during the test: a request held back by coalescing would hang it.
        wal.set_coalesce_window(Duration::from_secs(3600));
        let (writes_at_start, syncs_at_start) = (disk.writes(), disk.syncs());
        let mut written = append_many(&wal, 10);
        for (lsn, _) in &written {
            wal.wait(*lsn).unwrap();
        }
        let stats = wal.stats();
        assert_eq!((stats.written_lsn, disk.writes()), (0, writes_at_start), "{policy:?}: held back");
        assert!(stats.queued_bytes > 0);

        assert_eq!(wal.sync().unwrap(), 10, "{policy:?}: sync is not held back");
        assert_eq!(disk.writes(), writes_at_start + 1, "{policy:?}: ten records, one write");
        assert_eq!(disk.syncs(), syncs_at_start + 1);
        written.extend(append_many(&wal, 5));
        assert_eq!(wal.rotate().unwrap(), 16, "{policy:?}: rotate is not held back");
        assert_eq!(wal.stats().durable_lsn, 15);
        written.extend(append_many(&wal, 5));
        wal.close().unwrap();
        assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, written, "{policy:?}");
    }
}

#[test]
fn a_coalescing_writer_writes_a_full_queue_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Never);
    let wal = Wal::start(opts, 1).unwrap();
    wal.set_coalesce_window(Duration::from_secs(3600));
    let writes_at_start = disk.writes();
    let record = vec![3; 1000];
    let count = (COALESCE_BYTES / (record.len() + FRAME_HEADER_BYTES) + 1) as u64;
    for _ in 0..count {
        append(&wal, &record);
    }
    eventually("the full queue is written", || wal.stats().written_lsn == count);
    assert!(disk.writes() - writes_at_start <= 2, "{} writes", disk.writes() - writes_at_start);
    wal.close().unwrap();
    assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0.len() as u64, count);
}

#[test]
fn coalesced_records_are_written_without_a_request() {
    {
        let policy = FsyncPolicy::Never;
        let dir = tempfile::tempdir().unwrap();
        let disk = Arc::new(FaultyDisk::new());
        let (wal, gate) = gated_wal(dir.path(), policy, disk.clone());
        let writes_at_start = disk.writes();
        // Records that come while a write is under way go out together, in one write
        // (a handshake: the first write is held until the others are appended).
        gate.close(Held::Writes);
        let mut written = vec![(append(&wal, b"first"), b"first".to_vec())];
        gate.until_blocked();
        written.extend(append_many(&wal, 99));
        gate.open();
        eventually("the records are written", || wal.stats().written_lsn == 100);
        let writes = disk.writes() - writes_at_start;
        assert_eq!(writes, 2, "{policy:?}: the first record, then the 99 that came meanwhile");

        // A record held back by a long window is written once the window is set to zero,
        // which turns coalescing off: every record is written as soon as the writer sees
        // it (here: one at a time).
        wal.set_coalesce_window(Duration::from_secs(3600));
        let held = append(&wal, b"held back");
        assert_eq!(wal.stats().written_lsn, 100);
        wal.set_coalesce_window(Duration::ZERO);
        eventually("the held record is written", || wal.stats().written_lsn == held);
        for _ in 0..3 {
            let lsn = append(&wal, b"not coalesced");
            eventually("the record is written", || wal.stats().written_lsn == lsn);
        }
        assert_eq!(disk.writes() - writes_at_start, writes + 4);
        Arc::into_inner(wal).unwrap().close().unwrap();
        assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0[..100], written);
    }
}

#[test]
fn never_policy_waits_without_fsync_and_close_makes_it_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Never);
    let wal = Wal::start(opts, 1).unwrap();
    let syncs_at_start = disk.syncs();
    let written = append_many(&wal, 100);
    for (lsn, _) in &written {
        wal.wait(*lsn).unwrap();
    }
    eventually("the records are written", || wal.stats().written_lsn == 100);
    assert_eq!(disk.syncs(), syncs_at_start, "Never does not fsync on its own");
    assert_eq!(wal.stats().durable_lsn, 0);
    wal.close().unwrap();
    assert_eq!(disk.syncs(), syncs_at_start + 1, "close fsyncs once");
    assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, written);
}

#[test]
fn periodic_policy_waits_without_fsync_and_syncs_on_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Periodic(Duration::from_secs(3600)));
    let wal = Wal::start(opts, 1).unwrap();
    let syncs_at_start = disk.syncs();
    let written = append_many(&wal, 10);
    wal.wait(10).unwrap();
    assert!(wal.stats().durable_lsn < 10, "wait did not wait for an fsync");
    assert_eq!(wal.sync().unwrap(), 10);
    assert_eq!(disk.syncs(), syncs_at_start + 1);
    assert_eq!(wal.sync().unwrap(), 10, "nothing new: no fsync");
    assert_eq!(disk.syncs(), syncs_at_start + 1);
    wal.close().unwrap();
    assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, written);

    let dir = tempfile::tempdir().unwrap();
    let (opts, _) = faulty_options(dir.path(), FsyncPolicy::Periodic(Duration::from_millis(5)));
    let wal = Wal::start(opts, 1).unwrap();
    let lsn = append(&wal, b"record");
    wal.wait(lsn).unwrap();
    eventually("the periodic fsync", || wal.stats().durable_lsn == lsn);
}

#[test]
fn rotate_starts_a_segment_and_remove_covered_deletes_whole_segments_below() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::start(options(dir.path(), FsyncPolicy::Never, 64 << 20), 1).unwrap();
    append_many(&wal, 3);
    assert_eq!(wal.rotate().unwrap(), 4);
    assert_eq!(wal.rotate().unwrap(), 4, "an empty segment is not rotated again");
    append_many(&wal, 3);
    assert_eq!(wal.rotate().unwrap(), 7);
    append_many(&wal, 3);
    assert_eq!(wal.stats().durable_lsn, 6, "rotation fsyncs what precedes it");
    let names = |dir: &Path| segments(dir).iter().map(|path| first_lsn_of(path)).collect::<Vec<_>>();
    assert_eq!(names(dir.path()), [1, 4, 7]);
    assert_eq!(wal.stats().segments, 3);

    assert_eq!(wal.remove_covered(3).unwrap(), 0, "record 3 is not below 3");
    assert_eq!(wal.remove_covered(4).unwrap(), 1);
    assert_eq!(wal.remove_covered(6).unwrap(), 0, "segment 4 holds record 6");
    assert_eq!(names(dir.path()), [4, 7]);
    assert_eq!(wal.remove_covered(1000).unwrap(), 1, "never the segment being written");
    assert_eq!(names(dir.path()), [7]);
    assert_eq!(wal.stats().segments, 1);
    wal.close().unwrap();

    let (records, _) = replay_records(&WalOptions::new(dir.path()), 7, RecoveryMode::Strict).unwrap();
    assert_eq!(records.iter().map(|(lsn, _)| *lsn).collect::<Vec<_>>(), [7, 8, 9]);
    assert!(matches!(replay_dir(dir.path(), RecoveryMode::Strict), Err(WalError::MissingSegment { first_lsn: 1, .. })));
}

#[test]
fn start_refuses_to_overwrite_records() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::start(options(dir.path(), FsyncPolicy::Never, 64 << 20), 1).unwrap();
    append_many(&wal, 5);
    wal.rotate().unwrap();
    wal.close().unwrap();
    for next_lsn in [1, 4] {
        let error = Wal::start(options(dir.path(), FsyncPolicy::Never, 64 << 20), next_lsn).unwrap_err();
        assert!(matches!(error, WalError::StartConflict { .. }), "start at {next_lsn}: {error}");
    }
    // Replay's answer is accepted: segment 6 is empty, so the new one replaces it.
    let (_, report) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
    assert_eq!(report.next_lsn, 6);
    let wal = Wal::start(options(dir.path(), FsyncPolicy::Never, 64 << 20), 6).unwrap();
    assert_eq!(wal.stats().segments, 2);
    wal.close().unwrap();
}

#[test]
fn drop_writes_what_was_queued() {
    let dir = tempfile::tempdir().unwrap();
    let written = {
        let wal = Wal::start(options(dir.path(), FsyncPolicy::Never, 64 << 20), 1).unwrap();
        append_many(&wal, 20)
    };
    assert_eq!(replay_dir(dir.path(), RecoveryMode::Strict).unwrap().0, written);
}

/// One kind of damage a crash or a bad disk can do to a closed log.
#[derive(Debug, Clone)]
enum Damage {
    Cut { segment: usize, at: usize },
    Flip { segment: usize, at: usize },
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever one damage does, `TruncateCorrupt` replay returns an exact prefix of what
    /// was written, and a second replay is clean and agrees.
    #[test]
    fn any_damage_replays_to_a_prefix(
        count in 1u64..60,
        segment_bytes in 200u64..2000,
        damage in prop_oneof![
            (any::<usize>(), any::<usize>()).prop_map(|(segment, at)| Damage::Cut { segment, at }),
            (any::<usize>(), any::<usize>()).prop_map(|(segment, at)| Damage::Flip { segment, at }),
        ],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let written = write_log(dir.path(), count, segment_bytes);
        let files = segments(dir.path());
        match damage {
            Damage::Cut { segment, at } => {
                let path = &files[segment % files.len()];
                cut_file(path, at % (fs::metadata(path).unwrap().len() as usize + 1));
            }
            Damage::Flip { segment, at } => {
                let path = &files[segment % files.len()];
                flip_byte(path, at % fs::metadata(path).unwrap().len() as usize);
            }
        }
        let strict = replay_dir(dir.path(), RecoveryMode::Strict);
        match replay_dir(dir.path(), RecoveryMode::TruncateCorrupt) {
            Ok((records, report)) => {
                prop_assert_eq!(&records[..], &written[..records.len()]);
                prop_assert_eq!(report.next_lsn, records.len() as u64 + 1);
                if let Ok((strict_records, _)) = strict {
                    prop_assert_eq!(&strict_records, &records, "Strict only differs by refusing");
                }
                let (again, report) = replay_dir(dir.path(), RecoveryMode::Strict).unwrap();
                prop_assert_eq!(again, records);
                prop_assert!(report.torn_tail.is_none() && report.truncated_corruption.is_none());
            }
            Err(error) => prop_assert!(matches!(error, WalError::MissingSegment { .. }), "{}", error),
        }
    }
}

#[test]
fn async_waits_complete_after_the_fsync_and_report_failures() {
    let dir = tempfile::tempdir().unwrap();
    let (opts, disk) = faulty_options(dir.path(), FsyncPolicy::Always);
    disk.set_sync_delay(Duration::from_millis(20));
    let wal = Arc::new(Wal::start(opts, 1).unwrap());
    // Many tasks' worth of waits on one thread: each completes only once durable.
    let lsns: Vec<u64> = (0..20).map(|i| append(&wal, format!("record {i}").as_bytes())).collect();
    for &lsn in &lsns {
        block_on(wal.wait_async(lsn)).unwrap();
        assert!(wal.stats().durable_lsn >= lsn, "acknowledged only once fsynced");
    }
    disk.set_sync_delay(Duration::ZERO);
    disk.set_sync_fails(true);
    let lsn = append(&wal, b"never durable");
    let error = block_on(wal.wait_async(lsn)).unwrap_err();
    assert!(error.to_string().contains("fsync"), "{error}");
    assert!(wal.stats().durable_lsn < lsn);
}
