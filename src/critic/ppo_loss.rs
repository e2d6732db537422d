//! PPO's losses with their gradients with respect to the network outputs (CleanRL's `ppo.py`,
//! JaxMARL's IPPO), on the CPU (the reference, here) and in WGSL (`shaders/ppo_loss.wgsl`, with
//! the `gpu` feature), tested against each other:
//!
//! - the policy loss over masked logits: the clipped surrogate
//!   `-min(rho A, clip(rho, 1 - eps, 1 + eps) A)`, `rho = pi(a|s) / pi_old(a|s)`, minus
//!   `ent_coef` times the entropy, averaged over the rows;
//! - the value loss `0.5 (V - G)^2`, or with clipping `0.5 max((V - G)^2, (V_clip - G)^2)`,
//!   `V_clip = V_old + clip(V - V_old, -eps, eps)`, averaged and scaled by `vf_coef`.
//!
//! A masked action (mask byte 0) has probability 0: no mass, no entropy, no gradient.

use super::{Chosen, CriticError, check_len};

/// The log-probabilities of one row's logits, legal actions only (`-inf` where masked).
pub fn log_softmax(logits: &[f32], mask: Option<&[u8]>, out: &mut [f32]) {
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

/// The hyperparameters of the losses.
#[derive(Debug, Clone, Copy)]
pub struct PpoCoefs {
    /// The clipping range epsilon (of the ratio, and of the value when `clip_value`).
    pub clip: f32,
    /// Weight of the entropy bonus.
    pub ent_coef: f32,
    /// Weight of the value loss.
    pub vf_coef: f32,
    /// Clip the value loss around the old values.
    pub clip_value: bool,
}

/// A minibatch's policy terms: the surrogate, the entropy, the approximate KL divergence
/// (`(rho - 1) - log rho`, Schulman's k3) and the fraction of rows clipped.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PolicyTerms {
    /// The clipped surrogate's mean (its negation, minimised).
    pub surrogate: f32,
    /// The policy's mean entropy.
    pub entropy: f32,
    /// The mean approximate KL divergence from the acting policy.
    pub approx_kl: f32,
    /// The fraction of rows whose ratio left the clipping range.
    pub clip_fraction: f32,
}

/// The policy loss (surrogate minus `ent_coef` x entropy, averaged over the `R` rows) of
/// `logits` `[R, A]` and its gradient into `d_logits`, for actions `taken`, the acting
/// policy's log-probabilities `old_logp` and advantages `adv` (`[R]` each), masks `[R, A]`
/// when given.
pub fn policy_loss(
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
pub fn value_loss(
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

/// Where the losses run: the device the policy's networks are on.
pub enum PpoLosses {
    /// The CPU reference.
    Cpu,
    /// WGSL compute shaders.
    #[cfg(feature = "gpu")]
    Gpu(super::gpu::GpuPpoLoss),
}

impl PpoLosses {
    /// The losses on `device`.
    pub fn new(device: &Chosen) -> Result<PpoLosses, CriticError> {
        match device {
            Chosen::Cpu { .. } => Ok(PpoLosses::Cpu),
            #[cfg(feature = "gpu")]
            Chosen::Gpu { index, .. } => {
                Ok(PpoLosses::Gpu(super::gpu::GpuPpoLoss::on_adapter(*index)?))
            }
        }
    }

    /// [`policy_loss`] of `logits` `[R, A]`: its terms and the gradient `[R, A]`.
    pub fn policy(
        &mut self,
        logits: &[f32],
        mask: Option<&[u8]>,
        batch: (&[u32], &[f32], &[f32]),
        c: PpoCoefs,
    ) -> Result<(PolicyTerms, Vec<f32>), CriticError> {
        check_policy_shapes(logits, mask, batch)?;
        match self {
            PpoLosses::Cpu => {
                let mut d = vec![0.0; logits.len()];
                let terms = policy_loss(logits, mask, batch, c, &mut d);
                Ok((terms, d))
            }
            #[cfg(feature = "gpu")]
            PpoLosses::Gpu(g) => g.policy(logits, mask, batch, c),
        }
    }

    /// [`value_loss`] of `values` `[R]`: the loss and its gradient.
    pub fn value(
        &mut self,
        values: &[f32],
        old: &[f32],
        returns: &[f32],
        c: PpoCoefs,
    ) -> Result<(f32, Vec<f32>), CriticError> {
        check_len("value loss: old values [R]", values.len(), old.len())?;
        check_len("value loss: returns [R]", values.len(), returns.len())?;
        match self {
            PpoLosses::Cpu => {
                let mut d = vec![0.0; values.len()];
                let loss = value_loss(values, old, returns, c, &mut d);
                Ok((loss, d))
            }
            #[cfg(feature = "gpu")]
            PpoLosses::Gpu(g) => g.value(values, old, returns, c),
        }
    }
}

/// Checks a policy batch: `[R, A]` logits with A >= 1, `[R, A]` masks, `[R]` actions below A,
/// old log-probabilities and advantages.
pub(crate) fn check_policy_shapes(
    logits: &[f32],
    mask: Option<&[u8]>,
    (taken, old_logp, adv): (&[u32], &[f32], &[f32]),
) -> Result<usize, CriticError> {
    let rows = taken.len();
    let width = logits.len().checked_div(rows).unwrap_or(0);
    check_len("policy loss: logits [R, A]", rows * width, logits.len())?;
    if rows > 0 && width == 0 {
        return Err(CriticError::Shape {
            what: "policy loss: actions per row",
            expected: 1,
            got: 0,
        });
    }
    if let Some(m) = mask {
        check_len("policy loss: mask [R, A]", logits.len(), m.len())?;
    }
    check_len(
        "policy loss: old log-probabilities [R]",
        rows,
        old_logp.len(),
    )?;
    check_len("policy loss: advantages [R]", rows, adv.len())?;
    if let Some(&a) = taken.iter().find(|&&a| a as usize >= width) {
        return Err(CriticError::Loss(format!(
            "policy loss: action {a} of {width}"
        )));
    }
    Ok(width)
}
