//! The value loss of PR2's critic, and how its network rows become [`Pr2Head`] rows
//! (docs/algorithms.md, PR2, "Value loss").
//!
//! With MSE or Huber the network row is the head's row and the loss is on the taken joint
//! action's `Q_i(s, a_i, a_-i)`. With HL-Gauss the head's *categorical entries* (the own terms
//! `f_i(s, a_i)` of a factorised head; every joint action of a joint one) are each `bins` logits
//! over `[v_min, v_max]` whose value is the histogram's expectation, and the pairwise terms stay
//! scalar:
//!
//! ```text
//! Q_i(s, a_i, a_-i) = E[Z_i(s, a_i)] + sum_j f_ij(s, a_i, a_j)
//! ```
//!
//! so the head's row is the network row with each categorical block replaced by its expectation,
//! and every PR2 quantity (soft value, rho, expectation, bootstrap) stays exact and additive.
//! A trained row's loss has two parts, each training only its own outputs. The own logits take
//! the cross-entropy between the HL-Gauss histogram of the *shifted* target
//! `t = y - sum_j f_ij(s, a_i, a_j)` and `softmax(z_i(s, a_i))`: the critic's return
//! distribution for the taken joint action is the own categorical translated by the pairwise
//! sum, so this is HL-Gauss in the frame of the own support. The pairwise terms take PR2's
//! default Huber loss on `Q_i(s, a_i, a_-i) - y`. Neither part sends a gradient to the other's
//! outputs (through `E[Z_i]` or through `t`): differentiating the cross-entropy through the
//! histogram would scale the pairwise gradient by about `1 / Var(Z_i)`, starving the pairwise
//! terms while the own distribution is wide because they do not yet explain the other agents'
//! part (docs/algorithms.md, PR2, "Value loss", has the measurement).

use super::hl_gauss::Support;
use super::pr2::{Pr2Head, Scratch as HeadScratch};

/// The value loss of a PR2 critic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pr2ValueLoss {
    /// `0.5 (Q_taken - y)^2`.
    Mse,
    /// Huber with this threshold on `Q_taken - y`.
    Huber(f32),
    /// HL-Gauss over `support` on the categorical entries, with the target shifted by the
    /// taken pairwise terms; the pairwise terms take Huber with threshold `delta` on `Q - y`.
    HlGauss {
        /// The categorical entries' support.
        support: Support,
        /// The pairwise terms' Huber threshold.
        delta: f32,
    },
}

/// A PR2 critic's network row: its [`Pr2Head`] and the loss that trains it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pr2Loss {
    /// The head (the layout of the values).
    pub head: Pr2Head,
    /// The loss.
    pub loss: Pr2ValueLoss,
}

/// Buffers reused across rows (no allocation per row).
#[derive(Debug, Default, Clone)]
pub struct Scratch {
    head: HeadScratch,
    values: Vec<f32>,
    d_values: Vec<f32>,
    p: Vec<f32>,
}

impl Pr2Loss {
    /// Network outputs per categorical entry: HL-Gauss's `bins`, else 1.
    pub fn bins(&self) -> usize {
        match self.loss {
            Pr2ValueLoss::HlGauss { support, .. } => support.bins,
            Pr2ValueLoss::Mse | Pr2ValueLoss::Huber(_) => 1,
        }
    }

    /// Network outputs per row: the head's width with each categorical entry `bins` wide;
    /// `None` on overflow.
    pub fn width_checked(&self) -> Option<u64> {
        let cat = self.head.categorical_entries_checked()?;
        let extra = cat.checked_mul(self.bins() as u64 - 1)?;
        self.head.width_checked()?.checked_add(extra)
    }

    /// Network outputs per row (saturating).
    pub fn width(&self) -> usize {
        self.width_checked()
            .map_or(usize::MAX, |w| usize::try_from(w).unwrap_or(usize::MAX))
    }

