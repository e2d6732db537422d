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
mod tests {
    use super::*;
    use crate::critic::gru::init_params;
    use crate::critic::{LN_EPS, LayerOffsets, fill_uniform};
    use rand_core::{Rng, SeedableRng};

    const SPEC: GruSpec = GruSpec {
        input: 5,
        embed: 6,
        hidden: 4,
        head: 3,
    };
    /// Steps and sequences of the test blocks.
    const T: usize = 9;
    const B: usize = 3;
    /// Sequence 1 starts a new episode at this step (sequence 2 at step 0).
    const RESET_AT: usize = 4;

    /// One block: parameters, inputs, initial hidden states, resets and a loss gradient.
    #[derive(Clone)]
    struct Case {
        params: Vec<f32>,
        x: Vec<f32>,
        h0: Vec<f32>,
        reset: Vec<u8>,
        dq: Vec<f32>,
    }

    /// `n` draws uniform in `[lo, hi]`.
    fn uniform(rng: &mut impl Rng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        let mut v = vec![0.0; n];
        fill_uniform(rng, &mut v, 0.5 * (hi - lo));
        v.iter().map(|u| u + 0.5 * (hi + lo)).collect()
    }

    fn case(seed: u64) -> Case {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut params = init_params(&SPEC, 1, seed);
        // Move the LayerNorm scale and shift off 1 and 0 (and everything else a little) so
        // that no gradient is checked only at a special point.
        for (p, d) in params
            .iter_mut()
            .zip(uniform(&mut rng, SPEC.params_per_net(), -0.2, 0.2))
        {
            *p += d;
        }
        let mut reset = vec![0u8; T * B];
        reset[RESET_AT * B + 1] = 1;
        reset[2] = 1;
        Case {
            params,
            x: uniform(&mut rng, T * B * SPEC.input, -2.0, 2.0),
            h0: uniform(&mut rng, B * SPEC.hidden, -0.9, 0.9),
            reset,
            dq: uniform(&mut rng, T * B * SPEC.head, -1.0, 1.0),
        }
    }

