//! Hyperparameter sweeps in one run: replica k of a sweep is the single run with its grid
//! point's values and seed, bit for bit (parameters, returns, greedy evaluation), for PQN and
//! IQL (whose target networks, replays and rate limiters are per replica too); shape-changing
//! keys are refused by name; the ranking, `sweep.csv` and `sweep.png` are written; the memory
//! preflight counts every replica; a sweep resumes exactly.

use std::path::{Path, PathBuf};
use std::process::Command;

use gridarena::critic::{Chosen, Device, choose_device};
use gridarena::train::config::{Algo, RunConfig};
use gridarena::train::eval::{evaluate, evaluate_replica};
use gridarena::train::plan::{self, PlanDevice};
use gridarena::train::run_dir::RunDir;
use gridarena::train::sweep::{Replica, parse_axis};
use gridarena::train::tensors::Tensor;
use gridarena::train::{TrainOptions, load_scenario, train};

#[path = "common/runs.rs"]
mod runs;
use runs::{deterministic_metrics, params};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn small() -> RunConfig {
    RunConfig {
        scenario: Some(PathBuf::from("tests/data/chase.ron")),
        device: Device::Cpu,
        arenas: 16,
        rollout: 8,
        epochs: 2,
        minibatches: 4,
        hidden: 32,
        layers: 1,
        lr: 3e-3,
        seed: 11,
        total_steps: 16 * 8 * 6,
        checkpoint_every: 2,
        ..RunConfig::default()
    }
}

fn with_sweep(mut cfg: RunConfig, axes: &[&str]) -> RunConfig {
    for a in axes {
        let (k, v) = parse_axis(a).unwrap();
        cfg.sweep.insert(k, v);
    }
    cfg
}

