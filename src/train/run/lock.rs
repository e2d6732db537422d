//! One writer per run directory. The writer (a run's only process, or rank 0 of a job) holds
//! `run.lock`, a small JSON file naming its host, process id and start time, created only where
//! none exists (linked into place whole, so a reader never sees half of one) and removed when
//! the run ends, on an error too ([`RunLock`]'s drop). A second writer is refused naming the
//! owner. A lock left by a killed process on this host (its process id no longer running) is
//! taken over, saying so; a lock from another host is never taken over, since this host cannot
//! tell whether that job still runs: the message says how to remove it. Readers (`eval`, the
//! viewer, `load_policy`, `check-run`) never look at the lock.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The lock file's name in the run directory.
pub const LOCK: &str = "run.lock";

/// Why a run's lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process writes the run.
    #[error("{}", held_message(lock, owner, *same_host))]
    Held {
        /// The lock file.
        lock: PathBuf,
        /// Who holds it.
        owner: LockOwner,
        /// Whether the owner runs on this host (and is alive).
        same_host: bool,
    },
    /// A lock file that cannot be read.
    #[error(
        "{}: unreadable lock file ({why}); if no job is writing this run, remove it and run again",
        lock.display()
    )]
    Unreadable {
        /// The lock file.
        lock: PathBuf,
        /// Why it cannot be read.
        why: String,
    },
    /// The lock file cannot be written or removed.
    #[error("{}: {error}", lock.display())]
    Io {
        /// The lock file.
        lock: PathBuf,
        /// The cause.
        error: io::Error,
    },
}

/// Who holds a run's lock: what `run.lock` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockOwner {
    /// The host name.
    pub host: String,
    /// The process id on that host.
    pub pid: u32,
    /// When it took the lock, in seconds since the Unix epoch.
    pub started: u64,
}

impl LockOwner {
    /// This process.
    fn this_process() -> LockOwner {
        LockOwner {
            host: host_name(),
            pid: std::process::id(),
            started: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }
}

/// This host's name: the kernel's, else `$HOSTNAME`, else `unknown`.
fn host_name() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "unknown".to_string())
}

/// Whether process `pid` of this host is running. Where there is no `/proc` to ask, every
/// process counts as running (a lock is then never taken over automatically).
fn running(pid: u32) -> bool {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return true;
    }
    match fs::read_to_string(proc.join(pid.to_string()).join("stat")) {
        // `pid (name) S ...`: a zombie (Z) or dead (X) process has ended.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_none_or(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// The run's lock, held until dropped.
#[derive(Debug)]
pub(crate) struct RunLock {
    path: PathBuf,
    owner: LockOwner,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Only a lock that is still this process's: one taken over meanwhile is its new owner's.
        if read_owner(&self.path).is_ok_and(|o| o == self.owner) {
            let _ = fs::remove_file(&self.path);
        }
        if let Ok(mut held) = HELD.lock() {
            held.retain(|p| p != &self.path);
        }
    }
}

/// The locks this process holds: a lock naming this process's id is stale (left by an earlier
/// process that had the same id) unless it is one of these.
static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// What the lock file at `path` says.
fn read_owner(path: &Path) -> io::Result<LockOwner> {
    let text = fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Takes the lock of the run directory `run`, taking over a stale one of this host (with a
/// message on stderr); refused when another live process holds it, or any process of another
/// host.
pub(crate) fn acquire(run: &Path) -> Result<RunLock, LockError> {
    let path = run.join(LOCK);
    let me = LockOwner::this_process();
    let text = serde_json::to_string_pretty(&me).unwrap_or_default();
    // A second try after taking over a stale lock; losing that race too is a refusal.
    let mut last = None;
    for _ in 0..2 {
        match crate::atomic::write_atomic_new(&path, text.as_bytes()) {
            Ok(()) => {
                if let Ok(mut held) = HELD.lock() {
                    held.push(path.clone());
                }
                return Ok(RunLock { path, owner: me });
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(LockError::Io { lock: path, error }),
        }
        let owner = match read_owner(&path) {
            Ok(owner) => owner,
            // Released meanwhile: try again.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(LockError::Unreadable {
                    lock: path,
                    why: e.to_string(),
                });
            }
        };
        let same_host = owner.host == me.host;
        // The same process id on the same host as this process's is a lock left by an earlier
        // process that had it (containers reuse ids), unless this process holds it.
        let ours = HELD.lock().is_ok_and(|held| held.contains(&path));
        let alive = if owner.pid == me.pid {
            ours
        } else {
            running(owner.pid)
        };
        if !same_host || alive {
            return Err(LockError::Held {
                lock: path,
                owner,
                same_host,
            });
        }
        eprintln!(
            "warning: {}: taking over the lock of process {} on {} (since {}), which is no \
             longer running",
            path.display(),
            owner.pid,
            owner.host,
            utc(owner.started)
        );
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(LockError::Io { lock: path, error }),
        }
        last = Some(owner);
    }
    match last {
        Some(owner) => Err(LockError::Held {
            lock: path,
            owner,
            same_host: true,
        }),
        None => Err(LockError::Unreadable {
            lock: path,
            why: "it appeared and disappeared while being read".into(),
        }),
    }
}

/// The refusal [`LockError::Held`] prints.
fn held_message(lock: &Path, owner: &LockOwner, same_host: bool) -> String {
    let run = lock.parent().unwrap_or(lock).display();
    let head = format!(
        "{run} is being written by process {} on host {} (its lock {} since {})",
        owner.pid,
        owner.host,
        lock.display(),
        utc(owner.started)
    );
    if same_host {
        format!("{head}; one writer per run: wait for it to end, or stop it, then run again")
    } else {
        format!(
            "{head}; a lock from another host is never taken over automatically: if that job \
             is dead, remove {} and run again",
            lock.display()
        )
    }
}

/// `secs` since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's days-to-civil.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("gridarena-lock-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        p
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_825_600), "2000-02-29 12:00:00 UTC");
        assert_eq!(utc(1_767_225_599), "2025-12-31 23:59:59 UTC");
    }

    #[cfg(unix)]
    #[test]
    fn a_second_writer_is_refused_and_the_lock_goes_with_the_first() {
        let run = temp("second");
        let first = acquire(&run).unwrap();
        // Another live process of this host holds it: this test's parent process stands in.
        let other = LockOwner {
            pid: std::os::unix::process::parent_id(),
            ..first.owner.clone()
        };
        fs::write(run.join(LOCK), serde_json::to_string(&other).unwrap()).unwrap();
        let e = acquire(&run).unwrap_err().to_string();
        assert!(e.contains(&format!("process {}", other.pid)), "{e}");
        assert!(e.contains(&other.host), "{e}");
        // Not its lock any more: dropping the first leaves the other's in place.
        drop(first);
        assert!(run.join(LOCK).exists());
        fs::remove_file(run.join(LOCK)).unwrap();
        let again = acquire(&run).unwrap();
        drop(again);
        assert!(!run.join(LOCK).exists());
        fs::remove_dir_all(&run).unwrap();
    }

    #[test]
    fn a_lock_of_another_host_is_never_taken_over() {
        let run = temp("host");
        let other = LockOwner {
            host: "node-that-is-not-this-one".into(),
            pid: 1,
            started: 0,
        };
        fs::write(run.join(LOCK), serde_json::to_string(&other).unwrap()).unwrap();
        let e = acquire(&run).unwrap_err().to_string();
        assert!(
            e.contains("node-that-is-not-this-one") && e.contains("remove"),
            "{e}"
        );
        assert!(run.join(LOCK).exists());
        fs::remove_dir_all(&run).unwrap();
    }
}
