//! The losses the learners need, as (loss, dL/d output) over a `[R, A]` output block. The CPU
//! backend calls these; the GPU backend runs `shaders/loss.wgsl`, tested against them.

use serde::{Deserialize, Serialize};

use super::hl_gauss::Support;

/// Which loss, with its per-row data (all in the caller's row order).
#[derive(Debug, Clone, Copy)]
pub enum Loss<'a> {
    /// `0.5 (Q[r, a_r] - y_r)^2` on the chosen action, weighted by the mask, averaged over the
    /// mask's sum (at least 1).
    Mse {
        /// Chosen action per row.
        actions: &'a [u32],
        /// Target per row.
        targets: &'a [f32],
        /// Weight per row (1 when absent).
        mask: Option<&'a [f32]>,
    },
    /// Huber with threshold `delta` on the chosen action, masked and averaged like `Mse`.
    Huber {
        /// Quadratic below, linear above.
        delta: f32,
        /// Chosen action per row.
        actions: &'a [u32],
        /// Target per row.
        targets: &'a [f32],
        /// Weight per row (1 when absent).
        mask: Option<&'a [f32]>,
    },
    /// Softmax cross-entropy over `groups` groups of `A / groups` logits per row (one group per
    /// predicted opponent), averaged over rows and groups (rows weighted by the mask).
    CrossEntropy {
        /// Groups per row.
        groups: usize,
        /// `[R, groups]` class per group.
        labels: &'a [u32],
        /// Weight per row (1 when absent).
        mask: Option<&'a [f32]>,
    },
    /// HL-Gauss (see [`super::hl_gauss`]): the head holds `bins` logits per action; the chosen
    /// action's logits `z` get `-sum_j p_j log softmax(z)_j` with `p` the target's histogram,
    /// masked and averaged like `Mse`. The other actions' logits get no gradient.
    HlGauss {
        /// Logits per action.
        bins: usize,
        /// Lower end of the support.
        v_min: f32,
        /// Upper end of the support.
        v_max: f32,
        /// Standard deviation of the target's normal.
        sigma: f32,
        /// Chosen action per row.
        actions: &'a [u32],
        /// Target per row (clipped to the support).
        targets: &'a [f32],
        /// Weight per row (1 when absent).
        mask: Option<&'a [f32]>,
    },
}

/// The loss kinds, without data (for configs and GPU uniforms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum LossKind {
    /// See [`Loss::Mse`].
    Mse,
    /// See [`Loss::Huber`].
    Huber(f32),
    /// See [`Loss::CrossEntropy`].
    CrossEntropy(usize),
    /// See [`Loss::HlGauss`].
    HlGauss(Support),
}

