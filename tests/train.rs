//! The trainer end to end on small budgets: it learns, it resumes exactly, it refuses bad run
//! directories before training, and it stops on non-finite values keeping the last good
//! checkpoint.

use std::path::PathBuf;

use gridarena::critic::{Device, choose_device};
use gridarena::train::config::RunConfig;
use gridarena::train::eval::EvalReport;
use gridarena::train::run_dir::RunDir;
use gridarena::train::{RunError, TrainOptions, TrainSummary, train};

#[path = "common/runs.rs"]
mod runs;
use runs::{deterministic_metrics, params};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-train-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn small(scenario: &str) -> RunConfig {
    RunConfig {
        scenario: Some(PathBuf::from(scenario)),
        device: Device::Cpu,
        arenas: 16,
        rollout: 8,
        epochs: 2,
        minibatches: 4,
        hidden: 32,
        layers: 1,
        lr: 3e-3,
        checkpoint_every: 2,
        ..RunConfig::default()
    }
}

/// Trains `cfg` into a fresh run directory, evaluates 200 episodes on the CPU and removes the
/// directory.
fn train_and_evaluate(cfg: &RunConfig, name: &str) -> (TrainSummary, EvalReport) {
    let run = temp(name);
    let summary = train(cfg, &run, &TrainOptions::default()).unwrap();
    let device = choose_device(Device::Cpu).unwrap();
    let report = gridarena::train::eval::evaluate(&run, 200, &device).unwrap();
    let _ = std::fs::remove_dir_all(run);
    (summary, report)
}

/// IQL+CER on the chase task (shared by the synchronous and the threaded test).
fn iql_chase(threaded: bool) -> RunConfig {
    RunConfig {
        algo: gridarena::train::config::Algo::Iql,
        threaded,
        wait_seconds: 20.0,
        total_steps: 16 * 8 * 234,
        lr: 1e-3,
        lr_decay: false,
        batch_size: 64,
        min_replay: 500,
        samples_per_insert: 2.0,
        eps_fraction: 0.3,
        ..small("tests/data/chase.ron")
    }
}

#[test]
fn resuming_gives_the_same_metrics_and_parameters_as_training_straight() {
    let cfg = RunConfig {
        total_steps: 16 * 8 * 6,
        ..small("assets/scenarios/pursuit_3.ron")
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        let straight = temp("straight");
        train(&cfg, &straight, &TrainOptions::default()).unwrap();
        let split = temp("split");
        let first = train(
            &cfg,
            &split,
            &TrainOptions {
                until_update: Some(3),
                ..TrainOptions::default()
            },
        )
        .unwrap();
        assert_eq!(first.updates, 3);
        let second = train(
            &cfg,
            &split,
            &TrainOptions {
                resume: true,
                ..TrainOptions::default()
            },
        )
        .unwrap();
        assert_eq!(second.updates, 6);
        assert_eq!(
            deterministic_metrics(&straight),
            deterministic_metrics(&split)
        );
        assert_eq!(params(&straight), params(&split));
        assert!(split.join("learning_curve.png").exists());
        let _ = std::fs::remove_dir_all(straight);
        let _ = std::fs::remove_dir_all(split);
    });
}

#[test]
fn pqn_learns_to_chase_better_than_the_random_policy() {
    // One pursuer, one random-walking evader on a 5x5 map (tests/data/chase.ron). A random
    // pursuer catches the evader within 40 steps in about 60% of episodes, at a mean return
    // near -0.8; 30k environment steps of PQN catch it nearly always.
    let cfg = RunConfig {
        total_steps: 16 * 8 * 234,
        ..small("tests/data/chase.ron")
    };
    let (_, report) = train_and_evaluate(&cfg, "chase");
    let (greedy, random) = (&report.policy, &report.random);
    let catches = |r: &gridarena::train::eval::PolicyResult| r.counters["catches"];
    assert!(
        catches(greedy) > 0.9 && catches(greedy) > 1.3 * catches(random),
        "catches per episode: greedy {}, random {}",
        catches(greedy),
        catches(random)
    );
    assert!(
        greedy.mean_return > random.mean_return + 0.5,
        "returns: greedy {}, random {}",
        greedy.mean_return,
        random.mean_return
    );
}

#[test]
fn iql_with_combined_experience_replay_learns_to_chase() {
    // The same task as above with IQL: replay, CER, Polyak targets, rate-limited learning.
    let (_, report) = train_and_evaluate(&iql_chase(false), "chase-iql");
    let (greedy, random) = (&report.policy, &report.random);
    assert!(
        greedy.counters["catches"] > 0.85,
        "greedy catches {} per episode",
        greedy.counters["catches"]
    );
    assert!(
        greedy.mean_return > random.mean_return + 0.5,
        "returns: greedy {}, random {}",
        greedy.mean_return,
        random.mean_return
    );
}

