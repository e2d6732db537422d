//! Train PQN from code and read its metrics back.
//!
//! A run is a [`RunConfig`] (the same typed config `gridarena train --config` reads) handed to
//! [`gridarena::train::train`], which writes a run directory: `config.ron`, `scenario.ron`,
//! `metrics.jsonl` (one JSON object per update), checkpoints and `learning_curve.png`. This
//! example trains a tiny run (one learning pursuer chasing a random walker on a 5x5 map, a few
//! thousand steps on the CPU) into a temporary directory, prints its learning curve from
//! `metrics.jsonl` and removes the directory.
//!
//! Run: `cargo run --example train_pqn`

use std::path::PathBuf;

use gridarena::critic::Device;
use gridarena::train::config::{Algo, LearnConfig, NetworkConfig, PqnConfig, RunConfig};
use gridarena::train::{TrainOptions, train};

/// The scenario is data: a RON asset like those in `assets/scenarios/` (see docs/scenarios.md).
const CHASE: &str = r#"
Scenario(
    name: "chase",
    substrate: Pursuit((surround: false, n_catch: 1, tag_reward: 0.0, catch_reward: 1.0,
                        urgency_reward: -0.05, shared_reward: false)),
    map: ["*****", "*****", "*****", "*****", "*****"],
    roles: [(kind: pursuer, count: 1), (kind: evader, count: 1)],
    max_steps: 40,
    observation: (radius: 2),
)
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("gridarena-train-pqn-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = train_and_report(&dir);
    std::fs::remove_dir_all(&dir)?;
    result
}

fn train_and_report(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let scenario = dir.join("chase.ron");
    std::fs::write(&scenario, CHASE)?;
    // Every field not named keeps its documented default (see `gridarena train --help` and
    // assets/runs/*.ron for whole configs).
    let cfg = RunConfig {
        name: "chase_pqn".into(),
        scenario: Some(scenario),
        algo: Algo::Pqn,
        device: Device::Cpu,
        total_steps: 16 * 8 * 300,
        arenas: 16,
        rollout: 8,
        checkpoint_every: 100,
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
        ..RunConfig::default()
    };
    let run: PathBuf = dir.join("run");
    println!(
        "training {:?}: {} env steps = {} updates of {} arenas x {} steps, into {}",
        cfg.algo,
        cfg.total_steps,
        cfg.updates(),
        cfg.arenas,
        cfg.rollout,
        run.display()
    );
    let summary = train(&cfg, &run, &TrainOptions::default())?;
    println!(
        "finished: {} updates, {} env steps in {:.1} s on {}",
        summary.updates, summary.env_steps, summary.seconds, summary.device
    );

    // metrics.jsonl: one object per update (update, env_steps, loss, epsilon, return_mean, ...).
    let text = std::fs::read_to_string(run.join("metrics.jsonl"))?;
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    println!("\n{} metrics lines; every 25th update:", lines.len());
    println!("update  env_steps  epsilon    loss  episodes  return_mean");
    let field = |l: &serde_json::Value, k: &str| l.get(k).and_then(serde_json::Value::as_f64);
    for l in lines
        .iter()
        .filter(|l| field(l, "update").is_some_and(|u| (u as u64).is_multiple_of(25)))
    {
        let show =
            |v: Option<f64>, digits: usize| v.map_or("-".into(), |x| format!("{x:.digits$}"));
        println!(
            "{:>6}  {:>9}  {:>7}  {:>6}  {:>8}  {:>11}",
            show(field(l, "update"), 0),
            show(field(l, "env_steps"), 0),
            show(field(l, "epsilon"), 3),
            show(field(l, "loss"), 4),
            show(field(l, "episodes"), 0),
            show(field(l, "return_mean"), 3),
        );
    }
    let mean_return = |ls: &[serde_json::Value]| {
        let r: Vec<f64> = ls.iter().filter_map(|l| field(l, "return_mean")).collect();
        r.iter().sum::<f64>() / r.len().max(1) as f64
    };
    let k = 50.min(lines.len());
    println!(
        "mean episode return: first {k} updates {:.3}, last {k} updates {:.3}",
        mean_return(&lines[..k]),
        mean_return(&lines[lines.len() - k..])
    );
    let mut files: Vec<String> = std::fs::read_dir(&run)?
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .collect();
    files.sort();
    println!("\nthe run directory holds: {}", files.join(", "));
    Ok(())
}
