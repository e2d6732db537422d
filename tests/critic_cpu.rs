//! The CPU critic backend: gradients against central finite differences of an f64 reference,
//! the optimiser's arithmetic, learning on synthetic tasks, and determinism.

mod common;
use common::{classification_labels, random};

use gridarena::critic::cpu::CpuCritic;
use gridarena::critic::hl_gauss::Support;
use gridarena::critic::loss::Loss;
use gridarena::critic::{AdamConfig, CriticBackend, Input, LN_EPS, RowPlan, StackSpec};

/// An f64 forward pass of one network with the same layout (the test's own reference).
fn forward64(spec: &StackSpec, params: &[f64], x: &[f64]) -> Vec<f64> {
    let mut h: Vec<f64> = x.to_vec();
    for (l, o) in spec.layer_offsets().iter().enumerate() {
        let mut z = vec![0.0; o.fan_out];
        for (j, zj) in z.iter_mut().enumerate() {
            *zj = params[o.bias + j]
                + (0..o.fan_in)
                    .map(|i| params[o.weight + j * o.fan_in + i] * h[i])
                    .sum::<f64>();
        }
        if l == spec.layers {
            return z;
        }
        let n = z.len() as f64;
        let mean = z.iter().sum::<f64>() / n;
        let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let inv = 1.0 / (var + LN_EPS as f64).sqrt();
        h = (0..z.len())
            .map(|j| (params[o.gamma + j] * (z[j] - mean) * inv + params[o.beta + j]).max(0.0))
            .collect();
    }
    unreachable!()
}

/// f64 loss over a batch, mirroring `critic::loss`.
fn loss64(spec: &StackSpec, all: &[f64], x: &[f64], nets: &[u32], loss: &Loss) -> f64 {
    let per = spec.params_per_net();
    let rows = nets.len();
    let outs: Vec<Vec<f64>> = (0..rows)
        .map(|r| {
            let k = nets[r] as usize;
            forward64(
                spec,
                &all[k * per..(k + 1) * per],
                &x[r * spec.input..(r + 1) * spec.input],
            )
        })
        .collect();
    match loss {
        Loss::Mse {
            actions, targets, ..
        }
        | Loss::Huber {
            actions, targets, ..
        } => {
            let mut l = 0.0;
            for r in 0..rows {
                let e = outs[r][actions[r] as usize] - targets[r] as f64;
                l += match loss {
                    Loss::Huber { delta, .. } if e.abs() > *delta as f64 => {
                        *delta as f64 * (e.abs() - 0.5 * *delta as f64)
                    }
                    _ => 0.5 * e * e,
                };
            }
            l / rows as f64
        }
        Loss::CrossEntropy { groups, labels, .. } => {
            let classes = spec.head / groups;
            let mut l = 0.0;
            for r in 0..rows {
                for g in 0..*groups {
                    let z = &outs[r][g * classes..(g + 1) * classes];
                    let max = z.iter().cloned().fold(f64::MIN, f64::max);
                    let lse = max + z.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
                    l += lse - z[labels[r * groups + g] as usize];
                }
            }
            l / (rows * groups) as f64
        }
        Loss::HlGauss {
            bins,
            v_min,
            v_max,
            sigma,
            actions,
            targets,
            ..
        } => {
            // The target histogram does not depend on the parameters: the library's, in f64.
            let support = Support {
                bins: *bins,
                v_min: *v_min,
                v_max: *v_max,
                sigma: *sigma,
            };
            let mut p = vec![0.0f32; *bins];
            let mut l = 0.0;
            for r in 0..rows {
                support.histogram(targets[r], &mut p);
                let a = actions[r] as usize * bins;
                let z = &outs[r][a..a + bins];
                let max = z.iter().cloned().fold(f64::MIN, f64::max);
                let lse = max + z.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
                l -= (0..*bins).map(|j| p[j] as f64 * (z[j] - lse)).sum::<f64>();
            }
            l / rows as f64
        }
    }
}

/// Backward's parameter gradients against central differences of the f64 reference.
fn check_gradients(loss_of: impl Fn(usize) -> (Loss<'static>, &'static str)) {
    check_gradients_with_head(4, loss_of);
}

