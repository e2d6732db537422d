//! What the training loop of a data-parallel job does across ranks besides averaging
//! gradients: one report per update at rank 0 (every rank's episodes, the mean loss), the
//! periodic parameter checksum that proves the ranks still hold the same networks, and the
//! agreement to stop (Ctrl-C reaches ranks at different moments; they stop at the same update).
//! With one rank every function is the identity. [`Ranks`] is the job as the loop sees it:
//! these steps, the fault injected for the multi-rank tests, and how the job splits the run.

use super::RunError;
use super::faults::Fault;
use crate::dist::Job;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::kit::opponent::OpponentScores;
use crate::train::kit::stats::UpdateStats;
use crate::train::learner::Learner;

/// The job a run trains in, with what its loop does across ranks.
pub(crate) struct Ranks<'a> {
    pub(crate) job: &'a Job,
    /// The fault `GRIDARENA_FAULT` injects (none in normal use).
    pub(crate) fault: Fault,
    /// With several replicas on several ranks, each rank's block of whole replicas: it trains
    /// them with no gradient exchange (a one-process learner of its replicas). `None`: one
    /// rank, or data parallelism (every rank steps its own arenas of the one run).
    pub(crate) blocks: Option<Vec<(usize, usize)>>,
    /// Updates between two parameter-checksum comparisons of a data-parallel job.
    checksum_every: u64,
}

impl<'a> Ranks<'a> {
    /// The job of `job.size()` ranks training `cfg`: the fault read from `GRIDARENA_FAULT`
    /// (refused when it does not parse), and the replica blocks.
    pub(crate) fn new(
        cfg: &RunConfig,
        job: &'a Job,
        checksum_every: u64,
    ) -> Result<Ranks<'a>, RunError> {
        let fault = Fault::from_env().map_err(RunError::Fault)?;
        let blocks = (job.size() > 1 && cfg.replica_count() > 1)
            .then(|| crate::dist::replica_blocks(cfg.replica_count(), job.size()));
        Ok(Ranks {
            job,
            fault,
            blocks,
            checksum_every,
        })
    }

    /// This rank's share of the run: its configuration (its block of replicas) and the job its
    /// learner averages gradients over (none with replica blocks).
    pub(crate) fn share(&self, cfg: &RunConfig) -> (RunConfig, Job) {
        match &self.blocks {
            Some(b) => (
                RunConfig {
                    replica_shard: Some(b[self.job.rank()]),
                    ..cfg.clone()
                },
                Job::single(),
            ),
            None => (cfg.clone(), self.job.clone()),
        }
    }

    /// The job's environment steps per step this rank's learner counts: every rank's arenas
    /// with data parallelism; one replica's (each replica steps its own) with replica blocks.
    pub(crate) fn env_steps_factor(&self) -> u64 {
        if self.blocks.is_some() {
            1
        } else {
            self.job.size() as u64
        }
    }

    /// [`agree`]: whether any rank was asked to stop before update `done + 1`.
    pub(crate) fn agree_to_stop(&self, stop: bool, done: u64) -> Result<bool, TrainError> {
        agree(self.job, stop, done)
    }

    /// After an update of `learner`: the `perturb` fault (the asked rank adds 0.001 to its
    /// first parameter), and every `checksum_every` updates of a data-parallel job the
    /// comparison of the ranks' parameter checksums ([`check_checksums`]).
    pub(crate) fn check(&self, learner: &mut dyn Learner) -> Result<(), TrainError> {
        let update = learner.updates_done();
        if self.fault.perturbs(self.job.rank(), update) {
            let mut p = learner.params()?;
            p[0] += 1e-3;
            learner.set_params(&p)?;
        }
        if self.job.size() > 1
            && self.blocks.is_none()
            && update.is_multiple_of(self.checksum_every)
        {
            let params = learner.params()?;
            check_checksums(self.job, &params, update)?;
        }
        Ok(())
    }

    /// [`gather_stats`]: the job's report of an update at rank 0, `None` on the other ranks.
    pub(crate) fn gather(&self, stats: UpdateStats) -> Result<Option<UpdateStats>, TrainError> {
        gather_stats(self.job, stats, self.blocks.is_some())
    }
}

