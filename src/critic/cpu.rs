//! The CPU backend, and the reference the GPU is tested against: rows grouped by network, every
//! network's block processed in parallel with rayon, matrix products through ndarray's GEMM
//! (matrixmultiply). Activations are kept in network order between forward and backward;
//! buffers grow to the largest batch seen and are reused.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};
use rayon::prelude::*;

use super::loss::{Loss, loss_and_grad};
use super::{
    AdamConfig, CriticError, Input, LN_EPS, LayerOffsets, RowPlan, StackSpec, StepStats,
    init_params,
};

/// A stack of MLPs on the CPU.
pub struct CpuCritic {
    spec: StackSpec,
    offsets: Vec<LayerOffsets>,
    params: Vec<f32>,
    grads: Vec<f32>,
    adam_m: Vec<f32>,
    adam_v: Vec<f32>,
    target: Vec<f32>,
    steps: u64,
    acts: Activations,
    /// Per work unit gradients, summed per network after backward.
    unit_grads: Vec<f32>,
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
    /// `[R, D]` input converted to f32.
    x0: Vec<f32>,
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

fn view(rows: usize, cols: usize, data: &[f32]) -> ArrayView2<'_, f32> {
    ArrayView2::from_shape((rows, cols), &data[..rows * cols]).expect("slice holds rows x cols")
}

fn view_mut(rows: usize, cols: usize, data: &mut [f32]) -> ArrayViewMut2<'_, f32> {
    ArrayViewMut2::from_shape((rows, cols), &mut data[..rows * cols])
        .expect("slice holds rows x cols")
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

/// Linear: `y = x W^T + b` for an `[n, in]` block.
fn linear(n: usize, o: &LayerOffsets, net: &[f32], x: &[f32], y: &mut [f32]) {
    let bias = &net[o.bias..o.bias + o.fan_out];
    for row in y[..n * o.fan_out].chunks_exact_mut(o.fan_out) {
        row.copy_from_slice(bias);
    }
    let w = view(o.fan_out, o.fan_in, &net[o.weight..]);
    general_mat_mul(
        1.0,
        &view(n, o.fan_in, x),
        &w.t(),
        1.0,
        &mut view_mut(n, o.fan_out, y),
    );
}

/// Width of the partial sums below: independent accumulators let the compiler vectorise
/// reductions that a single running sum would serialise.
const LANES: usize = 8;

/// `sum f(x)` over a slice, in `LANES` partial sums.
#[inline]
fn lanes_sum(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest: f32 = chunks.remainder().iter().map(|v| f(*v)).sum();
    for c in chunks {
        for i in 0..LANES {
            acc[i] += f(c[i]);
        }
    }
    acc.iter().sum::<f32>() + rest
}

/// `sum a * b` over two slices, in `LANES` partial sums.
#[inline]
fn lanes_dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let rest: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + rest
}

/// LayerNorm then ReLU, in place on `z` (becomes the activation), keeping x-hat and 1/std.
fn layernorm_relu(
    n: usize,
    o: &LayerOffsets,
    net: &[f32],
    z: &[f32],
    xhat: &mut [f32],
    rstd: &mut [f32],
    act: &mut [f32],
) {
    let h = o.fan_out;
    let gamma = &net[o.gamma..o.gamma + h];
    let beta = &net[o.beta..o.beta + h];
    for r in 0..n {
        let zr = &z[r * h..(r + 1) * h];
        let mean = lanes_sum(zr, |x| x) / h as f32;
        let var = lanes_sum(zr, |x| (x - mean) * (x - mean)) / h as f32;
        let inv = 1.0 / (var + LN_EPS).sqrt();
        rstd[r] = inv;
        let (xr, ar) = (&mut xhat[r * h..(r + 1) * h], &mut act[r * h..(r + 1) * h]);
        for ((xo, ao), ((&zj, &gj), &bj)) in xr
            .iter_mut()
            .zip(ar.iter_mut())
            .zip(zr.iter().zip(gamma).zip(beta))
        {
            let xh = (zj - mean) * inv;
            *xo = xh;
            *ao = (gj * xh + bj).max(0.0);
        }
    }
}

