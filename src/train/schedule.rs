//! Schedules every learner shares: the learning rate with the optimiser settings, and the
//! exploration rate (linear decay over updates for PQN, over environment steps for the replay
//! learners).

use super::config::RunConfig;
use crate::critic::AdamConfig;

/// The learning rate at `update` (linear decay to 0 over the run when `lr_decay`) and the
/// optimiser settings every learner uses.
pub fn optimiser(cfg: &RunConfig, update: u64) -> (f32, AdamConfig) {
    let progress = update as f32 / cfg.updates().max(1) as f32;
    let lr = if cfg.lr_decay {
        cfg.lr * (1.0 - progress).max(0.0)
    } else {
        cfg.lr
    };
    let adam = AdamConfig {
        lr: lr.max(1e-12),
        max_grad_norm: Some(cfg.max_grad_norm),
        radam: cfg.radam,
        ..AdamConfig::default()
    };
    (lr, adam)
}

/// Linear from `eps_start` to `eps_finish` as `done` goes from 0 to `eps_fraction x total`.
fn linear_epsilon(cfg: &RunConfig, done: u64, total: u64) -> f32 {
    let horizon = (cfg.eps_fraction as f64 * total as f64).max(1.0);
    let frac = (done as f64 / horizon).min(1.0) as f32;
    cfg.eps_start + (cfg.eps_finish - cfg.eps_start) * frac
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
