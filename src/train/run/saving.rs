//! What a run writes as it trains and when it ends: this rank's checkpoint (its share of it in
//! a job of several ranks), and rank 0's closing files (the learning curve, a sweep's ranking).

use std::path::PathBuf;

use super::across_ranks::Ranks;
use super::retention::Retention;
use super::run_dir::RunDir;
use super::{RunError, plot, shards, sweep_report};
use crate::train::config::RunConfig;
use crate::train::{Learner, TrainError};

/// Saves `learner`'s checkpoint into `dir` (this rank's part of it in a job of several ranks),
/// keeping those `keep` keeps.
pub(super) fn checkpoint(
    learner: &mut dyn Learner,
    dir: &RunDir,
    keep: Retention,
    ranks: &Ranks,
    extra: crate::train::tensors::NamedTensors,
) -> Result<PathBuf, RunError> {
    let mut c = learner.checkpoint().map_err(|e| match e {
        TrainError::State(e) => RunError::Checkpoint {
            path: dir.path.clone(),
            reason: e.to_string(),
        },
        e => RunError::Train(e),
    })?;
    // What the run keeps beside the learner (a population's snapshots).
    c.extra.extend(extra);
    let (job, fault) = (ranks.job, &ranks.fault);
    Ok(shards::save(
        dir,
        &c,
        keep,
        (job, fault),
        ranks.blocks.as_deref(),
    )?)
}

/// Rank 0's files at the end of a run: the learning curve, and a sweep's ranking.
pub(super) fn finish_files(
    cfg: &RunConfig,
    dir: &RunDir,
) -> Result<Option<sweep_report::SweepTable>, RunError> {
    if let Err(e) = plot::plot_run(&dir.path) {
        eprintln!("warning: no learning-curve plot: {e}");
    }
    if cfg.sweep.is_empty() {
        return Ok(None);
    }
    let table = sweep_report::rank_run(&dir.path).map_err(|reason| RunError::Checkpoint {
        path: dir.path.clone(),
        reason: format!("sweep ranking: {reason}"),
    })?;
    dir.save_sweep_table(&table.to_csv())?;
    if let Err(e) = plot::plot_sweep(&dir.path) {
        eprintln!("warning: no sweep plot: {e}");
    }
    Ok(Some(table))
}
