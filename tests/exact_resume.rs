//! Exact resume for every learner: N updates straight equal N/2 updates, a resume, and N/2
//! more, bit for bit (metrics without the wall-clock fields, and the final parameters). And a
//! damaged checkpoint is refused with an error naming the field, never a panic.

use std::path::{Path, PathBuf};

use gridarena::critic::Device;
use gridarena::train::config::{Algo, LearnConfig, NetworkConfig, NetworkKind, RunConfig};
use gridarena::train::run_dir::RunDir;
use gridarena::train::{TrainOptions, TrainSummary, train};

#[path = "common/runs.rs"]
mod runs;
use runs::{deterministic_metrics, params};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-resume-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// What the three learners' runs share: four arenas, small networks on the CPU, opponent
/// models, no checkpoint but the last.
fn tiny(scenario: &str) -> RunConfig {
    RunConfig {
        scenario: Some(PathBuf::from(scenario)),
        device: Device::Cpu,
        arenas: 4,
        checkpoint_every: 100,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
            ..Default::default()
        },
        learn: LearnConfig {
            opponent_models: true,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

/// IQL with opponent models on the three-learner Pursuit: the replay fills past `min_replay`
/// in the first update, so the replay, the limiter, the models' Adam and shuffle stream all
/// carry over a resume.
fn iql() -> RunConfig {
    {
        let mut cfg = tiny("assets/scenarios/pursuit_3.ron");
        cfg.algo = Algo::Iql;
        cfg.rollout = 8;
        cfg.total_steps = 4 * 8 * 6;
        cfg.learn.lr = 1e-3;
        cfg.learn.lr_decay = false;
        cfg.iql.batch_size = 16;
        cfg.iql.cer = 2;
        cfg.iql.replay_capacity = 200;
        cfg.iql.min_replay = 32;
        cfg
    }
}

/// IQL with GRU networks on the three-learner Pursuit: sequence replay (evicting within the
/// run), burn-in, the arenas' hidden states and the episode-start flags carry over a resume.
fn iql_gru() -> RunConfig {
    {
        let mut cfg = iql();
        cfg.network.kind = gridarena::train::config::NetworkKind::Gru;
        cfg.network.burn_in = 2;
        cfg.learn.opponent_models = false;
        cfg.iql.batch_size = 4;
        cfg.iql.cer = 1;
        cfg.iql.replay_capacity = 8 * 40;
        cfg.iql.min_replay = 96;
        cfg
    }
}

/// PR2-IQL with conditional opponent models on the climbing game.
fn pr2() -> RunConfig {
    {
        let mut cfg = tiny("assets/scenarios/climbing_game.ron");
        cfg.algo = Algo::Pr2Iql;
        cfg.rollout = 4;
        cfg.total_steps = 4 * 4 * 8;
        cfg.iql.replay_capacity = 40;
        cfg.iql.min_replay = 16;
        cfg.iql.target_tau = 0.05;
        cfg.pr2.minibatches = 2;
        cfg.pr2.buffer_batch_size = 2;
        cfg
    }
}

/// PR2-IQL with GRU critics on the three-learner Pursuit: sequence replay with each
/// sequence's entering hidden states and episode starts (evicting within the run), burn-in,
/// the arenas' hidden states and the episode-start flags carry over a resume.
fn pr2_gru() -> RunConfig {
    {
        let mut cfg = tiny("assets/scenarios/pursuit_3.ron");
        cfg.algo = Algo::Pr2Iql;
        cfg.rollout = 8;
        cfg.total_steps = 4 * 8 * 6;
        cfg.network.kind = NetworkKind::Gru;
        cfg.network.gru_hidden = 8;
        cfg.network.burn_in = 2;
        cfg.learn.opponent_models = false;
        cfg.iql.replay_capacity = 8 * 10;
        cfg.iql.min_replay = 16;
        cfg.iql.target_tau = 0.05;
        cfg.pr2.minibatches = 2;
        cfg.pr2.buffer_batch_size = 2;
        cfg
    }
}

/// PQN with opponent models on the three-learner Pursuit.
fn pqn() -> RunConfig {
    {
        let mut cfg = tiny("assets/scenarios/pursuit_3.ron");
        cfg.rollout = 8;
        cfg.total_steps = 4 * 8 * 6;
        cfg.pqn.minibatches = 2;
        cfg.pr2.minibatches = 2;
        cfg.online_dqn.minibatches = 2;
        cfg
    }
}

/// Trains `cfg` straight, and again in two halves with a resume between; returns the two run
/// directories and the resumed half's summary.
fn straight_and_split(cfg: &RunConfig, name: &str) -> (PathBuf, PathBuf, TrainSummary) {
    let half = cfg.updates() / 2;
    assert!(half >= 2, "the test needs at least four updates");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        let straight = temp(&format!("{name}-straight"));
        train(cfg, &straight, &TrainOptions::default()).unwrap();
        let split = temp(&format!("{name}-split"));
        let first = train(
            cfg,
            &split,
            &TrainOptions {
                until_update: Some(half),
                ..TrainOptions::default()
            },
        )
        .unwrap();
        assert_eq!(first.updates, half);
        let second = train(
            cfg,
            &split,
            &TrainOptions {
                resume: true,
                ..TrainOptions::default()
            },
        )
        .unwrap();
        assert_eq!(second.updates, cfg.updates());
        (straight, split, second)
    })
}

