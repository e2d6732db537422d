//! GAE against a hand-computed rollout; the PPO losses' gradients against central finite
//! differences of an f64 reference written from the definitions.

use super::*;
use crate::critic::ppo_loss::{policy_loss, value_loss};

/// Two rows, three steps. Row 0 truncates at t = 1 (bootstraps from its final observation's
/// value 4.0); row 1 terminates at t = 1 (its return stops there). Hand-computed with the
/// one-step errors: row 0, delta = (1.4, 4.6, 3.3), A_0 = 1.4 + 0.9 x 0.8 x 4.6 = 4.712;
/// row 1, delta = (1, 1, 1.9), A_0 = 1 + 0.72 x 1 = 1.72.
#[test]
fn gae_with_truncation_and_termination_equals_the_hand_computed_case() {
    let rewards = [1.0, 1.0, 2.0, 1.0, 3.0, 1.0];
    let values = [0.5, 0.0, 1.0, 0.0, 1.5, 0.0, 2.0, 1.0];
    let terminated = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0];
    let truncated = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
    let final_values = [0.0, 0.0, 4.0, 0.0, 0.0, 0.0];
    let steps = RolloutSteps {
        rows: 2,
        rewards: &rewards,
        terminated: &terminated,
        truncated: &truncated,
        q_max: &values,
        final_q: &final_values,
    };
    let (mut g, mut adv) = ([0.0; 6], [0.0; 6]);
    gae(&steps, 0.9, 0.8, &mut g, &mut adv);
    let want_adv = [4.712, 1.72, 4.6, 1.0, 3.3, 1.9];
    for (k, (a, w)) in adv.iter().zip(want_adv).enumerate() {
        assert!((a - w).abs() < 1e-5, "advantage {k}: {a} vs {w}");
    }
    let want_g = [5.212, 1.72, 5.6, 1.0, 4.8, 1.9];
    for (k, (a, w)) in g.iter().zip(want_g).enumerate() {
        assert!((a - w).abs() < 1e-5, "return {k}: {a} vs {w}");
    }
}

