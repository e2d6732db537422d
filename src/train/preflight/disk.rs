//! The disk a run's checkpoints take: one checkpoint's size on disk (the `checkpoint` line of
//! the plan) times the checkpoints kept at the end of the run, the newest `keep_checkpoints` and
//! every one whose update is a multiple of `keep_every`. While a checkpoint is written the
//! oldest kept one is still there, so the run needs one checkpoint more for a moment.

use serde::Serialize;

use crate::error::human_bytes;
use crate::train::config::RunConfig;

/// What the checkpoints of a run take on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiskPlan {
    /// One checkpoint's bytes on disk.
    pub per_checkpoint_bytes: u64,
    /// Checkpoints the run takes (every `checkpoint_every` updates and the last).
    pub taken: u64,
    /// Checkpoints kept at its end.
    pub kept: u64,
    /// `keep_checkpoints`: the newest this many are kept.
    pub keep_checkpoints: u64,
    /// `keep_every`: and every multiple of this update (0: none).
    pub keep_every: u64,
    /// `per_checkpoint_bytes x kept`.
    pub bytes: u64,
    /// `bytes` plus the checkpoint being written while the others are still there.
    pub peak_bytes: u64,
}

/// The updates after which a run of `cfg` checkpoints (ending cleanly, uninterrupted).
fn taken(cfg: &RunConfig) -> impl Iterator<Item = u64> {
    let (every, last) = (cfg.checkpoint_every.max(1), cfg.updates());
    (1..=last).filter(move |&u| u.is_multiple_of(every) || u == last)
}

/// The disk plan of a run of `cfg` whose checkpoints take `per_checkpoint` bytes each.
pub(crate) fn disk_plan(cfg: &RunConfig, per_checkpoint: u64) -> DiskPlan {
    let all: Vec<u64> = taken(cfg).collect();
    let newest = cfg.keep_checkpoints.max(1).min(all.len());
    let marked = all[..all.len() - newest]
        .iter()
        .filter(|&&u| cfg.keep_every > 0 && u.is_multiple_of(cfg.keep_every))
        .count();
    let kept = (newest + marked) as u64;
    let bytes = per_checkpoint.saturating_mul(kept);
    DiskPlan {
        per_checkpoint_bytes: per_checkpoint,
        taken: all.len() as u64,
        kept,
        keep_checkpoints: cfg.keep_checkpoints.max(1) as u64,
        keep_every: cfg.keep_every,
        bytes,
        peak_bytes: bytes.saturating_add(per_checkpoint),
    }
}

impl DiskPlan {
    /// The plan's table line.
    pub(crate) fn table_line(&self) -> String {
        let every = match self.keep_every {
            0 => String::new(),
            n => format!(" + every multiple of {n}"),
        };
        super::sizing::table_line(
            "checkpoints on disk",
            self.bytes,
            &format!(
                "{} kept of {} (newest {}{every}) x {}; {} while one is written",
                self.kept,
                self.taken,
                self.keep_checkpoints,
                human_bytes(self.per_checkpoint_bytes),
                human_bytes(self.peak_bytes)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_checkpoints_are_the_newest_and_the_marked_ones() {
        let mut cfg = RunConfig {
            arenas: 1,
            rollout: 1,
            total_steps: 10,
            checkpoint_every: 1,
            keep_checkpoints: 2,
            keep_every: 4,
            ..RunConfig::default()
        };
        // 4, 8 marked; 9, 10 newest.
        let d = disk_plan(&cfg, 100);
        assert_eq!((d.taken, d.kept, d.bytes, d.peak_bytes), (10, 4, 400, 500));
        // Every 3 updates and the last: 3, 6, 9, 10; none marked.
        cfg.checkpoint_every = 3;
        assert_eq!(disk_plan(&cfg, 1).kept, 2);
        cfg.keep_every = 0;
        cfg.keep_checkpoints = 10;
        assert_eq!(disk_plan(&cfg, 1).kept, 4);
    }
}
