//! Tests of the CPU GRU critic against finite differences and its own step function.

use super::*;
use crate::critic::gru::init_params;
use crate::critic::{LN_EPS, LayerOffsets, fill_uniform};
use rand_core::{Rng, SeedableRng};

const SPEC: GruSpec = GruSpec {
    input: 5,
    embed: 6,
    hidden: 4,
    head: 3,
};
/// Steps and sequences of the test blocks.
const T: usize = 9;
const B: usize = 3;
/// Sequence 1 starts a new episode at this step (sequence 2 at step 0).
const RESET_AT: usize = 4;

/// One block: parameters, inputs, initial hidden states, resets and a loss gradient.
#[derive(Clone)]
struct Case {
    params: Vec<f32>,
    x: Vec<f32>,
    h0: Vec<f32>,
    reset: Vec<u8>,
    dq: Vec<f32>,
}

/// `n` draws uniform in `[lo, hi]`.
fn uniform(rng: &mut impl Rng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut v = vec![0.0; n];
    fill_uniform(rng, &mut v, 0.5 * (hi - lo));
    v.iter().map(|u| u + 0.5 * (hi + lo)).collect()
}

fn case(seed: u64) -> Case {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut params = init_params(&SPEC, 1, seed);
    // Move the LayerNorm scale and shift off 1 and 0 (and everything else a little) so
    // that no gradient is checked only at a special point.
    for (p, d) in params
        .iter_mut()
        .zip(uniform(&mut rng, SPEC.params_per_net(), -0.2, 0.2))
    {
        *p += d;
    }
    let mut reset = vec![0u8; T * B];
    reset[RESET_AT * B + 1] = 1;
    reset[2] = 1;
    Case {
        params,
        x: uniform(&mut rng, T * B * SPEC.input, -2.0, 2.0),
        h0: uniform(&mut rng, B * SPEC.hidden, -0.9, 0.9),
        reset,
        dq: uniform(&mut rng, T * B * SPEC.head, -1.0, 1.0),
    }
}

/// Forward then backward of a case: Q-values, h_T, parameter gradients, gradient w.r.t. h0.
fn run(c: &Case) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut cache = GruCache::default();
    let mut q = vec![0.0; T * B * SPEC.head];
    let h_last = forward(&SPEC, &c.params, &c.x, &c.h0, &c.reset, &mut q, &mut cache)
        .unwrap()
        .to_vec();
    let mut grads = vec![0.0; SPEC.params_per_net()];
    let mut dh0 = vec![0.0; B * SPEC.hidden];
    backward(
        &SPEC,
        &c.params,
        &mut cache,
        &c.dq,
        &mut grads,
        Some(&mut dh0),
    )
    .unwrap();
    (q, h_last, grads, dh0)
}

/// The test's own f64 forward, one row at a time with plain loops: `[T, B, A]` Q-values.
fn forward64(spec: &GruSpec, p: &[f64], x: &[f64], h0: &[f64], reset: &[u8]) -> Vec<f64> {
    let o = spec.offsets();
    let (d, g, a) = (spec.input, spec.hidden, spec.head);
    let lin = |l: &LayerOffsets, v: &[f64]| -> Vec<f64> {
        (0..l.fan_out)
            .map(|j| {
                let w = &p[l.weight + j * l.fan_in..l.weight + (j + 1) * l.fan_in];
                p[l.bias + j] + w.iter().zip(v).map(|(w, v)| w * v).sum::<f64>()
            })
            .collect()
    };
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let batch = h0.len() / g;
    let mut h: Vec<Vec<f64>> = h0.chunks(g).map(|c| c.to_vec()).collect();
    let mut q = vec![0.0; reset.len() * a];
    for (i, &reset) in reset.iter().enumerate() {
        let b = i % batch;
        if reset != 0 {
            h[b] = vec![0.0; g];
        }
        let z = lin(&o.embed, &x[i * d..(i + 1) * d]);
        let n = z.len() as f64;
        let mean = z.iter().sum::<f64>() / n;
        let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let inv = 1.0 / (var + LN_EPS as f64).sqrt();
        let u: Vec<f64> = (0..z.len())
            .map(|j| {
                let e = &o.embed;
                (p[e.gamma + j] * (z[j] - mean) * inv + p[e.beta + j]).max(0.0)
            })
            .collect();
        let gi = lin(&o.input_gates, &u);
        let gh = lin(&o.hidden_gates, &h[b]);
        h[b] = (0..g)
            .map(|j| {
                let r = sig(gi[j] + gh[j]);
                let z = sig(gi[g + j] + gh[g + j]);
                let n = (gi[2 * g + j] + r * gh[2 * g + j]).tanh();
                (1.0 - z) * n + z * h[b][j]
            })
            .collect();
        q[i * a..(i + 1) * a].copy_from_slice(&lin(&o.head, &h[b]));
    }
    q
}

