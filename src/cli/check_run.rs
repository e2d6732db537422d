//! `gridarena check-run`: verify a whole run directory (`gridarena::train::check_run`):
//! `config.ron` and `scenario.ron` parse, the lines of `metrics.jsonl` parse, and every
//! checkpoint's files match their checksums and parse.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use gridarena::train::check_run::{RunCheck, check_run};

#[derive(Args, Debug)]
pub(crate) struct CheckRunArgs {
    /// Run directory.
    run: PathBuf,
    /// Print one JSON object instead: run, config and scenario (null or the error), metrics
    /// ({lines, torn_last_line, problems} or null), checkpoints ([{name, ok, checksummed,
    /// file, why}], oldest first), newest_intact and resumable.
    #[arg(long)]
    json: bool,
}

/// Prints the report (a line per file and per checkpoint, or JSON); exit 0 when the run can
/// resume from its newest checkpoint (configuration and scenario parse, newest checkpoint
/// intact), 1 otherwise.
pub(crate) fn run(args: CheckRunArgs) -> Result<ExitCode> {
    let check = check_run(&args.run)?;
    if args.json {
        let mut v = serde_json::to_value(&check)?;
        v["newest_intact"] = check.newest_intact().into();
        v["resumable"] = check.resumable().into();
        println!("{v}");
    } else {
        print!("{}", lines(&check));
    }
    Ok(if check.resumable() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The human report.
fn lines(check: &RunCheck) -> String {
    let mut out = String::new();
    let verdict = |problem: &Option<String>| match problem {
        None => "ok".to_string(),
        Some(why) => format!("does not parse: {why}"),
    };
    out += &format!("config.ron: {}\n", verdict(&check.config));
    out += &format!("scenario.ron: {}\n", verdict(&check.scenario));
    match &check.metrics {
        None => out += "metrics.jsonl: none yet\n",
        Some(m) => {
            out += &format!("metrics.jsonl: {} lines parse", m.lines);
            if let Some(bytes) = m.torn_last_line {
                out += &format!(
                    "; the last line is torn ({bytes} bytes without a newline, as a run killed \
                     while writing it leaves it; a resume drops it)"
                );
            }
            out += "\n";
            for p in &m.problems {
                out += &format!("metrics.jsonl: {p}\n");
            }
        }
    }
    if check.checkpoints.is_empty() {
        out += "no checkpoint yet\n";
    }
    for c in &check.checkpoints {
        match (&c.file, &c.why) {
            (Some(file), Some(why)) => {
                out += &format!("{}: damaged: {}: {why}\n", c.name, file.display());
            }
            _ if c.checksummed => out += &format!("{}: ok\n", c.name),
            _ => out += &format!("{}: ok (written before checksums: parsed only)\n", c.name),
        }
    }
    let newest_ok = check.checkpoints.last().is_some_and(|c| c.ok);
    if !check.checkpoints.is_empty() && !newest_ok {
        match check.newest_intact() {
            Some(name) => {
                out += &format!("the newest checkpoint is damaged: a resume falls back to {name}\n")
            }
            None => out += "no checkpoint is intact: the run cannot resume\n",
        }
    }
    out
}
