//! `gridarena plan`: print the memory a run (or an exact NashConv analysis) would need, tensor by
//! tensor, against the budget; exit 1 when it does not fit.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use gridarena::train::{load_scenario, plan};

use super::common::load_config;

#[derive(Args, Debug)]
pub(crate) struct PlanArgs {
    /// Run configuration (defaults when omitted).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Set any config field: key=value, repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Memory budget, e.g. 2GiB (default: 3/4 of the available memory).
    #[arg(long, value_parser = gridarena::train::plan::parse_bytes)]
    memory_budget: Option<u64>,
    /// Critic device (overrides the config's). With a GPU the plan adds the device buffers,
    /// checked against the adapter's limits and the --gpu-memory budget.
    /// auto, cpu, gpu or gpu:K (adapter K of `gridarena devices`).
    #[arg(long)]
    device: Option<gridarena::critic::Device>,
    /// Device memory budget with a GPU critic, e.g. 24GiB. wgpu reports no memory size, so by
    /// default a software adapter (lavapipe) gets the host budget and any other adapter 8 GiB.
    #[arg(long, value_parser = gridarena::train::plan::parse_bytes)]
    gpu_memory: Option<u64>,
    /// Print one JSON object: tensors [{name, shape, bytes}], total_bytes, budget_bytes, fits,
    /// figures, and gpu (the device half, or null).
    #[arg(long)]
    json: bool,
    /// Plan an exact analysis of the config's scenario instead of training: `exact` (values per
    /// state, successors on the fly) or `explicit` (materialise the transition graph).
    #[arg(long, value_enum)]
    nashconv: Option<gridarena::analysis::plan::Method>,
}

/// Prints the plan (a table, or JSON with `--json`); the exit code says whether it fits.
pub(crate) fn run(args: PlanArgs) -> Result<ExitCode> {
    let mut cfg = load_config(args.config.as_deref(), &args.set)?;
    if let Some(d) = args.device {
        cfg.device = d;
    }
    cfg.validate()?;
    cfg.replicas()?;
    let loaded = load_scenario(&cfg)?;
    let budget = args.memory_budget.unwrap_or_else(plan::default_budget);
    if let Some(method) = args.nashconv {
        let model = gridarena::analysis::TransitionModel::new(&loaded, None)?;
        let p = gridarena::analysis::plan::plan(
            &model,
            method,
            budget,
            gridarena::analysis::run::POLICY_BATCH as u64,
        );
        if args.json {
            println!("{}", serde_json::to_string(&p)?);
        } else {
            print!("{}", p.table());
            if let Some(r) = p.plan.refusal() {
                eprintln!("error: {r}");
            }
        }
        return Ok(exit_code(p.plan.fits));
    }
    // Asked for a GPU where none exists, the plan still shows the device buffers, with the
    // adapter's limits unknown.
    let (device, missing) = match gridarena::critic::choose_device(cfg.device) {
        Ok(d) => (Some(d), String::new()),
        Err(e) if cfg.device.wants_gpu() => (None, e.to_string()),
        Err(e) => return Err(e.into()),
    };
    let target = match &device {
        Some(d) => plan::PlanDevice::Chosen(d),
        None => plan::PlanDevice::MissingGpu(&missing),
    };
    let p = plan::plan_for(&cfg, &loaded, target, budget, args.gpu_memory);
    if args.json {
        println!("{}", serde_json::to_string(&p)?);
    } else {
        print!("{}", p.table());
        if let Some(r) = p.refusal() {
            eprintln!("error: {r}");
        }
    }
    Ok(exit_code(p.fits))
}

fn exit_code(fits: bool) -> ExitCode {
    if fits {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