/// The update report of the whole job at rank 0: every rank's finished episodes (so returns
/// are averaged over all episodes of all ranks), the loss and opponent scores averaged over
/// ranks, rank 0's exploration and learning rates; `None` on the other ranks.
///
/// With `replicas` (a job that shards its replicas over ranks), each rank's replicas are a
/// block of the run's, in rank order: their per-replica lists are concatenated, and the
/// single-replica fields are replica 0's (rank 0's).
pub(crate) fn gather_stats(
    job: &Job,
    stats: UpdateStats,
    replicas: bool,
) -> Result<Option<UpdateStats>, TrainError> {
    if job.size() == 1 {
        return Ok(Some(stats));
    }
    // RON keeps NaN and infinities (a diverging loss is reported, not a parse failure).
    let bytes = ron::to_string(&stats)
        .map_err(|e| TrainError::Config(e.to_string()))?
        .into_bytes();
    let all = job
        .gather_bytes(&bytes)
        .map_err(|e| TrainError::Config(e.to_string()))?;
    if !job.is_root() {
        return Ok(None);
    }
    let mut reports = Vec::with_capacity(all.len());
    for b in all {
        let text = String::from_utf8_lossy(&b);
        let s: UpdateStats = ron::from_str(&text).map_err(|e| {
            TrainError::Config(format!("a rank's update report does not parse: {e}"))
        })?;
        reports.push(s);
    }
    Ok(Some(if replicas {
        concat_replicas(reports)
    } else {
        merge(reports)
    }))
}

/// The reports of ranks holding consecutive blocks of replicas as one report of every replica.
fn concat_replicas(reports: Vec<UpdateStats>) -> UpdateStats {
    let mut parts = reports.into_iter().map(|mut s| {
        // A rank with one replica reports it as a single run.
        if s.per_replica.is_empty() {
            s.per_replica = vec![s.episodes.clone()];
            s.replica_scalars = vec![(s.epsilon, s.lr)];
            s.opponents_per_replica = s.opponents.clone().into_iter().collect();
        }
        s
    });
    let Some(mut out) = parts.next() else {
        return UpdateStats::replay((0.0, 0), (0.0, 0.0), Vec::new(), None);
    };
    // The loss over every replica: each rank's mean weighted by its replicas.
    let mut weighted = out.loss as f64 * out.per_replica.len() as f64;
    for s in parts {
        weighted += s.loss as f64 * s.per_replica.len() as f64;
        out.per_replica.extend(s.per_replica);
        out.replica_scalars.extend(s.replica_scalars);
        out.opponents_per_replica.extend(s.opponents_per_replica);
    }
    out.loss = (weighted / out.per_replica.len().max(1) as f64) as f32;
    out
}

/// Every rank's report as one (rank order).
fn merge(mut reports: Vec<UpdateStats>) -> UpdateStats {
    let n = reports.len().max(1) as f32;
    let loss = reports.iter().map(|s| s.loss).sum::<f32>() / n;
    let scores: Vec<OpponentScores> = reports.iter().filter_map(|s| s.opponents.clone()).collect();
    let opponents = mean_scores(&scores);
    let mut out = reports.remove(0);
    for s in reports {
        out.episodes.extend(s.episodes);
        for (mine, theirs) in out.per_replica.iter_mut().zip(s.per_replica) {
            mine.extend(theirs);
        }
    }
    out.loss = loss;
    out.opponents = opponents;
    out
}

/// The element-wise mean of opponent-model scores (`None` when there are none).
fn mean_scores(scores: &[OpponentScores]) -> Option<OpponentScores> {
    let mut mean = scores.first()?.clone();
    let n = scores.len() as f64;
    for s in &scores[1..] {
        let mut s = s.clone();
        for (row, other) in mean.tables_mut().zip(s.tables_mut()) {
            for (a, b) in row.iter_mut().zip(other.iter()) {
                *a += b;
            }
        }
    }
    mean.tables_mut().flatten().for_each(|a| *a /= n);
    mean.train_loss = (scores.iter().map(|s| s.train_loss as f64).sum::<f64>() / n) as f32;
    Some(mean)
}

/// A 64-bit checksum of parameters (CRC-64 of their bits): equal on two ranks exactly when
/// the parameters are bit-identical, up to CRC collisions.
pub(crate) fn checksum(params: &[f32]) -> u64 {
    let crc = crc::Crc::<u64>::new(&crc::CRC_64_ECMA_182);
    crc.checksum(bytemuck::cast_slice(params))
}

