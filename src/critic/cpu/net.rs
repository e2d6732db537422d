//! One network's share of a pass: the math of forward and backward over a block of rows that
//! all belong to one network (linear layers through GEMM, LayerNorm, ReLU). [`super::CpuCritic`]
//! cuts the batch into these blocks and runs them in parallel.

use super::profile::{Phase, span};
use super::sparse::{SparseRows, SparseView, linear_grads_sparse, linear_sparse};
use crate::critic::{LN_EPS, LayerOffsets, StackSpec};
use crate::simd::gemm::{Matrix, product};

/// The first layer's input of a block: dense f32 rows, or the non-zero entries of u8 rows with
/// the `[fan_in, fan_out]` transpose of the block's first-layer weights.
#[derive(Clone, Copy)]
pub(super) enum FirstInput<'a> {
    Dense(&'a [f32]),
    Sparse(SparseView<'a>, &'a [f32]),
}

/// Where a block's [`FirstInput`] comes from: the whole batch's dense rows, or, for the
/// networks flagged sparse, its sparse rows and the network's transposed first-layer weights.
pub(super) struct FirstSource<'a> {
    pub(super) dense: &'a [f32],
    /// The sparse rows and, per network, whether its rows take them.
    pub(super) sparse: (&'a SparseRows, &'a [bool]),
    pub(super) w1t: &'a [f32],
    /// Input width.
    pub(super) d: usize,
    /// Floats of one network's first-layer weights.
    pub(super) block: usize,
}

impl<'a> FirstSource<'a> {
    /// Rows `s..e` of network `k`.
    pub(super) fn rows(&self, s: usize, e: usize, k: usize) -> FirstInput<'a> {
        let (csr, nets) = self.sparse;
        if nets.get(k).copied().unwrap_or(false) {
            FirstInput::Sparse(
                csr.view(s, e),
                &self.w1t[k * self.block..(k + 1) * self.block],
            )
        } else {
            FirstInput::Dense(&self.dense[s * self.d..e * self.d])
        }
    }
}

impl FirstInput<'_> {
    /// The first layer's linear forward.
    fn linear(&self, n: usize, o: &LayerOffsets, net: &[f32], y: &mut [f32]) {
        let _t = span(Phase::FirstLinear);
        match *self {
            FirstInput::Dense(x) => linear(n, o, net, x, y),
            FirstInput::Sparse(x, wt) => linear_sparse(n, o, net, wt, x, y),
        }
    }

    /// The first layer's weight and bias gradients.
    fn grads(&self, n: usize, o: &LayerOffsets, dy: &[f32], grad: &mut [f32]) {
        let _t = span(Phase::FirstGrad);
        match *self {
            FirstInput::Dense(x) => linear_grads(n, o, dy, x, grad, false),
            FirstInput::Sparse(x, _) => linear_grads_sparse(n, o, dy, x, grad, &mut Vec::new()),
        }
    }
}

fn view(rows: usize, cols: usize, data: &[f32]) -> Matrix<'_> {
    Matrix::row_major(&data[..rows * cols], rows, cols)
}

/// Linear: `y = x W^T + b` for an `[n, in]` block.
pub(super) fn linear(n: usize, o: &LayerOffsets, net: &[f32], x: &[f32], y: &mut [f32]) {
    let bias = &net[o.bias..o.bias + o.fan_out];
    for row in y[..n * o.fan_out].chunks_exact_mut(o.fan_out) {
        row.copy_from_slice(bias);
    }
    let w = view(o.fan_out, o.fan_in, &net[o.weight..]);
    product(view(n, o.fan_in, x), w.t(), &mut y[..n * o.fan_out], true);
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

/// LayerNorm then ReLU of the linear output `z` into the activation `act`, keeping x-hat and
/// 1/std for backward.
pub(super) fn layernorm_relu(
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

/// What [`layernorm_relu`] kept for backward over a block of rows.
pub(super) struct NormSaved<'a> {
    /// `[n, h]` normalised linear output.
    pub(super) xhat: &'a [f32],
    /// `[n]` reciprocal standard deviations.
    pub(super) rstd: &'a [f32],
    /// `[n, h]` activation (after ReLU).
    pub(super) act: &'a [f32],
}

/// Backward through [`layernorm_relu`] for `n` rows: `g` is the gradient w.r.t. the
/// activation; writes the gradient w.r.t. the linear output into `dz` and adds the LayerNorm
/// scale and shift gradients into `grad` (at `o.gamma`, `o.beta`).
pub(super) fn layernorm_relu_grad(
    n: usize,
    o: &LayerOffsets,
    net: &[f32],
    saved: NormSaved<'_>,
    g: &[f32],
    dz: &mut [f32],
    grad: &mut [f32],
) {
    let h = o.fan_out;
    let gamma = &net[o.gamma..o.gamma + h];
    // Through ReLU and LayerNorm's affine part, then LayerNorm's normalisation.
    let (gw, rest) = grad.split_at_mut(o.beta);
    let dgamma = &mut gw[o.gamma..o.gamma + h];
    let dbeta = &mut rest[..h];
    for r in 0..n {
        let xh = &saved.xhat[r * h..(r + 1) * h];
        let a = &saved.act[r * h..(r + 1) * h];
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
        let inv = saved.rstd[r];
        for (dzj, &xj) in dzr.iter_mut().zip(xh) {
            *dzj = inv * (*dzj - mean - xj * mean_x);
        }
    }
}

/// One network's forward work and the slices it owns.
pub(super) struct NetForward<'a> {
    pub(super) n: usize,
    pub(super) net: &'a [f32],
    pub(super) x0: FirstInput<'a>,
    pub(super) xhat: Vec<&'a mut [f32]>,
    pub(super) rstd: Vec<&'a mut [f32]>,
    pub(super) act: Vec<&'a mut [f32]>,
    pub(super) out: &'a mut [f32],
}

