//! The sparse first layer: u8 observations are small counts and mostly zero, so the first
//! layer's forward adds up the weight rows of the non-zero inputs (from a transposed
//! `[fan_in, fan_out]` copy of the weights) and its weight gradient scatter-adds
//! `dW[:, i] += x_i * dz` for each non-zero `x_i`, instead of two dense GEMMs over mostly zeros.
//! [`super::CpuCritic`] takes this path for each network whose rows in the batch are at most
//! its threshold dense (decided per network, so stacking replicas changes no network's path).

use rayon::prelude::*;

use crate::critic::LayerOffsets;

/// Default density (fraction of non-zero u8 inputs) at or below which a network's rows take
/// the sparse first layer. Measured with `gridarena bench critic --density D` against `--dense` on the
/// Pursuit and coin-game shapes (docs/perf.md).
pub const SPARSE_DENSITY: f32 = 0.12;

/// Widest input the sparse path indexes (entries hold 16-bit input indices).
pub(super) const MAX_SPARSE_INPUT: usize = u16::MAX as usize + 1;

/// Non-zero entries of u8 rows, in network order. Row `r`'s entries sit at the start of its own
/// `width` slots, so rows are filled in parallel without a prefix sum.
#[derive(Default)]
pub(super) struct SparseRows {
    /// Slots per row (the input width).
    width: usize,
    /// `[R]` entries of each row.
    len: Vec<u32>,
    /// `[R, width]` input index of each entry.
    idx: Vec<u16>,
    /// `[R, width]` value of each entry.
    val: Vec<u8>,
}

/// A block of rows of a [`SparseRows`].
#[derive(Clone, Copy)]
pub(super) struct SparseView<'a> {
    width: usize,
    len: &'a [u32],
    idx: &'a [u16],
    val: &'a [u8],
}

impl SparseRows {
    /// Fills the rows from `[R, d]` bytes `x`, taking rows in `order`, in parallel. Branch-free:
    /// every byte is written at the row's next free slot, which advances only past non-zero
    /// ones (the buffers grow to the largest batch seen).
    pub(super) fn fill(&mut self, x: &[u8], order: &[u32], d: usize) {
        let (rows, cap) = (order.len(), order.len() * d);
        self.width = d;
        if self.idx.len() < cap {
            self.idx.resize(cap, 0);
            self.val.resize(cap, 0);
        }
        self.len.resize(rows, 0);
        self.len
            .par_iter_mut()
            .zip(self.idx[..cap].par_chunks_mut(d))
            .zip(self.val[..cap].par_chunks_mut(d))
            .zip(order.par_iter())
            .with_min_len(64)
            .for_each(|(((len, idx), val), &row)| {
                let row = row as usize;
                let mut k = 0;
                for (i, &v) in x[row * d..(row + 1) * d].iter().enumerate() {
                    idx[k] = i as u16;
                    val[k] = v;
                    k += (v != 0) as usize;
                }
                *len = k as u32;
            });
    }

    /// Rows `start..end`.
    pub(super) fn view(&self, start: usize, end: usize) -> SparseView<'_> {
        let w = self.width;
        SparseView {
            width: w,
            len: &self.len[start..end],
            idx: &self.idx[start * w..end * w],
            val: &self.val[start * w..end * w],
        }
    }
}

impl SparseView<'_> {
    /// The (index, value) entries of row `r` of the block.
    fn row(&self, r: usize) -> impl Iterator<Item = (usize, f32)> + '_ {
        let (s, e) = (r * self.width, r * self.width + self.len[r] as usize);
        self.idx[s..e]
            .iter()
            .zip(&self.val[s..e])
            .map(|(&i, &v)| (i as usize, v as f32))
    }
}

/// `y += a * x`.
#[inline]
fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    for (yo, &xi) in y.iter_mut().zip(x) {
        *yo += a * xi;
    }
}

/// `dst[c, r] = src[r, c]` for a `[rows, cols]` source.
pub(super) fn transpose(rows: usize, cols: usize, src: &[f32], dst: &mut [f32]) {
    for (r, row) in src[..rows * cols].chunks_exact(cols).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            dst[c * rows + r] = v;
        }
    }
}

/// Output features summed at once in registers by [`linear_sparse`].
const BLOCK: usize = 32;

/// Linear `y = x W^T + b` for `n` sparse rows, from `wt`, the `[fan_in, fan_out]` transpose of W.
/// Each row's outputs are summed `BLOCK` at a time in a register-held accumulator.
pub(super) fn linear_sparse(
    n: usize,
    o: &LayerOffsets,
    net: &[f32],
    wt: &[f32],
    x: SparseView,
    y: &mut [f32],
) {
    let (fo, bias) = (o.fan_out, &net[o.bias..o.bias + o.fan_out]);
    let blocked = fo - fo % BLOCK;
    for (r, yr) in y[..n * fo].chunks_exact_mut(fo).enumerate() {
        for c in (0..blocked).step_by(BLOCK) {
            let mut acc = [0.0f32; BLOCK];
            acc.copy_from_slice(&bias[c..c + BLOCK]);
            for (i, v) in x.row(r) {
                let w = &wt[i * fo + c..][..BLOCK];
                for (aj, &wj) in acc.iter_mut().zip(w) {
                    *aj += v * wj;
                }
            }
            yr[c..c + BLOCK].copy_from_slice(&acc);
        }
        if blocked < fo {
            let tail = &mut yr[blocked..];
            tail.copy_from_slice(&bias[blocked..]);
            for (i, v) in x.row(r) {
                axpy(v, &wt[i * fo + blocked..(i + 1) * fo], tail);
            }
        }
    }
}

/// Weight and bias gradients of a linear layer over `n` sparse rows: `dW^T[i] += x_i dy` into
/// `scratch` (`[fan_in, fan_out]`), transposed into place; `db = sum_rows dy`.
pub(super) fn linear_grads_sparse(
    n: usize,
    o: &LayerOffsets,
    dy: &[f32],
    x: SparseView,
    grad: &mut [f32],
    scratch: &mut Vec<f32>,
) {
    let (fi, fo) = (o.fan_in, o.fan_out);
    scratch.clear();
    scratch.resize(fi * fo, 0.0);
    let db = &mut grad[o.bias..o.bias + fo];
    db.fill(0.0);
    for (r, dyr) in dy[..n * fo].chunks_exact(fo).enumerate() {
        for (i, v) in x.row(r) {
            axpy(v, dyr, &mut scratch[i * fo..(i + 1) * fo]);
        }
        db.iter_mut().zip(dyr).for_each(|(b, d)| *b += d);
    }
    transpose(fi, fo, scratch, &mut grad[o.weight..o.weight + fi * fo]);
}
