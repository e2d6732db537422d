//! Meta-solvers for PSRO: mixed strategies for a normal-form game given as one payoff tensor per
//! player (row-major, player 0's index most significant).
//!
//! Both follow OpenSpiel 2.0.2 step for step (`open_spiel/python/algorithms/`
//! `projected_replicator_dynamics.py` and `regret_matching.py`) with its defaults, so that the
//! committed samples under `tests/data/openspiel/` replay to rounding:
//!
//! - projected replicator dynamics: from uniform, `iterations` simultaneous steps
//!   `x <- project(x + dt * x * (v - x.v))` onto the simplex with every entry at least `gamma`,
//!   and the mean of the start and every iterate;
//! - regret matching: regrets start at `1e-6` each, accumulate `v - x.v`, the next strategy is the
//!   positive part normalised and mixed with `gamma` of uniform (uniform when no regret is
//!   positive); the mean of the start and every iterate.

use serde::Serialize;

/// Projected replicator dynamics' parameters (OpenSpiel's `prd_*` keyword arguments).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PrdParams {
    /// Steps (`prd_iterations`, OpenSpiel's default 100000).
    pub iterations: usize,
    /// Step size (`prd_dt`, default 1e-3).
    pub dt: f64,
    /// Smallest probability after projection (`prd_gamma`, default 1e-6).
    pub gamma: f64,
}

impl Default for PrdParams {
    fn default() -> Self {
        Self {
            iterations: 100_000,
            dt: 1e-3,
            gamma: 1e-6,
        }
    }
}

/// Regret matching's parameters (OpenSpiel's `regret_matching` keyword arguments).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RegretMatchingParams {
    /// Steps (`iterations`, default 100000).
    pub iterations: usize,
    /// Weight of the uniform strategy mixed in (`gamma`, default 1e-6).
    pub gamma: f64,
}

impl Default for RegretMatchingParams {
    fn default() -> Self {
        Self {
            iterations: 100_000,
            gamma: 1e-6,
        }
    }
}

/// Which meta-solver PSRO uses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum MetaSolver {
    /// Projected replicator dynamics.
    Prd(PrdParams),
    /// Regret matching.
    RegretMatching(RegretMatchingParams),
}

impl MetaSolver {
    /// The mixed strategies for the game `payoffs[player][joint]` with `shape[player]` strategies
    /// per player.
    pub fn solve(&self, payoffs: &[Vec<f64>], shape: &[usize]) -> Vec<Vec<f64>> {
        match self {
            MetaSolver::Prd(p) => prd(payoffs, shape, p),
            MetaSolver::RegretMatching(p) => regret_matching(payoffs, shape, p),
        }
    }
}

