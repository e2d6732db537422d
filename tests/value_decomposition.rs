//! PQN-VDN: it finds the optimum of a team game, learns to chase better than random, and gets
//! seeds, sweeps, exact resume, evaluation and `load_policy` from the layers below it (its MPI
//! data parallelism is checked in tests/mpi.rs).

use std::path::PathBuf;

use gridarena::critic::Device;
use gridarena::train::config::{Algo, LearnConfig, NetworkConfig, PqnConfig, RunConfig, ValueLoss};
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
        algo: Algo::PqnVdn,
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
        pqn: PqnConfig {
            epochs: 2,
            minibatches: 4,
            lambda: 0.5,
        },
        ..RunConfig::default()
    }
}

/// A two-player team game: both choosing action 0 pays 10 each, both choosing 1 pays 2,
/// miscoordination 0 (the team's reward is the sum).
fn team_game() -> PathBuf {
    let path = std::env::temp_dir().join(format!("gridarena-vdn-team-{}.ron", std::process::id()));
    std::fs::write(
        &path,
        "Scenario(name: \"team\", substrate: MatrixGame((actions: 2, payoffs: [[10.0, 10.0], \
         [0.0, 0.0], [0.0, 0.0], [2.0, 2.0]])), roles: [(kind: player, count: 2)], max_steps: 8)",
    )
    .unwrap();
    path
}

#[test]
fn pqn_vdn_played_uniformly_ranks_the_optimum_of_a_team_game_first() {
    let scenario = team_game();
    // Played uniformly throughout (epsilon stays 1), the additive fit of the team's rewards
    // ranks action 0 first for both (row and column means 10 against 2), and the greedy joint
    // action read from it is the optimum. With epsilon decaying, VDN, like independent
    // learners, can settle on (1, 1): a miscoordinated exploration step pays 0 (relative
    // overgeneralisation). A short horizon (gamma 0.5) keeps the bootstrapped values, far from
    // converged in this budget, from drowning the payoffs.
    let mut cfg = RunConfig {
        total_steps: 16 * 8 * 60,
        checkpoint_every: 1000,
        ..small(scenario.to_str().unwrap())
    };
    cfg.learn.eps_finish = 1.0;
    cfg.learn.gamma = 0.5;
    let run = temp("vdn-team");
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let mut policy = load_policy(&run).unwrap();
    let obs = policy.learner().batch().buffers().obs.clone();
    let q = policy.learner().q_values(&obs).unwrap();
    assert_eq!(q.len(), 4, "two players, two actions");
    // Each player's own Q ranks action 0 first: the greedy joint action is the optimum.
    assert!(q[0] > q[1] && q[2] > q[3], "{q:?}");
    let _ = std::fs::remove_dir_all(run);
    let _ = std::fs::remove_file(scenario);
}

#[test]
fn pqn_vdn_learns_to_chase_better_than_the_random_policy() {
    let cfg = RunConfig {
        total_steps: 16 * 8 * 120,
        checkpoint_every: 1000,
        ..small("tests/data/chase.ron")
    };
    let run = temp("vdn-learns");
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
fn pqn_vdn_replicas_equal_their_single_runs_bit_for_bit() {
    let base = small("tests/data/chase.ron");
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(base.clone(), &["lambda=[0.5, 0.0]", "gamma=[0.99, 0.9]"])
    };
    assert_eq!(sweep.replica_count(), 8);
    let replicas = sweep.replicas().unwrap();
    let multi = temp("vdn-sweep");
    train(&sweep, &multi, &TrainOptions::default()).unwrap();
    check_replicas_equal_single_runs(&multi, (&base, &replicas), &[0, 5], false);
    let _ = std::fs::remove_dir_all(multi);
}

#[test]
fn pqn_vdn_resumes_exactly() {
    let scenario = team_game();
    let run = assert_resumes_exactly(&small(scenario.to_str().unwrap()), "vdn", false);
    let metrics = deterministic_metrics(&run);
    assert!(
        metrics
            .iter()
            .all(|m| m["loss"].as_f64().is_some_and(f64::is_finite))
    );
    let _ = std::fs::remove_dir_all(run);
}

#[test]
fn pqn_vdn_refuses_what_it_does_not_take() {
    let base = || small("tests/data/chase.ron");
    let mut models = base();
    models.learn.opponent_models = true;
    let mut gru = base();
    gru.network.kind = gridarena::train::config::NetworkKind::Gru;
    let mut hl = base();
    hl.learn.loss = ValueLoss::HlGauss;
    for cfg in [models, gru, hl] {
        let run = temp("vdn-refused");
        let err = train(&cfg, &run, &TrainOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("algo pqn_vdn"), "{err}");
        let _ = std::fs::remove_dir_all(run);
    }
}

#[test]
fn pqn_vdn_on_the_gpu_backend_ends_where_the_cpu_one_does() {
    if !skip::gpu_adapter_present() {
        return;
    }
    let scenario = team_game();
    let mut ends = Vec::new();
    for device in [Device::Cpu, Device::Gpu] {
        let cfg = RunConfig {
            device,
            total_steps: 16 * 8 * 3,
            ..small(scenario.to_str().unwrap())
        };
        let run = temp(&format!("vdn-{device:?}"));
        train(&cfg, &run, &TrainOptions::default()).unwrap();
        ends.push(runs::params(&run));
        let _ = std::fs::remove_dir_all(run);
    }
    runs::assert_params_close("PQN-VDN", &ends[0], &ends[1]);
}