/// [`check_gradients`] for a head of `head` outputs.
fn check_gradients_with_head(
    head: usize,
    loss_of: impl Fn(usize) -> (Loss<'static>, &'static str),
) {
    let spec = StackSpec {
        network: Default::default(),
        nets: 2,
        input: 6,
        hidden: 8,
        layers: 2,
        head,
    };
    let rows = 10;
    let nets: Vec<u32> = (0..rows as u32).map(|r| (r * 7 + 1) % 2).collect();
    let x = random(rows * spec.input, 3, 1.0);
    let mut critic = CpuCritic::new(spec, 11).unwrap();
    // Spread LayerNorm's parameters away from their initial 1 and 0 so they are tested too.
    let mut p = critic.params().unwrap();
    for o in &spec.layer_offsets()[..spec.layers] {
        for k in 0..spec.nets {
            let base = k * spec.params_per_net();
            for j in 0..o.fan_out {
                p[base + o.gamma + j] = 1.0 + 0.3 * ((j as f32 * 1.7).sin());
                p[base + o.beta + j] = 0.2 * ((j as f32 * 2.3).cos());
            }
        }
    }
    critic.set_params(&p).unwrap();
    let (loss, name) = loss_of(rows);
    critic.forward(Input::F32(&x), &nets).unwrap();
    critic.loss_backward(&loss).unwrap();
    let analytic = critic.grads().unwrap();

    let p64: Vec<f64> = p.iter().map(|v| *v as f64).collect();
    let x64: Vec<f64> = x.iter().map(|v| *v as f64).collect();
    let eps = 1e-6;
    let mut worst = 0.0f64;
    for i in 0..p64.len() {
        let (mut up, mut down) = (p64.clone(), p64.clone());
        up[i] += eps;
        down[i] -= eps;
        let numeric = (loss64(&spec, &up, &x64, &nets, &loss)
            - loss64(&spec, &down, &x64, &nets, &loss))
            / (2.0 * eps);
        let a = analytic[i] as f64;
        let rel = (a - numeric).abs() / a.abs().max(numeric.abs()).max(1e-4);
        worst = worst.max(rel);
        assert!(
            rel < 1e-3,
            "{name}: parameter {i}: backward {a}, finite difference {numeric}"
        );
    }
    assert!(worst < 1e-3, "{name}: worst relative error {worst}");
}

#[test]
fn backward_matches_finite_differences_for_mse() {
    check_gradients(|rows| {
        let actions: &'static [u32] = Box::leak(
            (0..rows as u32)
                .map(|r| r % 4)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let targets: &'static [f32] = Box::leak(random(rows, 5, 2.0).into_boxed_slice());
        (
            Loss::Mse {
                actions,
                targets,
                mask: None,
            },
            "mse",
        )
    });
}

#[test]
fn backward_matches_finite_differences_for_huber() {
    check_gradients(|rows| {
        let actions: &'static [u32] = Box::leak(
            (0..rows as u32)
                .map(|r| (r + 1) % 4)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let targets: &'static [f32] = Box::leak(random(rows, 6, 3.0).into_boxed_slice());
        (
            Loss::Huber {
                delta: 0.5,
                actions,
                targets,
                mask: None,
            },
            "huber",
        )
    });
}

#[test]
fn backward_matches_finite_differences_for_cross_entropy() {
    check_gradients(|rows| {
        let labels: &'static [u32] = Box::leak(
            (0..rows as u32 * 2)
                .map(|r| (r * 3) % 2)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        (
            Loss::CrossEntropy {
                groups: 2,
                labels,
                mask: None,
            },
            "cross-entropy",
        )
    });
}

#[test]
fn backward_matches_finite_differences_for_hl_gauss() {
    // 3 actions x 7 bins over [-2, 2]; targets inside and outside the support.
    check_gradients_with_head(21, |rows| {
        let actions: &'static [u32] = Box::leak(
            (0..rows as u32)
                .map(|r| (r * 2) % 3)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let targets: &'static [f32] = Box::leak(random(rows, 7, 3.0).into_boxed_slice());
        (
            Loss::HlGauss {
                bins: 7,
                v_min: -2.0,
                v_max: 2.0,
                sigma: 0.75 * 4.0 / 7.0,
                actions,
                targets,
                mask: None,
            },
            "hl-gauss",
        )
    });
}