/// Asserts the two runs logged the same metrics and ended with the same parameters.
fn assert_same_run(straight: &Path, split: &Path) {
    let (a, b) = (
        deterministic_metrics(straight),
        deterministic_metrics(split),
    );
    assert_eq!(a.len(), b.len());
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "update {}: metrics differ after the resume", k + 1);
    }
    assert!(params(straight) == params(split), "final parameters differ");
}

fn exact(cfg: RunConfig, name: &str) {
    let (straight, split, second) = straight_and_split(&cfg, name);
    assert_same_run(&straight, &split);
    assert_eq!(second.resume_note, None);
    let _ = std::fs::remove_dir_all(straight);
    let _ = std::fs::remove_dir_all(split);
}

#[test]
fn iql_with_opponent_models_resumes_bit_for_bit() {
    exact(iql(), "iql");
}

#[test]
fn iql_with_gru_networks_resumes_bit_for_bit() {
    exact(iql_gru(), "iql-gru");
}

#[test]
fn iql_with_gru_networks_and_two_seeds_resumes_bit_for_bit() {
    let cfg = RunConfig {
        seeds: 2,
        ..iql_gru()
    };
    exact(cfg, "iql-gru-seeds");
}

#[test]
fn pr2_iql_with_opponent_models_resumes_bit_for_bit() {
    exact(pr2(), "pr2");
}

#[test]
fn pr2_iql_with_gru_networks_resumes_bit_for_bit() {
    exact(pr2_gru(), "pr2-gru");
}

/// On Level-Based Foraging, whose action masks the targets keep to, the replays' mask columns
/// carry over a resume: IQL with GRU networks, PR2-IQL with an MLP and with a GRU critic.
#[test]
fn masked_replays_resume_bit_for_bit() {
    let lbf = Some(PathBuf::from("assets/scenarios/lbf_8x8_2p_2f.ron"));
    for (cfg, name) in [
        (iql_gru(), "iql-gru-lbf"),
        (pr2(), "pr2-lbf"),
        (pr2_gru(), "pr2-gru-lbf"),
    ] {
        let cfg = RunConfig {
            scenario: lbf.clone(),
            ..cfg
        };
        exact(cfg, name);
    }
}

#[test]
fn pqn_with_opponent_models_resumes_bit_for_bit() {
    exact(pqn(), "pqn");
}

/// PQN-RNN: the agents' hidden states, the episode-start flags and the carried memory window
/// cross the resume (the halves split mid-episode: 8-step rollouts in the three-learner
/// Pursuit's 50-step episodes, whose starts are desynchronised).
#[test]
fn pqn_with_gru_networks_and_a_memory_window_resumes_bit_for_bit() {
    exact(
        {
            let mut cfg = pqn();
            cfg.network.kind = NetworkKind::Gru;
            cfg.network.gru_hidden = 8;
            cfg.network.memory_window = 3;
            cfg
        },
        "pqn-gru",
    );
}

