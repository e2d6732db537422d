//! The CPU stack's optimiser step and target averaging, with one set of scalars for the whole
//! stack or one per network (replicas of a sweep sharing a stack), and a step that moves only
//! some networks (replicas whose rate limiters let them learn at their own moments). Every form
//! runs the same loop, and each network's bias correction comes from its own step count, so
//! network k stepped with its own scalars is bit for bit that network stepped alone.

use rayon::prelude::*;

use super::CpuCritic;
use super::profile::{Phase, span};
use crate::critic::{AdamConfig, CriticError, NetOptim, StepStats, check_len};

/// Parameters per task of the target averaging inside one network.
const POLYAK_CHUNK: usize = 4096;

impl CpuCritic {
    /// One optimiser step on the current gradients: each network's gradient is clipped to
    /// `max_grad_norm` (its own global norm), then Adam or RAdam with bias correction from the
    /// network's own step count. Returns what it saw (kept until the next step).
    pub fn step(&mut self, cfg: &AdamConfig) -> &StepStats {
        let net = NetOptim::from(cfg);
        self.apply_step(cfg, |_| Some(net))
    }

    /// [`CpuCritic::step`] with network k's learning rate and clip from `nets[k]` (the rest from
    /// `cfg`): network k ends bit for bit where `step(&cfg.for_net(&nets[k]))` takes it alone.
    /// Refused, changing nothing, unless there is one entry per network.
    pub fn step_nets(
        &mut self,
        cfg: &AdamConfig,
        nets: &[NetOptim],
    ) -> Result<&StepStats, CriticError> {
        check_len("per-network optimiser scalars", self.spec.nets, nets.len())?;
        Ok(self.apply_step(cfg, |k| Some(nets[k])))
    }

    /// [`CpuCritic::step_nets`] for the networks whose `active[k]` is true only: the others'
    /// parameters, moments and step counts stay as they are (their gradient norms are still
    /// reported).
    /// Refused, changing nothing, unless both have one entry per network.
    pub fn step_masked(
        &mut self,
        cfg: &AdamConfig,
        nets: &[NetOptim],
        active: &[bool],
    ) -> Result<&StepStats, CriticError> {
        check_len("per-network optimiser scalars", self.spec.nets, nets.len())?;
        check_len("per-network step mask", self.spec.nets, active.len())?;
        Ok(self.apply_step(cfg, |k| active[k].then_some(nets[k])))
    }

    /// The step itself: network k, unless `net(k)` is `None`, counts one more step and moves by
    /// the step size of its learning rate at that count, after its clip; betas, eps and RAdam
    /// come from `cfg`.
    fn apply_step(
        &mut self,
        cfg: &AdamConfig,
        net: impl Fn(usize) -> Option<NetOptim> + Sync,
    ) -> &StepStats {
        let (_wall, _t) = (span(Phase::WallStep), span(Phase::Adam));
        self.w1t_fresh = false;
        let per_net = self.spec.params_per_net();
        let grad_norms: Vec<f32> = (
            self.params.par_chunks_mut(per_net),
            self.grads.par_chunks(per_net),
            self.adam_m.par_chunks_mut(per_net),
            self.adam_v.par_chunks_mut(per_net),
            self.steps.par_iter_mut(),
        )
            .into_par_iter()
            .enumerate()
            .map(|(k, (p, g, m, v, steps))| {
                let norm = g
                    .iter()
                    .map(|x| (*x as f64) * (*x as f64))
                    .sum::<f64>()
                    .sqrt() as f32;
                let Some(n) = net(k) else {
                    return norm;
                };
                *steps += 1;
                let (step_size, bc2, adaptive) = cfg.for_net(&n).schedule(*steps);
                let scale = match n.max_grad_norm {
                    Some(max) if norm > max => max / (norm + 1e-6),
                    _ => 1.0,
                };
                for i in 0..p.len() {
                    let gi = g[i] * scale;
                    m[i] = cfg.beta1 * m[i] + (1.0 - cfg.beta1) * gi;
                    v[i] = cfg.beta2 * v[i] + (1.0 - cfg.beta2) * gi * gi;
                    p[i] -= if adaptive {
                        step_size * m[i] / ((v[i] / bc2).sqrt() + cfg.eps)
                    } else {
                        step_size * m[i]
                    };
                }
                norm
            })
            .collect();
        self.last_step = StepStats { grad_norms };
        &self.last_step
    }

    /// Copies the online parameters into the target copy.
    pub fn copy_to_target(&mut self) {
        self.target.copy_from_slice(&self.params);
        self.w1t_target_fresh = false;
    }

    /// Polyak averaging: `target = tau * online + (1 - tau) * target`.
    pub fn polyak(&mut self, tau: f32) {
        self.average(|_| tau);
    }

    /// [`CpuCritic::polyak`] with network k's own factor `taus[k]`; a factor of 0 leaves that
    /// network's target untouched (not even rewritten). Refused, changing nothing, unless there
    /// is one per network.
    pub fn polyak_nets(&mut self, taus: &[f32]) -> Result<(), CriticError> {
        check_len("per-network Polyak factors", self.spec.nets, taus.len())?;
        self.average(|k| taus[k]);
        Ok(())
    }

    /// `target = tau * online + (1 - tau) * target` with network k's factor `tau(k)`.
    fn average(&mut self, tau: impl Fn(usize) -> f32 + Sync) {
        self.w1t_target_fresh = false;
        let per_net = self.spec.params_per_net();
        self.target
            .par_chunks_mut(per_net)
            .zip(self.params.par_chunks(per_net))
            .enumerate()
            .for_each(|(k, (target, online))| {
                let tau = tau(k);
                if tau == 0.0 {
                    return;
                }
                target
                    .par_chunks_mut(POLYAK_CHUNK)
                    .zip(online.par_chunks(POLYAK_CHUNK))
                    .for_each(|(t, p)| {
                        for (t, p) in t.iter_mut().zip(p) {
                            *t = tau * p + (1.0 - tau) * *t;
                        }
                    });
            });
    }
}
