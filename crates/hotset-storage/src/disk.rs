//! The file-system seam: every file operation of the storage crate goes through [`Disk`].
//!
//! Owns: the [`Disk`] and [`DiskFile`] traits, the real implementation ([`OsDisk`], plain
//! `std::fs`) and a fault-injecting one for tests ([`FaultyDisk`]: a full disk, a write that
//! stops part way, a failing fsync, a slow fsync).
//!
//! Never: knows about WAL or snapshot formats, buffers writes, or retries anything; a failure
//! is returned to the caller exactly as the operating system (or the fault knob) gave it.
//!
//! Invariants: a [`DiskFile`] is an append-only file: `write_all` always writes at its end,
//! also after `set_len` moved the end back (the WAL cuts a failed partial write off that way
//! and then writes the same bytes again). [`FaultyDisk`]'s knobs are atomics, so a test may
//! flip them while another thread writes.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// `ENOSPC`: what a full disk reports (the error kind is `StorageFull`).
const ERRNO_NO_SPACE: i32 = 28;
/// `EIO`: what a failing device reports on fsync.
const ERRNO_IO: i32 = 5;

/// The file system as the storage crate sees it.
pub trait Disk: Send + Sync + fmt::Debug {
    /// Creates the file, or truncates it if it exists, for writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn DiskFile>>;
    /// Opens an existing file for writing at its end.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn DiskFile>>;
    /// Opens an existing file for reading from its start.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>>;
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// The full paths of the files (not directories) directly in `dir`, sorted.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Renames a file, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Sets the file's length, then fsyncs the file.
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()>;
    /// Fsyncs a directory, making the creations, removals and renames in it durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Creates a directory and its missing parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The length of a file in bytes. The default reads the whole file; implementations
    /// should ask the file system instead.
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        self.read(path).map(|bytes| bytes.len() as u64)
    }
}

/// An open file that is written at its end only.
pub trait DiskFile: Send + fmt::Debug {
    /// Writes all of `data` at the end of the file. On error a prefix of it may have been written.
    fn write_all(&mut self, data: &[u8]) -> io::Result<()>;
    /// Flushes the file's data to the device (`fdatasync`).
    fn sync_data(&mut self) -> io::Result<()>;
    /// The file's current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file holds no byte.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Sets the file's length; later writes go to the new end.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
}

/// The real file system, through `std::fs`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsDisk;

/// A file of [`OsDisk`]. Writes go through the file cursor, which `set_len` puts back at the
/// end, so the file behaves as append-only whether it was created or opened for appending.
#[derive(Debug)]
struct OsFile {
    file: File,
}

impl DiskFile for OsFile {
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.file.write_all(data)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        // A failed partial write left the cursor past the new end; writing there would leave
        // a hole of zeros in the middle of the file.
        self.file.seek(SeekFrom::End(0))?;
        Ok(())
    }
}

impl Disk for OsDisk {
    fn create(&self, path: &Path) -> io::Result<Box<dyn DiskFile>> {
        let file = OpenOptions::new().write(true).create(true).truncate(true).open(path)?;
        Ok(Box::new(OsFile { file }))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn DiskFile>> {
        let mut file = OpenOptions::new().write(true).open(path)?;
        file.seek(SeekFrom::End(0))?;
        Ok(Box::new(OsFile { file }))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(File::open(path)?))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut paths = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                paths.push(entry.path());
            }
        }
        paths.sort();
        Ok(paths)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(path)?;
        file.set_len(len)?;
        file.sync_all()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        Ok(fs::metadata(path)?.len())
    }
}

/// The fault knobs shared by a [`FaultyDisk`] and every file it opened.
#[derive(Debug)]
struct Faults {
    full: AtomicBool,
    /// Bytes that may still be written before the disk turns full; `u64::MAX` means no limit.
    bytes_left: AtomicU64,
    sync_fails: AtomicBool,
    sync_delay_us: AtomicU64,
    writes: AtomicU64,
    syncs: AtomicU64,
    /// While true, writes and fsyncs block (a device that stopped answering).
    stalled: parking_lot::Mutex<bool>,
    resumed: parking_lot::Condvar,
    /// Writes and fsyncs blocked by the stall right now.
    blocked: AtomicU64,
}

