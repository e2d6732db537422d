//! Data-parallel optimiser steps: a [`CriticBackend`] whose every step first replaces the
//! gradients of the last backward pass by their mean over the job's ranks (one allreduce of
//! the flat, network-major gradient buffer), so every rank applies the same step to the same
//! parameters and the ranks stay bit-identical.
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
use crate::critic::loss::Loss;
use crate::critic::{
    AdamConfig, CriticBackend, CriticError, Input, NetOptim, Sequences, StackSpec, StepStats,
};

/// A backend whose optimiser steps average the gradients over the job's ranks first.
pub(crate) struct AllReduced {
    inner: Box<dyn CriticBackend>,
    job: Job,
    /// An averaging failure during an infallible [`CriticBackend::step`], reported by the
    /// next fallible call.
    failed: Option<CriticError>,
}

impl AllReduced {
    /// `inner` with its steps averaged over `job`'s ranks.
    pub(crate) fn new(inner: Box<dyn CriticBackend>, job: Job) -> AllReduced {
        AllReduced {
            inner,
            job,
            failed: None,
        }
    }

    /// Replaces the gradients by their mean over ranks.
    fn average(&mut self) -> Result<(), CriticError> {
        // The backend's copy of its gradients is the buffer that is summed and written back.
        let mut grads = self.inner.grads()?;
        self.job.allreduce_sum_f32(&mut grads);
        let inv = 1.0 / self.job.size() as f32;
        grads.iter_mut().for_each(|g| *g *= inv);
        self.inner.set_grads(&grads)
    }

    fn pending(&mut self) -> Result<(), CriticError> {
        self.failed.take().map_or(Ok(()), Err)
    }
}

impl CriticBackend for AllReduced {
    fn spec(&self) -> &StackSpec {
        self.inner.spec()
    }
    fn forward(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        self.pending()?;
        self.inner.forward(input, nets)
    }
    fn forward_target(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        self.pending()?;
        self.inner.forward_target(input, nets)
    }
    fn forward_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        self.pending()?;
        self.inner.forward_seq(seq)
    }
    fn forward_target_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        self.pending()?;
        self.inner.forward_target_seq(seq)
    }
    fn act(
        &mut self,
        input: Input,
        nets: &[u32],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, CriticError> {
        self.pending()?;
        self.inner.act(input, nets, hidden)
    }
    fn polyak(&mut self, tau: f32) {
        self.inner.polyak(tau)
    }
    fn polyak_nets(&mut self, taus: &[f32]) -> Result<(), CriticError> {
        self.inner.polyak_nets(taus)
    }
    fn target_params(&mut self) -> Result<Vec<f32>, CriticError> {
        self.inner.target_params()
    }
    fn loss_backward(&mut self, loss: &Loss) -> Result<(), CriticError> {
        self.inner.loss_backward(loss)
    }
    fn backward(&mut self, d_out: &[f32]) -> Result<(), CriticError> {
        self.inner.backward(d_out)
    }
    fn last_loss(&mut self) -> Result<f32, CriticError> {
        self.pending()?;
        self.inner.last_loss()
    }
    fn step(&mut self, cfg: &AdamConfig) {
        match self.average() {
            Ok(()) => self.inner.step(cfg),
            Err(e) => self.failed = Some(e),
        }
    }
    fn step_nets(&mut self, cfg: &AdamConfig, nets: &[NetOptim]) -> Result<(), CriticError> {
        self.pending()?;
        self.average()?;
        self.inner.step_nets(cfg, nets)
    }
    fn step_masked(
        &mut self,
        cfg: &AdamConfig,
        nets: &[NetOptim],
        active: &[bool],
    ) -> Result<(), CriticError> {
        self.pending()?;
        self.average()?;
        self.inner.step_masked(cfg, nets, active)
    }
    fn step_stats(&mut self) -> Result<StepStats, CriticError> {
        self.pending()?;
        self.inner.step_stats()
    }
    fn params(&mut self) -> Result<Vec<f32>, CriticError> {
        self.pending()?;
        self.inner.params()
    }
    fn set_params(&mut self, params: &[f32]) -> Result<(), CriticError> {
        self.inner.set_params(params)
    }
    fn grads(&mut self) -> Result<Vec<f32>, CriticError> {
        self.inner.grads()
    }
    fn set_grads(&mut self, grads: &[f32]) -> Result<(), CriticError> {
        self.inner.set_grads(grads)
    }
    fn adam_state(&mut self) -> Result<(Vec<f32>, Vec<f32>, u64), CriticError> {
        self.inner.adam_state()
    }
    fn set_adam_state(&mut self, m: &[f32], v: &[f32], steps: u64) -> Result<(), CriticError> {
        self.inner.set_adam_state(m, v, steps)
    }
    fn net_steps(&self) -> Vec<u64> {
        self.inner.net_steps()
    }
    fn set_net_steps(&mut self, steps: &[u64]) -> Result<(), CriticError> {
        self.inner.set_net_steps(steps)
    }
}
