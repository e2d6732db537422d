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

/// Index of the largest value among the legal actions (`mask[i] != 0`; the first on ties);
/// every action when `mask` is `None` or rules none legal.
pub fn argmax_legal(q: &[f32], mask: Option<&[u8]>) -> u8 {
    let Some(mask) = mask.filter(|m| m.iter().any(|&x| x != 0)) else {
        return argmax(q);
    };
    let mut best = None::<usize>;
    for (i, (v, &legal)) in q.iter().zip(mask).enumerate() {
        if legal != 0 && best.is_none_or(|b| *v > q[b]) {
            best = Some(i);
        }
    }
    best.unwrap_or(0) as u8
}

/// The largest value among the legal actions of row `row` of `values` (`[rows, A]`; every
/// action without a mask): the bootstrap of a greedy target where some actions are illegal.
pub(crate) fn max_legal(values: &[f32], mask: Option<&[u8]>, row: usize) -> f32 {
    let a = values.len();
    match mask.map(|m| &m[row * a..(row + 1) * a]) {
        Some(m) if m.iter().any(|&x| x != 0) => values
            .iter()
            .zip(m)
            .filter(|(_, l)| **l != 0)
            .fold(f32::NEG_INFINITY, |best, (v, _)| best.max(*v)),
        _ => max_value(values),
    }
}

/// Greedy actions of rows of `actions` values each, within `mask` (`[rows, actions]`) when
/// given.
pub(crate) fn greedy_actions(values: &[f32], actions: usize, mask: Option<&[u8]>) -> Vec<u8> {
    values
        .chunks_exact(actions)
        .enumerate()
        .map(|(r, q)| argmax_legal(q, mask.map(|m| &m[r * actions..(r + 1) * actions])))
        .collect()
}

/// The epsilon-greedy action for one row of Q-values: with probability `threshold / 2^32` a
/// uniform action, else the greedy one (one draw, plus one more when exploring). With a
/// `mask`, both choose among the legal actions only (the same draws: with every action legal
/// the choice is the unmasked one).
pub fn epsilon_greedy(rng: &mut ChaCha8Rng, q: &[f32], threshold: u64, mask: Option<&[u8]>) -> u8 {
    let mask = mask.filter(|m| m.iter().any(|&x| x != 0));
    if (rng.next_u32() as u64) < threshold {
        let Some(mask) = mask else {
            return below(rng.next_u32(), q.len() as u32) as u8;
        };
        let legal = mask.iter().filter(|&&x| x != 0).count() as u32;
        let k = below(rng.next_u32(), legal) as usize;
        mask.iter()
            .enumerate()
            .filter(|(_, x)| **x != 0)
            .nth(k)
            .map_or(0, |(i, _)| i as u8)
    } else {
        argmax_legal(q, mask)
    }
}

/// Epsilon-greedy actions for every learner of every arena: `values` `[B x N, A]`, arena b
/// drawing from `streams[b]` for its learners in slot order, within `mask` `[B x N, A]` when
/// the substrate keeps one; the actions go to `chosen` `[B x N]`.
pub(crate) fn act_epsilon_greedy(
    streams: &mut [ChaCha8Rng],
    values: &[f32],
    actions: usize,
    threshold: u64,
    (chosen, mask): (&mut [u8], Option<&[u8]>),
) {
    let n = chosen.len() / streams.len().max(1);
    for (arena, rng) in streams.iter_mut().enumerate() {
        let rows = arena * n..(arena + 1) * n;
        for (r, out) in rows.clone().zip(&mut chosen[rows]) {
            let row = r * actions..(r + 1) * actions;
            let legal = mask.map(|m| &m[row.clone()]);
            *out = epsilon_greedy(rng, &values[row], threshold, legal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the values, the mask (with a legal action) and epsilon, the choice is legal,
        /// and greedy is the best legal value.
        #[test]
        fn choices_stay_within_the_mask(
            q in prop::collection::vec(-10.0f32..10.0, 6),
            mask in prop::collection::vec(0u8..2, 6),
            seed in any::<u64>(),
            eps in 0.0f64..=1.0,
        ) {
            prop_assume!(mask.contains(&1));
            let mut rng = crate::rng::stream(seed, 0, crate::rng::Purpose::Policy);
            let a = epsilon_greedy(&mut rng, &q, crate::rng::threshold(eps), Some(&mask));
            prop_assert_eq!(mask[a as usize], 1);
            let g = argmax_legal(&q, Some(&mask)) as usize;
            prop_assert_eq!(mask[g], 1);
            for (v, &m) in q.iter().zip(&mask) {
                prop_assert!(m == 0 || *v <= q[g]);
            }
            prop_assert_eq!(max_legal(&q, Some(&mask), 0), q[g]);
        }

        /// With every action legal the mask changes nothing: the same draws, the same choice.
        #[test]
        fn an_all_legal_mask_chooses_as_no_mask(
            q in prop::collection::vec(-10.0f32..10.0, 5),
            seed in any::<u64>(),
            eps in 0.0f64..=1.0,
        ) {
            let t = crate::rng::threshold(eps);
            let mut r1 = crate::rng::stream(seed, 0, crate::rng::Purpose::Policy);
            let mut r2 = r1.clone();
            prop_assert_eq!(
                epsilon_greedy(&mut r1, &q, t, Some(&[1; 5])),
                epsilon_greedy(&mut r2, &q, t, None)
            );
        }
    }
}
