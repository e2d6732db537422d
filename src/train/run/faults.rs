//! Fault injection for the multi-rank tests, read from `GRIDARENA_FAULT` (unset in normal use):
//!
//! - `kill-in-checkpoint:R:K`: rank R, in this process's K-th multi-rank checkpoint, writes part
//!   of its shard and then kills itself with SIGKILL (the job ends; the newest complete
//!   checkpoint must stay loadable).
//! - `perturb:R:U`: after update U, rank R adds 0.001 to its first parameter (the parameter
//!   checksum must catch it and name the rank).
//! - `enospc-in-checkpoint:R:K`: rank R (0 in a run of one process), in this process's K-th
//!   checkpoint, writes part of its parameters file and then fails as a full disk does
//!   (ENOSPC): the run must stop naming the file and the bytes, and leave no partial file.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable read.
pub const FAULT_VAR: &str = "GRIDARENA_FAULT";

/// An injected fault, or none.
#[derive(Debug, Default)]
pub(crate) struct Fault {
    kind: Option<Kind>,
    checkpoints: AtomicU64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    KillInCheckpoint { rank: usize, nth: u64 },
    DiskFullInCheckpoint { rank: usize, nth: u64 },
    Perturb { rank: usize, update: u64 },
}

impl Fault {
    /// The fault `GRIDARENA_FAULT` asks for (none when unset); a value that does not parse is
    /// refused with the forms allowed.
    pub(crate) fn from_env() -> Result<Fault, String> {
        match std::env::var(FAULT_VAR) {
            Err(_) => Ok(Fault::default()),
            Ok(v) => Fault::parse(&v),
        }
    }

    fn parse(v: &str) -> Result<Fault, String> {
        let bad = || {
            format!(
                "{FAULT_VAR}={v:?}: expected kill-in-checkpoint:RANK:NTH, \
                 enospc-in-checkpoint:RANK:NTH or perturb:RANK:UPDATE"
            )
        };
        let parts: Vec<&str> = v.trim().split(':').collect();
        let [what, rank, n] = parts.as_slice() else {
            return Err(bad());
        };
        let rank: usize = rank.parse().map_err(|_| bad())?;
        let n: u64 = n.parse().map_err(|_| bad())?;
        let kind = match *what {
            "kill-in-checkpoint" => Kind::KillInCheckpoint { rank, nth: n },
            "enospc-in-checkpoint" => Kind::DiskFullInCheckpoint { rank, nth: n },
            "perturb" => Kind::Perturb { rank, update: n },
            _ => return Err(bad()),
        };
        Ok(Fault {
            kind: Some(kind),
            checkpoints: AtomicU64::new(0),
        })
    }

    /// Called by every rank before writing its checkpoint files into `shard`: at its K-th
    /// checkpoint the asked rank writes a partial parameters file and then dies, or fails as a
    /// full disk does (the error of the file it was writing).
    pub(crate) fn in_checkpoint(
        &self,
        rank: usize,
        shard: &Path,
    ) -> Result<(), (PathBuf, io::Error)> {
        let nth = self.checkpoints.fetch_add(1, Ordering::SeqCst) + 1;
        let params = super::run_dir::RunDir::params_file(shard);
        if self.kind == Some(Kind::DiskFullInCheckpoint { rank, nth }) {
            let _ = std::fs::write(&params, b"partial");
            eprintln!("{FAULT_VAR}: rank {rank} finds the disk full in checkpoint {nth}");
            // ENOSPC, as the kernel reports it.
            return Err((params, io::Error::from_raw_os_error(28)));
        }
        if self.kind == Some(Kind::KillInCheckpoint { rank, nth }) {
            let _ = std::fs::write(&params, b"partial");
            eprintln!("{FAULT_VAR}: rank {rank} kills itself in checkpoint {nth}");
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &std::process::id().to_string()])
                .status();
            // `kill` missing: die anyway, as abruptly as the library allows.
            std::process::abort();
        }
        Ok(())
    }

    /// Whether rank `rank` must perturb its parameters after update `update`.
    pub(crate) fn perturbs(&self, rank: usize, update: u64) -> bool {
        self.kind == Some(Kind::Perturb { rank, update })
    }
}

#[cfg(test)]
mod tests {
    use super::{Fault, Kind};

    #[test]
    fn the_fault_forms_parse_and_anything_else_is_refused() {
        let f = Fault::parse("kill-in-checkpoint:1:2").unwrap();
        assert_eq!(f.kind, Some(Kind::KillInCheckpoint { rank: 1, nth: 2 }));
        let f = Fault::parse("enospc-in-checkpoint:0:2").unwrap();
        assert_eq!(f.kind, Some(Kind::DiskFullInCheckpoint { rank: 0, nth: 2 }));
        let f = Fault::parse("perturb:0:3").unwrap();
        assert!(f.perturbs(0, 3) && !f.perturbs(1, 3) && !f.perturbs(0, 2));
        for bad in [
            "",
            "perturb",
            "perturb:a:1",
            "kill:1:1",
            "perturb:1:2:3",
            "perturb:-1:2",
        ] {
            let e = Fault::parse(bad).unwrap_err();
            assert!(e.contains("GRIDARENA_FAULT"), "{bad}: {e}");
        }
    }
}
