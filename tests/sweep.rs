//! Hyperparameter sweeps in one run: replica k of a sweep is the single run with its grid
//! point's values and seed, bit for bit (parameters, returns, greedy evaluation), for PQN and
//! IQL (whose target networks, replays and rate limiters are per replica too; PR2-IQL's in
//! tests/sweep_pr2.rs); shape-changing keys are refused by name; the ranking, `sweep.csv` and
//! `sweep.png` are written; the memory preflight counts every replica; a sweep resumes exactly.

use std::path::{Path, PathBuf};
use std::process::Command;

use gridarena::critic::Device;
use gridarena::train::config::{
    Algo, LearnConfig, NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config, RunConfig,
};
use gridarena::train::eval::evaluate_replica;
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
    assert_gpu_matches_cpu, assert_resumes_exactly, check_replicas_equal_single_runs, cpu,
    plan_total, resumed, target_params, temp, with_sweep,
};

fn small() -> RunConfig {
    RunConfig {
        scenario: Some(PathBuf::from("tests/data/chase.ron")),
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
            ..Default::default()
        },
        pr2: Pr2Config {
            epochs: 2,
            minibatches: 4,
            ..Default::default()
        },
        online_dqn: OnlineDqnConfig {
            epochs: 2,
            minibatches: 4,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

/// Every per-network scalar PQN sweeps differs between some replicas: the learning rate and
/// the clip go through the per-network optimiser step, gamma/lambda through the returns, the
/// exploration schedule through acting.
const AXES: [&str; 4] = [
    "lr=[3e-3, 1e-3]",
    "max_grad_norm=[10.0, 0.05]",
    "gamma=[0.9, 0.99]",
    "eps_fraction=[0.5, 0.1]",
];

#[test]
fn replica_k_of_a_sweep_equals_the_single_run_with_its_values_bit_for_bit() {
    let base = small();
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(base.clone(), &AXES)
    };
    let replicas = sweep.replicas().unwrap();
    assert_eq!(replicas.len(), 32);
    let multi = temp("multi");
    let summary = train(&sweep, &multi, &TrainOptions::default()).unwrap();
    let multi_params = params(&multi);
    let per_replica = multi_params.len() / replicas.len();
    // A spread of replicas: first, last, and ones differing in each key and in the seed.
    let ks = [0usize, 1, 6, 13, 18, 31];
    check_replicas_equal_single_runs(&multi, (&base, &replicas), &ks, false);
    // Replicas really differ (the sweep is not one run copied).
    assert_ne!(
        multi_params[..per_replica],
        multi_params[per_replica * 8..per_replica * 9]
    );

    // The ranking: every grid point once, best first, in sweep.csv and the summary.
    let table = summary.sweep.expect("a sweep run ranks its grid points");
    assert_eq!(table.points.len(), 16);
    assert_eq!(table.keys, ["eps_fraction", "gamma", "lr", "max_grad_norm"]);
    let ranked: Vec<f64> = table
        .points
        .iter()
        .map(|p| p.mean)
        .filter(|m| !m.is_nan())
        .collect();
    assert!(ranked.windows(2).all(|w| w[0] >= w[1]), "{ranked:?}");
    let csv = std::fs::read_to_string(multi.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 17, "{csv}");
    assert!(csv.starts_with("rank,point,eps_fraction,gamma,lr,max_grad_norm,seeds,"));
    assert!(multi.join("sweep.png").is_file());
    let best = table.best_replica().unwrap();
    assert_eq!(replicas[best].point, table.points[0].point);
    // Out of range is refused, not a panic.
    let err = evaluate_replica(&multi, 5, &cpu(), 32)
        .unwrap_err()
        .to_string();
    assert!(err.contains("replica 32") && err.contains("32"), "{err}");
    let _ = std::fs::remove_dir_all(multi);
}

#[test]
fn a_sweep_resumes_exactly() {
    let cfg = with_sweep(small(), &["lr=[3e-3, 1e-3]", "gamma=[0.9, 0.99]"]);
    let split = assert_resumes_exactly(&cfg, "resume", false);
    // A different grid is not this run.
    let other = with_sweep(small(), &["lr=[3e-3, 2e-3]", "gamma=[0.9, 0.99]"]);
    let err = train(&other, &split, &resumed()).unwrap_err().to_string();
    assert!(err.contains("sweep"), "{err}");
    let _ = std::fs::remove_dir_all(split);
}

#[test]
fn the_memory_preflight_counts_every_replica() {
    let total = plan_total;
    let one = total(&small());
    let grid = total(&with_sweep(
        small(),
        &["lr=[1e-3, 2e-3]", "gamma=[0.9, 0.99]"],
    ));
    let seeds = total(&RunConfig {
        seeds: 4,
        ..small()
    });
    assert_eq!(grid, seeds, "4 grid points cost what 4 seeds cost");
    assert!(grid > one, "4 replicas {grid} vs one {one}");
}

fn gridarena(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn shape_changing_keys_and_bad_values_are_refused_naming_the_key() {
    let out = temp("refused");
    let out_s = out.to_str().unwrap();
    for (axis, key) in [
        ("hidden=[32,64]", "`hidden`"),
        ("arenas=[8,16]", "`arenas`"),
        ("layers=[1,2]", "`layers`"),
        ("gamma=[0.9,2.0]", "gamma=2"),
        ("lr=[", "--sweep lr=["),
    ] {
        let o = gridarena(&[
            "train",
            "--scenario",
            "tests/data/chase.ron",
            "--device",
            "cpu",
            "--sweep",
            axis,
            "--out",
            out_s,
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{axis}: accepted");
        assert!(err.contains(key), "{axis}: {err}");
        assert!(
            !Path::new(&out).exists(),
            "{axis}: a refused run wrote {out_s}"
        );
    }
    // A PQN sweep of a rate-limiter key (IQL sweeps them) is refused with its name and why.
    let o = gridarena(&[
        "train",
        "--algo",
        "pqn",
        "--device",
        "cpu",
        "--sweep",
        "samples_per_insert=[1.0,2.0]",
        "--out",
        out_s,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("`samples_per_insert`") && err.contains("not read by this algorithm"),
        "{err}"
    );
    assert!(!Path::new(&out).exists());
}

// ------------------------------------------------------------------------------------------
// IQL
// ------------------------------------------------------------------------------------------

/// IQL on the chase task, small enough that learner steps start in the first update: the
/// replay passes `min_replay` after a few environment steps.
fn small_iql() -> RunConfig {
    {
        let mut cfg = small();
        cfg.algo = Algo::Iql;
        cfg.arenas = 4;
        cfg.rollout = 8;
        cfg.total_steps = 4 * 8 * 5;
        cfg.checkpoint_every = 1;
        cfg.learn.lr_decay = false;
        cfg.iql.batch_size = 16;
        cfg.iql.cer = 2;
        cfg.iql.replay_capacity = 200;
        cfg.iql.min_replay = 32;
        cfg
    }
}

/// Every value an IQL replica reads per network or per replica differs between some replicas:
/// the learning rate (per-network Adam step), the Polyak factor (per-network target update),
/// gamma (the replica's TD targets), the newest rows in a minibatch (its own replay), the
/// exploration schedule (its own threshold on its own streams).
const IQL_AXES: [&str; 5] = [
    "lr=[3e-3, 1e-3]",
    "target_tau=[0.05, 0.5]",
    "gamma=[0.9, 0.99]",
    "cer=[2, 0]",
    "eps_fraction=[0.5, 0.1]",
];

#[test]
fn iql_replica_k_of_a_sweep_equals_the_single_iql_run_bit_for_bit() {
    let base = small_iql();
    let sweep = RunConfig {
        seeds: 2,
        ..with_sweep(base.clone(), &IQL_AXES)
    };
    let replicas = sweep.replicas().unwrap();
    assert_eq!(replicas.len(), 64);
    let multi = temp("iql-multi");
    train(&sweep, &multi, &TrainOptions::default()).unwrap();
    let (multi_params, multi_target) = (params(&multi), target_params(&multi));
    let multi_metrics = deterministic_metrics(&multi);
    assert_eq!(multi_params.len(), multi_target.len());
    let per_replica = multi_params.len() / replicas.len();
    // First, last, and replicas differing from replica 0 in one thing each: the seed, then
    // target_tau, lr, gamma, eps_fraction, cer (keys in name order, the last varies fastest).
    let ks = [0usize, 1, 2, 4, 8, 16, 32, 63];
    check_replicas_equal_single_runs(&multi, (&base, &replicas), &ks, true);
    // The learners learned (the comparison is not of untouched initial networks), and the
    // replicas differ.
    let last = multi_metrics.last().unwrap();
    assert!(last["loss"].as_f64().unwrap() > 0.0, "{last}");
    assert_ne!(
        multi_params[..per_replica],
        multi_params[per_replica..2 * per_replica]
    );
    let _ = std::fs::remove_dir_all(multi);
}

#[test]
fn an_iql_sweep_resumes_exactly() {
    let cfg = RunConfig {
        seeds: 2,
        ..with_sweep(small_iql(), &["lr=[3e-3, 1e-3]", "target_tau=[0.05, 0.5]"])
    };
    let split = assert_resumes_exactly(&cfg, "iql-resume", true);
    let _ = std::fs::remove_dir_all(split);
}

#[test]
fn iql_sweeps_take_rate_limiter_keys_pqn_refuses_them_and_threads() {
    // IQL replicas learn at their own moments (tests/sweep_iql_rate.rs); PQN has no limiter.
    for (key, values) in [
        ("samples_per_insert", "[1.0, 2.0]"),
        ("min_replay", "[64, 128]"),
        ("rate_error_buffer", "[0.0, 400.0]"),
    ] {
        let cfg = with_sweep(small_iql(), &[&format!("{key}={values}")]);
        assert_eq!(cfg.replicas().unwrap().len(), 2, "{key}");
        let pqn = with_sweep(small(), &[&format!("{key}={values}")]);
        let err = pqn.replicas().unwrap_err().to_string();
        assert!(
            err.contains(&format!("`{key}`")) && err.contains("not read by this algorithm"),
            "{key}: {err}"
        );
    }
    // Every replica has its own opponent models, so they may learn at their own moments.
    let mut models = small_iql();
    models.learn.opponent_models = true;
    let sweep = with_sweep(models, &["min_replay=[64, 128]"]);
    assert_eq!(sweep.replicas().unwrap().len(), 2);
    let mut threaded = small_iql();
    threaded.seeds = 2;
    threaded.iql.threaded = true;
    let err = threaded.validate().unwrap_err().to_string();
    assert!(
        err.contains("threaded") && err.contains("2 replicas"),
        "{err}"
    );
    // IQL with seeds alone is accepted now.
    let seeds = RunConfig {
        seeds: 3,
        ..small_iql()
    };
    assert!(seeds.validate().is_ok());
}

#[test]
fn the_iql_memory_preflight_counts_every_replica_replay() {
    let total = plan_total;
    let small_replay = small_iql();
    let mut big_replay = small_iql();
    big_replay.iql.replay_capacity = 100_000;
    let one = total(&big_replay) - total(&small_replay);
    let four = total(&RunConfig {
        seeds: 4,
        ..big_replay
    }) - total(&RunConfig {
        seeds: 4,
        ..small_replay
    });
    // The replay's bytes (in memory and in checkpoints) scale with the replicas.
    assert_eq!(four, 4 * one, "4 replicas' replays {four} vs one {one}");
}

#[test]
fn the_cli_prints_the_ranked_grid() {
    let out = temp("cli");
    let o = gridarena(&[
        "train",
        "--scenario",
        "tests/data/chase.ron",
        "--device",
        "cpu",
        "--steps",
        "4096",
        "--set",
        "arenas=16",
        "--set",
        "rollout=8",
        "--set",
        "hidden=16",
        "--set",
        "layers=1",
        "--seeds",
        "2",
        "--sweep",
        "lr=[1e-3,3e-3]",
        "--out",
        out.to_str().unwrap(),
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
    assert!(
        text.contains("lr=0.001") && text.contains("lr=0.003"),
        "{text}"
    );
    assert!(text.contains("final return"), "{text}");
    assert!(
        text.contains("env steps per replica")
            && text.contains("4 replicas: 16384 env steps in all"),
        "{text}"
    );
    // `gridarena plot` redraws the sweep's plot and prints the ranking again.
    std::fs::remove_file(out.join("sweep.png")).unwrap();
    let o = gridarena(&["plot", out.to_str().unwrap()]);
    let plotted = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.join("sweep.png").is_file(),
        "{plotted}"
    );
    assert!(
        plotted.contains("lr=0.003") && plotted.contains("final return"),
        "{plotted}"
    );
    let _ = std::fs::remove_dir_all(out);
}

/// The GPU backend runs an IQL sweep's per-replica pieces (host loss per replica, backward from
/// it, per-network steps and Polyak factors) as the CPU does, within float rounding.
#[test]
fn an_iql_sweep_on_the_gpu_matches_the_cpu() {
    let cfg = RunConfig {
        seeds: 2,
        ..with_sweep(small_iql(), &["lr=[3e-3, 1e-3]", "target_tau=[0.05, 0.5]"])
    };
    assert_gpu_matches_cpu(&cfg, "iql");
}

#[test]
fn pqn_replicas_take_their_own_value_loss_parameters_bit_for_bit() {
    // MSE and Huber with two thresholds (one output per action), then HL-Gauss with two
    // supports and smoothings (11 logits per action): every replica equals its single run.
    for (base, axes) in [
        (small(), ["loss=[mse, huber]", "huber_delta=[1.0, 0.1]"]),
        (
            {
                let mut cfg = small();
                cfg.learn.loss = gridarena::train::config::ValueLoss::HlGauss;
                cfg.learn.bins = 11;
                cfg
            },
            ["v_max=[10.0, 2.0]", "sigma=[0.0, 0.5]"],
        ),
    ] {
        let sweep = with_sweep(base.clone(), &axes);
        let replicas = sweep.replicas().unwrap();
        assert_eq!(replicas.len(), 4);
        let multi = temp(&format!("loss-{}", axes[0].split('=').next().unwrap()));
        train(&sweep, &multi, &TrainOptions::default()).unwrap();
        check_replicas_equal_single_runs(&multi, (&base, &replicas), &[0, 1, 2, 3], false);
        let _ = std::fs::remove_dir_all(multi);
    }
    // HL-Gauss beside MSE would change the head: refused, naming the widths.
    let mixed = with_sweep(small(), &["loss=[mse, hl_gauss]"]);
    let err = mixed.replicas().unwrap_err().to_string();
    assert!(
        err.contains("outputs per action") && err.contains("loss=hl_gauss"),
        "{err}"
    );
    // IQL replicas take their own value loss too (tests/sweep_iql_rate.rs); `bins` changes the
    // head for either.
    let iql = with_sweep(small_iql(), &["huber_delta=[1.0, 0.5]"]);
    assert_eq!(iql.replicas().unwrap().len(), 2);
    let bins = with_sweep(small_iql(), &["bins=[11, 21]"]);
    let err = bins.replicas().unwrap_err().to_string();
    assert!(err.contains("`bins`") && err.contains("shapes"), "{err}");
}
