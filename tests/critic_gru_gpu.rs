//! GRU stacks on the GPU against the CPU reference on the same parameters: sequence forward over
//! 9 steps with resets and several networks, acting step by step, the gradients of BPTT (from a
//! loss and from a given output gradient), Adam steps, the target pass, and that neither a
//! target pass nor acting disturbs what backward needs; the device buffers are the ones the
//! memory preflight plans. Runs on lavapipe in CI. Without an adapter the tests skip loudly,
//! except when `CI` is set, where they fail.
#![cfg(feature = "gpu")]

mod common;
use common::{assert_close, gpu_or_skip, random};

use gridarena::critic::cpu::CpuCritic;
use gridarena::critic::gpu::GpuCritic;
use gridarena::critic::loss::Loss;
use gridarena::critic::{
    AdamConfig, Backend, Chosen, CriticBackend, CriticError, Input, Network, Sequences, StackSpec,
};

/// The parity tolerance (relative, with the absolute floor of `assert_close`): the MLP parity
/// tests' 1e-4, as the recurrence's rounding stays well inside it over 9 steps.
const TOL: f32 = 1e-4;

fn gpu(spec: StackSpec, seed: u64) -> Option<GpuCritic> {
    let Chosen::Gpu { index, .. } = gpu_or_skip()? else {
        panic!("choose_device(Gpu) returned a CPU");
    };
    Some(GpuCritic::on_adapter(spec, seed, index).unwrap())
}

fn spec(nets: usize) -> StackSpec {
    wide(nets, 24)
}

/// A stack whose GRU cell has `g` units.
fn wide(nets: usize, g: usize) -> StackSpec {
    StackSpec {
        nets,
        input: 7,
        hidden: 20,
        layers: 1,
        head: 5,
        network: Network::Gru { hidden: g },
    }
}

const T: usize = 9;
const B: usize = 11;

/// `[T, B, d]` bytes, `[B]` networks (every network, unevenly), `[B, g]` h0 and `[T, B]`
/// resets: sequence 0 at step 0, sequence 3 at step 4, sequence 7 at steps 2 and 6.
struct Batch {
    x: Vec<u8>,
    nets: Vec<u32>,
    h0: Vec<f32>,
    reset: Vec<u8>,
}

fn batch(spec: &StackSpec, seed: u64) -> Batch {
    let floats = random(T * B * spec.input, seed, 1.0);
    let mut reset = vec![0u8; T * B];
    for (t, b) in [(0, 0), (4, 3), (2, 7), (6, 7)] {
        reset[t * B + b] = 1;
    }
    Batch {
        x: floats.iter().map(|v| ((v + 1.0) * 2.0) as u8).collect(),
        nets: (0..B)
            .map(|b| ((b * 5 + b / 4) % spec.nets) as u32)
            .collect(),
        h0: random(B * spec.state_width(), seed + 1, 0.6),
        reset,
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

fn huber<'a>(actions: &'a [u32], targets: &'a [f32], mask: &'a [f32]) -> Loss<'a> {
    Loss::Huber {
        delta: 1.0,
        actions,
        targets,
        mask: Some(mask),
    }
}

#[test]
fn sequence_passes_gradients_steps_and_targets_match_the_cpu() {
    parity(spec(3), 5);
}

/// More hidden units than a workgroup has threads: each thread carries several units.
#[test]
fn a_cell_wider_than_a_workgroup_matches_the_cpu() {
    parity(wide(2, 80), 6);
}

