//! What the policy-gradient learners share: a categorical policy over masked logits
//! (log-probabilities, entropy, sampling), GAE with time limits, and PPO's losses with their
//! gradients with respect to the network outputs (CleanRL's `ppo.py`, JaxMARL's IPPO):
//!
//! - the clipped surrogate `-min(rho A, clip(rho, 1 - eps, 1 + eps) A)`, `rho = pi(a|s) /
//!   pi_old(a|s)`, minus `ent_coef` times the entropy, averaged over the rows;
//! - the value loss `0.5 (V - G)^2`, or with clipping `0.5 max((V - G)^2, (V_clip - G)^2)`,
//!   `V_clip = V_old + clip(V - V_old, -eps, eps)`, averaged and scaled by `vf_coef`.
//!
//! A masked action (mask byte 0) has probability 0: no mass, no entropy, no gradient. The
//! losses themselves live beside the networks ([`crate::critic::ppo_loss`], on the CPU and in
//! WGSL); sampling and GAE are here.

pub(crate) use crate::critic::ppo_loss::{PpoCoefs, log_softmax};

use super::returns::{RolloutSteps, lambda_returns};

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

#[cfg(test)]
mod tests;
