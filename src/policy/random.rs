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

    /// Fills a `[B, N]` action buffer with uniform choices among each learner's legal actions
    /// (`mask` `[B, N, A]`, 1 legal; a row with none legal chooses among all). One draw per
    /// learner, as [`RandomPolicy::act`]: with every action legal the choices are its.
    pub fn act_within(&mut self, mask: &[u8], out: &mut [u8]) {
        let n = out.len() / self.rngs.len();
        let k = self.actions as usize;
        self.rngs
            .par_iter_mut()
            .zip(out.par_chunks_mut(n))
            .zip(mask.par_chunks(n * k))
            .with_min_len(64)
            .for_each(|((rng, a), m)| {
                for (x, row) in a.iter_mut().zip(m.chunks_exact(k)) {
                    let legal = row.iter().filter(|&&l| l != 0).count();
                    let draw = rng.next_u32();
                    *x = if legal == 0 {
                        below(draw, k as u32) as u8
                    } else {
                        let j = below(draw, legal as u32) as usize;
                        row.iter()
                            .enumerate()
                            .filter(|(_, l)| **l != 0)
                            .nth(j)
                            .map_or(0, |(i, _)| i as u8)
                    };
                }
            });
    }
}