/// Compares every rank's parameter checksum after `update`; a mismatch stops the run naming the
/// ranks that differ from rank 0 (every rank sees the same answer, so all stop together).
pub(crate) fn check_checksums(job: &Job, params: &[f32], update: u64) -> Result<(), TrainError> {
    if job.size() == 1 {
        return Ok(());
    }
    let all = job.all_gather_u64(checksum(params));
    disagreement(&all, update).map_or(Ok(()), Err)
}

/// The error for checksums `all` (rank order) that are not all equal.
fn disagreement(all: &[u64], update: u64) -> Option<TrainError> {
    let differ: Vec<usize> = (1..all.len()).filter(|&r| all[r] != all[0]).collect();
    if differ.is_empty() {
        return None;
    }
    let ranks: Vec<String> = differ.iter().map(|r| r.to_string()).collect();
    let sums: Vec<String> = all.iter().map(|c| format!("{c:016x}")).collect();
    Some(TrainError::Diverged {
        update,
        ranks: ranks.join(", "),
        checksums: sums.join(" "),
    })
}

/// Whether any rank was asked to stop (true on every rank then), after checking that every
/// rank has taken the same number of gradient allreduces (`update` updates done): ranks out of
/// step are named instead of averaging unrelated gradients from then on.
pub(crate) fn agree(job: &Job, stop: bool, update: u64) -> Result<bool, TrainError> {
    if job.size() == 1 {
        return Ok(stop);
    }
    let all = job.all_gather_u64(job.allreduces() << 1 | u64::from(stop));
    let steps: Vec<u64> = all.iter().map(|v| v >> 1).collect();
    let differ: Vec<String> = (1..steps.len())
        .filter(|&r| steps[r] != steps[0])
        .map(|r| r.to_string())
        .collect();
    if !differ.is_empty() {
        return Err(TrainError::Config(format!(
            "after update {update} rank(s) {} took another number of optimiser steps than \
             rank 0 (allreduces by rank: {steps:?}); the ranks no longer train one model",
            differ.join(", ")
        )));
    }
    Ok(all.iter().any(|v| v & 1 == 1))
}

#[cfg(test)]
mod tests {
    use super::{checksum, concat_replicas, disagreement, merge};
    use crate::train::kit::stats::UpdateStats;

    fn report(loss: f32, episodes: usize) -> UpdateStats {
        let mut s = UpdateStats::replay((0.0, 0), (0.1, 0.001), Vec::new(), None);
        s.loss = loss;
        let e = crate::metrics::EpisodeSummary {
            arena: 0,
            episode: 0,
            length: 3,
            terminated: true,
            returns: vec![1.0],
            counters: Vec::new(),
        };
        s.episodes = vec![e; episodes];
        s
    }

    #[test]
    fn the_report_holds_every_ranks_episodes_and_the_mean_loss() {
        let merged = merge(vec![report(1.0, 2), report(3.0, 5), report(2.0, 0)]);
        assert_eq!(merged.episodes.len(), 7);
        assert_eq!(merged.loss, 2.0);
        assert_eq!(merged.epsilon, 0.1);
    }

    #[test]
    fn sharded_replicas_report_every_replica_in_rank_order() {
        // Rank 0 holds replicas 0 and 1, rank 1 holds replica 2 alone.
        let mut r0 = report(1.0, 1);
        r0.per_replica = vec![r0.episodes.clone(), Vec::new()];
        r0.replica_scalars = vec![(0.1, 0.001), (0.2, 0.002)];
        let mut r1 = report(5.0, 3);
        r1.epsilon = 0.3;
        let all = concat_replicas(vec![r0, r1]);
        let lens: Vec<usize> = all.per_replica.iter().map(Vec::len).collect();
        assert_eq!(lens, [1, 0, 3]);
        assert_eq!(all.replica_scalars[2], (0.3, 0.001));
        // Replica 0's episodes; the loss over the three replicas: (2 x 1 + 1 x 5) / 3.
        assert_eq!((all.episodes.len(), all.loss), (1, 7.0 / 3.0));
    }

    #[test]
    fn a_checksum_mismatch_names_the_ranks_that_differ_from_rank_0() {
        let a = checksum(&[1.0, 2.0]);
        let b = checksum(&[1.0, 2.000_001]);
        assert_ne!(a, b);
        assert!(disagreement(&[a, a, a], 4).is_none());
        let e = disagreement(&[a, b, a, b], 4).unwrap().to_string();
        assert!(e.contains("rank(s) 1, 3") && e.contains("update 4"), "{e}");
    }
}
