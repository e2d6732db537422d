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
    /// Plan one rank of an MPI job of this many ranks (`mpirun -np N`): the table is one
    /// rank's, against the node's budget split over `--ranks-per-node`, followed by the node's
    /// and the whole job's totals.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    ranks: u64,
    /// Ranks sharing one node's memory (default: all of them, one node).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    ranks_per_node: Option<u64>,
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
    let ranks = args.ranks as usize;
    let per_node = args.ranks_per_node.map_or(ranks, |l| l as usize).min(ranks);
    let budget = args.memory_budget.unwrap_or_else(plan::default_budget) / per_node as u64;
    if let Some(method) = args.nashconv {
        let model = gridarena::analysis::TransitionModel::new(&loaded, None)?;
        let p = gridarena::analysis::plan::plan(
            &model,
            method,
            budget,
            gridarena::analysis::run::POLICY_BATCH as u64,
            None,
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
    // Replicas split over ranks: one rank holds its block of them (the largest).
    let mut mine = cfg.clone();
    if ranks > 1 && cfg.replica_count() > 1 {
        let blocks = gridarena::dist::replica_blocks(cfg.replica_count(), ranks);
        mine.replica_shard = blocks.into_iter().max_by_key(|(a, b)| b - a);
    }
    let p = plan::plan_for(&mine, &loaded, target, budget, args.gpu_memory);
    if args.json {
        let mut v = serde_json::to_value(&p)?;
        if ranks > 1 {
            v["ranks"] = ranks.into();
            v["ranks_per_node"] = per_node.into();
            v["job_total_bytes"] = p.total_bytes.saturating_mul(ranks as u64).into();
        }
        println!("{v}");
    } else {
        print!("{}", p.table());
        if ranks > 1 {
            print!("{}", p.job_lines(&cfg, ranks, per_node));
        }
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
