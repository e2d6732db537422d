//! A stack of GRU networks on the CPU: the sequences of a batch grouped by network, each
//! network's sequences cut into work units of at most [`UNIT_SEQUENCES`] sequences, every unit
//! run in parallel through [`super::gru`] with its own cache. A unit's weight gradients are its
//! own; a network's gradient is the sum of its units' in unit order. Units have a fixed size,
//! so results do not depend on the thread count.
//!
//! Three sets of units are kept: training (forward, then backward), target passes and acting,
//! so that neither a target pass nor an acting step overwrites what backward needs.

use rayon::prelude::*;

use super::gru::{self, GruCache};
use crate::critic::gru::GruSpec;
use crate::critic::{CriticError, Input, RowPlan, Sequences, check_len};

/// Sequences per work unit.
pub(crate) const UNIT_SEQUENCES: usize = 32;

/// One work unit: some sequences of one network, their gathered buffers and cache.
#[derive(Debug, Default)]
struct Unit {
    /// The network.
    net: usize,
    /// The caller's sequence index of each of the unit's sequences.
    seqs: Vec<u32>,
    /// `[T, n, d]` the unit's input as f32.
    x: Vec<f32>,
    /// `[n, g]` hidden state entering step 0.
    h0: Vec<f32>,
    /// `[T, n]` reset flags.
    reset: Vec<u8>,
    /// `[T, n, A]` outputs; in backward, the output gradient.
    q: Vec<f32>,
    /// `[P]` the unit's parameter gradient.
    grads: Vec<f32>,
    cache: GruCache,
}

/// One set of units and the shape of its last pass.
#[derive(Debug, Default)]
struct Pass {
    units: Vec<Unit>,
    /// Units in use by the last pass.
    used: usize,
    steps: usize,
    batch: usize,
}

impl Pass {
    /// Cuts the batch into units and gathers their inputs.
    fn plan(&mut self, spec: &GruSpec, nets: usize, seq: &Sequences) -> Result<(), CriticError> {
        let (steps, batch) = (seq.steps(), seq.batch());
        let plan = RowPlan::new(seq.nets, nets)?;
        self.used = 0;
        (self.steps, self.batch) = (steps, batch);
        for k in 0..nets {
            let mine = &plan.order[plan.starts[k] as usize..plan.starts[k + 1] as usize];
            for chunk in mine.chunks(UNIT_SEQUENCES) {
                if self.units.len() == self.used {
                    self.units.push(Unit::default());
                }
                let u = &mut self.units[self.used];
                self.used += 1;
                u.net = k;
                u.seqs.clear();
                u.seqs.extend_from_slice(chunk);
            }
        }
        let (d, g, a) = (spec.input, spec.hidden, spec.head);
        self.units[..self.used].par_iter_mut().for_each(|u| {
            let n = u.seqs.len();
            u.x.resize(steps * n * d, 0.0);
            u.h0.resize(n * g, 0.0);
            u.reset.resize(steps * n, 0);
            u.q.resize(steps * n * a, 0.0);
            for (i, &s) in u.seqs.iter().enumerate() {
                let s = s as usize;
                u.h0[i * g..(i + 1) * g].copy_from_slice(&seq.h0[s * g..(s + 1) * g]);
                for t in 0..steps {
                    let (src, dst) = ((t * batch + s) * d, (t * n + i) * d);
                    let out = &mut u.x[dst..dst + d];
                    match seq.input {
                        Input::U8(x) => {
                            for (o, &v) in out.iter_mut().zip(&x[src..src + d]) {
                                *o = v as f32;
                            }
                        }
                        Input::F32(x) => out.copy_from_slice(&x[src..src + d]),
                    }
                    u.reset[t * n + i] = seq.reset[t * batch + s];
                }
            }
        });
        Ok(())
    }

    /// Forward of every unit with `params` (network-major); the outputs into `out`
    /// `[T, B, A]` in the caller's order, the hidden state after the last step into `h_last`
    /// `[B, g]` when given.
    fn forward(
        &mut self,
        spec: &GruSpec,
        params: &[f32],
        out: &mut Vec<f32>,
        h_last: Option<&mut [f32]>,
    ) -> Result<(), CriticError> {
        let per_net = spec.params_per_net();
        self.units[..self.used]
            .par_iter_mut()
            .map(|u| {
                let p = &params[u.net * per_net..(u.net + 1) * per_net];
                gru::forward(spec, p, &u.x, &u.h0, &u.reset, &mut u.q, &mut u.cache).map(|_| ())
            })
            .collect::<Result<(), CriticError>>()?;
        let (steps, batch, a, g) = (self.steps, self.batch, spec.head, spec.hidden);
        out.resize(steps * batch * a, 0.0);
        for u in &self.units[..self.used] {
            let n = u.seqs.len();
            for (i, &s) in u.seqs.iter().enumerate() {
                let s = s as usize;
                for t in 0..steps {
                    let (src, dst) = ((t * n + i) * a, (t * batch + s) * a);
                    out[dst..dst + a].copy_from_slice(&u.q[src..src + a]);
                }
            }
        }
        if let Some(h) = h_last {
            for u in &self.units[..self.used] {
                let last = u.cache.h_last();
                for (i, &s) in u.seqs.iter().enumerate() {
                    let s = s as usize;
                    h[s * g..(s + 1) * g].copy_from_slice(&last[i * g..(i + 1) * g]);
                }
            }
        }
        Ok(())
    }
}

