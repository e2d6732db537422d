//! The run around the learner. [`train_in`]'s update loop is on one screen below: its setup
//! (resuming included) is in `setup.rs`, what it reports each update (`metrics.jsonl`,
//! TensorBoard, the progress bar) in `report.rs`, what it saves in `saving.rs`, and what it
//! does across the ranks of a job in `across_ranks.rs` (with the multi-rank tests' fault
//! injection in `faults.rs`). Around it: the run directory (`run_dir`) and a job's checkpoint
//! shards (`shards`), what a resume may change (`resume_check`), TensorBoard event files per
//! replica (`tensorboard`), the learning curve (`plot`) and a sweep's ranking
//! (`sweep_report`), and a trained run's greedy [`Policy`](crate::policy::Policy) (`greedy`)
//! with its evaluation (`eval`).

pub(crate) mod across_ranks;
pub mod check_run;
mod dir_error;
pub mod eval;
pub(crate) mod faults;
pub(crate) mod greedy;
pub mod integrity;
pub(crate) mod lock;
pub mod plot;
mod population;
mod report;
pub(crate) mod resume_check;
pub(crate) mod retention;
pub mod run_dir;
mod saving;
mod setup;
pub mod shards;
pub mod state_policy;
pub mod sweep_report;
pub mod tensorboard;

pub use setup::{load_scenario, restore, restore_in, trained_scenario};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use across_ranks::Ranks;
use report::Reporter;
use resume_check::Change;
use run_dir::{RunDir, RunDirError};
use saving::{checkpoint, finish_files};

use crate::critic::{Chosen, CriticError};
use crate::dist::Job;
use crate::error::ScenarioError;
use crate::train::config::{self, RunConfig};
use crate::train::error::TrainError;
use crate::train::kit::stats::UpdateStats;
use crate::train::learner::BoxedLearner;

