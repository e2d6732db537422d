//! PR2-IQL end to end: it coordinates where independent learners do not, it trains the
//! six-player gift_refinements configuration, the joint-critic configuration is refused with its
//! numbers before anything is created, the GPU backend agrees with the CPU, and the opponent
//! models' predictions reach the viewer. That the conditional models learn from the observation
//! is tests/opponent_models.rs's.

use std::path::{Path, PathBuf};

#[path = "common/skip.rs"]
mod skip;

use gridarena::critic::{Device, choose_device};
use gridarena::train::config::{
    Algo, IqlConfig, LearnConfig, NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config, RunConfig,
};
use gridarena::train::{RunError, TrainOptions, train};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-pr2-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn shipped(name: &str) -> RunConfig {
    let mut cfg = RunConfig::load(Path::new(&format!("assets/runs/{name}.ron"))).unwrap();
    cfg.device = Device::Cpu;
    cfg
}

fn metrics(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Greedy mean return per player over 64 episodes of a fresh run of `cfg`.
fn greedy_return(cfg: &RunConfig, name: &str) -> f64 {
    let run = temp(name);
    train(cfg, &run, &TrainOptions::default()).unwrap();
    let device = choose_device(Device::Cpu).unwrap();
    let report = gridarena::train::eval::evaluate(&run, 64, &device).unwrap();
    let _ = std::fs::remove_dir_all(run);
    report.policy.mean_return
}

#[test]
fn pr2_iql_finds_the_climbing_game_optimum_where_independent_learners_miscoordinate() {
    // 16 rounds per episode: (a, a) pays 11 per round, (b, b) 7, (c, c) 5.
    let (mut pr2_sum, mut iql_sum) = (0.0, 0.0);
    for seed in 0..3 {
        let pr2 = greedy_return(
            &RunConfig {
                seed,
                ..shipped("climbing_pr2")
            },
            &format!("climb-pr2-{seed}"),
        );
        let iql = greedy_return(
            &RunConfig {
                seed,
                ..shipped("climbing_iql")
            },
            &format!("climb-iql-{seed}"),
        );
        eprintln!("seed {seed}: PR2-IQL {pr2}, IQL {iql}");
        assert!(pr2 > iql, "seed {seed}: PR2-IQL {pr2} vs IQL {iql}");
        pr2_sum += pr2;
        iql_sum += iql;
    }
    assert!(
        pr2_sum / 3.0 > 16.0 * 10.0,
        "PR2-IQL mean {}",
        pr2_sum / 3.0
    );
    assert!(iql_sum / 3.0 < 16.0 * 8.0, "IQL mean {}", iql_sum / 3.0);
}

/// PR2-IQL with GRU critics on the three-learner Pursuit: sequences replayed from their
/// stored hidden states train with finite, positive losses, the run acts (the episodes log
/// returns), and resumes from its checkpoint; opponent models with a GRU are refused by name.
#[test]
fn pr2_iql_with_gru_critics_trains_with_finite_losses_and_resumes() {
    use gridarena::train::config::NetworkKind;
    let cfg = RunConfig {
        scenario: Some(PathBuf::from("assets/scenarios/pursuit_3.ron")),
        algo: Algo::Pr2Iql,
        device: Device::Cpu,
        arenas: 4,
        rollout: 8,
        total_steps: 4 * 8 * 4,
        checkpoint_every: 100,
        network: NetworkConfig {
            kind: NetworkKind::Gru,
            gru_hidden: 8,
            hidden: 16,
            layers: 1,
            burn_in: 2,
            ..Default::default()
        },
        iql: IqlConfig {
            replay_capacity: 8 * 16,
            min_replay: 32,
            ..Default::default()
        },
        pr2: Pr2Config {
            minibatches: 2,
            buffer_batch_size: 4,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    // The memory plan counts the sequences' hidden states and timelines.
    let loaded = gridarena::train::load_scenario(&cfg).unwrap();
    let device = choose_device(Device::Cpu).unwrap();
    let plan = gridarena::train::plan::plan(&cfg, &loaded, &device, u64::MAX);
    let line = (plan.tensors.iter())
        .find(|t| t.name.starts_with("recurrent sequences"))
        .unwrap_or_else(|| panic!("no recurrent sequences line in\n{}", plan.table()));
    assert!(line.bytes > 0, "{}", plan.table());
    let run = temp("gru");
    let summary = train(&cfg, &run, &TrainOptions::default()).unwrap();
    assert_eq!(summary.updates, 4);
    let m = metrics(&run);
    let learned: Vec<f64> = (m.iter())
        .map(|line| line["loss"].as_f64().unwrap())
        .filter(|&l| l != 0.0)
        .collect();
    assert!(learned.len() >= 2, "{m:?}");
    assert!(
        learned.iter().all(|l| l.is_finite() && *l > 0.0),
        "{learned:?}"
    );
    let resumed = train(
        &RunConfig {
            total_steps: 4 * 8 * 5,
            ..cfg.clone()
        },
        &run,
        &TrainOptions {
            resume: true,
            ..TrainOptions::default()
        },
    )
    .unwrap();
    assert_eq!(resumed.updates, 5);
    let _ = std::fs::remove_dir_all(&run);
    let refused = train(
        &{
            let mut base = cfg;
            base.learn.opponent_models = true;
            base
        },
        &temp("gru-models"),
        &TrainOptions::default(),
    );
    let Err(e) = refused else {
        panic!("opponent models with a GRU were accepted")
    };
    assert!(e.to_string().contains("opponent_models"), "{e}");
}

/// Two-player cue_memory (docs/scenarios.md): each player's cue is shown at the first step
/// only and pays at the eighth, so a memoryless critic earns chance (1/4) at best. PR2-IQL with
/// GRU critics learns to remember it (greedy return well above chance); the same run with MLP
/// critics stays near chance, so the test fails where the recurrence is lost.
#[test]
fn pr2_iql_with_gru_critics_remembers_the_cue_where_mlp_critics_cannot() {
    use gridarena::train::config::NetworkKind;
    let dir = temp("cue-scenario");
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string("assets/scenarios/cue_memory.ron")
        .unwrap()
        .replace("count: 1", "count: 2");
    let scenario = dir.join("cue_memory_2.ron");
    std::fs::write(&scenario, text).unwrap();
    let cfg = |network| RunConfig {
        scenario: Some(scenario.clone()),
        algo: Algo::Pr2Iql,
        device: Device::Cpu,
        arenas: 16,
        rollout: 8,
        total_steps: 16 * 8 * 600,
        seed: 1,
        network: NetworkConfig {
            kind: network,
            layers: 1,
            hidden: 32,
            gru_hidden: 32,
            burn_in: 2,
            ..Default::default()
        },
        learn: LearnConfig {
            lr: 1e-3,
            lr_decay: false,
            eps_fraction: 0.3,
            ..Default::default()
        },
        iql: IqlConfig {
            cer: 1,
            samples_per_insert: 8.0,
            replay_capacity: 8 * 16 * 32,
            min_replay: 8 * 16 * 4,
            target_tau: 0.05,
            ..Default::default()
        },
        pr2: Pr2Config {
            minibatches: 1,
            buffer_batch_size: 16,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    let t0 = std::time::Instant::now();
    let gru = greedy_return(&cfg(NetworkKind::Gru), "cue-gru");
    let mlp = greedy_return(
        &{
            let mut base = cfg(NetworkKind::Mlp);
            base.network.burn_in = 0;
            base.network.gru_hidden = RunConfig::default().network.gru_hidden;
            base
        },
        "cue-mlp",
    );
    eprintln!(
        "PR2-IQL on two-player cue_memory: GRU {gru:.3}, MLP {mlp:.3} (chance 0.25) in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(dir);
    assert!(gru > 0.5, "GRU greedy return {gru} (chance 0.25)");
    assert!(mlp < 0.4, "MLP greedy return {mlp} (chance 0.25)");
}

#[test]
fn the_six_player_gift_configuration_trains_with_finite_losses_and_opponent_scores() {
    let cfg = RunConfig {
        total_steps: 4 * 256 * 2,
        ..shipped("gift_pr2")
    };
    let run = temp("gift");
    let summary = train(&cfg, &run, &TrainOptions::default()).unwrap();
    assert_eq!((summary.updates, summary.env_steps), (2, 2048));
    let m = metrics(&run);
    // The first update fills the replay past min_replay (1,024 arena-steps), so both learn.
    for line in &m {
        let loss = line["loss"].as_f64().unwrap();
        assert!(loss.is_finite() && loss > 0.0, "{line}");
        let acc = line["opponent_accuracy"].as_array().unwrap();
        assert_eq!(acc.len(), 6);
        assert_eq!(acc[0].as_array().unwrap().len(), 5);
    }
    // The checkpoint restores into a fresh learner of the same configuration.
    let resumed = train(
        &RunConfig {
            total_steps: 4 * 256 * 3,
            ..cfg.clone()
        },
        &run,
        &TrainOptions {
            resume: true,
            ..TrainOptions::default()
        },
    )
    .unwrap();
    assert_eq!(resumed.updates, 3);
    assert_eq!(metrics(&run).len(), 3);
    let _ = std::fs::remove_dir_all(run);
}

#[test]
fn the_joint_critic_configuration_is_refused_with_its_numbers_before_anything_is_created() {
    let cfg = shipped("gift_pr2_joint");
    let run = temp("joint");
    let opts = TrainOptions {
        memory_budget: Some(2 << 30),
        ..TrainOptions::default()
    };
    let err = train(&cfg, &run, &opts).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RunError::Memory(_)), "{text}");
    for part in [
        "critic head",
        "9^6 = 531,441 per row",
        "1,542 rows per pass",
        "257 steps x 4 sequences x 6 learners",
        "GiB",
        "budget 2.00 GiB",
        "critic: factorized",
    ] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
    assert!(!run.exists(), "nothing was created");

    // The factorised twin fits, and its critic (head and body) is under 64 MiB.
    let loaded = gridarena::train::load_scenario(&shipped("gift_pr2")).unwrap();
    let device = choose_device(Device::Cpu).unwrap();
    let plan = gridarena::train::plan::plan(&shipped("gift_pr2"), &loaded, &device, 2 << 30);
    assert!(plan.fits, "{}", plan.table());
    let critic: u64 = plan
        .tensors
        .iter()
        .filter(|t| t.name.starts_with("critic"))
        .map(|t| t.bytes)
        .sum();
    assert!(critic < 64 << 20, "{}", plan.table());
    assert!(
        plan.tensors[0].shape.contains("414 per row"),
        "{}",
        plan.table()
    );
}

#[test]
fn pr2_on_the_gpu_backend_matches_the_cpu_backend() {
    if !skip::gpu_adapter_present() {
        return;
    }
    let device = choose_device(Device::Gpu).expect("an adapter exists");
    let mut cfg = shipped("climbing_pr2");
    cfg.total_steps = 16 * 16 * 2;
    cfg.iql.min_replay = 128;
    let loaded = gridarena::train::load_scenario(&cfg).unwrap();
    let cpu = choose_device(Device::Cpu).unwrap();
    let mut losses = Vec::new();
    for d in [&cpu, &device] {
        let mut learner = gridarena::train::new_learner(&cfg, &loaded, d).unwrap();
        let a = learner.update().unwrap().loss;
        let b = learner.update().unwrap().loss;
        losses.push((a, b));
    }
    let ((c1, c2), (g1, g2)) = (losses[0], losses[1]);
    assert!(c1 > 0.0 && c2 > 0.0);
    for (c, g) in [(c1, g1), (c2, g2)] {
        assert!(
            (c - g).abs() <= 1e-3 * c.abs().max(1.0),
            "cpu {c} vs gpu {g}"
        );
    }
}

#[test]
fn opponent_predictions_reach_the_agents_components_for_the_viewer() {
    let base = RunConfig {
        scenario: Some("assets/scenarios/pursuit_3.ron".into()),
        device: Device::Cpu,
        arenas: 4,
        rollout: 8,
        total_steps: 4 * 8 * 4,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
            ..Default::default()
        },
        pqn: PqnConfig {
            minibatches: 2,
            ..Default::default()
        },
        pr2: Pr2Config {
            minibatches: 2,
            ..Default::default()
        },
        online_dqn: OnlineDqnConfig {
            minibatches: 2,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    let loaded = gridarena::train::load_scenario(&base).unwrap();
    let device = choose_device(Device::Cpu).unwrap();
    for algo in [Algo::Pqn, Algo::Iql, Algo::Pr2Iql] {
        for models in [false, true] {
            let mut cfg = base.clone();
            cfg.algo = algo;
            cfg.learn.opponent_models = models;
            let mut learner = gridarena::train::new_learner(&cfg, &loaded, &device).unwrap();
            learner.update().unwrap();
            assert_eq!(learner.predict_opponents().unwrap(), models, "{algo:?}");
            let predicted = learner.batch().opponent_predictions(3);
            assert_eq!(predicted.len(), 3, "three learners");
            for p in &predicted {
                if !models {
                    assert!(p.is_empty());
                    continue;
                }
                // Two others x 5 actions, each a distribution.
                assert_eq!(p.len(), 2 * 5, "{algo:?}");
                for group in p.chunks_exact(5) {
                    assert!((group.iter().sum::<f32>() - 1.0).abs() < 1e-5, "{group:?}");
                    assert!(group.iter().all(|v| *v > 0.0));
                }
            }
        }
    }
}
