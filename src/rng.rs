//! Keyed random streams: one ChaCha8 stream per (run seed, arena, purpose), never a global RNG.

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// Why a stream is drawn from; part of its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Purpose {
    /// Start positions at resets.
    Spawn = 1,
    /// Slip outcomes.
    Slip = 2,
    /// Random-walker moves.
    Walk = 3,
    /// Actions of the benchmark's random policy.
    Policy = 4,
    /// The substrate's own chance (move priority, regrowth, reactions, coins, random ends).
    Rules = 5,
}

/// The stream for (seed, arena, purpose): the seed keys ChaCha, arena and purpose pick the stream.
pub fn stream(seed: u64, arena: u64, purpose: Purpose) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream((arena << 8) | purpose as u64);
    rng
}

/// An unbiased-enough draw in `0..n` from 32 random bits (Lemire's multiply-shift; the bias is
/// below n / 2^32, far under any statistical test here).
#[inline]
pub fn below(bits: u32, n: u32) -> u32 {
    ((bits as u64 * n as u64) >> 32) as u32
}

/// The 2^32-scaled threshold for an event of probability `p` compared against 32 random bits.
pub fn threshold(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 4_294_967_296.0).round() as u64
}

/// Moves `rng` past `words` 32-bit draws without making them: the stream then stands where
/// `words` calls of `next_u32` would leave it (one word each), in constant time. For draws
/// whose outcome is already known (a probability of 0) that a rule still makes, so the stream
/// stays that of the rule drawing them one by one.
pub fn skip_words(rng: &mut ChaCha8Rng, words: usize) {
    if words > 0 {
        rng.set_word_pos(rng.get_word_pos() + words as u128);
    }
}

/// All of one arena's streams.
pub fn arena_streams(seed: u64, arena: u64) -> crate::components::ArenaRng {
    crate::components::ArenaRng {
        spawn: stream(seed, arena, Purpose::Spawn),
        slip: stream(seed, arena, Purpose::Slip),
        walk: stream(seed, arena, Purpose::Walk),
        rules: stream(seed, arena, Purpose::Rules),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand_core::Rng;

    proptest! {
        /// Skipping `n` words leaves the stream where `n` draws of `next_u32` leave it, from any
        /// position in the generator's buffer.
        #[test]
        fn skipping_words_is_drawing_them(seed in any::<u64>(), before in 0usize..200, n in 0usize..300) {
            let mut drawn = stream(seed, 3, Purpose::Rules);
            for _ in 0..before {
                drawn.next_u32();
            }
            let mut skipped = drawn.clone();
            for _ in 0..n {
                drawn.next_u32();
            }
            skip_words(&mut skipped, n);
            let next: Vec<u32> = (0..70).map(|_| drawn.next_u32()).collect();
            let after: Vec<u32> = (0..70).map(|_| skipped.next_u32()).collect();
            prop_assert_eq!(next, after);
        }
    }
}