#[test]
fn threaded_iql_finishes_without_deadlock_and_learns() {
    // Actor and learner on separate threads, coordinated by the rate limiter's bounded waits.
    let (summary, report) = train_and_evaluate(&iql_chase(true), "chase-threaded");
    assert_eq!(summary.updates, 234);
    assert!(
        report.policy.mean_return > report.random.mean_return + 0.5,
        "greedy {} vs random {}",
        report.policy.mean_return,
        report.random.mean_return
    );
}

#[test]
fn an_existing_run_is_not_overwritten_and_an_unwritable_directory_is_refused() {
    let cfg = RunConfig {
        total_steps: 16 * 8,
        ..small("assets/scenarios/coin_game.ron")
    };
    let run = temp("exists");
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let again = train(&cfg, &run, &TrainOptions::default()).unwrap_err();
    assert!(
        matches!(again, RunError::RunDir(_)) && again.to_string().contains("--resume"),
        "{again}"
    );

    let file = temp("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let err = train(&cfg, &file.join("run"), &TrainOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains(&file.display().to_string()),
        "{err}"
    );
    assert!(!file.join("run").exists());
    let _ = std::fs::remove_dir_all(run);
    let _ = std::fs::remove_file(file);
}

#[test]
fn a_diverging_run_stops_with_the_step_and_tensor_and_keeps_the_last_good_checkpoint() {
    let cfg = RunConfig {
        total_steps: 16 * 8 * 20,
        lr: 1e30,
        lr_decay: false,
        radam: false,
        max_grad_norm: 1e30,
        checkpoint_every: 1,
        ..small("assets/scenarios/coin_game.ron")
    };
    let run = temp("nan");
    let err = train(&cfg, &run, &TrainOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("not finite") && text.contains("update"),
        "{text}"
    );
    for ckpt in RunDir::open(&run).unwrap().checkpoints().unwrap() {
        let c = gridarena::train::run_dir::load_checkpoint(&ckpt).unwrap();
        assert!(
            c.params.iter().all(|v| v.is_finite()),
            "{} holds non-finite parameters",
            ckpt.display()
        );
    }
    let _ = std::fs::remove_dir_all(run);
}

#[test]
fn pqn_and_iql_train_on_every_shipped_scenario() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir("assets/scenarios")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for path in paths {
        for algo in [
            gridarena::train::config::Algo::Pqn,
            gridarena::train::config::Algo::Iql,
        ] {
            let cfg = RunConfig {
                algo,
                arenas: 4,
                rollout: 4,
                minibatches: 2,
                hidden: 16,
                total_steps: 4 * 4 * 3,
                batch_size: 16,
                min_replay: 16,
                replay_capacity: 1024,
                cer: 2,
                ..small(path.to_str().unwrap())
            };
            let run = temp(&format!(
                "every-{}-{algo:?}",
                path.file_stem().unwrap().to_string_lossy()
            ));
            let summary = train(&cfg, &run, &TrainOptions::default())
                .unwrap_or_else(|e| panic!("{}: {algo:?}: {e}", path.display()));
            assert_eq!(summary.updates, 3, "{}", path.display());
            let _ = std::fs::remove_dir_all(run);
        }
    }
}

#[test]
fn replica_r_of_a_multi_seed_run_matches_a_single_run_with_seed_plus_r() {
    let base = RunConfig {
        total_steps: 16 * 8 * 5,
        seed: 40,
        ..small("tests/data/chase.ron")
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        let multi = temp("seeds-multi");
        train(
            &RunConfig {
                seeds: 3,
                ..base.clone()
            },
            &multi,
            &TrainOptions::default(),
        )
        .unwrap();
        let multi_params = params(&multi);
        let multi_metrics = deterministic_metrics(&multi);
        let per_net = multi_params.len() / 3;
        for r in 0..3u64 {
            let single = temp(&format!("seeds-single-{r}"));
            train(
                &RunConfig {
                    seed: base.seed + r,
                    ..base.clone()
                },
                &single,
                &TrainOptions::default(),
            )
            .unwrap();
            assert_eq!(
                params(&single),
                multi_params[r as usize * per_net..(r as usize + 1) * per_net],
                "replica {r}: parameters"
            );
            for (m, s) in multi_metrics.iter().zip(deterministic_metrics(&single)) {
                assert_eq!(
                    m["seeds_return_per_seed"][r as usize], s["return_mean"],
                    "replica {r}, update {}",
                    m["update"]
                );
            }
            let _ = std::fs::remove_dir_all(single);
        }
        let last = multi_metrics.last().unwrap();
        assert!(last["seeds_return_mean"].is_number() || last["seeds_return_mean"].is_null());
        let _ = std::fs::remove_dir_all(multi);
    });
}

