//! IPPO and MAPPO: each finds the known answer of small matrix games, learns to chase better
//! than random, and gets seeds, sweeps, exact resume, evaluation and `load_policy` from the
//! layers below it (their MPI data parallelism is checked in tests/mpi.rs); MAPPO's value
//! network reads the global state.

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

const PPO: [Algo; 2] = [Algo::Ippo, Algo::Mappo];

fn small(algo: Algo, scenario: &str) -> RunConfig {
    RunConfig {
        algo,
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
    let path =
        std::env::temp_dir().join(format!("gridarena-ippo-{name}-{}.ron", std::process::id()));
    let text = format!(
        "Scenario(name: \"{name}\", substrate: MatrixGame((actions: 2, payoffs: {payoffs})), \
         roles: [(kind: player, count: 2)], max_steps: 8)"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn ppo_learners_find_the_known_answers_of_matrix_games() {
    for algo in PPO {
        known_answers(algo);
    }
}

fn known_answers(algo: Algo) {
    // Prisoner's dilemma: defecting (action 1) strictly dominates. A team game: both choosing
    // action 0 pays 10 each, both choosing 1 pays 2, miscoordination 0: the optimum is (0, 0).
    for (name, payoffs, best) in [
        (
            "dilemma",
            "[[3.0, 3.0], [0.0, 5.0], [5.0, 0.0], [1.0, 1.0]]",
            1,
        ),
        (
            "team",
            "[[10.0, 10.0], [0.0, 0.0], [0.0, 0.0], [2.0, 2.0]]",
            0,
        ),
    ] {
        let scenario = matrix_game(name, payoffs);
        let cfg = RunConfig {
            total_steps: 16 * 8 * 60,
            checkpoint_every: 1000,
            ..small(algo, scenario.to_str().unwrap())
        };
        let run = temp(&format!("{algo:?}-{name}"));
        train(&cfg, &run, &TrainOptions::default()).unwrap();
        let p = policy_probabilities(&run);
        assert_eq!(p.len(), 2);
        for (player, probs) in p.iter().enumerate() {
            assert!(
                probs[best] > 0.9,
                "{algo:?} {name}: player {player} plays the known answer {best} with {probs:?}"
            );
        }
        let _ = std::fs::remove_dir_all(run);
        let _ = std::fs::remove_file(scenario);
    }
}

#[test]
fn ppo_learners_learn_to_chase_better_than_the_random_policy() {
    for algo in PPO {
        learns_to_chase(algo);
    }
}

fn learns_to_chase(algo: Algo) {
    let cfg = RunConfig {
        total_steps: 16 * 8 * 150,
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
fn ippo_replicas_equal_their_single_runs_bit_for_bit() {
    replicas_equal_single_runs(Algo::Ippo, &[0, 3, 6]);
}

#[test]
fn mappo_replicas_equal_their_single_runs_bit_for_bit() {
    replicas_equal_single_runs(Algo::Mappo, &[1, 7]);
}

fn replicas_equal_single_runs(algo: Algo, ks: &[usize]) {
    let base = small(algo, "tests/data/chase.ron");
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(base.clone(), &["clip=[0.2, 0.1]", "ent_coef=[0.01, 0.0]"])
    };
    assert_eq!(sweep.replica_count(), 8);
    let replicas = sweep.replicas().unwrap();
    let multi = temp(&format!("{algo:?}-sweep"));
    train(&sweep, &multi, &TrainOptions::default()).unwrap();
    check_replicas_equal_single_runs(&multi, (&base, &replicas), ks, false);
    let _ = std::fs::remove_dir_all(multi);
}

#[test]
fn ppo_learners_resume_exactly_and_their_policies_load() {
    for algo in PPO {
        resumes_exactly(algo);
    }
}

fn resumes_exactly(algo: Algo) {
    let cfg = small(algo, "tests/data/chase.ron");
    let run = assert_resumes_exactly(&cfg, &format!("{algo:?}"), false);
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
fn ppo_learners_refuse_what_they_do_not_take() {
    for (algo, cfg) in PPO.into_iter().flat_map(|algo| {
        let mut models = small(algo, "tests/data/chase.ron");
        models.learn.opponent_models = true;
        // A recurrent policy's minibatches are whole sequences: at most one per learner row.
        let mut gru = small(algo, "tests/data/chase.ron");
        gru.network.kind = gridarena::train::config::NetworkKind::Gru;
        gru.ppo.minibatches = 17;
        [(algo, models), (algo, gru)]
    }) {
        let run = temp("ppo-refused");
        let err = train(&cfg, &run, &TrainOptions::default())
            .unwrap_err()
            .to_string();
        let name = if algo == Algo::Ippo { "ippo" } else { "mappo" };
        assert!(err.contains(&format!("algo {name}")), "{err}");
        let _ = std::fs::remove_dir_all(run);
    }
}

#[test]
fn ppo_learners_on_the_gpu_backend_end_where_the_cpu_one_does() {
    if !skip::gpu_adapter_present() {
        return;
    }
    for algo in PPO {
        gpu_matches_cpu(algo);
    }
}

fn gpu_matches_cpu(algo: Algo) {
    let mut ends = Vec::new();
    for device in [Device::Cpu, Device::Gpu] {
        let cfg = RunConfig {
            device,
            total_steps: 16 * 8 * 3,
            ..small(algo, "tests/data/chase.ron")
        };
        let run = temp(&format!("{algo:?}-{device:?}"));
        train(&cfg, &run, &TrainOptions::default()).unwrap();
        ends.push(runs::params(&run));
        let _ = std::fs::remove_dir_all(run);
    }
    runs::assert_params_close(&format!("{algo:?}"), &ends[0], &ends[1]);
}

/// MAPPO's value network reads the arena's global state and the learner's one-hot index (one
/// shared network), IPPO's the observation; the policy reads the observation in both.
#[test]
fn mappos_value_network_reads_the_global_state() {
    let scenario = "assets/scenarios/coin_game.ron";
    let loaded = gridarena::scenario::Scenario::load(scenario.as_ref()).unwrap();
    let (obs, state) = (
        loaded.scenario.observation_len(),
        loaded.scenario.global_state_len(),
    );
    assert_ne!(obs, state, "the test needs a state unlike the observation");
    for (algo, value_input) in [(Algo::Ippo, obs + 2), (Algo::Mappo, state + 2)] {
        let mut cfg = small(algo, scenario);
        cfg.network.shared = true;
        let mut learner = gridarena::train::new_learner(&cfg, &loaded, &cpu()).unwrap();
        let inputs: Vec<usize> = learner.critics().iter().map(|c| c.spec().input).collect();
        assert_eq!(
            inputs,
            vec![obs + 2, value_input],
            "{algo:?}: policy, value inputs"
        );
        learner.update().unwrap();
    }
}
