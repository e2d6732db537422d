//! The uniformly random policy: the baseline every evaluation reports beside a trained one.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use rayon::prelude::*;

use crate::rng::{Purpose, below, stream};

/// A uniformly random policy with one stream per arena.
pub struct RandomPolicy {
    rngs: Vec<ChaCha8Rng>,
    actions: u32,
}

impl RandomPolicy {
    /// One stream per arena keyed by (seed, arena, Policy).
    pub fn new(seed: u64, arenas: usize, actions: usize) -> RandomPolicy {
        RandomPolicy {
            rngs: (0..arenas)
                .map(|a| stream(seed, a as u64, Purpose::Policy))
                .collect(),
            actions: actions as u32,
        }
    }

    /// Fills a `[B, N]` action buffer.
    pub fn act(&mut self, out: &mut [u8]) {
        let n = out.len() / self.rngs.len();
        let k = self.actions;
        self.rngs
            .par_iter_mut()
            .zip(out.par_chunks_mut(n))
            .with_min_len(64)
            .for_each(|(rng, a)| {
                for x in a {
                    *x = below(rng.next_u32(), k) as u8;
                }
            });
    }
}
