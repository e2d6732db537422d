//! The GRU stack on the CPU through the backend seam: sequences grouped by network and cut into
//! work units, acting step by step, the stack's gradients, and learning what an MLP cannot
//! (the cell math itself is checked against finite differences in `src/critic/cpu/gru.rs`).

use gridarena::critic::cpu::CpuCritic;
use gridarena::critic::loss::Loss;
use gridarena::critic::{
    AdamConfig, CriticBackend, CriticError, Input, Network, Sequences, StackSpec,
};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// Uniform in `0..n`.
fn below(rng: &mut ChaCha8Rng, n: u32) -> u32 {
    rng.next_u32() % n
}

/// Uniform in `[lo, hi)`.
fn uniform(rng: &mut ChaCha8Rng, lo: f32, hi: f32) -> f32 {
    lo + (hi - lo) * (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32
}

fn spec(nets: usize, g: usize) -> StackSpec {
    StackSpec {
        nets,
        input: 6,
        hidden: 16,
        layers: 1,
        head: 3,
        network: Network::Gru { hidden: g },
    }
}

/// `[T, B, d]` random bytes, `[B]` networks, `[B, g]` h0 and `[T, B]` resets (about 1 in 5).
struct Batch {
    x: Vec<u8>,
    nets: Vec<u32>,
    h0: Vec<f32>,
    reset: Vec<u8>,
}

fn batch(spec: &StackSpec, steps: usize, b: usize, seed: u64) -> Batch {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let g = spec.state_width();
    Batch {
        x: (0..steps * b * spec.input)
            .map(|_| below(&mut rng, 3) as u8)
            .collect(),
        nets: (0..b).map(|_| below(&mut rng, spec.nets as u32)).collect(),
        h0: (0..b * g).map(|_| uniform(&mut rng, -0.5, 0.5)).collect(),
        reset: (0..steps * b)
            .map(|_| u8::from(below(&mut rng, 5) == 0))
            .collect(),
    }
}

impl Batch {
    fn seq(&self) -> Sequences<'_> {
        Sequences {
            input: Input::U8(&self.x),
            nets: &self.nets,
            h0: &self.h0,
            reset: &self.reset,
        }
    }
}

fn close(a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "at {i}: {x} vs {y}");
    }
}

#[test]
fn acting_step_by_step_equals_the_sequence_forward() {
    let s = spec(3, 8);
    let (steps, b) = (7, 70);
    let data = batch(&s, steps, b, 1);
    let mut c = CpuCritic::new(s, 5).unwrap();
    let seq_out = c.forward_seq(data.seq()).unwrap();
    let mut hidden = data.h0.clone();
    let (d, a, g) = (s.input, s.head, 8);
    for t in 0..steps {
        for (k, &r) in data.reset[t * b..(t + 1) * b].iter().enumerate() {
            if r != 0 {
                hidden[k * g..(k + 1) * g].fill(0.0);
            }
        }
        let x = &data.x[t * b * d..(t + 1) * b * d];
        let q = CriticBackend::act(&mut c, Input::U8(x), &data.nets, &mut hidden).unwrap();
        close(&q, &seq_out[t * b * a..(t + 1) * b * a], 1e-5);
    }
    // Acting left the training activations alone: backward still works on the forward.
    CriticBackend::backward(&mut c, &vec![0.1; seq_out.len()]).unwrap();
    assert!(c.grads().unwrap().iter().any(|&v| v != 0.0));
}

#[test]
fn a_sequence_computes_the_same_whatever_else_is_in_the_batch() {
    let s = spec(2, 8);
    let (steps, b) = (5, 80);
    let data = batch(&s, steps, b, 2);
    let mut c = CpuCritic::new(s, 9).unwrap();
    let all = c.forward_seq(data.seq()).unwrap();
    // Sequence 41 alone.
    let one = 41;
    let (d, a, g) = (s.input, s.head, 8);
    let x: Vec<u8> = (0..steps)
        .flat_map(|t| data.x[(t * b + one) * d..(t * b + one + 1) * d].to_vec())
        .collect();
    let reset: Vec<u8> = (0..steps).map(|t| data.reset[t * b + one]).collect();
    let alone = Batch {
        x,
        nets: vec![data.nets[one]],
        h0: data.h0[one * g..(one + 1) * g].to_vec(),
        reset,
    };
    let out = c.forward_seq(alone.seq()).unwrap();
    for t in 0..steps {
        close(
            &out[t * a..(t + 1) * a],
            &all[(t * b + one) * a..(t * b + one + 1) * a],
            1e-5,
        );
    }
}