    /// The head's row (`Pr2Head` layout, scalar values) of network row `row`: the row itself,
    /// or with HL-Gauss each categorical block's expectation followed by the pairwise entries.
    pub fn values<'a>(&self, row: &'a [f32], out: &'a mut Vec<f32>) -> &'a [f32] {
        let Pr2ValueLoss::HlGauss { support, .. } = self.loss else {
            return row;
        };
        let (bins, cat) = (support.bins, self.head.categorical_entries());
        out.clear();
        out.extend(
            row[..cat * bins]
                .chunks_exact(bins)
                .map(|z| support.expectation(z)),
        );
        out.extend_from_slice(&row[cat * bins..]);
        out
    }

    /// `E_rho[Q_i(s, a_i, .)]` per own action into `out` `[A]` from network row `row`
    /// ([`Pr2Head::expectation`] on its values).
    pub fn expectation(
        &self,
        row: &[f32],
        model: Option<&[f32]>,
        scratch: &mut Scratch,
        out: &mut [f32],
    ) {
        let Scratch { head, values, .. } = scratch;
        let values = self.values(row, values);
        self.head.expectation(values, model, head, out);
    }

    /// The loss of network row `row` at the taken joint action (`own`, `others` in slot order
    /// without i) against target `y`; adds `scale x` its gradient into `d_row` (with HL-Gauss,
    /// each part's gradient to its own outputs only, see the module doc).
    #[expect(
        clippy::too_many_arguments,
        reason = "one row's data, its gradient and the scratch"
    )]
    pub fn row_loss(
        &self,
        row: &[f32],
        own: usize,
        others: &[u32],
        y: f32,
        scale: f32,
        scratch: &mut Scratch,
        d_row: &mut [f32],
    ) -> f32 {
        let (support, delta) = match self.loss {
            Pr2ValueLoss::HlGauss { support, delta } => (support, delta),
            Pr2ValueLoss::Mse | Pr2ValueLoss::Huber(_) => {
                let delta = match self.loss {
                    Pr2ValueLoss::Huber(d) => Some(d),
                    _ => None,
                };
                let (value, grad) = regression(self.head.q_taken(row, own, others) - y, delta);
                self.head.add_grad(row, own, others, grad * scale, d_row);
                return value;
            }
        };
        let (bins, cat) = (support.bins, self.head.categorical_entries());
        let Scratch {
            values,
            d_values,
            p,
            ..
        } = scratch;
        // The head's row with the categorical entries zeroed: its Q_taken is the pairwise shift.
        values.clear();
        values.resize(cat, 0.0);
        values.extend_from_slice(&row[cat * bins..]);
        let shift = self.head.q_taken(values, own, others);
        p.resize(bins, 0.0);
        support.histogram(y - shift, p);
        let at = self.head.categorical_index(own, others) * bins;
        let z = &row[at..at + bins];
        let max = z.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let lse = max + z.iter().map(|&v| (v - max).exp()).sum::<f32>().ln();
        // -sum_j p_j log q_j with log q_j = z_j - lse; its gradient q_j - p_j (the p_j sum to 1).
        let mut loss = 0.0f32;
        for j in 0..bins {
            let log_q = z[j] - lse;
            loss -= p[j] * log_q;
            d_row[at + j] += scale * (log_q.exp() - p[j]);
        }
        if row.len() > cat * bins {
            // Huber on Q - y = E[Z] + shift - y for the pairwise terms, E[Z] held.
            let (value, grad) = regression(support.expectation(z) + shift - y, Some(delta));
            loss += value;
            d_values.clear();
            d_values.resize(values.len(), 0.0);
            self.head
                .add_grad(values, own, others, grad * scale, d_values);
            for (d, g) in d_row[cat * bins..].iter_mut().zip(&d_values[cat..]) {
                *d += g;
            }
        }
        loss
    }
}

/// `(loss, dloss/de)` of a regression error `e`: Huber with threshold `delta`, or `0.5 e^2`.
fn regression(e: f32, delta: Option<f32>) -> (f32, f32) {
    match delta {
        Some(d) if e.abs() > d => (d * (e.abs() - 0.5 * d), d * e.signum()),
        _ => (0.5 * e * e, e),
    }
}
