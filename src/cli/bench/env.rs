//! `gridarena bench env`: environment steps per second under a uniformly random policy.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use gridarena::bench::{EnvBenchConfig, Observations, bench_env};
use gridarena::error::human_bytes;

use crate::cli::common::{describe, load_scenario, with_pool};

#[derive(Args, Debug)]
pub(crate) struct BenchEnvArgs {
    /// Scenario file; the embedded default Pursuit scenario when omitted.
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Arenas stepped together.
    #[arg(long, default_value_t = 1024)]
    arenas: usize,
    /// Timed steps per repeat.
    #[arg(long, default_value_t = 1000)]
    steps: usize,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Repeats; the median is reported.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// Untimed warm-up steps before each repeat.
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// `filled`: a ceiling, not a throughput figure. Each step fills the observations with one
    /// byte instead of computing them (the same bytes written), which times the rest of the
    /// step.
    #[arg(long, value_enum, default_value_t = Observations::Computed)]
    observations: Observations,
}

/// Times the batch and prints the rates per repeat, their medians and the memory used.
pub(crate) fn run(args: BenchEnvArgs) -> Result<()> {
    let (loaded, name) = load_scenario(args.scenario.as_deref())?;
    anyhow::ensure!(args.steps >= 1, "--steps must be at least 1");
    let cfg = EnvBenchConfig {
        arenas: args.arenas,
        steps: args.steps,
        warmup: args.warmup,
        repeat: args.repeat.max(1),
        seed: args.seed,
        observations: args.observations,
    };
    println!("scenario: {name}\n  {}", describe(&loaded));
    if args.observations == Observations::Filled {
        println!(
            "observations: filled with one byte, not computed (a ceiling: the rest of the step)"
        );
    }
    let result = with_pool(args.threads, || bench_env(&loaded, &cfg))?
        .with_context(|| format!("benchmarking {name}"))?;
    let rates: Vec<String> = result
        .env_steps_per_s
        .iter()
        .map(|r| format!("{r:.0}"))
        .collect();
    println!(
        "arenas {}  steps {}  threads {}  repeats {}",
        cfg.arenas, cfg.steps, result.threads, cfg.repeat
    );
    println!("env-steps/s per repeat: [{}]", rates.join(", "));
    println!("env-steps/s (median):   {:.0}", result.median_env_steps());
    println!(
        "agent-steps/s (median): {:.0}  ({} learning agents per arena)",
        result.median_agent_steps(),
        result.learners
    );
    println!(
        "resident memory: {} (peak {})",
        result.rss_bytes.map_or("n/a".into(), human_bytes),
        result.peak_rss_bytes.map_or("n/a".into(), human_bytes)
    );
    Ok(())
}