fn to64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&v| v as f64).collect()
}

/// BPTT against central differences of the f64 reference, for every element of every
/// parameter tensor and of h0, over 9 steps of 3 sequences with a reset inside one and at
/// the start of another. In f64 with eps = 1e-6 the difference quotient is exact to ~1e-9
/// (rounding ~1e-16 x |loss| / eps, truncation ~eps^2), so the tolerance only absorbs the
/// f32 arithmetic of the code under test: relative error ~1e-7 per operation over ~T
/// chained steps and sums of ~T x B terms, under 1e-4 x max(1, |g|) (observed: 3e-7).
#[test]
fn bptt_matches_finite_differences_of_an_f64_reference() {
    let c = case(3);
    let (q, _, grads, dh0) = run(&c);
    let (p64, x64, h64, dq64) = (to64(&c.params), to64(&c.x), to64(&c.h0), to64(&c.dq));
    let q64 = forward64(&SPEC, &p64, &x64, &h64, &c.reset);
    for (a, b) in q.iter().zip(&q64) {
        assert!(
            (*a as f64 - b).abs() < 1e-4 * (1.0 + b.abs()),
            "q {a} vs {b}"
        );
    }
    let loss = |p: &[f64], h0: &[f64]| -> f64 {
        let q = forward64(&SPEC, p, &x64, h0, &c.reset);
        q.iter().zip(&dq64).map(|(q, d)| q * d).sum()
    };
    let eps = 1e-6;
    let check = |name: &str, analytic: &[f32], fd: &dyn Fn(usize) -> f64| {
        let mut worst = 0.0f64;
        for (k, &a) in analytic.iter().enumerate() {
            let f = fd(k);
            let err = (a as f64 - f).abs() / f.abs().max(1.0);
            assert!(
                err < 1e-4,
                "{name}[{k}]: backward {a}, finite differences {f}"
            );
            worst = worst.max(err);
        }
        eprintln!(
            "{name}: {} values, worst scaled error {worst:.2e}",
            analytic.len()
        );
    };
    for t in SPEC.tensors() {
        let range = t.offset..t.offset + t.rows * t.cols;
        check(&t.name, &grads[range.clone()], &|k| {
            let mut p = p64.clone();
            p[t.offset + k] += eps;
            let up = loss(&p, &h64);
            p[t.offset + k] -= 2.0 * eps;
            (up - loss(&p, &h64)) / (2.0 * eps)
        });
    }
    check("h0", &dh0, &|k| {
        let mut h = h64.clone();
        h[k] += eps;
        let up = loss(&p64, &h);
        h[k] -= 2.0 * eps;
        (up - loss(&p64, &h)) / (2.0 * eps)
    });
    // Sequence 2 is reset at step 0: nothing reaches its h0.
    assert!(dh0[2 * SPEC.hidden..].iter().all(|&v| v == 0.0));
    assert!(dh0[..2 * SPEC.hidden].iter().any(|&v| v != 0.0));
}

#[test]
fn backward_adds_into_the_gradients() {
    let c = case(4);
    let (_, _, once, _) = run(&c);
    let mut cache = GruCache::default();
    let mut q = vec![0.0; T * B * SPEC.head];
    forward(&SPEC, &c.params, &c.x, &c.h0, &c.reset, &mut q, &mut cache).unwrap();
    let mut grads = vec![0.0; SPEC.params_per_net()];
    for _ in 0..2 {
        backward(&SPEC, &c.params, &mut cache, &c.dq, &mut grads, None).unwrap();
    }
    for (twice, once) in grads.iter().zip(&once) {
        assert!((twice - 2.0 * once).abs() <= 1e-6 * (1.0 + once.abs()));
    }
}

/// Inputs and hidden state before a reset change neither the Q-values from the reset on
/// nor, when the loss looks only at those, any gradient.
#[test]
fn a_reset_cuts_values_and_gradients() {
    let (g, a) = (SPEC.hidden, SPEC.head);
    let mut base = case(5);
    for t in 0..RESET_AT {
        base.dq[(t * B + 1) * a..(t * B + 2) * a].fill(0.0);
    }
    let mut other = base.clone();
    for t in 0..RESET_AT {
        let row = (t * B + 1) * SPEC.input;
        for v in &mut other.x[row..row + SPEC.input] {
            *v = 1.5 - *v;
        }
    }
    for v in &mut other.h0[g..2 * g] {
        *v = 0.3 - *v;
    }
    let (q1, _, grads1, dh1) = run(&base);
    let (q2, _, grads2, dh2) = run(&other);
    for t in 0..T {
        let seq1 = (t * B + 1) * a..(t * B + 2) * a;
        if t < RESET_AT {
            assert_ne!(q1[seq1.clone()], q2[seq1], "step {t} sees its own inputs");
        } else {
            assert_eq!(q1[seq1.clone()], q2[seq1], "step {t} is past the reset");
        }
    }
    assert_eq!(grads1, grads2);
    assert!(
        dh1[g..2 * g]
            .iter()
            .chain(&dh2[g..2 * g])
            .all(|&v| v == 0.0)
    );
    assert_eq!(dh1, dh2);
}

