//! Opponent models with seeds and sweeps: every replica of a PQN or IQL run has its own models,
//! trained on its own rows with its own shuffle stream and learning rate, so replica k's
//! Q-networks, opponent models and opponent-model scores equal the single run with its grid
//! point's values and seed bit for bit; `eval --replica k` takes its models; a run with models
//! and replicas resumes exactly; threaded IQL keeps refusing models with replicas (PR2-IQL
//! accepts them: tests/sweep_pr2_opponents.rs).

use std::path::{Path, PathBuf};

use gridarena::critic::{Chosen, Device, choose_device};
use gridarena::train::config::{
    Algo, LearnConfig, NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config, RunConfig,
};
use gridarena::train::run_dir::RunDir;
use gridarena::train::{GreedyPolicy, TrainOptions, load_scenario, new_learner, train};

#[path = "common/checks.rs"]
mod checks;
#[path = "common/runs.rs"]
mod runs;
#[path = "common/skip.rs"]
mod skip;
#[path = "common/sweeps.rs"]
mod sweeps;
use runs::{deterministic_metrics, params};
use sweeps::{assert_scores_equal_single_run, models, same_bits, single_run_of, with_sweep};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-sweepopp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn cpu() -> Chosen {
    choose_device(Device::Cpu).unwrap()
}

