//! The optimiser's settings: Adam (or RAdam) with global-norm clipping, the per-network
//! learning rate and clip a replica may override, and what a step saw.

use serde::{Deserialize, Serialize};

/// The optimiser.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdamConfig {
    /// Learning rate.
    pub lr: f32,
    /// First-moment decay.
    pub beta1: f32,
    /// Second-moment decay.
    pub beta2: f32,
    /// Denominator epsilon.
    pub eps: f32,
    /// Clip each network's gradient to this global norm first (none: no clipping).
    pub max_grad_norm: Option<f32>,
    /// Rectified Adam (Liu et al. 2020) instead of Adam.
    pub radam: bool,
}

impl Default for AdamConfig {
    fn default() -> Self {
        AdamConfig {
            lr: 5e-4,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            max_grad_norm: Some(10.0),
            radam: false,
        }
    }
}

impl AdamConfig {
    /// The per-step scalars of an update at step `t` (1-based): the step size applied to
    /// `m_hat / (sqrt(v_hat) + eps)` and whether the adaptive term is used (RAdam falls back to
    /// SGD with momentum while the variance estimate is not yet tractable).
    pub fn schedule(&self, t: u64) -> (f32, f32, bool) {
        let t = t as f64;
        let (b1, b2) = (self.beta1 as f64, self.beta2 as f64);
        let bc1 = 1.0 - b1.powf(t);
        let bc2 = 1.0 - b2.powf(t);
        if !self.radam {
            return ((self.lr as f64 / bc1) as f32, bc2 as f32, true);
        }
        let rho_inf = 2.0 / (1.0 - b2) - 1.0;
        let rho_t = rho_inf - 2.0 * t * b2.powf(t) / bc2;
        if rho_t > 5.0 {
            let r = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
                .sqrt();
            ((self.lr as f64 * r / bc1) as f32, bc2 as f32, true)
        } else {
            ((self.lr as f64 / bc1) as f32, bc2 as f32, false)
        }
    }
}

/// One network's optimiser scalars, for stacks whose networks belong to different replicas
/// ([`CriticBackend::step_nets`]); the rest of the optimiser comes from the [`AdamConfig`].
///
/// [`CriticBackend::step_nets`]: crate::critic::CriticBackend::step_nets
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NetOptim {
    /// This network's learning rate (in place of [`AdamConfig::lr`]).
    pub lr: f32,
    /// Clip this network's gradient to this global norm first (none: no clipping), in place of
    /// [`AdamConfig::max_grad_norm`].
    pub max_grad_norm: Option<f32>,
}

impl From<&AdamConfig> for NetOptim {
    fn from(cfg: &AdamConfig) -> NetOptim {
        NetOptim {
            lr: cfg.lr,
            max_grad_norm: cfg.max_grad_norm,
        }
    }
}

impl AdamConfig {
    /// This configuration with one network's learning rate and clip: stepping a network with
    /// [`CriticBackend::step_nets`] is stepping it alone with `cfg.for_net(net)`.
    ///
    /// [`CriticBackend::step_nets`]: crate::critic::CriticBackend::step_nets
    pub fn for_net(&self, net: &NetOptim) -> AdamConfig {
        AdamConfig {
            lr: net.lr,
            max_grad_norm: net.max_grad_norm,
            ..*self
        }
    }
}

/// What one optimiser step saw.
#[derive(Debug, Clone, PartialEq)]
pub struct StepStats {
    /// Gradient norm of each network before clipping.
    pub grad_norms: Vec<f32>,
}
