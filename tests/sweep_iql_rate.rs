//! IQL replicas learn at their own moments: a sweep over the rate limiter's keys
//! (`samples_per_insert`, `min_replay`, `rate_error_buffer`) gives each replica its own learner
//! steps (each network counts its own Adam steps), and a sweep over the value loss (`loss`,
//! `huber_delta`, `v_min`, `v_max`, `sigma`) gives each its own head; either way replica k is
//! the single run with its grid point's values and seed, bit for bit (online and target
//! parameters, every update's return). Checkpoints carry the per-network step counts: such a
//! sweep resumes exactly, and a checkpoint with one count (written before there was one per
//! network) still loads, every network taking it.

use std::path::{Path, PathBuf};

use gridarena::critic::Device;
use gridarena::train::config::{Algo, IqlConfig, LearnConfig, NetworkConfig, RunConfig, ValueLoss};
use gridarena::train::run_dir::RunDir;
use gridarena::train::sweep::parse_axis;
use gridarena::train::{TrainOptions, train};

#[path = "common/checks.rs"]
mod checks;
#[path = "common/runs.rs"]
mod runs;
#[path = "common/skip.rs"]
mod skip;
use runs::{deterministic_metrics, params};
#[path = "common/sweeps.rs"]
mod sweeps;
use sweeps::{check_every_replica, target_params};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-iql-rate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// IQL on the chase task with learner steps from the first update, `axes` swept, two seeds.
fn iql_sweep(axes: &[&str]) -> (RunConfig, RunConfig) {
    let base = RunConfig {
        algo: Algo::Iql,
        scenario: Some(PathBuf::from("tests/data/chase.ron")),
        device: Device::Cpu,
        arenas: 4,
        rollout: 8,
        seed: 11,
        total_steps: 4 * 8 * 5,
        checkpoint_every: 1,
        network: NetworkConfig {
            hidden: 32,
            layers: 1,
            ..Default::default()
        },
        learn: LearnConfig {
            lr: 3e-3,
            lr_decay: false,
            ..Default::default()
        },
        iql: IqlConfig {
            batch_size: 16,
            cer: 2,
            replay_capacity: 200,
            min_replay: 32,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    let mut sweep = RunConfig {
        seeds: 2,
        ..base.clone()
    };
    for a in axes {
        let (k, v) = parse_axis(a).unwrap();
        sweep.sweep.insert(k, v);
    }
    (base, sweep)
}

/// The newest checkpoint's target parameters and its `state.json`.
fn target_and_state(run: &Path) -> (Vec<f32>, serde_json::Value) {
    let c = RunDir::open(run).unwrap().load_latest().unwrap();
    (target_params(run), serde_json::from_str(&c.state).unwrap())
}

#[test]
fn iql_replicas_with_their_own_rate_limiters_equal_their_single_runs_bit_for_bit() {
    // Four samples per insert learn four times as often as one; a larger min_replay starts
    // later: four grid points, each its own number of learner steps, two seeds each.
    let (base, sweep) = iql_sweep(&["samples_per_insert=[1.0, 4.0]", "min_replay=[32, 96]"]);
    // Every network of a replica counts the same steps (checked by `replica_steps`).
    let per_replica = check_every_replica("spi", (&base, &sweep));
    assert_eq!(per_replica.len(), 8);
    // min_replay (first key by name) varies slowest, then samples_per_insert, then the seed.
    let (early_fast, late_fast) = (per_replica[2], per_replica[6]);
    assert!(
        per_replica[0] < early_fast && late_fast < early_fast && per_replica[4] < late_fast,
        "learner steps per replica: {per_replica:?}"
    );
    // A wider error buffer lets the limiter run further ahead early.
    let (base, sweep) = iql_sweep(&["rate_error_buffer=[0.0, 200.0]", "samples_per_insert=[2.0]"]);
    let steps = check_every_replica("buffer", (&base, &sweep));
    assert_ne!(steps[0], steps[steps.len() - 1], "{steps:?}");
}

#[test]
fn iql_replicas_take_their_own_value_loss_parameters_bit_for_bit() {
    let (base, sweep) = iql_sweep(&["loss=[mse, huber]", "huber_delta=[1.0, 0.1]"]);
    check_every_replica("loss", (&base, &sweep));
    let (base, sweep) = iql_sweep(&["v_max=[10.0, 2.0]", "sigma=[0.0, 0.5]"]);
    let hl = |c: RunConfig| {
        let mut cfg = c;
        cfg.learn.loss = ValueLoss::HlGauss;
        cfg.learn.bins = 11;
        cfg
    };
    check_every_replica("hl", (&hl(base), &hl(sweep)));
}

/// Trains `cfg` for `until` updates, lets `edit` change the newest checkpoint's `state.json`
/// (and removes its checksums, as a checkpoint of an earlier version has none), and resumes to
/// the end; returns the run and how the resume went.
fn edit_and_resume(
    cfg: &RunConfig,
    name: &str,
    until: u64,
    edit: impl Fn(&mut serde_json::Value),
) -> (PathBuf, Result<(), String>) {
    let split = temp(name);
    let first = TrainOptions {
        until_update: Some(until),
        ..TrainOptions::default()
    };
    train(cfg, &split, &first).unwrap();
    let newest = RunDir::open(&split)
        .unwrap()
        .checkpoints()
        .unwrap()
        .pop()
        .unwrap();
    let file = newest.join("state.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    edit(&mut state);
    std::fs::write(&file, state.to_string()).unwrap();
    std::fs::remove_file(newest.join("checksums.json")).unwrap();
    let resume = TrainOptions {
        resume: true,
        ..TrainOptions::default()
    };
    let done = train(cfg, &split, &resume)
        .map(|_| ())
        .map_err(|e| e.to_string());
    (split, done)
}

/// [`edit_and_resume`] after 3 updates, which must succeed.
fn resumed(cfg: &RunConfig, name: &str, edit: impl Fn(&mut serde_json::Value)) -> PathBuf {
    let (run, done) = edit_and_resume(cfg, name, 3, edit);
    done.unwrap();
    run
}

#[test]
fn a_sweep_of_rates_resumes_exactly_and_one_count_checkpoints_still_load() {
    let (_, cfg) = iql_sweep(&["samples_per_insert=[1.0, 4.0]"]);
    let straight = temp("resume-straight");
    train(&cfg, &straight, &TrainOptions::default()).unwrap();
    let split = resumed(&cfg, "resume-split", |_| {});
    assert_eq!(params(&split), params(&straight));
    let ((t_split, s_split), (t_straight, s_straight)) =
        (target_and_state(&split), target_and_state(&straight));
    assert_eq!(t_split, t_straight);
    assert_eq!(s_split["net_steps"], s_straight["net_steps"]);
    assert_eq!(
        deterministic_metrics(&split),
        deterministic_metrics(&straight)
    );
    // The step counts are in the checkpoint: a resume that lost them (every network on the
    // largest count) would correct the slower replicas' steps wrongly.
    let lost = resumed(&cfg, "resume-lost", |s| {
        s.as_object_mut().unwrap().remove("net_steps");
    });
    assert_ne!(params(&lost), params(&straight));
    // A checkpoint of one count, from before there was one per network, loads; with replicas
    // that learn at the same moments (their one count is every network's) it resumes exactly.
    let (_, seeds) = iql_sweep(&[]);
    let straight_seeds = temp("seeds-straight");
    train(&seeds, &straight_seeds, &TrainOptions::default()).unwrap();
    let old = resumed(&seeds, "seeds-old", |s| {
        s.as_object_mut().unwrap().remove("net_steps");
    });
    assert_eq!(params(&old), params(&straight_seeds));
    // A count per network of the wrong length is refused, naming the field.
    let (bad, done) = edit_and_resume(&cfg, "bad", 2, |s| {
        s["net_steps"] = serde_json::json!([[1, 2], [3]])
    });
    let err = done.unwrap_err();
    assert!(err.contains("net_steps"), "{err}");
    for run in [straight, split, lost, straight_seeds, old, bad] {
        let _ = std::fs::remove_dir_all(run);
    }
}

/// The masked step on the GPU: replicas with their own rates learn as on the CPU (the same
/// per-network step counts, parameters within the parity tolerance).
#[test]
fn a_sweep_of_rates_on_the_gpu_matches_the_cpu() {
    if !skip::gpu_adapter_present() {
        return;
    }
    let (_, cfg) = iql_sweep(&["samples_per_insert=[1.0, 4.0]"]);
    type Run = (Vec<f32>, (Vec<f32>, serde_json::Value));
    let runs: Vec<Run> = [Device::Cpu, Device::Gpu]
        .into_iter()
        .map(|device| {
            let run = temp(&format!("gpu-{device:?}"));
            let cfg = RunConfig {
                device,
                ..cfg.clone()
            };
            train(&cfg, &run, &TrainOptions::default()).unwrap();
            let out = (params(&run), target_and_state(&run));
            let _ = std::fs::remove_dir_all(run);
            out
        })
        .collect();
    let (cpu, gpu) = (&runs[0], &runs[1]);
    assert_eq!(cpu.1.1["net_steps"], gpu.1.1["net_steps"]);
    let close = |a: &[f32], b: &[f32]| {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4)
    };
    assert!(close(&cpu.0, &gpu.0), "parameters differ");
    assert!(close(&cpu.1.0, &gpu.1.0), "target parameters differ");
}
