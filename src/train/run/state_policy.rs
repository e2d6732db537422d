//! A repeated matrix game's learned policy, state by state. Its players see the previous joint
//! action (memory one), so a policy is a small table: for each state (the first step, then each
//! joint action last step) each player's probability of each action. That table is what
//! reciprocity is about: tit-for-tat cooperates at the start and copies what the other did.
//!
//! A policy-gradient learner's probabilities are its own (the softmax of its logits); a
//! value-based learner's are its greedy choice (1 for the highest value).

use serde::{Deserialize, Serialize};

use crate::policy::{Policy, PolicyError};
use crate::scenario::{LoadedScenario, Substrate};
use crate::train::config::Algo;

/// The most states a table is made for (`1 + actions^players`).
pub const MAX_STATES: usize = 65;

/// Each player's action probabilities in each memory-one state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatePolicy {
    /// `start`, then each previous joint action (players' action names joined by `/`, slot 0
    /// first).
    pub states: Vec<String>,
    /// The action names.
    pub actions: Vec<String>,
    /// `[player][state][action]`.
    pub probs: Vec<Vec<Vec<f64>>>,
    /// True: the policy's own probabilities; false: a value-based learner's greedy choice.
    pub stochastic: bool,
}

/// Whether `algo` acts by sampling from a policy (so its probabilities mean something).
pub fn samples_a_policy(algo: Algo) -> bool {
    matches!(
        algo,
        Algo::Ippo | Algo::Mappo | Algo::AdvantageAlignment | Algo::Loqa
    )
}

/// The table of `policy` (acting for one arena of `loaded`), or `None` when `loaded` is not a
/// matrix game or has more than [`MAX_STATES`] states.
pub fn state_policy(
    loaded: &LoadedScenario,
    policy: &mut dyn Policy,
    stochastic: bool,
) -> Result<Option<StatePolicy>, PolicyError> {
    let Substrate::MatrixGame(p) = &loaded.scenario.substrate else {
        return Ok(None);
    };
    let k = p.actions as usize;
    let n = loaded.scenario.agents_per_arena();
    let joint = (k as u64).checked_pow(n as u32).unwrap_or(u64::MAX);
    if k == 0 || n == 0 || joint >= MAX_STATES as u64 {
        return Ok(None);
    }
    let joint = joint as usize;
    let name = |a: usize| {
        p.action_names
            .get(a)
            .cloned()
            .unwrap_or_else(|| format!("action {a}"))
    };
    let obs_len = n * k + 1;
    // Every state's observation, the same for every player: one arena per state.
    let mut states = vec!["start".to_string()];
    let mut obs = vec![0u8; (1 + joint) * n * obs_len];
    for pl in 0..n {
        obs[pl * obs_len + n * k] = 1;
    }
    for j in 0..joint {
        let mut digits = vec![0usize; n];
        let mut rest = j;
        for d in digits.iter_mut().rev() {
            *d = rest % k;
            rest /= k;
        }
        states.push(
            digits
                .iter()
                .map(|&a| name(a))
                .collect::<Vec<_>>()
                .join("/"),
        );
        for pl in 0..n {
            let at = ((1 + j) * n + pl) * obs_len;
            for (player, &a) in digits.iter().enumerate() {
                obs[at + player * k + a] = 1;
            }
        }
    }
    let Some(values) = policy.q_values(&obs)? else {
        return Ok(None);
    };
    if values.len() != (1 + joint) * n * k {
        return Err(PolicyError::Shape {
            what: "values",
            expected: (1 + joint) * n * k,
            got: values.len(),
        });
    }
    let mut probs = vec![vec![vec![0.0; k]; 1 + joint]; n];
    for (row, z) in values.chunks_exact(k).enumerate() {
        let (state, pl) = (row / n, row % n);
        probs[pl][state] = if stochastic { softmax(z) } else { greedy(z) };
    }
    Ok(Some(StatePolicy {
        states,
        actions: (0..k).map(name).collect(),
        probs,
        stochastic,
    }))
}

fn softmax(z: &[f32]) -> Vec<f64> {
    let max = z.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
    let e: Vec<f64> = z.iter().map(|&v| (v as f64 - max).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.iter().map(|v| v / sum).collect()
}

fn greedy(z: &[f32]) -> Vec<f64> {
    let best = z
        .iter()
        .enumerate()
        .fold(0, |b, (i, &v)| if v > z[b] { i } else { b });
    (0..z.len())
        .map(|i| f64::from(u8::from(i == best)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_and_greedy_rows_are_distributions() {
        let s = softmax(&[0.0, 1.0_f32.ln() + 0.0, 3.0_f32.ln()]);
        assert!((s.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // Logits 0, 0, ln 3: probabilities 1/5, 1/5, 3/5.
        assert!((s[2] - 0.6).abs() < 1e-6, "{s:?}");
        assert_eq!(greedy(&[0.5, 2.0, 2.0]), vec![0.0, 1.0, 0.0]);
    }
}