/// PQN with opponent models on the three-learner Pursuit (two output groups per model).
fn small_pqn() -> RunConfig {
    RunConfig {
        scenario: Some(PathBuf::from("assets/scenarios/pursuit_3.ron")),
        device: Device::Cpu,
        arenas: 4,
        rollout: 8,
        seed: 5,
        total_steps: 4 * 8 * 4,
        checkpoint_every: 2,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
            ..Default::default()
        },
        learn: LearnConfig {
            lr: 3e-3,
            opponent_models: true,
            ..Default::default()
        },
        pqn: PqnConfig {
            epochs: 2,
            minibatches: 2,
            ..Default::default()
        },
        pr2: Pr2Config {
            epochs: 2,
            minibatches: 2,
            ..Default::default()
        },
        online_dqn: OnlineDqnConfig {
            epochs: 2,
            minibatches: 2,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

/// IQL with opponent models: the replay passes `min_replay` in the first update, so the
/// models train from the first update on (at the decayed learning rate, `lr_decay` on).
fn small_iql() -> RunConfig {
    {
        let mut cfg = small_pqn();
        cfg.algo = Algo::Iql;
        cfg.total_steps = 4 * 8 * 5;
        cfg.checkpoint_every = 1;
        cfg.iql.batch_size = 16;
        cfg.iql.cer = 2;
        cfg.iql.replay_capacity = 200;
        cfg.iql.min_replay = 32;
        cfg
    }
}

/// The opponent models' predictions of the greedy policy restored from `run` (replica
/// `replica`'s networks) for a fresh batch of `cfg`'s single-run arenas.
fn predictions(run: &Path, cfg: &RunConfig, replica: usize) -> Vec<f32> {
    let loaded = load_scenario(cfg).unwrap();
    let learner = new_learner(cfg, &loaded, &cpu()).unwrap();
    let dir = RunDir::open(run).unwrap();
    let mut policy = GreedyPolicy::restore_replica(learner, &dir, replica).unwrap();
    policy
        .learner()
        .opponent_predictions()
        .unwrap()
        .expect("the run has opponent models")
}

/// Trains `sweep` and the single run each of `ks` stands for, and checks replica k equals it
/// bit for bit: Q-network and opponent-model parameters, every update's return and
/// opponent-model scores, and the models a greedy policy of replica k restores.
fn check_replicas_equal_single_runs(name: &str, base: &RunConfig, sweep: &RunConfig, ks: &[usize]) {
    let replicas = sweep.replicas().unwrap();
    let multi = temp(name);
    train(sweep, &multi, &TrainOptions::default()).unwrap();
    let (multi_params, multi_models) = (params(&multi), models(&multi));
    let multi_metrics = deterministic_metrics(&multi);
    let per_params = multi_params.len() / replicas.len();
    let per_models = multi_models.len() / replicas.len();
    assert_eq!(per_models * replicas.len(), multi_models.len());
    // The models learned and differ between replicas (not one run copied, nor untouched).
    assert_ne!(
        multi_models[..per_models],
        multi_models[per_models..2 * per_models]
    );
    for &k in ks {
        let r = &replicas[k];
        let label = format!(
            "replica {k} ({}, seed index {})",
            r.point_label(),
            r.seed_index
        );
        let single_cfg = single_run_of(base, r);
        let single = temp(&format!("{name}-single-{k}"));
        train(&single_cfg, &single, &TrainOptions::default()).unwrap();
        assert!(
            same_bits(
                &multi_params[k * per_params..(k + 1) * per_params],
                &params(&single)
            ),
            "{label}: Q-network parameters differ from the single run"
        );
        assert!(
            same_bits(
                &multi_models[k * per_models..(k + 1) * per_models],
                &models(&single)
            ),
            "{label}: opponent-model parameters differ from the single run"
        );
        let single_metrics = deterministic_metrics(&single);
        assert_eq!(multi_metrics.len(), single_metrics.len());
        for (m, s) in multi_metrics.iter().zip(&single_metrics) {
            assert_eq!(
                m["seeds_return_per_seed"][k], s["return_mean"],
                "{label}, update {}",
                m["update"]
            );
        }
        assert_scores_equal_single_run(&multi_metrics, &single_metrics, k, &label);
        // A greedy policy of replica k acts with (and predicts through) its own models.
        assert_eq!(
            predictions(&multi, &single_cfg, k),
            predictions(&single, &single_cfg, 0),
            "{label}: restored opponent models"
        );
        let _ = std::fs::remove_dir_all(single);
    }
    let _ = std::fs::remove_dir_all(multi);
}

#[test]
fn pqn_replica_k_with_opponent_models_equals_its_single_run_bit_for_bit() {
    let base = small_pqn();
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(base.clone(), &["lr=[3e-3, 1e-3]", "gamma=[0.9, 0.99]"])
    };
    assert_eq!(sweep.replica_count(), 8);
    // First, last, and replicas differing from replica 0 in the seed, gamma and lr.
    check_replicas_equal_single_runs("pqn", &base, &sweep, &[0, 1, 2, 4, 7]);
}

#[test]
fn iql_replica_k_with_opponent_models_equals_its_single_run_bit_for_bit() {
    let base = small_iql();
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(base.clone(), &["lr=[3e-3, 1e-3]", "cer=[2, 0]"])
    };
    assert_eq!(sweep.replica_count(), 8);
    // First, last, and replicas differing from replica 0 in the seed, cer and lr.
    check_replicas_equal_single_runs("iql", &base, &sweep, &[0, 1, 2, 4, 7]);
}

/// Trains `cfg` straight and in two halves with a resume between: same parameters, models
/// and metrics.
/// Replicas whose rate limiters let them learn at their own moments keep their own opponent
/// models, so a sweep of the limiter's keys with models is a set of single runs too.
#[test]
fn iql_replicas_learning_at_their_own_moments_keep_their_own_models_bit_for_bit() {
    let base = small_iql();
    let sweep = with_sweep(base.clone(), &["samples_per_insert=[1.0, 4.0]"]);
    assert_eq!(sweep.replica_count(), 2);
    check_replicas_equal_single_runs("iql-rate", &base, &sweep, &[0, 1]);
}

