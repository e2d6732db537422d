//! The CPU backend, and the reference the GPU is tested against: rows grouped by network, every
//! network's block processed in parallel with rayon, matrix products through ndarray's GEMM
//! (matrixmultiply), or for sparse u8 batches a sparse first layer ([`sparse`]). Activations
//! are kept in network order between forward and backward; buffers grow to the largest batch
//! seen and are reused. [`profile`] times the passes on request.

pub(crate) mod gru;
mod gru_stack;
mod net;
mod optim;
pub mod profile;
mod sparse;

use rayon::prelude::*;

use self::net::{FirstSource, NetBackward, NetForward};
use self::profile::{Phase, span};
pub use self::sparse::SPARSE_DENSITY;
use self::sparse::{MAX_SPARSE_INPUT, SparseRows, transpose};
use super::loss::{Loss, loss_and_grad};
use super::{
    AdamConfig, CriticBackend, CriticError, Input, LayerOffsets, NetOptim, RowPlan, Sequences,
    StackSpec, StepStats, check_len, init_params,
};
use gru_stack::GruStack;

/// A stack of MLPs or GRU networks ([`StackSpec::network`]) on the CPU.
pub struct CpuCritic {
    spec: StackSpec,
    offsets: Vec<LayerOffsets>,
    params: Vec<f32>,
    grads: Vec<f32>,
    adam_m: Vec<f32>,
    adam_v: Vec<f32>,
    target: Vec<f32>,
    /// Each network's Adam step count (its own bias correction).
    steps: Vec<u64>,
    acts: Activations,
    /// Per work unit gradients, summed per network after backward.
    unit_grads: Vec<f32>,
    /// The loss of the last [`CpuCritic::loss_backward`].
    last_loss: f32,
    /// What the last [`CpuCritic::step`] saw.
    last_step: StepStats,
    /// Density at or below which u8 batches take the sparse first layer.
    sparse_threshold: f32,
    /// Per network, the `[fan_in, fan_out]` transpose of the first layer's online weights
    /// (valid when `w1t_fresh`), and of the target weights.
    w1t: Vec<f32>,
    w1t_target: Vec<f32>,
    w1t_fresh: bool,
    w1t_target_fresh: bool,
    /// The GRU passes, for a recurrent stack.
    gru: Option<GruStack>,
}

/// What forward keeps for backward, in network (sorted) row order.
#[derive(Default)]
struct Activations {
    rows: usize,
    plan: RowPlan,
    /// Work-unit boundaries in sorted rows (each unit inside one network).
    unit_bounds: Vec<u32>,
    /// Network of each work unit.
    unit_net: Vec<usize>,
    /// `[R, D]` input converted to f32 (dense batches).
    x0: Vec<f32>,
    /// Per network: whether the last forward took the sparse first layer for its rows (their
    /// input is then `csr`). Decided from each network's own rows, so a network's result does
    /// not depend on the other networks' rows in the batch (a replica stacked with others
    /// computes what it computes alone).
    sparse_nets: Vec<bool>,
    /// Non-zero bytes per input row of the last u8 forward (reused, not reallocated).
    row_nonzero: Vec<u32>,
    /// The non-zero u8 inputs (sparse batches).
    csr: SparseRows,
    /// Per hidden layer: `[R, H]` linear output normalised (x-hat).
    xhat: Vec<Vec<f32>>,
    /// Per hidden layer: `[R]` reciprocal standard deviation.
    rstd: Vec<Vec<f32>>,
    /// Per hidden layer: `[R, H]` post-ReLU output.
    act: Vec<Vec<f32>>,
    /// `[R, A]` head output, sorted order.
    out_sorted: Vec<f32>,
    /// `[R, A]` head output, caller order.
    out: Vec<f32>,
    /// `[R, A]` loss gradient, caller order.
    d_out: Vec<f32>,
    /// `[R, D]` input gradient, caller order (when asked).
    d_input: Vec<f32>,
}

