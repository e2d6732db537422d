//! One GRU network's math over a block of B sequences of T steps (the shape, layout and cell
//! equations are in [`crate::critic::gru`]): forward over the whole sequence, backpropagation
//! through time (BPTT), and the one-step pass for acting.
//!
//! Buffers are time-major: row `t * B + b` is sequence b at step t (`x` `[T, B, d]`, `reset`
//! `[T, B]`, `q` `[T, B, A]`); hidden states are `[B, g]`. The input-side matrix products
//! (embedding, the gates' input half, the head) run once over all T x B rows; only the
//! recurrent product `h W_hh^T` runs per step. Where `reset[t * B + b]` is 1 the hidden state
//! entering step t of sequence b is zero, so neither values nor gradients cross the reset.

use super::net::{
    NormSaved, layernorm_relu, layernorm_relu_grad, linear, linear_grads, linear_input_grad,
};
use crate::critic::gru::GruSpec;
use crate::critic::{CriticError, check_len};

/// What [`forward`] keeps for [`backward`], and both passes' scratch; buffers grow to the
/// largest block seen and are reused (no allocation per call once sized). Rows R = T x B.
#[derive(Debug, Default)]
pub(crate) struct GruCache {
    /// T of the last forward.
    steps: usize,
    /// B of the last forward.
    batch: usize,
    /// `[R, d]` the input (the embedding's weight gradient needs it).
    x: Vec<f32>,
    /// `[R]` the reset mask.
    reset: Vec<u8>,
    /// `[R, e]` embedding pre-activation; in backward, its gradient.
    pre: Vec<f32>,
    /// `[R, e]` LayerNorm's x-hat.
    xhat: Vec<f32>,
    /// `[R]` LayerNorm's 1/std.
    rstd: Vec<f32>,
    /// `[R, e]` the cell's input u (after ReLU).
    u: Vec<f32>,
    /// `[R, e]` in backward, the gradient w.r.t. u.
    d_u: Vec<f32>,
    /// `[R, 3g]` input-side gate pre-activations `W_ih u + b_ih`; in backward, the gradient
    /// w.r.t. them.
    gi: Vec<f32>,
    /// `[R, 3g]` recurrent-side pre-activations `W_hh h + b_hh` (the n third is needed by
    /// backward).
    gh: Vec<f32>,
    /// `[R, 3g]` in backward, the gradient w.r.t. `gh`.
    d_gh: Vec<f32>,
    /// `[R, 3g]` gates r | z | n.
    gates: Vec<f32>,
    /// `[R, g]` hidden state entering each step (after the reset).
    h_in: Vec<f32>,
    /// `[R, g]` hidden state leaving each step.
    h_out: Vec<f32>,
    /// `[B, g]` the hidden state after the last step.
    h_last: Vec<f32>,
    /// `[R, g]` in backward, the head's gradient w.r.t. `h_out`.
    d_h: Vec<f32>,
    /// `[B, g]` in backward, the gradient w.r.t. the hidden state leaving the previous step.
    carry: Vec<f32>,
    /// `[B, g]` in backward, the direct part `dh * z` of the gradient w.r.t. `h_in`.
    direct: Vec<f32>,
}

impl GruCache {
    /// `[B, g]` the hidden state after the last step of the last forward.
    pub(crate) fn h_last(&self) -> &[f32] {
        &self.h_last
    }

    /// Sizes the buffers for T steps of B sequences.
    fn size(&mut self, spec: &GruSpec, steps: usize, batch: usize) {
        let r = steps * batch;
        let (d, e, g) = (spec.input, spec.embed, spec.hidden);
        (self.steps, self.batch) = (steps, batch);
        self.x.resize(r * d, 0.0);
        self.reset.resize(r, 0);
        for v in [&mut self.pre, &mut self.xhat, &mut self.u, &mut self.d_u] {
            v.resize(r * e, 0.0);
        }
        self.rstd.resize(r, 0.0);
        for v in [&mut self.gi, &mut self.gh, &mut self.d_gh, &mut self.gates] {
            v.resize(r * 3 * g, 0.0);
        }
        for v in [&mut self.h_in, &mut self.h_out, &mut self.d_h] {
            v.resize(r * g, 0.0);
        }
        for v in [&mut self.h_last, &mut self.carry, &mut self.direct] {
            v.resize(batch * g, 0.0);
        }
    }

