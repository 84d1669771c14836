//! The data folder's lock: one process at a time.
//!
//! Owns: `FolderLock`, an exclusive advisory lock on `<dir>/LOCK` held for the life of the
//! open database, and the file's content (the holder's process id, for the error message).
//! Never: remove the lock file (a second process may be waiting to read it); the lock is
//! the OS's and goes away with the holder, also when it is killed.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Why the folder could not be locked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    #[error("data folder {dir} is in use by another process{holder}; stop it or choose another folder")]
    InUse { dir: PathBuf, holder: String },
    #[error("cannot lock {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// Held while the database is open; dropping it releases the lock.
#[derive(Debug)]
pub struct FolderLock {
    _file: File,
}

impl FolderLock {
    pub fn acquire(dir: &Path) -> Result<FolderLock, LockError> {
        let path = dir.join("LOCK");
        let io = |source| LockError::Io { path: path.clone(), source };
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder = if holder.is_empty() { String::new() } else { format!(" (pid {holder})") };
                return Err(LockError::InUse { dir: dir.into(), holder });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(io(source)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        Ok(FolderLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_folder_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::acquire(dir.path()).unwrap();
        let error = FolderLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(error.contains("in use by another process"), "{error}");
        assert!(error.contains(&format!("pid {}", std::process::id())), "{error}");
        drop(first);
        FolderLock::acquire(dir.path()).unwrap();
    }
}