/// A small deterministic stream of numbers in [-1, 1).
fn numbers(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

struct Case {
    rows: usize,
    actions: usize,
    logits: Vec<f64>,
    mask: Vec<u8>,
    taken: Vec<u32>,
    old_logp: Vec<f64>,
    adv: Vec<f64>,
}

/// Rows with random logits, some actions masked, old log-probabilities that put the ratios
/// on both sides of the clipping range, advantages of both signs.
fn case(seed: u64) -> Case {
    let (rows, actions) = (12, 5);
    let logits: Vec<f64> = numbers(seed, rows * actions)
        .iter()
        .map(|x| 2.0 * x)
        .collect();
    let mut mask = vec![1u8; rows * actions];
    for r in (0..rows).step_by(3) {
        mask[r * actions + (r / 3) % actions] = 0;
    }
    let u = numbers(seed + 1, rows * 2);
    let mut taken = Vec::new();
    let mut old_logp = Vec::new();
    for r in 0..rows {
        let legal: Vec<usize> = (0..actions)
            .filter(|&a| mask[r * actions + a] != 0)
            .collect();
        let a = legal[((u[r] + 1.0) * 0.5 * legal.len() as f64) as usize % legal.len()];
        taken.push(a as u32);
        let lp = reference_logp(
            &logits[r * actions..(r + 1) * actions],
            &mask[r * actions..(r + 1) * actions],
        );
        // Ratios between exp(-0.6) and exp(0.6): clipped and not, with eps 0.2.
        old_logp.push(lp[a] - 0.6 * u[rows + r]);
    }
    let adv = numbers(seed + 2, rows).iter().map(|x| 3.0 * x).collect();
    Case {
        rows,
        actions,
        logits,
        mask,
        taken,
        old_logp,
        adv,
    }
}

fn reference_logp(z: &[f64], mask: &[u8]) -> Vec<f64> {
    let log_sum = z
        .iter()
        .zip(mask)
        .filter(|(_, m)| **m != 0)
        .map(|(x, _)| x.exp())
        .sum::<f64>()
        .ln();
    z.iter()
        .zip(mask)
        .map(|(x, m)| {
            if *m != 0 {
                x - log_sum
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect()
}

/// The policy loss from its definition, in f64.
fn reference_policy_loss(c: &Case, logits: &[f64], coefs: PpoCoefs) -> f64 {
    let (eps, ent) = (coefs.clip as f64, coefs.ent_coef as f64);
    let mut total = 0.0;
    for r in 0..c.rows {
        let z = &logits[r * c.actions..(r + 1) * c.actions];
        let lp = reference_logp(z, &c.mask[r * c.actions..(r + 1) * c.actions]);
        let ratio = (lp[c.taken[r] as usize] - c.old_logp[r]).exp();
        let surrogate = (ratio * c.adv[r]).min(ratio.clamp(1.0 - eps, 1.0 + eps) * c.adv[r]);
        let entropy: f64 = -lp
            .iter()
            .filter(|l| l.is_finite())
            .map(|l| l.exp() * l)
            .sum::<f64>();
        total += -surrogate - ent * entropy;
    }
    total / c.rows as f64
}

fn f32s(x: &[f64]) -> Vec<f32> {
    x.iter().map(|&v| v as f32).collect()
}

fn check_policy_gradient(coefs: PpoCoefs, seed: u64) {
    let c = case(seed);
    let mut d = vec![0.0f32; c.logits.len()];
    let t = policy_loss(
        &f32s(&c.logits),
        Some(&c.mask),
        (&c.taken, &f32s(&c.old_logp), &f32s(&c.adv)),
        coefs,
        &mut d,
    );
    let want = reference_policy_loss(&c, &c.logits, coefs);
    let got = t.surrogate as f64 - coefs.ent_coef as f64 * t.entropy as f64;
    assert!((got - want).abs() < 1e-4, "loss {got} vs reference {want}");
    assert!(
        t.clip_fraction > 0.0 && t.clip_fraction < 1.0,
        "the case clips some rows: {t:?}"
    );
    let h = 1e-6;
    for k in 0..c.logits.len() {
        let mut x = c.logits.clone();
        x[k] += h;
        let up = reference_policy_loss(&c, &x, coefs);
        x[k] -= 2.0 * h;
        let down = reference_policy_loss(&c, &x, coefs);
        let fd = (up - down) / (2.0 * h);
        assert!(
            (d[k] as f64 - fd).abs() < 1e-4 + 1e-3 * fd.abs(),
            "d loss / d logit {k}: analytic {} vs finite difference {fd}",
            d[k]
        );
    }
}

const COEFS: PpoCoefs = PpoCoefs {
    clip: 0.2,
    ent_coef: 0.0,
    vf_coef: 0.5,
    clip_value: true,
};

#[test]
fn the_clipped_surrogate_gradient_matches_finite_differences() {
    for seed in [1, 7, 23] {
        check_policy_gradient(COEFS, seed);
    }
}

#[test]
fn the_entropy_bonus_gradient_matches_finite_differences() {
    let only_entropy = |seed| {
        let mut c = case(seed);
        c.adv.iter_mut().for_each(|a| *a = 0.0);
        c
    };
    let coefs = PpoCoefs {
        ent_coef: 0.37,
        ..COEFS
    };
    let c = only_entropy(3);
    let mut d = vec![0.0f32; c.logits.len()];
    let t = policy_loss(
        &f32s(&c.logits),
        Some(&c.mask),
        (&c.taken, &f32s(&c.old_logp), &f32s(&c.adv)),
        coefs,
        &mut d,
    );
    assert!(
        t.entropy > 0.5,
        "random logits over 4-5 actions: {}",
        t.entropy
    );
    let h = 1e-6;
    for k in 0..c.logits.len() {
        let mut x = c.logits.clone();
        x[k] += h;
        let up = reference_policy_loss(&c, &x, coefs);
        x[k] -= 2.0 * h;
        let fd = (up - reference_policy_loss(&c, &x, coefs)) / (2.0 * h);
        assert!(
            (d[k] as f64 - fd).abs() < 1e-5 + 1e-3 * fd.abs(),
            "logit {k}: {} vs {fd}",
            d[k]
        );
    }
    // Both terms together.
    check_policy_gradient(coefs, 11);
}

fn reference_value_loss(v: &[f64], old: &[f64], g: &[f64], c: PpoCoefs) -> f64 {
    let eps = c.clip as f64;
    let total: f64 = (0..v.len())
        .map(|r| {
            let plain = (v[r] - g[r]).powi(2);
            let clipped = (old[r] + (v[r] - old[r]).clamp(-eps, eps) - g[r]).powi(2);
            0.5 * if c.clip_value {
                plain.max(clipped)
            } else {
                plain
            }
        })
        .sum();
    c.vf_coef as f64 * total / v.len() as f64
}

#[test]
fn the_value_loss_gradient_with_and_without_clipping_matches_finite_differences() {
    let v = numbers(5, 16);
    let old: Vec<f64> = v
        .iter()
        .zip(numbers(6, 16))
        .map(|(v, u)| v + 0.4 * u)
        .collect();
    let g: Vec<f64> = numbers(8, 16).iter().map(|x| 2.0 * x).collect();
    for clip_value in [true, false] {
        let c = PpoCoefs {
            clip_value,
            ..COEFS
        };
        let mut d = vec![0.0f32; 16];
        let loss = value_loss(&f32s(&v), &f32s(&old), &f32s(&g), c, &mut d);
        let want = reference_value_loss(&v, &old, &g, c);
        assert!((loss as f64 - want).abs() < 1e-5, "loss {loss} vs {want}");
        let h = 1e-6;
        for k in 0..16 {
            let mut x = v.clone();
            x[k] += h;
            let up = reference_value_loss(&x, &old, &g, c);
            x[k] -= 2.0 * h;
            let fd = (up - reference_value_loss(&x, &old, &g, c)) / (2.0 * h);
            assert!(
                (d[k] as f64 - fd).abs() < 1e-5 + 1e-3 * fd.abs(),
                "clip_value {clip_value}, d / d V_{k}: {} vs {fd}",
                d[k]
            );
        }
    }
    // The case has rows where the clipped term is the larger and V moved past the range.
    let clipped_rows = (0..16)
        .filter(|&r| {
            (v[r] - old[r]).abs() > 0.2 && {
                let ec = old[r] + (v[r] - old[r]).clamp(-0.2, 0.2) - g[r];
                ec * ec > (v[r] - g[r]).powi(2)
            }
        })
        .count();
    assert!(clipped_rows > 0, "no row exercises the clipped branch");
}

#[test]
fn sampling_follows_the_probabilities_and_never_picks_a_masked_action() {
    let mut logp = [0.0f32; 4];
    log_softmax(&[0.0, 1.0, 5.0, 2.0], Some(&[1, 1, 0, 1]), &mut logp);
    let mut counts = [0usize; 4];
    for k in 0..10_000 {
        counts[sample(&logp, (k as f32 + 0.5) / 10_000.0)] += 1;
    }
    assert_eq!(counts[2], 0);
    let p: Vec<f32> = logp.iter().map(|l| l.exp()).collect();
    for a in [0, 1, 3] {
        assert!(
            (counts[a] as f32 / 10_000.0 - p[a]).abs() < 1e-3,
            "{counts:?} vs {p:?}"
        );
    }
}