    /// Every f32 buffer.
    #[cfg(test)]
    fn float_buffers(&self) -> [&Vec<f32>; 16] {
        [
            &self.x,
            &self.pre,
            &self.xhat,
            &self.rstd,
            &self.u,
            &self.d_u,
            &self.gi,
            &self.gh,
            &self.d_gh,
            &self.gates,
            &self.h_in,
            &self.h_out,
            &self.h_last,
            &self.d_h,
            &self.carry,
            &self.direct,
        ]
    }

    /// The buffers' addresses and capacities (a reused cache keeps them).
    #[cfg(test)]
    fn storage(&self) -> Vec<(usize, usize)> {
        let floats = self
            .float_buffers()
            .map(|v| (v.as_ptr() as usize, v.capacity()));
        let mut out = floats.to_vec();
        out.push((self.reset.as_ptr() as usize, self.reset.capacity()));
        out
    }

    /// The bytes the buffers hold now.
    #[cfg(test)]
    fn held_bytes(&self) -> u64 {
        let floats: usize = self.float_buffers().iter().map(|v| v.len()).sum();
        floats as u64 * 4 + self.reset.len() as u64
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// T and B of a block from its buffers' lengths: B from `h0` (`[B, g]`), T from `reset`
/// (`[T, B]`); every buffer checked against them.
fn block_shape(
    spec: &GruSpec,
    params: &[f32],
    x: &[f32],
    h0: &[f32],
    reset_len: usize,
    q_out: &[f32],
) -> Result<(usize, usize), CriticError> {
    spec.validate()?;
    check_len("GRU parameters", spec.params_per_net(), params.len())?;
    let batch = h0.len() / spec.hidden;
    check_len("h0 ([B, hidden])", batch * spec.hidden, h0.len())?;
    let steps = reset_len.checked_div(batch).unwrap_or(0);
    check_len("reset ([T, B])", steps * batch, reset_len)?;
    check_len("x ([T, B, input])", steps * batch * spec.input, x.len())?;
    check_len("q ([T, B, head])", steps * batch * spec.head, q_out.len())?;
    Ok((steps, batch))
}

/// Forward over T steps of B sequences of one network: `x` `[T, B, d]` from the hidden state
/// `h0` `[B, g]`, zeroing it where `reset` `[T, B]` is 1, the Q-values into `q_out`
/// `[T, B, A]`. Keeps what [`backward`] needs in `cache` and returns the hidden state after the
/// last step, `[B, g]` (`h0` itself when T is 0). B is `h0`'s rows, T `reset`'s rows.
pub(crate) fn forward<'c>(
    spec: &GruSpec,
    params: &[f32],
    x: &[f32],
    h0: &[f32],
    reset: &[u8],
    q_out: &mut [f32],
    cache: &'c mut GruCache,
) -> Result<&'c [f32], CriticError> {
    let (steps, batch) = block_shape(spec, params, x, h0, reset.len(), q_out)?;
    cache.size(spec, steps, batch);
    cache.reset.copy_from_slice(reset);
    run_forward(spec, params, x, h0, q_out, cache);
    Ok(&cache.h_last)
}

/// One step of B sequences for acting: `x` `[B, d]`, the hidden state `h` `[B, g]` read and
/// replaced by the next one, the Q-values into `q` `[B, A]`. No reset: the caller zeroes a
/// sequence's `h` when its episode starts. The same arithmetic as [`forward`] (it is forward
/// with T = 1), so acting step by step sees the values training recomputes. The stack's
/// acting pass runs [`forward`] with T = 1; the tests check the two agree.
#[cfg(test)]
pub(crate) fn step(
    spec: &GruSpec,
    params: &[f32],
    x: &[f32],
    h: &mut [f32],
    q: &mut [f32],
    cache: &mut GruCache,
) -> Result<(), CriticError> {
    let batch = h.len() / spec.hidden.max(1);
    let (steps, batch) = block_shape(spec, params, x, h, batch, q)?;
    cache.size(spec, steps, batch);
    cache.reset.fill(0);
    run_forward(spec, params, x, h, q, cache);
    h.copy_from_slice(&cache.h_last);
    Ok(())
}

