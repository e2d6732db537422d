//! `gridarena psro`: PSRO on a matrix game's stage game, one line per iteration (population
//! sizes, NashConv of the meta-strategies in the full game) and the final meta-strategies.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use gridarena::analysis::meta_solver::{MetaSolver, PrdParams, RegretMatchingParams};
use gridarena::analysis::psro::{NormalFormGame, PsroOptions, PsroReport, psro};
use gridarena::scenario::Scenario;

#[derive(Args, Debug)]
pub(crate) struct PsroArgs {
    /// Scenario file (RON) with a MatrixGame substrate.
    scenario: PathBuf,
    /// Most iterations (meta-game solves).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    iterations: u32,
    /// Meta-solver: projected replicator dynamics or regret matching (OpenSpiel's defaults:
    /// 100000 steps, step size 1e-3, floor 1e-6).
    #[arg(long, value_enum, default_value_t = MetaSolverArg::Prd)]
    meta_solver: MetaSolverArg,
    /// Print one JSON object (the whole report) instead of text.
    #[arg(long)]
    json: bool,
    /// Also write the JSON report to this file (atomically).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The `--meta-solver` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum MetaSolverArg {
    /// Projected replicator dynamics.
    Prd,
    /// Regret matching.
    RegretMatching,
}

pub(crate) fn run(args: PsroArgs) -> Result<()> {
    let loaded = Scenario::load(&args.scenario)?;
    let game = NormalFormGame::from_scenario(&loaded.scenario)
        .with_context(|| format!("PSRO on {}", args.scenario.display()))?;
    let meta_solver = match args.meta_solver {
        MetaSolverArg::Prd => MetaSolver::Prd(PrdParams::default()),
        MetaSolverArg::RegretMatching => {
            MetaSolver::RegretMatching(RegretMatchingParams::default())
        }
    };
    let options = PsroOptions {
        iterations: args.iterations as usize,
        meta_solver,
        initial: Vec::new(),
    };
    let report = psro(&game, &options)?;
    let value = serde_json::json!({
        "scenario": loaded.scenario.name,
        "action_names": game.action_names,
        "report": report,
    });
    if let Some(out) = &args.out {
        gridarena::analysis::psro::write_json(out, &value)?;
    }
    if args.json {
        println!("{value}");
        return Ok(());
    }
    print_text(&game, &report);
    Ok(())
}

fn print_text(game: &NormalFormGame, report: &PsroReport) {
    for it in &report.iterations {
        let sizes: Vec<String> = it.populations.iter().map(|p| p.len().to_string()).collect();
        println!(
            "iteration {:>3}  population sizes {}  NashConv {:.6}",
            it.iteration,
            sizes.join(" "),
            it.nashconv
        );
    }
    let Some(last) = report.iterations.last() else {
        return;
    };
    println!(
        "{} after {} iterations; final meta-strategies:",
        if report.converged {
            "converged (no player added a strategy)"
        } else {
            "stopped at the iteration limit"
        },
        report.iterations.len()
    );
    for (player, (pop, sigma)) in last
        .populations
        .iter()
        .zip(&last.meta_strategies)
        .enumerate()
    {
        let parts: Vec<String> = pop
            .iter()
            .zip(sigma)
            .map(|(&a, w)| format!("{} {:.4}", game.action_names[a], w))
            .collect();
        println!("  player {player}: {}", parts.join(", "));
    }
}
