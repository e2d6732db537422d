//! Training: the run configuration, the learners, the run directory with metrics and
//! atomic checkpoints, resuming, plots and evaluation. [`train`] drives one run.
//!
//! Where things are: the [`Learner`] seam and its registry in `learner`; one file per
//! algorithm (`pqn`, `iql`, `pr2`) with what they share in `error`, `schedule` (learning and
//! exploration rates), `explore` (acting on values), `qnet` (the PQN/IQL network stack),
//! `replay` (ring, rate limiter, replay learners' state), `opponent` (opponent models) and
//! `stats` (update statistics, confidence intervals); TensorBoard event files per replica in
//! `tensorboard`; the memory preflight in `plan`; what a
//! resume may change in `resume_check`; a
//! trained run's greedy [`Policy`](crate::policy::Policy) in `greedy`. Around [`train_in`]'s
//! update loop: its setup (resuming included) in `run_setup`, what it saves in `saving`.

pub(crate) mod across_ranks;
mod algorithms;
pub mod config;
mod error;
pub mod eval;
pub(crate) mod explore;
pub(crate) mod faults;
pub mod gpu_plan;
mod greedy;
pub mod iql;
mod learner;
pub mod online_dqn;
pub mod opponent;
pub mod plan;
pub mod plot;
pub mod pqn;
pub mod pr2;
mod q_head;
mod qnet;
pub mod rate_limiter;
mod recurrent;
pub(crate) mod replay;
mod replicas;
mod replicated;
mod resume_check;
mod returns;
pub mod run_dir;
mod run_setup;
mod saving;
pub mod schedule;
mod sequence_loss;
pub mod shards;
pub(crate) mod sizing;
pub(crate) mod stats;
pub mod sweep;
pub mod sweep_report;
pub mod tensorboard;
pub mod tensors;

pub use algorithms::{new_learner, new_learner_in};
pub use error::TrainError;
pub use greedy::{GreedyPolicy, load_policy};
pub use learner::{BoxedLearner, Learner, Progress};
pub use replay::ReplayState;
pub use resume_check::Change;
pub use run_dir::Resume;
pub use run_setup::{restore, restore_in};
pub use stats::{UpdateStats, mean_ci};

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use config::RunConfig;
use run_dir::RunDirError;
use run_setup::{open_run_dir, progress_bar, refuse_across_ranks, same_checkpoint};
use saving::{checkpoint, finish_files};

use crate::critic::{Chosen, CriticError, choose_device};
use crate::dist::Job;
use crate::error::ScenarioError;
use crate::scenario::{LoadedScenario, Scenario};

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
    /// Stopped by Ctrl-C (a checkpoint was saved).
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

/// Loads the scenario a configuration names (the embedded default when none).
pub fn load_scenario(cfg: &RunConfig) -> Result<LoadedScenario, ScenarioError> {
    match &cfg.scenario {
        Some(p) => Scenario::load(p),
        None => Ok(Scenario::default_pursuit()),
    }
}