/// Everything that can stop a run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// The scenario.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The run directory.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// Training itself.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// The device.
    #[error(transparent)]
    Critic(#[from] CriticError),
    /// The TensorBoard event files.
    #[error(transparent)]
    TensorBoard(#[from] tensorboard::TensorBoardError),
    /// The preflight refused the run.
    #[error("memory preflight: {0} (see `gridarena plan`)")]
    Memory(String),
    /// A job of several ranks cannot run this configuration.
    #[error("{0}")]
    Ranks(String),
    /// `GRIDARENA_FAULT` (the multi-rank tests' fault injection) does not parse.
    #[error("{0}")]
    Fault(String),
    /// A checkpoint that does not fit this run.
    #[error("checkpoint {path}: {reason}")]
    Checkpoint {
        /// The checkpoint.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// `--resume` with a configuration or scenario that is not the run's.
    #[error(
        "cannot resume {}: it was trained with another configuration; resuming would change:{}",
        .run.display(),
        resume_check::describe(.changes)
    )]
    ResumeMismatch {
        /// The run directory.
        run: PathBuf,
        /// Each field that differs, `field: saved -> asked`.
        changes: Vec<Change>,
    },
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct TrainSummary {
    /// The run directory.
    pub run: PathBuf,
    /// Updates done in total.
    pub updates: u64,
    /// Environment steps done in total (summed over the ranks of a data-parallel job).
    pub env_steps: u64,
    /// Ranks of the job (1 without MPI).
    pub ranks: usize,
    /// Wall-clock seconds of this invocation.
    pub seconds: f64,
    /// Stopped through [`TrainOptions::stop`] (Ctrl-C or another signal; a checkpoint was
    /// saved) before its last update.
    pub interrupted: bool,
    /// The device used.
    pub device: String,
    /// Seconds stepping arenas vs learning.
    pub sim_seconds: f64,
    /// Seconds in the critic (acting forward passes and updates).
    pub learn_seconds: f64,
    /// Why a resumed run does not continue bit for bit (also printed as a warning when it
    /// resumed); `None` for an exact resume or a fresh run.
    pub resume_note: Option<String>,
    /// Replicas trained together (grid points x seeds); `env_steps` counts one replica's.
    pub replicas: usize,
    /// A sweep's grid points ranked by final return (also in `sweep.csv`); `None` without a
    /// sweep.
    pub sweep: Option<sweep_report::SweepTable>,
}

/// How to drive a run.
#[derive(Debug, Clone, Default)]
pub struct TrainOptions {
    /// Continue the run in the directory from its newest checkpoint.
    pub resume: bool,
    /// Resume when the directory holds a run, start one when it does not (missing, empty, or
    /// without `config.ron`): the same call serves a job's first start and every requeue. A
    /// run stopped before its first checkpoint starts over in its directory. The resume makes
    /// the same checks as [`resume`](Self::resume) (a differing configuration is refused).
    pub resume_if_exists: bool,
    /// Show a progress bar.
    pub progress: bool,
    /// Polled between updates: when set, a checkpoint is saved and the run ends cleanly.
    pub stop: Arc<AtomicBool>,
    /// End (with a checkpoint) after this update even if the run has more to go.
    pub until_update: Option<u64>,
    /// Memory budget for the preflight (default: three quarters of the available memory).
    pub memory_budget: Option<u64>,
    /// Device memory budget for the preflight's GPU half (default:
    /// [`GPU_MEMORY_RULE`](crate::train::gpu_plan::GPU_MEMORY_RULE)).
    pub gpu_memory: Option<u64>,
    /// In a job of several ranks, compare the ranks' parameter checksums every this many
    /// updates (default [`CHECKSUM_EVERY`]).
    pub checksum_every: Option<u64>,
}

/// Updates between two parameter-checksum comparisons of a multi-rank job, by default.
pub const CHECKSUM_EVERY: u64 = 10;

/// Trains (or resumes) the run in `out`: the memory preflight, the run directory (`config.ron`,
/// `scenario.ron`, `metrics.jsonl`, `tensorboard/replica_<r>/`, checkpoints, the learning
/// curve), then updates until the
/// configured steps are done (or `opts` stops it), checkpointing as configured.
///
/// ```
/// use gridarena::critic::Device;
/// use gridarena::policy::Policy;
/// use gridarena::train::{TrainOptions, config::RunConfig, load_policy, train};
///
/// let dir = std::env::temp_dir().join(format!("gridarena-doctest-{}", std::process::id()));
/// // PQN on the embedded Pursuit scenario, two small updates on the CPU.
/// let mut cfg = RunConfig {
///     device: Device::Cpu,
///     arenas: 4,
///     rollout: 8,
///     total_steps: 2 * 4 * 8,
///     ..RunConfig::default()
/// };
/// cfg.pqn.minibatches = 2;
/// cfg.set("network=(hidden: 16, layers: 1)")?; // or by field: cfg.network.hidden = 16
/// assert_eq!((cfg.network.hidden, cfg.network.layers), (16, 1));
/// let summary = train(&cfg, &dir, &TrainOptions::default())?;
/// assert_eq!((summary.updates, summary.env_steps), (2, 64));
/// assert!(dir.join("metrics.jsonl").is_file());
///
/// // The run's greedy policy maps `[R, N, O]` observation rows to `[R, N]` actions.
/// let mut policy = load_policy(&dir)?;
/// let obs = vec![0u8; 8 * 147]; // one arena: 8 pursuers x a 7x7x3 window
/// let mut actions = vec![0u8; 8];
/// policy.actions(&obs, &mut actions)?;
/// assert!(actions.iter().all(|&a| a < 5));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn train(cfg: &RunConfig, out: &Path, opts: &TrainOptions) -> Result<TrainSummary, RunError> {
    train_in(cfg, out, opts, &Job::single())
}

