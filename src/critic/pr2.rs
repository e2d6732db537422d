//! PR2's opponent-aware values without joint tensors (docs/algorithms.md). Agent i's critic is
//! factorised pairwise, `Q_i(s, a_i, a_-i) = f_i(s, a_i) + sum_{j != i} f_ij(s, a_i, a_j)`, so with
//! `a_i` fixed the opponent terms are independent and every quantity PR2 needs is exact from the
//! factors in O((N-1) |A|^2) per state instead of |A|^N:
//! - soft level-1 value `Q_i(a_i) = f_i + sum_j log sum_{a_j} exp f_ij(a_i, a_j)`;
//! - optimal opponent-conditional policy `rho_ij(a_j | a_i) = softmax_{a_j} f_ij(a_i, .)`;
//! - expectation under any factorised rho `E[Q_i] = f_i + sum_j sum_{a_j} rho_ij f_ij`;
//! - bootstrap value `max_{a_i} E_rho[Q_i]`.
//!
//! Layouts for one state: `f_i` is `[A]`; the pairwise terms `f_pair` are `[N-1, A, A]`
//! (opponent, own action, opponent action); `rho` has the same shape.

/// Builds low-rank pairwise terms `f_ij(a_i, a_j) = sum_k u_jk(a_i) v_jk(a_j)` from
/// `u` `[N-1, A, K]` and `v` `[N-1, A, K]` into `[N-1, A, A]`.
pub fn low_rank_pairs(
    u: &[f32],
    v: &[f32],
    opponents: usize,
    actions: usize,
    rank: usize,
) -> Vec<f32> {
    let mut out = vec![0.0f32; opponents * actions * actions];
    for j in 0..opponents {
        for ai in 0..actions {
            for aj in 0..actions {
                let ui = &u[(j * actions + ai) * rank..(j * actions + ai + 1) * rank];
                let vj = &v[(j * actions + aj) * rank..(j * actions + aj + 1) * rank];
                out[(j * actions + ai) * actions + aj] =
                    ui.iter().zip(vj).map(|(x, y)| x * y).sum();
            }
        }
    }
    out
}

fn log_sum_exp(z: &[f32]) -> f32 {
    let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    max + z.iter().map(|v| (v - max).exp()).sum::<f32>().ln()
}

/// The soft level-1 value per own action, `[A]`.
pub fn soft_value(f_i: &[f32], f_pair: &[f32]) -> Vec<f32> {
    let a = f_i.len();
    let opponents = f_pair.len() / (a * a);
    (0..a)
        .map(|ai| {
            f_i[ai]
                + (0..opponents)
                    .map(|j| log_sum_exp(&f_pair[(j * a + ai) * a..(j * a + ai + 1) * a]))
                    .sum::<f32>()
        })
        .collect()
}

/// The optimal factorised opponent-conditional policy, `[N-1, A, A]`.
pub fn rho(f_pair: &[f32], actions: usize) -> Vec<f32> {
    let mut out = f_pair.to_vec();
    for row in out.chunks_exact_mut(actions) {
        let lse = log_sum_exp(row);
        for v in row.iter_mut() {
            *v = (*v - lse).exp();
        }
    }
    out
}

/// `E_rho[Q_i(a_i, .)]` per own action, `[A]`, for any factorised `rho` `[N-1, A, A]`.
pub fn expectation(f_i: &[f32], f_pair: &[f32], rho: &[f32]) -> Vec<f32> {
    let a = f_i.len();
    let opponents = f_pair.len() / (a * a);
    (0..a)
        .map(|ai| {
            f_i[ai]
                + (0..opponents)
                    .map(|j| {
                        let row = (j * a + ai) * a..(j * a + ai + 1) * a;
                        f_pair[row.clone()]
                            .iter()
                            .zip(&rho[row])
                            .map(|(f, p)| f * p)
                            .sum::<f32>()
                    })
                    .sum::<f32>()
        })
        .collect()
}

