//! Online DQN, the algorithm docs/new_algorithm.md adds: it learns, and it gets seeds, sweeps,
//! exact resume, evaluation and `load_policy` from the layers below it without code of its
//! own (its MPI data parallelism is checked in tests/mpi.rs).

use std::path::PathBuf;

use gridarena::critic::Device;
use gridarena::train::config::{Algo, LearnConfig, NetworkConfig, OnlineDqnConfig, RunConfig};
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
use runs::{deterministic_metrics, params};
use sweeps::{assert_resumes_exactly, check_every_replica, cpu, target_params, temp, with_sweep};

fn small() -> RunConfig {
    RunConfig {
        algo: Algo::OnlineDqn,
        scenario: Some(PathBuf::from("tests/data/chase.ron")),
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
        online_dqn: OnlineDqnConfig {
            epochs: 2,
            minibatches: 4,
            target_tau: 0.2,
        },
        ..RunConfig::default()
    }
}

#[test]
fn online_dqn_learns_to_chase_better_than_the_random_policy() {
    let cfg = RunConfig {
        total_steps: 16 * 8 * 120,
        checkpoint_every: 1000,
        ..small()
    };
    let run = temp("dqn-learns");
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
    // The target network trails the online one.
    assert_ne!(params(&run), target_params(&run));
    let _ = std::fs::remove_dir_all(run);
}

#[test]
fn online_dqn_replicas_equal_their_single_runs_bit_for_bit() {
    let base = small();
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(
            base.clone(),
            &["target_tau=[0.2, 0.05]", "gamma=[0.99, 0.9]"],
        )
    };
    assert_eq!(sweep.replica_count(), 8);
    // Parameters, targets, returns per update and `eval --replica k` of every replica.
    check_every_replica("online-dqn", (&base, &sweep));
}

#[test]
fn online_dqn_resumes_exactly_and_its_policy_loads() {
    let run = assert_resumes_exactly(&small(), "online-dqn", true);
    let metrics = deterministic_metrics(&run);
    assert!(
        metrics
            .iter()
            .all(|m| m["loss"].as_f64().is_some_and(f64::is_finite))
    );
    // The restored policy's Q-values are the trained online network's.
    let mut policy = load_policy(&run).unwrap();
    let obs = policy.learner().batch().buffers().obs.clone();
    let q = policy.learner().q_values(&obs).unwrap();
    let actions = policy.learner().batch().layout().actions;
    assert_eq!(q.len(), actions, "one Q per action for the one learner");
    assert!(
        q.iter().all(|v| v.is_finite()) && q.iter().any(|v| *v != q[0]),
        "{q:?}"
    );
    let _ = std::fs::remove_dir_all(run);
}

#[test]
fn online_dqn_refuses_what_it_does_not_take() {
    for cfg in [
        {
            let mut cfg = small();
            cfg.learn.opponent_models = true;
            cfg
        },
        {
            let mut cfg = small();
            cfg.network.kind = gridarena::train::config::NetworkKind::Gru;
            cfg
        },
    ] {
        let run = temp("dqn-refused");
        let err = train(&cfg, &run, &TrainOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("online_dqn"), "{err}");
        let _ = std::fs::remove_dir_all(run);
    }
}