#[test]
fn the_memory_preflight_refuses_an_impossible_run_before_allocating() {
    let cfg = RunConfig {
        arenas: 100_000,
        total_steps: 100_000 * 8,
        ..small("tests/data/chase.ron")
    };
    let run = temp("too-big");
    let opts = TrainOptions {
        memory_budget: Some(64 << 20),
        ..TrainOptions::default()
    };
    let err = train(&cfg, &run, &opts).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RunError::Memory(_)), "{text}");
    assert!(
        text.contains("100,000 arenas x 2,498 B")
            && text.contains("budget 64.00 MiB")
            && text.contains("lower arenas"),
        "{text}"
    );
    assert!(!run.exists(), "nothing was created");

    let device = choose_device(Device::Cpu).unwrap();
    let loaded = gridarena::train::load_scenario(&cfg).unwrap();
    let plan = gridarena::train::plan::plan(&cfg, &loaded, &device, 64 << 20);
    assert!(!plan.fits && plan.total_bytes > 64 << 20);
    let json = serde_json::to_value(&plan).unwrap();
    assert!(json["tensors"][0]["name"].is_string() && json["tensors"][0]["bytes"].is_u64());
    let small_plan =
        gridarena::train::plan::plan(&small("tests/data/chase.ron"), &loaded, &device, 64 << 20);
    assert!(small_plan.fits, "{}", small_plan.table());
}

#[test]
fn opponent_models_beat_the_uniform_prediction_against_trained_opponents() {
    // pursuit_3: 2 pursuers and 1 evader, all learning; each predicts the other two's actions.
    let cfg = RunConfig {
        total_steps: 200_000,
        arenas: 64,
        rollout: 16,
        minibatches: 4,
        hidden: 64,
        layers: 2,
        opponent_models: true,
        lr: 5e-4,
        ..small("assets/scenarios/pursuit_3.ron")
    };
    let run = temp("opponents");
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let metrics = deterministic_metrics(&run);
    // Average the last 10 updates' scores over every (agent, opponent) pair.
    let (mut acc, mut nll, mut k) = (0.0, 0.0, 0.0);
    for m in &metrics[metrics.len() - 10..] {
        for (a_row, l_row) in m["opponent_accuracy"]
            .as_array()
            .unwrap()
            .iter()
            .zip(m["opponent_log_loss"].as_array().unwrap())
        {
            for (a, l) in a_row
                .as_array()
                .unwrap()
                .iter()
                .zip(l_row.as_array().unwrap())
            {
                acc += a.as_f64().unwrap();
                nll += l.as_f64().unwrap();
                k += 1.0;
            }
        }
    }
    let (acc, nll) = (acc / k, nll / k);
    let uniform = metrics[0]["opponent_uniform_log_loss"].as_f64().unwrap();
    assert!((uniform - 5f64.ln()).abs() < 1e-9);
    assert!(acc > 0.27, "mean accuracy {acc} vs 0.2 for a uniform guess");
    assert!(
        nll < uniform - 0.1,
        "mean log-loss {nll} vs {uniform} for a uniform guess"
    );
    let _ = std::fs::remove_dir_all(run);
}

#[test]
fn a_failed_resume_leaves_the_run_directory_as_it_was() {
    let run = temp("failed_resume");
    let cfg = RunConfig {
        total_steps: 2 * 16 * 8,
        ..small("tests/data/chase.ron")
    };
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let files = ["config.ron", "scenario.ron", "metrics.jsonl"];
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(run.join(f)).unwrap())
        .collect();
    // A checkpoint whose parameters cannot be read fails the restore (a configuration that
    // changes shapes is refused even earlier, see tests/resume_refusals.rs)...
    let more = RunConfig {
        total_steps: 4 * 16 * 8,
        ..cfg
    };
    let opts = TrainOptions {
        resume: true,
        ..TrainOptions::default()
    };
    let latest = RunDir::open(&run)
        .unwrap()
        .checkpoints()
        .unwrap()
        .pop()
        .unwrap();
    let params = latest.join("params.safetensors");
    let good = std::fs::read(&params).unwrap();
    std::fs::write(&params, &good[..good.len() / 2]).unwrap();
    let err = train(&more, &run, &opts).unwrap_err().to_string();
    assert!(err.contains("damaged checkpoint"), "{err}");
    // ...and nothing it found was rewritten.
    for (f, b) in files.iter().zip(&before) {
        assert_eq!(&std::fs::read(run.join(f)).unwrap(), b, "{f} changed");
    }
    // With the checkpoint intact the run resumes.
    std::fs::write(&params, &good).unwrap();
    assert_eq!(train(&more, &run, &opts).unwrap().updates, 4);
    std::fs::remove_dir_all(&run).unwrap();
}
