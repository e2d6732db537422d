//! `gridarena bench`: throughput figures, one module per subcommand.

use anyhow::Result;
use clap::Subcommand;

mod critic;
mod env;
mod train;

#[derive(Subcommand, Debug)]
pub(crate) enum BenchCommand {
    /// Environment steps per second under a uniformly random policy.
    Env(env::BenchEnvArgs),
    /// Critic updates: rows per second of forward + loss + backward + Adam, and GFLOP/s.
    Critic(critic::BenchCriticArgs),
    /// Training throughput: environment steps per second including learning.
    Train(train::BenchTrainArgs),
}

/// Runs one benchmark and prints its figures.
pub(crate) fn run(command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Env(args) => env::run(args),
        BenchCommand::Critic(args) => critic::run(args),
        BenchCommand::Train(args) => train::run(args),
    }
}