impl Faults {
    /// Blocks while the disk is stalled.
    fn pass_stall(&self) {
        let mut stalled = self.stalled.lock();
        if !*stalled {
            return;
        }
        self.blocked.fetch_add(1, Ordering::SeqCst);
        while *stalled {
            self.resumed.wait(&mut stalled);
        }
        self.blocked.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Faults {
    /// Decides how much of a write of `len` bytes gets through: `Ok(())` for all of it,
    /// `Err(prefix)` when only `prefix` bytes fit (the disk is then full).
    fn admit(&self, len: usize) -> Result<(), usize> {
        if self.full.load(Ordering::SeqCst) {
            return Err(0);
        }
        let len = len as u64;
        let admitted = self.bytes_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
            (left == u64::MAX || left >= len).then(|| if left == u64::MAX { left } else { left - len })
        });
        match admitted {
            Ok(_) => Ok(()),
            Err(left) => {
                // The limit is crossed: the allowed prefix goes through, then the disk is full.
                self.bytes_left.store(0, Ordering::SeqCst);
                self.full.store(true, Ordering::SeqCst);
                // `left < len` here, and `len` came from a usize.
                Err(left as usize)
            }
        }
    }
}

/// [`OsDisk`] with faults a test can switch on and off while other threads use it.
///
/// Share it as `Arc<FaultyDisk>`: give a clone to the code under test (as `Arc<dyn Disk>`)
/// and keep one to flip the knobs.
#[derive(Debug)]
pub struct FaultyDisk {
    inner: OsDisk,
    faults: Arc<Faults>,
}

impl Default for FaultyDisk {
    fn default() -> Self {
        Self::new()
    }
}

impl FaultyDisk {
    /// A disk without faults (until a knob is set).
    pub fn new() -> FaultyDisk {
        let faults = Faults {
            full: AtomicBool::new(false),
            bytes_left: AtomicU64::new(u64::MAX),
            sync_fails: AtomicBool::new(false),
            sync_delay_us: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            stalled: parking_lot::Mutex::new(false),
            resumed: parking_lot::Condvar::new(),
            blocked: AtomicU64::new(0),
        };
        FaultyDisk { inner: OsDisk, faults: Arc::new(faults) }
    }

    /// While `full`, `create` and `write_all` fail with `ENOSPC` and write nothing.
    /// `set_full(false)` also lifts a [`fail_after_bytes`](Self::fail_after_bytes) limit.
    pub fn set_full(&self, full: bool) {
        if !full {
            self.faults.bytes_left.store(u64::MAX, Ordering::SeqCst);
        }
        self.faults.full.store(full, Ordering::SeqCst);
    }

    /// The next `bytes` bytes are written; the write that crosses the limit writes its
    /// allowed prefix and fails with `ENOSPC`, and the disk stays full until `set_full(false)`.
    pub fn fail_after_bytes(&self, bytes: u64) {
        assert!(bytes < u64::MAX, "u64::MAX means no limit");
        self.faults.bytes_left.store(bytes, Ordering::SeqCst);
    }

    /// While `fails`, `sync_data` fails with `EIO`.
    pub fn set_sync_fails(&self, fails: bool) {
        self.faults.sync_fails.store(fails, Ordering::SeqCst);
    }

    /// Makes every `sync_data` take at least `delay`, like a real device's flush (fsyncs on
    /// a RAM-backed file system are nearly free, which hides batching behaviour).
    pub fn set_sync_delay(&self, delay: Duration) {
        let micros = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.faults.sync_delay_us.store(micros, Ordering::SeqCst);
    }

    /// While `stalled`, `write_all` and `sync_data` block until it is lifted, as on a device
    /// that stopped answering (a hung NFS mount, a dying disk): nothing fails, nothing
    /// moves.
    pub fn set_stalled(&self, stalled: bool) {
        *self.faults.stalled.lock() = stalled;
        if !stalled {
            self.faults.resumed.notify_all();
        }
    }

    /// How many `write_all` and `sync_data` calls the stall holds right now.
    pub fn blocked(&self) -> u64 {
        self.faults.blocked.load(Ordering::SeqCst)
    }

