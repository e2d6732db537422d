//! Learned best responses, for scenarios too large to enumerate: for each learner i, a fresh PQN
//! learner (the run's hyperparameters, a new seed) trains for a budget of environment steps while
//! the checkpoint's greedy policy acts for every other slot; then M paired episodes (same seeds,
//! hence the same starts and chance streams at first) are played with (best response for i,
//! frozen others) and with the frozen joint policy, and i's discounted returns compared. The
//! gain's mean and 95% interval come from the paired differences. A learned best response is
//! at most as good as the true one, so the result is a lower bound on NashConv (up to the
//! interval).
//!
//! To measure the same quantity as the exact method, episodes run without the step limit up to
//! a horizon `H` with `gamma^H <= 1e-4` (the exact model is an infinite-horizon discounted game).

use std::path::Path;
use std::time::Instant;

use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::run::{AnalysisError, Provenance, run_config, write_result};
use crate::critic::Chosen;
use crate::engine::{EnvBatch, FixedSlots, SlotActor};
use crate::policy::Policy;
use crate::scenario::LoadedScenario;
use crate::train::config::{Algo, LearnConfig, PqnConfig, RunConfig};
use crate::train::kit::stats::mean_ci;
use crate::train::{GreedyPolicy, RunError, TrainError, load_scenario, new_learner};

/// The trained run's greedy policy acting for the slots a best response does not learn.
struct Frozen(Arc<Mutex<GreedyPolicy>>);

impl SlotActor for Frozen {
    fn act(&mut self, obs: &[u8], actions: &mut [u8]) -> Result<(), String> {
        let mut policy = self.0.lock().map_err(|_| "a poisoned lock".to_string())?;
        policy.actions(obs, actions).map_err(|e| e.to_string())
    }

    fn episodes_start(&mut self, started: &[bool]) {
        if let Ok(mut policy) = self.0.lock() {
            policy.episodes_start(started);
        }
    }
}

/// The knobs of a learned best response.
#[derive(Debug, Clone, Copy)]
pub struct LearnedOptions {
    /// Environment steps of best-response training per learner.
    pub steps: u64,
    /// Paired evaluation episodes.
    pub episodes: usize,
}

impl Default for LearnedOptions {
    fn default() -> Self {
        LearnedOptions {
            steps: 1_000_000,
            episodes: 500,
        }
    }
}