/// [`forward`] once the shapes are checked, the cache sized and its reset mask written.
fn run_forward(
    spec: &GruSpec,
    params: &[f32],
    x: &[f32],
    h0: &[f32],
    q_out: &mut [f32],
    c: &mut GruCache,
) {
    let o = spec.offsets();
    let (steps, batch, g) = (c.steps, c.batch, spec.hidden);
    let rows = steps * batch;
    c.x.copy_from_slice(x);
    // Embedding and the gates' input side: all T x B rows at once.
    linear(rows, &o.embed, params, x, &mut c.pre);
    layernorm_relu(
        rows,
        &o.embed,
        params,
        &c.pre,
        &mut c.xhat,
        &mut c.rstd,
        &mut c.u,
    );
    linear(rows, &o.input_gates, params, &c.u, &mut c.gi);
    // The recurrence, one step of all B sequences at a time.
    let (bg, bg3) = (batch * g, batch * 3 * g);
    for t in 0..steps {
        let h_in = &mut c.h_in[t * bg..(t + 1) * bg];
        if t == 0 {
            h_in.copy_from_slice(h0);
        } else {
            h_in.copy_from_slice(&c.h_out[(t - 1) * bg..t * bg]);
        }
        for (hb, &reset) in h_in
            .chunks_exact_mut(g)
            .zip(&c.reset[t * batch..(t + 1) * batch])
        {
            if reset != 0 {
                hb.fill(0.0);
            }
        }
        let gh = &mut c.gh[t * bg3..(t + 1) * bg3];
        linear(batch, &o.hidden_gates, params, h_in, gh);
        let rows = (t * batch..(t + 1) * batch).map(|i| {
            (
                &c.gi[i * 3 * g..(i + 1) * 3 * g],
                &c.gh[i * 3 * g..(i + 1) * 3 * g],
                &c.h_in[i * g..(i + 1) * g],
            )
        });
        let outs = c.gates[t * bg3..(t + 1) * bg3]
            .chunks_exact_mut(3 * g)
            .zip(c.h_out[t * bg..(t + 1) * bg].chunks_exact_mut(g));
        for ((gi, gh, h), (gates, h_next)) in rows.zip(outs) {
            let (gr, rest) = gates.split_at_mut(g);
            let (gz, gn) = rest.split_at_mut(g);
            for j in 0..g {
                let r = sigmoid(gi[j] + gh[j]);
                let z = sigmoid(gi[g + j] + gh[g + j]);
                let n = (gi[2 * g + j] + r * gh[2 * g + j]).tanh();
                (gr[j], gz[j], gn[j]) = (r, z, n);
                h_next[j] = (1.0 - z) * n + z * h[j];
            }
        }
    }
    if steps == 0 {
        c.h_last.copy_from_slice(h0);
    } else {
        c.h_last.copy_from_slice(&c.h_out[(steps - 1) * bg..]);
    }
    // The head: all rows at once.
    linear(rows, &o.head, params, &c.h_out, q_out);
}

