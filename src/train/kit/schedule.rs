//! Schedules every learner shares: the learning rate with the optimiser settings, and the
//! exploration rate (linear decay over updates for PQN, over environment steps for the replay
//! learners).

use crate::critic::AdamConfig;
use crate::train::config::{LrScale, RunConfig};

/// The learning rate before any decay: `lr`, scaled by `lr_scale` with the effective batch
/// against `reference_batch`.
pub fn resolved_lr(cfg: &RunConfig) -> f32 {
    let ratio = cfg.effective_batch() as f64 / cfg.learn.reference_batch.max(1) as f64;
    match cfg.learn.lr_scale {
        LrScale::None => cfg.learn.lr,
        LrScale::Linear => (cfg.learn.lr as f64 * ratio) as f32,
        LrScale::Sqrt => (cfg.learn.lr as f64 * ratio.sqrt()) as f32,
    }
}

/// The learning rate at `update` (linear decay to 0 over the run when `lr_decay`) and the
/// optimiser settings every learner uses.
pub fn optimiser(cfg: &RunConfig, update: u64) -> (f32, AdamConfig) {
    let progress = update as f32 / cfg.updates().max(1) as f32;
    let base = resolved_lr(cfg);
    let lr = if cfg.learn.lr_decay {
        base * (1.0 - progress).max(0.0)
    } else {
        base
    };
    let adam = AdamConfig {
        lr: lr.max(1e-12),
        max_grad_norm: Some(cfg.learn.max_grad_norm),
        radam: cfg.learn.radam,
        ..AdamConfig::default()
    };
    (lr, adam)
}

/// Linear from `eps_start` to `eps_finish` as `done` goes from 0 to `eps_fraction x total`.
fn linear_epsilon(cfg: &RunConfig, done: u64, total: u64) -> f32 {
    let horizon = (cfg.learn.eps_fraction as f64 * total as f64).max(1.0);
    let frac = (done as f64 / horizon).min(1.0) as f32;
    cfg.learn.eps_start + (cfg.learn.eps_finish - cfg.learn.eps_start) * frac
}

/// Exploration after `env_steps` steps: linear from `eps_start` to `eps_finish` over
/// `eps_fraction` of the run's steps (the replay learners' schedule).
pub fn epsilon_by_steps(cfg: &RunConfig, env_steps: u64) -> f32 {
    linear_epsilon(cfg, env_steps, cfg.total_steps)
}

/// Exploration at `update`: linear from `eps_start` to `eps_finish` over `eps_fraction` of the
/// run's updates (PQN's schedule).
pub fn epsilon_by_updates(cfg: &RunConfig, update: u64) -> f32 {
    linear_epsilon(cfg, update, cfg.updates())
}

/// The values a replay learner's step reads at one update: discount, Polyak factor, optimiser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StepValues {
    /// Discount of the TD targets.
    pub gamma: f32,
    /// Polyak factor of the target networks.
    pub tau: f32,
    /// The optimiser's settings at this update.
    pub adam: AdamConfig,
}

impl StepValues {
    /// The values of `cfg` at an update whose optimiser is `adam`.
    pub(crate) fn of(cfg: &RunConfig, adam: AdamConfig) -> StepValues {
        StepValues {
            gamma: cfg.learn.gamma,
            tau: cfg.iql.target_tau,
            adam,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::config::{LearnConfig, PqnConfig};

    #[test]
    fn the_learning_rate_scales_with_the_effective_batch() {
        let mut cfg = RunConfig {
            arenas: 1024,
            rollout: 32,
            learn: LearnConfig {
                lr: 1e-3,
                lr_decay: false,
                reference_batch: 1024,
                ..Default::default()
            },
            pqn: PqnConfig {
                minibatches: 8,
                ..Default::default()
            },
            ..RunConfig::default()
        };
        assert_eq!(cfg.effective_batch(), 4096);
        assert_eq!(optimiser(&cfg, 0).0, 1e-3);
        cfg.learn.lr_scale = LrScale::Linear;
        assert!((optimiser(&cfg, 0).0 - 4e-3).abs() < 1e-9);
        cfg.learn.lr_scale = LrScale::Sqrt;
        assert!((optimiser(&cfg, 0).0 - 2e-3).abs() < 1e-9);
        cfg.algo = crate::train::config::Algo::Iql;
        cfg.iql.batch_size = 256;
        assert!((optimiser(&cfg, 0).0 - 5e-4).abs() < 1e-9);
        cfg.learn.reference_batch = 0;
        assert!(
            cfg.validate()
                .unwrap_err()
                .to_string()
                .contains("reference_batch")
        );
    }
}