/// The result, labelled as a lower bound.
#[derive(Debug, Clone, Serialize)]
pub struct LearnedNashConv {
    /// Sum of the mean gains: a lower bound on NashConv.
    pub nashconv: f64,
    /// Half-width of the 95% interval of the sum.
    pub nashconv_ci95: f64,
    /// Mean gain per learner (0 for learners not analysed).
    pub per_agent_gain: Vec<f64>,
    /// Half-width of each gain's 95% interval.
    pub per_agent_ci95: Vec<f64>,
    /// Mean discounted return of each analysed learner under the frozen joint policy.
    pub policy_values: Vec<f64>,
    /// `learned (lower bound)`.
    pub method: String,
    /// Best-response training steps per learner.
    pub steps: u64,
    /// Paired episodes.
    pub episodes: usize,
    /// Episode horizon used.
    pub horizon: u32,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// The horizon with `gamma^H <= 1e-4` (at most 5,000 steps).
pub fn horizon(gamma: f64) -> u32 {
    if gamma <= 0.0 {
        return 1;
    }
    if gamma >= 1.0 {
        return 5_000;
    }
    ((1e-4f64).ln() / gamma.ln()).ceil().min(5_000.0) as u32
}

/// Plays `episodes` first episodes from fresh arenas (seed `seed`) and returns learner i's
/// discounted return per episode. `br` acts for slot i when given, the frozen policy otherwise.
fn discounted_returns(
    loaded: &LoadedScenario,
    frozen: &mut dyn Policy,
    mut br: Option<&mut dyn Policy>,
    i: usize,
    episodes: usize,
    seed: u64,
    gamma: f64,
) -> Result<Vec<f64>, AnalysisError> {
    let mut batch =
        EnvBatch::new(loaded, episodes, seed).map_err(|e| RunError::from(TrainError::from(e)))?;
    let layout = batch.layout().clone();
    let n = layout.learners;
    let (mut acts, mut own) = (vec![0u8; episodes * n], vec![0u8; episodes * n]);
    let mut returns = vec![0.0f64; episodes];
    let mut running = vec![true; episodes];
    let mut discount = 1.0f64;
    for _ in 0..layout.max_steps {
        let obs = &batch.buffers().obs;
        frozen.actions(obs, &mut acts)?;
        if let Some(br) = br.as_deref_mut() {
            br.actions(obs, &mut own)?;
            for arena in 0..episodes {
                acts[arena * n + i] = own[arena * n + i];
            }
        }
        batch.actions_mut().copy_from_slice(&acts);
        batch
            .step()
            .map_err(|e| RunError::from(TrainError::from(e)))?;
        let starts = crate::train::eval::episode_starts(&batch);
        frozen.episodes_start(&starts);
        if let Some(br) = br.as_deref_mut() {
            br.episodes_start(&starts);
        }
        let b = batch.buffers();
        for arena in 0..episodes {
            if running[arena] {
                returns[arena] += discount * b.rewards[arena * n + i] as f64;
                if b.terminated[arena] != 0 || b.truncated[arena] != 0 {
                    running[arena] = false;
                }
            }
        }
        discount *= gamma;
        if !running.iter().any(|r| *r) {
            break;
        }
    }
    Ok(returns)
}

/// Learned NashConv of the run's newest checkpoint (all learners, or only `agent`).
pub fn learned(
    run: &Path,
    device: &Chosen,
    agent: Option<usize>,
    opts: LearnedOptions,
    progress: bool,
) -> Result<LearnedNashConv, AnalysisError> {
    let t0 = Instant::now();
    let cfg = run_config(run)?;
    // The run's own arena count for training the best responses (run_config keeps one).
    let trained_arenas = crate::train::run_dir::RunDir::load_config(run)
        .map_err(RunError::from)?
        .arenas;
    let mut loaded = load_scenario(&cfg).map_err(RunError::from)?;
    let gamma = cfg.learn.gamma as f64;
    let h = horizon(gamma);
    loaded.scenario.max_steps = h;
    let n = loaded.scenario.learners_per_arena();
    if let Some(i) = agent
        && i >= n
    {
        return Err(AnalysisError::Invalid(format!(
            "--agent {i}: the scenario has learners 0..{n}"
        )));
    }
    if opts.episodes < 2 {
        return Err(AnalysisError::Invalid(
            "--episodes: at least 2 paired episodes for an interval".into(),
        ));
    }
    let greedy = GreedyPolicy::from_run(run, &cfg, &loaded, device)?;
    let source = Provenance {
        checkpoint: format!("checkpoints/update_{:08}", greedy.update()),
        update: greedy.update(),
        gamma,
        method: "learned".into(),
        agent,
    };
    let frozen = Arc::new(Mutex::new(greedy));
    let agents: Vec<usize> = agent.map_or_else(|| (0..n).collect(), |i| vec![i]);
    let (mut gains, mut cis, mut values) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut var_sum = 0.0;
    for &i in &agents {
        // PQN with the trained run's passes (its own section's epochs and minibatches, as
        // every algorithm read them from one field before the configuration had sections).
        let (epochs, minibatches) = cfg.passes();
        let br_cfg = RunConfig {
            algo: Algo::Pqn,
            seeds: 1,
            seed: cfg.seed.wrapping_add(7919 * (i as u64 + 1)),
            total_steps: opts
                .steps
                .max(trained_arenas.max(1) as u64 * cfg.rollout as u64),
            arenas: trained_arenas.max(1),
            learn: LearnConfig {
                opponent_models: false,
                ..cfg.learn.clone()
            },
            pqn: PqnConfig {
                epochs,
                minibatches,
                ..cfg.pqn.clone()
            },
            ..cfg.clone()
        };
        br_cfg.validate().map_err(RunError::from)?;
        // Through the algorithm's public seam: the trained run plays every other slot.
        let mut br = new_learner(&br_cfg, &loaded, device)?;
        br.batch().fix_slots(Some(FixedSlots {
            actor: Box::new(Frozen(frozen.clone())),
            slots: (0..n).map(|l| l != i).collect(),
        }));
        let bar = if progress {
            let b = indicatif::ProgressBar::new(br_cfg.total_steps);
            b.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "best response {i:<8} {{bar:30}} {{pos}}/{{len}} env steps {{msg}} eta {{eta}}"
                ))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        } else {
            indicatif::ProgressBar::hidden()
        };
        for _ in 0..br_cfg.updates() {
            let stats = br.update()?;
            bar.set_position(br.env_steps());
            bar.set_message(format!("loss {:.4}", stats.loss));
        }
        bar.finish_and_clear();
        let seed = cfg.seed.wrapping_add(2_000_003);
        br.batch().fix_slots(None);
        let mut br = GreedyPolicy::new(br);
        let mut guard = frozen
            .lock()
            .map_err(|_| AnalysisError::Invalid("the frozen policy's lock was poisoned".into()))?;
        let fz: &mut dyn Policy = &mut *guard;
        let with_br =
            discounted_returns(&loaded, fz, Some(&mut br), i, opts.episodes, seed, gamma)?;
        let base = discounted_returns(&loaded, fz, None, i, opts.episodes, seed, gamma)?;
        let diffs: Vec<f64> = with_br.iter().zip(&base).map(|(x, y)| x - y).collect();
        let (g, ci) = mean_ci(&diffs);
        gains[i] = g;
        cis[i] = ci;
        values[i] = mean_ci(&base).0;
        var_sum += (ci / 1.96).powi(2);
    }
    let result = LearnedNashConv {
        nashconv: agents.iter().map(|&i| gains[i]).sum(),
        nashconv_ci95: 1.96 * var_sum.sqrt(),
        per_agent_gain: gains,
        per_agent_ci95: cis,
        policy_values: values,
        method: "learned (lower bound)".into(),
        steps: opts.steps,
        episodes: opts.episodes,
        horizon: h,
        seconds: t0.elapsed().as_secs_f64(),
    };
    write_result(run, &source, &result)?;
    Ok(result)
}