impl CpuCritic {
    /// A stack with PyTorch-style initial parameters from `seed`.
    pub fn new(spec: StackSpec, seed: u64) -> Result<CpuCritic, CriticError> {
        spec.validate().map_err(CriticError::Spec)?;
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
            steps: 0,
            acts: Activations::default(),
            unit_grads: Vec::new(),
        })
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
        if params.len() != self.params.len() {
            return Err(CriticError::Shape {
                what: "parameters",
                expected: self.params.len(),
                got: params.len(),
            });
        }
        self.params.copy_from_slice(params);
        Ok(())
    }

    /// Gradients of the last backward, network-major.
    pub fn grads(&self) -> &[f32] {
        &self.grads
    }

    /// Replaces the gradients (external accumulation, and tests that feed both backends the
    /// same gradients).
    pub fn set_grads(&mut self, grads: &[f32]) -> Result<(), CriticError> {
        if grads.len() != self.grads.len() {
            return Err(CriticError::Shape {
                what: "gradients",
                expected: self.grads.len(),
                got: grads.len(),
            });
        }
        self.grads.copy_from_slice(grads);
        Ok(())
    }

    /// The target copy of the parameters.
    pub fn target(&self) -> &[f32] {
        &self.target
    }

    /// Adam's moments (m, v) and its step count.
    pub fn adam_state(&self) -> (&[f32], &[f32], u64) {
        (&self.adam_m, &self.adam_v, self.steps)
    }

    /// Restores Adam's moments and step count (checkpoints).
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
        self.steps = steps;
        Ok(())
    }

    fn check_batch(&self, input: &Input, nets: &[u32]) -> Result<(), CriticError> {
        let expected = nets.len() * self.spec.input;
        if input.len() != expected {
            return Err(CriticError::Shape {
                what: "input",
                expected,
                got: input.len(),
            });
        }
        Ok(())
    }

    /// Forward pass with the online parameters; keeps activations for [`CpuCritic::backward`].
    /// Returns `[R, head]` in the caller's row order.
    pub fn forward(&mut self, input: Input, nets: &[u32]) -> Result<&[f32], CriticError> {
        self.check_batch(&input, nets)?;
        let plan = RowPlan::new(nets, self.spec.nets)?;
        let (rows, spec) = (nets.len(), self.spec);
        let a = &mut self.acts;
        a.rows = rows;
        a.plan = plan;
        let (d, h, head) = (spec.input, spec.hidden, spec.head);
        a.x0.resize(rows * d, 0.0);
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

        // Gather each network's rows, converting u8 channels to f32 on the way.
        for (pos, &row) in a.plan.order.iter().enumerate() {
            let dst = &mut a.x0[pos * d..(pos + 1) * d];
            let row = row as usize;
            match input {
                Input::U8(x) => {
                    for (o, &v) in dst.iter_mut().zip(&x[row * d..(row + 1) * d]) {
                        *o = v as f32;
                    }
                }
                Input::F32(x) => dst.copy_from_slice(&x[row * d..(row + 1) * d]),
            }
        }

        let (bounds, owner) = work_units(&a.plan.starts, rayon::current_num_threads());
        a.unit_bounds = bounds;
        a.unit_net = owner;
        let starts = a.unit_bounds.clone();
        let per_net = spec.params_per_net();
        let offsets = &self.offsets;
        let x0 = segments_ref(&a.x0, &starts, d);
        let mut xhat: Vec<Vec<&mut [f32]>> =
            a.xhat.iter_mut().map(|b| segments(b, &starts, h)).collect();
        let mut rstd: Vec<Vec<&mut [f32]>> =
            a.rstd.iter_mut().map(|b| segments(b, &starts, 1)).collect();
        let mut act: Vec<Vec<&mut [f32]>> =
            a.act.iter_mut().map(|b| segments(b, &starts, h)).collect();
        let outs = segments(&mut a.out_sorted, &starts, head);
        // Per network: transpose the per-layer lists so each task owns its slices.
        let mut tasks: Vec<NetForward> = Vec::with_capacity(outs.len());
        for (u, out) in outs.into_iter().enumerate() {
            let k = a.unit_net[u];
            tasks.push(NetForward {
                n: (starts[u + 1] - starts[u]) as usize,
                net: &self.params[k * per_net..(k + 1) * per_net],
                x0: x0[u],
                xhat: xhat.iter_mut().map(|v| std::mem::take(&mut v[u])).collect(),
                rstd: rstd.iter_mut().map(|v| std::mem::take(&mut v[u])).collect(),
                act: act.iter_mut().map(|v| std::mem::take(&mut v[u])).collect(),
                out,
            });
        }
        tasks.into_par_iter().for_each(|t| t.run(offsets, spec));

        for (pos, &row) in a.plan.order.iter().enumerate() {
            let row = row as usize;
            a.out[row * head..(row + 1) * head]
                .copy_from_slice(&a.out_sorted[pos * head..(pos + 1) * head]);
        }
        Ok(&a.out)
    }

    /// Forward with the target parameters (keeps nothing; the online activations survive).
    pub fn forward_target(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        std::mem::swap(&mut self.params, &mut self.target);
        let saved = std::mem::take(&mut self.acts);
        let result = self.forward(input, nets).map(|o| o.to_vec());
        self.acts = saved;
        std::mem::swap(&mut self.params, &mut self.target);
        result
    }

    /// Backward from dL/d output (`[R, head]`, caller order) of the last forward; gradients are
    /// overwritten. With `input_grad`, also computes dL/d input (see [`CpuCritic::input_grad`]).
    pub fn backward(&mut self, d_out: &[f32], input_grad: bool) -> Result<(), CriticError> {
        let (spec, a) = (self.spec, &mut self.acts);
        let (rows, d, h, head) = (a.rows, spec.input, spec.hidden, spec.head);
        if a.unit_bounds.is_empty() {
            return Err(CriticError::Shape {
                what: "forward passes before backward",
                expected: 1,
                got: 0,
            });
        }
        if d_out.len() != rows * head {
            return Err(CriticError::Shape {
                what: "d_output",
                expected: rows * head,
                got: d_out.len(),
            });
        }
        // Sorted copy of the incoming gradient.
        let mut g_out = vec![0.0f32; rows * head];
        for (pos, &row) in a.plan.order.iter().enumerate() {
            let row = row as usize;
            g_out[pos * head..(pos + 1) * head]
                .copy_from_slice(&d_out[row * head..(row + 1) * head]);
        }
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

        let starts = a.unit_bounds.clone();
        let units = a.unit_net.len();
        let per_net = spec.params_per_net();
        let offsets = &self.offsets;
        // One unit per network: gradients go straight to their place; otherwise per unit, then
        // summed.
        let direct = units == spec.nets;
        self.unit_grads
            .resize(if direct { 0 } else { units * per_net }, 0.0);
        let x0 = segments_ref(&a.x0, &starts, d);
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
            let k = a.unit_net[u];
            tasks.push(NetBackward {
                n: (starts[u + 1] - starts[u]) as usize,
                net: &self.params[k * per_net..(k + 1) * per_net],
                grad: std::mem::take(&mut grads[u]),
                x0: x0[u],
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
        let (unit_grads, unit_net) = (&self.unit_grads, &a.unit_net);
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
            for (pos, &row) in a.plan.order.iter().enumerate() {
                let row = row as usize;
                a.d_input[row * d..(row + 1) * d].copy_from_slice(&d_x0[pos * d..(pos + 1) * d]);
            }
        }
        Ok(())
    }

    /// dL/d input of the last backward with `input_grad` (`[R, D]`, caller order).
    pub fn input_grad(&self) -> &[f32] {
        &self.acts.d_input
    }

    /// Loss of the last forward's output and its gradient; runs backward too. Returns the loss.
    pub fn loss_backward(&mut self, loss: &Loss) -> Result<f32, CriticError> {
        let (rows, head) = (self.acts.rows, self.spec.head);
        loss.check(rows, head)?;
        let mut d_out = std::mem::take(&mut self.acts.d_out);
        d_out.resize(rows * head, 0.0);
        let value = loss_and_grad(loss, &self.acts.out, head, &mut d_out);
        let result = self.backward(&d_out, false);
        self.acts.d_out = d_out;
        result.map(|()| value)
    }

    /// One optimiser step on the current gradients: each network's gradient is clipped to
    /// `max_grad_norm` (its own global norm), then Adam or RAdam with bias correction.
    pub fn step(&mut self, cfg: &AdamConfig) -> StepStats {
        self.steps += 1;
        let (step_size, bc2, adaptive) = cfg.schedule(self.steps);
        let per_net = self.spec.params_per_net();
        let grad_norms: Vec<f32> = (
            self.params.par_chunks_mut(per_net),
            self.grads.par_chunks(per_net),
            self.adam_m.par_chunks_mut(per_net),
            self.adam_v.par_chunks_mut(per_net),
        )
            .into_par_iter()
            .map(|(p, g, m, v)| {
                let norm = g
                    .iter()
                    .map(|x| (*x as f64) * (*x as f64))
                    .sum::<f64>()
                    .sqrt() as f32;
                let scale = match cfg.max_grad_norm {
                    Some(max) if norm > max => max / (norm + 1e-6),
                    _ => 1.0,
                };
                for i in 0..p.len() {
                    let gi = g[i] * scale;
                    m[i] = cfg.beta1 * m[i] + (1.0 - cfg.beta1) * gi;
                    v[i] = cfg.beta2 * v[i] + (1.0 - cfg.beta2) * gi * gi;
                    p[i] -= if adaptive {
                        step_size * m[i] / ((v[i] / bc2).sqrt() + cfg.eps)
                    } else {
                        step_size * m[i]
                    };
                }
                norm
            })
            .collect();
        StepStats { grad_norms }
    }

    /// Copies the online parameters into the target copy.
    pub fn copy_to_target(&mut self) {
        self.target.copy_from_slice(&self.params);
    }

    /// Polyak averaging: `target = tau * online + (1 - tau) * target`.
    pub fn polyak(&mut self, tau: f32) {
        self.target
            .par_iter_mut()
            .zip(self.params.par_iter())
            .for_each(|(t, p)| *t = tau * p + (1.0 - tau) * *t);
    }
}

