//! `gridarena eval --nashconv`: the exploitability of a run's greedy joint policy, exactly (value
//! iteration over every state) or learned (trained best responses, a lower bound).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use gridarena::analysis::learned::{LearnedOptions, learned};
use gridarena::analysis::run::{AnalysisError, ExactOptions};
use gridarena::train::eval::evaluate;

use super::signals::{EXIT_STOPPED, install_stop_handler};

#[derive(Args, Debug)]
pub(crate) struct NashConvArgs {
    /// Measure exploitability instead: NashConv of the greedy joint policy, exactly (value
    /// iteration over every state) or learned (trained best responses: a lower bound).
    #[arg(long, value_enum)]
    pub(crate) nashconv: Option<NashConvMethod>,
    /// With --nashconv: only this learner's gain.
    #[arg(long)]
    agent: Option<usize>,
    /// With --nashconv exact: memory budget, e.g. 1GiB (default: 3/4 of the available memory).
    #[arg(long, value_parser = gridarena::train::plan::parse_bytes)]
    memory_budget: Option<u64>,
    /// With --nashconv exact: cap of the successor cache, e.g. 64MiB or 0 for none (default:
    /// what the memory budget leaves; states past the cap are computed on the fly).
    #[arg(long, value_parser = gridarena::train::plan::parse_bytes)]
    cache_bytes: Option<u64>,
    /// With --nashconv exact: write the analysis' checkpoint (RUN/nashconv_exact.partial) every
    /// this many seconds; 0 for none. A later run of the same analysis resumes from it.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    checkpoint_every: u64,
    /// With --nashconv exact: start over, ignoring (and replacing) the checkpoint of an earlier
    /// analysis instead of resuming from it or refusing it.
    #[arg(long)]
    fresh: bool,
    /// With --nashconv learned: environment steps of best-response training per learner.
    #[arg(long, default_value_t = 1_000_000)]
    br_steps: u64,
    /// With --nashconv learned: best responses trained per learner, each from its own seed; with
    /// two or more the interval is taken over seeds (Student t), with one over the episodes.
    #[arg(long, default_value_t = 3)]
    br_seeds: usize,
}

/// How `eval --nashconv` computes NashConv.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum NashConvMethod {
    /// Value iteration over every state, successors from the rules on the fly.
    Exact,
    /// Train a best response per learner against the frozen others (a lower bound).
    Learned,
}

impl NashConvMethod {
    /// The suffix of the report file the analysis writes into the run (`nashconv_<name>.json`).
    fn file_stem(self) -> &'static str {
        match self {
            NashConvMethod::Exact => "exact",
            NashConvMethod::Learned => "learned",
        }
    }
}

/// Evaluates the run (`episodes` per policy), adds the NashConv analysis' fields to the report
/// and prints it (one JSON object with `json`). An exact analysis that a signal stopped after
/// its checkpoint exits [`EXIT_STOPPED`].
pub(crate) fn run(
    args: &NashConvArgs,
    method: NashConvMethod,
    run: &Path,
    episodes: usize,
    json: bool,
    device: gridarena::critic::Device,
) -> Result<ExitCode> {
    let device = gridarena::critic::choose_device(device)?;
    let progress = !json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let report = evaluate(run, episodes, &device)?;
    let mut value = serde_json::to_value(&report)?;
    let result = match method {
        NashConvMethod::Exact => {
            let budget = args
                .memory_budget
                .unwrap_or_else(gridarena::train::plan::default_budget);
            let every = args.checkpoint_every;
            // Ctrl-C checkpoints and stops only where checkpoints are on.
            let stop = match every {
                0 => None,
                _ => Some(install_stop_handler()?),
            };
            let opts = ExactOptions {
                checkpoint_every: (every > 0).then(|| Duration::from_secs(every)),
                fresh: args.fresh,
                stop: stop.as_ref().map(|h| h.stop.clone()),
                ..ExactOptions::default()
            };
            match gridarena::analysis::run::exact_with(
                run,
                &device,
                args.agent,
                (budget, args.cache_bytes),
                progress,
                &opts,
            ) {
                Ok(r) => serde_json::to_value(r)?,
                Err(e @ AnalysisError::Interrupted { .. }) => {
                    eprintln!("{e}");
                    return Ok(ExitCode::from(EXIT_STOPPED));
                }
                Err(e) => return Err(e.into()),
            }
        }
        NashConvMethod::Learned => serde_json::to_value(learned(
            run,
            &device,
            args.agent,
            LearnedOptions {
                steps: args.br_steps,
                episodes,
                seeds: args.br_seeds,
            },
            progress,
        )?)?,
    };
    if let (Some(obj), Some(res)) = (value.as_object_mut(), result.as_object()) {
        for (k, v) in res {
            obj.insert(k.clone(), v.clone());
        }
    }
    if json {
        println!("{value}");
        return Ok(ExitCode::SUCCESS);
    }
    let get = |k: &str| value.get(k).cloned().unwrap_or(serde_json::Value::Null);
    println!(
        "checkpoint of update {}: NashConv {} ({}), {} s",
        report.update,
        get("nashconv"),
        get("method").as_str().unwrap_or(""),
        get("seconds")
    );
    println!("per-agent gain: {}", get("per_agent_gain"));
    if let Some(ci) = value.get("per_agent_ci95") {
        println!(
            "95% intervals: {ci} (over {}); NashConv ± {}; per seed: {}; the learned value is a lower bound on NashConv",
            get("interval_over").as_str().unwrap_or(""),
            get("nashconv_ci95"),
            get("per_seed_nashconv")
        );
    }
    if let Some(states) = value.get("states") {
        println!("states: {states}; sweeps per solve: {}", get("sweeps"));
    }
    if let Some(c) = value.get("cache").filter(|c| !c.is_null()) {
        let num = |k: &str| c.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        println!(
            "successor cache: {} used of a {} cap (whole table {}); {} hits, {} misses, {} evictions",
            gridarena::error::human_bytes(num("bytes_used")),
            gridarena::error::human_bytes(num("cap_bytes")),
            gridarena::error::human_bytes(num("full_bytes")),
            num("hits"),
            num("misses"),
            num("evictions")
        );
    }
    println!(
        "written to {}",
        run.join(format!("nashconv_{}.json", method.file_stem()))
            .display()
    );
    Ok(ExitCode::SUCCESS)
}