#[test]
fn input_gradient_matches_finite_differences() {
    let spec = StackSpec {
        network: Default::default(),
        nets: 1,
        input: 5,
        hidden: 6,
        layers: 1,
        head: 3,
    };
    let x = random(4 * spec.input, 9, 1.0);
    let nets = vec![0u32; 4];
    let mut critic = CpuCritic::new(spec, 2).unwrap();
    let d_out = random(4 * spec.head, 4, 1.0);
    critic.forward(Input::F32(&x), &nets).unwrap();
    critic.backward_with_input(&d_out).unwrap();
    let analytic = critic.input_grad().to_vec();
    let p64: Vec<f64> = critic.params().unwrap().iter().map(|v| *v as f64).collect();
    let objective = |x: &[f64]| -> f64 {
        (0..4)
            .map(|r| {
                let o = forward64(&spec, &p64, &x[r * 5..(r + 1) * 5]);
                (0..3).map(|j| o[j] * d_out[r * 3 + j] as f64).sum::<f64>()
            })
            .sum()
    };
    let x64: Vec<f64> = x.iter().map(|v| *v as f64).collect();
    for i in 0..x64.len() {
        let (mut up, mut down) = (x64.clone(), x64.clone());
        up[i] += 1e-6;
        down[i] -= 1e-6;
        let numeric = (objective(&up) - objective(&down)) / 2e-6;
        let a = analytic[i] as f64;
        assert!(
            (a - numeric).abs() / a.abs().max(numeric.abs()).max(1e-4) < 1e-3,
            "input {i}: {a} vs {numeric}"
        );
    }
}

#[test]
fn u8_and_f32_inputs_give_the_same_outputs() {
    let spec = StackSpec {
        network: Default::default(),
        nets: 3,
        input: 7,
        hidden: 8,
        layers: 2,
        head: 5,
    };
    let bytes: Vec<u8> = (0..5 * 7).map(|i| (i * 37 % 7) as u8).collect();
    let floats: Vec<f32> = bytes.iter().map(|&b| b as f32).collect();
    let nets = [2u32, 0, 1, 2, 0];
    let mut c = CpuCritic::new(spec, 1).unwrap();
    let a = c.forward(Input::U8(&bytes), &nets).unwrap().to_vec();
    let b = c.forward(Input::F32(&floats), &nets).unwrap().to_vec();
    assert_eq!(a, b);
}

#[test]
fn rows_use_their_own_network() {
    // Two networks, rows interleaved: each row's output equals a single-network stack's.
    let spec = StackSpec {
        network: Default::default(),
        nets: 2,
        input: 4,
        hidden: 6,
        layers: 1,
        head: 3,
    };
    let x = random(6 * 4, 1, 1.0);
    let nets = [1u32, 0, 0, 1, 1, 0];
    let mut both = CpuCritic::new(spec, 8).unwrap();
    let out = both.forward(Input::F32(&x), &nets).unwrap().to_vec();
    let per = spec.params_per_net();
    for k in 0..2 {
        let single = StackSpec { nets: 1, ..spec };
        let mut one = CpuCritic::new(single, 0).unwrap();
        one.set_params(&both.params().unwrap()[k * per..(k + 1) * per])
            .unwrap();
        for r in (0..6).filter(|&r| nets[r] == k as u32) {
            let o = one
                .forward(Input::F32(&x[r * 4..(r + 1) * 4]), &[0])
                .unwrap();
            assert_eq!(o, &out[r * 3..(r + 1) * 3], "row {r}");
        }
    }
}

#[test]
fn adam_step_follows_the_formula() {
    let spec = StackSpec {
        network: Default::default(),
        nets: 1,
        input: 1,
        hidden: 1,
        layers: 1,
        head: 1,
    };
    let mut c = CpuCritic::new(spec, 0).unwrap();
    let before = c.params().unwrap();
    c.forward(Input::F32(&[0.5]), &[0]).unwrap();
    c.backward(&[1.0]).unwrap();
    let g = c.grads().unwrap();
    let cfg = AdamConfig {
        lr: 0.1,
        max_grad_norm: None,
        ..AdamConfig::default()
    };
    c.step(&cfg).unwrap();
    for i in 0..before.len() {
        // First step: m_hat = g, v_hat = g^2, so the update is lr * g / (|g| + eps).
        let expected = before[i] - 0.1 * g[i] / (g[i].abs() + 1e-8);
        assert!(
            (c.params().unwrap()[i] - expected).abs() < 1e-6,
            "param {i}"
        );
    }
}