/// [`train`] as rank `job.rank()` of a data-parallel job (every rank calls it with the same
/// configuration and options). Each rank steps its own `arenas` arenas (the job's global batch
/// is `arenas x ranks`) and averages its gradients with the others' before every optimiser
/// step, so all ranks hold the same networks (checked every
/// [`TrainOptions::checksum_every`] updates). Rank 0 alone prints and writes the run's files,
/// with metrics over every rank's episodes; every rank writes its own shard of each
/// checkpoint (see [`shards`]). An error on one rank leaves the others waiting in a
/// collective: the caller ends the job ([`Job::abort`]), as the `gridarena` binary does.
pub fn train_in(
    cfg: &RunConfig,
    out: &Path,
    opts: &TrainOptions,
    job: &Job,
) -> Result<TrainSummary, RunError> {
    // Validation, this rank's share of the run, the memory preflight, the run directory, the
    // learner (restored when resuming) and the reports (`setup.rs`).
    let mut run = Run::setup(cfg, out, opts, job)?;
    let mut interrupted = false;
    while !run.done() {
        // Ctrl-C (`opts.stop`) on any rank: every rank stops after the same update.
        if run.stop_requested()? {
            interrupted = true;
            break;
        }
        let update = run.update()?;
        // The injected fault and the ranks' parameter checksums (`across_ranks.rs`).
        run.check_ranks()?;
        // At rank 0: `metrics.jsonl`, TensorBoard and the progress bar (`report.rs`).
        run.log(update)?;
        if run.checkpoint_due() {
            run.checkpoint()?;
        }
    }
    run.checkpoint()?;
    run.finish(interrupted)
}

/// A run between its setup ([`Run::setup`]) and its end: what [`train_in`]'s loop holds.
struct Run<'a> {
    cfg: &'a RunConfig,
    /// The job, its injected fault and how it splits the run over its ranks.
    ranks: Ranks<'a>,
    learner: BoxedLearner,
    dir: RunDir,
    /// Rank 0's metrics, TensorBoard files and progress bar.
    report: Reporter,
    /// Polled before every update.
    stop: Arc<AtomicBool>,
    /// The loop ends after this update (the run's last, or `until_update`).
    last: u64,
    device: Chosen,
    /// Why a resume is approximate (see [`TrainSummary::resume_note`]).
    resume_note: Option<String>,
    /// Rank 0's lock of the run directory, released when the run ends (or fails).
    _lock: Option<lock::RunLock>,
    /// Seconds stepping arenas, and in the critic, over this invocation's updates.
    sim_seconds: f64,
    learn_seconds: f64,
    /// The update of the newest checkpoint this invocation restored or saved: a run stopped
    /// (or resumed finished) before another update does not write it again.
    saved_at: Option<u64>,
    /// The population playing some slots (`population` of the config), if any.
    population: Option<population::PopulationPlay>,
}

/// One update's report and the seconds it took.
struct Update {
    stats: UpdateStats,
    seconds: f64,
}