/// Work units: contiguous sorted-row ranges inside one network each. A network is split into
/// several units when there are fewer networks than threads (a shared network still uses every
/// core); its weight gradients are then summed over its units.
fn work_units(starts: &[u32], threads: usize) -> (Vec<u32>, Vec<usize>) {
    let nets = starts.len() - 1;
    let per_net = if nets >= threads {
        1
    } else {
        threads.div_ceil(nets) * 2
    };
    let mut bounds = vec![0u32];
    let mut owner = Vec::new();
    for k in 0..nets {
        let (s, e) = (starts[k], starts[k + 1]);
        let chunks = per_net.min(((e - s) as usize / 64).max(1)) as u32;
        for c in 1..=chunks {
            bounds.push(s + (e - s) * c / chunks);
            owner.push(k);
        }
    }
    (bounds, owner)
}

/// Rows per work unit of backward, whatever the thread count, so that the order in which a
/// shared network's weight gradients are summed (and so the result) does not depend on it.
const GRAD_UNIT_ROWS: usize = 1024;

/// Backward's work units: each network cut into `ceil(rows / GRAD_UNIT_ROWS)` even parts.
fn grad_units(starts: &[u32]) -> (Vec<u32>, Vec<usize>) {
    let mut bounds = vec![0u32];
    let mut owner = Vec::new();
    for k in 0..starts.len() - 1 {
        let (s, e) = (starts[k], starts[k + 1]);
        let chunks = ((e - s) as usize).div_ceil(GRAD_UNIT_ROWS).max(1) as u32;
        for c in 1..=chunks {
            bounds.push(s + (e - s) * c / chunks);
            owner.push(k);
        }
    }
    (bounds, owner)
}

/// Refreshes `w1t`, every network's transposed first-layer weights.
fn refresh_transpose(spec: &StackSpec, first: &LayerOffsets, params: &[f32], w1t: &mut Vec<f32>) {
    let _t = span(Phase::Transpose);
    let (fi, fo, per_net) = (first.fan_in, first.fan_out, spec.params_per_net());
    w1t.resize(spec.nets * fi * fo, 0.0);
    w1t.par_chunks_mut(fi * fo)
        .zip(params.par_chunks(per_net))
        .for_each(|(t, net)| transpose(fo, fi, &net[first.weight..], t));
}

/// Cuts `buf` into one `[n_k * width]` slice per network segment.
fn segments<'a, T>(mut buf: &'a mut [T], starts: &[u32], width: usize) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(starts.len() - 1);
    for k in 0..starts.len() - 1 {
        let n = (starts[k + 1] - starts[k]) as usize * width;
        let (head, tail) = buf.split_at_mut(n);
        out.push(head);
        buf = tail;
    }
    out
}

fn segments_ref<'a, T>(buf: &'a [T], starts: &[u32], width: usize) -> Vec<&'a [T]> {
    (0..starts.len() - 1)
        .map(|k| &buf[starts[k] as usize * width..starts[k + 1] as usize * width])
        .collect()
}

impl CpuCritic {
    /// A stack with PyTorch-style initial parameters from `seed`.
    pub fn new(spec: StackSpec, seed: u64) -> Result<CpuCritic, CriticError> {
        spec.validate().map_err(CriticError::Spec)?;
        if profile::from_env() {
            profile::enable(true);
        }
        let params = init_params(&spec, seed);
        let n = params.len();
        Ok(CpuCritic {
            offsets: spec.layer_offsets(),
            spec,
            target: params.clone(),
            params,
            grads: vec![0.0; n],
            adam_m: vec![0.0; n],
            adam_v: vec![0.0; n],
            steps: vec![0; spec.nets],
            acts: Activations::default(),
            unit_grads: Vec::new(),
            last_loss: 0.0,
            last_step: StepStats {
                grad_norms: Vec::new(),
            },
            sparse_threshold: SPARSE_DENSITY,
            w1t: Vec::new(),
            w1t_target: Vec::new(),
            w1t_fresh: false,
            w1t_target_fresh: false,
            gru: spec.gru().map(|g| GruStack::new(g, spec.nets)),
        })
    }

    /// Sets the density (fraction of non-zero u8 inputs in a batch) at or below which forward
    /// and backward use the sparse first layer; 0 keeps every batch with a non-zero byte dense,
    /// a negative value every batch. Both paths give the same results up to float rounding.
    pub fn set_sparse_threshold(&mut self, density: f32) {
        self.sparse_threshold = density;
    }

