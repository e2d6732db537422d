//! The CPU stack's optimiser step and target averaging, with one set of scalars for the whole
//! stack or one per network (replicas of a sweep sharing a stack), and a step that moves only
//! some networks (replicas whose rate limiters let them learn at their own moments). Every form
//! runs the same loop, and each network's bias correction comes from its own step count, so
//! network k stepped with its own scalars is bit for bit that network stepped alone.

use rayon::prelude::*;

use super::CpuCritic;
use super::profile::{Phase, span};
use crate::critic::{AdamConfig, NetOptim, StepStats};

/// Parameters per task of the target averaging inside one network.
const POLYAK_CHUNK: usize = 4096;

impl CpuCritic {
    /// The step itself: network k, unless `net(k)` is `None`, counts one more step and moves by
    /// the step size of its learning rate at that count, after its clip; betas, eps and RAdam
    /// come from `cfg`.
    pub(super) fn step_each(
        &mut self,
        cfg: &AdamConfig,
        net: impl Fn(usize) -> Option<NetOptim> + Sync,
    ) {
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
    }

    /// `target = tau * online + (1 - tau) * target` with network k's factor `tau(k)`.
    pub(super) fn average(&mut self, tau: impl Fn(usize) -> f32 + Sync) {
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
