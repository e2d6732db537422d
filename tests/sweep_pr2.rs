//! PR2-IQL seeds and sweeps in one run: replica k of a sweep is the single PR2-IQL run with its
//! grid point's values and seed, bit for bit (parameters, target critics, returns, greedy
//! evaluation), each replica with its own arenas, sequence replay, streams and rate limiter;
//! `--seeds` is accepted; shape-changing keys are refused by name; the memory preflight counts
//! every replica; a sweep resumes exactly and matches the CPU on the GPU backend; the CLI ranks
//! the grid and writes `sweep.csv` and one TensorBoard directory per replica. Replicas learn at
//! their own moments (a sweep of the rate limiter's keys: each replica exactly its own learner
//! steps, its networks' Adam step counts their own, resumed exactly) and with their own value
//! loss (`loss`, `huber_delta`, HL-Gauss `v_min`, `v_max`, `sigma`).

use std::path::{Path, PathBuf};
use std::process::Command;

use gridarena::critic::Device;
use gridarena::train::config::{
    Algo, IqlConfig, LearnConfig, NetworkConfig, Pr2Config, RunConfig, ValueLoss,
};
use gridarena::train::{TrainOptions, train};

#[path = "common/checks.rs"]
mod checks;
#[path = "common/runs.rs"]
mod runs;
#[path = "common/skip.rs"]
mod skip;
#[path = "common/sweeps.rs"]
mod sweeps;
use runs::{deterministic_metrics, params};
use sweeps::{
    assert_gpu_matches_cpu, assert_resumes_exactly, check_every_replica,
    check_replicas_equal_single_runs, plan_total, replica_steps, target_params, temp, with_sweep,
};

/// PR2-IQL on the two-player climbing game, small enough that learner steps start in the
/// second update (the replay passes `min_replay` after one rollout of every arena) and that
/// episodes (16 steps, truncated) end during the run.
fn small_pr2() -> RunConfig {
    RunConfig {
        algo: Algo::Pr2Iql,
        scenario: Some(PathBuf::from("assets/scenarios/climbing_game.ron")),
        device: Device::Cpu,
        arenas: 4,
        rollout: 4,
        seed: 5,
        total_steps: 4 * 4 * 8,
        checkpoint_every: 1,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
            ..Default::default()
        },
        learn: LearnConfig {
            lr: 3e-3,
            ..Default::default()
        },
        iql: IqlConfig {
            replay_capacity: 40,
            min_replay: 16,
            ..Default::default()
        },
        pr2: Pr2Config {
            epochs: 2,
            minibatches: 2,
            buffer_batch_size: 2,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

/// Every value a PR2-IQL replica reads per network or per replica differs between some
/// replicas: the learning rate and the clip (per-network Adam step), the Polyak factor
/// (per-network target update), gamma (the replica's TD targets), whether the newest sequence
/// is in every learner step (its own replay), the exploration schedule (its own threshold on
/// its own streams).
const PR2_AXES: [&str; 6] = [
    "lr=[3e-3, 1e-3]",
    "max_grad_norm=[10.0, 0.05]",
    "target_tau=[0.05, 0.5]",
    "gamma=[0.9, 0.99]",
    "cer=[1, 0]",
    "eps_fraction=[0.5, 0.1]",
];

#[test]
fn pr2_replica_k_of_a_sweep_equals_the_single_pr2_run_bit_for_bit() {
    let base = small_pr2();
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(base.clone(), &PR2_AXES)
    };
    let replicas = sweep.replicas().unwrap();
    assert_eq!(replicas.len(), 128);
    let multi = temp("pr2-multi");
    let summary = train(&sweep, &multi, &TrainOptions::default()).unwrap();
    let (multi_params, multi_target) = (params(&multi), target_params(&multi));
    assert_eq!(multi_params.len(), multi_target.len());
    let per_replica = multi_params.len() / replicas.len();
    // First, last, and replicas differing from replica 0 in one thing each: the seed, then
    // target_tau, max_grad_norm, lr, gamma, eps_fraction, cer (keys in name order, the last
    // varies fastest).
    let ks = [0usize, 1, 2, 4, 8, 16, 32, 64, 127];
    check_replicas_equal_single_runs(&multi, (&base, &replicas), &ks, true);
    // The critics learned (the comparison is not of untouched initial networks), episodes
    // ended (the returns compared are numbers), and the replicas differ.
    let metrics = deterministic_metrics(&multi);
    let last = metrics.last().unwrap();
    assert!(last["loss"].as_f64().unwrap() > 0.0, "{last}");
    assert!(
        metrics
            .iter()
            .any(|m| m["seeds_return_per_seed"][0].is_number()),
        "no episode ended"
    );
    assert_ne!(
        multi_params[..per_replica],
        multi_params[per_replica..2 * per_replica]
    );
    // The sweep is ranked, in sweep.csv too.
    let table = summary.sweep.expect("a PR2 sweep ranks its grid points");
    assert_eq!(table.points.len(), 64);
    let csv = std::fs::read_to_string(multi.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 65, "{csv}");
    let _ = std::fs::remove_dir_all(multi);
}

#[test]
fn a_pr2_sweep_resumes_exactly() {
    let cfg = RunConfig {
        seeds: 2,
        ..with_sweep(small_pr2(), &["lr=[3e-3, 1e-3]", "target_tau=[0.05, 0.5]"])
    };
    let split = assert_resumes_exactly(&cfg, "pr2-resume", true);
    let _ = std::fs::remove_dir_all(split);
}

#[test]
fn pr2_replicas_with_their_own_rate_limiters_equal_their_single_runs_bit_for_bit() {
    // Four samples per insert learn four times as often as one; a larger min_replay starts
    // later: four grid points, each its own number of learner steps, two seeds each.
    let base = small_pr2();
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(
            base.clone(),
            &["samples_per_insert=[1.0, 4.0]", "min_replay=[16, 32]"],
        )
    };
    let steps = check_every_replica("pr2-spi", (&base, &sweep));
    // min_replay (first key by name) varies slowest, then samples_per_insert, then the seed.
    let (early_fast, late_fast) = (steps[2], steps[6]);
    assert!(
        steps[0] < early_fast && late_fast < early_fast && steps[4] < late_fast,
        "Adam steps per replica: {steps:?}"
    );
    assert_eq!(steps[0], steps[1], "{steps:?}");
    // A wider error buffer lets the limiter run further ahead early. (40 is narrower than the
    // greedy evaluation's 20 arenas would need: evaluation never runs the limiter.)
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(
            base.clone(),
            &["rate_error_buffer=[0.0, 40.0]", "samples_per_insert=[2.0]"],
        )
    };
    let steps = check_every_replica("pr2-buffer", (&base, &sweep));
    assert_ne!(steps[0], steps[steps.len() - 1], "{steps:?}");
}