/// The bootstrap value `max_{a_i} E_rho[Q_i]`.
pub fn bootstrap(f_i: &[f32], f_pair: &[f32], rho: &[f32]) -> f32 {
    expectation(f_i, f_pair, rho)
        .into_iter()
        .fold(f32::NEG_INFINITY, f32::max)
}

/// How a PR2 critic row is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadForm {
    /// `f_i` `[A]`, then `f_pair` `[N-1, A, A]`.
    Pairwise,
    /// `f_i` `[A]`, then `u` `[N-1, A, k]` and `v` `[N-1, A, k]` with `f_ij = u . v`.
    LowRank(usize),
    /// Every joint action, `[A, A^(N-1)]`: own action first, the others in slot order, the
    /// last other varying fastest.
    Joint,
}

/// The output row of agent i's PR2 critic: its width, the value of an observed joint action,
/// that value's gradient, and the expectations PR2 bootstraps from. Factorised forms never
/// build anything of size `A^(N-1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pr2Head {
    /// Agents N (the critic's own agent and N-1 others).
    pub agents: usize,
    /// Actions per agent A.
    pub actions: usize,
    /// The layout.
    pub form: HeadForm,
}

/// Scratch reused across rows (no allocation per row).
#[derive(Debug, Default, Clone)]
pub struct Scratch {
    pairs: Vec<f32>,
    rho: Vec<f32>,
    weights: Vec<f64>,
}

impl Pr2Head {
    /// Outputs per row; `None` when a joint head's `A^N` overflows.
    pub fn width_checked(&self) -> Option<u64> {
        let (n, a) = (self.agents as u64, self.actions as u64);
        match self.form {
            HeadForm::Pairwise => Some(a + (n - 1) * a * a),
            HeadForm::LowRank(k) => Some(a + 2 * (n - 1) * a * k as u64),
            HeadForm::Joint => a.checked_pow(n as u32),
        }
    }

    /// Outputs per row (saturating).
    pub fn width(&self) -> usize {
        self.width_checked()
            .map_or(usize::MAX, |w| usize::try_from(w).unwrap_or(usize::MAX))
    }

    /// The entries that hold a value of their own rather than a pairwise term (HL-Gauss makes
    /// each a categorical): the own terms `f_i` `[A]` of a factorised row, every joint action
    /// of a joint row. `None` when a joint head's `A^N` overflows.
    pub fn categorical_entries_checked(&self) -> Option<u64> {
        match self.form {
            HeadForm::Joint => self.width_checked(),
            HeadForm::Pairwise | HeadForm::LowRank(_) => Some(self.actions as u64),
        }
    }

    /// [`Pr2Head::categorical_entries_checked`] (saturating).
    pub fn categorical_entries(&self) -> usize {
        self.categorical_entries_checked()
            .map_or(usize::MAX, |w| usize::try_from(w).unwrap_or(usize::MAX))
    }

    /// The categorical entry of the observed joint action: `own`, or its joint index.
    pub fn categorical_index(&self, own: usize, others: &[u32]) -> usize {
        match self.form {
            HeadForm::Joint => self.joint_index(own, others),
            HeadForm::Pairwise | HeadForm::LowRank(_) => own,
        }
    }

    fn opponents(&self) -> usize {
        self.agents - 1
    }

    /// The pairwise tables `[N-1, A, A]` of a factorised row (built from `u`, `v` when low rank).
    fn pairs<'a>(&self, row: &'a [f32], scratch: &'a mut Vec<f32>) -> &'a [f32] {
        let (a, o) = (self.actions, self.opponents());
        match self.form {
            HeadForm::Pairwise | HeadForm::Joint => &row[a..],
            HeadForm::LowRank(k) => {
                scratch.clear();
                scratch.resize(o * a * a, 0.0);
                let (u, v) = row[a..].split_at(o * a * k);
                for j in 0..o {
                    for ai in 0..a {
                        let ur = &u[(j * a + ai) * k..(j * a + ai + 1) * k];
                        for aj in 0..a {
                            let vr = &v[(j * a + aj) * k..(j * a + aj + 1) * k];
                            scratch[(j * a + ai) * a + aj] =
                                ur.iter().zip(vr).map(|(x, y)| x * y).sum();
                        }
                    }
                }
                scratch
            }
        }
    }

