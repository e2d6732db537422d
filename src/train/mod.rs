//! Training: the run configuration, the learners (PQN), the run directory with metrics and
//! atomic checkpoints, resuming, plots and evaluation. `train` drives one run.

pub mod config;
pub mod eval;
pub mod plot;
pub mod pqn;
pub mod rate_limiter;
pub mod run_dir;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use config::RunConfig;
use pqn::{Pqn, PqnState, TrainError};
use run_dir::{Checkpoint, RunDir, RunDirError};

use crate::critic::{Chosen, CriticError, choose_device};
use crate::error::ScenarioError;
use crate::metrics::summarize;
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

fn checkpoint(pqn: &mut Pqn, dir: &RunDir, keep: usize) -> Result<PathBuf, RunError> {
    let params = pqn.critic.params()?;
    if let Some(v) = params.iter().find(|v| !v.is_finite()) {
        return Err(TrainError::NonFinite {
            update: pqn.update,
            tensor: "parameters".into(),
            value: *v,
        }
        .into());
    }
    let (adam_m, adam_v, adam_steps) = pqn.critic.adam_state()?;
    let state = serde_json::to_string(&pqn.save_state()).map_err(|e| RunError::Checkpoint {
        path: dir.path.clone(),
        reason: e.to_string(),
    })?;
    Ok(dir.save_checkpoint(
        &Checkpoint {
            update: pqn.update,
            params,
            adam_m,
            adam_v,
            adam_steps,
            state,
        },
        keep,
    )?)
}

/// Restores the newest checkpoint of `dir` into `pqn`.
pub fn restore(pqn: &mut Pqn, dir: &RunDir) -> Result<u64, RunError> {
    let c = dir.load_latest()?;
    let bad = |reason: String| RunError::Checkpoint {
        path: dir.path.clone(),
        reason,
    };
    pqn.critic.set_params(&c.params).map_err(|e| {
        bad(format!(
            "parameters do not fit this scenario's networks: {e}"
        ))
    })?;
    pqn.critic
        .set_adam_state(&c.adam_m, &c.adam_v, c.adam_steps)?;
    let state: PqnState = serde_json::from_str(&c.state).map_err(|e| bad(e.to_string()))?;
    pqn.load_state(&state)?;
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
}

/// Trains (or resumes) the run in `out`.
pub fn train(cfg: &RunConfig, out: &Path, opts: &TrainOptions) -> Result<TrainSummary, RunError> {
    let (resume, progress, stop) = (opts.resume, opts.progress, opts.stop.clone());
    cfg.validate()?;
    let loaded = load_scenario(cfg)?;
    let device: Chosen = choose_device(cfg.device)?;
    let dir = if resume {
        RunDir::open(out)?
    } else {
        RunDir::create(out)?
    };
    dir.write("config.ron", cfg.to_ron().as_bytes())?;
    dir.write("scenario.ron", loaded.scenario.to_ron().as_bytes())?;

    let mut pqn = Pqn::new(cfg, &loaded, &device)?;
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
    bar.set_position(pqn.env_steps);
    let start = Instant::now();
    let mut recent: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
    let mut interrupted = false;
    let (mut sim, mut learn) = (0.0, 0.0);
    let last = opts.until_update.map_or(updates, |u| u.min(updates));
    while pqn.update < last {
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
        let layout = pqn.batch.layout();
        let m = summarize(
            &layout.counter_names,
            &crate::metrics::learners_only(&stats.episodes, layout.learners),
        );
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
            "update": pqn.update,
            "env_steps": pqn.env_steps,
            "sps": sps,
            "seconds": start.elapsed().as_secs_f64(),
            "loss": stats.loss,
            "epsilon": stats.epsilon,
            "lr": stats.lr,
            "episodes": stats.episodes.len(),
            "return_mean": mean_return,
            "return_per_agent": m.mean_return,
            "collective_return": m.collective_return,
            "equality": m.equality,
            "counters": m.counters.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
        });
        dir.append_metrics(&line.to_string())?;
        let recent_mean = if recent.is_empty() {
            f64::NAN
        } else {
            recent.iter().sum::<f64>() / recent.len() as f64
        };
        bar.set_position(pqn.env_steps);
        bar.set_message(format!(
            "{sps:.0} sps  return {recent_mean:.2}  loss {:.4}",
            stats.loss
        ));
        if pqn.update % cfg.checkpoint_every == 0 {
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
        updates: pqn.update,
        env_steps: pqn.env_steps,
        seconds: start.elapsed().as_secs_f64(),
        interrupted,
        device: device.to_string(),
        sim_seconds: sim,
        learn_seconds: learn,
    })
}