#[test]
fn pr2_replicas_take_their_own_value_loss_parameters_bit_for_bit() {
    let base = small_pr2();
    let sweep = with_sweep(
        base.clone(),
        &["loss=[mse, huber]", "huber_delta=[1.0, 0.1]"],
    );
    check_every_replica("pr2-loss", (&base, &sweep));
    let mut hl = base;
    hl.learn.loss = ValueLoss::HlGauss;
    hl.learn.bins = 11;
    let sweep = with_sweep(hl.clone(), &["v_max=[12.0, 3.0]", "sigma=[0.0, 0.5]"]);
    check_every_replica("pr2-hl", (&hl, &sweep));
}

#[test]
fn a_pr2_sweep_of_rates_resumes_exactly_with_each_networks_step_count() {
    let cfg = RunConfig {
        seeds: 2,
        ..with_sweep(small_pr2(), &["samples_per_insert=[1.0, 4.0]"])
    };
    let split = assert_resumes_exactly(&cfg, "pr2-rate-resume", true);
    let steps = replica_steps(&split, 4);
    assert!(steps[0] < steps[2], "{steps:?}");
    let _ = std::fs::remove_dir_all(split);
}

#[test]
fn a_pr2_sweep_of_rates_on_the_gpu_matches_the_cpu() {
    let cfg = RunConfig {
        seeds: 2,
        ..with_sweep(
            small_pr2(),
            &["samples_per_insert=[1.0, 4.0]", "sigma=[0.0, 0.5]"],
        )
    };
    let mut hl = cfg;
    hl.learn.loss = ValueLoss::HlGauss;
    hl.learn.bins = 11;
    assert_gpu_matches_cpu(&hl, "pr2-rate");
}

