//! QMIX's monotonic mixing network (Rashid et al., 2018): the team's value
//! `Q_tot = |w2|^T ELU(q^T |W1| + b1) + v` of the N learners' chosen values `q`, whose weights
//! come from hypernetworks over the arena's global state. The hypernetworks are an ordinary
//! stack ([`crate::critic::Critic`]) with one output row per arena; this module is what comes
//! after it: the mixing of each row, its loss and its gradients with respect to both the
//! agents' values and the hypernetworks' outputs. Absolute values keep every weight from q to
//! `Q_tot` non-negative, so `dQ_tot/dq_i >= 0`: the greedy joint action is each learner's own
//! greedy action.
//!
//! A row of hypernetwork outputs is `[W1: N x E (learner-major), b1: E, w2: E, v: 1]`.
//! [`Mixer`] runs the rows on the CPU (the reference, here) or in WGSL
//! (`shaders/qmix_mixer.wgsl`, with the `gpu` feature), tested against each other.

use super::{Chosen, CriticError, check_len};

/// The mixer's shape: N learners mixed through an embedding of E units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MixerShape {
    /// N: the values mixed per row.
    pub agents: usize,
    /// E: the mixing layer's width.
    pub embed: usize,
}

impl MixerShape {
    /// The hypernetworks' outputs per row: `N x E + 2 E + 1`.
    pub fn hyper_width(&self) -> usize {
        self.agents * self.embed + 2 * self.embed + 1
    }

    /// Rows of `q` (`[R, N]`) after checking `hyper` is `[R, hyper_width]`.
    fn rows(&self, q: &[f32], hyper: &[f32]) -> Result<usize, CriticError> {
        if self.agents == 0 || self.embed == 0 {
            return Err(CriticError::Spec(
                "a mixer needs agents and embed >= 1".into(),
            ));
        }
        let rows = q.len() / self.agents;
        check_len("mixer values [R, N]", rows * self.agents, q.len())?;
        check_len(
            "mixer hypernetwork outputs [R, N E + 2 E + 1]",
            rows * self.hyper_width(),
            hyper.len(),
        )?;
        Ok(rows)
    }
}

fn elu(z: f32) -> f32 {
    if z > 0.0 { z } else { z.exp_m1() }
}

/// d|x|/dx, 0 at 0 (as autodiff frameworks take it).
fn sign(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// One row's `Q_tot`, with the mixing layer's pre-activations written into `z` (`[E]`).
fn mix_row(shape: MixerShape, q: &[f32], h: &[f32], z: &mut [f32]) -> f32 {
    let (n, e) = (shape.agents, shape.embed);
    let (w1, rest) = h.split_at(n * e);
    let (b1, rest) = rest.split_at(e);
    let (w2, v) = rest.split_at(e);
    let mut total = v[0];
    for k in 0..e {
        let mut s = b1[k];
        for i in 0..n {
            s += q[i] * w1[i * e + k].abs();
        }
        z[k] = s;
        total += elu(s) * w2[k].abs();
    }
    total
}

/// One row's gradients for an upstream `d` (dL/dQ_tot): into `d_q` (`[N]`) and `d_h`
/// (`[hyper_width]`), from the pre-activations `z` of [`mix_row`].
fn backward_row(
    shape: MixerShape,
    (q, h, z): (&[f32], &[f32], &[f32]),
    d: f32,
    d_q: &mut [f32],
    d_h: &mut [f32],
) {
    let (n, e) = (shape.agents, shape.embed);
    let (w1, b1) = (0, n * e);
    let (w2, v) = (b1 + e, b1 + 2 * e);
    d_q.fill(0.0);
    for k in 0..e {
        let a = elu(z[k]);
        d_h[w2 + k] = d * a * sign(h[w2 + k]);
        let dz = d * h[w2 + k].abs() * if z[k] > 0.0 { 1.0 } else { a + 1.0 };
        d_h[b1 + k] = dz;
        for i in 0..n {
            let w = h[w1 + i * e + k];
            d_h[w1 + i * e + k] = dz * q[i] * sign(w);
            d_q[i] += dz * w.abs();
        }
    }
    d_h[v] = d;
}

/// `Q_tot` of every row: `q` is `[R, N]`, `hyper` `[R, hyper_width]`.
pub fn mix(shape: MixerShape, q: &[f32], hyper: &[f32]) -> Result<Vec<f32>, CriticError> {
    let rows = shape.rows(q, hyper)?;
    let (n, w) = (shape.agents, shape.hyper_width());
    let mut z = vec![0.0; shape.embed];
    Ok((0..rows)
        .map(|r| {
            mix_row(
                shape,
                &q[r * n..(r + 1) * n],
                &hyper[r * w..(r + 1) * w],
                &mut z,
            )
        })
        .collect())
}

/// The gradients of `sum_r d_tot[r] Q_tot[r]`: with respect to `q` (`[R, N]`) and to the
/// hypernetworks' outputs (`[R, hyper_width]`).
pub fn mix_backward(
    shape: MixerShape,
    q: &[f32],
    hyper: &[f32],
    d_tot: &[f32],
) -> Result<(Vec<f32>, Vec<f32>), CriticError> {
    let rows = shape.rows(q, hyper)?;
    check_len("mixer upstream gradient [R]", rows, d_tot.len())?;
    let (n, w) = (shape.agents, shape.hyper_width());
    let (mut d_q, mut d_h) = (vec![0.0; q.len()], vec![0.0; hyper.len()]);
    let mut z = vec![0.0; shape.embed];
    for r in 0..rows {
        let (qr, hr) = (&q[r * n..(r + 1) * n], &hyper[r * w..(r + 1) * w]);
        mix_row(shape, qr, hr, &mut z);
        let (dq, dh) = (&mut d_q[r * n..(r + 1) * n], &mut d_h[r * w..(r + 1) * w]);
        backward_row(shape, (qr, hr, &z), d_tot[r], dq, dh);
    }
    Ok((d_q, d_h))
}

/// What a step of the mixed loss computes: the loss `mean_r 0.5 (Q_tot[r] - y[r])^2`, its
/// gradients with respect to the values (`[R, N]`) and the hypernetworks' outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MixedLoss {
    /// The loss.
    pub loss: f32,
    /// `dL/dq`, `[R, N]`.
    pub d_q: Vec<f32>,
    /// `dL/dhyper`, `[R, hyper_width]`.
    pub d_hyper: Vec<f32>,
}

