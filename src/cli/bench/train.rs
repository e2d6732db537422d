//! `gridarena bench train`: training throughput, environment steps per second including
//! learning, and the split between simulation and learning.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use gridarena::train::{load_scenario, new_learner};

use crate::cli::common::{load_config, with_pool};

#[derive(Args, Debug)]
pub(crate) struct BenchTrainArgs {
    /// Run configuration (defaults when omitted).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Updates timed (after one warm-up update).
    #[arg(long, default_value_t = 10)]
    updates: u64,
    /// Set any config field: key=value, repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// Times `updates` learner updates after one warm-up update and prints the rate.
pub(crate) fn run(args: BenchTrainArgs) -> Result<()> {
    let mut cfg = load_config(args.config.as_deref(), &args.set)?;
    anyhow::ensure!(args.updates >= 1, "--updates must be at least 1");
    cfg.total_steps = cfg.steps_per_update() * (args.updates + 1);
    cfg.validate()?;
    let loaded = load_scenario(&cfg)?;
    let device = gridarena::critic::choose_device(cfg.device)?;
    println!("device: {device}");
    let (sps, sim, learn) = with_pool(None, || -> Result<(f64, f64, f64)> {
        let mut learner = new_learner(&cfg, &loaded, &device)?;
        learner.update()?;
        learner.take_timing();
        let start = std::time::Instant::now();
        for _ in 0..args.updates {
            learner.update()?;
        }
        let secs = start.elapsed().as_secs_f64();
        let (sim, learn) = learner.take_timing();
        Ok((
            (cfg.steps_per_update() * args.updates) as f64 / secs,
            sim,
            learn,
        ))
    })??;
    println!(
        "{:?}: {} arenas x {} steps, {} epochs x {} minibatches, {}x{} MLP{}",
        cfg.algo,
        cfg.arenas,
        cfg.rollout,
        cfg.passes().0,
        cfg.passes().1,
        cfg.network.layers,
        cfg.network.hidden,
        if cfg.network.shared {
            " shared"
        } else {
            " per learner"
        }
    );
    println!("env steps/s including learning: {sps:.0}");
    println!(
        "time in simulation {:.1}%, in learning {:.1}%",
        100.0 * sim / (sim + learn),
        100.0 * learn / (sim + learn)
    );
    Ok(())
}
