//! Social metrics of finished episodes: per-agent return, collective return, equality
//! (1 - Gini of the returns), sustainability (when rewards arrive) and the substrate's
//! counters.

use std::collections::VecDeque;

use bevy_ecs::prelude::*;
use serde::{Deserialize, Serialize};

/// One finished episode of one arena.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeSummary {
    /// Arena index.
    pub arena: u32,
    /// Episode index within the arena.
    pub episode: u32,
    /// Steps.
    pub length: u32,
    /// Whether the rules ended it (else the step limit).
    pub terminated: bool,
    /// Return per agent slot.
    pub returns: Vec<f32>,
    /// The substrate's counters (names in `Layout::counter_names`).
    pub counters: Vec<u32>,
}

/// Finished episodes, newest last, at most `capacity` kept (older ones are dropped and counted).
#[derive(Resource, Debug, Clone)]
pub struct EpisodeLog {
    /// Most episodes kept.
    pub capacity: usize,
    /// Kept episodes.
    pub episodes: VecDeque<EpisodeSummary>,
    /// Episodes dropped because the log was full.
    pub dropped: u64,
}

impl EpisodeLog {
    /// An empty log keeping at most `capacity` episodes.
    pub fn new(capacity: usize) -> EpisodeLog {
        EpisodeLog {
            capacity: capacity.max(1),
            episodes: VecDeque::new(),
            dropped: 0,
        }
    }

    /// Adds an episode, dropping the oldest when full.
    pub fn push(&mut self, e: EpisodeSummary) {
        if self.episodes.len() == self.capacity {
            self.episodes.pop_front();
            self.dropped += 1;
        }
        self.episodes.push_back(e);
    }
}

/// Equality of returns: 1 - Gini, with the Gini coefficient computed as the mean absolute
/// difference over twice the mean absolute return (the usual Gini for non-negative returns,
/// still in [0, 1] with negative ones). All-zero returns are perfectly equal.
pub fn equality(returns: &[f32]) -> f64 {
    let n = returns.len() as f64;
    let scale: f64 = returns.iter().map(|r| r.abs() as f64).sum();
    if n == 0.0 || scale == 0.0 {
        return 1.0;
    }
    let mut diff = 0.0;
    for a in returns {
        for b in returns {
            diff += (a - b).abs() as f64;
        }
    }
    1.0 - (diff / (2.0 * n * scale)).min(1.0)
}

/// Sustainability of one episode (Perolat et al., 2017): for each agent, the mean step (1 for
/// the episode's first) at which it received a positive reward, averaged over the agents that
/// received any. `step_sums[i]` is the sum of those steps for agent `i` and `rewarded[i]` their
/// number. Late rewards mean a resource that lasted; `None` when no agent was ever rewarded.
pub fn sustainability(step_sums: &[f64], rewarded: &[u32]) -> Option<f64> {
    let per_agent: Vec<f64> = step_sums
        .iter()
        .zip(rewarded)
        .filter(|(_, n)| **n > 0)
        .map(|(s, n)| s / *n as f64)
        .collect();
    (!per_agent.is_empty()).then(|| per_agent.iter().sum::<f64>() / per_agent.len() as f64)
}

/// Averages over a set of episodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocialMetrics {
    /// Episodes averaged.
    pub episodes: usize,
    /// Mean return per agent slot.
    pub mean_return: Vec<f64>,
    /// Mean collective return (sum over agents).
    pub collective_return: f64,
    /// Mean equality (1 - Gini).
    pub equality: f64,
    /// Mean of each counter per episode, with its name.
    pub counters: Vec<(String, f64)>,
    /// The coin game's own-colour share: coins picked up by their own colour's player over all
    /// coins picked up, pooled over the episodes ([`own_coin_proportion`]); `None` for other
    /// substrates and when no coin was picked up.
    #[serde(default)]
    pub own_coin_proportion: Option<f64>,
}

/// The coin game's counters of coins picked up by their own colour's player and by the other.
const OWN_COINS: (&str, &str) = ("coins_own", "coins_other");