    fn joint_index(&self, own: usize, others: &[u32]) -> usize {
        others
            .iter()
            .fold(own, |acc, &aj| acc * self.actions + aj as usize)
    }

    /// `Q_i(s, a_i, a_-i)` for the observed joint action (`others` in slot order without i).
    pub fn q_taken(&self, row: &[f32], own: usize, others: &[u32]) -> f32 {
        let a = self.actions;
        match self.form {
            HeadForm::Joint => row[self.joint_index(own, others)],
            HeadForm::Pairwise => {
                row[own]
                    + others
                        .iter()
                        .enumerate()
                        .map(|(j, &aj)| row[a + (j * a + own) * a + aj as usize])
                        .sum::<f32>()
            }
            HeadForm::LowRank(k) => {
                let o = self.opponents();
                let (u, v) = row[a..].split_at(o * a * k);
                row[own]
                    + others
                        .iter()
                        .enumerate()
                        .map(|(j, &aj)| {
                            let ur = &u[(j * a + own) * k..(j * a + own + 1) * k];
                            let vr = &v[(j * a + aj as usize) * k..(j * a + aj as usize + 1) * k];
                            ur.iter().zip(vr).map(|(x, y)| x * y).sum::<f32>()
                        })
                        .sum::<f32>()
            }
        }
    }

    /// Adds `g * dQ_taken / d row` into `d_row`.
    pub fn add_grad(&self, row: &[f32], own: usize, others: &[u32], g: f32, d_row: &mut [f32]) {
        let a = self.actions;
        match self.form {
            HeadForm::Joint => d_row[self.joint_index(own, others)] += g,
            HeadForm::Pairwise => {
                d_row[own] += g;
                for (j, &aj) in others.iter().enumerate() {
                    d_row[a + (j * a + own) * a + aj as usize] += g;
                }
            }
            HeadForm::LowRank(k) => {
                d_row[own] += g;
                let o = self.opponents();
                for (j, &aj) in others.iter().enumerate() {
                    let (ui, vi) = (
                        a + (j * a + own) * k,
                        a + o * a * k + (j * a + aj as usize) * k,
                    );
                    for x in 0..k {
                        d_row[ui + x] += g * row[vi + x];
                        d_row[vi + x] += g * row[ui + x];
                    }
                }
            }
        }
    }