    /// The density threshold of the sparse first layer (see [`CpuCritic::set_sparse_threshold`]).
    pub fn sparse_threshold(&self) -> f32 {
        self.sparse_threshold
    }

    /// The shape.
    pub fn spec(&self) -> &StackSpec {
        &self.spec
    }

    /// All parameters, network-major.
    pub fn params(&self) -> &[f32] {
        &self.params
    }

    /// Replaces all parameters.
    pub fn set_params(&mut self, params: &[f32]) -> Result<(), CriticError> {
        check_len("parameters", self.params.len(), params.len())?;
        self.params.copy_from_slice(params);
        self.w1t_fresh = false;
        Ok(())
    }

    /// Gradients of the last backward, network-major.
    pub fn grads(&self) -> &[f32] {
        &self.grads
    }

    /// Replaces the gradients (external accumulation, and tests that feed both backends the
    /// same gradients).
    pub fn set_grads(&mut self, grads: &[f32]) -> Result<(), CriticError> {
        check_len("gradients", self.grads.len(), grads.len())?;
        self.grads.copy_from_slice(grads);
        Ok(())
    }

    /// The target copy of the parameters.
    pub fn target(&self) -> &[f32] {
        &self.target
    }

    /// Adam's moments (m, v) and its step count (the largest network's: all are equal unless
    /// [`CpuCritic::step_masked`] moved some networks only; see [`CpuCritic::net_steps`]).
    pub fn adam_state(&self) -> (&[f32], &[f32], u64) {
        (
            &self.adam_m,
            &self.adam_v,
            self.steps.iter().copied().max().unwrap_or(0),
        )
    }

    /// Each network's Adam step count.
    pub fn net_steps(&self) -> &[u64] {
        &self.steps
    }

    /// Restores Adam's moments and step count, the same for every network (checkpoints).
    pub fn set_adam_state(&mut self, m: &[f32], v: &[f32], steps: u64) -> Result<(), CriticError> {
        if m.len() != self.params.len() || v.len() != self.params.len() {
            return Err(CriticError::Shape {
                what: "adam state",
                expected: self.params.len(),
                got: m.len().min(v.len()),
            });
        }
        self.adam_m.copy_from_slice(m);
        self.adam_v.copy_from_slice(v);
        self.steps.fill(steps);
        Ok(())
    }

