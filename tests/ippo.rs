//! IPPO: it finds the known answer of small matrix games, learns to chase better than random,
//! and gets seeds, sweeps, exact resume, evaluation and `load_policy` from the layers below it
//! (its MPI data parallelism is checked in tests/mpi.rs).

use std::path::{Path, PathBuf};

use gridarena::critic::Device;
use gridarena::train::config::{Algo, LearnConfig, NetworkConfig, PpoConfig, RunConfig};
use gridarena::train::eval::evaluate;
use gridarena::train::{TrainOptions, load_policy, train};

#[path = "common/checks.rs"]
mod checks;
#[path = "common/runs.rs"]
mod runs;
#[path = "common/skip.rs"]
mod skip;
#[path = "common/sweeps.rs"]
mod sweeps;
use runs::deterministic_metrics;
use sweeps::{assert_resumes_exactly, check_replicas_equal_single_runs, cpu, temp, with_sweep};

fn small(scenario: &str) -> RunConfig {
    RunConfig {
        algo: Algo::Ippo,
        scenario: Some(PathBuf::from(scenario)),
        device: Device::Cpu,
        arenas: 16,
        rollout: 8,
        seed: 11,
        total_steps: 16 * 8 * 6,
        checkpoint_every: 2,
        network: NetworkConfig {
            hidden: 32,
            layers: 1,
            ..Default::default()
        },
        learn: LearnConfig {
            lr: 3e-3,
            ..Default::default()
        },
        ppo: PpoConfig {
            epochs: 2,
            minibatches: 4,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

/// The trained policy's probabilities `[N, A]` at the start of an episode.
fn policy_probabilities(run: &Path) -> Vec<Vec<f32>> {
    let mut policy = load_policy(run).unwrap();
    let obs = policy.learner().batch().buffers().obs.clone();
    let logits = policy.learner().q_values(&obs).unwrap();
    let actions = policy.learner().batch().layout().actions;
    logits
        .chunks_exact(actions)
        .map(|z| {
            let max = z.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            let e: Vec<f32> = z.iter().map(|x| (x - max).exp()).collect();
            let s: f32 = e.iter().sum();
            e.iter().map(|x| x / s).collect()
        })
        .collect()
}

/// A two-player game written to a file: `payoffs` per joint action, player 0's action most
/// significant.
fn matrix_game(name: &str, payoffs: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("gridarena-ippo-{name}-{}.ron", std::process::id()));
    let text = format!(
        "Scenario(name: \"{name}\", substrate: MatrixGame((actions: 2, payoffs: {payoffs})), \
         roles: [(kind: player, count: 2)], max_steps: 8)"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn ippo_finds_the_known_answers_of_matrix_games() {
    // Prisoner's dilemma: defecting (action 1) strictly dominates. A team game: both choosing
    // action 0 pays 10 each, both choosing 1 pays 2, miscoordination 0: the optimum is (0, 0).
    for (name, payoffs, best) in [
        (
            "dilemma",
            "[[3.0, 3.0], [0.0, 5.0], [5.0, 0.0], [1.0, 1.0]]",
            1,
        ),
        ("team", "[[10.0, 10.0], [0.0, 0.0], [0.0, 0.0], [2.0, 2.0]]", 0),
    ] {
        let scenario = matrix_game(name, payoffs);
        let cfg = RunConfig {
            total_steps: 16 * 8 * 60,
            checkpoint_every: 1000,
            ..small(scenario.to_str().unwrap())
        };
        let run = temp(&format!("ippo-{name}"));
        train(&cfg, &run, &TrainOptions::default()).unwrap();
        let p = policy_probabilities(&run);
        assert_eq!(p.len(), 2);
        for (player, probs) in p.iter().enumerate() {
            assert!(
                probs[best] > 0.9,
                "{name}: player {player} plays the known answer {best} with {probs:?}"
            );
        }
        let _ = std::fs::remove_dir_all(run);
        let _ = std::fs::remove_file(scenario);
    }
}

#[test]
fn ippo_learns_to_chase_better_than_the_random_policy() {
    let cfg = RunConfig {
        total_steps: 16 * 8 * 150,
        checkpoint_every: 1000,
        ..small("tests/data/chase.ron")
    };
    let run = temp("ippo-learns");
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let report = evaluate(&run, 40, &cpu()).unwrap();
    let mean = |r: &[f64]| r.iter().sum::<f64>() / r.len() as f64;
    let (learned, random) = (
        mean(&report.policy.per_agent),
        mean(&report.random.per_agent),
    );
    assert!(
        learned > random + 0.1,
        "greedy {learned:.3} against random {random:.3}"
    );
    let _ = std::fs::remove_dir_all(run);
}

#[test]
fn ippo_replicas_equal_their_single_runs_bit_for_bit() {
    let base = small("tests/data/chase.ron");
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(base.clone(), &["clip=[0.2, 0.1]", "ent_coef=[0.01, 0.0]"])
    };
    assert_eq!(sweep.replica_count(), 8);
    let replicas = sweep.replicas().unwrap();
    let multi = temp("ippo-sweep");
    train(&sweep, &multi, &TrainOptions::default()).unwrap();
    check_replicas_equal_single_runs(&multi, (&base, &replicas), &[0, 3, 6], false);
    let _ = std::fs::remove_dir_all(multi);
}

#[test]
fn ippo_resumes_exactly_and_its_policy_loads() {
    let run = assert_resumes_exactly(&small("tests/data/chase.ron"), "ippo", false);
    let metrics = deterministic_metrics(&run);
    assert!(
        metrics
            .iter()
            .all(|m| m["loss"].as_f64().is_some_and(f64::is_finite))
    );
    let p = policy_probabilities(&run);
    assert_eq!(p.len(), 1, "one learner");
    assert!(p[0].iter().all(|x| x.is_finite() && *x > 0.0), "{p:?}");
    let _ = std::fs::remove_dir_all(run);
}

#[test]
fn ippo_refuses_what_it_does_not_take() {
    for cfg in [
        {
            let mut cfg = small("tests/data/chase.ron");
            cfg.learn.opponent_models = true;
            cfg
        },
        {
            let mut cfg = small("tests/data/chase.ron");
            cfg.network.kind = gridarena::train::config::NetworkKind::Gru;
            cfg
        },
    ] {
        let run = temp("ippo-refused");
        let err = train(&cfg, &run, &TrainOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("ippo"), "{err}");
        let _ = std::fs::remove_dir_all(run);
    }
}

#[test]
fn ippo_on_the_gpu_backend_ends_where_the_cpu_one_does() {
    if !skip::gpu_adapter_present() {
        return;
    }
    let mut ends = Vec::new();
    for device in [Device::Cpu, Device::Gpu] {
        let cfg = RunConfig {
            device,
            total_steps: 16 * 8 * 3,
            ..small("tests/data/chase.ron")
        };
        let run = temp(&format!("ippo-{device:?}"));
        train(&cfg, &run, &TrainOptions::default()).unwrap();
        ends.push(runs::params(&run));
        let _ = std::fs::remove_dir_all(run);
    }
    let (cpu, gpu) = (&ends[0], &ends[1]);
    assert_eq!(cpu.len(), gpu.len());
    let worst = cpu
        .iter()
        .zip(gpu)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(worst <= 1e-4, "policy and value parameters differ by up to {worst}");
}
