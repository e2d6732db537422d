//! Training: the run configuration, the learners (PQN), the run directory with metrics and
//! atomic checkpoints, resuming, plots and evaluation. `train` drives one run.

pub mod config;
pub mod eval;
pub mod iql;
pub mod opponent;
pub mod plan;
pub mod plot;
pub mod pqn;
pub mod pr2;
pub mod rate_limiter;
pub mod run_dir;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use config::{Algo, RunConfig};
use iql::{Iql, IqlState};
use pqn::{Pqn, PqnState, TrainError, UpdateStats};
use pr2::{Pr2Iql, Pr2State};
use run_dir::{Checkpoint, RunDir, RunDirError};

use crate::critic::{Chosen, CriticError, choose_device};
use crate::error::ScenarioError;
use crate::metrics::summarize;
use crate::scenario::{LoadedScenario, Scenario};

/// The learner a run uses.
pub enum Learner {
    /// PQN.
    Pqn(Box<Pqn>),
    /// IQL.
    Iql(Box<Iql>),
    /// PR2-IQL.
    Pr2(Box<Pr2Iql>),
}

impl Learner {
    /// A fresh learner for the configuration's algorithm.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<Learner, TrainError> {
        Ok(match cfg.algo {
            Algo::Pqn => Learner::Pqn(Box::new(Pqn::new(cfg, loaded, device)?)),
            Algo::Iql => Learner::Iql(Box::new(Iql::new(cfg, loaded, device)?)),
            Algo::Pr2Iql => Learner::Pr2(Box::new(Pr2Iql::new(cfg, loaded, device)?)),
        })
    }

    /// One update.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        match self {
            Learner::Pqn(p) => p.update(),
            Learner::Iql(q) => q.update(),
            Learner::Pr2(q) => q.update(),
        }
    }

    /// Seconds in simulation and learning since the last call.
    pub fn take_timing(&mut self) -> (f64, f64) {
        match self {
            Learner::Pqn(p) => p.take_timing(),
            Learner::Iql(q) => q.take_timing(),
            Learner::Pr2(q) => q.take_timing(),
        }
    }

    /// The arenas.
    pub fn batch(&mut self) -> &mut crate::engine::EnvBatch {
        match self {
            Learner::Pqn(p) => p.batch(),
            Learner::Iql(q) => &mut q.batch,
            Learner::Pr2(q) => &mut q.batch,
        }
    }

    /// The networks.
    pub fn critic(&mut self) -> &mut crate::critic::Critic {
        match self {
            Learner::Pqn(p) => &mut p.critic,
            Learner::Iql(q) => &mut q.critic,
            Learner::Pr2(q) => &mut q.critic,
        }
    }

    /// Updates done.
    pub fn updates_done(&self) -> u64 {
        match self {
            Learner::Pqn(p) => p.update,
            Learner::Iql(q) => q.update,
            Learner::Pr2(q) => q.update,
        }
    }

    /// Environment steps done.
    pub fn env_steps(&self) -> u64 {
        match self {
            Learner::Pqn(p) => p.env_steps,
            Learner::Iql(q) => q.env_steps,
            Learner::Pr2(q) => q.env_steps,
        }
    }

    /// Greedy actions for the current observations.
    pub fn greedy(&mut self) -> Result<Vec<u8>, TrainError> {
        match self {
            Learner::Pqn(p) => p.greedy(),
            Learner::Iql(q) => q.greedy(),
            Learner::Pr2(q) => q.greedy(),
        }
    }

    /// Restores the opponent models' parameters (when the run has models).
    pub fn set_opponent_params(&mut self, p: &[f32]) -> Result<(), TrainError> {
        match self {
            Learner::Pqn(q) => q.set_opponent_params(p),
            Learner::Iql(q) => match &mut q.models {
                Some(m) => m.set_params(p),
                None => Ok(()),
            },
            Learner::Pr2(q) => match &mut q.models {
                Some(m) => m.set_params(p),
                None => Ok(()),
            },
        }
    }

    /// Greedy actions for raw observation rows `[R, N, O]` (R arenas' learners in slot order),
    /// e.g. states decoded by exact analysis.
    pub fn greedy_obs(&mut self, obs: &[u8]) -> Result<Vec<u8>, TrainError> {
        let layout = self.batch().layout();
        let (n, o, a) = (layout.learners, layout.obs_len, layout.actions);
        match self {
            Learner::Pqn(p) => {
                let d = p.spec().input;
                pqn::greedy_rows(&mut p.critic, obs, n, o, d, a)
            }
            Learner::Iql(q) => {
                let d = q.spec().input;
                pqn::greedy_rows(&mut q.critic, obs, n, o, d, a)
            }
            Learner::Pr2(q) => q.greedy_obs(obs),
        }
    }

    /// Runs the opponent models on the current observations and writes each learner's
    /// predicted distributions for the others into its [`crate::components::OpponentModel`]
    /// component (the viewer reads them there). PR2's conditional models predict at the
    /// learner's greedy action. Returns whether the run has opponent models.
    pub fn predict_opponents(&mut self) -> Result<bool, TrainError> {
        let p = match self {
            Learner::Pqn(p) => p.opponent_predictions()?,
            Learner::Iql(q) => q.opponent_predictions()?,
            Learner::Pr2(q) => q.predictions()?,
        };
        match p {
            Some(p) => {
                self.batch().set_opponent_predictions(&p)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn state_json(&mut self) -> Result<String, String> {
        match self {
            Learner::Pqn(p) => serde_json::to_string(&p.save_state().map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string()),
            Learner::Iql(q) => serde_json::to_string(&q.save_state().map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string()),
            Learner::Pr2(q) => serde_json::to_string(&q.save_state().map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string()),
        }
    }

    fn load_state_json(&mut self, text: &str) -> Result<(), String> {
        match self {
            Learner::Pqn(p) => {
                let s: PqnState = serde_json::from_str(text).map_err(|e| e.to_string())?;
                p.load_state(&s).map_err(|e| e.to_string())
            }
            Learner::Iql(q) => {
                let s: IqlState = serde_json::from_str(text).map_err(|e| e.to_string())?;
                q.load_state(&s).map_err(|e| e.to_string())
            }
            Learner::Pr2(q) => {
                let s: Pr2State = serde_json::from_str(text).map_err(|e| e.to_string())?;
                q.load_state(&s).map_err(|e| e.to_string())
            }
        }
    }
}

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
    /// The preflight refused the run.
    #[error("memory preflight: {0} (see `gridarena plan`)")]
    Memory(String),
    /// A checkpoint that does not fit this run.
    #[error("checkpoint {path}: {reason}")]
    Checkpoint {
        /// The checkpoint.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct TrainSummary {
    /// The run directory.
    pub run: PathBuf,
    /// Updates done in total.
    pub updates: u64,
    /// Environment steps done in total.
    pub env_steps: u64,
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
}

/// Loads the scenario a configuration names (the embedded default when none).
pub fn load_scenario(cfg: &RunConfig) -> Result<LoadedScenario, ScenarioError> {
    match &cfg.scenario {
        Some(p) => Scenario::load(p),
        None => Ok(Scenario::default_pursuit()),
    }
}

fn checkpoint(learner: &mut Learner, dir: &RunDir, keep: usize) -> Result<PathBuf, RunError> {
    let update = learner.updates_done();
    let params = learner.critic().params()?;
    if let Some(v) = params.iter().find(|v| !v.is_finite()) {
        return Err(TrainError::NonFinite {
            update,
            tensor: "parameters".into(),
            value: *v,
        }
        .into());
    }
    let (adam_m, adam_v, adam_steps) = learner.critic().adam_state()?;
    let state = learner
        .state_json()
        .map_err(|reason| RunError::Checkpoint {
            path: dir.path.clone(),
            reason,
        })?;
    Ok(dir.save_checkpoint(
        &Checkpoint {
            update,
            params,
            adam_m,
            adam_v,
            adam_steps,
            state,
        },
        keep,
    )?)
}

/// Restores the newest checkpoint of `dir` into `learner`.
pub fn restore(learner: &mut Learner, dir: &RunDir) -> Result<u64, RunError> {
    let c = dir.load_latest()?;
    let bad = |reason: String| RunError::Checkpoint {
        path: dir.path.clone(),
        reason,
    };
    learner.critic().set_params(&c.params).map_err(|e| {
        bad(format!(
            "parameters do not fit this scenario's networks: {e}"
        ))
    })?;
    learner
        .critic()
        .set_adam_state(&c.adam_m, &c.adam_v, c.adam_steps)?;
    learner.load_state_json(&c.state).map_err(bad)?;
    Ok(c.update)
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
}

/// Trains (or resumes) the run in `out`.
pub fn train(cfg: &RunConfig, out: &Path, opts: &TrainOptions) -> Result<TrainSummary, RunError> {
    let (resume, progress, stop) = (opts.resume, opts.progress, opts.stop.clone());
    cfg.validate()?;
    let loaded = load_scenario(cfg)?;
    let device: Chosen = choose_device(cfg.device)?;
    let budget = opts.memory_budget.unwrap_or_else(plan::default_budget);
    if let Some(refusal) = plan::plan(cfg, &loaded, &device, budget).refusal() {
        return Err(RunError::Memory(refusal));
    }
    let dir = if resume {
        RunDir::open(out)?
    } else {
        RunDir::create(out)?
    };
    dir.write("config.ron", cfg.to_ron().as_bytes())?;
    dir.write("scenario.ron", loaded.scenario.to_ron().as_bytes())?;

    let mut pqn = Learner::new(cfg, &loaded, &device)?;
    if resume {
        let update = restore(&mut pqn, &dir)?;
        dir.truncate_metrics(update)?;
    }
    let updates = cfg.updates();
    let bar = if progress {
        indicatif::ProgressBar::new(cfg.total_steps)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} env steps  {msg}  eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_position(pqn.env_steps());
    let start = Instant::now();
    let mut recent: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
    let mut interrupted = false;
    let (mut sim, mut learn) = (0.0, 0.0);
    let last = opts.until_update.map_or(updates, |u| u.min(updates));
    while pqn.updates_done() < last {
        if stop.load(Ordering::SeqCst) {
            interrupted = true;
            break;
        }
        let t0 = Instant::now();
        let stats = match pqn.update() {
            Ok(s) => s,
            Err(e) => {
                bar.abandon();
                return Err(e.into());
            }
        };
        let secs = t0.elapsed().as_secs_f64();
        let (s, l) = pqn.take_timing();
        sim += s;
        learn += l;
        let sps = cfg.steps_per_update() as f64 / secs.max(1e-9);
        let layout = pqn.batch().layout();
        let m = summarize(
            &layout.counter_names,
            &crate::metrics::learners_only(&stats.episodes, layout.learners),
        );
        // With several seeds: each replica's mean return and the across-seed mean and 95% CI.
        let per_seed: Vec<Option<f64>> = stats
            .per_replica
            .iter()
            .map(|eps| {
                let m = summarize(
                    &layout.counter_names,
                    &crate::metrics::learners_only(eps, layout.learners),
                );
                (!eps.is_empty())
                    .then(|| m.mean_return.iter().sum::<f64>() / m.mean_return.len().max(1) as f64)
            })
            .collect();
        let seeds_done: Vec<f64> = per_seed.iter().flatten().copied().collect();
        let seed_mean = (!seeds_done.is_empty())
            .then(|| seeds_done.iter().sum::<f64>() / seeds_done.len() as f64);
        let seed_ci = (seeds_done.len() > 1).then(|| {
            let m = seed_mean.unwrap_or(0.0);
            let var = seeds_done.iter().map(|x| (x - m).powi(2)).sum::<f64>()
                / (seeds_done.len() - 1) as f64;
            1.96 * (var / seeds_done.len() as f64).sqrt()
        });
        let mean_return = if stats.episodes.is_empty() {
            None
        } else {
            Some(m.mean_return.iter().sum::<f64>() / m.mean_return.len().max(1) as f64)
        };
        if let Some(r) = mean_return {
            recent.push_back(r);
            if recent.len() > 20 {
                recent.pop_front();
            }
        }
        let line = serde_json::json!({
            "update": pqn.updates_done(),
            "env_steps": pqn.env_steps(),
            "sps": sps,
            "seconds": start.elapsed().as_secs_f64(),
            "loss": stats.loss,
            "epsilon": stats.epsilon,
            "lr": stats.lr,
            "episodes": stats.episodes.len(),
            "return_mean": mean_return,
            "seeds_return_per_seed": per_seed,
            "seeds_return_mean": seed_mean,
            "seeds_return_ci95": seed_ci,
            "return_per_agent": m.mean_return,
            "collective_return": m.collective_return,
            "equality": m.equality,
            "opponent_accuracy": stats.opponents.as_ref().map(|o| o.accuracy.clone()),
            "opponent_log_loss": stats.opponents.as_ref().map(|o| o.log_loss.clone()),
            "opponent_uniform_log_loss": stats.opponents.as_ref().map(|o| o.uniform_log_loss),
            "opponent_train_loss": stats.opponents.as_ref().map(|o| o.train_loss),
            "counters": m.counters.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
        });
        dir.append_metrics(&line.to_string())?;
        let recent_mean = if recent.is_empty() {
            f64::NAN
        } else {
            recent.iter().sum::<f64>() / recent.len() as f64
        };
        bar.set_position(pqn.env_steps());
        bar.set_message(format!(
            "{sps:.0} sps  return {recent_mean:.2}  loss {:.4}",
            stats.loss
        ));
        if pqn.updates_done() % cfg.checkpoint_every == 0 {
            checkpoint(&mut pqn, &dir, cfg.keep_checkpoints)?;
        }
    }
    checkpoint(&mut pqn, &dir, cfg.keep_checkpoints)?;
    bar.finish_and_clear();
    if let Err(e) = plot::plot_run(&dir.path) {
        eprintln!("warning: no learning-curve plot: {e}");
    }
    Ok(TrainSummary {
        run: dir.path.clone(),
        updates: pqn.updates_done(),
        env_steps: pqn.env_steps(),
        seconds: start.elapsed().as_secs_f64(),
        interrupted,
        device: device.to_string(),
        sim_seconds: sim,
        learn_seconds: learn,
    })
}
