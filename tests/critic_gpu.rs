//! The GPU critic backend against the CPU reference: forward, backward (both losses and the
//! input gradient), the optimiser step and target updates, on random stacks with mixed
//! row-to-network assignment; the dispatch count does not depend on K; every shader validates
//! with naga. Runs on lavapipe in CI. Without an adapter the GPU tests skip loudly, except
//! when `CI` is set, where they fail.
#![cfg(feature = "gpu")]

mod common;
use common::{assert_close, classification_labels, random};

use gridarena::critic::cpu::CpuCritic;
use gridarena::critic::gpu::{GpuCritic, SHADERS};
use gridarena::critic::loss::Loss;
use gridarena::critic::{AdamConfig, CriticBackend, Input, StackSpec};
use gridarena::train::config::{IqlConfig, NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config};

/// The GPU critic, or `None` after a recorded skip when no adapter exists; an error building
/// it on an adapter that exists fails the test.
fn gpu(spec: StackSpec, seed: u64) -> Option<GpuCritic> {
    if !common::skip::gpu_adapter_present() {
        return None;
    }
    Some(GpuCritic::new(spec, seed).unwrap_or_else(|e| panic!("building the GPU critic: {e}")))
}

#[test]
fn every_shader_validates_with_naga() {
    for (name, source) in SHADERS {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::default(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    }
}

fn parity(nets: usize, u8_input: bool, seed: u64) {
    let spec = StackSpec {
        network: Default::default(),
        nets,
        input: 37,
        hidden: 48,
        layers: 2,
        head: 6,
    };
    let Some(mut g) = gpu(spec, seed) else { return };
    let mut c = CpuCritic::new(spec, seed).unwrap();
    let rows = 150;
    let nets_of: Vec<u32> = (0..rows).map(|r| ((r * 7 + r / 3) % nets) as u32).collect();
    let floats = random(rows * spec.input, seed + 1, 1.0);
    let bytes: Vec<u8> = floats.iter().map(|v| ((v + 1.0) * 2.0) as u8).collect();
    let input = if u8_input {
        Input::U8(&bytes)
    } else {
        Input::F32(&floats)
    };

    // Forward.
    let cpu_out = c.forward(input, &nets_of).unwrap().to_vec();
    let gpu_out = g.forward(input, &nets_of).unwrap();
    assert_close("forward", &gpu_out, &cpu_out, 1e-4);

    // Backward through a Huber loss, then a cross-entropy loss.
    let actions: Vec<u32> = (0..rows as u32).map(|r| r % 6).collect();
    let targets = random(rows, seed + 2, 2.0);
    let mask: Vec<f32> = (0..rows)
        .map(|r| if r % 5 == 0 { 0.0 } else { 1.0 })
        .collect();
    let huber = Loss::Huber {
        delta: 1.0,
        actions: &actions,
        targets: &targets,
        mask: Some(&mask),
    };
    c.loss_backward(&huber).unwrap();
    let cpu_loss = c.last_loss().unwrap();
    g.loss_backward(&huber).unwrap();
    assert_close("huber loss", &[g.last_loss().unwrap()], &[cpu_loss], 1e-4);
    assert_close(
        "huber grads",
        &g.grads().unwrap(),
        &c.grads().unwrap(),
        1e-4,
    );

    let labels: Vec<u32> = (0..rows as u32 * 2).map(|i| i * 5 % 3).collect();
    let ce = Loss::CrossEntropy {
        groups: 2,
        labels: &labels,
        mask: None,
    };
    c.loss_backward(&ce).unwrap();
    let cpu_loss = c.last_loss().unwrap();
    g.loss_backward(&ce).unwrap();
    assert_close(
        "cross-entropy loss",
        &[g.last_loss().unwrap()],
        &[cpu_loss],
        1e-4,
    );
    assert_close(
        "cross-entropy grads",
        &g.grads().unwrap(),
        &c.grads().unwrap(),
        1e-4,
    );

    // Input gradient from a given dL/d output.
    let d_out = random(rows * spec.head, seed + 3, 1.0);
    c.backward_with_input(&d_out).unwrap();
    g.backward_with_input(&d_out).unwrap();
    assert_close(
        "input grads",
        &g.input_grad().unwrap(),
        c.input_grad(),
        1e-4,
    );
    assert_close(
        "grads from d_out",
        &g.grads().unwrap(),
        &c.grads().unwrap(),
        1e-4,
    );

    // Two optimiser steps (Adam, then RAdam's warm-up path), clipping active. Both backends
    // step from the same gradients: Adam divides by sqrt(v), so gradients that differ in the
    // 7th digit near zero would otherwise move parameters by visibly different amounts.
    g.set_grads(&c.grads().unwrap()).unwrap();
    for cfg in [
        AdamConfig {
            lr: 1e-2,
            max_grad_norm: Some(0.5),
            ..AdamConfig::default()
        },
        AdamConfig {
            lr: 1e-2,
            radam: true,
            ..AdamConfig::default()
        },
    ] {
        c.step(&cfg).unwrap();
        let cpu_stats = c.step_stats().unwrap();
        g.step(&cfg).unwrap();
        assert_close(
            "grad norms",
            &g.step_stats().unwrap().grad_norms,
            &cpu_stats.grad_norms,
            1e-4,
        );
        assert_close(
            "params after step",
            &g.params().unwrap(),
            &c.params().unwrap(),
            1e-4,
        );
        g.set_params(&c.params().unwrap()).unwrap();
    }

    // Target updates and the target forward.
    c.polyak(0.3).unwrap();
    g.polyak(0.3).unwrap();
    assert_close(
        "polyak target",
        &g.target_params().unwrap(),
        &c.target_params().unwrap(),
        1e-4,
    );
    let cpu_target_out = c.forward_target(input, &nets_of).unwrap();
    assert_close(
        "target forward",
        &g.forward_target(input, &nets_of).unwrap(),
        &cpu_target_out,
        1e-4,
    );
}

#[test]
fn the_hl_gauss_loss_and_gradients_match_the_cpu() {
    // 4 actions x 51 bins, targets inside and outside the support, a mask with zeros.
    let (actions_n, bins) = (4usize, 51usize);
    let spec = StackSpec {
        network: Default::default(),
        nets: 3,
        input: 21,
        hidden: 32,
        layers: 2,
        head: actions_n * bins,
    };
    let Some(mut g) = gpu(spec, 5) else { return };
    let mut c = CpuCritic::new(spec, 5).unwrap();
    let rows = 130;
    let nets_of: Vec<u32> = (0..rows).map(|r| ((r * 5 + r / 7) % 3) as u32).collect();
    let x = random(rows * spec.input, 6, 1.0);
    let actions: Vec<u32> = (0..rows as u32).map(|r| r * 3 % actions_n as u32).collect();
    let targets = random(rows, 7, 14.0);
    let mask: Vec<f32> = (0..rows).map(|r| f32::from(r % 6 != 0)).collect();
    let loss = Loss::HlGauss {
        bins,
        v_min: -10.0,
        v_max: 10.0,
        sigma: 0.75 * 20.0 / bins as f32,
        actions: &actions,
        targets: &targets,
        mask: Some(&mask),
    };
    c.forward(Input::F32(&x), &nets_of).unwrap();
    g.forward(Input::F32(&x), &nets_of).unwrap();
    c.loss_backward(&loss).unwrap();
    let cpu_loss = c.last_loss().unwrap();
    g.loss_backward(&loss).unwrap();
    assert_close(
        "hl-gauss loss",
        &[g.last_loss().unwrap()],
        &[cpu_loss],
        1e-4,
    );
    assert_close(
        "hl-gauss grads",
        &g.grads().unwrap(),
        &c.grads().unwrap(),
        1e-4,
    );
}

#[test]
fn gpu_matches_cpu_with_one_network() {
    parity(1, true, 1);
}

#[test]
fn gpu_matches_cpu_with_three_networks() {
    parity(3, false, 2);
}

#[test]
fn gpu_matches_cpu_with_eight_networks() {
    parity(8, true, 3);
}

#[test]
fn dispatches_per_update_do_not_depend_on_the_number_of_networks() {
    let mut counts = Vec::new();
    for nets in [1, 3, 8] {
        let spec = StackSpec {
            network: Default::default(),
            nets,
            input: 20,
            hidden: 16,
            layers: 2,
            head: 4,
        };
        let Some(mut g) = gpu(spec, 0) else { return };
        let rows = 64;
        let x = random(rows * 20, 1, 1.0);
        let nets_of: Vec<u32> = (0..rows).map(|r| (r % nets) as u32).collect();
        let actions = vec![1u32; rows];
        let targets = vec![0.5f32; rows];
        let before = g.dispatches();
        g.forward(Input::F32(&x), &nets_of).unwrap();
        g.loss_backward(&Loss::Mse {
            actions: &actions,
            targets: &targets,
            mask: None,
        })
        .unwrap();
        g.step(&AdamConfig::default()).unwrap();
        counts.push(g.dispatches() - before);
    }
    assert_eq!(counts.len(), 3);
    assert!(
        counts.iter().all(|&c| c == counts[0]),
        "dispatches per update by K = 1, 3, 8: {counts:?}"
    );
    // forward: 3 linear + 2 LayerNorm; loss 1; backward: 3 weight + 2 input + 2 x 2 LayerNorm;
    // step: norm + Adam.
    assert_eq!(counts[0], 5 + 1 + 9 + 2);
}

#[test]
fn the_gpu_fits_a_synthetic_regression() {
    let spec = StackSpec {
        network: Default::default(),
        nets: 2,
        input: 8,
        hidden: 32,
        layers: 2,
        head: 4,
    };
    let Some(mut g) = gpu(spec, 4) else { return };
    let rows = 256;
    let x = random(rows * 8, 5, 1.0);
    let actions: Vec<u32> = (0..rows as u32).map(|r| r * 13 % 4).collect();
    let targets: Vec<f32> = (0..rows)
        .map(|r| (x[r * 8 + actions[r] as usize] * 2.0).sin() + x[r * 8 + 7] * x[r * 8 + 6])
        .collect();
    let nets_of: Vec<u32> = (0..rows as u32).map(|r| r % 2).collect();
    let cfg = AdamConfig {
        lr: 3e-3,
        ..AdamConfig::default()
    };
    let loss = Loss::Mse {
        actions: &actions,
        targets: &targets,
        mask: None,
    };
    let mut first = None;
    for _ in 0..400 {
        g.forward(Input::F32(&x), &nets_of).unwrap();
        g.loss_backward(&loss).unwrap();
        if first.is_none() {
            first = Some(g.last_loss().unwrap());
        }
        g.step(&cfg).unwrap();
    }
    g.forward(Input::F32(&x), &nets_of).unwrap();
    g.loss_backward(&loss).unwrap();
    let (first, last) = (first.unwrap(), g.last_loss().unwrap());
    assert!(
        last < 0.05 * first && last < 0.03,
        "loss {first} -> {last} after 400 steps"
    );
}

#[test]
fn the_gpu_fits_a_synthetic_classification() {
    let spec = StackSpec {
        network: Default::default(),
        nets: 2,
        input: 6,
        hidden: 32,
        layers: 2,
        head: 6,
    };
    let Some(mut g) = gpu(spec, 1) else { return };
    let rows = 256;
    let x = random(rows * 6, 2, 1.0);
    let labels = classification_labels(&x, rows);
    let nets_of: Vec<u32> = (0..rows as u32).map(|r| r % 2).collect();
    let cfg = AdamConfig {
        lr: 3e-3,
        ..AdamConfig::default()
    };
    let loss = Loss::CrossEntropy {
        groups: 2,
        labels: &labels,
        mask: None,
    };
    for _ in 0..300 {
        g.forward(Input::F32(&x), &nets_of).unwrap();
        g.loss_backward(&loss).unwrap();
        g.step(&cfg).unwrap();
    }
    let out = g.forward(Input::F32(&x), &nets_of).unwrap();
    let correct = (0..rows * 2)
        .filter(|&i| {
            let z = &out[i * 3..i * 3 + 3];
            (0..3).max_by(|&a, &b| z[a].total_cmp(&z[b])).unwrap() as u32 == labels[i]
        })
        .count();
    let accuracy = correct as f32 / (rows * 2) as f32;
    assert!(accuracy > 0.95, "accuracy {accuracy} after 300 steps");
}

#[test]
fn pqn_and_iql_train_on_the_gpu_backend() {
    use gridarena::critic::Device;
    use gridarena::train::config::{Algo, RunConfig};
    use gridarena::train::{TrainOptions, train};
    if gpu(
        StackSpec {
            network: Default::default(),
            nets: 1,
            input: 1,
            hidden: 1,
            layers: 1,
            head: 1,
        },
        0,
    )
    .is_none()
    {
        return;
    }
    for algo in [Algo::Pqn, Algo::Iql] {
        let cfg = RunConfig {
            algo,
            scenario: Some("tests/data/chase.ron".into()),
            device: Device::Gpu,
            arenas: 16,
            rollout: 8,
            total_steps: 16 * 8 * 6,
            network: NetworkConfig {
                hidden: 32,
                layers: 1,
                ..Default::default()
            },
            pqn: PqnConfig {
                minibatches: 4,
                ..Default::default()
            },
            iql: IqlConfig {
                batch_size: 32,
                min_replay: 64,
                ..Default::default()
            },
            pr2: Pr2Config {
                minibatches: 4,
                ..Default::default()
            },
            online_dqn: OnlineDqnConfig {
                minibatches: 4,
                ..Default::default()
            },
            ..RunConfig::default()
        };
        let run = std::env::temp_dir().join(format!(
            "gridarena-gpu-train-{algo:?}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&run);
        let summary = train(&cfg, &run, &TrainOptions::default()).unwrap();
        assert_eq!(summary.updates, 6);
        assert!(summary.device.starts_with("gpu"), "{}", summary.device);
        let ckpt = gridarena::train::run_dir::RunDir::open(&run)
            .unwrap()
            .load_latest()
            .unwrap();
        assert!(ckpt.params.iter().all(|v| v.is_finite()));
        let _ = std::fs::remove_dir_all(&run);
    }
}

/// QMIX's mixer in WGSL against the CPU reference: the mixed values, the loss and both
/// gradients, on rows whose pre-activations fall on both sides of ELU's kink.
#[test]
fn the_wgsl_mixer_matches_the_cpu_reference() {
    use gridarena::critic::gpu::GpuMixer;
    use gridarena::critic::mixer::{MixerShape, mix, mix_loss};
    if !common::skip::gpu_adapter_present() {
        return;
    }
    let shape = MixerShape {
        agents: 3,
        embed: 8,
    };
    let mut g = GpuMixer::new(shape).unwrap_or_else(|e| panic!("building the GPU mixer: {e}"));
    let rows = 257;
    let q = random(rows * shape.agents, 5, 3.0);
    let hyper = random(rows * shape.hyper_width(), 6, 1.0);
    let y = random(rows, 7, 4.0);
    let (gm, cm) = (g.mix(&q, &hyper).unwrap(), mix(shape, &q, &hyper).unwrap());
    assert_close("Q_tot", &gm, &cm, 1e-4);
    let (gpu, cpu) = (
        g.loss(&q, &hyper, &y).unwrap(),
        mix_loss(shape, &q, &hyper, &y).unwrap(),
    );
    assert_close("loss", &[gpu.loss], &[cpu.loss], 1e-4);
    assert_close("dL/dq", &gpu.d_q, &cpu.d_q, 1e-4);
    assert_close("dL/dhyper", &gpu.d_hyper, &cpu.d_hyper, 1e-4);
    assert!(g.mix(&q[1..], &hyper).is_err(), "a ragged batch is refused");
}

/// PPO's losses in WGSL against the CPU reference: the policy's terms and logit gradients with
/// and without action masks (ratios inside and outside the clipping range), and the value loss
/// with and without clipping.
#[test]
fn the_wgsl_ppo_losses_match_the_cpu_reference() {
    use gridarena::critic::gpu::GpuPpoLoss;
    use gridarena::critic::ppo_loss::{PpoCoefs, policy_loss, value_loss};
    if !common::skip::gpu_adapter_present() {
        return;
    }
    let mut g = GpuPpoLoss::new().unwrap_or_else(|e| panic!("building the GPU losses: {e}"));
    let (rows, width) = (203, 6);
    let logits = random(rows * width, 21, 2.0);
    let taken: Vec<u32> = (0..rows).map(|r| ((r * 7) % width) as u32).collect();
    let mask: Vec<u8> = (0..rows * width)
        .map(|i| u8::from(i % width == taken[i / width] as usize || (i * 13) % 5 != 0))
        .collect();
    // Old log-probabilities around the current ones, so that some ratios leave [0.8, 1.2].
    let old: Vec<f32> = random(rows, 22, 1.0)
        .iter()
        .map(|v| -1.8 + 0.5 * v)
        .collect();
    let adv = random(rows, 23, 1.5);
    for masked in [false, true] {
        for clip_value in [false, true] {
            let c = PpoCoefs {
                clip: 0.2,
                ent_coef: 0.01,
                vf_coef: 0.5,
                clip_value,
            };
            let m = masked.then_some(&mask[..]);
            let batch = (&taken[..], &old[..], &adv[..]);
            let (gt, gd) = g.policy(&logits, m, batch, c).unwrap();
            let mut cd = vec![0.0; logits.len()];
            let ct = policy_loss(&logits, m, batch, c, &mut cd);
            assert!(ct.clip_fraction > 0.05, "some ratios are clipped");
            let what = format!("policy (masked {masked})");
            assert_close(&what, &gd, &cd, 1e-3);
            let (gs, cs) = (
                [gt.surrogate, gt.entropy, gt.approx_kl, gt.clip_fraction],
                [ct.surrogate, ct.entropy, ct.approx_kl, ct.clip_fraction],
            );
            assert_close(&format!("{what} terms"), &gs, &cs, 1e-3);
            let values = random(rows, 24, 3.0);
            let returns = random(rows, 25, 3.0);
            let (gl, gdv) = g.value(&values, &old, &returns, c).unwrap();
            let mut cdv = vec![0.0; rows];
            let cl = value_loss(&values, &old, &returns, c, &mut cdv);
            let what = format!("value (clip {clip_value})");
            assert_close(&what, &gdv, &cdv, 1e-4);
            assert_close(&format!("{what} loss"), &[gl], &[cl], 1e-4);
        }
    }
    assert!(
        g.policy(
            &logits[1..],
            None,
            (&taken, &old, &adv),
            PpoCoefs {
                clip: 0.2,
                ent_coef: 0.0,
                vf_coef: 1.0,
                clip_value: false,
            }
        )
        .is_err(),
        "ragged logits are refused"
    );
}
