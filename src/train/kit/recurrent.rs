//! Acting and training with recurrent Q-networks, shared by the learners: the hidden states
//! live in each batch's recurrent-state buffer (`EnvBatch::hidden_states`, zeroed by the
//! engine when an episode starts); an acting pass gathers every replica's states into one
//! `[rows, g]` block ([`gather_hidden`]), runs one [`crate::critic::CriticBackend::act`] for
//! all of them and puts the next states back ([`scatter_hidden`]).

use crate::engine::EnvBatch;

/// Every batch's hidden states, one after another, into `out`.
pub(crate) fn gather_hidden(batches: &[EnvBatch], out: &mut Vec<f32>) {
    out.clear();
    for b in batches {
        out.extend_from_slice(b.hidden_states());
    }
}

/// `src` (as [`gather_hidden`] laid it out) back into the batches.
pub(crate) fn scatter_hidden(src: &[f32], batches: &mut [EnvBatch]) {
    let mut at = 0;
    for b in batches {
        let h = b.hidden_states_mut();
        h.copy_from_slice(&src[at..at + h.len()]);
        at += h.len();
    }
}

/// 1 for every learner row (arena-major, `learners` per arena) of `batch` whose arena's
/// episode ended in the last step (its next step starts a new episode), else 0.
pub(crate) fn ended_rows(batch: &EnvBatch, learners: usize, out: &mut [u8]) {
    let b = batch.buffers();
    for (rows, (&term, &trunc)) in out
        .chunks_exact_mut(learners)
        .zip(b.terminated.iter().zip(&b.truncated))
    {
        rows.fill(u8::from(term != 0 || trunc != 0));
    }
}

/// The checkpoint tensor of a batch's hidden states.
const HIDDEN: &str = "hidden";

/// Saves `batch`'s hidden states into `extra` (nothing for memoryless networks).
pub(crate) fn save_hidden(batch: &EnvBatch, extra: &mut crate::train::tensors::NamedTensors) {
    let h = batch.hidden_states();
    if !h.is_empty() {
        let t = crate::train::tensors::Tensor::F32(h.to_vec());
        extra.push((HIDDEN.into(), t));
    }
}

/// Restores what [`save_hidden`] saved, its length checked against the batch's.
pub(crate) fn load_hidden(
    batch: &mut EnvBatch,
    extra: &[(String, crate::train::tensors::Tensor)],
) -> Result<(), crate::error::BadField> {
    let h = batch.hidden_states_mut();
    if !h.is_empty() {
        h.copy_from_slice(crate::train::tensors::f32s(extra, HIDDEN, h.len())?);
    }
    Ok(())
}
