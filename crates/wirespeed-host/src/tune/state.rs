//! The state directory: where journals live, its exclusive lock (which
//! serialises every tune command that reads and then writes the
//! journal), and the journal's safe reading and atomic writing.

use super::Journal;
use super::journal::now_unix;
use crate::HostError;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a tune command waits for another one that holds the state
/// directory's lock, unless told otherwise.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(30);

/// Largest journal read back (a journal of every knob is a few hundred KiB).
pub(super) const MAX_JOURNAL_BYTES: u64 = 16 << 20;

/// Where journals live: `dir/journal.json`, with `dir/lock` serialising
/// every command that reads and then writes it.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
    lock_wait: Duration,
}

/// The state directory's exclusive lock, released on drop (and by the
/// kernel when the holder dies, however it dies).
#[derive(Debug)]
pub struct StateLock {
    _file: std::fs::File,
}

/// The effective uid of this process, from /proc/self/status.
pub(crate) fn euid() -> Option<u32> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("Uid:"))?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

static UNIQUE: AtomicU32 = AtomicU32::new(0);

/// A name part no other writer uses: pid, a per-process counter, nanoseconds.
pub(super) fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

impl StateDir {
    /// A state directory (created on first write, mode 0700).
    pub fn new(dir: impl Into<PathBuf>) -> StateDir {
        StateDir {
            dir: dir.into(),
            lock_wait: DEFAULT_LOCK_WAIT,
        }
    }

    /// The same directory, waiting at most `wait` for another command's lock.
    pub fn with_lock_wait(mut self, wait: Duration) -> StateDir {
        self.lock_wait = wait;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(super) fn journal_path(&self) -> PathBuf {
        self.dir.join("journal.json")
    }

    /// Refuses a directory another user could write to: anyone who can
    /// plant a journal there chooses what a rollback writes into the kernel.
    pub(super) fn check_safe(&self) -> Result<(), HostError> {
        use std::os::unix::fs::MetadataExt;
        let shown = self.dir.display();
        let me = euid();
        let link =
            std::fs::symlink_metadata(&self.dir).map_err(|e| HostError::file(&self.dir, e))?;
        if link.file_type().is_symlink() && Some(link.uid()) != me && link.uid() != 0 {
            return Err(HostError::State(format!(
                "state directory {shown} is a symbolic link owned by uid {}: refused (use a directory of your own)",
                link.uid()
            )));
        }
        let m = std::fs::metadata(&self.dir).map_err(|e| HostError::file(&self.dir, e))?;
        if !m.is_dir() {
            return Err(HostError::State(format!("{shown} is not a directory")));
        }
        if Some(m.uid()) != me && m.uid() != 0 {
            return Err(HostError::State(format!(
                "state directory {shown} belongs to uid {}, not to this user: refused (a journal there decides what rollback writes)",
                m.uid()
            )));
        }
        if m.mode() & 0o022 != 0 {
            return Err(HostError::State(format!(
                "state directory {shown} is writable by other users (mode {:o}): refused, since a journal planted there decides what rollback writes; run `chmod go-w {shown}`",
                m.mode() & 0o7777
            )));
        }
        Ok(())
    }

    /// Creates the directory (0700) when missing and checks who can write it.
    pub(super) fn ensure(&self) -> Result<(), HostError> {
        use std::os::unix::fs::DirBuilderExt;
        if !self.dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(|e| HostError::file(&self.dir, e))?;
        }
        self.check_safe()
    }

    /// Takes the directory's exclusive lock, waiting up to the lock wait
    /// for another command; then writes this process's pid in the lock file.
    pub fn lock(&self) -> Result<StateLock, HostError> {
        use std::io::{Read, Seek, Write};
        use std::os::unix::fs::OpenOptionsExt;
        self.ensure()?;
        let p = self.dir.join("lock");
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&p)
            .map_err(|e| HostError::file(&p, e))?;
        let start = Instant::now();
        loop {
            match f.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    if start.elapsed() >= self.lock_wait {
                        let mut text = String::new();
                        let _ = f.read_to_string(&mut text);
                        return Err(HostError::Busy {
                            dir: self.dir.display().to_string(),
                            holder: text.trim().parse().ok(),
                            waited_s: start.elapsed().as_secs_f64(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(HostError::file(&p, e)),
            }
        }
        let _ = f
            .set_len(0)
            .and_then(|_| f.rewind())
            .and_then(|_| writeln!(f, "{}", std::process::id()));
        Ok(StateLock { _file: f })
    }

    /// The journal, if any. A symbolic link or an oversized file is refused.
    pub fn load(&self) -> Result<Option<Journal>, HostError> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let p = self.journal_path();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&p);
        let f = match f {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(HostError::State(format!(
                    "{} is a symbolic link: refused (wirespeed writes its journal as a plain file; move the link away)",
                    p.display()
                )));
            }
            Err(e) => return Err(HostError::file(&p, e)),
        };
        let mut bytes = Vec::new();
        f.take(MAX_JOURNAL_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| HostError::file(&p, e))?;
        if bytes.len() as u64 > MAX_JOURNAL_BYTES {
            return Err(HostError::State(format!(
                "{} is larger than {} MiB: not a wirespeed journal",
                p.display(),
                MAX_JOURNAL_BYTES >> 20
            )));
        }
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|error| HostError::BadJournal {
                path: p.display().to_string(),
                error,
            })
    }

    /// Writes the journal atomically (a temporary file of its own, fsync,
    /// rename, fsync of the directory).
    pub fn save(&self, j: &Journal) -> Result<(), HostError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        self.ensure()?;
        let tmp = self
            .dir
            .join(format!("journal.json.tmp-{}", unique_suffix()));
        let data = serde_json::to_vec_pretty(j).map_err(HostError::Encode)?;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&data).and_then(|_| f.sync_all()));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(HostError::file(&tmp, e));
        }
        if let Err(e) = std::fs::rename(&tmp, self.journal_path()) {
            let _ = std::fs::remove_file(&tmp);
            return Err(HostError::file(self.journal_path(), e));
        }
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Removes the journal (after a rollback), keeping a copy beside it.
    pub fn retire(&self) -> Result<(), HostError> {
        self.retire_as("rolled-back")
    }

    /// Moves the journal aside as `PREFIX-TIME-UNIQUE.json`.
    pub(super) fn retire_as(&self, prefix: &str) -> Result<(), HostError> {
        let p = self.journal_path();
        if p.exists() {
            let done = self.dir.join(format!(
                "{prefix}-{}-{}.json",
                now_unix() as u64,
                unique_suffix()
            ));
            std::fs::rename(&p, &done).map_err(|e| HostError::file(&p, e))?;
        }
        Ok(())
    }
}
