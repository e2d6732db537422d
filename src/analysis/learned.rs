//! Learned best responses, for scenarios too large to enumerate: for each learner i, a fresh PQN
//! learner (the run's hyperparameters, a new seed) trains for a budget of environment steps while
//! the checkpoint's greedy policy acts for every other slot; then M paired episodes (same seeds,
//! hence the same starts and chance streams at first) are played with (best response for i,
//! frozen others) and with the frozen joint policy, and i's discounted returns compared. The
//! gain's mean and 95% interval come from the paired differences. A learned best response is
//! at most as good as the true one, so the result is a lower bound on NashConv (up to the
//! interval).
//!
//! With `seeds > 1` the whole procedure runs once per best-response seed (each its own training
//! seed, the same paired evaluation episodes), and the interval is taken over seeds: the mean of
//! the per-seed NashConv values with a Student-t 95% interval. That interval carries the
//! variation of best-response training itself, which one seed's episode interval cannot show.
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
use crate::train::{GreedyPolicy, RunError, TrainError, new_learner, trained_scenario};

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
    /// Best responses trained per learner, each from its own seed (at least 1).
    pub seeds: usize,
}

impl Default for LearnedOptions {
    fn default() -> Self {
        LearnedOptions {
            steps: 1_000_000,
            episodes: 500,
            seeds: 3,
        }
    }
}

/// The result, labelled as a lower bound.
#[derive(Debug, Clone, Serialize)]
pub struct LearnedNashConv {
    /// Sum of the mean gains (the mean over best-response seeds): a lower bound on NashConv.
    pub nashconv: f64,
    /// Half-width of the 95% interval of the sum: over seeds (Student t) with two seeds or more,
    /// over the paired episodes with one.
    pub nashconv_ci95: f64,
    /// What the interval is taken over: `best-response seeds` or `evaluation episodes`.
    pub interval_over: String,
    /// Each best-response seed's NashConv (the sum of its gains).
    pub per_seed_nashconv: Vec<f64>,
    /// Mean gain per learner over seeds (0 for learners not analysed).
    pub per_agent_gain: Vec<f64>,
    /// Half-width of each gain's 95% interval (over seeds, or episodes with one seed).
    pub per_agent_ci95: Vec<f64>,
    /// Mean discounted return of each analysed learner under the frozen joint policy.
    pub policy_values: Vec<f64>,
    /// `learned (lower bound)`.
    pub method: String,
    /// Best-response training steps per learner and seed.
    pub steps: u64,
    /// Best-response seeds per learner.
    pub seeds: usize,
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

/// The two-sided 95% Student-t quantile for `df` degrees of freedom (normal past 30).
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        d if d <= 30 => T[d - 1],
        _ => 1.96,
    }
}

/// Mean and Student-t 95% half-width of `xs` (NaN half-width under two values).
pub fn mean_t95(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n.max(1) as f64;
    if n < 2 {
        return (mean, f64::NAN);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, t975(n - 1) * (var / n as f64).sqrt())
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
    let mut loaded = trained_scenario(run, &cfg).map_err(RunError::from)?;
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
    if opts.seeds == 0 {
        return Err(AnalysisError::Invalid(
            "--br-seeds 0: at least one best-response seed".into(),
        ));
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
    let seeds = opts.seeds;
    // gain[i][k]: learner i's mean paired gain with best-response seed k; eci: its episode
    // interval (used alone with one seed).
    let mut gain = vec![vec![0.0; seeds]; n];
    let mut eci = vec![vec![0.0; seeds]; n];
    let mut values = vec![0.0; n];
    for &i in &agents {
        for k in 0..seeds {
            let (g, ci, base) = one_best_response(
                &cfg,
                &loaded,
                device,
                &frozen,
                (i, k),
                trained_arenas,
                opts,
                progress,
            )?;
            gain[i][k] = g;
            eci[i][k] = ci;
            values[i] = base;
        }
    }
    let per_seed: Vec<f64> = (0..seeds)
        .map(|k| agents.iter().map(|&i| gain[i][k]).sum())
        .collect();
    let (nashconv, nashconv_ci95, per_agent_gain, per_agent_ci95, over) = if seeds >= 2 {
        let (m, ci) = mean_t95(&per_seed);
        let (g, c): (Vec<f64>, Vec<f64>) = (0..n)
            .map(|i| {
                if agents.contains(&i) {
                    mean_t95(&gain[i])
                } else {
                    (0.0, 0.0)
                }
            })
            .unzip();
        (m, ci, g, c, "best-response seeds")
    } else {
        // Independent learners' gains: their variances add.
        let var: f64 = agents.iter().map(|&i| (eci[i][0] / 1.96).powi(2)).sum();
        let g = (0..n).map(|i| gain[i][0]).collect();
        let c = (0..n).map(|i| eci[i][0]).collect();
        (per_seed[0], 1.96 * var.sqrt(), g, c, "evaluation episodes")
    };
    let result = LearnedNashConv {
        nashconv,
        nashconv_ci95,
        interval_over: over.into(),
        per_seed_nashconv: per_seed,
        per_agent_gain,
        per_agent_ci95,
        policy_values: values,
        method: "learned (lower bound)".into(),
        steps: opts.steps,
        seeds,
        episodes: opts.episodes,
        horizon: h,
        seconds: t0.elapsed().as_secs_f64(),
    };
    write_result(run, &source, &result)?;
    Ok(result)
}

/// Trains best response `k` of learner `i` against the frozen others and returns its mean
/// paired gain, the gain's 95% interval over episodes, and i's value under the frozen policy.
#[expect(clippy::too_many_arguments)]
fn one_best_response(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    device: &Chosen,
    frozen: &Arc<Mutex<GreedyPolicy>>,
    (i, k): (usize, usize),
    trained_arenas: usize,
    opts: LearnedOptions,
    progress: bool,
) -> Result<(f64, f64, f64), AnalysisError> {
    let n = loaded.scenario.learners_per_arena();
    let gamma = cfg.learn.gamma as f64;
    // PQN with the trained run's passes (its own section's epochs and minibatches, as
    // every algorithm read them from one field before the configuration had sections).
    let (epochs, minibatches) = cfg.passes();
    let br_cfg = RunConfig {
        algo: Algo::Pqn,
        seeds: 1,
        seed: cfg
            .seed
            .wrapping_add(7919 * (i as u64 + 1))
            .wrapping_add(104_729 * k as u64),
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
    let mut br = new_learner(&br_cfg, loaded, device)?;
    br.batch().fix_slots(Some(FixedSlots {
        actor: Box::new(Frozen(frozen.clone())),
        slots: (0..n).map(|l| l != i).collect(),
    }));
    let bar = if progress {
        let b = indicatif::ProgressBar::new(br_cfg.total_steps);
        b.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "best response {i:<3} seed {k:<3} {{bar:30}} {{pos}}/{{len}} env steps {{msg}} eta {{eta}}"
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
    let with_br = discounted_returns(loaded, fz, Some(&mut br), i, opts.episodes, seed, gamma)?;
    let base = discounted_returns(loaded, fz, None, i, opts.episodes, seed, gamma)?;
    let diffs: Vec<f64> = with_br.iter().zip(&base).map(|(x, y)| x - y).collect();
    let (g, ci) = mean_ci(&diffs);
    Ok((g, ci, mean_ci(&base).0))
}