fn parity(spec: StackSpec, seed: u64) {
    let Some(mut g) = gpu(spec, seed) else { return };
    let mut c = CpuCritic::new(spec, seed).unwrap();
    assert_eq!(g.params().unwrap(), c.params().unwrap());
    let data = batch(&spec, seed);
    let rows = T * B;

    // Sequence forward.
    let cpu_q = c.forward_seq(data.seq()).unwrap();
    let gpu_q = g.forward_seq(data.seq()).unwrap();
    assert_close("forward_seq", &gpu_q, &cpu_q, TOL);

    // BPTT from a given output gradient.
    let d_out = random(rows * spec.head, seed + 2, 1.0);
    CriticBackend::backward(&mut c, &d_out).unwrap();
    CriticBackend::backward(&mut g, &d_out).unwrap();
    let cpu_grads = c.grads().unwrap();
    assert_close("grads from d_out", &g.grads().unwrap(), &cpu_grads, TOL);

    // A target pass and acting leave what backward needs alone.
    g.forward_target_seq(data.seq()).unwrap();
    let mut h = data.h0.clone();
    g.act(Input::U8(&data.x[..B * spec.input]), &data.nets, &mut h)
        .unwrap();
    CriticBackend::backward(&mut g, &d_out).unwrap();
    assert_close(
        "grads after a target pass and acting",
        &g.grads().unwrap(),
        &cpu_grads,
        TOL,
    );

    // Loss and backward, then Adam steps, each after a fresh forward. Both backends step from
    // the CPU's gradients and the GPU restarts from the CPU's parameters after each step (as in
    // tests/critic_gpu.rs): Adam divides by sqrt(v), so gradients that differ in the 7th digit
    // near zero would otherwise move parameters by visibly different amounts.
    let actions: Vec<u32> = (0..rows as u32).map(|r| r % spec.head as u32).collect();
    let targets = random(rows, seed + 3, 2.0);
    let mask: Vec<f32> = (0..rows).map(|r| f32::from(r % 7 != 0)).collect();
    let cfg = AdamConfig {
        lr: 1e-2,
        ..AdamConfig::default()
    };
    for step in 0..3 {
        if step > 0 {
            let cpu_q = c.forward_seq(data.seq()).unwrap();
            let gpu_q = g.forward_seq(data.seq()).unwrap();
            assert_close("forward_seq after steps", &gpu_q, &cpu_q, TOL);
        }
        let loss = huber(&actions, &targets, &mask);
        c.loss_backward(&loss).unwrap();
        let cpu_loss = c.last_loss().unwrap();
        CriticBackend::loss_backward(&mut g, &loss).unwrap();
        assert_close("loss", &[g.last_loss().unwrap()], &[cpu_loss], TOL);
        assert_close("loss grads", &g.grads().unwrap(), &c.grads().unwrap(), TOL);
        g.set_grads(&c.grads().unwrap()).unwrap();
        c.step(&cfg).unwrap();
        g.step(&cfg).unwrap();
        assert_close(
            "params after a step",
            &g.params().unwrap(),
            &c.params().unwrap(),
            TOL,
        );
        g.set_params(&c.params().unwrap()).unwrap();
    }

    // The target parameters (still the initial ones) through the target pass, then after a
    // Polyak update.
    let cpu_t = c.forward_target_seq(data.seq()).unwrap();
    assert_close(
        "forward_target_seq",
        &g.forward_target_seq(data.seq()).unwrap(),
        &cpu_t,
        TOL,
    );
    c.polyak(0.5).unwrap();
    g.polyak(0.5).unwrap();
    let cpu_t = c.forward_target_seq(data.seq()).unwrap();
    assert_close(
        "forward_target_seq after polyak",
        &g.forward_target_seq(data.seq()).unwrap(),
        &cpu_t,
        TOL,
    );

    // Acting step by step from h0 (the resets are the caller's: zero the state there).
    let (mut hc, mut hg) = (data.h0.clone(), data.h0.clone());
    let (d, w) = (spec.input, spec.state_width());
    for t in 0..T {
        for b in 0..B {
            if data.reset[t * B + b] != 0 {
                hc[b * w..(b + 1) * w].fill(0.0);
                hg[b * w..(b + 1) * w].fill(0.0);
            }
        }
        let x = Input::U8(&data.x[t * B * d..(t + 1) * B * d]);
        let qc = c.act(x, &data.nets, &mut hc).unwrap();
        let qg = g.act(x, &data.nets, &mut hg).unwrap();
        assert_close(&format!("act q at step {t}"), &qg, &qc, TOL);
        assert_close(&format!("act h at step {t}"), &hg, &hc, TOL);
    }
}

#[test]
fn f32_input_single_network_and_row_wise_refusals() {
    let spec = spec(1);
    let Some(mut g) = gpu(spec, 9) else { return };
    let mut c = CpuCritic::new(spec, 9).unwrap();
    // Backward before any sequence forward, and a hidden state of the wrong size.
    let e = CriticBackend::backward(&mut g, &[0.0; 5]).unwrap_err();
    assert!(matches!(e, CriticError::Recurrent(_)), "{e}");
    let mut h = vec![0.0; 3];
    let x8 = vec![0u8; 2 * spec.input];
    let e = g.act(Input::U8(&x8), &[0, 0], &mut h).unwrap_err();
    assert!(matches!(e, CriticError::Shape { .. }), "{e}");
    let data = batch(&spec, 9);
    let x: Vec<f32> = random(T * B * spec.input, 10, 1.5);
    let seq = Sequences {
        input: Input::F32(&x),
        ..data.seq()
    };
    let cpu_q = c.forward_seq(seq).unwrap();
    assert_close("f32 forward_seq", &g.forward_seq(seq).unwrap(), &cpu_q, TOL);
    let d_out = random(T * B * spec.head, 11, 1.0);
    CriticBackend::backward(&mut c, &d_out).unwrap();
    CriticBackend::backward(&mut g, &d_out).unwrap();
    assert_close("f32 grads", &g.grads().unwrap(), &c.grads().unwrap(), TOL);
    let rows = vec![0u32; B];
    let row_input = Input::F32(&x[..B * spec.input]);
    assert!(matches!(
        g.forward(row_input, &rows),
        Err(CriticError::Recurrent(_))
    ));
    assert!(matches!(
        g.forward_target(row_input, &rows),
        Err(CriticError::Recurrent(_))
    ));
}