/// One network's forward work and the slices it owns.
struct NetForward<'a> {
    n: usize,
    net: &'a [f32],
    x0: &'a [f32],
    xhat: Vec<&'a mut [f32]>,
    rstd: Vec<&'a mut [f32]>,
    act: Vec<&'a mut [f32]>,
    out: &'a mut [f32],
}

impl NetForward<'_> {
    fn run(mut self, offsets: &[LayerOffsets], spec: StackSpec) {
        if self.n == 0 {
            return;
        }
        let mut z = vec![0.0f32; self.n * spec.hidden];
        for l in 0..spec.layers {
            let o = &offsets[l];
            let (before, after) = self.act.split_at_mut(l);
            let x: &[f32] = if l == 0 { self.x0 } else { &*before[l - 1] };
            linear(self.n, o, self.net, x, &mut z);
            layernorm_relu(
                self.n,
                o,
                self.net,
                &z,
                &mut *self.xhat[l],
                &mut *self.rstd[l],
                &mut *after[0],
            );
        }
        let x: &[f32] = if spec.layers == 0 {
            self.x0
        } else {
            &*self.act[spec.layers - 1]
        };
        linear(self.n, &offsets[spec.layers], self.net, x, self.out);
    }
}

/// One network's backward work and the slices it owns.
struct NetBackward<'a> {
    n: usize,
    net: &'a [f32],
    grad: &'a mut [f32],
    x0: &'a [f32],
    xhat: Vec<&'a [f32]>,
    rstd: Vec<&'a [f32]>,
    act: Vec<&'a [f32]>,
    g_out: &'a [f32],
    scratch_a: &'a mut [f32],
    scratch_b: &'a mut [f32],
    d_x0: Option<&'a mut [f32]>,
}

