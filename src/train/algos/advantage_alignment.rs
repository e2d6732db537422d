//! Advantage Alignment (Duque et al., 2025, "Advantage Alignment Algorithms"): opponent
//! shaping without differentiating through the other learners' updates. Independent learners
//! in a social dilemma learn to defect; a learner that accounts for how its actions change what
//! the others learn can instead reach reciprocity. The paper shows that the shaping term of
//! LOLA-like methods reduces, to first order, to reweighting each learner's policy-gradient
//! advantage by the product of its own past advantages and the others' present ones.
//!
//! Each update is IPPO's ([`super::ippo`]: rollout, GAE(lambda), epochs of the clipped
//! surrogate), with one step between GAE and the epochs: learner i's advantage at step t
//! becomes
//!
//! ```text
//! A*_i(t) = A_i(t) + beta * c_i(t) * mean_{j != i} A_j(t),   c_i(t) = sum_{k<t} gamma^(t-1-k) A_i(k)
//! ```
//!
//! with the sum over the earlier steps of the same episode. When the interaction so far has
//! gone well for i (c_i > 0), the actions that raise the others' advantage now are pushed up
//! and those that lower it pushed down; when it has gone badly, the reverse. That is reciprocity:
//! cooperate after cooperation, punish after defection. beta 0 is IPPO.
//!
//! Every learner's networks are stacked as in IPPO (one per slot, or one shared), so the
//! alignment is one pass over the rollout's advantages, whatever the number of learners.
//!
//! The past sum starts from zero at the rollout's first step as well as at episode starts: an
//! episode that straddles two rollouts loses its steps before the boundary from the sum. That
//! keeps nothing across updates, so a resumed run continues bit for bit.
//!
//! Configuration read here (see [`RunConfig`]): IPPO's (`arenas`, `rollout`, `ppo`, `learn`,
//! `network`) and `alignment.beta`.

use crate::critic::Chosen;
use crate::dist::Job;
use crate::scenario::LoadedScenario;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::kit::ppo_rollout::PpoRollout;

use super::ippo::{AdvantageShaping, Ippo};

/// The advantages' rewrite, with its weight and discount.
struct Alignment {
    beta: f32,
    gamma: f32,
}

impl AdvantageShaping for Alignment {
    fn shape(&mut self, ro: &mut PpoRollout, learners: usize) {
        let b = &ro.buf;
        align(
            &mut ro.adv,
            (&b.terminated, &b.truncated),
            (b.rows, learners),
            (self.beta, self.gamma),
        );
    }
}

/// Rewrites `adv` (`[T, rows]`, row `arena * learners + slot`) into the aligned advantages
/// `A*`. A step whose `terminated` or `truncated` flag is set ends its arena's episode, so the
/// next step starts every slot's past sum afresh.
pub(crate) fn align(
    adv: &mut [f32],
    (terminated, truncated): (&[f32], &[f32]),
    (rows, learners): (usize, usize),
    (beta, gamma): (f32, f32),
) {
    if learners < 2 || rows == 0 || beta == 0.0 {
        return;
    }
    let steps = adv.len() / rows;
    let others = (learners - 1) as f32;
    let mut past = vec![0.0f32; learners];
    let mut now = vec![0.0f32; learners];
    for first in (0..rows).step_by(learners) {
        past.fill(0.0);
        for t in 0..steps {
            let at = t * rows + first;
            now.copy_from_slice(&adv[at..at + learners]);
            let total: f32 = now.iter().sum();
            for (i, a) in adv[at..at + learners].iter_mut().enumerate() {
                let theirs = (total - now[i]) / others;
                *a = now[i] + beta * past[i] * theirs;
            }
            for (p, a) in past.iter_mut().zip(&now) {
                *p = gamma * *p + a;
            }
            if terminated[at] != 0.0 || truncated[at] != 0.0 {
                past.fill(0.0);
            }
        }
    }
}

