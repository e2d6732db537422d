//! The mixer against an f64 reference written from the formula, its gradients against central
//! finite differences of that reference, and its monotonicity for all inputs.

use proptest::prelude::*;

use super::{MixerShape, mix, mix_backward, mix_loss};

/// `Q_tot` of one row in f64, straight from `|w2|^T ELU(q^T |W1| + b1) + v`.
fn reference_row(shape: MixerShape, q: &[f64], h: &[f64]) -> f64 {
    let (n, e) = (shape.agents, shape.embed);
    let elu = |z: f64| if z > 0.0 { z } else { z.exp() - 1.0 };
    let mut total = h[n * e + 2 * e];
    for k in 0..e {
        let z: f64 = h[n * e + k] + (0..n).map(|i| q[i] * h[i * e + k].abs()).sum::<f64>();
        total += elu(z) * h[n * e + e + k].abs();
    }
    total
}

fn reference_loss(shape: MixerShape, q: &[f64], h: &[f64], y: &[f64]) -> f64 {
    let (n, w) = (shape.agents, shape.hyper_width());
    y.iter()
        .enumerate()
        .map(|(r, y)| {
            let t = reference_row(shape, &q[r * n..(r + 1) * n], &h[r * w..(r + 1) * w]);
            0.5 * (t - y).powi(2)
        })
        .sum::<f64>()
        / y.len() as f64
}

fn randoms(len: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0) * scale
        })
        .collect()
}

fn f32s(x: &[f64]) -> Vec<f32> {
    x.iter().map(|&v| v as f32).collect()
}

#[test]
fn the_mixed_value_matches_the_formula() {
    let shape = MixerShape {
        agents: 3,
        embed: 5,
    };
    let rows = 7;
    let q = randoms(rows * 3, 1, 2.0);
    let h = randoms(rows * shape.hyper_width(), 2, 1.0);
    let got = mix(shape, &f32s(&q), &f32s(&h)).unwrap();
    for r in 0..rows {
        let w = shape.hyper_width();
        let want = reference_row(shape, &q[r * 3..(r + 1) * 3], &h[r * w..(r + 1) * w]);
        assert!(
            (got[r] as f64 - want).abs() < 1e-5,
            "row {r}: {} vs {want}",
            got[r]
        );
    }
}

/// dL/dq and dL/dhyper (every W1, b1, w2 and v entry, weights of both signs, pre-activations
/// on both sides of ELU's kink) against central differences of the f64 loss.
#[test]
fn the_mixed_loss_gradients_match_finite_differences() {
    let shape = MixerShape {
        agents: 3,
        embed: 4,
    };
    let rows = 6;
    let q = randoms(rows * 3, 11, 2.0);
    let h = randoms(rows * shape.hyper_width(), 12, 1.0);
    let y = randoms(rows, 13, 3.0);
    let got = mix_loss(shape, &f32s(&q), &f32s(&h), &f32s(&y)).unwrap();
    let want = reference_loss(shape, &q, &h, &y);
    assert!(
        (got.loss as f64 - want).abs() < 1e-5 * (1.0 + want.abs()),
        "{} vs {want}",
        got.loss
    );
    let eps = 1e-6;
    let fd = |x: &[f64], k: usize, f: &dyn Fn(&[f64]) -> f64| {
        let mut x = x.to_vec();
        x[k] += eps;
        let up = f(&x);
        x[k] -= 2.0 * eps;
        (up - f(&x)) / (2.0 * eps)
    };
    let close = |a: f32, b: f64| (a as f64 - b).abs() < 1e-4 + 1e-3 * b.abs();
    for k in 0..q.len() {
        let want = fd(&q, k, &|x| reference_loss(shape, x, &h, &y));
        assert!(close(got.d_q[k], want), "dq[{k}]: {} vs {want}", got.d_q[k]);
    }
    for k in 0..h.len() {
        let want = fd(&h, k, &|x| reference_loss(shape, &q, x, &y));
        assert!(
            close(got.d_hyper[k], want),
            "dhyper[{k}]: {} vs {want}",
            got.d_hyper[k]
        );
    }
    assert!(got.d_hyper.iter().all(|g| g.is_finite()));
}

#[test]
fn bad_shapes_are_refused_not_panicked_on() {
    let shape = MixerShape {
        agents: 2,
        embed: 3,
    };
    assert!(mix(shape, &[1.0; 3], &[0.0; 10]).is_err());
    assert!(mix(shape, &[1.0; 2], &[0.0; 10]).is_err());
    assert!(mix_loss(shape, &[1.0; 2], &[0.0; 13], &[0.0; 2]).is_err());
    assert!(
        mix(
            MixerShape {
                agents: 0,
                embed: 3
            },
            &[],
            &[]
        )
        .is_err()
    );
}

proptest! {
    /// dQ_tot/dq_i >= 0 for every state (hypernetwork output) and every input: from the
    /// backward pass with an upstream 1, and as the value itself when q_i grows.
    #[test]
    fn the_mixer_is_monotonic_in_every_agent_value(
        agents in 1usize..5,
        embed in 1usize..9,
        seed in any::<u64>(),
        scale in 0.01f64..10.0,
        bump in 0.001f64..5.0,
    ) {
        let shape = MixerShape { agents, embed };
        let q = f32s(&randoms(agents, seed, scale));
        let h = f32s(&randoms(shape.hyper_width(), seed ^ 0x55, scale));
        let (d_q, _) = mix_backward(shape, &q, &h, &[1.0]).unwrap();
        for (i, g) in d_q.iter().enumerate() {
            prop_assert!(*g >= 0.0, "dQ_tot/dq_{} = {}", i, g);
        }
        let before = mix(shape, &q, &h).unwrap()[0];
        for i in 0..agents {
            let mut up = q.clone();
            up[i] += bump as f32;
            let after = mix(shape, &up, &h).unwrap()[0];
            prop_assert!(after >= before - 1e-4 * (1.0 + before.abs()), "q_{} up: {} -> {}", i, before, after);
        }
    }
}
