//! PR2's opponent-aware values without joint-action tensors (ALGORITHMS.md). Agent i's critic is
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
}
