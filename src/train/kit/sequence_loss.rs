//! The value loss of a recurrent minibatch: sequences of several replicas stacked side by side
//! in one time-major `[L, n]` pass, each replica's block of columns with its own head, its
//! loss masked (burn-in steps weigh 0) and averaged over its own rows. PQN-RNN and IQL with
//! sequence replay both train through it.

use super::q_head::QHead;
use crate::critic::loss::loss_and_grad;

/// One replica's rows of a sequence minibatch, gathered for its loss (reused between calls).
#[derive(Debug, Default)]
pub(crate) struct Part {
    out: Vec<f32>,
    d: Vec<f32>,
    actions: Vec<u32>,
    targets: Vec<f32>,
    mask: Vec<f32>,
}

/// The value loss of a sequence pass's outputs `out` (`[L, n, width]`, time-major) whose n
/// columns are equal blocks, one per replica in order, each with its head from `heads`: each
/// block's masked loss (`QHead::masked_loss` on `rows`' actions, targets and weights, `[L, n]`)
/// averaged over its own rows, its gradient written into `d_out` (resized to `out`). Returns
/// the sum of the blocks' losses.
pub(crate) fn masked_loss_by_blocks(
    (out, width, n): (&[f32], usize, usize),
    (actions, targets, mask): (&[u32], &[f32], &[f32]),
    heads: impl ExactSizeIterator<Item = QHead>,
    p: &mut Part,
    d_out: &mut Vec<f32>,
) -> f32 {
    let cols = n / heads.len().max(1);
    d_out.clear();
    d_out.resize(out.len(), 0.0);
    let mut sum = 0.0;
    for (b, head) in heads.enumerate() {
        let rows = || (0..actions.len()).filter(move |k| (k % n) / cols.max(1) == b);
        p.out.clear();
        p.actions.clear();
        p.targets.clear();
        p.mask.clear();
        for k in rows() {
            p.out.extend_from_slice(&out[k * width..(k + 1) * width]);
            p.actions.push(actions[k]);
            p.targets.push(targets[k]);
            p.mask.push(mask[k]);
        }
        p.d.clear();
        p.d.resize(p.out.len(), 0.0);
        let loss = head.masked_loss(&p.actions, &p.targets, Some(&p.mask));
        sum += loss_and_grad(&loss, &p.out, width, &mut p.d);
        for (i, k) in rows().enumerate() {
            d_out[k * width..(k + 1) * width].copy_from_slice(&p.d[i * width..(i + 1) * width]);
        }
    }
    sum
}
