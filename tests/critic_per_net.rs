//! Per-network optimiser scalars and Polyak factors (the replicas of a sweep share one stack):
//! on the CPU, network k of a stack stepped with `step_nets` / averaged with `polyak_nets` is bit
//! for bit that network alone stepped with `step` / averaged with `polyak` under its own values;
//! a masked step (`step_masked`, replicas learning at their own moments) moves only the chosen
//! networks, and network k after any sequence of them is bit for bit that network stepped
//! alone its own number of times (its own Adam step count); the GPU matches the CPU within the
//! parity tests' tolerance; wrong lengths are refused and change nothing.

mod common;
use common::random;

use gridarena::critic::cpu::CpuCritic;
use gridarena::critic::loss::Loss;
use gridarena::critic::{AdamConfig, CriticBackend, CriticError, Input, NetOptim, StackSpec};

const SPEC: StackSpec = StackSpec {
    network: gridarena::critic::Network::Mlp,
    nets: 3,
    input: 11,
    hidden: 16,
    layers: 2,
    head: 4,
};

/// Learning rates [1e-3, 3e-4, 0] and clips [none, 0.05 (active), 10].
fn nets() -> [NetOptim; 3] {
    [
        NetOptim {
            lr: 1e-3,
            max_grad_norm: None,
        },
        NetOptim {
            lr: 3e-4,
            max_grad_norm: Some(0.05),
        },
        NetOptim {
            lr: 0.0,
            max_grad_norm: Some(10.0),
        },
    ]
}

/// Betas, eps and RAdam differ from the per-network values' defaults, which must not leak in.
fn configs() -> [AdamConfig; 2] {
    let base = AdamConfig {
        lr: 0.5,
        max_grad_norm: Some(1e-9),
        beta1: 0.8,
        beta2: 0.99,
        ..AdamConfig::default()
    };
    [
        base,
        AdamConfig {
            radam: true,
            ..base
        },
    ]
}

