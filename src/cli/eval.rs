//! `gridarena eval`: a run's newest checkpoint, greedy policy against a uniformly random one
//! and the substrate's scripted baselines (returns, confidence intervals, social metrics); with `--nashconv`, its exploitability
//! (see [`super::nashconv`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use gridarena::train::eval::{EvalReport, evaluate_replica};

use super::common::with_pool;
use super::nashconv::{self, NashConvArgs};
use super::population::{self, PopulationArgs};

#[derive(Args, Debug)]
pub(crate) struct EvalArgs {
    /// Run directory (not with --crossplay, --scenario-set or --schelling).
    #[arg(long, required_unless_present_any = ["crossplay", "scenario_set", "schelling"])]
    run: Option<PathBuf>,
    /// Episodes per policy.
    #[arg(long, default_value_t = 100)]
    episodes: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Critic device: auto, cpu, gpu or gpu:K (adapter K of `gridarena devices`).
    #[arg(long, default_value = "auto")]
    device: gridarena::critic::Device,
    /// Evaluate replica K of a multi-seed or sweep run (default 0; `gridarena train` prints
    /// the grid, `sweep.csv` lists each point's replicas).
    #[arg(long, value_name = "K", conflicts_with = "best")]
    replica: Option<usize>,
    /// Evaluate the sweep's best replica (the best grid point's best seed by final return).
    #[arg(long)]
    best: bool,
    // The `--nashconv` flags: measure exploitability instead.
    #[command(flatten)]
    nashconv: NashConvArgs,
    // Populations: cross-play, scenario sets, Schelling diagrams.
    #[command(flatten)]
    population: PopulationArgs,
}

/// Evaluates the run and prints a table per policy (or one JSON object with `--json`); the exit
/// code of an exact NashConv a signal stopped is [`super::signals::EXIT_STOPPED`].
pub(crate) fn run(args: EvalArgs) -> Result<ExitCode> {
    if args.population.asked() {
        with_pool(None, || {
            population::run(&args.population, args.episodes, args.json, args.device)
        })??;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(run) = args.run.clone() else {
        anyhow::bail!("--run DIR is needed (or --crossplay, --scenario-set, --schelling)");
    };
    let run_dir = run;
    if let Some(method) = args.nashconv.nashconv {
        return with_pool(None, || {
            nashconv::run(
                &args.nashconv,
                method,
                &run_dir,
                args.episodes,
                args.json,
                args.device,
            )
        })?;
    }
    let device = gridarena::critic::choose_device(args.device)?;
    let replica = if args.best {
        let table = gridarena::train::sweep_report::rank_run(&run_dir)
            .map_err(|e| anyhow::anyhow!("--best: {e}"))?;
        let k = table.best_replica().ok_or_else(|| {
            anyhow::anyhow!(
                "--best: no replica of {} finished an episode in the last updates",
                run_dir.display()
            )
        })?;
        println!(
            "best replica: {k} ({})",
            table.points[0]
                .values
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        k
    } else {
        args.replica.unwrap_or(0)
    };
    let report = with_pool(None, || {
        evaluate_replica(&run_dir, args.episodes, &device, replica).map_err(anyhow::Error::from)
    })??;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    print_report(&report);
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &EvalReport) {
    println!(
        "{} episodes per policy, checkpoint of update {}",
        report.episodes, report.update
    );
    let heuristics = report
        .heuristics
        .iter()
        .map(|h| (format!("heuristic: {}", h.name), &h.result));
    let rows = [
        ("greedy policy".to_string(), &report.policy),
        ("random policy".to_string(), &report.random),
    ]
    .into_iter()
    .chain(heuristics);
    for (name, r) in rows {
        let per: Vec<String> = r
            .per_agent
            .iter()
            .zip(&r.per_agent_ci95)
            .map(|(m, c)| format!("{m:.2}±{c:.2}"))
            .collect();
        println!(
            "{name}: mean return {:.3} ± {:.3} (95% CI); per agent [{}]",
            r.mean_return,
            r.ci95,
            per.join(", ")
        );
        let counters: Vec<String> = r
            .counters
            .iter()
            .map(|(k, v)| format!("{k} {v:.2}"))
            .collect();
        let sustainability = r.sustainability.map_or_else(
            || "none (never rewarded)".to_string(),
            |s| format!("step {s:.1}"),
        );
        let own = r
            .own_coin_proportion
            .map_or_else(String::new, |p| format!(", own-colour coins {p:.3}"));
        println!(
            "  collective {:.2}, equality {:.3}, sustainability {sustainability}{own}; per episode: {}",
            r.collective_return,
            r.equality,
            counters.join(", ")
        );
    }
    if let Some(t) = &report.states {
        let what = match t.stochastic {
            true => "probability of each action",
            false => "greedy choice (a value-based learner)",
        };
        println!("policy by state (the previous joint action), {what}:");
        println!("  {:<24} {}", "state", player_headers(t));
        for (s, state) in t.states.iter().enumerate() {
            let cells: Vec<String> = t
                .probs
                .iter()
                .map(|p| {
                    p[s].iter()
                        .map(|v| format!("{v:.2}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            println!("  {state:<24} {}", cells.join(" | "));
        }
    }
}

/// The column headers: `player K (a0 a1 ...)` for each player.
fn player_headers(t: &gridarena::train::state_policy::StatePolicy) -> String {
    (0..t.probs.len())
        .map(|p| format!("player {p} ({})", t.actions.join(" ")))
        .collect::<Vec<_>>()
        .join(" | ")
}