/// Without the replay in the checkpoint the resume says it is approximate, and the resumed
/// run refills its replay and finishes.
#[test]
fn a_checkpoint_without_the_replay_resumes_approximately_and_says_so() {
    let cfg = RunConfig {
        checkpoint_replay: false,
        ..iql()
    };
    let (straight, split, second) = straight_and_split(&cfg, "noreplay");
    let note = second
        .resume_note
        .expect("no note on an approximate resume");
    assert!(
        note.contains("approximate") && note.contains("replay"),
        "{note}"
    );
    // The checkpoint holds no replay tensors.
    let c = RunDir::open(&split).unwrap().load_latest().unwrap();
    assert!(
        c.extra.iter().all(|(name, _)| !name.starts_with("replay.")),
        "{:?}",
        c.extra.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    assert_eq!(deterministic_metrics(&split).len(), cfg.updates() as usize);
    let _ = std::fs::remove_dir_all(straight);
    let _ = std::fs::remove_dir_all(split);
}

// ------------------------------------------------------------------------------------------
// Damaged checkpoints
// ------------------------------------------------------------------------------------------

/// A run of `cfg` stopped after two updates, its newest checkpoint's state.json edited by
/// `damage` and its checksums removed (as a checkpoint written before checksums: with them the
/// edit is caught before the state is read, see tests/run_integrity.rs), then resumed: the
/// error (never a panic).
fn resume_damaged(cfg: &RunConfig, name: &str, damage: impl Fn(&mut serde_json::Value)) -> String {
    let run = temp(name);
    train(
        cfg,
        &run,
        &TrainOptions {
            until_update: Some(2),
            ..TrainOptions::default()
        },
    )
    .unwrap();
    let dir = RunDir::open(&run).unwrap();
    let ckpt = dir.checkpoints().unwrap().pop().unwrap();
    let file = ckpt.join("state.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    damage(&mut state);
    std::fs::write(&file, state.to_string()).unwrap();
    std::fs::remove_file(ckpt.join("checksums.json")).unwrap();
    let resumed = std::panic::catch_unwind(|| {
        train(
            cfg,
            &run,
            &TrainOptions {
                resume: true,
                ..TrainOptions::default()
            },
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    });
    let _ = std::fs::remove_dir_all(&run);
    match resumed {
        Ok(Err(message)) => message,
        Ok(Ok(())) => panic!("the damaged checkpoint was accepted"),
        Err(_) => panic!("resuming from a damaged checkpoint panicked"),
    }
}

#[test]
fn a_truncated_arena_vector_is_refused_naming_the_field() {
    let message = resume_damaged(&pqn(), "truncated", |s| {
        let facing = s["batches"][0]["facing"].as_array_mut().unwrap();
        facing.pop();
    });
    assert!(message.contains("facing"), "{message}");
}

#[test]
fn a_position_outside_the_grid_is_refused_naming_the_field() {
    let message = resume_damaged(&pqn(), "outside", |s| {
        s["batches"][0]["pos"][0] = serde_json::json!([500, 3]);
    });
    assert!(message.contains("pos"), "{message}");
}

#[test]
fn a_missing_exploration_stream_is_refused_naming_the_field() {
    let message = resume_damaged(&iql(), "streams", |s| {
        s["explore"].as_array_mut().unwrap().pop();
    });
    assert!(message.contains("explore"), "{message}");
}

#[test]
fn a_replay_larger_than_its_capacity_is_refused() {
    let message = resume_damaged(&iql(), "ring", |s| {
        s["replay"]["len"] = serde_json::json!(100_000);
    });
    assert!(message.contains("replay"), "{message}");
}

/// A checkpoint written before the extra tensors existed (no replay, no limiter counters, the
/// opponent models' and the target parameters in the JSON) still resumes, approximately and
/// saying so.
#[test]
fn a_checkpoint_from_before_the_extra_tensors_still_resumes_approximately() {
    let cfg = iql();
    let run = temp("legacy");
    train(
        &cfg,
        &run,
        &TrainOptions {
            until_update: Some(2),
            ..TrainOptions::default()
        },
    )
    .unwrap();
    let dir = RunDir::open(&run).unwrap();
    let ckpt = dir.checkpoints().unwrap().pop().unwrap();
    let mut c = gridarena::train::run_dir::load_checkpoint(&ckpt).unwrap();
    let f32s = |wanted: &str| {
        c.extra
            .iter()
            .find_map(|(name, t)| match t {
                gridarena::train::tensors::Tensor::F32(p) if name == wanted => Some(p.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{wanted} is not a tensor"))
    };
    let (models, target) = (f32s("models.params"), f32s("target"));
    let mut state: serde_json::Value = serde_json::from_str(&c.state).unwrap();
    let o = state.as_object_mut().unwrap();
    for key in ["replay", "limiter", "models_state"] {
        assert!(o.remove(key).is_some(), "{key} missing from state.json");
    }
    o.insert("models".into(), serde_json::json!(models));
    o.insert("target".into(), serde_json::json!(target));
    c.state = state.to_string();
    c.extra.clear();
    std::fs::remove_dir_all(&ckpt).unwrap();
    dir.save_checkpoint(&c, 3).unwrap();
    let summary = train(
        &cfg,
        &run,
        &TrainOptions {
            resume: true,
            ..TrainOptions::default()
        },
    )
    .unwrap();
    assert_eq!(summary.updates, cfg.updates());
    let note = summary
        .resume_note
        .expect("no note on an approximate resume");
    assert!(
        note.contains("approximate") && note.contains("replay"),
        "{note}"
    );
    let _ = std::fs::remove_dir_all(run);
}

/// The preflight counts the checkpoint: a line that drops exactly the replay's bytes with
/// `checkpoint_replay: false`, as the file of a run with a full replay does.
#[test]
fn the_plan_counts_the_checkpoint_as_written() {
    let cfg = iql();
    let without_replay = RunConfig {
        checkpoint_replay: false,
        ..cfg.clone()
    };
    let device = gridarena::critic::choose_device(Device::Cpu).unwrap();
    let loaded = gridarena::train::load_scenario(&cfg).unwrap();
    let line = |cfg: &RunConfig| {
        let plan = gridarena::train::plan::plan(cfg, &loaded, &device, u64::MAX);
        let t = plan
            .tensors
            .iter()
            .find(|t| t.name.starts_with("checkpoint"))
            .unwrap_or_else(|| panic!("no checkpoint line in\n{}", plan.table()))
            .clone();
        assert!(plan.table().contains("on disk"), "{}", plan.table());
        t.bytes
    };
    // Three updates fill the 200-row replay (96 rows an update).
    let file = |cfg: &RunConfig, name: &str| {
        let run = temp(name);
        let opts = TrainOptions {
            until_update: Some(3),
            ..TrainOptions::default()
        };
        train(cfg, &run, &opts).unwrap();
        let ckpt = RunDir::open(&run)
            .unwrap()
            .checkpoints()
            .unwrap()
            .pop()
            .unwrap();
        let bytes = std::fs::metadata(ckpt.join("params.safetensors"))
            .unwrap()
            .len();
        let _ = std::fs::remove_dir_all(&run);
        bytes
    };
    let planned = line(&cfg) - line(&without_replay);
    let written = file(&cfg, "plan-replay") - file(&without_replay, "plan-no-replay");
    // The replay's bytes: 200 rows x (the observation and its successor + 16 B of action,
    // reward and flags + every learner's action as a u32 label for the opponent models);
    // pursuit_3's three learners observe obs_len bytes each.
    let layout = gridarena::layout::Layout::derive(&loaded);
    let (obs, learners) = (layout.obs_len as u64, layout.learners as u64);
    assert_eq!(learners, 3);
    assert_eq!(
        planned,
        200 * (2 * obs + 16 + 4 * learners),
        "obs_len {obs}"
    );
    assert!(
        written.abs_diff(planned) <= 1024,
        "the plan counts {planned} B of replay, the checkpoint holds {written} B"
    );
}

/// Trains `cfg` for two updates, drops the checkpoint's replay tensors whose names end with
/// one of `dropped`, and resumes: the summary, or the error.
fn resume_without(cfg: &RunConfig, name: &str, dropped: &[&str]) -> Result<TrainSummary, String> {
    let run = temp(name);
    let first = TrainOptions {
        until_update: Some(2),
        ..TrainOptions::default()
    };
    train(cfg, &run, &first).unwrap();
    let dir = RunDir::open(&run).unwrap();
    let ckpt = dir.checkpoints().unwrap().pop().unwrap();
    let mut c = gridarena::train::run_dir::load_checkpoint(&ckpt).unwrap();
    let before = c.extra.len();
    c.extra
        .retain(|(n, _)| !dropped.iter().any(|d| n.ends_with(&format!("replay.{d}"))));
    assert_eq!(
        c.extra.len() + dropped.len(),
        before,
        "not every tensor was there"
    );
    std::fs::remove_dir_all(&ckpt).unwrap();
    dir.save_checkpoint(&c, 3).unwrap();
    let resume = TrainOptions {
        resume: true,
        ..TrainOptions::default()
    };
    let resumed = train(cfg, &run, &resume).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(run);
    resumed
}

/// A checkpoint written before the replays kept action masks resumes (every stored action
/// counts as legal, as when it was written); one holding PR2's observation masks without their
/// final masks is refused, naming the tensor.
#[test]
fn checkpoints_without_the_masks_resume_and_half_of_them_are_refused() {
    let lbf = |cfg: RunConfig| RunConfig {
        scenario: Some(PathBuf::from("assets/scenarios/lbf_8x8_2p_2f.ron")),
        ..cfg
    };
    let iql = lbf(iql_gru());
    let summary = resume_without(&iql, "no-next-mask", &["next_mask"]).unwrap();
    assert_eq!(summary.updates, iql.updates());
    let pr2 = lbf(pr2());
    let summary = resume_without(&pr2, "no-masks", &["mask", "final_mask"]).unwrap();
    assert_eq!(summary.updates, pr2.updates());
    let message = resume_without(&pr2, "half-masks", &["final_mask"]).unwrap_err();
    assert!(message.contains("final_mask"), "{message}");
}