/// The GRU networks of a `CpuCritic` and the passes' state.
#[derive(Debug)]
pub(crate) struct GruStack {
    pub(crate) spec: GruSpec,
    nets: usize,
    train: Pass,
    target: Pass,
    acting: Pass,
    /// `[T, B, A]` the last training forward's output, caller order.
    pub(crate) out: Vec<f32>,
    /// Whether `train` holds a forward that backward can use.
    ready: bool,
    /// Acting's reset flags (all 0) and copy of the entering hidden states.
    act_reset: Vec<u8>,
    act_h0: Vec<f32>,
}

impl GruStack {
    pub(crate) fn new(spec: GruSpec, nets: usize) -> GruStack {
        GruStack {
            spec,
            nets,
            train: Pass::default(),
            target: Pass::default(),
            acting: Pass::default(),
            out: Vec::new(),
            ready: false,
            act_reset: Vec::new(),
            act_h0: Vec::new(),
        }
    }

    /// Training forward with `params`: returns `[T, B, A]` (kept for backward).
    pub(crate) fn forward(
        &mut self,
        params: &[f32],
        seq: &Sequences,
    ) -> Result<&[f32], CriticError> {
        self.ready = false;
        self.train.plan(&self.spec, self.nets, seq)?;
        self.train
            .forward(&self.spec, params, &mut self.out, None)?;
        self.ready = true;
        Ok(&self.out)
    }

    /// A forward with `params` (the target parameters) that leaves training's state alone.
    pub(crate) fn forward_target(
        &mut self,
        params: &[f32],
        seq: &Sequences,
    ) -> Result<Vec<f32>, CriticError> {
        self.target.plan(&self.spec, self.nets, seq)?;
        let mut out = Vec::new();
        self.target.forward(&self.spec, params, &mut out, None)?;
        Ok(out)
    }

    /// One acting step: `hidden` `[B, g]` replaced by the next state; returns `[B, A]`.
    pub(crate) fn act(
        &mut self,
        params: &[f32],
        input: Input,
        nets: &[u32],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, CriticError> {
        // Reused between steps: no allocation per acting pass once sized.
        self.act_reset.clear();
        self.act_reset.resize(nets.len(), 0);
        self.act_h0.clear();
        self.act_h0.extend_from_slice(hidden);
        let seq = Sequences {
            input,
            nets,
            h0: &self.act_h0,
            reset: &self.act_reset,
        };
        check_len(
            "hidden ([B, state])",
            nets.len() * self.spec.hidden,
            hidden.len(),
        )?;
        check_len(
            "input ([B, input])",
            nets.len() * self.spec.input,
            input.len(),
        )?;
        self.acting.plan(&self.spec, self.nets, &seq)?;
        let mut out = Vec::new();
        self.acting
            .forward(&self.spec, params, &mut out, Some(hidden))?;
        Ok(out)
    }

    /// BPTT from `d_out` `[T, B, A]` (caller order) of the last training forward; every
    /// network's gradient written (overwritten) into `grads`.
    pub(crate) fn backward(
        &mut self,
        params: &[f32],
        d_out: &[f32],
        grads: &mut [f32],
    ) -> Result<(), CriticError> {
        if !self.ready {
            return Err(CriticError::Recurrent(
                "backward before a training forward_seq",
            ));
        }
        let (spec, pass) = (&self.spec, &mut self.train);
        let (steps, batch, a) = (pass.steps, pass.batch, spec.head);
        check_len("d_out ([T, B, head])", steps * batch * a, d_out.len())?;
        let per_net = spec.params_per_net();
        check_len("gradients", self.nets * per_net, grads.len())?;
        pass.units[..pass.used]
            .par_iter_mut()
            .map(|u| {
                let n = u.seqs.len();
                for (i, &s) in u.seqs.iter().enumerate() {
                    let s = s as usize;
                    for t in 0..steps {
                        let (src, dst) = ((t * batch + s) * a, (t * n + i) * a);
                        u.q[dst..dst + a].copy_from_slice(&d_out[src..src + a]);
                    }
                }
                u.grads.clear();
                u.grads.resize(per_net, 0.0);
                let p = &params[u.net * per_net..(u.net + 1) * per_net];
                gru::backward(spec, p, &mut u.cache, &u.q, &mut u.grads, None)
            })
            .collect::<Result<(), CriticError>>()?;
        // Each network's gradient: its units' summed in unit order.
        let units = &pass.units[..pass.used];
        grads
            .par_chunks_mut(per_net)
            .enumerate()
            .for_each(|(k, g)| {
                g.fill(0.0);
                for u in units.iter().filter(|u| u.net == k) {
                    for (acc, v) in g.iter_mut().zip(&u.grads) {
                        *acc += v;
                    }
                }
            });
        Ok(())
    }
}