/// Acting one step at a time (zeroing a sequence's state where its episode starts) gives
/// what forward computes over the whole sequence.
#[test]
fn step_by_step_equals_forward() {
    let c = case(6);
    let (q, h_last, _, _) = run(&c);
    let (d, g, a) = (SPEC.input, SPEC.hidden, SPEC.head);
    let mut cache = GruCache::default();
    let mut h = c.h0.clone();
    let mut q_t = vec![0.0; B * a];
    for t in 0..T {
        for (hb, &reset) in h.chunks_exact_mut(g).zip(&c.reset[t * B..(t + 1) * B]) {
            if reset != 0 {
                hb.fill(0.0);
            }
        }
        let x = &c.x[t * B * d..(t + 1) * B * d];
        step(&SPEC, &c.params, x, &mut h, &mut q_t, &mut cache).unwrap();
        for (s, f) in q_t.iter().zip(&q[t * B * a..(t + 1) * B * a]) {
            assert!(
                (s - f).abs() <= 1e-6 * (1.0 + f.abs()),
                "step {t}: {s} vs {f}"
            );
        }
    }
    for (s, f) in h.iter().zip(&h_last) {
        assert!((s - f).abs() <= 1e-6, "h_T {s} vs {f}");
    }
}

/// A sized cache is reused (no buffer moves for the same or a smaller block), and holds
/// the bytes `critic::gru::cpu_cache_bytes` promises.
#[test]
fn a_sized_cache_is_reused_and_its_size_is_known() {
    let c = case(8);
    let mut cache = GruCache::default();
    let mut q = vec![0.0; T * B * SPEC.head];
    let mut grads = vec![0.0; SPEC.params_per_net()];
    forward(&SPEC, &c.params, &c.x, &c.h0, &c.reset, &mut q, &mut cache).unwrap();
    backward(&SPEC, &c.params, &mut cache, &c.dq, &mut grads, None).unwrap();
    assert_eq!(
        cache.held_bytes(),
        crate::critic::gru::cpu_cache_bytes(&SPEC, T, B)
    );
    let storage = cache.storage();
    forward(&SPEC, &c.params, &c.x, &c.h0, &c.reset, &mut q, &mut cache).unwrap();
    backward(&SPEC, &c.params, &mut cache, &c.dq, &mut grads, None).unwrap();
    let (short, rows) = (4, 4 * B);
    let mut q_short = vec![0.0; rows * SPEC.head];
    let (x, reset) = (&c.x[..rows * SPEC.input], &c.reset[..rows]);
    forward(&SPEC, &c.params, x, &c.h0, reset, &mut q_short, &mut cache).unwrap();
    assert_eq!(cache.storage(), storage);
    assert_eq!(
        cache.held_bytes(),
        crate::critic::gru::cpu_cache_bytes(&SPEC, short, B)
    );
}

#[test]
fn wrong_lengths_are_errors() {
    let c = case(7);
    let mut cache = GruCache::default();
    let mut q = vec![0.0; T * B * SPEC.head];
    let short_x = &c.x[1..];
    let r = forward(
        &SPEC, &c.params, short_x, &c.h0, &c.reset, &mut q, &mut cache,
    );
    assert!(matches!(r, Err(CriticError::Shape { .. })));
    let r = forward(
        &SPEC,
        &c.params,
        &c.x,
        &c.h0[1..],
        &c.reset,
        &mut q,
        &mut cache,
    );
    assert!(matches!(r, Err(CriticError::Shape { .. })));
    forward(&SPEC, &c.params, &c.x, &c.h0, &c.reset, &mut q, &mut cache).unwrap();
    let mut grads = vec![0.0; SPEC.params_per_net()];
    let r = backward(&SPEC, &c.params, &mut cache, &c.dq[1..], &mut grads, None);
    assert!(matches!(r, Err(CriticError::Shape { .. })));
    let mut h = c.h0.clone();
    let r = step(&SPEC, &c.params, &c.x, &mut h, &mut q, &mut cache);
    assert!(matches!(r, Err(CriticError::Shape { .. })));
}