/// Forward and a Huber loss's backward over rows of every network (batch `step` differs per
/// step), leaving the stack's gradients set.
fn real_gradients(c: &mut CpuCritic, step: u64) {
    let rows = 30;
    let nets_of: Vec<u32> = (0..rows).map(|r| (r * 5 % 3) as u32).collect();
    let x = random(rows * SPEC.input, 100 + step, 2.0);
    c.forward(Input::F32(&x), &nets_of).unwrap();
    let actions: Vec<u32> = (0..rows as u32).map(|r| r % 4).collect();
    let targets = random(rows, 200 + step, 3.0);
    c.loss_backward(&Loss::Huber {
        delta: 1.0,
        actions: &actions,
        targets: &targets,
        mask: None,
    })
    .unwrap();
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// Network k's slice of a network-major buffer.
fn net(x: &[f32], k: usize) -> &[f32] {
    let per = SPEC.params_per_net();
    &x[k * per..(k + 1) * per]
}

/// A 1-network stack holding network k of `stack` (parameters and target).
fn alone(stack: &mut CpuCritic, k: usize) -> CpuCritic {
    let mut one = CpuCritic::new(StackSpec { nets: 1, ..SPEC }, 9).unwrap();
    one.set_params(net(&stack.target_params().unwrap(), k))
        .unwrap();
    one.polyak(1.0).unwrap();
    one.set_params(net(&stack.params().unwrap(), k)).unwrap();
    one
}

/// Network k of `stack` is `one` bit for bit: parameters, Adam's moments and step count.
fn assert_net_is(stack: &mut CpuCritic, k: usize, one: &mut CpuCritic, what: &str) {
    let (m, v, _) = stack.adam_state().unwrap();
    let (m1, v1, steps1) = one.adam_state().unwrap();
    assert_eq!(
        bits(net(&stack.params().unwrap(), k)),
        bits(&one.params().unwrap()),
        "params: {what}"
    );
    assert_eq!(bits(net(&m, k)), bits(&m1), "first moment: {what}");
    assert_eq!(bits(net(&v, k)), bits(&v1), "second moment: {what}");
    assert_eq!(stack.net_steps()[k], steps1, "step count: {what}");
}

#[test]
fn step_nets_is_each_network_stepped_alone_bit_for_bit() {
    for cfg in configs() {
        let mut stack = CpuCritic::new(SPEC, 3).unwrap();
        let mut singles: Vec<CpuCritic> = (0..3).map(|k| alone(&mut stack, k)).collect();
        let nets = nets();
        let initial = stack.params().unwrap();
        // Six steps: RAdam's momentum-only warm-up, then its adaptive steps.
        for t in 0..6 {
            real_gradients(&mut stack, t);
            stack.step_nets(&cfg, &nets).unwrap();
            let norms = stack.step_stats().unwrap().grad_norms;
            assert!(
                norms[1] > 0.05,
                "the clip of network 1 is active: {norms:?}"
            );
            for (k, one) in singles.iter_mut().enumerate() {
                one.set_grads(net(&stack.grads().unwrap(), k)).unwrap();
                one.step(&cfg.for_net(&nets[k])).unwrap();
                let seen = one.step_stats().unwrap().grad_norms[0];
                assert_eq!(seen.to_bits(), norms[k].to_bits(), "norm of net {k}");
                assert_net_is(&mut stack, k, one, &format!("{cfg:?}, step {t}, net {k}"));
            }
        }
        // Learning rate 0 leaves network 2 where it was; the others moved.
        assert_eq!(
            bits(net(&stack.params().unwrap(), 2)),
            bits(net(&initial, 2))
        );
        assert_ne!(
            bits(net(&stack.params().unwrap(), 0)),
            bits(net(&initial, 0))
        );
        assert_ne!(
            bits(net(&stack.params().unwrap(), 1)),
            bits(net(&initial, 1))
        );
    }
}

#[test]
fn step_with_one_value_for_every_network_is_step_nets_and_a_full_mask_with_it() {
    let cfg = configs()[0];
    let mut a = CpuCritic::new(SPEC, 4).unwrap();
    let mut b = CpuCritic::new(SPEC, 4).unwrap();
    let mut c = CpuCritic::new(SPEC, 4).unwrap();
    let every = [NetOptim::from(&cfg); 3];
    for t in 0..2 {
        real_gradients(&mut a, t);
        b.set_grads(&a.grads().unwrap()).unwrap();
        c.set_grads(&a.grads().unwrap()).unwrap();
        a.step(&cfg).unwrap();
        b.step_nets(&cfg, &every).unwrap();
        c.step_masked(&cfg, &every, &[true; 3]).unwrap();
        assert_eq!(bits(&a.params().unwrap()), bits(&b.params().unwrap()));
        assert_eq!(bits(&a.params().unwrap()), bits(&c.params().unwrap()));
    }
}

#[test]
fn polyak_nets_is_each_network_averaged_alone_bit_for_bit() {
    let mut stack = CpuCritic::new(SPEC, 5).unwrap();
    // Online and target apart.
    real_gradients(&mut stack, 0);
    stack.step(&AdamConfig::default()).unwrap();
    let taus = [0.0, 0.5, 1.0];
    let mut singles: Vec<CpuCritic> = (0..3).map(|k| alone(&mut stack, k)).collect();
    let before = stack.target_params().unwrap();
    stack.polyak_nets(&taus).unwrap();
    for (k, one) in singles.iter_mut().enumerate() {
        one.polyak(taus[k]).unwrap();
        assert_eq!(
            bits(net(&stack.target_params().unwrap(), k)),
            bits(&one.target_params().unwrap()),
            "net {k}"
        );
    }
    assert_eq!(
        bits(net(&stack.target_params().unwrap(), 0)),
        bits(net(&before, 0))
    );
    assert_eq!(
        bits(net(&stack.target_params().unwrap(), 2)),
        bits(net(&stack.params().unwrap(), 2))
    );
    assert_ne!(
        bits(net(&stack.target_params().unwrap(), 1)),
        bits(net(&before, 1))
    );
}

/// Which networks step at each of 8 steps: every pattern, so counts drift apart (network 0
/// steps 5 times, network 1 4 times, network 2 3 times) and RAdam's warm-up ends at different
/// moments for each.
const MASKS: [[bool; 3]; 8] = [
    [true, false, false],
    [true, true, false],
    [false, false, false],
    [true, true, true],
    [false, true, true],
    [true, false, true],
    [false, true, false],
    [true, false, false],
];

#[test]
fn a_masked_step_is_each_network_stepped_alone_its_own_number_of_times_bit_for_bit() {
    for cfg in configs() {
        let mut stack = CpuCritic::new(SPEC, 13).unwrap();
        let mut singles: Vec<CpuCritic> = (0..3).map(|k| alone(&mut stack, k)).collect();
        let nets = nets();
        for (t, mask) in MASKS.iter().enumerate() {
            real_gradients(&mut stack, t as u64);
            let before = stack.params().unwrap();
            stack.step_masked(&cfg, &nets, mask).unwrap();
            for (k, one) in singles.iter_mut().enumerate() {
                let what = format!("{cfg:?}, step {t}, net {k}");
                if mask[k] {
                    one.set_grads(net(&stack.grads().unwrap(), k)).unwrap();
                    one.step(&cfg.for_net(&nets[k])).unwrap();
                } else {
                    assert_eq!(
                        bits(net(&stack.params().unwrap(), k)),
                        bits(net(&before, k)),
                        "a masked-out network moved: {what}"
                    );
                }
                assert_net_is(&mut stack, k, one, &what);
            }
        }
        assert_eq!(stack.net_steps(), [5, 4, 3]);
        // The checkpoint's one count is the largest.
        assert_eq!(stack.adam_state().unwrap().2, 5);
        // A plain step after masked ones still corrects each network by its own count.
        real_gradients(&mut stack, 99);
        stack.step_nets(&cfg, &nets).unwrap();
        for (k, one) in singles.iter_mut().enumerate() {
            one.set_grads(net(&stack.grads().unwrap(), k)).unwrap();
            one.step(&cfg.for_net(&nets[k])).unwrap();
            assert_net_is(&mut stack, k, one, &format!("{cfg:?}, plain step, net {k}"));
        }
        assert_eq!(stack.net_steps(), [6, 5, 4]);
    }
}

#[test]
fn per_network_counts_restore_and_one_count_applies_to_every_network() {
    let mut a = CpuCritic::new(SPEC, 14).unwrap();
    // Per-network counts restore; the one count of an old checkpoint
    // applies to every network.
    a.set_net_steps(&[1, 7, 2]).unwrap();
    assert_eq!(a.net_steps(), [1, 7, 2]);
    let (m, v, _) = a.adam_state().unwrap();
    a.set_adam_state(&m, &v, 4).unwrap();
    assert_eq!(a.net_steps(), [4, 4, 4]);
}

/// Parameters, Adam moments, targets (as bits) and step counts.
type State = (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u64>);

/// Everything a refused call must leave alone.
fn state(c: &mut dyn CriticBackend) -> State {
    let (m, v, _) = c.adam_state().unwrap();
    let (p, t) = (c.params().unwrap(), c.target_params().unwrap());
    (
        bits(&p),
        bits(&t),
        bits(&m),
        bits(&v),
        c.net_steps().to_vec(),
    )
}

/// Wrong lengths through the trait: a shape error each, and nothing changed.
fn refuses_wrong_lengths(c: &mut dyn CriticBackend) {
    let cfg = AdamConfig::default();
    let before = state(c);
    for nets in [&nets()[..2], &[nets()[0]; 4][..], &nets()[..0]] {
        let err = c.step_nets(&cfg, nets).unwrap_err();
        assert!(
            matches!(err, CriticError::Shape { expected: 3, .. }),
            "{err}"
        );
    }
    for (nets, mask) in [
        (&nets()[..2], &[true; 3][..]),
        (&nets()[..], &[true; 2][..]),
        (&nets()[..], &[false; 4][..]),
    ] {
        let err = c.step_masked(&cfg, nets, mask).unwrap_err();
        assert!(
            matches!(err, CriticError::Shape { expected: 3, .. }),
            "{err}"
        );
    }
    for steps in [&[1u64; 2][..], &[1; 4][..]] {
        let err = c.set_net_steps(steps).unwrap_err();
        assert!(
            matches!(err, CriticError::Shape { expected: 3, .. }),
            "{err}"
        );
    }
    for taus in [&[0.5f32; 2][..], &[0.5; 4][..]] {
        let err = c.polyak_nets(taus).unwrap_err();
        assert!(
            matches!(err, CriticError::Shape { expected: 3, .. }),
            "{err}"
        );
    }
    assert_eq!(state(c), before);
}

#[test]
fn wrong_lengths_are_refused_and_change_nothing() {
    let mut c = CpuCritic::new(SPEC, 6).unwrap();
    real_gradients(&mut c, 0);
    c.step(&AdamConfig::default()).unwrap();
    real_gradients(&mut c, 1);
    let stats = c.step_stats().unwrap();
    refuses_wrong_lengths(&mut c);
    assert_eq!(c.step_stats().unwrap(), stats);
    // The gradients were still there to step with.
    c.step_nets(&AdamConfig::default(), &nets()).unwrap();
    assert_eq!(c.adam_state().unwrap().2, 2);
}

#[cfg(feature = "gpu")]
mod gpu {
    use super::*;
    use crate::common::{assert_close, gpu_or_skip};
    use gridarena::critic::gpu::GpuCritic;

    #[test]
    fn the_gpu_steps_and_averages_per_network_like_the_cpu() {
        let Some(_) = gpu_or_skip() else { return };
        for cfg in configs() {
            let mut c = CpuCritic::new(SPEC, 7).unwrap();
            let mut g = GpuCritic::new(SPEC, 7).unwrap();
            for t in 0..6 {
                real_gradients(&mut c, t);
                g.set_grads(&c.grads().unwrap()).unwrap();
                c.step_nets(&cfg, &nets()).unwrap();
                let cpu_norms = c.step_stats().unwrap().grad_norms;
                CriticBackend::step_nets(&mut g, &cfg, &nets()).unwrap();
                let what = format!("{cfg:?}, step {t}");
                let gpu_norms = g.step_stats().unwrap().grad_norms;
                assert_close(&format!("norms {what}"), &gpu_norms, &cpu_norms, 1e-4);
                assert_close(&what, &g.params().unwrap(), &c.params().unwrap(), 1e-4);
                // Both step on from the same parameters (see tests/critic_gpu.rs).
                g.set_params(&c.params().unwrap()).unwrap();
            }
            let taus = [0.0, 0.5, 1.0];
            c.polyak_nets(&taus).unwrap();
            CriticBackend::polyak_nets(&mut g, &taus).unwrap();
            assert_close(
                "polyak_nets",
                &g.target_params().unwrap(),
                &c.target_params().unwrap(),
                1e-4,
            );
        }
    }

    #[test]
    fn the_gpu_steps_only_the_masked_networks_like_the_cpu() {
        let Some(_) = gpu_or_skip() else { return };
        for cfg in configs() {
            let mut c = CpuCritic::new(SPEC, 15).unwrap();
            let mut g = GpuCritic::new(SPEC, 15).unwrap();
            for (t, mask) in MASKS.iter().enumerate() {
                real_gradients(&mut c, t as u64);
                g.set_grads(&c.grads().unwrap()).unwrap();
                let before = g.params().unwrap();
                c.step_masked(&cfg, &nets(), mask).unwrap();
                CriticBackend::step_masked(&mut g, &cfg, &nets(), mask).unwrap();
                let what = format!("{cfg:?}, step {t}");
                let after = g.params().unwrap();
                assert_close(&what, &after, &c.params().unwrap(), 1e-4);
                for k in (0..3).filter(|&k| !mask[k]) {
                    assert_eq!(
                        bits(net(&after, k)),
                        bits(net(&before, k)),
                        "{what}: net {k}"
                    );
                }
                assert_eq!(CriticBackend::net_steps(&g), c.net_steps(), "{what}");
                let (gm, gv, _) = g.adam_state().unwrap();
                let (cm, cv, _) = c.adam_state().unwrap();
                assert_close(&format!("m {what}"), &gm, &cm, 1e-4);
                assert_close(&format!("v {what}"), &gv, &cv, 1e-4);
                // Both step on from the same parameters (see tests/critic_gpu.rs).
                g.set_params(&c.params().unwrap()).unwrap();
            }
            // A factor of 0 leaves a target as it is, bit for bit.
            let taus = [0.0, 0.5, 0.0];
            let before = g.target_params().unwrap();
            c.polyak_nets(&taus).unwrap();
            CriticBackend::polyak_nets(&mut g, &taus).unwrap();
            let after = g.target_params().unwrap();
            assert_close("masked polyak", &after, &c.target_params().unwrap(), 1e-4);
            assert_eq!(bits(net(&after, 0)), bits(net(&before, 0)));
            assert_eq!(bits(net(&after, 2)), bits(net(&before, 2)));
        }
    }

    #[test]
    fn the_gpu_refuses_wrong_lengths_and_changes_nothing() {
        let Some(_) = gpu_or_skip() else { return };
        let mut g = GpuCritic::new(SPEC, 8).unwrap();
        g.set_grads(&random(SPEC.params(), 1, 1.0)).unwrap();
        g.step(&AdamConfig::default()).unwrap();
        refuses_wrong_lengths(&mut g);
    }
}