#[test]
fn clipping_bounds_each_networks_gradient_norm() {
    let spec = StackSpec {
        network: Default::default(),
        nets: 2,
        input: 3,
        hidden: 4,
        layers: 1,
        head: 2,
    };
    let mut c = CpuCritic::new(spec, 0).unwrap();
    c.forward(Input::F32(&[1.0, 2.0, 3.0, 3.0, 2.0, 1.0]), &[0, 1])
        .unwrap();
    // Network 0 gets a large gradient (clipped), network 1 a tiny one (left alone).
    c.backward(&[100.0, -100.0, 1e-3, 1e-3]).unwrap();
    let grads = c.grads().unwrap();
    let cfg = AdamConfig {
        max_grad_norm: Some(1.0),
        ..AdamConfig::default()
    };
    c.step(&cfg).unwrap();
    let stats = c.step_stats().unwrap();
    let per_net = spec.params_per_net();
    let norm = |v: &[f32]| v.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    assert_eq!(stats.grad_norms.len(), 2);
    assert!(
        stats.grad_norms[0] > 1.0 && stats.grad_norms[1] < 1.0,
        "{stats:?}"
    );
    for (k, g) in grads.chunks(per_net).enumerate() {
        assert!((norm(g) - stats.grad_norms[k] as f64).abs() < 1e-4 * norm(g).max(1.0));
    }
    // After the first step Adam's first moment is (1 - beta1) x the gradient it applied: the
    // clipped one has norm exactly max_grad_norm, the small one is the raw gradient.
    let (m, _, _) = c.adam_state().unwrap();
    let applied: Vec<f32> = m.iter().map(|x| x / (1.0 - cfg.beta1)).collect();
    let clipped = norm(&applied[..per_net]);
    assert!((clipped - 1.0).abs() < 1e-4, "clipped norm {clipped}");
    for (a, g) in applied[per_net..].iter().zip(&grads[per_net..]) {
        assert!((a - g).abs() <= 1e-6 * g.abs().max(1e-6), "{a} vs {g}");
    }
}

fn regression(seed: u64) -> (Vec<f32>, f32, f32) {
    // Targets are a fixed nonlinear function of the input; 4 actions, chosen at random.
    let spec = StackSpec {
        network: Default::default(),
        nets: 1,
        input: 8,
        hidden: 32,
        layers: 2,
        head: 4,
    };
    let rows = 256;
    let x = random(rows * 8, seed + 1, 1.0);
    let actions: Vec<u32> = (0..rows as u32).map(|r| r * 13 % 4).collect();
    let targets: Vec<f32> = (0..rows)
        .map(|r| {
            let xr = &x[r * 8..(r + 1) * 8];
            (xr[actions[r] as usize] * 2.0).sin() + xr[7] * xr[6]
        })
        .collect();
    let nets = vec![0u32; rows];
    let mut c = CpuCritic::new(spec, seed).unwrap();
    let cfg = AdamConfig {
        lr: 3e-3,
        ..AdamConfig::default()
    };
    let loss = Loss::Mse {
        actions: &actions,
        targets: &targets,
        mask: None,
    };
    let mut first = 0.0;
    let mut last = 0.0;
    for step in 0..400 {
        c.forward(Input::F32(&x), &nets).unwrap();
        c.loss_backward(&loss).unwrap();
        last = c.last_loss().unwrap();
        if step == 0 {
            first = last;
        }
        c.step(&cfg).unwrap();
    }
    (c.params().unwrap(), first, last)
}

#[test]
fn fits_a_synthetic_regression_and_is_deterministic() {
    let (params, first, last) = regression(4);
    assert!(
        last < 0.05 * first && last < 0.02,
        "loss {first} -> {last} after 400 steps"
    );
    let (again, _, last_again) = regression(4);
    assert_eq!(params, again, "same seed, same parameters");
    assert_eq!(last, last_again);
}

#[test]
fn fits_a_synthetic_classification() {
    // Two opponents (groups), 3 classes each; labels are a fixed function of the input.
    let spec = StackSpec {
        network: Default::default(),
        nets: 2,
        input: 6,
        hidden: 32,
        layers: 2,
        head: 6,
    };
    let rows = 256;
    let x = random(rows * 6, 2, 1.0);
    let labels = classification_labels(&x, rows);
    let nets: Vec<u32> = (0..rows as u32).map(|r| r % 2).collect();
    let mut c = CpuCritic::new(spec, 1).unwrap();
    let cfg = AdamConfig {
        lr: 3e-3,
        ..AdamConfig::default()
    };
    let loss = Loss::CrossEntropy {
        groups: 2,
        labels: &labels,
        mask: None,
    };
    let mut last = 0.0;
    for _ in 0..300 {
        c.forward(Input::F32(&x), &nets).unwrap();
        c.loss_backward(&loss).unwrap();
        last = c.last_loss().unwrap();
        c.step(&cfg).unwrap();
    }
    let out = c.forward(Input::F32(&x), &nets).unwrap();
    let correct = (0..rows * 2)
        .filter(|&i| {
            let z = &out[i * 3..i * 3 + 3];
            let best = (0..3).max_by(|&a, &b| z[a].total_cmp(&z[b])).unwrap();
            best as u32 == labels[i]
        })
        .count();
    let accuracy = correct as f32 / (rows * 2) as f32;
    assert!(
        accuracy > 0.95 && last < 0.15,
        "accuracy {accuracy}, loss {last} after 300 steps"
    );
}