fn resumes_exactly(cfg: &RunConfig, name: &str) {
    let straight = temp(&format!("{name}-straight"));
    train(cfg, &straight, &TrainOptions::default()).unwrap();
    let split = temp(&format!("{name}-split"));
    let first = TrainOptions {
        until_update: Some(cfg.updates() / 2),
        ..TrainOptions::default()
    };
    train(cfg, &split, &first).unwrap();
    let resume = TrainOptions {
        resume: true,
        ..TrainOptions::default()
    };
    let second = train(cfg, &split, &resume).unwrap();
    assert_eq!(second.resume_note, None, "{name}: the resume was not exact");
    assert!(
        same_bits(&params(&split), &params(&straight)),
        "{name}: parameters"
    );
    assert!(
        same_bits(&models(&split), &models(&straight)),
        "{name}: models"
    );
    assert_eq!(
        deterministic_metrics(&split),
        deterministic_metrics(&straight),
        "{name}"
    );
    let _ = std::fs::remove_dir_all(straight);
    let _ = std::fs::remove_dir_all(split);
}

#[test]
fn runs_with_opponent_models_and_replicas_resume_exactly() {
    let sweep = ["lr=[3e-3, 1e-3]"];
    let pqn = RunConfig {
        seeds: 2,
        ..with_sweep(small_pqn(), &sweep)
    };
    resumes_exactly(&pqn, "pqn-resume");
    let iql = RunConfig {
        seeds: 2,
        ..with_sweep(small_iql(), &sweep)
    };
    resumes_exactly(&iql, "iql-resume");
}

#[test]
fn threaded_iql_still_refuses_opponent_models_with_replicas_and_pr2_accepts_them() {
    let mut threaded = small_iql();
    threaded.iql.threaded = true;
    let err = threaded.validate().unwrap_err().to_string();
    assert!(err.contains("opponent_models"), "{err}");
    let pr2 = RunConfig {
        algo: Algo::Pr2Iql,
        scenario: Some(PathBuf::from("assets/scenarios/climbing_game.ron")),
        seeds: 2,
        ..small_pqn()
    };
    pr2.validate().unwrap();
    // PQN and IQL accept them.
    for cfg in [small_pqn(), small_iql()] {
        let cfg = RunConfig {
            seeds: 3,
            ..with_sweep(cfg, &["lr=[3e-3, 1e-3]"])
        };
        cfg.validate().unwrap();
    }
}

#[test]
fn the_memory_preflight_counts_every_replicas_opponent_models() {
    use gridarena::train::plan::{PlanDevice, plan_for};
    let models_bytes = |cfg: &RunConfig| {
        let loaded = load_scenario(cfg).unwrap();
        let plan = plan_for(cfg, &loaded, PlanDevice::Chosen(&cpu()), u64::MAX, None);
        let found = plan.tensors.iter().find(|t| t.name == "opponent models");
        found.expect("an opponent-model line").bytes
    };
    for cfg in [small_pqn(), small_iql()] {
        let one = models_bytes(&cfg);
        let four = models_bytes(&RunConfig { seeds: 4, ..cfg });
        assert!(four > 3 * one, "4 replicas' models {four} vs one's {one}");
    }
}

#[test]
fn replicas_opponent_models_on_the_gpu_match_the_cpu() {
    if !skip::gpu_adapter_present() {
        return;
    }
    let max_diff = |a: &[f32], b: &[f32]| {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max)
    };
    for (name, base) in [("pqn", small_pqn()), ("iql", small_iql())] {
        let cfg = RunConfig {
            seeds: 2,
            ..with_sweep(base, &["lr=[3e-3, 1e-3]"])
        };
        let mut runs = Vec::new();
        for device in [Device::Cpu, Device::Gpu] {
            let run = temp(&format!("{name}-{device:?}"));
            let summary = train(
                &RunConfig {
                    device,
                    ..cfg.clone()
                },
                &run,
                &TrainOptions::default(),
            );
            assert!(summary.is_ok(), "{name} {device:?}: {:?}", summary.err());
            runs.push((params(&run), models(&run)));
            let _ = std::fs::remove_dir_all(run);
        }
        let (q, m) = (
            max_diff(&runs[0].0, &runs[1].0),
            max_diff(&runs[0].1, &runs[1].1),
        );
        eprintln!("{name}: GPU vs CPU max difference: Q-networks {q:e}, models {m:e}");
        assert!(
            q <= 1e-4 && m <= 1e-4,
            "{name}: Q-networks {q:e}, models {m:e}"
        );
    }
}