    /// How many `write_all` calls succeeded.
    pub fn writes(&self) -> u64 {
        self.faults.writes.load(Ordering::SeqCst)
    }

    /// How many `sync_data` calls succeeded.
    pub fn syncs(&self) -> u64 {
        self.faults.syncs.load(Ordering::SeqCst)
    }

    fn wrap(&self, file: Box<dyn DiskFile>) -> Box<dyn DiskFile> {
        Box::new(FaultyFile { inner: file, faults: Arc::clone(&self.faults) })
    }
}

fn no_space() -> io::Error {
    io::Error::from_raw_os_error(ERRNO_NO_SPACE)
}

impl Disk for FaultyDisk {
    fn create(&self, path: &Path) -> io::Result<Box<dyn DiskFile>> {
        if self.faults.full.load(Ordering::SeqCst) {
            return Err(no_space());
        }
        Ok(self.wrap(self.inner.create(path)?))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn DiskFile>> {
        Ok(self.wrap(self.inner.open_append(path)?))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        self.inner.open_read(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        self.inner.truncate(path, len)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_len(path)
    }
}

/// A file opened through a [`FaultyDisk`]; it consults the shared knobs on every call.
#[derive(Debug)]
struct FaultyFile {
    inner: Box<dyn DiskFile>,
    faults: Arc<Faults>,
}

impl DiskFile for FaultyFile {
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.faults.pass_stall();
        match self.faults.admit(data.len()) {
            Ok(()) => {
                self.inner.write_all(data)?;
                self.faults.writes.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
            Err(prefix) => {
                self.inner.write_all(&data[..prefix])?;
                Err(no_space())
            }
        }
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.faults.pass_stall();
        let delay_us = self.faults.sync_delay_us.load(Ordering::SeqCst);
        if delay_us > 0 {
            // Simulated device latency, not synchronisation: nothing waits on this.
            std::thread::sleep(Duration::from_micros(delay_us));
        }
        if self.faults.sync_fails.load(Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(ERRNO_IO));
        }
        self.inner.sync_data()?;
        self.faults.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_write_writes_its_allowed_prefix_then_stays_full() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let disk = FaultyDisk::new();
        let mut file = disk.create(&path).unwrap();
        disk.fail_after_bytes(5);
        file.write_all(b"abc").unwrap();
        let error = file.write_all(b"defgh").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::StorageFull);
        assert_eq!(fs::read(&path).unwrap(), b"abcde");
        assert!(file.write_all(b"x").is_err(), "the disk stays full");
        assert!(disk.create(&dir.path().join("g")).is_err());
        assert_eq!(disk.writes(), 1);

        // Cutting the failed write off and writing again continues at the new end.
        file.set_len(3).unwrap();
        disk.set_full(false);
        file.write_all(b"DEF").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"abcDEF");
    }

    #[test]
    fn full_disk_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let disk = FaultyDisk::new();
        let mut file = disk.create(&path).unwrap();
        disk.set_full(true);
        assert_eq!(file.write_all(b"abc").unwrap_err().raw_os_error(), Some(ERRNO_NO_SPACE));
        assert_eq!(file.len().unwrap(), 0);
    }

    #[test]
    fn failing_sync_reports_eio_and_is_not_counted() {
        let dir = tempfile::tempdir().unwrap();
        let disk = FaultyDisk::new();
        let mut file = disk.create(&dir.path().join("f")).unwrap();
        file.sync_data().unwrap();
        disk.set_sync_fails(true);
        assert_eq!(file.sync_data().unwrap_err().raw_os_error(), Some(ERRNO_IO));
        assert_eq!(disk.syncs(), 1);
    }

    #[test]
    fn list_returns_sorted_files_only() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b", "a", "c"] {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        fs::create_dir(dir.path().join("sub")).unwrap();
        let names: Vec<_> =
            OsDisk.list(dir.path()).unwrap().into_iter().map(|p| p.file_name().unwrap().to_owned()).collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn open_append_writes_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"abc").unwrap();
        let mut file = OsDisk.open_append(&path).unwrap();
        file.write_all(b"d").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"abcd");
        assert_eq!(file.len().unwrap(), 4);
        OsDisk.truncate(&path, 2).unwrap();
        assert_eq!(OsDisk.file_len(&path).unwrap(), 2);
    }
}