/// An Advantage Alignment learner for one rank of `job`: IPPO's, its advantages aligned.
pub fn new(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    device: &Chosen,
    job: &Job,
) -> Result<Ippo, TrainError> {
    let beta = cfg.alignment.beta;
    let gamma = cfg.learn.gamma;
    Ippo::shaped(
        cfg,
        loaded,
        (device, job),
        Box::new(Alignment { beta, gamma }),
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::align;

    /// The definition, term by term in f64: `A_i(t) + beta * sum_{k<t, same episode}
    /// gamma^(t-1-k) A_i(k) * mean_{j != i} A_j(t)`.
    fn reference(
        adv: &[f32],
        done: &[bool],
        (rows, n): (usize, usize),
        (beta, gamma): (f64, f64),
    ) -> Vec<f64> {
        let steps = adv.len() / rows;
        let mut out = vec![0.0; adv.len()];
        for row in 0..rows {
            let (first, i) = (row - row % n, row % n);
            for t in 0..steps {
                let start = (0..t)
                    .rev()
                    .find(|&k| done[k * rows + first])
                    .map_or(0, |k| k + 1);
                let past: f64 = (start..t)
                    .map(|k| gamma.powi((t - 1 - k) as i32) * adv[k * rows + row] as f64)
                    .sum();
                let theirs: f64 = (0..n)
                    .filter(|&j| j != i)
                    .map(|j| adv[t * rows + first + j] as f64)
                    .sum::<f64>()
                    / (n - 1) as f64;
                out[t * rows + row] = adv[t * rows + row] as f64 + beta * past * theirs;
            }
        }
        out
    }

    #[test]
    fn two_learners_by_hand() {
        // One arena, two learners, three steps, no episode end; gamma 0.5, beta 2.
        // Learner 0: A = 1, 2, 3; learner 1: A = -1, 4, 0.5.
        let mut adv = vec![1.0, -1.0, 2.0, 4.0, 3.0, 0.5];
        let flags = vec![0.0; 6];
        align(&mut adv, (&flags, &flags), (2, 2), (2.0, 0.5));
        // t = 0: no past. t = 1: c_0 = 1, c_1 = -1. t = 2: c_0 = 0.5 * 1 + 2 = 2.5,
        // c_1 = 0.5 * -1 + 4 = 3.5.
        let want = [
            1.0,
            -1.0,
            2.0 + 2.0 * 4.0,
            4.0 - 2.0 * 2.0,
            3.0 + 2.0 * 2.5 * 0.5,
            0.5 + 2.0 * 3.5 * 3.0,
        ];
        assert_eq!(adv, want);
    }

    proptest! {
        #[test]
        fn matches_the_definition(
            arenas in 1usize..4,
            n in 2usize..5,
            steps in 1usize..12,
            beta in 0.0f64..3.0,
            gamma in 0.0f64..1.0,
            seed in any::<u64>(),
        ) {
            let rows = arenas * n;
            let mut x = seed | 1;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let adv: Vec<f32> = (0..steps * rows)
                .map(|_| (next() % 2001) as f32 / 500.0 - 2.0)
                .collect();
            // Episode ends per arena (every slot of an arena shares them), as either flag.
            let mut done = vec![false; steps * rows];
            let (mut terminated, mut truncated) = (vec![0.0; steps * rows], vec![0.0; steps * rows]);
            for t in 0..steps {
                for a in 0..arenas {
                    let end = next() % 4;
                    for s in 0..n {
                        let e = t * rows + a * n + s;
                        done[e] = end < 2;
                        if end == 0 { terminated[e] = 1.0 }
                        if end == 1 { truncated[e] = 1.0 }
                    }
                }
            }
            let want = reference(&adv, &done, (rows, n), (beta, gamma));
            let mut got = adv.clone();
            align(&mut got, (&terminated, &truncated), (rows, n), (beta as f32, gamma as f32));
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                prop_assert!((*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()), "entry {}: {} vs {}", k, g, w);
            }
        }
    }
}
