//! `gridarena report`: aggregate statistics over runs and scenarios with stratified bootstrap
//! intervals, performance profiles and the probability of improvement, written as a Markdown
//! report with its figures (see `gridarena::aggregate`).

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;

use gridarena::aggregate::Bootstrap;
use gridarena::aggregate::report::{Table, compute, write};

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Run directories (`LABEL=RUN` names the algorithm; default: the run's algorithm). Each
    /// replica is a run, each run's scenario a task; with --scores, they give the learning
    /// curves only.
    runs: Vec<String>,
    /// Score files (`scores.json`, as `eval --scenario-set --out` writes): runs x tasks per
    /// algorithm. Repeatable.
    #[arg(long, value_name = "FILE")]
    scores: Vec<PathBuf>,
    /// Cross-play files (`crossplay.json`) to draw as heat-maps. Repeatable.
    #[arg(long, value_name = "FILE")]
    crossplay: Vec<PathBuf>,
    /// Schelling files (`schelling.json`) to draw. Repeatable.
    #[arg(long, value_name = "FILE")]
    schelling: Vec<PathBuf>,
    /// With run directories: the score, `return` or counters joined by `+` (`coins_own+coins_other`).
    #[arg(long, default_value = "return")]
    score: String,
    /// With run directories: a replica's score is its mean over this many last updates.
    #[arg(long, default_value_t = 10)]
    last: usize,
    /// Bootstrap samples per interval.
    #[arg(long, default_value_t = 2000)]
    reps: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Directory the report goes to (report.md, report.json, the figures, and report.html with the
    /// figures embedded).
    #[arg(long, default_value = "report")]
    out: PathBuf,
}

/// Computes and writes the report, then prints it.
pub(crate) fn run(args: ReportArgs) -> Result<()> {
    if args.reps == 0 {
        bail!("--reps 0: at least 1 bootstrap sample");
    }
    let mut table = Table::default();
    for f in &args.scores {
        table.add_file(f)?;
    }
    let runs: Vec<(Option<String>, PathBuf)> = args
        .runs
        .iter()
        .map(|r| match r.split_once('=') {
            Some((label, path)) if !label.is_empty() => {
                (Some(label.to_string()), PathBuf::from(path))
            }
            _ => (None, PathBuf::from(r)),
        })
        .collect();
    if !runs.is_empty() {
        // With score files, run directories give the learning curves only (their tasks are
        // scenarios, the files' are whatever they name).
        let mut of_runs = Table::default();
        of_runs.add_runs(&runs, &args.score, args.last)?;
        if args.scores.is_empty() {
            table = of_runs;
        } else {
            table.curves = of_runs.curves;
        }
    }
    let boot = Bootstrap {
        reps: args.reps,
        size: 0.95,
        seed: args.seed,
    };
    let report = compute(&table, boot)?;
    let md = write(&args.out, &table, &report, &args.crossplay, &args.schelling)?;
    println!("{md}");
    println!(
        "wrote {} and {} (self-contained)",
        args.out.join("report.md").display(),
        args.out.join("report.html").display()
    );
    Ok(())
}
