//! The `gridarena` command line: a thin layer over the library.
//!
//! This file lists the commands, parses the command line, dispatches to the command's module
//! under `cli/` and reports errors (with their context, exit status 1). A training run a
//! signal stopped after its checkpoint exits 75 (`cli/signals.rs`).

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use cli::bench::BenchCommand;
use cli::eval::EvalArgs;
use cli::plan::PlanArgs;
#[cfg(feature = "gpu")]
use cli::render::RenderArgs;
use cli::rollout::RolloutArgs;
use cli::train::TrainArgs;

/// A batched ECS engine for multi-agent reinforcement learning in gridworlds.
#[derive(Parser, Debug)]
#[command(name = "gridarena", version, about, long_about = None)]
struct Cli {
    /// With no command, `train` runs with its defaults (PQN on the embedded Pursuit scenario).
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Train policies for every learner of a scenario (the default command).
    Train(TrainArgs),
    /// Evaluate a run's newest checkpoint: greedy policy vs a uniformly random one.
    Eval(EvalArgs),
    /// Aggregate statistics over runs and scenarios (IQM, median, mean, optimality gap with
    /// stratified bootstrap intervals, performance profiles, probability of improvement), as a
    /// Markdown report with figures.
    Report(cli::report::ReportArgs),
    /// Print the memory a run would need, tensor by tensor, against the budget (exit 1 when it
    /// does not fit).
    Plan(PlanArgs),
    /// Write a run's learning-curve PNG (also written at the end of training).
    Plot {
        /// Run directory.
        run: PathBuf,
    },
    /// Validate a scenario asset; every problem is reported as file:line:column.
    Check {
        /// Scenario file (RON).
        scenario: PathBuf,
        /// Also print what the engine will run: the scenario with its defaults written out,
        /// the roles and slots, the observation layout, the actions, the map's legend and counts.
        #[arg(long)]
        explain: bool,
    },
    /// Verify a run directory: its configuration, scenario and metrics parse and every
    /// checkpoint matches its checksums; one line per checkpoint (exit 1 when the newest
    /// checkpoint is damaged or the run cannot resume).
    CheckRun(cli::check_run::CheckRunArgs),
    /// List the GPU adapters (`--device gpu:K`), the CPU backend, and what `--device auto`
    /// and `--device gpu` would take here.
    Devices(cli::devices::DevicesArgs),
    /// PSRO on a matrix game or a small gridworld: NashConv of the meta-strategy per iteration.
    Psro(cli::psro::PsroArgs),
    /// Throughput benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Record a random-policy rollout of one arena to a file (atomically written).
    Rollout(RolloutArgs),
    /// Write a commented template scenario for a substrate (every field with its default and
    /// meaning, valid as written), or list the substrates.
    New(cli::new::NewArgs),
    /// Draw a recorded rollout headless into an animated GIF or a directory of PNG frames.
    #[cfg(feature = "gpu")]
    Render(RenderArgs),
    /// Watch a recorded rollout, or a run's greedy policy live, in a window.
    #[cfg(feature = "viewer")]
    View(cli::view::ViewArgs),
}

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `gridarena check --explain S | head`: once the reader of stdout has gone, `println!` panics
/// with "failed printing to stdout: Broken pipe". End quietly instead, with the status a
/// shell gives a process killed by SIGPIPE (128 + 13), as other Unix tools do.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn run(cli: Cli) -> Result<ExitCode> {
    let done = |r: Result<()>| r.map(|()| ExitCode::SUCCESS);
    match cli.command.unwrap_or(Command::Train(TrainArgs::default())) {
        Command::Train(args) => cli::train::run(args),
        Command::Eval(args) => cli::eval::run(args),
        Command::Report(args) => done(cli::report::run(args)),
        Command::Plan(args) => cli::plan::run(args),
        Command::Plot { run } => done(cli::plot::run(&run)),
        Command::Check { scenario, explain } => Ok(cli::check::run(&scenario, explain)),
        Command::CheckRun(args) => cli::check_run::run(args),
        Command::Devices(args) => done(cli::devices::run(args)),
        Command::Psro(args) => done(cli::psro::run(args)),
        Command::Bench(command) => done(cli::bench::run(command)),
        Command::Rollout(args) => done(cli::rollout::run(args)),
        Command::New(args) => done(cli::new::run(args)),
        #[cfg(feature = "gpu")]
        Command::Render(args) => done(cli::render::run(args)),
        #[cfg(feature = "viewer")]
        Command::View(args) => done(cli::view::run(args)),
    }
}
