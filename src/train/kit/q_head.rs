//! The Q-networks' head: how their outputs become Q-values and what loss trains them. One output
//! per action regressed with MSE or Huber, or `bins` logits per action trained with HL-Gauss
//! cross-entropy and read as the histogram's expectation ([`crate::critic::hl_gauss`]). PQN and
//! IQL read every network output through [`QHead::q_values`] (acting, greedy actions,
//! bootstrapping, the `Learner` seam's Q-values), so both heads act and bootstrap alike.

use crate::critic::hl_gauss::Support;
use crate::critic::loss::Loss;
use crate::train::config::{Algo, RunConfig, ValueLoss};

/// The head a run's configuration asks for (`loss`, `huber_delta`, `bins`, `v_min`, `v_max`,
/// `sigma`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum QHead {
    /// One output per action, `0.5 (Q - y)^2`.
    Mse,
    /// One output per action, Huber with this threshold.
    Huber(f32),
    /// `bins` logits per action, HL-Gauss over this support.
    HlGauss(Support),
}

impl QHead {
    /// The head of `cfg`: `loss: default` is MSE for PQN and Huber for IQL and PR2-IQL (whose
    /// critic maps it onto its own row, `pr2::critic_row`); `sigma: 0` is the paper's `0.75`
    /// bin widths.
    pub(crate) fn of(cfg: &RunConfig) -> QHead {
        match (cfg.learn.loss, cfg.algo) {
            (ValueLoss::Mse, _) | (ValueLoss::Default, Algo::Pqn) => QHead::Mse,
            (ValueLoss::Huber, _) | (ValueLoss::Default, _) => QHead::Huber(cfg.learn.huber_delta),
            (ValueLoss::HlGauss, _) => QHead::HlGauss(Support {
                bins: cfg.learn.bins,
                v_min: cfg.learn.v_min,
                v_max: cfg.learn.v_max,
                sigma: if cfg.learn.sigma > 0.0 {
                    cfg.learn.sigma
                } else {
                    Support::default_sigma(cfg.learn.bins, cfg.learn.v_min, cfg.learn.v_max)
                },
            }),
        }
    }

    /// Network outputs per action.
    pub(crate) fn outputs_per_action(&self) -> usize {
        match self {
            QHead::HlGauss(s) => s.bins,
            QHead::Mse | QHead::Huber(_) => 1,
        }
    }

    /// Q-values `[R, A]` from network outputs `[R, A x outputs_per_action]`.
    pub(crate) fn q_values(&self, out: Vec<f32>) -> Vec<f32> {
        match self {
            QHead::HlGauss(s) => s.q_values(&out),
            QHead::Mse | QHead::Huber(_) => out,
        }
    }

    /// The loss of the chosen `actions` against the value `targets` (one per row).
    pub(crate) fn loss<'a>(&self, actions: &'a [u32], targets: &'a [f32]) -> Loss<'a> {
        self.masked_loss(actions, targets, None)
    }

    /// [`QHead::loss`] with a weight per row (0 leaves a row out; the mean is over the
    /// weights' sum).
    pub(crate) fn masked_loss<'a>(
        &self,
        actions: &'a [u32],
        targets: &'a [f32],
        mask: Option<&'a [f32]>,
    ) -> Loss<'a> {
        match *self {
            QHead::Mse => Loss::Mse {
                actions,
                targets,
                mask,
            },
            QHead::Huber(delta) => Loss::Huber {
                delta,
                actions,
                targets,
                mask,
            },
            QHead::HlGauss(s) => Loss::HlGauss {
                bins: s.bins,
                v_min: s.v_min,
                v_max: s.v_max,
                sigma: s.sigma,
                actions,
                targets,
                mask,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::config::LearnConfig;

    #[test]
    fn the_default_loss_is_mse_for_pqn_and_huber_for_iql() {
        let pqn = RunConfig::default();
        assert_eq!(QHead::of(&pqn), QHead::Mse);
        let iql = RunConfig {
            algo: Algo::Iql,
            ..RunConfig::default()
        };
        assert_eq!(QHead::of(&iql), QHead::Huber(1.0));
    }

    #[test]
    fn hl_gauss_has_bins_outputs_per_action_and_the_default_sigma() {
        let cfg = RunConfig {
            learn: LearnConfig {
                loss: ValueLoss::HlGauss,
                bins: 20,
                v_min: -5.0,
                v_max: 5.0,
                sigma: 0.0,
                ..Default::default()
            },
            ..RunConfig::default()
        };
        let head = QHead::of(&cfg);
        assert_eq!(head.outputs_per_action(), 20);
        let QHead::HlGauss(s) = head else {
            panic!("{head:?}")
        };
        assert!((s.sigma - 0.375).abs() < 1e-6);
        // Two actions whose logits put all mass on the first and last bin.
        let mut out = vec![0.0f32; 40];
        out[0] = 50.0;
        out[39] = 50.0;
        let q = head.q_values(out);
        assert!(
            (q[0] + 4.75).abs() < 1e-4 && (q[1] - 4.75).abs() < 1e-4,
            "{q:?}"
        );
    }

    #[test]
    fn hl_gauss_fields_are_validated_for_every_learner() {
        let mut c = RunConfig::default();
        c.set("loss=hl_gauss").unwrap();
        c.validate().unwrap();
        for (set, field) in [
            ("bins=1", "bins"),
            ("bins=2000", "bins"),
            ("v_max=-20.0", "v_max"),
            ("sigma=-1.0", "sigma"),
            ("huber_delta=0.0", "huber_delta"),
        ] {
            let mut bad = c.clone();
            bad.set(set).unwrap();
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(field), "{set}: {e}");
        }
        // PR2-IQL takes it too (its factorised critic makes the own terms categorical), and
        // checks the same fields.
        c.set("algo=pr2_iql").unwrap();
        c.validate().unwrap();
        let mut bad = c.clone();
        bad.set("bins=1").unwrap();
        assert!(bad.validate().unwrap_err().to_string().contains("bins"));
    }
}
