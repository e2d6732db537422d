//! What an update reports, and the statistics runs and evaluations compute from episodes:
//! means with 95% confidence intervals, and the across-seed summary of a multi-seed run.

use serde::{Deserialize, Serialize};

use super::opponent::OpponentScores;
use crate::metrics::{EpisodeSummary, learners_only, summarize};

/// What one update did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UpdateStats {
    /// Mean loss over the update's minibatches.
    pub loss: f32,
    /// Exploration rate used while acting.
    pub epsilon: f32,
    /// Learning rate used (replica 0's).
    pub lr: f32,
    /// With several replicas: each replica's (epsilon, learning rate) (empty with one).
    #[serde(default)]
    pub replica_scalars: Vec<(f32, f32)>,
    /// Episodes that finished during the rollout (replica 0's, or every replica's with
    /// `per_replica`).
    pub episodes: Vec<EpisodeSummary>,
    /// With several seeds: each replica's finished episodes.
    pub per_replica: Vec<Vec<EpisodeSummary>>,
    /// Opponent-model scores on this rollout (when enabled; replica 0's).
    pub opponents: Option<OpponentScores>,
    /// With several replicas and opponent models: each replica's scores (empty otherwise).
    #[serde(default)]
    pub opponents_per_replica: Vec<OpponentScores>,
}

impl UpdateStats {
    /// One run's update (the replica layer fills the per-replica lists when there are
    /// several): its mean loss, exploration and learning rates, finished episodes and
    /// opponent-model scores.
    pub(crate) fn of_run(
        loss: f32,
        (epsilon, lr): (f32, f32),
        episodes: Vec<EpisodeSummary>,
        opponents: Option<OpponentScores>,
    ) -> UpdateStats {
        UpdateStats {
            loss,
            epsilon,
            lr,
            replica_scalars: Vec::new(),
            episodes,
            per_replica: Vec::new(),
            opponents,
            opponents_per_replica: Vec::new(),
        }
    }

    /// A replay learner's update: the mean of `steps` learner-step losses summing to `losses`
    /// (0 without a learner step), its arenas' finished episodes (one replica).
    pub(crate) fn replay(
        (losses, steps): (f64, u64),
        (epsilon, lr): (f32, f32),
        episodes: Vec<EpisodeSummary>,
        opponents: Option<OpponentScores>,
    ) -> UpdateStats {
        let loss = if steps == 0 {
            0.0
        } else {
            (losses / steps as f64) as f32
        };
        UpdateStats::of_run(loss, (epsilon, lr), episodes, opponents)
    }
}

/// Mean and half-width of the normal 95% confidence interval of the mean (NaN when undefined:
/// no sample, or one sample for the interval).
pub fn mean_ci(xs: &[f64]) -> (f64, f64) {
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

/// The mean over agents of per-agent values (0 agents: 0).
pub(crate) fn mean_over_agents(per_agent: &[f64]) -> f64 {
    per_agent.iter().sum::<f64>() / per_agent.len().max(1) as f64
}

/// Across-seed returns of one update of a multi-seed run.
pub(crate) struct SeedReturns {
    /// Each replica's mean return (`None` where no episode finished).
    pub per_seed: Vec<Option<f64>>,
    /// Mean over the replicas that finished episodes.
    pub mean: Option<f64>,
    /// Half-width of its 95% interval (two replicas or more).
    pub ci95: Option<f64>,
    /// Each replica's mean of every counter per episode (`None` where no episode finished).
    pub counters_per_seed: Vec<Option<serde_json::Map<String, serde_json::Value>>>,
}

/// Each replica's mean learner return and counters over its finished episodes and the
/// across-seed mean and 95% interval of the return.
pub(crate) fn seed_returns(
    counter_names: &[String],
    per_replica: &[Vec<EpisodeSummary>],
    learners: usize,
) -> SeedReturns {
    let summaries: Vec<_> = per_replica
        .iter()
        .map(|eps| {
            let m = summarize(counter_names, &learners_only(eps, learners));
            (!eps.is_empty()).then_some(m)
        })
        .collect();
    let per_seed: Vec<Option<f64>> = summaries
        .iter()
        .map(|m| m.as_ref().map(|m| mean_over_agents(&m.mean_return)))
        .collect();
    let counters_per_seed = summaries
        .iter()
        .map(|m| m.as_ref().map(|m| counters_json(&m.counters)))
        .collect();
    let done: Vec<f64> = per_seed.iter().flatten().copied().collect();
    let (mean, ci) = mean_ci(&done);
    SeedReturns {
        per_seed,
        mean: (!done.is_empty()).then_some(mean),
        ci95: (done.len() > 1).then_some(ci),
        counters_per_seed,
    }
}

/// Counters as a JSON object, name to mean per episode.
fn counters_json(counters: &[(String, f64)]) -> serde_json::Map<String, serde_json::Value> {
    counters
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::json!(v)))
        .collect()
}

/// One update's line of `metrics.jsonl` and the mean learner return of its finished episodes
/// (`None` when none finished).
pub(crate) fn metrics_line(
    stats: &UpdateStats,
    layout: &crate::layout::Layout,
    (update, env_steps): (u64, u64),
    sps: f64,
    seconds: f64,
) -> (serde_json::Value, Option<f64>) {
    let names = &layout.counter_names;
    let m = summarize(names, &learners_only(&stats.episodes, layout.learners));
    // With several seeds: each replica's mean return and the across-seed mean and 95% CI.
    let seeds = seed_returns(names, &stats.per_replica, layout.learners);
    let mean_return = (!stats.episodes.is_empty()).then(|| mean_over_agents(&m.mean_return));
    let opponents = stats.opponents.as_ref();
    // With several replicas: each replica's opponent-model scores (null otherwise).
    let per_replica = |f: fn(&OpponentScores) -> serde_json::Value| {
        let all = &stats.opponents_per_replica;
        (!all.is_empty()).then(|| all.iter().map(f).collect::<Vec<_>>())
    };
    let line = serde_json::json!({
        "update": update,
        "env_steps": env_steps,
        "sps": sps,
        "seconds": seconds,
        "loss": stats.loss,
        "epsilon": stats.epsilon,
        "lr": stats.lr,
        "episodes": stats.episodes.len(),
        "return_mean": mean_return,
        "seeds_return_per_seed": seeds.per_seed,
        "seeds_return_mean": seeds.mean,
        "seeds_return_ci95": seeds.ci95,
        "seeds_counters_per_seed": seeds.counters_per_seed,
        "return_per_agent": m.mean_return,
        "collective_return": m.collective_return,
        "equality": m.equality,
        "opponent_accuracy": opponents.map(|o| o.accuracy.clone()),
        "opponent_log_loss": opponents.map(|o| o.log_loss.clone()),
        "opponent_uniform_log_loss": opponents.map(|o| o.uniform_log_loss),
        "opponent_marginal_accuracy": opponents.map(|o| o.marginal_accuracy.clone()),
        "opponent_marginal_log_loss": opponents.map(|o| o.marginal_log_loss.clone()),
        "opponent_train_loss": opponents.map(|o| o.train_loss),
        "seeds_opponent_accuracy": per_replica(|o| serde_json::json!(o.accuracy)),
        "seeds_opponent_log_loss": per_replica(|o| serde_json::json!(o.log_loss)),
        "seeds_opponent_train_loss": per_replica(|o| serde_json::json!(o.train_loss)),
        "counters": counters_json(&m.counters),
        "own_coin_proportion": m.own_coin_proportion,
    });
    (line, mean_return)
}
