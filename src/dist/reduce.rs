//! Data-parallel optimiser steps: the hook a critic runs on its gradients before every step,
//! replacing them by their mean over the job's ranks (one allreduce of the flat,
//! network-major gradient buffer), so every rank applies the same step to the same parameters
//! and the ranks stay bit-identical.
//!
//! The mean of per-rank gradients is the gradient of the mean loss over every rank's rows when
//! the ranks hold equally many rows (they do: every rank steps the same number of arenas and
//! samples the same batch). Clipping and Adam then run on the averaged gradient, identically on
//! every rank.
//!
//! The ranks call it in lockstep by construction: every rank runs the same learner on equally
//! many arenas, and the rate limiters of the replay learners count only inserts and samples,
//! so every rank takes the same optimiser steps. The training loop compares the ranks'
//! allreduce counts after every update and the parameters' checksums every few updates.

use super::Job;
use crate::critic::GradReducer;

/// The hook that replaces a gradient buffer by its mean over `job`'s ranks.
pub(crate) fn mean_over_ranks(job: Job) -> GradReducer {
    let inv = 1.0 / job.size() as f32;
    Box::new(move |grads: &mut [f32]| {
        job.allreduce_sum_f32(grads);
        grads.iter_mut().for_each(|g| *g *= inv);
    })
}