#[test]
fn pr2_seeds_are_accepted_and_shape_keys_refused_by_name() {
    let seeds = RunConfig {
        seeds: 3,
        ..small_pr2()
    };
    assert!(seeds.validate().is_ok());
    assert_eq!(seeds.replicas().unwrap().len(), 3);
    for (key, why) in [
        ("hidden", "shapes"),
        ("pair_rank", "shapes"),
        ("buffer_batch_size", "shape of the data"),
        ("bins", "shapes"),
    ] {
        let cfg = with_sweep(small_pr2(), &[&format!("{key}=[1, 2]")]);
        let err = cfg.replicas().unwrap_err().to_string();
        assert!(
            err.contains(&format!("`{key}`")) && err.contains(why),
            "{key}: {err}"
        );
        let run = temp(&format!("pr2-refused-{key}"));
        let err = train(&cfg, &run, &TrainOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("`{key}`")), "{key}: {err}");
    }
    // The rate limiter's keys and the value loss's parameters sweep; a loss that changes the
    // head's width beside another is refused.
    for axis in [
        "samples_per_insert=[1.0, 2.0]",
        "huber_delta=[1.0, 2.0]",
        "loss=[mse, huber]",
    ] {
        assert_eq!(
            with_sweep(small_pr2(), &[axis]).replicas().unwrap().len(),
            2
        );
    }
    let mixed = with_sweep(small_pr2(), &["loss=[mse, hl_gauss]"]);
    let err = mixed.replicas().unwrap_err().to_string();
    assert!(err.contains("`loss`") && err.contains("hl_gauss"), "{err}");
    // Opponent models: every replica has its own (tests/sweep_pr2_opponents.rs).
    let mut models = seeds;
    models.learn.opponent_models = true;
    models.validate().unwrap();
}

#[test]
fn the_pr2_memory_preflight_counts_every_replica() {
    let total = plan_total;
    let one = total(&small_pr2());
    let grid = total(&with_sweep(
        small_pr2(),
        &["lr=[1e-3, 2e-3]", "gamma=[0.9, 0.99]"],
    ));
    let seeds = total(&RunConfig {
        seeds: 4,
        ..small_pr2()
    });
    assert_eq!(grid, seeds, "4 grid points cost what 4 seeds cost");
    assert!(grid > one, "4 replicas {grid} vs one {one}");
    // The replay's bytes (in memory and in checkpoints) scale with the replicas.
    let mut big = small_pr2();
    big.iql.replay_capacity = 40_000;
    let replay_one = total(&big) - one;
    let replay_four = total(&RunConfig { seeds: 4, ..big }) - seeds;
    assert_eq!(replay_four, 4 * replay_one);
}

/// The stacked PR2 replicas train alike on the GPU backend (the critic stack on the device,
/// the factorised head's math on the host): per-network learning rates and Polyak factors.
#[test]
fn a_pr2_sweep_on_the_gpu_matches_the_cpu() {
    let cfg = RunConfig {
        seeds: 2,
        ..with_sweep(small_pr2(), &["lr=[3e-3, 1e-3]", "target_tau=[0.05, 0.5]"])
    };
    assert_gpu_matches_cpu(&cfg, "pr2");
}

fn gridarena(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_cli_runs_a_pr2_sweep_end_to_end() {
    let out = temp("pr2-cli");
    let out_s = out.to_str().unwrap();
    let o = gridarena(&[
        "train",
        "--algo",
        "pr2-iql",
        "--scenario",
        "assets/scenarios/climbing_game.ron",
        "--device",
        "cpu",
        "--steps",
        "512",
        "--set",
        "arenas=4",
        "--set",
        "rollout=4",
        "--set",
        "buffer_batch_size=2",
        "--set",
        "min_replay=16",
        "--set",
        "hidden=16",
        "--set",
        "layers=1",
        "--seeds",
        "2",
        "--sweep",
        "lr=[1e-3,3e-3]",
        "--out",
        out_s,
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("4 replicas in one stack (2 grid points x 2 seeds)"),
        "{text}"
    );
    assert!(text.contains("final return"), "{text}");
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.contains("0.001") && csv.contains("0.003"), "{csv}");
    let tb = std::fs::read_dir(out.join("tensorboard")).unwrap().count();
    assert_eq!(tb, 4, "one TensorBoard directory per replica");
    // A shape key is refused by name before anything is written.
    let refused = temp("pr2-cli-refused");
    let o = gridarena(&[
        "train",
        "--algo",
        "pr2-iql",
        "--device",
        "cpu",
        "--sweep",
        "hidden=[8,16]",
        "--out",
        refused.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("`hidden`"));
    assert!(!Path::new(&refused).exists());
    let _ = std::fs::remove_dir_all(out);
}