impl NetForward<'_> {
    pub(super) fn run(mut self, offsets: &[LayerOffsets], spec: StackSpec) {
        if self.n == 0 {
            return;
        }
        let mut z = vec![0.0f32; self.n * spec.hidden];
        for l in 0..spec.layers {
            let o = &offsets[l];
            let (before, after) = self.act.split_at_mut(l);
            if l == 0 {
                self.x0.linear(self.n, o, self.net, &mut z);
            } else {
                let _t = span(Phase::Linear);
                linear(self.n, o, self.net, before[l - 1], &mut z);
            }
            let _t = span(Phase::NormRelu);
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
        if spec.layers == 0 {
            self.x0.linear(self.n, &offsets[0], self.net, self.out);
        } else {
            let _t = span(Phase::Linear);
            let x = &*self.act[spec.layers - 1];
            linear(self.n, &offsets[spec.layers], self.net, x, self.out);
        }
    }
}

/// One network's backward work and the slices it owns.
pub(super) struct NetBackward<'a> {
    pub(super) n: usize,
    pub(super) net: &'a [f32],
    pub(super) grad: &'a mut [f32],
    pub(super) x0: FirstInput<'a>,
    pub(super) xhat: Vec<&'a [f32]>,
    pub(super) rstd: Vec<&'a [f32]>,
    pub(super) act: Vec<&'a [f32]>,
    pub(super) g_out: &'a [f32],
    pub(super) scratch_a: &'a mut [f32],
    pub(super) scratch_b: &'a mut [f32],
    pub(super) d_x0: Option<&'a mut [f32]>,
}

/// Weight and bias gradients of a linear layer: `dW = dY^T X`, `db = sum_rows dY`, written over
/// what `grad` held there, or added to it with `accumulate`.
pub(super) fn linear_grads(
    n: usize,
    o: &LayerOffsets,
    dy: &[f32],
    x: &[f32],
    grad: &mut [f32],
    accumulate: bool,
) {
    let (dw, rest) = grad[o.weight..].split_at_mut(o.fan_out * o.fan_in);
    let dy_v = view(n, o.fan_out, dy);
    product(dy_v.t(), view(n, o.fan_in, x), dw, accumulate);
    let db = &mut rest[..o.fan_out];
    if !accumulate {
        db.fill(0.0);
    }
    for row in dy[..n * o.fan_out].chunks_exact(o.fan_out) {
        for (b, v) in db.iter_mut().zip(row) {
            *b += v;
        }
    }
}

/// Input gradient of a linear layer: `dX = dY W`.
pub(super) fn linear_input_grad(
    n: usize,
    o: &LayerOffsets,
    net: &[f32],
    dy: &[f32],
    dx: &mut [f32],
) {
    let w = view(o.fan_out, o.fan_in, &net[o.weight..]);
    product(view(n, o.fan_out, dy), w, &mut dx[..n * o.fan_in], false);
}

impl NetBackward<'_> {
    pub(super) fn run(self, offsets: &[LayerOffsets], spec: StackSpec) {
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
        // g: gradient w.r.t. the current layer's output activation.
        let (g, dz) = (scratch_a, scratch_b);
        if spec.layers == 0 {
            x0.grads(n, head, g_out, grad);
            if let Some(dx) = d_x0 {
                let _t = span(Phase::LinearGrad);
                linear_input_grad(n, head, net, g_out, dx);
            }
            return;
        }
        {
            let _t = span(Phase::LinearGrad);
            linear_grads(n, head, g_out, act[spec.layers - 1], grad, false);
            linear_input_grad(n, head, net, g_out, g);
        }
        for l in (0..spec.layers).rev() {
            let t_norm = span(Phase::NormReluGrad);
            let o = &offsets[l];
            grad[o.gamma..o.beta + h].fill(0.0);
            let saved = NormSaved {
                xhat: xhat[l],
                rstd: rstd[l],
                act: act[l],
            };
            layernorm_relu_grad(n, o, net, saved, g, dz, grad);
            drop(t_norm);
            if l == 0 {
                x0.grads(n, o, dz, grad);
            } else {
                let _t = span(Phase::LinearGrad);
                linear_grads(n, o, dz, act[l - 1], grad, false);
            }
            let _t = span(Phase::LinearGrad);
            if l > 0 {
                linear_input_grad(n, o, net, dz, g);
            } else if let Some(dx) = d_x0 {
                linear_input_grad(n, o, net, dz, dx);
                return;
            }
        }
    }
}