    /// Forward pass with the online parameters; keeps activations for [`CpuCritic::backward`].
    /// Returns `[R, head]` in the caller's row order.
    pub fn forward(&mut self, input: Input, nets: &[u32]) -> Result<&[f32], CriticError> {
        if self.gru.is_some() {
            return Err(CriticError::Recurrent("a row-wise forward"));
        }
        let _wall = span(Phase::WallForward);
        check_len("input", nets.len() * self.spec.input, input.len())?;
        let plan = RowPlan::new(nets, self.spec.nets)?;
        let (rows, spec) = (nets.len(), self.spec);
        let a = &mut self.acts;
        a.rows = rows;
        a.plan = plan;
        let (d, h, head) = (spec.input, spec.hidden, spec.head);
        let gather = span(Phase::Gather);
        // The sparse first layer for each network whose u8 rows are at most
        // `sparse_threshold` dense.
        a.sparse_nets.clear();
        a.sparse_nets.resize(spec.nets, false);
        let sparse_input = match input {
            Input::U8(x) if !x.is_empty() && d <= MAX_SPARSE_INPUT => {
                a.row_nonzero.resize(rows, 0);
                a.row_nonzero
                    .par_iter_mut()
                    .zip(x.par_chunks(d))
                    .with_min_len(256)
                    .for_each(|(n, r)| *n = r.iter().filter(|&&v| v != 0).count() as u32);
                let per_row = &a.row_nonzero;
                let mut nonzero = 0usize;
                for (k, w) in a.plan.starts.windows(2).enumerate() {
                    let seg = &a.plan.order[w[0] as usize..w[1] as usize];
                    let nz: usize = seg.iter().map(|&r| per_row[r as usize] as usize).sum();
                    nonzero += nz;
                    a.sparse_nets[k] = !seg.is_empty()
                        && nz as f64 <= self.sparse_threshold as f64 * (seg.len() * d) as f64;
                }
                let any = a.sparse_nets.iter().any(|&s| s);
                profile::count_input(nonzero, x.len(), any);
                any.then_some(x)
            }
            _ => None,
        };
        let all_sparse = sparse_input.is_some() && a.sparse_nets.iter().all(|&s| s);
        if let Some(x) = sparse_input {
            a.csr.fill(x, &a.plan.order, d);
        }
        if !all_sparse {
            a.x0.resize(rows * d, 0.0);
        }
        a.xhat.resize_with(spec.layers, Vec::new);
        a.rstd.resize_with(spec.layers, Vec::new);
        a.act.resize_with(spec.layers, Vec::new);
        for l in 0..spec.layers {
            a.xhat[l].resize(rows * h, 0.0);
            a.rstd[l].resize(rows, 0.0);
            a.act[l].resize(rows * h, 0.0);
        }
        a.out_sorted.resize(rows * head, 0.0);
        a.out.resize(rows * head, 0.0);

        // Dense: gather each network's rows, converting u8 channels to f32 on the way.
        if !all_sparse {
            a.x0[..rows * d]
                .par_chunks_mut(d)
                .zip(a.plan.order.par_iter())
                .with_min_len(64)
                .for_each(|(dst, &row)| {
                    let row = row as usize;
                    match input {
                        Input::U8(x) => {
                            for (o, &v) in dst.iter_mut().zip(&x[row * d..(row + 1) * d]) {
                                *o = v as f32;
                            }
                        }
                        Input::F32(x) => dst.copy_from_slice(&x[row * d..(row + 1) * d]),
                    }
                });
        }

        drop(gather);
        if sparse_input.is_some() && !self.w1t_fresh {
            refresh_transpose(&spec, &self.offsets[0], &self.params, &mut self.w1t);
            self.w1t_fresh = true;
        }
        let (bounds, owner) = work_units(&a.plan.starts, rayon::current_num_threads());
        a.unit_bounds = bounds;
        a.unit_net = owner;
        let starts = a.unit_bounds.clone();
        let per_net = spec.params_per_net();
        let offsets = &self.offsets;
        let first = FirstSource {
            dense: &a.x0,
            sparse: (&a.csr, &a.sparse_nets),
            w1t: &self.w1t,
            d,
            block: self.offsets[0].fan_in * self.offsets[0].fan_out,
        };
        let mut xhat: Vec<Vec<&mut [f32]>> =
            a.xhat.iter_mut().map(|b| segments(b, &starts, h)).collect();
        let mut rstd: Vec<Vec<&mut [f32]>> =
            a.rstd.iter_mut().map(|b| segments(b, &starts, 1)).collect();
        let mut act: Vec<Vec<&mut [f32]>> =
            a.act.iter_mut().map(|b| segments(b, &starts, h)).collect();
        let mut out_sorted = std::mem::take(&mut a.out_sorted);
        let outs = segments(&mut out_sorted, &starts, head);
        // Per network: transpose the per-layer lists so each task owns its slices.
        let mut tasks: Vec<NetForward> = Vec::with_capacity(outs.len());
        for (u, out) in outs.into_iter().enumerate() {
            let k = a.unit_net[u];
            tasks.push(NetForward {
                n: (starts[u + 1] - starts[u]) as usize,
                net: &self.params[k * per_net..(k + 1) * per_net],
                x0: first.rows(starts[u] as usize, starts[u + 1] as usize, k),
                xhat: xhat.iter_mut().map(|v| std::mem::take(&mut v[u])).collect(),
                rstd: rstd.iter_mut().map(|v| std::mem::take(&mut v[u])).collect(),
                act: act.iter_mut().map(|v| std::mem::take(&mut v[u])).collect(),
                out,
            });
        }
        tasks.into_par_iter().for_each(|t| t.run(offsets, spec));
        a.out_sorted = out_sorted;

        a.plan.scatter(&a.out_sorted, head, &mut a.out);
        Ok(&a.out)
    }