/// Coins picked up by their own colour's player over all coins picked up, summed over
/// `episodes` (counters named by `counter_names`): 1 when every player takes only its own
/// colour, about 0.5 for players that take every coin. `None` without the coin game's counters
/// or when no coin was picked up.
pub fn own_coin_proportion(counter_names: &[String], episodes: &[EpisodeSummary]) -> Option<f64> {
    let at = |name: &str| counter_names.iter().position(|n| n == name);
    let (own, other) = (at(OWN_COINS.0)?, at(OWN_COINS.1)?);
    let (mut mine, mut all) = (0u64, 0u64);
    for e in episodes {
        let o = *e.counters.get(own)? as u64;
        mine += o;
        all += o + *e.counters.get(other)? as u64;
    }
    (all > 0).then(|| mine as f64 / all as f64)
}

/// The same episodes with returns of the learners only (slots `0..learners`): scripted agents
/// such as random-walking evaders are part of the world, not of the policy being measured.
pub fn learners_only(episodes: &[EpisodeSummary], learners: usize) -> Vec<EpisodeSummary> {
    episodes
        .iter()
        .map(|e| EpisodeSummary {
            returns: e.returns[..learners.min(e.returns.len())].to_vec(),
            ..e.clone()
        })
        .collect()
}

/// Averages the episodes' social metrics.
pub fn summarize(counter_names: &[String], episodes: &[EpisodeSummary]) -> SocialMetrics {
    let n = episodes.len().max(1) as f64;
    let agents = episodes.first().map_or(0, |e| e.returns.len());
    let mut mean_return = vec![0.0; agents];
    let (mut collective, mut eq) = (0.0, 0.0);
    let mut counters = vec![0.0; counter_names.len()];
    for e in episodes {
        for (m, r) in mean_return.iter_mut().zip(&e.returns) {
            *m += *r as f64 / n;
        }
        collective += e.returns.iter().map(|r| *r as f64).sum::<f64>() / n;
        eq += equality(&e.returns) / n;
        for (c, v) in counters.iter_mut().zip(&e.counters) {
            *c += *v as f64 / n;
        }
    }
    SocialMetrics {
        episodes: episodes.len(),
        mean_return,
        collective_return: collective,
        equality: if episodes.is_empty() { 1.0 } else { eq },
        counters: counter_names.iter().cloned().zip(counters).collect(),
        own_coin_proportion: own_coin_proportion(counter_names, episodes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_is_one_for_equal_returns_and_drops_with_inequality() {
        assert_eq!(equality(&[3.0, 3.0, 3.0]), 1.0);
        assert_eq!(equality(&[0.0, 0.0]), 1.0);
        // One agent has everything: Gini = (n-1)/n = 0.75 for n = 4.
        assert!((equality(&[0.0, 0.0, 0.0, 8.0]) - 0.25).abs() < 1e-12);
        assert!((equality(&[1.0, 3.0]) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn own_coin_proportion_pools_the_episodes() {
        let names: Vec<String> = ["coins_own", "coins_other"].map(String::from).to_vec();
        let episode = |own, other| EpisodeSummary {
            arena: 0,
            episode: 0,
            length: 10,
            terminated: false,
            returns: vec![0.0, 0.0],
            counters: vec![own, other],
        };
        // 3 + 1 own of 3 + 1 + 1 + 3 coins: pooled, not the mean of 0.75 and 0.25.
        let eps = [episode(3, 1), episode(1, 3), episode(0, 0)];
        assert_eq!(own_coin_proportion(&names, &eps), Some(0.5));
        assert_eq!(own_coin_proportion(&names, &eps[..1]), Some(0.75));
        assert_eq!(own_coin_proportion(&names, &eps[2..]), None);
        let other: Vec<String> = ["apples"].map(String::from).to_vec();
        assert_eq!(own_coin_proportion(&other, &eps), None);
        assert_eq!(summarize(&names, &eps).own_coin_proportion, Some(0.5));
    }

    #[test]
    fn sustainability_averages_each_rewarded_agents_mean_reward_step() {
        // Agent 0 rewarded at steps 10 and 30 (mean 20), agent 1 at step 100, agent 2 never.
        assert_eq!(sustainability(&[40.0, 100.0, 0.0], &[2, 1, 0]), Some(60.0));
        assert_eq!(sustainability(&[0.0, 0.0], &[0, 0]), None);
        assert_eq!(sustainability(&[], &[]), None);
    }
}