impl Run<'_> {
    /// Whether the run (or this invocation, with `until_update`) has done its updates.
    fn done(&self) -> bool {
        self.learner.updates_done() >= self.last
    }

    /// Whether any rank was asked to stop (every rank gets the same answer), once the ranks
    /// have checked that they took the same number of optimiser steps.
    fn stop_requested(&self) -> Result<bool, RunError> {
        let stop = self.stop.load(Ordering::SeqCst);
        Ok(self
            .ranks
            .agree_to_stop(stop, self.learner.updates_done())?)
    }

    /// One update of the learner, timed. A failed update leaves the progress bar where it is.
    fn update(&mut self) -> Result<Update, RunError> {
        let t0 = Instant::now();
        let stats = match self.learner.update() {
            Ok(s) => s,
            Err(e) => {
                self.report.abandon();
                return Err(e.into());
            }
        };
        if let Some(p) = &mut self.population {
            p.updated(self.learner.as_mut())?;
        }
        let seconds = t0.elapsed().as_secs_f64();
        let (sim, learn) = self.learner.take_timing();
        self.sim_seconds += sim;
        self.learn_seconds += learn;
        Ok(Update { stats, seconds })
    }

    /// After an update: the fault `GRIDARENA_FAULT` injects, and every `checksum_every` updates
    /// of a data-parallel job the ranks' parameter checksums compared.
    fn check_ranks(&mut self) -> Result<(), RunError> {
        Ok(self.ranks.check(self.learner.as_mut())?)
    }

    /// Reports an update: every rank's report goes to rank 0, which writes it (with the job's
    /// allreduce traffic since the last update).
    fn log(&mut self, update: Update) -> Result<(), RunError> {
        let traffic = self.ranks.job.take_traffic();
        let Some(stats) = self.ranks.gather(update.stats)? else {
            return Ok(());
        };
        let ranks = self.ranks.env_steps_factor();
        let sps = (self.cfg.steps_per_update() * ranks) as f64 / update.seconds.max(1e-9);
        let done = (
            self.learner.updates_done(),
            self.learner.env_steps() * ranks,
        );
        let layout = self.learner.batch().layout();
        let job = (self.ranks.job.size(), traffic);
        self.report.log(&self.dir, &stats, layout, done, sps, job)
    }

    /// Whether the update just done is one to checkpoint after (`checkpoint_every`).
    fn checkpoint_due(&self) -> bool {
        self.learner
            .updates_done()
            .is_multiple_of(self.cfg.checkpoint_every)
    }

    /// Saves this rank's checkpoint (its shard in a job of several ranks), keeping the newest
    /// `keep_checkpoints` and every multiple of `keep_every`, unless the newest is already this
    /// update's.
    fn checkpoint(&mut self) -> Result<(), RunError> {
        let update = self.learner.updates_done();
        if self.saved_at == Some(update) {
            return Ok(());
        }
        let keep = retention::Retention {
            keep: self.cfg.keep_checkpoints,
            every: self.cfg.keep_every,
        };
        let extra = match &self.population {
            Some(p) => {
                // Who the population is and how the learners fare against each member.
                let members: Vec<_> = p
                    .summary()
                    .into_iter()
                    .map(|(member, win_rate)| serde_json::json!({"member": member, "win_rate": win_rate}))
                    .collect();
                let text = serde_json::to_string_pretty(&serde_json::json!({
                    "update": update,
                    "members": members,
                }))
                .unwrap_or_default();
                let path = self.dir.path.join("population.json");
                crate::atomic::write_atomic(&path, text.as_bytes()).map_err(|error| {
                    RunError::Checkpoint {
                        path,
                        reason: error.to_string(),
                    }
                })?;
                p.tensors()?
            }
            None => Vec::new(),
        };
        checkpoint(self.learner.as_mut(), &self.dir, keep, &self.ranks, extra)?;
        self.saved_at = Some(update);
        Ok(())
    }

    /// Ends the run: the progress bar cleared, rank 0's closing files (the learning curve, a
    /// sweep's ranking), and the summary.
    fn finish(self, interrupted: bool) -> Result<TrainSummary, RunError> {
        self.report.finish();
        let sweep = if self.ranks.job.is_root() {
            finish_files(self.cfg, &self.dir)?
        } else {
            None
        };
        Ok(TrainSummary {
            run: self.dir.path.clone(),
            updates: self.learner.updates_done(),
            env_steps: self.learner.env_steps() * self.ranks.env_steps_factor(),
            ranks: self.ranks.job.size(),
            seconds: self.report.seconds(),
            interrupted,
            device: self.device.to_string(),
            sim_seconds: self.sim_seconds,
            learn_seconds: self.learn_seconds,
            resume_note: self.resume_note,
            replicas: self.cfg.replica_count(),
            sweep,
        })
    }
}