    /// Forward with the target parameters (keeps nothing; the online activations survive).
    pub fn forward_target(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        if self.gru.is_some() {
            return Err(CriticError::Recurrent("a row-wise target forward"));
        }
        self.swap_target();
        let saved = std::mem::take(&mut self.acts);
        let result = self.forward(input, nets).map(|o| o.to_vec());
        self.acts = saved;
        self.swap_target();
        result
    }

    /// Swaps the online and target parameters (with their transposed first layers).
    fn swap_target(&mut self) {
        std::mem::swap(&mut self.params, &mut self.target);
        std::mem::swap(&mut self.w1t, &mut self.w1t_target);
        std::mem::swap(&mut self.w1t_fresh, &mut self.w1t_target_fresh);
    }

    /// Backward from dL/d output (`[R, head]`, caller order) of the last forward; gradients are
    /// overwritten. With `input_grad`, also computes dL/d input (see [`CpuCritic::input_grad`]).
    pub fn backward(&mut self, d_out: &[f32], input_grad: bool) -> Result<(), CriticError> {
        if let Some(g) = &mut self.gru {
            if input_grad {
                return Err(CriticError::Recurrent("the input gradient"));
            }
            let _wall = span(Phase::WallBackward);
            return g.backward(&self.params, d_out, &mut self.grads);
        }
        let _wall = span(Phase::WallBackward);
        let (spec, a) = (self.spec, &mut self.acts);
        let (rows, d, h, head) = (a.rows, spec.input, spec.hidden, spec.head);
        if a.unit_bounds.is_empty() {
            return Err(CriticError::Shape {
                what: "forward passes before backward",
                expected: 1,
                got: 0,
            });
        }
        check_len("d_output", rows * head, d_out.len())?;
        // Sorted copy of the incoming gradient.
        let mut g_out = vec![0.0f32; rows * head];
        a.plan.gather(d_out, head, &mut g_out);
        // The scratch carries gradients of hidden activations; only the first layer's input
        // gradient (or a network without hidden layers) needs the input's width.
        let width = if input_grad || spec.layers == 0 {
            h.max(d)
        } else {
            h
        };
        let mut scratch_a = vec![0.0f32; rows * width];
        let mut scratch_b = vec![0.0f32; rows * width];
        let mut d_x0 = if input_grad {
            vec![0.0f32; rows * d]
        } else {
            Vec::new()
        };

        let (starts, unit_net) = grad_units(&a.plan.starts);
        let units = unit_net.len();
        let per_net = spec.params_per_net();
        let offsets = &self.offsets;
        // One unit per network: gradients go straight to their place; otherwise per unit, then
        // summed.
        let direct = units == spec.nets;
        self.unit_grads
            .resize(if direct { 0 } else { units * per_net }, 0.0);
        let first = FirstSource {
            dense: &a.x0,
            sparse: (&a.csr, &a.sparse_nets),
            w1t: &self.w1t,
            d,
            block: self.offsets[0].fan_in * self.offsets[0].fan_out,
        };
        let xhat: Vec<Vec<&[f32]>> = a.xhat.iter().map(|b| segments_ref(b, &starts, h)).collect();
        let rstd: Vec<Vec<&[f32]>> = a.rstd.iter().map(|b| segments_ref(b, &starts, 1)).collect();
        let act: Vec<Vec<&[f32]>> = a.act.iter().map(|b| segments_ref(b, &starts, h)).collect();
        let g = segments_ref(&g_out, &starts, head);
        let mut sa = segments(&mut scratch_a, &starts, width);
        let mut sb = segments(&mut scratch_b, &starts, width);
        let mut dx = if input_grad {
            segments(&mut d_x0, &starts, d)
        } else {
            Vec::new()
        };
        let grad_buf = if direct {
            &mut self.grads
        } else {
            &mut self.unit_grads
        };
        let mut grads: Vec<&mut [f32]> = grad_buf.chunks_exact_mut(per_net).collect();
        let mut tasks = Vec::with_capacity(units);
        for u in 0..units {
            let k = unit_net[u];
            tasks.push(NetBackward {
                n: (starts[u + 1] - starts[u]) as usize,
                net: &self.params[k * per_net..(k + 1) * per_net],
                grad: std::mem::take(&mut grads[u]),
                x0: first.rows(starts[u] as usize, starts[u + 1] as usize, k),
                xhat: xhat.iter().map(|v| v[u]).collect(),
                rstd: rstd.iter().map(|v| v[u]).collect(),
                act: act.iter().map(|v| v[u]).collect(),
                g_out: g[u],
                scratch_a: std::mem::take(&mut sa[u]),
                scratch_b: std::mem::take(&mut sb[u]),
                d_x0: dx.get_mut(u).map(std::mem::take),
            });
        }
        tasks.into_par_iter().for_each(|t| t.run(offsets, spec));
        // Each network's gradient is the sum over its units.
        let _sum = span(Phase::SumUnits);
        let (unit_grads, unit_net) = (&self.unit_grads, &unit_net);
        let sum_units = |(k, grad): (usize, &mut [f32])| {
            let mut first = true;
            for (u, _) in unit_net.iter().enumerate().filter(|(_, net)| **net == k) {
                let part = &unit_grads[u * per_net..(u + 1) * per_net];
                if first {
                    grad.copy_from_slice(part);
                    first = false;
                } else {
                    grad.iter_mut().zip(part).for_each(|(g, p)| *g += p);
                }
            }
            if first {
                grad.fill(0.0);
            }
        };
        if !direct {
            self.grads
                .par_chunks_mut(per_net)
                .enumerate()
                .for_each(sum_units);
        }

        if input_grad {
            a.d_input.resize(rows * d, 0.0);
            a.plan.scatter(&d_x0, d, &mut a.d_input);
        }
        Ok(())
    }