/// The value of each of `player`'s strategies against the others' mixed `strategies`
/// (OpenSpiel's `_partial_multi_dot`).
pub fn values_per_strategy(
    tensor: &[f64],
    shape: &[usize],
    strategies: &[Vec<f64>],
    player: usize,
) -> Vec<f64> {
    let mut values = vec![0.0; shape[player]];
    let mut index = vec![0usize; shape.len()];
    for &payoff in tensor {
        let mut weight = 1.0;
        for (q, &i) in index.iter().enumerate() {
            if q != player {
                weight *= strategies[q][i];
            }
        }
        values[index[player]] += weight * payoff;
        // Next joint index, the last player's strategy fastest.
        for q in (0..shape.len()).rev() {
            index[q] += 1;
            if index[q] < shape[q] {
                break;
            }
            index[q] = 0;
        }
    }
    values
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn uniform(shape: &[usize]) -> Vec<Vec<f64>> {
    shape.iter().map(|&n| vec![1.0 / n as f64; n]).collect()
}

/// Euclidean projection onto `{x : sum x = 1, x_i >= gamma}`, computed as OpenSpiel's
/// `_simplex_projection` computes it (sorted cumulative sums, the first index whose entry falls
/// to the floor).
pub fn simplex_projection(v: &[f64], gamma: f64) -> Vec<f64> {
    let n = v.len();
    let mut u = v.to_vec();
    u.sort_by(|a, b| b.total_cmp(a));
    let mut cumulative = 0.0;
    let shift: Vec<f64> = u
        .iter()
        .enumerate()
        .map(|(k, &uk)| {
            cumulative += uk;
            let idx = (k + 1) as f64;
            (1.0 - cumulative - (n - k - 1) as f64 * gamma) / idx
        })
        .collect();
    let rho = (0..n).find(|&k| u[k] + shift[k] <= gamma).unwrap_or(n);
    // numpy's u_tmp[rho - 1] wraps to the last entry when rho is 0.
    let t = shift[if rho == 0 { n - 1 } else { rho - 1 }];
    v.iter().map(|x| (x + t).max(gamma)).collect()
}

/// Projected replicator dynamics (see the module docs).
pub fn prd(payoffs: &[Vec<f64>], shape: &[usize], p: &PrdParams) -> Vec<Vec<f64>> {
    let mut strategies = uniform(shape);
    let mut sum = strategies.clone();
    for _ in 0..p.iterations {
        let next: Vec<Vec<f64>> = (0..shape.len())
            .map(|player| {
                let x = &strategies[player];
                let v = values_per_strategy(&payoffs[player], shape, &strategies, player);
                let average = dot(&v, x);
                let updated: Vec<f64> = x
                    .iter()
                    .zip(&v)
                    .map(|(xi, vi)| xi + p.dt * xi * (vi - average))
                    .collect();
                simplex_projection(&updated, p.gamma)
            })
            .collect();
        strategies = next;
        for (s, x) in sum.iter_mut().zip(&strategies) {
            for (si, xi) in s.iter_mut().zip(x) {
                *si += xi;
            }
        }
    }
    let count = (p.iterations + 1) as f64;
    sum.into_iter()
        .map(|s| s.into_iter().map(|x| x / count).collect())
        .collect()
}

/// OpenSpiel's `INITIAL_REGRET_DENOM`: every regret starts at its inverse.
const INITIAL_REGRET_DENOM: f64 = 1e6;

/// Regret matching (see the module docs).
pub fn regret_matching(
    payoffs: &[Vec<f64>],
    shape: &[usize],
    p: &RegretMatchingParams,
) -> Vec<Vec<f64>> {
    let mut strategies = uniform(shape);
    let mut regrets: Vec<Vec<f64>> = shape
        .iter()
        .map(|&n| vec![1.0 / INITIAL_REGRET_DENOM; n])
        .collect();
    let mut sum = strategies.clone();
    for _ in 0..p.iterations {
        let next: Vec<Vec<f64>> = (0..shape.len())
            .map(|player| {
                let x = &strategies[player];
                let v = values_per_strategy(&payoffs[player], shape, &strategies, player);
                let average = dot(&v, x);
                for (r, vi) in regrets[player].iter_mut().zip(&v) {
                    *r += vi - average;
                }
                let positive: Vec<f64> = regrets[player].iter().map(|r| r.max(0.0)).collect();
                let total: f64 = positive.iter().sum();
                let n = positive.len() as f64;
                if total > 0.0 {
                    positive
                        .iter()
                        .map(|r| p.gamma / n + (1.0 - p.gamma) * (r / total))
                        .collect()
                } else {
                    vec![1.0 / n; positive.len()]
                }
            })
            .collect();
        strategies = next;
        for (s, x) in sum.iter_mut().zip(&strategies) {
            for (si, xi) in s.iter_mut().zip(x) {
                *si += xi;
            }
        }
    }
    let count = (p.iterations + 1) as f64;
    sum.into_iter()
        .map(|s| s.into_iter().map(|x| x / count).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_keeps_the_floor_and_the_mass() {
        let x = simplex_projection(&[0.7, 0.5, -0.1], 0.01);
        assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((x[2] - 0.01).abs() < 1e-12, "{x:?}");
        assert!((x[0] - x[1] - 0.2).abs() < 1e-12, "{x:?}");
    }

    #[test]
    fn values_per_strategy_of_matching_pennies() {
        // Player 0 against (0.25 heads, 0.75 tails): heads 0.25 - 0.75, tails 0.75 - 0.25.
        let t = vec![1.0, -1.0, -1.0, 1.0];
        let v = values_per_strategy(&t, &[2, 2], &[vec![1.0, 0.0], vec![0.25, 0.75]], 0);
        assert_eq!(v, vec![-0.5, 0.5]);
    }
}
