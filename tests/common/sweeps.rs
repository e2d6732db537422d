//! Helpers shared by the sweep tests (PQN, IQL, PR2-IQL): a fresh run directory, a config
//! with `--sweep` axes, a replica's single run, and the check that replica k of a sweep equals
//! that single run bit for bit.
#![allow(dead_code, missing_docs)]

use std::path::{Path, PathBuf};

use gridarena::critic::{Chosen, Device, choose_device};
use gridarena::train::config::RunConfig;
use gridarena::train::eval::{evaluate, evaluate_replica};
use gridarena::train::plan::{self, PlanDevice};
use gridarena::train::run_dir::RunDir;
use gridarena::train::sweep::{Replica, parse_axis};
use gridarena::train::tensors::Tensor;
use gridarena::train::{TrainOptions, load_scenario, train};

use super::checks::{assert_all_finite, assert_same_bits, assert_series_equal, numbers_in};
use super::runs::{deterministic_metrics, params};
use super::skip::gpu_adapter_present;

/// A fresh directory under the system's temporary one.
pub fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// `cfg` with the `--sweep` axes `axes`.
pub fn with_sweep(mut cfg: RunConfig, axes: &[&str]) -> RunConfig {
    for a in axes {
        let (k, v) = parse_axis(a).unwrap();
        cfg.sweep.insert(k, v);
    }
    cfg
}

/// Replica `r`'s single run as a user would ask for it: `--seed` and one `--set` per key.
pub fn single_run_of(base: &RunConfig, r: &Replica) -> RunConfig {
    let mut cfg = RunConfig {
        seed: base.seed + r.seed_index as u64,
        ..base.clone()
    };
    for (key, value) in &r.values {
        cfg.set(&format!("{key}={value}")).unwrap();
    }
    cfg
}

/// Trains the single run each of `ks` stands for and checks replica k of the sweep run in
/// `multi` equals it bit for bit: parameters (and, with `targets`, the target networks), every
/// update's return, and the greedy evaluation of `eval --replica k`.
pub fn check_replicas_equal_single_runs(
    multi: &Path,
    (base, replicas): (&RunConfig, &[Replica]),
    ks: &[usize],
    targets: bool,
) {
    let multi_params = params(multi);
    let multi_target = if targets {
        target_params(multi)
    } else {
        Vec::new()
    };
    let multi_metrics = deterministic_metrics(multi);
    let per_replica = multi_params.len() / replicas.len();
    for &k in ks {
        let r = &replicas[k];
        let label = r.point_label();
        let single = temp(&format!(
            "single-{}-{k}",
            multi.file_name().unwrap().to_string_lossy()
        ));
        train(&single_run_of(base, r), &single, &TrainOptions::default()).unwrap();
        let block = k * per_replica..(k + 1) * per_replica;
        assert_same_bits(
            &multi_params[block.clone()],
            &params(&single),
            format!("replica {k} ({label}): parameters against the single run"),
        );
        if targets {
            assert_same_bits(
                &multi_target[block],
                &target_params(&single),
                format!("replica {k} ({label}): target parameters against the single run"),
            );
        }
        let single_metrics = deterministic_metrics(&single);
        assert_eq!(multi_metrics.len(), single_metrics.len());
        // Returns are null in an update where no episode ended; some must have ended.
        assert_series_equal(
            multi_metrics
                .iter()
                .zip(&single_metrics)
                .map(|(m, s)| (&m["seeds_return_per_seed"][k], &s["return_mean"])),
            1,
            format!("replica {k} ({label}): return per update"),
        );
        // `eval --replica k` evaluates exactly the single run's policy.
        let a = evaluate_replica(multi, 20, &cpu(), k).unwrap();
        let b = evaluate(&single, 20, &cpu()).unwrap();
        assert!(
            !a.policy.per_agent.is_empty() && a.policy.per_agent.iter().all(|r| r.is_finite()),
            "replica {k}: eval returns {:?}",
            a.policy.per_agent
        );
        assert_eq!(a.policy.per_agent, b.policy.per_agent, "replica {k}: eval");
        let _ = std::fs::remove_dir_all(single);
    }
}

/// The CPU backend.
pub fn cpu() -> Chosen {
    choose_device(Device::Cpu).unwrap()
}

/// The newest checkpoint's tensor `name`: a single run's, or every replica's one after the
/// other (`replica.<r>.name`) in a run of several.
fn replicas_tensor(run: &Path, name: &str) -> Vec<f32> {
    let c = RunDir::open(run).unwrap().load_latest().unwrap();
    let find = |n: &str| match c.extra.iter().find(|(found, _)| found == n) {
        Some((_, Tensor::F32(t))) => Some(t.clone()),
        _ => None,
    };
    if let Some(t) = find(name) {
        return t;
    }
    let every: Vec<Vec<f32>> = (0..)
        .map_while(|r| find(&format!("replica.{r}.{name}")))
        .collect();
    assert!(!every.is_empty(), "{}: no {name} tensor", run.display());
    every.concat()
}

/// The newest checkpoint's target parameters (every replica's).
pub fn target_params(run: &Path) -> Vec<f32> {
    replicas_tensor(run, "target")
}

/// The newest checkpoint's `state.json`.
pub fn checkpoint_state(run: &Path) -> serde_json::Value {
    let c = RunDir::open(run).unwrap().load_latest().unwrap();
    serde_json::from_str(&c.state).unwrap()
}