    /// Forward over sequences (see [`CriticBackend::forward_seq`]); keeps what backward needs.
    /// Returns `[T, B, head]`.
    pub fn forward_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        seq.shape(&self.spec)?;
        match &mut self.gru {
            Some(g) => {
                let _wall = span(Phase::WallForward);
                g.forward(&self.params, &seq).map(<[f32]>::to_vec)
            }
            None => {
                let rows = seq.mlp_rows(&self.spec)?;
                CpuCritic::forward(self, seq.input, &rows).map(<[f32]>::to_vec)
            }
        }
    }

    /// [`CpuCritic::forward_seq`] with the target parameters; keeps nothing.
    pub fn forward_target_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        seq.shape(&self.spec)?;
        match &mut self.gru {
            Some(g) => g.forward_target(&self.target, &seq),
            None => {
                let rows = seq.mlp_rows(&self.spec)?;
                CpuCritic::forward_target(self, seq.input, &rows)
            }
        }
    }

    /// One acting step (see [`CriticBackend::act`]).
    pub fn act(
        &mut self,
        input: Input,
        nets: &[u32],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, CriticError> {
        match &mut self.gru {
            Some(g) => g.act(&self.params, input, nets, hidden),
            None => {
                check_len("hidden state of an MLP", 0, hidden.len())?;
                CpuCritic::forward(self, input, nets).map(<[f32]>::to_vec)
            }
        }
    }

    /// dL/d input of the last backward with `input_grad` (`[R, D]`, caller order).
    pub fn input_grad(&self) -> &[f32] {
        &self.acts.d_input
    }

    /// Loss of the last forward's output and its gradient; runs backward too. Returns the loss.
    pub fn loss_backward(&mut self, loss: &Loss) -> Result<f32, CriticError> {
        if let Some(g) = &mut self.gru {
            let head = self.spec.head;
            let out = std::mem::take(&mut g.out);
            let rows = out.len() / head;
            let checked = loss.check(rows, head);
            let mut d_out = std::mem::take(&mut self.acts.d_out);
            d_out.resize(rows * head, 0.0);
            let value = checked.map(|()| loss_and_grad(loss, &out, head, &mut d_out));
            g.out = out;
            let result = value.and_then(|v| {
                self.backward(&d_out, false)?;
                Ok(v)
            });
            self.acts.d_out = d_out;
            let value = result?;
            self.last_loss = value;
            return Ok(value);
        }
        let (rows, head) = (self.acts.rows, self.spec.head);
        loss.check(rows, head)?;
        let mut d_out = std::mem::take(&mut self.acts.d_out);
        d_out.resize(rows * head, 0.0);
        let value = {
            let _t = span(Phase::Loss);
            loss_and_grad(loss, &self.acts.out, head, &mut d_out)
        };
        let result = self.backward(&d_out, false);
        self.acts.d_out = d_out;
        result?;
        self.last_loss = value;
        Ok(value)
    }
}

