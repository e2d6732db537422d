//! `gridarena eval`: the greedy policy of a run's newest checkpoint against a uniformly random
//! policy, M episodes each (one per arena, fresh arenas with an evaluation seed), returns per
//! agent with 95% confidence intervals, plus the substrate's counters.

use serde::Serialize;

use super::Learner;
use super::config::RunConfig;
use super::run_dir::RunDir;
use super::{RunError, load_scenario};
use crate::policy::RandomPolicy;
use crate::critic::Chosen;
use crate::metrics::{EpisodeSummary, summarize};

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
}

/// The eval report (`--json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// The trained greedy policy.
    pub policy: PolicyResult,
    /// A uniformly random policy.
    pub random: PolicyResult,
    /// Episodes per policy.
    pub episodes: usize,
    /// Checkpoint evaluated (update number).
    pub update: u64,
}

fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    if n == 0.0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = xs.iter().sum::<f64>() / n;
    if n < 2.0 {
        return (mean, f64::NAN);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, 1.96 * (var / n).sqrt())
}

fn result(counter_names: &[String], episodes: &[EpisodeSummary]) -> PolicyResult {
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
        collective_return: m.collective_return,
        equality: m.equality,
    }
}

/// First finished episode of every arena, acting with `act` until each arena finished one.
fn first_episodes(
    pqn: &mut Learner,
    mut act: impl FnMut(&mut Learner) -> Result<Vec<u8>, RunError>,
) -> Result<Vec<EpisodeSummary>, RunError> {
    let arenas = pqn.batch().arenas();
    let mut first: Vec<Option<EpisodeSummary>> = vec![None; arenas];
    let limit = pqn.batch().layout().max_steps as usize + 1;
    for _ in 0..limit {
        let actions = act(pqn)?;
        pqn.batch().actions_mut().copy_from_slice(&actions);
        pqn.batch().step().map_err(|e| RunError::Train(e.into()))?;
        for e in pqn.batch().take_episodes() {
            let slot = &mut first[e.arena as usize];
            if slot.is_none() {
                *slot = Some(e);
            }
        }
        if first.iter().all(Option::is_some) {
            break;
        }
    }
    Ok(first.into_iter().flatten().collect())
}

/// Evaluates the newest checkpoint of `run` over `episodes` episodes per policy.
pub fn evaluate(
    run: &std::path::Path,
    episodes: usize,
    device: &Chosen,
) -> Result<EvalReport, RunError> {
    let dir = RunDir::open(run)?;
    let mut cfg = RunConfig::load(&run.join("config.ron"))?;
    cfg.arenas = episodes.max(1);
    // A multi-seed run is evaluated on replica 0 (its networks come first in the stack).
    cfg.seeds = 1;
    cfg.seed = cfg.seed.wrapping_add(1_000_003);
    let loaded = load_scenario(&cfg)?;
    let mut greedy = Learner::new(&cfg, &loaded, device)?;
    let update = restore_params(&mut greedy, &dir)?;
    let names = greedy.batch().layout().counter_names.clone();
    let learners = greedy.batch().layout().learners;
    let policy_eps = crate::metrics::learners_only(
        &first_episodes(&mut greedy, |p| p.greedy().map_err(RunError::from))?,
        learners,
    );

    let mut random = Learner::new(&cfg, &loaded, device)?;
    let mut policy = RandomPolicy::new(cfg.seed, cfg.arenas, random.batch().layout().actions);
    let random_eps = first_episodes(&mut random, |p| {
        let mut a = vec![0u8; p.batch().actions_mut().len()];
        policy.act(&mut a);
        Ok(a)
    })?;
    let random_eps = crate::metrics::learners_only(&random_eps, learners);
    Ok(EvalReport {
        policy: result(&names, &policy_eps),
        random: result(&names, &random_eps),
        episodes: cfg.arenas,
        update,
    })
}

/// Loads only the parameters of the newest checkpoint (evaluation runs fresh arenas).
pub(crate) fn restore_params(pqn: &mut Learner, dir: &RunDir) -> Result<u64, RunError> {
    let c = dir.load_latest()?;
    let n = pqn.critic().params()?.len();
    // A multi-seed run stores every replica's networks, replica 0's first.
    if c.params.len() < n || !c.params.len().is_multiple_of(n.max(1)) {
        return Err(RunError::Checkpoint {
            path: dir.path.clone(),
            reason: format!(
                "{} parameters do not fit this scenario's networks ({n} expected, or a multiple for a multi-seed run)",
                c.params.len()
            ),
        });
    }
    pqn.critic()
        .set_params(&c.params[..n])
        .map_err(|e| RunError::Checkpoint {
            path: dir.path.clone(),
            reason: format!("parameters do not fit this scenario's networks: {e}"),
        })?;
    // Opponent models (PR2 with `rho: model` acts through them) live in the state.
    let models = serde_json::from_str::<serde_json::Value>(&c.state)
        .ok()
        .and_then(|v| serde_json::from_value::<Vec<f32>>(v.get("models")?.clone()).ok());
    if let Some(m) = models {
        pqn.set_opponent_params(&m)
            .map_err(|e| RunError::Checkpoint {
                path: dir.path.clone(),
                reason: format!("opponent models do not fit: {e}"),
            })?;
    }
    Ok(c.update)
}
