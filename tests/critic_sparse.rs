//! The CPU backend's sparse first layer gives the dense path's results up to float rounding
//! (outputs, gradients, input gradients, Adam steps, the target copy), each batch picks its path
//! by density, and backward's results do not depend on the thread count.

mod common;
use common::random;

use gridarena::critic::cpu::CpuCritic;
use gridarena::critic::loss::Loss;
use gridarena::critic::{AdamConfig, CriticBackend, Input, StackSpec};

const SPEC: StackSpec = StackSpec {
    network: gridarena::critic::Network::Mlp,
    nets: 3,
    input: 40,
    hidden: 24,
    layers: 2,
    head: 4,
};

/// `rows x input` bytes, each non-zero (1..=4) with probability `density`.
fn sparse_bytes(rows: usize, input: usize, density: f32, seed: u64) -> Vec<u8> {
    let coins = random(rows * input, seed, 1.0);
    let values = random(rows * input, seed + 1, 1.0);
    coins
        .iter()
        .zip(&values)
        .map(|(c, v)| {
            if (c + 1.0) / 2.0 < density {
                1 + ((v + 1.0) * 2.0).min(3.0) as u8
            } else {
                0
            }
        })
        .collect()
}

fn close(what: &str, a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

struct Batch {
    x: Vec<u8>,
    nets: Vec<u32>,
    actions: Vec<u32>,
    targets: Vec<f32>,
}

fn batch(rows: usize, density: f32, seed: u64, spec: &StackSpec) -> Batch {
    Batch {
        x: sparse_bytes(rows, spec.input, density, seed),
        nets: (0..rows)
            .map(|r| ((r * 7 + 3) % spec.nets) as u32)
            .collect(),
        actions: (0..rows).map(|r| (r % spec.head) as u32).collect(),
        targets: random(rows, seed + 2, 2.0),
    }
}

/// Everything a pass and a few Adam steps produce, with the sparse path forced on or off.
fn run(sparse: bool, b: &Batch) -> Vec<(&'static str, Vec<f32>)> {
    let mut c = CpuCritic::new(SPEC, 11).unwrap();
    c.set_sparse_threshold(if sparse { 1.0 } else { -1.0 });
    let loss = Loss::Mse {
        actions: &b.actions,
        targets: &b.targets,
        mask: None,
    };
    let mut seen = Vec::new();
    let out = c.forward(Input::U8(&b.x), &b.nets).unwrap().to_vec();
    seen.push(("forward", out));
    let d_out = random(b.nets.len() * SPEC.head, 5, 1.0);
    c.backward_with_input(&d_out).unwrap();
    seen.push(("grads", c.grads().unwrap()));
    seen.push(("input grads", c.input_grad().to_vec()));
    let adam = AdamConfig::default();
    for _ in 0..3 {
        c.forward(Input::U8(&b.x), &b.nets).unwrap();
        c.loss_backward(&loss).unwrap();
        seen.push(("loss grads", c.grads().unwrap()));
        c.step(&adam).unwrap();
        seen.push(("params", c.params().unwrap()));
    }
    c.polyak(0.5).unwrap();
    seen.push((
        "target forward",
        c.forward_target(Input::U8(&b.x), &b.nets).unwrap(),
    ));
    // New parameters from outside: the transposed first layer follows them.
    let shifted: Vec<f32> = c.params().unwrap().iter().map(|p| p * 0.5 + 0.01).collect();
    c.set_params(&shifted).unwrap();
    let out = c.forward(Input::U8(&b.x), &b.nets).unwrap().to_vec();
    seen.push(("forward after set_params", out));
    seen
}

#[test]
fn sparse_first_layer_matches_dense_at_every_density() {
    for (i, density) in [0.0, 0.02, 0.1, 0.3, 0.6, 1.0].into_iter().enumerate() {
        let b = batch(300, density, 100 + i as u64, &SPEC);
        let (dense, sparse) = (run(false, &b), run(true, &b));
        for ((what, d), (_, s)) in dense.iter().zip(&sparse) {
            close(&format!("density {density}: {what}"), d, s, 2e-4);
        }
    }
}

#[test]
fn each_batch_takes_the_path_its_density_calls_for() {
    // With the default threshold a sparse batch gives exactly the forced sparse result and a
    // dense one exactly the forced dense result (the two differ in rounding).
    let forced = |threshold: Option<f32>, b: &Batch| {
        let mut c = CpuCritic::new(SPEC, 3).unwrap();
        if let Some(t) = threshold {
            c.set_sparse_threshold(t);
        }
        c.forward(Input::U8(&b.x), &b.nets).unwrap();
        let d_out = random(b.nets.len() * SPEC.head, 9, 1.0);
        c.backward(&d_out).unwrap();
        c.grads().unwrap()
    };
    let default = CpuCritic::new(SPEC, 0).unwrap().sparse_threshold();
    assert!(default > 0.05 && default < 0.95, "{default}");
    let sparse = batch(200, 0.05, 1, &SPEC);
    let dense = batch(200, 0.9, 2, &SPEC);
    assert_eq!(forced(None, &sparse), forced(Some(1.0), &sparse));
    assert_eq!(forced(None, &dense), forced(Some(-1.0), &dense));
    assert_ne!(
        forced(Some(1.0), &sparse),
        forced(Some(-1.0), &sparse),
        "the two paths round differently, so the equalities above tell them apart"
    );
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    // One shared network over 2500 rows: backward splits it into several work units whose
    // gradients are summed in an order that must not depend on the pool.
    let spec = StackSpec { nets: 1, ..SPEC };
    for (density, threshold) in [(0.1, 1.0), (0.1, -1.0), (0.7, -1.0)] {
        let b = batch(2500, density, 42, &spec);
        let loss = Loss::Mse {
            actions: &b.actions,
            targets: &b.targets,
            mask: None,
        };
        let with = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let mut c = CpuCritic::new(spec, 8).unwrap();
                c.set_sparse_threshold(threshold);
                let mut seen = Vec::new();
                for _ in 0..2 {
                    seen.extend(c.forward(Input::U8(&b.x), &b.nets).unwrap().iter().copied());
                    c.loss_backward(&loss).unwrap();
                    seen.extend_from_slice(&c.grads().unwrap());
                    c.step(&AdamConfig::default()).unwrap();
                }
                seen.extend_from_slice(&c.params().unwrap());
                seen
            })
        };
        let one = with(1);
        for threads in [2, 3, 5] {
            assert!(
                one == with(threads),
                "density {density}, threshold {threshold}: 1 and {threads} threads differ"
            );
        }
    }
}