/// Replica `r`'s single run as a user would ask for it: `--seed` and one `--set` per key.
fn single_run_of(base: &RunConfig, r: &Replica) -> RunConfig {
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
fn check_replicas_equal_single_runs(
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
    let same = |a: &[f32], b: &[f32]| {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    };
    for &k in ks {
        let r = &replicas[k];
        let label = r.point_label();
        let single = temp(&format!(
            "single-{}-{k}",
            multi.file_name().unwrap().to_string_lossy()
        ));
        train(&single_run_of(base, r), &single, &TrainOptions::default()).unwrap();
        let block = k * per_replica..(k + 1) * per_replica;
        assert!(
            same(&multi_params[block.clone()], &params(&single)),
            "replica {k} ({label}): parameters differ from the single run"
        );
        if targets {
            assert!(
                same(&multi_target[block], &target_params(&single)),
                "replica {k} ({label}): target parameters differ from the single run"
            );
        }
        let single_metrics = deterministic_metrics(&single);
        assert_eq!(multi_metrics.len(), single_metrics.len());
        for (m, s) in multi_metrics.iter().zip(&single_metrics) {
            assert_eq!(
                m["seeds_return_per_seed"][k], s["return_mean"],
                "replica {k} ({label}), update {}",
                m["update"]
            );
        }
        // `eval --replica k` evaluates exactly the single run's policy.
        let a = evaluate_replica(multi, 20, &cpu(), k).unwrap();
        let b = evaluate(&single, 20, &cpu()).unwrap();
        assert_eq!(a.policy.per_agent, b.policy.per_agent, "replica {k}: eval");
        let _ = std::fs::remove_dir_all(single);
    }
}

fn cpu() -> Chosen {
    choose_device(Device::Cpu).unwrap()
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
    let straight = temp("resume-straight");
    train(&cfg, &straight, &TrainOptions::default()).unwrap();
    let split = temp("resume-split");
    let first = TrainOptions {
        until_update: Some(3),
        ..TrainOptions::default()
    };
    train(&cfg, &split, &first).unwrap();
    let resume = TrainOptions {
        resume: true,
        ..TrainOptions::default()
    };
    train(&cfg, &split, &resume).unwrap();
    assert_eq!(params(&split), params(&straight));
    assert_eq!(
        deterministic_metrics(&split),
        deterministic_metrics(&straight)
    );
    // A different grid is not this run.
    let other = with_sweep(small(), &["lr=[3e-3, 2e-3]", "gamma=[0.9, 0.99]"]);
    let err = train(&other, &split, &resume).unwrap_err().to_string();
    assert!(err.contains("sweep"), "{err}");
    let _ = std::fs::remove_dir_all(straight);
    let _ = std::fs::remove_dir_all(split);
}

#[test]
fn the_memory_preflight_counts_every_replica() {
    let total = |cfg: &RunConfig| {
        let loaded = load_scenario(cfg).unwrap();
        plan::plan_for(cfg, &loaded, PlanDevice::Chosen(&cpu()), u64::MAX, None).total_bytes
    };
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
    // PR2-IQL sweeps are not available yet: refused clearly, not run as something else.
    let o = gridarena(&[
        "train",
        "--algo",
        "pr2-iql",
        "--device",
        "cpu",
        "--sweep",
        "lr=[1e-3,2e-3]",
        "--out",
        out_s,
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("algo pqn or iql only"));
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
    RunConfig {
        algo: Algo::Iql,
        arenas: 4,
        rollout: 8,
        batch_size: 16,
        cer: 2,
        replay_capacity: 200,
        min_replay: 32,
        lr_decay: false,
        total_steps: 4 * 8 * 5,
        checkpoint_every: 1,
        ..small()
    }
}

/// The newest checkpoint's target parameters.
fn target_params(run: &Path) -> Vec<f32> {
    let c = RunDir::open(run).unwrap().load_latest().unwrap();
    let found = c.extra.iter().find(|(name, _)| name == "target");
    match found {
        Some((_, Tensor::F32(t))) => t.clone(),
        _ => panic!("{}: no target tensor", run.display()),
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
    let straight = temp("iql-resume-straight");
    train(&cfg, &straight, &TrainOptions::default()).unwrap();
    let split = temp("iql-resume-split");
    let first = TrainOptions {
        until_update: Some(3),
        ..TrainOptions::default()
    };
    train(&cfg, &split, &first).unwrap();
    let resume = TrainOptions {
        resume: true,
        ..TrainOptions::default()
    };
    train(&cfg, &split, &resume).unwrap();
    assert_eq!(params(&split), params(&straight));
    assert_eq!(target_params(&split), target_params(&straight));
    assert_eq!(
        deterministic_metrics(&split),
        deterministic_metrics(&straight)
    );
    let _ = std::fs::remove_dir_all(straight);
    let _ = std::fs::remove_dir_all(split);
}

#[test]
fn iql_sweeps_take_rate_limiter_keys_pqn_refuses_them_and_threads_and_pr2_refuse_seeds() {
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
    let threaded = RunConfig {
        threaded: true,
        seeds: 2,
        ..small_iql()
    };
    let err = threaded.validate().unwrap_err().to_string();
    assert!(
        err.contains("threaded") && err.contains("2 replicas"),
        "{err}"
    );
    let pr2 = RunConfig {
        algo: Algo::Pr2Iql,
        seeds: 2,
        ..small_iql()
    };
    let err = pr2.validate().unwrap_err().to_string();
    assert!(err.contains("seeds") && err.contains("pqn or iql"), "{err}");
    // IQL with seeds alone is accepted now.
    let seeds = RunConfig {
        seeds: 3,
        ..small_iql()
    };
    assert!(seeds.validate().is_ok());
}

#[test]
fn the_iql_memory_preflight_counts_every_replica_replay() {
    let total = |cfg: &RunConfig| {
        let loaded = load_scenario(cfg).unwrap();
        plan::plan_for(cfg, &loaded, PlanDevice::Chosen(&cpu()), u64::MAX, None).total_bytes
    };
    let small_replay = small_iql();
    let big_replay = RunConfig {
        replay_capacity: 100_000,
        ..small_iql()
    };
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
    if let Err(e) = choose_device(Device::Gpu) {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set but no GPU adapter is usable: {e}");
        }
        eprintln!("\n!!! SKIPPING GPU TEST: no usable GPU adapter ({e}).\n");
        return;
    }
    let cfg = RunConfig {
        seeds: 2,
        ..with_sweep(small_iql(), &["lr=[3e-3, 1e-3]", "target_tau=[0.05, 0.5]"])
    };
    let mut runs = Vec::new();
    for device in [Device::Cpu, Device::Gpu] {
        let run = temp(&format!("iql-{device:?}"));
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
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4)
    };
    assert!(close(&runs[0].0, &runs[1].0), "parameters differ");
    assert!(close(&runs[0].1, &runs[1].1), "target parameters differ");
    assert_ne!(
        runs[0].0, runs[0].1,
        "the targets trail the online networks"
    );
}

#[test]
fn pqn_replicas_take_their_own_value_loss_parameters_bit_for_bit() {
    // MSE and Huber with two thresholds (one output per action), then HL-Gauss with two
    // supports and smoothings (11 logits per action): every replica equals its single run.
    for (base, axes) in [
        (small(), ["loss=[mse, huber]", "huber_delta=[1.0, 0.1]"]),
        (
            RunConfig {
                loss: gridarena::train::config::ValueLoss::HlGauss,
                bins: 11,
                ..small()
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
