//! `gridarena eval`: the greedy policy of a run's newest checkpoint against a uniformly random
//! policy and the substrate's scripted baselines ([`heuristics_for`]), M episodes each (one per
//! arena, fresh arenas with an evaluation seed), returns per agent with 95% confidence
//! intervals, plus the substrate's counters.

use serde::Serialize;

use super::RunError;
use super::greedy::GreedyPolicy;
use super::run_dir::RunDir;
use crate::critic::Chosen;
use crate::engine::EnvBatch;
use crate::metrics::{EpisodeSummary, learners_only, summarize, sustainability};
use crate::policy::{Policy, RandomPolicy, heuristics_for};
use crate::scenario::LoadedScenario;
use crate::train::TrainError;
use crate::train::algos::new_learner;
use crate::train::kit::stats::mean_ci;

/// One policy's results.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyResult {
    /// Mean over episodes of the mean return over agents.
    pub mean_return: f64,
    /// Half-width of the 95% confidence interval of `mean_return`.
    pub ci95: f64,
    /// Mean return per agent slot.
    pub per_agent: Vec<f64>,
    /// Half-width of the 95% interval per agent slot.
    pub per_agent_ci95: Vec<f64>,
    /// Mean of each substrate counter per episode.
    pub counters: std::collections::BTreeMap<String, f64>,
    /// Mean collective return.
    pub collective_return: f64,
    /// Mean equality (1 - Gini).
    pub equality: f64,
    /// Mean sustainability: the mean step at which the learners were rewarded
    /// ([`crate::metrics::sustainability`]), over the episodes where any was; `None` when none.
    pub sustainability: Option<f64>,
    /// The coin game's own-colour share of the coins picked up
    /// ([`crate::metrics::own_coin_proportion`]); absent on other substrates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own_coin_proportion: Option<f64>,
}

/// The eval report (`--json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// The trained greedy policy.
    pub policy: PolicyResult,
    /// A uniformly random policy.
    pub random: PolicyResult,
    /// The substrate's scripted baselines (none for a substrate without one).
    pub heuristics: Vec<NamedResult>,
    /// Episodes per policy.
    pub episodes: usize,
    /// Checkpoint evaluated (update number).
    pub update: u64,
    /// A repeated matrix game's policy in each memory-one state (none for other substrates and
    /// recurrent networks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub states: Option<super::state_policy::StatePolicy>,
}

/// A scripted baseline's results.
#[derive(Debug, Clone, Serialize)]
pub struct NamedResult {
    /// The baseline's name (`nearest evader`, `always stag`, ...).
    pub name: String,
    /// Its results.
    #[serde(flatten)]
    pub result: PolicyResult,
}

/// The results of `episodes` (learners' returns only), each with its sustainability.
pub fn result(
    counter_names: &[String],
    episodes: &[EpisodeSummary],
    sustainability: &[Option<f64>],
) -> PolicyResult {
    let m = summarize(counter_names, episodes);
    let agents = episodes.first().map_or(0, |e| e.returns.len());
    let per_episode: Vec<f64> = episodes
        .iter()
        .map(|e| e.returns.iter().map(|r| *r as f64).sum::<f64>() / agents.max(1) as f64)
        .collect();
    let (mean, ci) = mean_ci(&per_episode);
    let (per_agent, per_agent_ci95) = (0..agents)
        .map(|a| {
            mean_ci(
                &episodes
                    .iter()
                    .map(|e| e.returns[a] as f64)
                    .collect::<Vec<_>>(),
            )
        })
        .unzip();
    PolicyResult {
        mean_return: mean,
        ci95: ci,
        per_agent,
        per_agent_ci95,
        counters: m.counters.into_iter().collect(),
        own_coin_proportion: m.own_coin_proportion,
        collective_return: m.collective_return,
        equality: m.equality,
        sustainability: {
            let s: Vec<f64> = sustainability.iter().flatten().copied().collect();
            (!s.is_empty()).then(|| s.iter().sum::<f64>() / s.len() as f64)
        },
    }
}

/// `policy`'s results over the first episode of each of `episodes` fresh arenas of `loaded`
/// seeded with `seed` (the learners' returns and the substrate's counters), as `evaluate`
/// reports them: how a test or a script measures a policy without a run directory.
pub fn evaluate_policy(
    loaded: &LoadedScenario,
    episodes: usize,
    seed: u64,
    policy: &mut dyn Policy,
) -> Result<PolicyResult, RunError> {
    let mut batch = EnvBatch::new(loaded, episodes.max(1), seed).map_err(TrainError::from)?;
    batch.start_episode_log(1 << 16);
    let (names, learners) = (
        batch.layout().counter_names.clone(),
        batch.layout().learners,
    );
    let (eps, sustainability) = first_episodes(&mut batch, policy)?;
    Ok(result(
        &names,
        &learners_only(&eps, learners),
        &sustainability,
    ))
}

/// The first episode of each of `arenas` fresh arenas of `loaded` seeded with `seed`,
/// `policy` acting (told first that every arena starts an episode), with the learners'
/// returns only and each episode's sustainability: what [`evaluate_policy`] summarises, for a
/// caller that needs every episode (per-slot returns of a population's evaluation).
pub fn play_episodes(
    loaded: &LoadedScenario,
    arenas: usize,
    seed: u64,
    policy: &mut dyn Policy,
) -> Result<(Vec<EpisodeSummary>, Vec<Option<f64>>), RunError> {
    let mut batch = EnvBatch::new(loaded, arenas.max(1), seed).map_err(TrainError::from)?;
    batch.start_episode_log(1 << 16);
    let learners = batch.layout().learners;
    policy.episodes_start(&vec![true; batch.arenas()]);
    let (eps, sustainability) = first_episodes(&mut batch, policy)?;
    Ok((learners_only(&eps, learners), sustainability))
}

