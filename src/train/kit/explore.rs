//! Acting on values: the greedy action of a row, the epsilon-greedy action drawn from an
//! arena's exploration stream, and the one epsilon-greedy loop every learner acts with.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use crate::rng::below;

/// Index of the largest value (the first on ties).
pub fn argmax(q: &[f32]) -> u8 {
    let mut best = 0;
    for (i, v) in q.iter().enumerate() {
        if *v > q[best] {
            best = i;
        }
    }
    best as u8
}

/// The largest value of a row (the bootstrap of a greedy target).
pub(crate) fn max_value(q: &[f32]) -> f32 {
    q.iter().copied().fold(f32::NEG_INFINITY, f32::max)
}

/// Greedy actions of rows of `actions` values each.
pub(crate) fn greedy_actions(values: &[f32], actions: usize) -> Vec<u8> {
    values.chunks_exact(actions).map(argmax).collect()
}

/// The epsilon-greedy action for one row of Q-values: with probability `threshold / 2^32` a
/// uniform action, else the greedy one (one draw, plus one more when exploring).
pub fn epsilon_greedy(rng: &mut ChaCha8Rng, q: &[f32], threshold: u64) -> u8 {
    if (rng.next_u32() as u64) < threshold {
        below(rng.next_u32(), q.len() as u32) as u8
    } else {
        argmax(q)
    }
}

/// Epsilon-greedy actions for every learner of every arena: `values` `[B x N, A]`, arena b
/// drawing from `streams[b]` for its learners in slot order; the actions go to `chosen`
/// `[B x N]`.
pub(crate) fn act_epsilon_greedy(
    streams: &mut [ChaCha8Rng],
    values: &[f32],
    actions: usize,
    threshold: u64,
    chosen: &mut [u8],
) {
    let n = chosen.len() / streams.len().max(1);
    for (arena, rng) in streams.iter_mut().enumerate() {
        for r in arena * n..(arena + 1) * n {
            chosen[r] = epsilon_greedy(rng, &values[r * actions..(r + 1) * actions], threshold);
        }
    }
}