#[test]
fn the_stack_gradient_is_the_sum_over_its_sequences() {
    // The gradient of a batch of 100 sequences (several work units per network) equals the sum
    // of the gradients of its quarters, each run alone (one unit per network each).
    let s = spec(2, 6);
    let (steps, b, q) = (4, 100, 25);
    let data = batch(&s, steps, b, 3);
    let mut c = CpuCritic::new(s, 4).unwrap();
    let out = c.forward_seq(data.seq()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let d_out: Vec<f32> = out.iter().map(|_| uniform(&mut rng, -1.0, 1.0)).collect();
    CriticBackend::backward(&mut c, &d_out).unwrap();
    let full = c.grads().unwrap();
    let (d, a, g) = (s.input, s.head, 6);
    let mut sum = vec![0.0f32; full.len()];
    for part in 0..b / q {
        let seqs = part * q..(part + 1) * q;
        let rows = |w: usize, src: &[u8]| -> Vec<u8> {
            (0..steps)
                .flat_map(|t| src[(t * b + seqs.start) * w..(t * b + seqs.end) * w].to_vec())
                .collect()
        };
        let alone = Batch {
            x: rows(d, &data.x),
            nets: data.nets[seqs.clone()].to_vec(),
            h0: data.h0[seqs.start * g..seqs.end * g].to_vec(),
            reset: rows(1, &data.reset),
        };
        let d_part: Vec<f32> = (0..steps)
            .flat_map(|t| d_out[(t * b + seqs.start) * a..(t * b + seqs.end) * a].to_vec())
            .collect();
        c.forward_seq(alone.seq()).unwrap();
        CriticBackend::backward(&mut c, &d_part).unwrap();
        for (acc, v) in sum.iter_mut().zip(c.grads().unwrap()) {
            *acc += v;
        }
    }
    close(&sum, &full, 1e-4);
    assert!(full.iter().filter(|&&v| v != 0.0).count() > full.len() / 2);
}

#[test]
fn row_wise_passes_on_a_recurrent_stack_are_refused_by_name() {
    let s = spec(1, 4);
    let mut c = CpuCritic::new(s, 0).unwrap();
    let x = vec![0u8; 2 * s.input];
    let e = CriticBackend::forward(&mut c, Input::U8(&x), &[0, 0]).unwrap_err();
    assert!(matches!(e, CriticError::Recurrent(_)), "{e}");
    assert!(e.to_string().contains("recurrent"), "{e}");
    // A hidden state of the wrong size is a shape error, not a panic.
    let mut h = vec![0.0; 3];
    let e = CriticBackend::act(&mut c, Input::U8(&x), &[0, 0], &mut h).unwrap_err();
    assert!(matches!(e, CriticError::Shape { .. }), "{e}");
    // Backward before any sequence forward.
    let e = CriticBackend::backward(&mut c, &[0.0; 6]).unwrap_err();
    assert!(matches!(e, CriticError::Recurrent(_)), "{e}");
    // An MLP stack's sequence pass is its row-wise pass.
    let mlp = StackSpec {
        network: Network::Mlp,
        layers: 2,
        ..s
    };
    let mut m = CpuCritic::new(mlp, 0).unwrap();
    let seq = Sequences {
        input: Input::U8(&x),
        nets: &[0],
        h0: &[],
        reset: &[0, 0],
    };
    let a = m.forward_seq(seq).unwrap();
    let b = CriticBackend::forward(&mut m, Input::U8(&x), &[0, 0]).unwrap();
    assert_eq!(a, b);
}

/// Recall: the target at the last step is the first step's input bit, the inputs in between
/// are noise. A GRU trained by BPTT through the stack learns it; no function of the last
/// input alone can beat a loss of 0.125 (the variance of a fair bit, halved).
#[test]
fn a_gru_stack_learns_to_recall_the_first_input_and_an_mlp_cannot() {
    let (steps, b) = (6, 64);
    let train = |network: Network, layers: usize| -> f32 {
        let s = StackSpec {
            nets: 1,
            input: 2,
            hidden: 16,
            layers,
            head: 1,
            network,
        };
        let g = s.state_width();
        let mut c = CpuCritic::new(s, 1).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let cfg = AdamConfig {
            lr: 3e-3,
            ..AdamConfig::default()
        };
        let mut last = f32::MAX;
        for it in 0..600 {
            let bits: Vec<u8> = (0..b).map(|_| below(&mut rng, 2) as u8).collect();
            let mut x = vec![0u8; steps * b * 2];
            for t in 0..steps {
                for k in 0..b {
                    // Channel 0: the cue at step 0; channel 1: noise.
                    x[(t * b + k) * 2] = if t == 0 { bits[k] } else { 0 };
                    x[(t * b + k) * 2 + 1] = below(&mut rng, 2) as u8;
                }
            }
            let mut reset = vec![0u8; steps * b];
            reset[..b].fill(1);
            let h0 = vec![0.0; b * g];
            let nets = vec![0u32; b];
            let seq = Sequences {
                input: Input::U8(&x),
                nets: &nets,
                h0: &h0,
                reset: &reset,
            };
            c.forward_seq(seq).unwrap();
            let actions = vec![0u32; steps * b];
            let mut targets = vec![0.0f32; steps * b];
            let mut mask = vec![0.0f32; steps * b];
            for k in 0..b {
                targets[(steps - 1) * b + k] = bits[k] as f32;
                mask[(steps - 1) * b + k] = 1.0;
            }
            let loss = Loss::Mse {
                actions: &actions,
                targets: &targets,
                mask: Some(&mask),
            };
            c.loss_backward(&loss).unwrap();
            let v = c.last_loss().unwrap();
            c.step(&cfg).unwrap();
            if it >= 580 {
                last = last.min(v);
            }
        }
        last
    };
    let gru = train(Network::Gru { hidden: 16 }, 1);
    let mlp = train(Network::Mlp, 2);
    assert!(gru < 0.02, "GRU loss {gru}");
    assert!(mlp > 0.1, "MLP loss {mlp}");
}