/// Weight and bias gradients of a linear layer: `dW = dY^T X`, `db = sum_rows dY`.
fn linear_grads(n: usize, o: &LayerOffsets, dy: &[f32], x: &[f32], grad: &mut [f32]) {
    let (w, rest) = grad[o.weight..].split_at_mut(o.fan_out * o.fan_in);
    let mut dw = view_mut(o.fan_out, o.fan_in, w);
    let dy_v = view(n, o.fan_out, dy);
    general_mat_mul(1.0, &dy_v.t(), &view(n, o.fan_in, x), 0.0, &mut dw);
    let db = &mut rest[..o.fan_out];
    db.fill(0.0);
    for row in dy[..n * o.fan_out].chunks_exact(o.fan_out) {
        for (b, v) in db.iter_mut().zip(row) {
            *b += v;
        }
    }
}

/// Input gradient of a linear layer: `dX = dY W`.
fn linear_input_grad(n: usize, o: &LayerOffsets, net: &[f32], dy: &[f32], dx: &mut [f32]) {
    let w = view(o.fan_out, o.fan_in, &net[o.weight..]);
    general_mat_mul(
        1.0,
        &view(n, o.fan_out, dy),
        &w,
        0.0,
        &mut view_mut(n, o.fan_in, dx),
    );
}

