//! VDN and QMIX as replay learners: each finds the optimum of a team game and learns to chase
//! better than random, and gets seeds, sweeps, exact resume, evaluation, the memory preflight
//! and `load_policy` from the layers below it; QMIX's mixer runs on the GPU backend as on the
//! CPU (their MPI data parallelism is checked in tests/mpi.rs).

use std::path::PathBuf;

use gridarena::critic::Device;
use gridarena::train::config::{
    Algo, IqlConfig, LearnConfig, NetworkConfig, QmixConfig, RunConfig, ValueLoss,
};
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
use sweeps::{
    assert_gpu_matches_cpu, assert_resumes_exactly, check_replicas_equal_single_runs, cpu,
    plan_total, temp, with_sweep,
};

fn small(algo: Algo, scenario: &str) -> RunConfig {
    RunConfig {
        algo,
        scenario: Some(PathBuf::from(scenario)),
        device: Device::Cpu,
        arenas: 8,
        rollout: 8,
        seed: 5,
        total_steps: 8 * 8 * 6,
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
        iql: IqlConfig {
            replay_capacity: 2048,
            batch_size: 32,
            min_replay: 64,
            samples_per_insert: 8.0,
            target_tau: 0.05,
            ..Default::default()
        },
        qmix: QmixConfig {
            embed: 8,
            hyper_hidden: 16,
        },
        ..RunConfig::default()
    }
}

/// A two-player team game: both choosing action 0 pays 10 each, both choosing 1 pays 2,
/// miscoordination 0 (the team's reward is the sum).
fn team_game() -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "gridarena-team-replay-{}-{:?}.ron",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(
        &path,
        "Scenario(name: \"team\", substrate: MatrixGame((actions: 2, payoffs: [[10.0, 10.0], \
         [0.0, 0.0], [0.0, 0.0], [2.0, 2.0]])), roles: [(kind: player, count: 2)], max_steps: 8)",
    )
    .unwrap();
    path
}

/// Played uniformly (epsilon stays 1) with a short horizon, the team's value ranks action 0
/// first for both players: the greedy joint action is the optimum.
fn finds_the_optimum_of_a_team_game(algo: Algo) {
    let scenario = team_game();
    let mut cfg = RunConfig {
        total_steps: 8 * 8 * 40,
        checkpoint_every: 1000,
        ..small(algo, scenario.to_str().unwrap())
    };
    cfg.learn.eps_finish = 1.0;
    cfg.learn.gamma = 0.5;
    let run = temp(&format!("{algo:?}-team"));
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let mut policy = load_policy(&run).unwrap();
    let obs = policy.learner().batch().buffers().obs.clone();
    let q = policy.learner().q_values(&obs).unwrap();
    assert_eq!(q.len(), 4, "two players, two actions");
    assert!(q[0] > q[1] && q[2] > q[3], "{algo:?}: {q:?}");
    let _ = std::fs::remove_dir_all(run);
    let _ = std::fs::remove_file(scenario);
}

#[test]
fn vdn_finds_the_optimum_of_a_team_game() {
    finds_the_optimum_of_a_team_game(Algo::Vdn);
}

#[test]
fn qmix_finds_the_optimum_of_a_team_game() {
    finds_the_optimum_of_a_team_game(Algo::Qmix);
}

fn learns_to_chase_better_than_the_random_policy(algo: Algo) {
    let cfg = RunConfig {
        total_steps: 8 * 8 * 150,
        checkpoint_every: 1000,
        ..small(algo, "tests/data/chase.ron")
    };
    let run = temp(&format!("{algo:?}-learns"));
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let report = evaluate(&run, 40, &cpu()).unwrap();
    let mean = |r: &[f64]| r.iter().sum::<f64>() / r.len() as f64;
    let (learned, random) = (
        mean(&report.policy.per_agent),
        mean(&report.random.per_agent),
    );
    assert!(
        learned > random + 0.1,
        "{algo:?}: greedy {learned:.3} against random {random:.3}"
    );
    let _ = std::fs::remove_dir_all(run);
}

#[test]
fn vdn_learns_to_chase_better_than_the_random_policy() {
    learns_to_chase_better_than_the_random_policy(Algo::Vdn);
}

#[test]
fn qmix_learns_to_chase_better_than_the_random_policy() {
    learns_to_chase_better_than_the_random_policy(Algo::Qmix);
}

#[test]
fn qmix_replicas_equal_their_single_runs_bit_for_bit() {
    let base = small(Algo::Qmix, "tests/data/chase.ron");
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(base.clone(), &["target_tau=[0.05, 0.5]"])
    };
    assert_eq!(sweep.replica_count(), 4);
    let replicas = sweep.replicas().unwrap();
    let multi = temp("qmix-sweep");
    train(&sweep, &multi, &TrainOptions::default()).unwrap();
    check_replicas_equal_single_runs(&multi, (&base, &replicas), &[0, 3], false);
    let _ = std::fs::remove_dir_all(multi);
}

#[test]
fn vdn_and_qmix_resume_exactly() {
    let scenario = team_game();
    for algo in [Algo::Vdn, Algo::Qmix] {
        let cfg = small(algo, scenario.to_str().unwrap());
        let run = assert_resumes_exactly(&cfg, &format!("{algo:?}"), true);
        let metrics = deterministic_metrics(&run);
        assert!(
            metrics
                .iter()
                .all(|m| m["loss"].as_f64().is_some_and(f64::is_finite)),
            "{algo:?}"
        );
        let _ = std::fs::remove_dir_all(run);
    }
    let _ = std::fs::remove_file(scenario);
}

#[test]
fn vdn_and_qmix_refuse_what_they_do_not_take() {
    for (algo, name) in [(Algo::Vdn, "algo vdn"), (Algo::Qmix, "algo qmix")] {
        let base = || small(algo, "tests/data/chase.ron");
        let mut models = base();
        models.learn.opponent_models = true;
        let mut gru = base();
        gru.network.kind = gridarena::train::config::NetworkKind::Gru;
        let mut hl = base();
        hl.learn.loss = ValueLoss::HlGauss;
        let mut threaded = base();
        threaded.iql.threaded = true;
        for cfg in [models, gru, hl, threaded] {
            let run = temp("team-refused");
            let err = train(&cfg, &run, &TrainOptions::default())
                .unwrap_err()
                .to_string();
            assert!(err.contains(name), "{err}");
            let _ = std::fs::remove_dir_all(run);
        }
    }
}

/// The preflight counts the team replay by its capacity and QMIX's hypernetworks by their
/// width.
#[test]
fn the_preflight_counts_the_team_replay_and_the_hypernetworks() {
    let vdn = small(Algo::Vdn, "tests/data/chase.ron");
    let mut bigger = vdn.clone();
    bigger.iql.replay_capacity *= 2;
    assert!(plan_total(&bigger) > plan_total(&vdn));
    let qmix = small(Algo::Qmix, "tests/data/chase.ron");
    assert!(
        plan_total(&qmix) > plan_total(&vdn),
        "the hypernetworks and states count"
    );
    let mut wider = qmix.clone();
    wider.qmix.hyper_hidden *= 4;
    assert!(plan_total(&wider) > plan_total(&qmix));
}

#[test]
fn qmix_on_the_gpu_backend_ends_where_the_cpu_one_does() {
    let scenario = team_game();
    let cfg = RunConfig {
        total_steps: 8 * 8 * 3,
        ..small(Algo::Qmix, scenario.to_str().unwrap())
    };
    assert_gpu_matches_cpu(&cfg, "qmix");
    let _ = std::fs::remove_file(scenario);
}
