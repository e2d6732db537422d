//! `gridarena check`: validate a scenario asset and print what it describes.

use std::path::Path;
use std::process::ExitCode;

use gridarena::scenario::Scenario;

use super::common::describe;

/// Prints `ok: <description>` (exit 0) or every problem as file:line:column (exit 1).
pub(crate) fn run(path: &Path) -> ExitCode {
    match Scenario::load(path) {
        Ok(loaded) => {
            println!("ok: {}", describe(&loaded));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