impl NetBackward<'_> {
    fn run(self, offsets: &[LayerOffsets], spec: StackSpec) {
        let NetBackward {
            n,
            net,
            grad,
            x0,
            xhat,
            rstd,
            act,
            g_out,
            scratch_a,
            scratch_b,
            d_x0,
        } = self;
        if n == 0 {
            grad.fill(0.0);
            if let Some(d) = d_x0 {
                d.fill(0.0);
            }
            return;
        }
        let h = spec.hidden;
        let head = &offsets[spec.layers];
        let last_x: &[f32] = if spec.layers == 0 {
            x0
        } else {
            act[spec.layers - 1]
        };
        linear_grads(n, head, g_out, last_x, grad);
        // g: gradient w.r.t. the current layer's output activation.
        let (g, dz) = (scratch_a, scratch_b);
        linear_input_grad(n, head, net, g_out, g);
        for l in (0..spec.layers).rev() {
            let o = &offsets[l];
            let gamma = &net[o.gamma..o.gamma + h];
            // Through ReLU and LayerNorm's affine part, then LayerNorm's normalisation.
            let (gw, rest) = grad.split_at_mut(o.beta);
            let dgamma = &mut gw[o.gamma..o.gamma + h];
            let dbeta = &mut rest[..h];
            dgamma.fill(0.0);
            dbeta.fill(0.0);
            for r in 0..n {
                let (xh, a) = (&xhat[l][r * h..(r + 1) * h], &act[l][r * h..(r + 1) * h]);
                let gr = &g[r * h..(r + 1) * h];
                let dzr = &mut dz[r * h..(r + 1) * h];
                // Zipped slices (no indexing) so the loop vectorises.
                let lanes = dgamma.iter_mut().zip(dbeta.iter_mut()).zip(dzr.iter_mut());
                for (((dg, db), dzj), ((&gj, &aj), (&xj, &gmj))) in
                    lanes.zip(gr.iter().zip(a).zip(xh.iter().zip(gamma)))
                {
                    let dpre = if aj > 0.0 { gj } else { 0.0 };
                    *dg += dpre * xj;
                    *db += dpre;
                    *dzj = dpre * gmj;
                }
                let sum = lanes_sum(dzr, |x| x);
                let sum_x = lanes_dot(dzr, xh);
                let (mean, mean_x) = (sum / h as f32, sum_x / h as f32);
                let inv = rstd[l][r];
                for (dzj, &xj) in dzr.iter_mut().zip(xh) {
                    *dzj = inv * (*dzj - mean - xj * mean_x);
                }
            }
            let x: &[f32] = if l == 0 { x0 } else { act[l - 1] };
            linear_grads(n, o, dz, x, grad);
            if l > 0 {
                linear_input_grad(n, o, net, dz, g);
            } else if let Some(dx) = d_x0 {
                linear_input_grad(n, o, net, dz, dx);
                return;
            }
        }
    }
}
