use proptest::prelude::*;

use super::{Terms, rewrite};

/// The authors' opponent loss for learner 0 of one two-player episode of `T` steps (method
/// `loaded-dice`, `differentiable_current_reward: false`), as a function of learner 0's
/// log-probabilities `x`, in f64. Loaded DiCE's magic box `exp(z - stop_gradient(z))` is
/// written with `z` at the base point `x0` held fixed, so the function's derivative at `x0` is
/// the gradient the authors' code takes.
struct Episode {
    /// Learner 0's advantage at each step (constant in `x`).
    adv: Vec<f64>,
    /// The opponent's rewards and value estimates.
    op_rewards: Vec<f64>,
    op_values: Vec<f64>,
    /// The opponent's Q-values `[T, 2]` and the action it took.
    op_q: Vec<[f64; 2]>,
    op_action: Vec<usize>,
    gamma: f64,
    delta: f64,
    tau: f64,
}

impl Episode {
    fn steps(&self) -> usize {
        self.adv.len()
    }

    /// The opponent's discounted return from each step.
    fn op_returns(&self) -> Vec<f64> {
        let mut g = vec![0.0; self.steps()];
        let mut acc = 0.0;
        for t in (0..self.steps()).rev() {
            acc = self.op_rewards[t] + self.gamma * acc;
            g[t] = acc;
        }
        g
    }

    /// The differentiable Q-value of the opponent's taken action at each step.
    fn taken_q(&self, x: &[f64], x0: &[f64]) -> Vec<f64> {
        let n = self.steps();
        let cum = |x: &[f64], k: usize| 1.0 + x[..=k].iter().sum::<f64>();
        let mb = |k: Option<usize>| match k {
            None => 1.0,
            Some(k) => (cum(x, k) - cum(x0, k)).exp(),
        };
        let dice: Vec<f64> = (0..n).map(|k| mb(Some(k)) - mb(k.checked_sub(1))).collect();
        let g = self.op_returns();
        let mut zero = vec![0.0; n];
        let mut acc = 0.0;
        for k in (0..n).rev() {
            acc = (g[k] - self.op_values[k]) * dice[k] + self.gamma * self.delta * acc;
            zero[k] = acc;
        }
        let returns: Vec<f64> = (0..n).map(|k| g[k] + zero[k]).collect();
        (0..n)
            .map(|t| match t + 1 < n {
                true => self.op_rewards[t] + self.gamma * returns[t + 1],
                false => self.op_rewards[t],
            })
            .collect()
    }

    /// The opponent's log-probability of its action under `softmax(Q / tau)` with the taken
    /// action's Q-value replaced.
    fn op_logps(&self, x: &[f64], x0: &[f64]) -> Vec<f64> {
        let q = self.taken_q(x, x0);
        (0..self.steps())
            .map(|t| {
                let mut row = self.op_q[t];
                row[self.op_action[t]] = q[t];
                let z = [row[0] / self.tau, row[1] / self.tau];
                let m = z[0].max(z[1]);
                let lse = m + ((z[0] - m).exp() + (z[1] - m).exp()).ln();
                z[self.op_action[t]] - lse
            })
            .collect()
    }

    /// `-loss_opponent`: what the learner climbs.
    fn objective(&self, x: &[f64], x0: &[f64]) -> f64 {
        let lp = self.op_logps(x, x0);
        lp.iter().zip(&self.adv).map(|(l, a)| l * a).sum::<f64>() / self.steps() as f64
    }
}

/// An episode from `seed` with `n` steps.
fn episode(seed: u64, n: usize, (gamma, delta, tau): (f64, f64, f64)) -> Episode {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % 2001) as f64 / 1000.0 - 1.0
    };
    Episode {
        adv: (0..n).map(|_| next()).collect(),
        op_rewards: (0..n).map(|_| next() * 2.0).collect(),
        op_values: (0..n).map(|_| next() * 3.0).collect(),
        op_q: (0..n).map(|_| [next() * 3.0, next() * 3.0]).collect(),
        op_action: (0..n).map(|_| usize::from(next() > 0.0)).collect(),
        gamma,
        delta,
        tau,
    }
}

/// The rewrite's extra term for learner 0 of `e` (one arena, two learners, the episode ending
/// at its last step), divided by T: what the opponent loss adds to each own log-probability's
/// weight.
fn rewrite_term(e: &Episode, weight: f32) -> Vec<f64> {
    let n = e.steps();
    let x0 = vec![-0.5; n];
    // The rows: learner 0, then the opponent (learner 1), per step.
    let g = e.op_returns();
    let q = e.taken_q(&x0, &x0);
    let mut adv = vec![0.0f32; 2 * n];
    let mut mc = vec![0.0f32; 2 * n];
    let mut logp = vec![0.0f32; 2 * n];
    for t in 0..n {
        adv[2 * t] = e.adv[t] as f32;
        mc[2 * t + 1] = (g[t] - e.op_values[t]) as f32;
        let mut row = e.op_q[t];
        row[e.op_action[t]] = q[t];
        let z = [row[0] / e.tau, row[1] / e.tau];
        let m = z[0].max(z[1]);
        logp[2 * t + 1] =
            (z[e.op_action[t]] - m - ((z[0] - m).exp() + (z[1] - m).exp()).ln()) as f32;
    }
    let mut flags = vec![0.0f32; 2 * n];
    flags[2 * (n - 1)] = 1.0;
    flags[2 * (n - 1) + 1] = 1.0;
    let before = adv.clone();
    let terms = Terms {
        weight,
        gamma: e.gamma as f32,
        discount: e.delta as f32,
        temperature: e.tau as f32,
    };
    rewrite(
        &mut adv,
        (&mc, &logp),
        (&flags, &vec![0.0; 2 * n]),
        (2, 2),
        terms,
    );
    (0..n)
        .map(|t| (adv[2 * t] - before[2 * t]) as f64 / n as f64)
        .collect()
}