    /// `E_rho[Q_i(s, a_i, .)]` per own action into `out` `[A]`. `model` is a factorised rho
    /// `[N-1, A, A]` (probabilities); `None` uses the soft-optimal rho of the row itself
    /// (`softmax_{a_j} f_ij(a_i, .)`; for a joint row `softmax_{a_-i} Q(a_i, .)`).
    pub fn expectation(
        &self,
        row: &[f32],
        model: Option<&[f32]>,
        scratch: &mut Scratch,
        out: &mut [f32],
    ) {
        let (a, o) = (self.actions, self.opponents());
        if self.form == HeadForm::Joint {
            let m = row.len() / a;
            for (ai, v) in out.iter_mut().enumerate() {
                let block = &row[ai * m..(ai + 1) * m];
                scratch.weights.clear();
                match model {
                    None => {
                        let max = block.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                        scratch
                            .weights
                            .extend(block.iter().map(|q| ((q - max) as f64).exp()));
                    }
                    Some(rho) => scratch.weights.extend((0..m).map(|c| {
                        let mut c = c;
                        let mut p = 1.0f64;
                        for j in (0..o).rev() {
                            p *= rho[(j * a + ai) * a + c % a] as f64;
                            c /= a;
                        }
                        p
                    })),
                }
                let z: f64 = scratch.weights.iter().sum();
                *v = (block
                    .iter()
                    .zip(&scratch.weights)
                    .map(|(q, w)| *q as f64 * w)
                    .sum::<f64>()
                    / z) as f32;
            }
            return;
        }
        let Scratch {
            pairs, rho: soft, ..
        } = scratch;
        let f_pair = self.pairs(row, pairs);
        let rho = match model {
            Some(r) => r,
            None => {
                soft.clear();
                soft.extend_from_slice(f_pair);
                for r in soft.chunks_exact_mut(a) {
                    let lse = log_sum_exp(r);
                    for v in r.iter_mut() {
                        *v = (*v - lse).exp();
                    }
                }
                &soft[..]
            }
        };
        for (ai, v) in out.iter_mut().enumerate() {
            *v = row[ai]
                + (0..o)
                    .map(|j| {
                        let r = (j * a + ai) * a..(j * a + ai + 1) * a;
                        f_pair[r.clone()]
                            .iter()
                            .zip(&rho[r])
                            .map(|(f, p)| f * p)
                            .sum::<f32>()
                    })
                    .sum::<f32>();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
            })
            .collect()
    }

    /// Brute force over the joint action of the opponents (|A|^(N-1) terms).
    fn joint(f_i: &[f32], f_pair: &[f32], a: usize, opponents: usize) -> (Vec<f64>, Vec<f64>) {
        let combos = a.pow(opponents as u32);
        let mut soft = vec![0.0f64; a];
        let mut expect = vec![0.0f64; a];
        for ai in 0..a {
            let q = |c: usize| -> f64 {
                let mut c = c;
                let mut v = f_i[ai] as f64;
                for j in 0..opponents {
                    let aj = c % a;
                    c /= a;
                    v += f_pair[(j * a + ai) * a + aj] as f64;
                }
                v
            };
            let qs: Vec<f64> = (0..combos).map(q).collect();
            let max = qs.iter().copied().fold(f64::MIN, f64::max);
            let z: f64 = qs.iter().map(|v| (v - max).exp()).sum();
            // The soft value is log sum exp over the joint (f_i factors out of the sum).
            soft[ai] = max + z.ln();
            // The optimal joint rho is softmax over the joint of the pairwise sum.
            let pair_only: Vec<f64> = qs.iter().map(|v| v - f_i[ai] as f64).collect();
            let pm = pair_only.iter().copied().fold(f64::MIN, f64::max);
            let pz: f64 = pair_only.iter().map(|v| (v - pm).exp()).sum();
            expect[ai] = (0..combos)
                .map(|c| (pair_only[c] - pm).exp() / pz * qs[c])
                .sum();
        }
        // soft[ai] includes f_i once: log sum exp (f_i + pairs) = f_i + log sum exp pairs.
        (soft, expect)
    }

    #[test]
    fn factorised_values_equal_brute_force_over_the_joint_action() {
        for (agents, actions) in [(3usize, 3usize), (4, 4)] {
            for seed in 0..20 {
                let opponents = agents - 1;
                let f_i = values(actions, seed);
                let f_pair = values(opponents * actions * actions, seed + 100);
                let (soft, expect) = joint(&f_i, &f_pair, actions, opponents);
                let rho = rho(&f_pair, actions);
                for (x, y) in soft_value(&f_i, &f_pair).iter().zip(&soft) {
                    assert!(
                        (*x as f64 - y).abs() < 1e-4,
                        "{agents}x{actions} seed {seed}: soft {x} vs {y}"
                    );
                }
                for (x, y) in expectation(&f_i, &f_pair, &rho).iter().zip(&expect) {
                    assert!(
                        (*x as f64 - y).abs() < 1e-4,
                        "{agents}x{actions} seed {seed}: E {x} vs {y}"
                    );
                }
                let best = expect.iter().copied().fold(f64::MIN, f64::max);
                assert!((bootstrap(&f_i, &f_pair, &rho) as f64 - best).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn rho_rows_are_distributions_and_low_rank_terms_multiply_out() {
        let f_pair = values(2 * 3 * 3, 7);
        for row in rho(&f_pair, 3).chunks_exact(3) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        }
        // Rank 1: f(a_i, a_j) = u(a_i) v(a_j).
        let (u, v) = (vec![1.0, 2.0, 3.0], vec![0.5, -1.0, 2.0]);
        let f = low_rank_pairs(&u, &v, 1, 3, 1);
        assert_eq!(f[2 * 3 + 1], -3.0, "u(2) v(1)");
        assert_eq!(f[3 + 2], 2.0 * 2.0);
    }

    /// Brute force over the opponents' joint action of `E_rho[Q]` for a Pr2Head row.
    fn brute_expectation(head: &Pr2Head, row: &[f32], model: Option<&[f32]>) -> Vec<f64> {
        let (a, o) = (head.actions, head.agents - 1);
        let combos = a.pow(o as u32);
        (0..a)
            .map(|ai| {
                let mut others = vec![0u32; o];
                let (mut num, mut den) = (0.0f64, 0.0f64);
                let qs: Vec<f64> = (0..combos)
                    .map(|c| {
                        let mut c = c;
                        for j in (0..o).rev() {
                            others[j] = (c % a) as u32;
                            c /= a;
                        }
                        head.q_taken(row, ai, &others) as f64
                    })
                    .collect();
                let max = qs.iter().copied().fold(f64::MIN, f64::max);
                for (c, q) in qs.iter().enumerate() {
                    let w = match model {
                        None => (q - max).exp(),
                        Some(rho) => {
                            let mut c = c;
                            let mut p = 1.0;
                            for j in (0..o).rev() {
                                p *= rho[(j * a + ai) * a + c % a] as f64;
                                c /= a;
                            }
                            p
                        }
                    };
                    num += w * q;
                    den += w;
                }
                num / den
            })
            .collect()
    }

    #[test]
    fn every_head_form_matches_brute_force_and_its_gradient_is_exact() {
        for (agents, actions) in [(3usize, 3usize), (4, 4)] {
            for form in [HeadForm::Pairwise, HeadForm::LowRank(2), HeadForm::Joint] {
                let head = Pr2Head {
                    agents,
                    actions,
                    form,
                };
                let w = head.width();
                let row = values(w, agents as u64 * 31 + w as u64);
                let model = rho(&values((agents - 1) * actions * actions, 5), actions);
                let mut scratch = Scratch::default();
                let mut out = vec![0.0f32; actions];
                for m in [None, Some(&model[..])] {
                    head.expectation(&row, m, &mut scratch, &mut out);
                    let want = brute_expectation(&head, &row, m);
                    // The soft rho of a factorised row is the soft rho over the joint (the
                    // pairwise terms are independent given a_i); a joint row's soft rho is
                    // the joint softmax by definition.
                    for (x, y) in out.iter().zip(&want) {
                        assert!(
                            (*x as f64 - y).abs() < 1e-4,
                            "{form:?} {agents}x{actions} model {}: {x} vs {y}",
                            m.is_some()
                        );
                    }
                }
                // Gradient of Q_taken against central differences.
                let others: Vec<u32> = (0..agents - 1).map(|j| (j % actions) as u32).collect();
                let own = actions - 1;
                let mut grad = vec![0.0f32; w];
                head.add_grad(&row, own, &others, 1.0, &mut grad);
                for p in 0..w {
                    let (mut up, mut down) = (row.clone(), row.clone());
                    up[p] += 1e-2;
                    down[p] -= 1e-2;
                    let fd = (head.q_taken(&up, own, &others) - head.q_taken(&down, own, &others))
                        / 2e-2;
                    assert!(
                        (fd - grad[p]).abs() < 1e-3,
                        "{form:?} param {p}: {fd} vs {}",
                        grad[p]
                    );
                }
            }
        }
    }

    #[test]
    fn joint_widths_overflow_into_none_not_a_panic() {
        let head = Pr2Head {
            agents: 6,
            actions: 9,
            form: HeadForm::Joint,
        };
        assert_eq!(head.width_checked(), Some(531_441));
        let huge = Pr2Head {
            agents: 40,
            actions: 9,
            form: HeadForm::Joint,
        };
        assert_eq!(huge.width_checked(), None);
        let f = Pr2Head {
            form: HeadForm::Pairwise,
            ..head
        };
        assert_eq!(f.width(), 9 + 5 * 81);
    }
}
