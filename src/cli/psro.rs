//! `gridarena psro`: PSRO on a matrix game's stage game, or on a small gridworld with exact
//! best responses (any other scenario the exact analysis models: [`gridarena::analysis::psro_grid`]),
//! or on any two-slot scenario with learned best responses (`--best-response learned`:
//! [`gridarena::analysis::psro_learned`]); one line per iteration (population sizes, NashConv of
//! the meta-strategies in the full game) and the final meta-strategies.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use gridarena::analysis::meta_solver::{MetaSolver, PrdParams, RegretMatchingParams};
use gridarena::analysis::psro::{NormalFormGame, PsroOptions, PsroReport, psro};
use gridarena::analysis::psro_grid::Initial;
use gridarena::scenario::{Scenario, Substrate};

#[derive(Args, Debug)]
pub(crate) struct PsroArgs {
    /// Scenario file (RON): a MatrixGame (PSRO on its stage game), or a small gridworld the
    /// exact analysis models (PSRO with exact best responses over its states).
    scenario: PathBuf,
    /// Most iterations (meta-game solves).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    iterations: u32,
    /// Meta-solver: projected replicator dynamics or regret matching (OpenSpiel's defaults:
    /// 100000 steps, step size 1e-3, floor 1e-6).
    #[arg(long, value_enum, default_value_t = MetaSolverArg::Prd)]
    meta_solver: MetaSolverArg,
    /// Best responses: `exact` (matrix games' stage game, gridworlds the exact analysis models),
    /// `learned` (training runs; any two-slot scenario), or `auto` (exact where it is supported
    /// and fits, learned otherwise).
    #[arg(long, value_enum, default_value_t = BestResponse::Exact)]
    best_response: BestResponse,
    /// Learned best responses: the run configuration (RON) each best response trains with
    /// (a value learner: pqn, iql or online-dqn).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Learned best responses: evaluation episodes per pair of members.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    episodes: u64,
    /// Learned best responses: every slot's first member, `random` or `scripted:NAME`.
    #[arg(long, default_value = "random")]
    first_member: String,
    /// Print one JSON object (the whole report) instead of text.
    #[arg(long)]
    json: bool,
    /// Also write the JSON report to this file (atomically); with learned best responses, the
    /// directory of the best responses' runs and the report (`psro.json`), which the same
    /// command continues from.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Every player's first strategy: an action index (that action in every state) or
    /// `uniform` (gridworlds only). Default: action 0.
    #[arg(long, value_parser = parse_initial)]
    initial: Option<Initial>,
    /// Gridworlds: the discount of the values (matrix games are one-shot).
    #[arg(long, default_value_t = 0.99)]
    gamma: f64,
    /// Gridworlds: memory budget of the exact analysis, e.g. 1GiB (default: 3/4 of the
    /// available memory).
    #[arg(long, value_parser = gridarena::train::plan::parse_bytes)]
    memory_budget: Option<u64>,
}

fn parse_initial(text: &str) -> Result<Initial, String> {
    if text == "uniform" {
        return Ok(Initial::Uniform);
    }
    text.parse::<usize>()
        .map(Initial::Action)
        .map_err(|_| format!("`{text}`: expected an action index or `uniform`"))
}

impl PsroArgs {
    /// The gridworld-only settings.
    fn grid(&self) -> crate::cli::psro_grid::GridArgs {
        crate::cli::psro_grid::GridArgs {
            iterations: self.iterations as usize,
            initial: self.initial.unwrap_or(Initial::Action(0)),
            gamma: self.gamma,
            memory_budget: self.memory_budget,
            json: self.json,
            out: self.out.clone(),
        }
    }

    /// The learned-best-response settings.
    fn learned(&self) -> crate::cli::psro_learned::LearnedArgs {
        crate::cli::psro_learned::LearnedArgs {
            iterations: self.iterations as usize,
            config: self.config.clone(),
            first_member: self.first_member.clone(),
            episodes: self.episodes as usize,
            json: self.json,
            out: self.out.clone(),
        }
    }
}

/// The `--best-response` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BestResponse {
    /// Exact best responses.
    Exact,
    /// Learned best responses (training runs).
    Learned,
    /// Exact where supported and within the memory budget, learned otherwise.
    Auto,
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
    let meta_solver = match args.meta_solver {
        MetaSolverArg::Prd => MetaSolver::Prd(PrdParams::default()),
        MetaSolverArg::RegretMatching => {
            MetaSolver::RegretMatching(RegretMatchingParams::default())
        }
    };
    let matrix = matches!(loaded.scenario.substrate, Substrate::MatrixGame(_));
    let learned = match args.best_response {
        BestResponse::Exact => false,
        BestResponse::Learned => true,
        BestResponse::Auto if matrix => false,
        BestResponse::Auto => match crate::cli::psro_grid::exact_refusal(&loaded, &args.grid()) {
            Some(why) => {
                if !args.json {
                    println!("exact best responses: {why}; learning them instead");
                }
                true
            }
            None => false,
        },
    };
    if learned {
        return crate::cli::psro_learned::run(
            &args.scenario,
            &loaded,
            meta_solver,
            &args.learned(),
        );
    }
    if !matrix {
        return crate::cli::psro_grid::run(&args.scenario, &loaded, meta_solver, &args.grid());
    }
    let game = NormalFormGame::from_scenario(&loaded.scenario)
        .with_context(|| format!("PSRO on {}", args.scenario.display()))?;
    let initial = match args.initial {
        None => Vec::new(),
        Some(Initial::Action(k)) => vec![k; game.players],
        Some(Initial::Uniform) => anyhow::bail!(
            "PSRO on a matrix game starts from one action per player: --initial takes an action \
             index there (`uniform` is for gridworlds)"
        ),
    };
    let options = PsroOptions {
        iterations: args.iterations as usize,
        meta_solver,
        initial,
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