/// How to drive a run.
#[derive(Debug, Clone, Default)]
pub struct TrainOptions {
    /// Continue the run in the directory from its newest checkpoint.
    pub resume: bool,
    /// Show a progress bar.
    pub progress: bool,
    /// Polled between updates: when set, a checkpoint is saved and the run ends cleanly.
    pub stop: Arc<AtomicBool>,
    /// End (with a checkpoint) after this update even if the run has more to go.
    pub until_update: Option<u64>,
    /// Memory budget for the preflight (default: three quarters of the available memory).
    pub memory_budget: Option<u64>,
    /// Device memory budget for the preflight's GPU half (default:
    /// [`gpu_plan::GPU_MEMORY_RULE`]).
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
    let (resume, stop) = (opts.resume, opts.stop.clone());
    let progress = opts.progress && job.is_root();
    cfg.validate()?;
    // Every grid point of a sweep is a configuration of its own: checked before anything runs.
    cfg.replicas()?;
    refuse_across_ranks(cfg, job)?;
    let fault = faults::Fault::from_env().map_err(RunError::Fault)?;
    // Several replicas on several ranks: each rank trains its block of whole replicas, with no
    // gradient exchange (a rank is then a one-process learner of its replicas).
    let blocks = (job.size() > 1 && cfg.replica_count() > 1)
        .then(|| crate::dist::replica_blocks(cfg.replica_count(), job.size()));
    let (mine, learner_job) = match &blocks {
        Some(b) => (
            RunConfig {
                replica_shard: Some(b[job.rank()]),
                ..cfg.clone()
            },
            Job::single(),
        ),
        None => (cfg.clone(), job.clone()),
    };
    let loaded = load_scenario(cfg)?;
    let device: Chosen = choose_device(cfg.device)?;
    // Ranks on one node share its memory (a one-rank job keeps the whole budget).
    let share = if job.size() > 1 {
        crate::dist::local_ranks() as u64
    } else {
        1
    };
    let budget = opts
        .memory_budget
        .unwrap_or_else(|| plan::default_budget() / share);
    let preflight = plan::PlanDevice::Chosen(&device);
    let planned = plan::plan_for(&mine, &loaded, preflight, budget, opts.gpu_memory);
    if let Some(refusal) = planned.refusal() {
        return Err(RunError::Memory(refusal));
    }
    if job.size() > 1 && job.is_root() {
        let n = job.size() as u64;
        let human = crate::error::human_bytes;
        println!(
            "memory preflight: {} per rank (budget {}: this node's over {} rank(s) on it), {} for \
             the job's {n} ranks",
            human(planned.total_bytes),
            human(planned.budget_bytes),
            crate::dist::local_ranks(),
            human(planned.total_bytes.saturating_mul(n))
        );
    }
    let dir = open_run_dir(out, resume, job)?;
    if resume {
        resume_check::refuse_changes(&dir, cfg, &loaded)?;
    }
    let mut learner = algorithms::new_learner_in(&mine, &loaded, &device, &learner_job)?;
    // A resumed run's files are rewritten only once its checkpoint has been restored: a
    // failed resume leaves the run directory exactly as it was.
    let restored = if resume {
        Some(restore_in(learner.as_mut(), &dir, job)?)
    } else {
        None
    };
    if let Some((update, _)) = &restored {
        same_checkpoint(job, *update, &dir)?;
    }
    let resume_note = match &restored {
        Some((_, Resume::Approximate(why))) => {
            let note = format!("this resume is approximate: {why}");
            if job.is_root() {
                eprintln!("warning: {note}");
            }
            Some(note)
        }
        _ => None,
    };
    // The job's env steps: every rank's arenas with data parallelism; one replica's (each
    // replica steps its own) with replicas split over ranks.
    let ranks = if blocks.is_some() {
        1
    } else {
        job.size() as u64
    };
    let mut board = None;
    if job.is_root() {
        dir.save_config(&cfg.to_ron(), &loaded.scenario.to_ron())?;
        if let Some((update, _)) = restored {
            dir.truncate_metrics(update)?;
        }
        let resumed_at = restored.as_ref().map(|_| learner.env_steps() * ranks);
        let counters = &learner.batch().layout().counter_names;
        board = Some(tensorboard::RunBoard::new(
            &dir.path,
            &cfg.replicas()?,
            counters,
            resumed_at,
        ));
    }
    let updates = cfg.updates();
    let bar = progress_bar(progress, cfg.total_steps * ranks);
    bar.set_position(learner.env_steps() * ranks);
    let start = Instant::now();
    // Mean returns of the last 20 updates with finished episodes, for the progress bar.
    let mut recent: VecDeque<f64> = VecDeque::new();
    let mut interrupted = false;
    let (mut sim, mut learn) = (0.0, 0.0);
    let last = opts.until_update.map_or(updates, |u| u.min(updates));
    let checksum_every = opts.checksum_every.unwrap_or(CHECKSUM_EVERY).max(1);
    let ranked = (job, &fault, blocks.as_deref());
    while learner.updates_done() < last {
        let done = learner.updates_done();
        if across_ranks::agree(job, stop.load(Ordering::SeqCst), done)? {
            interrupted = true;
            break;
        }
        let t0 = Instant::now();
        let stats = match learner.update() {
            Ok(s) => s,
            Err(e) => {
                bar.abandon();
                return Err(e.into());
            }
        };
        let secs = t0.elapsed().as_secs_f64();
        let (s, l) = learner.take_timing();
        sim += s;
        learn += l;
        let update = learner.updates_done();
        if fault.perturbs(job.rank(), update) {
            let mut p = learner.params()?;
            p[0] += 1e-3;
            learner.set_params(&p)?;
        }
        if job.size() > 1 && blocks.is_none() && update % checksum_every == 0 {
            let params = learner.params()?;
            across_ranks::check_checksums(job, &params, update)?;
        }
        let traffic = job.take_traffic();
        // Rank 0 reports the job's update; the other ranks' reports went to it.
        if let Some(stats) = across_ranks::gather_stats(job, stats, blocks.is_some())? {
            let sps = (cfg.steps_per_update() * ranks) as f64 / secs.max(1e-9);
            let done = (update, learner.env_steps() * ranks);
            let layout = learner.batch().layout();
            let seconds = start.elapsed().as_secs_f64();
            let (mut line, mean_return) = stats::metrics_line(&stats, layout, done, sps, seconds);
            if job.size() > 1 {
                line["ranks"] = job.size().into();
                line["allreduce_seconds"] = traffic.seconds.into();
                line["allreduce_bytes"] = traffic.bytes.into();
                line["allreduce_calls"] = traffic.calls.into();
            }
            if let Some(r) = mean_return {
                recent.push_back(r);
                if recent.len() > 20 {
                    recent.pop_front();
                }
            }
            dir.append_metrics(&line.to_string())?;
            if let Some(board) = &mut board {
                board.log(&stats, layout.learners, done.1, sps)?;
            }
            let recent_mean = if recent.is_empty() {
                f64::NAN
            } else {
                recent.iter().sum::<f64>() / recent.len() as f64
            };
            bar.set_position(done.1);
            bar.set_message(format!(
                "{sps:.0} sps  return {recent_mean:.2}  loss {:.4}",
                stats.loss
            ));
        }
        if update % cfg.checkpoint_every == 0 {
            checkpoint(learner.as_mut(), &dir, cfg.keep_checkpoints, ranked)?;
        }
    }
    checkpoint(learner.as_mut(), &dir, cfg.keep_checkpoints, ranked)?;
    bar.finish_and_clear();
    let sweep = if job.is_root() {
        finish_files(cfg, &dir)?
    } else {
        None
    };
    Ok(TrainSummary {
        run: dir.path.clone(),
        updates: learner.updates_done(),
        env_steps: learner.env_steps() * ranks,
        ranks: job.size(),
        seconds: start.elapsed().as_secs_f64(),
        interrupted,
        device: device.to_string(),
        sim_seconds: sim,
        learn_seconds: learn,
        resume_note,
        replicas: cfg.replica_count(),
        sweep,
    })
}