#[test]
fn the_rewrite_is_the_gradient_of_the_authors_opponent_loss() {
    for (seed, n, consts) in [
        (3, 6, (0.96, 1.0, 1.0)),
        (17, 9, (0.9, 0.7, 0.5)),
        (91, 4, (0.99, 1.0, 2.0)),
    ] {
        let e = episode(seed, n, consts);
        let x0 = vec![-0.5; n];
        let h = 1e-6;
        let want: Vec<f64> = (0..n)
            .map(|k| {
                let (mut up, mut down) = (x0.clone(), x0.clone());
                up[k] += h;
                down[k] -= h;
                (e.objective(&up, &x0) - e.objective(&down, &x0)) / (2.0 * h)
            })
            .collect();
        let got = rewrite_term(&e, 1.0);
        for k in 0..n {
            assert!(
                (got[k] - want[k]).abs() <= 1e-5 * (1.0 + want[k].abs()),
                "seed {seed}, step {k}: rewrite {} against the loss's gradient {}",
                got[k],
                want[k]
            );
        }
        // The first step has no past: the opponent's choices before it cannot be moved.
        assert_eq!(got[0], 0.0);
        assert!(want.iter().skip(1).any(|w| w.abs() > 1e-3), "{want:?}");
    }
}

#[test]
fn weight_zero_is_ippo_and_the_weight_scales_the_term() {
    let e = episode(5, 7, (0.96, 1.0, 1.0));
    assert!(rewrite_term(&e, 0.0).iter().all(|&d| d == 0.0));
    let one = rewrite_term(&e, 1.0);
    let three = rewrite_term(&e, 3.0);
    for (a, b) in one.iter().zip(&three) {
        assert!((3.0 * a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} {b}");
    }
}

/// The definition, term by term in f64, for any number of arenas and learners.
fn reference(
    adv: &[f32],
    (mc, logp): (&[f32], &[f32]),
    done: &[bool],
    (rows, n): (usize, usize),
    (w, gamma, delta, tau): (f64, f64, f64, f64),
) -> Vec<f64> {
    let steps = adv.len() / rows;
    let mut out = vec![0.0; adv.len()];
    for row in 0..rows {
        let (first, i) = (row - row % n, row % n);
        for k in 0..steps {
            let start = (0..k)
                .rev()
                .find(|&t| done[t * rows + first])
                .map_or(0, |t| t + 1);
            let shaped: f64 = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    let c: f64 = (start..k)
                        .map(|t| {
                            let p = (logp[t * rows + first + j] as f64).exp();
                            (gamma * delta).powi((k - 1 - t) as i32)
                                * adv[t * rows + row] as f64
                                * (1.0 - p)
                                / tau
                        })
                        .sum();
                    c * mc[k * rows + first + j] as f64
                })
                .sum::<f64>()
                / (n - 1) as f64;
            out[k * rows + row] = adv[k * rows + row] as f64 + w * gamma * shaped;
        }
    }
    out
}

proptest! {
    #[test]
    fn matches_the_definition(
        arenas in 1usize..4,
        n in 2usize..5,
        steps in 1usize..12,
        w in 0.0f64..3.0,
        gamma in 0.0f64..1.0,
        delta in 0.0f64..1.0,
        tau in 0.2f64..3.0,
        seed in any::<u64>(),
    ) {
        let rows = arenas * n;
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut draw = |scale: f32| (next() % 2001) as f32 / 1000.0 * scale - scale;
        let adv: Vec<f32> = (0..steps * rows).map(|_| draw(2.0)).collect();
        let mc: Vec<f32> = (0..steps * rows).map(|_| draw(3.0)).collect();
        // Log-probabilities of a taken action: in (-4, 0].
        let logp: Vec<f32> = (0..steps * rows).map(|_| -(draw(2.0) + 2.0)).collect();
        let mut done = vec![false; steps * rows];
        let (mut terminated, mut truncated) = (vec![0.0; steps * rows], vec![0.0; steps * rows]);
        for t in 0..steps {
            for a in 0..arenas {
                let end = next() % 4;
                for s in 0..n {
                    let e = t * rows + a * n + s;
                    done[e] = end < 2;
                    if end == 0 { terminated[e] = 1.0 }
                    if end == 1 { truncated[e] = 1.0 }
                }
            }
        }
        let want = reference(&adv, (&mc, &logp), &done, (rows, n), (w, gamma, delta, tau));
        let mut got = adv.clone();
        let terms = Terms { weight: w as f32, gamma: gamma as f32, discount: delta as f32, temperature: tau as f32 };
        rewrite(&mut got, (&mc, &logp), (&terminated, &truncated), (rows, n), terms);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            prop_assert!((*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()), "entry {}: {} vs {}", k, g, w);
        }
    }
}