#[test]
fn the_device_buffers_are_the_ones_the_gpu_sizing_plans() {
    let spec = spec(3);
    let Some(mut g) = gpu(spec, 2) else { return };
    let data = batch(&spec, 2);
    let rows = T * B;
    g.forward_seq(data.seq()).unwrap();
    g.forward_target_seq(data.seq()).unwrap();
    let actions = vec![0u32; rows];
    let targets = vec![0.0f32; rows];
    let mask = vec![1.0f32; rows];
    CriticBackend::loss_backward(&mut g, &huber(&actions, &targets, &mask)).unwrap();
    // Not planned: the uniform arena (256 slots of 256 bytes) and the readback staging buffer
    // (the largest read so far, the output, rounded up to a power of two).
    let unplanned = 256 * 256 + (rows * spec.head * 4).next_power_of_two() as u64;
    let planned = spec.sizing(rows, Backend::Gpu).total();
    assert_eq!(g.device_bytes(), planned + unplanned);
}

/// A sequence forward, a target pass, an acting step and a loss with BPTT issue the same
/// dispatches whatever K, T and B: the steps run inside one kernel, the networks share every
/// dispatch.
#[test]
fn dispatches_do_not_depend_on_networks_or_steps() {
    let count = |nets: usize, steps: usize, seqs: usize| -> Option<u64> {
        let spec = spec(nets);
        let mut g = gpu(spec, 3)?;
        let rows = steps * seqs;
        let x = vec![1u8; rows * spec.input];
        let nets_of: Vec<u32> = (0..seqs).map(|b| (b % nets) as u32).collect();
        let h0 = vec![0.1f32; seqs * spec.state_width()];
        let reset = vec![0u8; rows];
        let seq = Sequences {
            input: Input::U8(&x),
            nets: &nets_of,
            h0: &h0,
            reset: &reset,
        };
        let before = g.dispatches();
        g.forward_target_seq(seq).unwrap();
        g.forward_seq(seq).unwrap();
        let mut h = h0.clone();
        g.act(Input::U8(&x[..seqs * spec.input]), &nets_of, &mut h)
            .unwrap();
        let (actions, targets, mask) = (vec![0u32; rows], vec![0.5f32; rows], vec![1.0; rows]);
        CriticBackend::loss_backward(&mut g, &huber(&actions, &targets, &mask)).unwrap();
        Some(g.dispatches() - before)
    };
    let Some(small) = count(1, 2, 3) else { return };
    assert_eq!(small, 5 + 5 + 5 + 10);
    assert_eq!(count(4, 12, 40), Some(small));
}

/// No steps (even of many sequences) or no sequences: empty outputs, zero gradients.
#[test]
fn empty_batches_run_nothing_and_leave_zero_gradients() {
    let spec = spec(2);
    let Some(mut g) = gpu(spec, 4) else { return };
    let data = batch(&spec, 4);
    // A real pass first, so the gradients are not zero to begin with.
    g.forward_seq(data.seq()).unwrap();
    let d_out = random(T * B * spec.head, 12, 1.0);
    CriticBackend::backward(&mut g, &d_out).unwrap();
    assert!(g.grads().unwrap().iter().any(|&v| v != 0.0));
    let nets = vec![1u32; 300];
    let h0 = vec![0.5f32; 300 * spec.state_width()];
    let none = Sequences {
        input: Input::U8(&[]),
        nets: &nets,
        h0: &h0,
        reset: &[],
    };
    assert!(g.forward_seq(none).unwrap().is_empty());
    assert!(g.forward_target_seq(none).unwrap().is_empty());
    CriticBackend::backward(&mut g, &[]).unwrap();
    assert!(g.grads().unwrap().iter().all(|&v| v == 0.0));
    let mut h: Vec<f32> = Vec::new();
    assert!(g.act(Input::U8(&[]), &[], &mut h).unwrap().is_empty());
}