impl Loss<'_> {
    /// The kind.
    pub fn kind(&self) -> LossKind {
        match self {
            Loss::Mse { .. } => LossKind::Mse,
            Loss::Huber { delta, .. } => LossKind::Huber(*delta),
            Loss::CrossEntropy { groups, .. } => LossKind::CrossEntropy(*groups),
            Loss::HlGauss {
                bins,
                v_min,
                v_max,
                sigma,
                ..
            } => LossKind::HlGauss(Support {
                bins: *bins,
                v_min: *v_min,
                v_max: *v_max,
                sigma: *sigma,
            }),
        }
    }

    /// Checks the per-row data against `rows` rows and `head` outputs.
    pub fn check(&self, rows: usize, head: usize) -> Result<(), super::CriticError> {
        let shape = |what, expected, got| {
            if expected == got {
                Ok(())
            } else {
                Err(super::CriticError::Shape {
                    what,
                    expected,
                    got,
                })
            }
        };
        match self {
            Loss::Mse {
                actions,
                targets,
                mask,
            }
            | Loss::Huber {
                actions,
                targets,
                mask,
                ..
            }
            | Loss::HlGauss {
                actions,
                targets,
                mask,
                ..
            } => {
                // Outputs per action: 1, or HL-Gauss's bins.
                let count = match self.kind() {
                    LossKind::HlGauss(support) => {
                        if let Some(problem) = support.problem() {
                            return Err(super::CriticError::Loss(format!("HL-Gauss: {problem}")));
                        }
                        if !head.is_multiple_of(support.bins) {
                            return Err(super::CriticError::Shape {
                                what: "head width (actions x bins) divisible by bins",
                                expected: support.bins,
                                got: head,
                            });
                        }
                        head / support.bins
                    }
                    _ => head,
                };
                shape("actions", rows, actions.len())?;
                shape("targets", rows, targets.len())?;
                if let Some(m) = mask {
                    shape("mask", rows, m.len())?;
                }
                if let Some((row, &a)) = actions
                    .iter()
                    .enumerate()
                    .find(|(_, a)| **a as usize >= count)
                {
                    return Err(super::CriticError::Shape {
                        what: "action index (row in `expected`)",
                        expected: row,
                        got: a as usize,
                    });
                }
            }
            Loss::CrossEntropy {
                groups,
                labels,
                mask,
            } => {
                if *groups == 0 || !head.is_multiple_of(*groups) {
                    return Err(super::CriticError::Shape {
                        what: "head width divisible by groups",
                        expected: *groups,
                        got: head,
                    });
                }
                shape("labels", rows * groups, labels.len())?;
                if let Some(m) = mask {
                    shape("mask", rows, m.len())?;
                }
                let classes = head / groups;
                if let Some(&l) = labels.iter().find(|l| **l as usize >= classes) {
                    return Err(super::CriticError::Shape {
                        what: "class label below",
                        expected: classes,
                        got: l as usize,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Computes the loss of `out` (`[R, head]`, caller order) and writes dL/d out into `d_out`.
pub fn loss_and_grad(loss: &Loss, out: &[f32], head: usize, d_out: &mut [f32]) -> f32 {
    d_out.fill(0.0);
    let rows = out.len() / head;
    let weight = |mask: &Option<&[f32]>, r: usize| mask.map_or(1.0, |m| m[r]);
    match loss {
        Loss::Mse {
            actions,
            targets,
            mask,
        }
        | Loss::Huber {
            actions,
            targets,
            mask,
            ..
        } => {
            let delta = if let Loss::Huber { delta, .. } = loss {
                Some(*delta)
            } else {
                None
            };
            let total: f32 = (0..rows).map(|r| weight(mask, r)).sum::<f32>().max(1.0);
            let mut l = 0.0f64;
            for r in 0..rows {
                let w = weight(mask, r);
                let i = r * head + actions[r] as usize;
                let e = out[i] - targets[r];
                let (value, grad) = match delta {
                    Some(d) if e.abs() > d => (d * (e.abs() - 0.5 * d), d * e.signum()),
                    _ => (0.5 * e * e, e),
                };
                l += (w * value) as f64;
                d_out[i] = w * grad / total;
            }
            (l / total as f64) as f32
        }
        Loss::CrossEntropy {
            groups,
            labels,
            mask,
        } => {
            let classes = head / groups;
            let total: f32 =
                (0..rows).map(|r| weight(mask, r)).sum::<f32>().max(1.0) * *groups as f32;
            let mut l = 0.0f64;
            for r in 0..rows {
                let w = weight(mask, r);
                for g in 0..*groups {
                    let base = r * head + g * classes;
                    let logits = &out[base..base + classes];
                    let max = logits.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
                    let sum: f32 = logits.iter().map(|&x| (x - max).exp()).sum();
                    let label = labels[r * groups + g] as usize;
                    l += (w * (max + sum.ln() - logits[label])) as f64;
                    for c in 0..classes {
                        let p = (logits[c] - max).exp() / sum;
                        d_out[base + c] = w * (p - f32::from(c == label)) / total;
                    }
                }
            }
            (l / total as f64) as f32
        }
        Loss::HlGauss {
            actions,
            targets,
            mask,
            ..
        } => {
            let LossKind::HlGauss(support) = loss.kind() else {
                return 0.0;
            };
            let bins = support.bins;
            let total: f32 = (0..rows).map(|r| weight(mask, r)).sum::<f32>().max(1.0);
            let mut p = vec![0.0f32; bins];
            let mut l = 0.0f64;
            for r in 0..rows {
                let w = weight(mask, r);
                support.histogram(targets[r], &mut p);
                let base = r * head + actions[r] as usize * bins;
                let logits = &out[base..base + bins];
                let max = logits.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
                let sum: f32 = logits.iter().map(|&z| (z - max).exp()).sum();
                let lse = max + sum.ln();
                // -sum_j p_j (z_j - lse) = lse - sum_j p_j z_j, as the p_j sum to 1.
                let cross: f32 = p.iter().zip(logits).map(|(pj, z)| pj * z).sum();
                l += (w * (lse - cross)) as f64;
                for j in 0..bins {
                    let q = (logits[j] - max).exp() / sum;
                    d_out[base + j] = w * (q - p[j]) / total;
                }
            }
            (l / total as f64) as f32
        }
    }
}
