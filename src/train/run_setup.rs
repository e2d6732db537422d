//! Setting a run up before its first update: what a job of several ranks refuses, the run
//! directory opened (or created) on every rank, restoring the newest checkpoint to resume
//! ([`restore`], [`restore_in`]) with the check that every rank restored the same one, and the
//! progress bar.

use std::path::Path;

use super::config::RunConfig;
use super::run_dir::{self, Resume, RunDir};
use super::{Learner, RunError, TrainError, shards};
use crate::dist::Job;

/// Restores the newest checkpoint of `dir` into `learner`: the update it was taken after and
/// whether the run continues exactly ([`Resume`]). Every length and range is checked before
/// use; a checkpoint that does not fit is refused naming the field.
pub fn restore(learner: &mut dyn Learner, dir: &RunDir) -> Result<(u64, Resume), RunError> {
    restore_in(learner, dir, &Job::single())
}

/// [`restore`] for one rank of a job: rank 0's parameters and Adam, this rank's own arenas and
/// replay; refused when the checkpoint was written by another number of ranks.
pub fn restore_in(
    learner: &mut dyn Learner,
    dir: &RunDir,
    job: &Job,
) -> Result<(u64, Resume), RunError> {
    let c = shards::load_latest(dir, job)?;
    let bad = |reason: String| RunError::Checkpoint {
        path: dir.path.clone(),
        reason,
    };
    learner.set_params(&c.params).map_err(|e| {
        bad(format!(
            "parameters do not fit this scenario's networks: {e}"
        ))
    })?;
    learner.set_adam_state(&c.adam_m, &c.adam_v, c.adam_steps)?;
    let resume = learner
        .load_state(&c.state, &c.extra)
        .map_err(|e| match e {
            TrainError::State(e) => bad(run_dir::state_error(Path::new("state.json"), &e)),
            e => bad(e.to_string()),
        })?;
    Ok((c.update, resume))
}

/// What a job of several ranks refuses: fewer replicas than ranks when it splits replicas
/// over ranks, and the threaded IQL learner, which steps on its own thread, out of the ranks'
/// lockstep.
pub(super) fn refuse_across_ranks(cfg: &RunConfig, job: &Job) -> Result<(), RunError> {
    let n = job.size();
    if n == 1 {
        return Ok(());
    }
    let replicas = cfg.replica_count();
    if replicas > 1 && replicas < n {
        return Err(RunError::Ranks(format!(
            "{replicas} replicas (grid points x seeds) on {n} ranks: a job splits whole replicas \
             over its ranks, so every rank needs one; use at most {replicas} ranks, or one replica \
             (seeds: 1, no sweep) to train it data-parallel on {n} ranks"
        )));
    }
    if cfg.iql.threaded {
        return Err(RunError::Ranks(format!(
            "threaded: true on {n} ranks: the threaded learner steps on its own schedule, so ranks \
             could not average their gradients in step; use threaded: false"
        )));
    }
    Ok(())
}

/// Every rank resumed from the checkpoint of the same update (a filesystem that shows ranks
/// different directory listings would otherwise let them continue from different places).
pub(super) fn same_checkpoint(job: &Job, update: u64, dir: &RunDir) -> Result<(), RunError> {
    if job.size() == 1 {
        return Ok(());
    }
    let all = job.all_gather_u64(update);
    if all.iter().all(|&u| u == all[0]) {
        return Ok(());
    }
    Err(RunError::Ranks(format!(
        "the ranks found different newest checkpoints in {} (update by rank: {all:?}); is the \
         run directory on one shared filesystem?",
        dir.path.display()
    )))
}

/// The run directory, created (or opened to resume) by rank 0; the other ranks wait for it
/// and never write outside their checkpoint shards.
pub(super) fn open_run_dir(out: &Path, resume: bool, job: &Job) -> Result<RunDir, RunError> {
    let dir = if job.is_root() {
        Some(if resume {
            RunDir::open(out)?
        } else {
            RunDir::create(out)?
        })
    } else {
        None
    };
    // Every rank writes its checkpoint shard into the run directory: it must be the same
    // directory on every node. Rank 0 leaves a token the others must see.
    let token = out.join(".job-token");
    if job.size() > 1 && job.is_root() {
        std::fs::write(&token, b"rank 0")
            .map_err(|e| RunError::Ranks(format!("{}: {e}", token.display())))?;
    }
    job.barrier();
    if job.size() > 1 {
        let seen = job.all_gather_u64(u64::from(token.exists()));
        if job.is_root() {
            let _ = std::fs::remove_file(&token);
        }
        let blind: Vec<String> = (0..seen.len())
            .filter(|&r| seen[r] == 0)
            .map(|r| r.to_string())
            .collect();
        if !blind.is_empty() {
            return Err(RunError::Ranks(format!(
                "rank(s) {} cannot see the run directory {} rank 0 created: every rank writes \
                 its checkpoint shard there, so it must be on a filesystem all nodes share",
                blind.join(", "),
                out.display()
            )));
        }
    }
    match dir {
        Some(d) => Ok(d),
        None if resume => Ok(RunDir::open_read_only(out)?),
        None => Ok(RunDir::at(out)),
    }
}

/// The run's progress bar over environment steps (hidden unless `show`).
pub(super) fn progress_bar(show: bool, total_steps: u64) -> indicatif::ProgressBar {
    let bar = if show {
        indicatif::ProgressBar::new(total_steps)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} env steps  {msg}  eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}