#[test]
fn row_plans_group_rows_by_network_stably() {
    let plan = RowPlan::new(&[2, 0, 1, 0, 2], 3).unwrap();
    assert_eq!(plan.order, vec![1, 3, 2, 0, 4]);
    assert_eq!(plan.starts, vec![0, 2, 3, 5]);
    assert!(RowPlan::new(&[3], 3).is_err());
}

#[test]
fn sizing_counts_the_parameters_exactly() {
    let spec = StackSpec {
        network: Default::default(),
        nets: 8,
        input: 147,
        hidden: 128,
        layers: 2,
        head: 5,
    };
    let per = (147 * 128 + 128 + 2 * 128) + (128 * 128 + 128 + 2 * 128) + (128 * 5 + 5);
    assert_eq!(spec.params_per_net(), per);
    let mut c = CpuCritic::new(spec, 0).unwrap();
    assert_eq!(c.params().unwrap().len(), 8 * per);
    let s = spec.sizing(4096, gridarena::critic::Backend::Cpu);
    assert_eq!(s.params, 8 * per as u64 * 4);
    assert_eq!(s.adam, 2 * s.params);
    // 8 x 36,613 parameters x 4 B x 5 copies, plus 4096 rows of activations.
    assert_eq!(
        s.params + s.grads + s.adam + s.target,
        5 * 8 * per as u64 * 4
    );
    assert!(s.total() > s.params * 5 && s.total() < 64 << 20, "{s:?}");
}

#[test]
fn polyak_and_copy_update_the_target() {
    let spec = StackSpec {
        network: Default::default(),
        nets: 1,
        input: 2,
        hidden: 2,
        layers: 1,
        head: 1,
    };
    let mut c = CpuCritic::new(spec, 0).unwrap();
    let p0 = c.params().unwrap();
    let shifted: Vec<f32> = p0.iter().map(|v| v + 1.0).collect();
    c.set_params(&shifted).unwrap();
    c.polyak(0.25).unwrap();
    for (t, p) in c.target_params().unwrap().iter().zip(&p0) {
        assert!((t - (p + 0.25)).abs() < 1e-6);
    }
    c.polyak(1.0).unwrap();
    assert_eq!(c.target_params().unwrap(), c.params().unwrap());
}

#[test]
fn a_shared_network_split_over_threads_gets_the_same_gradients() {
    // A single network's 2500 rows: forward splits them by thread count, backward into work
    // units of a fixed size whose gradients are summed in a fixed order, so the gradients are
    // the same to the bit whatever the pool.
    let spec = StackSpec {
        network: Default::default(),
        nets: 1,
        input: 10,
        hidden: 16,
        layers: 2,
        head: 3,
    };
    let rows = 2500;
    let x = random(rows * 10, 21, 1.0);
    let nets = vec![0u32; rows];
    let d_out = random(rows * 3, 22, 1.0);
    let grads_with = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut c = CpuCritic::new(spec, 5).unwrap();
            c.forward(Input::F32(&x), &nets).unwrap();
            c.backward_with_input(&d_out).unwrap();
            (c.grads().unwrap(), c.input_grad().to_vec())
        })
    };
    let (one, one_in) = grads_with(1);
    let (four, four_in) = grads_with(4);
    assert_eq!(
        one_in, four_in,
        "input gradients are per row and do not depend on the split"
    );
    assert_eq!(one, four, "weight gradients");
}

#[test]
fn backward_before_any_forward_is_an_error_not_a_panic() {
    let spec = StackSpec {
        network: Default::default(),
        nets: 1,
        input: 2,
        hidden: 2,
        layers: 1,
        head: 1,
    };
    let mut c = CpuCritic::new(spec, 0).unwrap();
    assert!(c.backward(&[]).is_err());
    assert!(
        c.forward(Input::F32(&[1.0]), &[0]).is_err(),
        "input of the wrong length"
    );
    assert!(
        c.forward(Input::F32(&[1.0, 2.0]), &[3]).is_err(),
        "a network the stack does not have"
    );
}
