//! `gridarena check`: validate a scenario asset and print what it describes; with `--explain`,
//! what the engine will run (`gridarena::scenario::explain`).

use std::path::Path;
use std::process::ExitCode;

use gridarena::scenario::{Scenario, explain};

use super::common::describe;

/// Prints `ok: <description>` (exit 0), followed with `explain` by the scenario's explanation,
/// or every problem as file:line:column (exit 1).
pub(crate) fn run(path: &Path, explain_it: bool) -> ExitCode {
    match Scenario::load(path) {
        Ok(loaded) => {
            println!("ok: {}", describe(&loaded));
            if explain_it {
                print!("\n{}", explain(&loaded));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