/// With `GRIDARENA_CPU_PROFILE` set, a critic prints the time breakdown so far when dropped.
impl Drop for CpuCritic {
    fn drop(&mut self) {
        if profile::enabled() && profile::from_env() {
            let mut p = profile::take();
            p.updates = self.steps.iter().copied().max().unwrap_or(0).max(1);
            eprintln!("{p}");
        }
    }
}

/// The CPU's operations as a [`CriticBackend`]: results are copied out of the backend's buffers
/// (the one copy per read the learners have always made).
impl CriticBackend for CpuCritic {
    fn spec(&self) -> &StackSpec {
        &self.spec
    }

    fn forward(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        CpuCritic::forward(self, input, nets).map(<[f32]>::to_vec)
    }

    fn forward_target(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        CpuCritic::forward_target(self, input, nets)
    }

    fn forward_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        CpuCritic::forward_seq(self, seq)
    }

    fn forward_target_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        CpuCritic::forward_target_seq(self, seq)
    }

    fn act(
        &mut self,
        input: Input,
        nets: &[u32],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, CriticError> {
        CpuCritic::act(self, input, nets, hidden)
    }

    fn polyak(&mut self, tau: f32) {
        CpuCritic::polyak(self, tau);
    }

    fn polyak_nets(&mut self, taus: &[f32]) -> Result<(), CriticError> {
        CpuCritic::polyak_nets(self, taus)
    }

    fn target_params(&mut self) -> Result<Vec<f32>, CriticError> {
        Ok(self.target.clone())
    }

    fn loss_backward(&mut self, loss: &Loss) -> Result<(), CriticError> {
        CpuCritic::loss_backward(self, loss).map(|_| ())
    }

    fn backward(&mut self, d_out: &[f32]) -> Result<(), CriticError> {
        CpuCritic::backward(self, d_out, false)
    }

    fn last_loss(&mut self) -> Result<f32, CriticError> {
        Ok(self.last_loss)
    }

    fn step(&mut self, cfg: &AdamConfig) {
        CpuCritic::step(self, cfg);
    }

    fn step_nets(&mut self, cfg: &AdamConfig, nets: &[NetOptim]) -> Result<(), CriticError> {
        CpuCritic::step_nets(self, cfg, nets).map(|_| ())
    }

    fn step_stats(&mut self) -> Result<StepStats, CriticError> {
        Ok(self.last_step.clone())
    }

    fn params(&mut self) -> Result<Vec<f32>, CriticError> {
        Ok(self.params.clone())
    }

    fn set_params(&mut self, params: &[f32]) -> Result<(), CriticError> {
        CpuCritic::set_params(self, params)
    }
    fn grads(&mut self) -> Result<Vec<f32>, CriticError> {
        Ok(CpuCritic::grads(self).to_vec())
    }
    fn set_grads(&mut self, grads: &[f32]) -> Result<(), CriticError> {
        CpuCritic::set_grads(self, grads)
    }

    fn adam_state(&mut self) -> Result<(Vec<f32>, Vec<f32>, u64), CriticError> {
        let (m, v, steps) = CpuCritic::adam_state(self);
        Ok((m.to_vec(), v.to_vec(), steps))
    }

    fn set_adam_state(&mut self, m: &[f32], v: &[f32], steps: u64) -> Result<(), CriticError> {
        CpuCritic::set_adam_state(self, m, v, steps)
    }

    fn step_masked(
        &mut self,
        cfg: &AdamConfig,
        nets: &[NetOptim],
        active: &[bool],
    ) -> Result<(), CriticError> {
        CpuCritic::step_masked(self, cfg, nets, active).map(|_| ())
    }

    fn net_steps(&self) -> Vec<u64> {
        self.steps.clone()
    }

    fn set_net_steps(&mut self, steps: &[u64]) -> Result<(), CriticError> {
        check_len("per-network Adam step counts", self.spec.nets, steps.len())?;
        self.steps.copy_from_slice(steps);
        Ok(())
    }
}
