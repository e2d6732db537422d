//! `gridarena psro` on a gridworld: builds the exact model, runs PSRO with exact best
//! responses ([`gridarena::analysis::psro_grid`]) and prints a line per iteration as it ends.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use gridarena::analysis::TransitionModel;
use gridarena::analysis::exact::Tolerance;
use gridarena::analysis::meta_solver::MetaSolver;
use gridarena::analysis::psro_grid::{
    GridPsroError, GridPsroOptions, GridPsroReport, Initial, grid_psro,
};
use gridarena::scenario::LoadedScenario;

/// The settings `psro` passes on for a gridworld.
pub(crate) struct GridArgs {
    pub(crate) iterations: usize,
    pub(crate) initial: Initial,
    pub(crate) gamma: f64,
    pub(crate) memory_budget: Option<u64>,
    pub(crate) json: bool,
    pub(crate) out: Option<PathBuf>,
}

/// Why exact best responses cannot run on `loaded` (no exact model, or over the memory
/// budget), `None` when they can.
pub(crate) fn exact_refusal(loaded: &LoadedScenario, args: &GridArgs) -> Option<GridPsroError> {
    let model = match TransitionModel::new(loaded, None) {
        Ok(m) => m,
        Err(e) => return Some(GridPsroError::from(e)),
    };
    let options = options(args, MetaSolver::Prd(Default::default()));
    let p = gridarena::analysis::psro_grid::psro_plan(&model, &options);
    p.plan.refusal().map(|detail| GridPsroError::DoesNotFit {
        states: model.states(),
        total_bytes: p.plan.total_bytes,
        budget_bytes: p.plan.budget_bytes,
        detail,
    })
}

fn options(args: &GridArgs, meta_solver: MetaSolver) -> GridPsroOptions {
    GridPsroOptions {
        iterations: args.iterations,
        meta_solver,
        initial: args.initial,
        gamma: args.gamma,
        tolerance: Tolerance::default(),
        budget: args
            .memory_budget
            .unwrap_or_else(gridarena::train::plan::default_budget),
    }
}

pub(crate) fn run(
    path: &Path,
    loaded: &LoadedScenario,
    meta_solver: MetaSolver,
    args: &GridArgs,
) -> Result<()> {
    let context = || format!("PSRO on {}", path.display());
    let model = TransitionModel::new(loaded, None)
        .map_err(GridPsroError::from)
        .with_context(context)?;
    let options = options(args, meta_solver);
    let text = !args.json;
    if text {
        println!(
            "PSRO with exact best responses on {} ({} states, {} learners)",
            loaded.scenario.name,
            model.states(),
            model.learners()
        );
    }
    let mut line = |it: &gridarena::analysis::psro_grid::GridPsroIteration| {
        if !text {
            return;
        }
        let sizes: Vec<String> = it.population_sizes.iter().map(usize::to_string).collect();
        println!(
            "iteration {:>3}  population sizes {}  NashConv {:.6}  ({} profiles evaluated, {:.1} s)",
            it.iteration,
            sizes.join(" "),
            it.nashconv,
            it.profiles_evaluated,
            it.seconds
        );
        let _ = std::io::stdout().flush();
    };
    let progress = indicatif::ProgressBar::hidden();
    let report = grid_psro(&model, &options, &progress, &mut line).with_context(context)?;
    let value = serde_json::json!({
        "scenario": loaded.scenario.name,
        "kind": "gridworld",
        "report": report,
    });
    if let Some(out) = &args.out {
        gridarena::analysis::psro::write_json(out, &value)?;
    }
    if args.json {
        println!("{value}");
    } else {
        print_summary(&report);
    }
    Ok(())
}

fn print_summary(report: &GridPsroReport) {
    let Some(last) = report.iterations.last() else {
        return;
    };
    println!(
        "{} after {} iterations; final meta-strategies:",
        if report.converged {
            "converged (no learner added a policy)"
        } else {
            "stopped at the iteration limit"
        },
        report.iterations.len()
    );
    for (learner, (members, sigma)) in report.members.iter().zip(&last.meta_strategies).enumerate()
    {
        let parts: Vec<String> = members
            .iter()
            .zip(sigma)
            .map(|(m, w)| format!("{m} {w:.4}"))
            .collect();
        println!("  learner {learner}: {}", parts.join(", "));
    }
}