/// The mixed TD loss of every row against its target `y` (CPU reference).
pub fn mix_loss(
    shape: MixerShape,
    q: &[f32],
    hyper: &[f32],
    y: &[f32],
) -> Result<MixedLoss, CriticError> {
    let tot = mix(shape, q, hyper)?;
    check_len("mixer targets [R]", tot.len(), y.len())?;
    let inv = 1.0 / tot.len().max(1) as f32;
    let errors: Vec<f32> = tot.iter().zip(y).map(|(t, y)| (t - y) * inv).collect();
    let loss = tot
        .iter()
        .zip(y)
        .map(|(t, y)| 0.5 * ((t - y) as f64).powi(2))
        .sum::<f64>()
        * inv as f64;
    let (d_q, d_hyper) = mix_backward(shape, q, hyper, &errors)?;
    Ok(MixedLoss {
        loss: loss as f32,
        d_q,
        d_hyper,
    })
}

/// The mixer on the device its learner's networks were put on.
pub enum Mixer {
    /// The CPU reference.
    Cpu(MixerShape),
    /// WGSL compute shaders.
    #[cfg(feature = "gpu")]
    Gpu(super::gpu::GpuMixer),
}

impl Mixer {
    /// A mixer of `shape` on `device` (the adapter the critics use).
    pub fn new(shape: MixerShape, device: &Chosen) -> Result<Mixer, CriticError> {
        match device {
            Chosen::Cpu { .. } => Ok(Mixer::Cpu(shape)),
            #[cfg(feature = "gpu")]
            Chosen::Gpu { index, .. } => {
                Ok(Mixer::Gpu(super::gpu::GpuMixer::on_adapter(shape, *index)?))
            }
        }
    }

    /// `Q_tot` of every row.
    pub fn mix(&mut self, q: &[f32], hyper: &[f32]) -> Result<Vec<f32>, CriticError> {
        match self {
            Mixer::Cpu(shape) => mix(*shape, q, hyper),
            #[cfg(feature = "gpu")]
            Mixer::Gpu(g) => g.mix(q, hyper),
        }
    }

    /// The mixed TD loss and its gradients.
    pub fn loss(&mut self, q: &[f32], hyper: &[f32], y: &[f32]) -> Result<MixedLoss, CriticError> {
        match self {
            Mixer::Cpu(shape) => mix_loss(*shape, q, hyper, y),
            #[cfg(feature = "gpu")]
            Mixer::Gpu(g) => g.loss(q, hyper, y),
        }
    }
}

#[cfg(test)]
mod tests;