    /// Forward then backward of a case: Q-values, h_T, parameter gradients, gradient w.r.t. h0.
    fn run(c: &Case) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
        let mut cache = GruCache::default();
        let mut q = vec![0.0; T * B * SPEC.head];
        let h_last = forward(&SPEC, &c.params, &c.x, &c.h0, &c.reset, &mut q, &mut cache)
            .unwrap()
            .to_vec();
        let mut grads = vec![0.0; SPEC.params_per_net()];
        let mut dh0 = vec![0.0; B * SPEC.hidden];
        backward(
            &SPEC,
            &c.params,
            &mut cache,
            &c.dq,
            &mut grads,
            Some(&mut dh0),
        )
        .unwrap();
        (q, h_last, grads, dh0)
    }

    /// The test's own f64 forward, one row at a time with plain loops: `[T, B, A]` Q-values.
    fn forward64(spec: &GruSpec, p: &[f64], x: &[f64], h0: &[f64], reset: &[u8]) -> Vec<f64> {
        let o = spec.offsets();
        let (d, g, a) = (spec.input, spec.hidden, spec.head);
        let lin = |l: &LayerOffsets, v: &[f64]| -> Vec<f64> {
            (0..l.fan_out)
                .map(|j| {
                    let w = &p[l.weight + j * l.fan_in..l.weight + (j + 1) * l.fan_in];
                    p[l.bias + j] + w.iter().zip(v).map(|(w, v)| w * v).sum::<f64>()
                })
                .collect()
        };
        let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
        let batch = h0.len() / g;
        let mut h: Vec<Vec<f64>> = h0.chunks(g).map(|c| c.to_vec()).collect();
        let mut q = vec![0.0; reset.len() * a];
        for (i, &reset) in reset.iter().enumerate() {
            let b = i % batch;
            if reset != 0 {
                h[b] = vec![0.0; g];
            }
            let z = lin(&o.embed, &x[i * d..(i + 1) * d]);
            let n = z.len() as f64;
            let mean = z.iter().sum::<f64>() / n;
            let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
            let inv = 1.0 / (var + LN_EPS as f64).sqrt();
            let u: Vec<f64> = (0..z.len())
                .map(|j| {
                    let e = &o.embed;
                    (p[e.gamma + j] * (z[j] - mean) * inv + p[e.beta + j]).max(0.0)
                })
                .collect();
            let gi = lin(&o.input_gates, &u);
            let gh = lin(&o.hidden_gates, &h[b]);
            h[b] = (0..g)
                .map(|j| {
                    let r = sig(gi[j] + gh[j]);
                    let z = sig(gi[g + j] + gh[g + j]);
                    let n = (gi[2 * g + j] + r * gh[2 * g + j]).tanh();
                    (1.0 - z) * n + z * h[b][j]
                })
                .collect();
            q[i * a..(i + 1) * a].copy_from_slice(&lin(&o.head, &h[b]));
        }
        q
    }

    fn to64(v: &[f32]) -> Vec<f64> {
        v.iter().map(|&v| v as f64).collect()
    }

    /// BPTT against central differences of the f64 reference, for every element of every
    /// parameter tensor and of h0, over 9 steps of 3 sequences with a reset inside one and at
    /// the start of another. In f64 with eps = 1e-6 the difference quotient is exact to ~1e-9
    /// (rounding ~1e-16 x |loss| / eps, truncation ~eps^2), so the tolerance only absorbs the
    /// f32 arithmetic of the code under test: relative error ~1e-7 per operation over ~T
    /// chained steps and sums of ~T x B terms, under 1e-4 x max(1, |g|) (observed: 3e-7).
    #[test]
    fn bptt_matches_finite_differences_of_an_f64_reference() {
        let c = case(3);
        let (q, _, grads, dh0) = run(&c);
        let (p64, x64, h64, dq64) = (to64(&c.params), to64(&c.x), to64(&c.h0), to64(&c.dq));
        let q64 = forward64(&SPEC, &p64, &x64, &h64, &c.reset);
        for (a, b) in q.iter().zip(&q64) {
            assert!(
                (*a as f64 - b).abs() < 1e-4 * (1.0 + b.abs()),
                "q {a} vs {b}"
            );
        }
        let loss = |p: &[f64], h0: &[f64]| -> f64 {
            let q = forward64(&SPEC, p, &x64, h0, &c.reset);
            q.iter().zip(&dq64).map(|(q, d)| q * d).sum()
        };
        let eps = 1e-6;
        let check = |name: &str, analytic: &[f32], fd: &dyn Fn(usize) -> f64| {
            let mut worst = 0.0f64;
            for (k, &a) in analytic.iter().enumerate() {
                let f = fd(k);
                let err = (a as f64 - f).abs() / f.abs().max(1.0);
                assert!(
                    err < 1e-4,
                    "{name}[{k}]: backward {a}, finite differences {f}"
                );
                worst = worst.max(err);
            }
            eprintln!(
                "{name}: {} values, worst scaled error {worst:.2e}",
                analytic.len()
            );
        };
        for t in SPEC.tensors() {
            let range = t.offset..t.offset + t.rows * t.cols;
            check(&t.name, &grads[range.clone()], &|k| {
                let mut p = p64.clone();
                p[t.offset + k] += eps;
                let up = loss(&p, &h64);
                p[t.offset + k] -= 2.0 * eps;
                (up - loss(&p, &h64)) / (2.0 * eps)
            });
        }
        check("h0", &dh0, &|k| {
            let mut h = h64.clone();
            h[k] += eps;
            let up = loss(&p64, &h);
            h[k] -= 2.0 * eps;
            (up - loss(&p64, &h)) / (2.0 * eps)
        });
        // Sequence 2 is reset at step 0: nothing reaches its h0.
        assert!(dh0[2 * SPEC.hidden..].iter().all(|&v| v == 0.0));
        assert!(dh0[..2 * SPEC.hidden].iter().any(|&v| v != 0.0));
    }

    #[test]
    fn backward_adds_into_the_gradients() {
        let c = case(4);
        let (_, _, once, _) = run(&c);
        let mut cache = GruCache::default();
        let mut q = vec![0.0; T * B * SPEC.head];
        forward(&SPEC, &c.params, &c.x, &c.h0, &c.reset, &mut q, &mut cache).unwrap();
        let mut grads = vec![0.0; SPEC.params_per_net()];
        for _ in 0..2 {
            backward(&SPEC, &c.params, &mut cache, &c.dq, &mut grads, None).unwrap();
        }
        for (twice, once) in grads.iter().zip(&once) {
            assert!((twice - 2.0 * once).abs() <= 1e-6 * (1.0 + once.abs()));
        }
    }

    /// Inputs and hidden state before a reset change neither the Q-values from the reset on
    /// nor, when the loss looks only at those, any gradient.
    #[test]
    fn a_reset_cuts_values_and_gradients() {
        let (g, a) = (SPEC.hidden, SPEC.head);
        let mut base = case(5);
        for t in 0..RESET_AT {
            base.dq[(t * B + 1) * a..(t * B + 2) * a].fill(0.0);
        }
        let mut other = base.clone();
        for t in 0..RESET_AT {
            let row = (t * B + 1) * SPEC.input;
            for v in &mut other.x[row..row + SPEC.input] {
                *v = 1.5 - *v;
            }
        }
        for v in &mut other.h0[g..2 * g] {
            *v = 0.3 - *v;
        }
        let (q1, _, grads1, dh1) = run(&base);
        let (q2, _, grads2, dh2) = run(&other);
        for t in 0..T {
            let seq1 = (t * B + 1) * a..(t * B + 2) * a;
            if t < RESET_AT {
                assert_ne!(q1[seq1.clone()], q2[seq1], "step {t} sees its own inputs");
            } else {
                assert_eq!(q1[seq1.clone()], q2[seq1], "step {t} is past the reset");
            }
        }
        assert_eq!(grads1, grads2);
        assert!(
            dh1[g..2 * g]
                .iter()
                .chain(&dh2[g..2 * g])
                .all(|&v| v == 0.0)
        );
        assert_eq!(dh1, dh2);
    }

    /// Acting one step at a time (zeroing a sequence's state where its episode starts) gives
    /// what forward computes over the whole sequence.
    #[test]
    fn step_by_step_equals_forward() {
        let c = case(6);
        let (q, h_last, _, _) = run(&c);
        let (d, g, a) = (SPEC.input, SPEC.hidden, SPEC.head);
        let mut cache = GruCache::default();
        let mut h = c.h0.clone();
        let mut q_t = vec![0.0; B * a];
        for t in 0..T {
            for (hb, &reset) in h.chunks_exact_mut(g).zip(&c.reset[t * B..(t + 1) * B]) {
                if reset != 0 {
                    hb.fill(0.0);
                }
            }
            let x = &c.x[t * B * d..(t + 1) * B * d];
            step(&SPEC, &c.params, x, &mut h, &mut q_t, &mut cache).unwrap();
            for (s, f) in q_t.iter().zip(&q[t * B * a..(t + 1) * B * a]) {
                assert!(
                    (s - f).abs() <= 1e-6 * (1.0 + f.abs()),
                    "step {t}: {s} vs {f}"
                );
            }
        }
        for (s, f) in h.iter().zip(&h_last) {
            assert!((s - f).abs() <= 1e-6, "h_T {s} vs {f}");
        }
    }

    /// A sized cache is reused (no buffer moves for the same or a smaller block), and holds
    /// the bytes `critic::gru::cpu_cache_bytes` promises.
    #[test]
    fn a_sized_cache_is_reused_and_its_size_is_known() {
        let c = case(8);
        let mut cache = GruCache::default();
        let mut q = vec![0.0; T * B * SPEC.head];
        let mut grads = vec![0.0; SPEC.params_per_net()];
        forward(&SPEC, &c.params, &c.x, &c.h0, &c.reset, &mut q, &mut cache).unwrap();
        backward(&SPEC, &c.params, &mut cache, &c.dq, &mut grads, None).unwrap();
        assert_eq!(
            cache.held_bytes(),
            crate::critic::gru::cpu_cache_bytes(&SPEC, T, B)
        );
        let storage = cache.storage();
        forward(&SPEC, &c.params, &c.x, &c.h0, &c.reset, &mut q, &mut cache).unwrap();
        backward(&SPEC, &c.params, &mut cache, &c.dq, &mut grads, None).unwrap();
        let (short, rows) = (4, 4 * B);
        let mut q_short = vec![0.0; rows * SPEC.head];
        let (x, reset) = (&c.x[..rows * SPEC.input], &c.reset[..rows]);
        forward(&SPEC, &c.params, x, &c.h0, reset, &mut q_short, &mut cache).unwrap();
        assert_eq!(cache.storage(), storage);
        assert_eq!(
            cache.held_bytes(),
            crate::critic::gru::cpu_cache_bytes(&SPEC, short, B)
        );
    }

    #[test]
    fn wrong_lengths_are_errors() {
        let c = case(7);
        let mut cache = GruCache::default();
        let mut q = vec![0.0; T * B * SPEC.head];
        let short_x = &c.x[1..];
        let r = forward(
            &SPEC, &c.params, short_x, &c.h0, &c.reset, &mut q, &mut cache,
        );
        assert!(matches!(r, Err(CriticError::Shape { .. })));
        let r = forward(
            &SPEC,
            &c.params,
            &c.x,
            &c.h0[1..],
            &c.reset,
            &mut q,
            &mut cache,
        );
        assert!(matches!(r, Err(CriticError::Shape { .. })));
        forward(&SPEC, &c.params, &c.x, &c.h0, &c.reset, &mut q, &mut cache).unwrap();
        let mut grads = vec![0.0; SPEC.params_per_net()];
        let r = backward(&SPEC, &c.params, &mut cache, &c.dq[1..], &mut grads, None);
        assert!(matches!(r, Err(CriticError::Shape { .. })));
        let mut h = c.h0.clone();
        let r = step(&SPEC, &c.params, &c.x, &mut h, &mut q, &mut cache);
        assert!(matches!(r, Err(CriticError::Shape { .. })));
    }
}
