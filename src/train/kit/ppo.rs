//! What the policy-gradient learners share: a categorical policy over masked logits
//! (log-probabilities, entropy, sampling), GAE with time limits, and PPO's losses with their
//! gradients with respect to the network outputs (CleanRL's `ppo.py`, JaxMARL's IPPO):
//!
//! - the clipped surrogate `-min(rho A, clip(rho, 1 - eps, 1 + eps) A)`, `rho = pi(a|s) /
//!   pi_old(a|s)`, minus `ent_coef` times the entropy, averaged over the rows;
//! - the value loss `0.5 (V - G)^2`, or with clipping `0.5 max((V - G)^2, (V_clip - G)^2)`,
//!   `V_clip = V_old + clip(V - V_old, -eps, eps)`, averaged and scaled by `vf_coef`.
//!
//! A masked action (mask byte 0) has probability 0: no mass, no entropy, no gradient.

use super::returns::{RolloutSteps, lambda_returns};

/// The log-probabilities of one row's logits, legal actions only (`-inf` where masked).
pub(crate) fn log_softmax(logits: &[f32], mask: Option<&[u8]>, out: &mut [f32]) {
    let legal = |a: usize| mask.is_none_or(|m| m[a] != 0);
    let max = (0..logits.len())
        .filter(|&a| legal(a))
        .map(|a| logits[a])
        .fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = (0..logits.len())
        .filter(|&a| legal(a))
        .map(|a| (logits[a] - max).exp())
        .sum();
    let log_sum = max + sum.ln();
    for (a, o) in out.iter_mut().enumerate() {
        *o = if legal(a) {
            logits[a] - log_sum
        } else {
            f32::NEG_INFINITY
        };
    }
}

/// Draws an action from log-probabilities with a uniform `u` in [0, 1): the first action whose
/// cumulative probability passes `u` (the last legal one if rounding leaves it short).
pub(crate) fn sample(logp: &[f32], u: f32) -> usize {
    let mut acc = 0.0;
    let mut last = 0;
    for (a, &l) in logp.iter().enumerate() {
        if l == f32::NEG_INFINITY {
            continue;
        }
        acc += l.exp();
        last = a;
        if u < acc {
            return a;
        }
    }
    last
}

/// GAE(lambda) over a rollout, `[T, rows]` (see [`lambda_returns`]: with the value function in
/// place of `max Q`, a lambda-return is `A_t + V(s_t)`): `values` `[T + 1, rows]` are
/// `V(s_t)` with row T the observation after the rollout, `final_values` the values of the
/// final observations where a step truncated (the time limit bootstraps, a termination cuts).
/// Writes the returns `G_t` and the advantages `G_t - V(s_t)`.
pub(crate) fn gae(
    steps: &RolloutSteps,
    gamma: f32,
    lambda: f32,
    returns: &mut [f32],
    advantages: &mut [f32],
) {
    lambda_returns(steps, gamma, lambda, returns);
    for ((a, g), v) in advantages.iter_mut().zip(returns.iter()).zip(steps.q_max) {
        *a = g - v;
    }
}

/// The hyperparameters of the losses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PpoCoefs {
    pub clip: f32,
    pub ent_coef: f32,
    pub vf_coef: f32,
    pub clip_value: bool,
}

/// A minibatch's policy terms: the surrogate, the entropy, the approximate KL divergence
/// (`(rho - 1) - log rho`, Schulman's k3) and the fraction of rows clipped.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct PolicyTerms {
    pub surrogate: f32,
    pub entropy: f32,
    pub approx_kl: f32,
    pub clip_fraction: f32,
}

/// The policy loss (surrogate minus `ent_coef` x entropy, averaged over the `R` rows) of
/// `logits` `[R, A]` and its gradient into `d_logits`, for actions `taken`, the acting
/// policy's log-probabilities `old_logp` and advantages `adv` (`[R]` each), masks `[R, A]`
/// when given.
pub(crate) fn policy_loss(
    logits: &[f32],
    mask: Option<&[u8]>,
    (taken, old_logp, adv): (&[u32], &[f32], &[f32]),
    c: PpoCoefs,
    d_logits: &mut [f32],
) -> PolicyTerms {
    let rows = taken.len();
    let a_len = logits.len() / rows.max(1);
    let inv = 1.0 / rows.max(1) as f32;
    let mut logp = vec![0.0f32; a_len];
    let mut t = PolicyTerms::default();
    for r in 0..rows {
        let z = &logits[r * a_len..(r + 1) * a_len];
        let m = mask.map(|m| &m[r * a_len..(r + 1) * a_len]);
        log_softmax(z, m, &mut logp);
        let a = taken[r] as usize;
        let log_ratio = logp[a] - old_logp[r];
        let ratio = log_ratio.exp();
        let (lo, hi) = (1.0 - c.clip, 1.0 + c.clip);
        let unclipped = ratio * adv[r];
        let clipped = ratio.clamp(lo, hi) * adv[r];
        t.surrogate -= unclipped.min(clipped) * inv;
        t.approx_kl += ((ratio - 1.0) - log_ratio) * inv;
        let outside = ratio < lo || ratio > hi;
        t.clip_fraction += f32::from(u8::from(outside)) * inv;
        // d(-min)/d logp_a: -rho A while the unclipped term is the smaller (always inside the
        // range), 0 where the clipped constant is.
        let d_logp_a = if unclipped <= clipped {
            -unclipped
        } else {
            0.0
        };
        let entropy: f32 = -logp
            .iter()
            .filter(|l| l.is_finite())
            .map(|&l| l.exp() * l)
            .sum::<f32>();
        t.entropy += entropy * inv;
        let d = &mut d_logits[r * a_len..(r + 1) * a_len];
        for (j, dj) in d.iter_mut().enumerate() {
            if !logp[j].is_finite() {
                *dj = 0.0;
                continue;
            }
            let p = logp[j].exp();
            // d logp_a / d z_j = [j == a] - p_j; dH / d z_j = -p_j (log p_j + H).
            let surrogate = d_logp_a * (f32::from(u8::from(j == a)) - p);
            let bonus = c.ent_coef * p * (logp[j] + entropy);
            *dj = (surrogate + bonus) * inv;
        }
    }
    t
}

/// The value loss (`vf_coef` x the mean of `0.5 (V - G)^2`, clipped around `old` when
/// `clip_value`) of `values` `[R]` toward `returns`, and its gradient into `d_values`.
pub(crate) fn value_loss(
    values: &[f32],
    old: &[f32],
    returns: &[f32],
    c: PpoCoefs,
    d_values: &mut [f32],
) -> f32 {
    let inv = 1.0 / values.len().max(1) as f32;
    let mut loss = 0.0f64;
    for r in 0..values.len() {
        let e = values[r] - returns[r];
        let (l, g) = if c.clip_value {
            let delta = (values[r] - old[r]).clamp(-c.clip, c.clip);
            let ec = old[r] + delta - returns[r];
            let inside = (values[r] - old[r]).abs() < c.clip;
            if e * e >= ec * ec {
                (0.5 * e * e, e)
            } else {
                (0.5 * ec * ec, if inside { ec } else { 0.0 })
            }
        } else {
            (0.5 * e * e, e)
        };
        loss += (c.vf_coef * l * inv) as f64;
        d_values[r] = c.vf_coef * g * inv;
    }
    loss as f32
}

#[cfg(test)]
mod tests;