/// Per arena, whether its last step ended an episode (the next step starts one).
pub(crate) fn episode_starts(batch: &EnvBatch) -> Vec<bool> {
    let b = batch.buffers();
    b.terminated
        .iter()
        .zip(&b.truncated)
        .map(|(&te, &tr)| te != 0 || tr != 0)
        .collect()
}

/// First finished episode of every arena of `batch`, `policy` acting until each arena
/// finished one, with each one's sustainability (the learners' reward steps).
fn first_episodes(
    batch: &mut EnvBatch,
    policy: &mut dyn Policy,
) -> Result<(Vec<EpisodeSummary>, Vec<Option<f64>>), RunError> {
    let arenas = batch.arenas();
    let n = batch.layout().learners;
    let mut first: Vec<Option<EpisodeSummary>> = vec![None; arenas];
    let (mut step_sums, mut rewarded) = (vec![0.0f64; arenas * n], vec![0u32; arenas * n]);
    let limit = batch.layout().max_steps as usize + 1;
    let mut actions = vec![0u8; batch.actions_mut().len()];
    for step in 1..=limit {
        policy
            .actions_within(&batch.buffers().obs, batch.action_mask(), &mut actions)
            .map_err(TrainError::from)?;
        batch.actions_mut().copy_from_slice(&actions);
        batch.step().map_err(TrainError::from)?;
        let rewards = &batch.buffers().rewards;
        for (i, &r) in rewards.iter().enumerate().take(arenas * n) {
            if r > 0.0 && first[i / n.max(1)].is_none() {
                step_sums[i] += step as f64;
                rewarded[i] += 1;
            }
        }
        policy.episodes_start(&episode_starts(batch));
        for e in batch.take_episodes() {
            let slot = &mut first[e.arena as usize];
            if slot.is_none() {
                *slot = Some(e);
            }
        }
        if first.iter().all(Option::is_some) {
            break;
        }
    }
    let sustainability = first
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_some())
        .map(|(a, _)| {
            sustainability(
                &step_sums[a * n..(a + 1) * n],
                &rewarded[a * n..(a + 1) * n],
            )
        })
        .collect();
    Ok((first.into_iter().flatten().collect(), sustainability))
}

/// Evaluates the newest checkpoint of `run` over `episodes` episodes per policy (replica 0 of
/// a multi-seed or sweep run).
pub fn evaluate(
    run: &std::path::Path,
    episodes: usize,
    device: &Chosen,
) -> Result<EvalReport, RunError> {
    evaluate_replica(run, episodes, device, 0)
}

/// [`evaluate`] for replica `replica` of a multi-seed or sweep run (its networks are the
/// replica-th block of the stack).
pub fn evaluate_replica(
    run: &std::path::Path,
    episodes: usize,
    device: &Chosen,
    replica: usize,
) -> Result<EvalReport, RunError> {
    let dir = RunDir::open(run)?;
    let saved = super::run_dir::RunDir::load_config(run)?;
    let replicas = saved.replicas()?;
    let Some(chosen) = replicas.get(replica) else {
        return Err(RunError::Checkpoint {
            path: run.to_path_buf(),
            reason: format!(
                "replica {replica} asked; the run has {} (0..{})",
                replicas.len(),
                replicas.len()
            ),
        });
    };
    let mut cfg = chosen.cfg.clone();
    cfg.arenas = episodes.max(1);
    // Acting never runs the rate limiter: its error buffer (sized for the training arenas)
    // must not refuse these arenas; 0 takes the loop's default.
    cfg.iql.rate_error_buffer = 0.0;
    cfg.seed = chosen.cfg.seed.wrapping_add(1_000_003);
    let loaded = super::setup::trained_scenario(run, &cfg)?;
    let learner = new_learner(&cfg, &loaded, device)?;
    let mut greedy = GreedyPolicy::restore_replica(learner, &dir, replica)?;
    let policy = evaluate_policy(&loaded, cfg.arenas, cfg.seed, &mut greedy)?;
    let actions = loaded.scenario.action_set().len();
    let mut random = RandomPolicy::new(cfg.seed, cfg.arenas, actions);
    let random = evaluate_policy(&loaded, cfg.arenas, cfg.seed, &mut random)?;
    let heuristics = heuristics_for(&loaded, cfg.seed, cfg.arenas)
        .into_iter()
        .map(|(name, mut policy)| {
            let result = evaluate_policy(&loaded, cfg.arenas, cfg.seed, policy.as_mut())?;
            Ok(NamedResult { name, result })
        })
        .collect::<Result<_, RunError>>()?;
    let states = match greedy.has_memory() {
        true => None,
        false => super::state_policy::state_policy(
            &loaded,
            &mut greedy,
            super::state_policy::samples_a_policy(cfg.algo),
        )
        .map_err(TrainError::from)?,
    };
    Ok(EvalReport {
        policy,
        random,
        heuristics,
        episodes: cfg.arenas,
        update: greedy.update(),
        states,
    })
}
