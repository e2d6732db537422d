//! Problems with a run directory and its checkpoints ([`RunDirError`]), and what is wrong
//! with a damaged checkpoint ([`Damage`]): what the modules around the run directory report.

use std::fmt;
use std::path::{Path, PathBuf};

use super::lock::LockError;

/// Problems with the run directory.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// Filesystem problem.
    #[error("{path}: {error}")]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The cause.
        error: std::io::Error,
    },
    /// A run is already there.
    #[error("{0} already holds a run; use --resume {0} to continue it, or another --out")]
    Exists(PathBuf),
    /// Not a run directory.
    #[error("{0} is not a run directory (it has no config.ron)")]
    NotARun(PathBuf),
    /// Nothing to resume or evaluate.
    #[error("{0} has no complete checkpoint yet")]
    NoCheckpoint(PathBuf),
    /// Every checkpoint of the run is damaged.
    #[error(
        "{} has no intact checkpoint; each one and its damage:{}",
        run.display(),
        describe(damaged)
    )]
    NoIntactCheckpoint {
        /// The run directory.
        run: PathBuf,
        /// Each checkpoint (newest first) and the first damage found in it.
        damaged: Vec<(PathBuf, Damage)>,
    },
    /// A checkpoint could not be written (the disk is full, a quota is spent, an I/O error):
    /// nothing of it is left behind, and the checkpoints published before it are intact.
    #[error(
        "cannot write the checkpoint of update {update}: {}: {error}{}; the checkpoint needs \
         about {} ({bytes} bytes). Nothing of it was kept and the checkpoints before it are \
         intact: free space, then resume the run with --resume",
        path.display(),
        full_hint(error),
        crate::error::human_bytes(*bytes)
    )]
    CheckpointWrite {
        /// The file being written.
        path: PathBuf,
        /// The update the checkpoint was taken after.
        update: u64,
        /// About how many bytes the checkpoint needs.
        bytes: u64,
        /// The cause.
        error: std::io::Error,
    },
    /// A line or record could not be appended to a log of the run (`metrics.jsonl`): the file
    /// is left as it was before it.
    #[error(
        "cannot append {bytes} bytes to {}: {error}{}; the file is as it was before this \
         update's line: free space, then resume the run with --resume",
        path.display(),
        full_hint(error)
    )]
    Append {
        /// The file.
        path: PathBuf,
        /// The bytes it needed.
        bytes: u64,
        /// The cause.
        error: std::io::Error,
    },
    /// A checkpoint that does not parse.
    #[error("{path}: damaged checkpoint: {reason}")]
    Damaged {
        /// The checkpoint.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The run's lock: another process writes it, or its lock file cannot be read.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A resume under another number of ranks than the checkpoint was written by.
    #[error(
        "{path} was written by a job of {saved} rank(s); this job has {now}: resume it with \
         `mpirun -np {saved}` (each rank's arenas and replay are in its own shard)"
    )]
    Ranks {
        /// The checkpoint.
        path: PathBuf,
        /// Ranks that wrote it.
        saved: usize,
        /// Ranks of this job.
        now: usize,
    },
}

/// A filesystem error at `path`, as [`RunDirError::Io`].
pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunDirError + '_ {
    move |error| RunDirError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// What is wrong with a checkpoint: the first damaged file found and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The damaged (or missing) file.
    pub file: PathBuf,
    /// Why it is damaged.
    pub why: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.why)
    }
}

impl Damage {
    /// `file` is damaged because `why`.
    pub(crate) fn new(file: &Path, why: impl Into<String>) -> Damage {
        Damage {
            file: file.to_path_buf(),
            why: why.into(),
        }
    }
}

/// The checkpoints [`RunDirError::NoIntactCheckpoint`] names, one per line.
fn describe(damaged: &[(PathBuf, Damage)]) -> String {
    damaged
        .iter()
        .map(|(checkpoint, damage)| format!("\n  {}: {damage}", checkpoint.display()))
        .collect()
}

impl From<Damage> for RunDirError {
    fn from(d: Damage) -> RunDirError {
        RunDirError::Damaged {
            path: d.file,
            reason: d.why,
        }
    }
}

/// ` (the disk is full)` after an error that says so, else nothing.
pub(crate) fn full_hint(e: &std::io::Error) -> &'static str {
    use std::io::ErrorKind;
    // ENOSPC and EDQUOT on Linux, whatever kind the standard library gives them.
    let full = matches!(e.kind(), ErrorKind::StorageFull | ErrorKind::QuotaExceeded)
        || matches!(e.raw_os_error(), Some(28 | 122));
    if full {
        " (the disk is full, or the quota spent)"
    } else {
        ""
    }
}