/// Each replica's Adam step count in the newest checkpoint of a run of `replicas` replicas
/// (every network of a replica counts the same steps).
pub fn replica_steps(run: &Path, replicas: usize) -> Vec<u64> {
    let each: Vec<Vec<u64>> =
        serde_json::from_value(checkpoint_state(run)["net_steps"].clone()).unwrap();
    assert_eq!(each.len(), replicas, "one list of step counts per replica");
    let steps = each.concat();
    let per = steps.len() / replicas;
    assert!(per > 0, "no step count per network: {steps:?}");
    let chunks = steps.chunks(per);
    assert!(
        chunks.clone().all(|c| c.iter().all(|&s| s == c[0])),
        "{steps:?}"
    );
    chunks.map(|c| c[0]).collect()
}

/// Trains `cfg` straight, and again until update 3 then resumed, and checks the two end bit
/// for bit: parameters (with `targets`, the target networks too) and every update's metrics
/// but the wall-clock ones. Returns the resumed run's directory (the straight one is removed).
pub fn assert_resumes_exactly(cfg: &RunConfig, name: &str, targets: bool) -> PathBuf {
    let straight = temp(&format!("{name}-straight"));
    train(cfg, &straight, &TrainOptions::default()).unwrap();
    let split = temp(&format!("{name}-split"));
    let first = TrainOptions {
        until_update: Some(3),
        ..TrainOptions::default()
    };
    train(cfg, &split, &first).unwrap();
    train(cfg, &split, &resumed()).unwrap();
    assert_eq!(params(&split), params(&straight));
    if targets {
        assert_eq!(target_params(&split), target_params(&straight));
    }
    assert_eq!(
        deterministic_metrics(&split),
        deterministic_metrics(&straight)
    );
    let _ = std::fs::remove_dir_all(straight);
    split
}

/// The options of a resumed run.
pub fn resumed() -> TrainOptions {
    TrainOptions {
        resume: true,
        ..TrainOptions::default()
    }
}

/// The memory preflight's total for `cfg` on the CPU (no budget).
pub fn plan_total(cfg: &RunConfig) -> u64 {
    let loaded = load_scenario(cfg).unwrap();
    plan::plan_for(cfg, &loaded, PlanDevice::Chosen(&cpu()), u64::MAX, None).total_bytes
}

/// Trains `cfg` on the CPU and on the GPU backend and checks both end with parameters and
/// target networks within 1e-4 of each other (and the targets trailing the online networks);
/// skips loudly without a usable adapter (fails under `CI`).
pub fn assert_gpu_matches_cpu(cfg: &RunConfig, name: &str) {
    if !gpu_adapter_present() {
        return;
    }
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
        assert!(summary.is_ok(), "{device:?}: {:?}", summary.err());
        runs.push((params(&run), target_params(&run)));
        let _ = std::fs::remove_dir_all(run);
    }
    let close = |a: &[f32], b: &[f32]| {
        assert_all_finite(a, "CPU parameters");
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4)
    };
    assert!(close(&runs[0].0, &runs[1].0), "parameters differ");
    assert!(close(&runs[0].1, &runs[1].1), "target parameters differ");
    assert_ne!(
        runs[0].0, runs[0].1,
        "the targets trail the online networks"
    );
}

/// The newest checkpoint's opponent-model parameters (every replica's).
pub fn models(run: &Path) -> Vec<f32> {
    replicas_tensor(run, "models.params")
}

/// Whether `a` and `b` are equal bit for bit.
pub fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Checks replica `k`'s opponent-model scores in every update of the sweep's metrics `multi`
/// equal the single run's `single` (and replica 0's stay where a single run's are), and that
/// the models were scored at least once.
pub fn assert_scores_equal_single_run(
    multi: &[serde_json::Value],
    single: &[serde_json::Value],
    k: usize,
    label: &str,
) {
    assert_eq!(multi.len(), single.len());
    let mut scored = 0;
    for (m, s) in multi.iter().zip(single) {
        let update = &m["update"];
        for (multi_key, single_key) in [
            ("seeds_opponent_accuracy", "opponent_accuracy"),
            ("seeds_opponent_log_loss", "opponent_log_loss"),
            ("seeds_opponent_train_loss", "opponent_train_loss"),
        ] {
            assert_eq!(
                m[multi_key][k], s[single_key],
                "{label}, update {update}: {multi_key}"
            );
        }
        scored += usize::from(numbers_in(&s["opponent_accuracy"]) > 0);
        if k == 0 {
            assert_eq!(m["opponent_log_loss"], s["opponent_log_loss"], "{label}");
        }
    }
    assert!(scored > 0, "{label}: the models were never scored");
}

/// Trains `sweep` (of `base`) and checks every replica equals its single run bit for
/// bit (parameters, targets, returns, greedy evaluation); returns each replica's Adam step
/// count.
pub fn check_every_replica(name: &str, (base, sweep): (&RunConfig, &RunConfig)) -> Vec<u64> {
    let replicas = sweep.replicas().unwrap();
    let multi = temp(name);
    train(sweep, &multi, &TrainOptions::default()).unwrap();
    let ks: Vec<usize> = (0..replicas.len()).collect();
    check_replicas_equal_single_runs(&multi, (base, &replicas), &ks, true);
    let metrics = deterministic_metrics(&multi);
    assert!(metrics.last().unwrap()["loss"].as_f64().unwrap() > 0.0);
    let all = params(&multi);
    let per = all.len() / replicas.len();
    assert_ne!(all[..per], all[per..2 * per], "the replicas differ");
    let steps = replica_steps(&multi, replicas.len());
    let _ = std::fs::remove_dir_all(multi);
    steps
}