/// Backpropagation through all T steps of the last [`forward`] on `cache`: `dq` `[T, B, A]`
/// is the loss gradient w.r.t. its Q-values. Adds every parameter's gradient into `grads`
/// (`[params_per_net]`, accumulated, not overwritten) and, when asked, writes the gradient
/// w.r.t. `h0` into `dh0` `[B, g]`. No gradient flows into a step's incoming hidden state
/// where that step was reset. `cache` keeps the forward's values (backward may run again).
pub(crate) fn backward(
    spec: &GruSpec,
    params: &[f32],
    cache: &mut GruCache,
    dq: &[f32],
    grads: &mut [f32],
    dh0: Option<&mut [f32]>,
) -> Result<(), CriticError> {
    spec.validate()?;
    let c = cache;
    let o = spec.offsets();
    let (steps, batch, g) = (c.steps, c.batch, spec.hidden);
    let rows = steps * batch;
    check_len("GRU parameters", spec.params_per_net(), params.len())?;
    check_len("GRU gradients", spec.params_per_net(), grads.len())?;
    check_len("cache (run forward first)", rows * spec.input, c.x.len())?;
    check_len("dq ([T, B, head])", rows * spec.head, dq.len())?;
    if let Some(d) = &dh0 {
        check_len("dh0 ([B, hidden])", batch * g, d.len())?;
    }
    // The head, over every row.
    linear_grads(rows, &o.head, dq, &c.h_out, grads, true);
    linear_input_grad(rows, &o.head, params, dq, &mut c.d_h);
    // Through time, last step first. `carry` is the gradient w.r.t. the hidden state leaving
    // step t that step t + 1 sent back.
    c.carry.fill(0.0);
    let (bg, bg3) = (batch * g, batch * 3 * g);
    for t in (0..steps).rev() {
        for bi in 0..batch {
            let i = t * batch + bi;
            let (g3, gg) = (i * 3 * g..(i + 1) * 3 * g, i * g..(i + 1) * g);
            let (gates, gh, h) = (&c.gates[g3.clone()], &c.gh[g3.clone()], &c.h_in[gg.clone()]);
            let (d_gi, d_gh) = (&mut c.gi[g3.clone()], &mut c.d_gh[g3]);
            let d_h = &c.d_h[gg];
            let carry = &c.carry[bi * g..(bi + 1) * g];
            let direct = &mut c.direct[bi * g..(bi + 1) * g];
            for j in 0..g {
                let (r, z, n) = (gates[j], gates[g + j], gates[2 * g + j]);
                let dh = d_h[j] + carry[j];
                // h' = (1 - z) n + z h.
                let dn = dh * (1.0 - z) * (1.0 - n * n);
                let dz = dh * (h[j] - n) * z * (1.0 - z);
                // n = tanh(gi_n + r gh_n).
                let dr = dn * gh[2 * g + j] * r * (1.0 - r);
                (d_gi[j], d_gi[g + j], d_gi[2 * g + j]) = (dr, dz, dn);
                (d_gh[j], d_gh[g + j], d_gh[2 * g + j]) = (dr, dz, dn * r);
                direct[j] = dh * z;
            }
        }
        // dh_in = dh z + d_gh W_hh; nothing crosses a reset.
        let d_gh = &c.d_gh[t * bg3..(t + 1) * bg3];
        linear_input_grad(batch, &o.hidden_gates, params, d_gh, &mut c.carry);
        let reset = &c.reset[t * batch..(t + 1) * batch];
        for ((carry, direct), &reset) in c
            .carry
            .chunks_exact_mut(g)
            .zip(c.direct.chunks_exact(g))
            .zip(reset)
        {
            if reset != 0 {
                carry.fill(0.0);
            } else {
                carry.iter_mut().zip(direct).for_each(|(a, d)| *a += d);
            }
        }
    }
    if let Some(d) = dh0 {
        d.copy_from_slice(&c.carry[..bg]);
    }
    // Both sides of the gates' weights, every step at once.
    linear_grads(rows, &o.hidden_gates, &c.d_gh, &c.h_in, grads, true);
    linear_grads(rows, &o.input_gates, &c.gi, &c.u, grads, true);
    linear_input_grad(rows, &o.input_gates, params, &c.gi, &mut c.d_u);
    // The embedding.
    let saved = NormSaved {
        xhat: &c.xhat,
        rstd: &c.rstd,
        act: &c.u,
    };
    layernorm_relu_grad(rows, &o.embed, params, saved, &c.d_u, &mut c.pre, grads);
    linear_grads(rows, &o.embed, &c.pre, &c.x, grads, true);
    Ok(())
}

#[cfg(test)]
#[path = "gru_tests.rs"]
mod tests;
