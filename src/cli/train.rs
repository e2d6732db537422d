//! `gridarena train` (also the default command): train every learner of a scenario into a run
//! directory, with a progress bar, checkpoints, resume and a clean stop on a signal (Ctrl-C,
//! SIGTERM, SIGUSR1: `signals.rs`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use gridarena::dist::Job;
use gridarena::scenario::DEFAULT_SCENARIO_NAME;
use gridarena::train::config::RunConfig;
use gridarena::train::run_dir::RunDir;
use gridarena::train::{TrainOptions, TrainSummary};

use super::common::{apply_sets, load_config, with_pool};
use super::signals::{EXIT_STOPPED, install_stop_handler};

#[derive(Args, Debug, Default)]
pub(crate) struct TrainArgs {
    /// Run configuration (RON, see assets/runs/); defaults when omitted.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Scenario file (overrides the config's).
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Algorithm (overrides the config's).
    #[arg(long, value_enum)]
    algo: Option<gridarena::train::config::Algo>,
    /// Environment steps to train for (overrides the config's total_steps).
    #[arg(long)]
    steps: Option<u64>,
    /// Run seed (overrides the config's).
    #[arg(long)]
    seed: Option<u64>,
    /// Train this many independent replicas (seeds seed..seed + S) in one process.
    #[arg(long)]
    seeds: Option<usize>,
    /// Critic device (overrides the config's): auto, cpu, gpu or gpu:K (adapter K of
    /// `gridarena devices`). Under MPI or Slurm, `gpu` takes the rank's node-local GPU.
    #[arg(long)]
    device: Option<gridarena::critic::Device>,
    /// Run directory; refused when it holds a run (unless --resume-if-exists). Default: a new
    /// directory runs/<scenario>__<algo>__<seed>__<unix time>, and runs/latest links to it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Continue the run in this directory from its newest checkpoint.
    #[arg(long, conflicts_with_all = ["config", "out"])]
    resume: Option<PathBuf>,
    /// With --out DIR: start the run when DIR holds none (missing or empty), resume it when it
    /// does (refused, naming the fields, if the configuration differs), so the same command
    /// serves a job's first start and every requeue.
    #[arg(long)]
    resume_if_exists: bool,
    /// Set any config field: key=value (RON value), repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Sweep a per-network scalar over values, e.g. `--sweep lr=[1e-3,5e-4]` (repeatable: the
    /// grid is the cartesian product; every grid point x seed is a replica in one stack).
    #[arg(long = "sweep", value_name = "KEY=[V1,V2,...]")]
    sweep: Vec<String>,
    /// Memory budget for the preflight, e.g. 2GiB (default: 3/4 of the available memory).
    #[arg(long, value_parser = gridarena::train::plan::parse_bytes)]
    memory_budget: Option<u64>,
    /// Device memory budget for the preflight with a GPU critic, e.g. 24GiB. wgpu reports no
    /// memory size, so by default a software adapter (lavapipe) gets the host budget and any
    /// other adapter 8 GiB.
    #[arg(long, value_parser = gridarena::train::plan::parse_bytes)]
    gpu_memory: Option<u64>,
    /// Worker threads of this process (default: one per core; under MPI give each rank its
    /// share, e.g. 1 with 2 ranks on 2 cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Under MPI: compare the ranks' parameter checksums every this many updates (default 10).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    checksum_every: Option<u64>,
}

/// Trains as one process, or as one rank of the MPI job that started this process (the `mpi`
/// feature): rank 0 prints; an error on any rank ends the whole job (MPI_Abort), so no rank is
/// left waiting for it. Exits 0 when the run finished, [`EXIT_STOPPED`] (on every rank) when a
/// signal stopped it after a checkpoint.
pub(crate) fn run(args: TrainArgs) -> Result<ExitCode> {
    let job = Job::from_launcher()?;
    if let Some(tasks) = Job::launcher_tasks()
        && tasks > 1
        && job.size() == 1
    {
        let why = if cfg!(feature = "mpi") {
            "MPI did not join them (under srun, pass --mpi=pmix or --mpi=pmi2)"
        } else {
            "this gridarena was built without MPI (`cargo build --release --features mpi`)"
        };
        anyhow::bail!(
            "started as one of {tasks} tasks, but {why}: every task would train alone into the \
             same run directory (see the README's Clusters and MPI section)"
        );
    }
    // A panic must end the whole job too: unwinding would drop the job, and MPI_Finalize waits
    // for ranks that are themselves waiting for this one.
    let result = if job.size() > 1 {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_in(args, &job))) {
            Ok(r) => r,
            Err(_) => {
                eprintln!(
                    "error (rank {} of {}): panicked; ending the job",
                    job.rank(),
                    job.size()
                );
                job.abort(1);
                anyhow::bail!("panicked")
            }
        }
    } else {
        run_in(args, &job)
    };
    if let Err(e) = &result
        && job.size() > 1
    {
        // Rank 0's message comes first; the others only speak if it did not end the job.
        if !job.is_root() {
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        eprintln!("error (rank {} of {}): {e:#}", job.rank(), job.size());
        job.abort(1);
    }
    result
}

/// Where runs without `--out` go.
const RUNS: &str = "runs";

/// A new run directory under `runs/` for a run without `--out`
/// ([`fresh_run_name`](gridarena::train::run_dir::fresh_run_name)); every rank of a job takes
/// rank 0's start time, so all name the same directory.
fn fresh_out(cfg: &RunConfig, job: &Job) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let start = job.all_gather_u64(now).first().copied().unwrap_or(now);
    let root = Path::new(RUNS);
    root.join(gridarena::train::run_dir::fresh_run_name(
        cfg,
        start,
        |name| root.join(name).exists(),
    ))
}

/// Resolves the config (file or resumed run, then flags, then `--set`), trains and prints a
/// summary of the run.
fn run_in(args: TrainArgs, job: &Job) -> Result<ExitCode> {
    let root = job.is_root();
    refuse_resume_if_exists(&args)?;
    let (mut cfg, resume) = match &args.resume {
        Some(run) => {
            let cfg = gridarena::train::run_dir::RunDir::load_config(run)
                .with_context(|| format!("resuming {}", run.display()))?;
            (cfg, true)
        }
        None => (load_config(args.config.as_deref(), &[])?, false),
    };
    apply_overrides(&mut cfg, &args)?;
    cfg.validate()?;
    cfg.replicas()?;
    let fresh = args.resume.is_none() && args.out.is_none();
    let out = match (&args.resume, &args.out) {
        (Some(run), _) => run.clone(),
        (None, Some(out)) => out.clone(),
        (None, None) => fresh_out(&cfg, job),
    };
    let handler = install_stop_handler()?;
    let scenario = cfg
        .scenario
        .as_ref()
        .map_or(DEFAULT_SCENARIO_NAME.to_string(), |p| {
            p.display().to_string()
        });
    if job.size() > 1 && root {
        println!(
            "{}: rank 0 of {} prints; arenas and total_steps are per rank, the job's batch is \
             {} ranks x {} arenas = {} arenas",
            job.describe(),
            job.size(),
            job.size(),
            cfg.arenas,
            job.size() * cfg.arenas
        );
    }
    let say = |line: String| {
        if root {
            println!("{line}");
        }
    };
    say(format!(
        "training {:?} on {scenario}: {} env steps ({} updates of {} arenas x {} steps){}",
        cfg.algo,
        cfg.total_steps,
        cfg.updates(),
        cfg.arenas,
        cfg.rollout,
        if resume {
            ", resuming"
        } else if args.resume_if_exists && RunDir::config_file(&out).exists() {
            ", resuming if it has a checkpoint (--resume-if-exists)"
        } else {
            ""
        }
    ));
    if cfg.learn.lr_scale != gridarena::train::config::LrScale::None {
        say(format!(
            "learning rate {} scaled {:?} with the effective batch {} against {}: {}",
            cfg.learn.lr,
            cfg.learn.lr_scale,
            cfg.effective_batch(),
            cfg.learn.reference_batch,
            gridarena::train::schedule::resolved_lr(&cfg)
        ));
    }
    let replicas = cfg.replica_count();
    if replicas > 1 {
        say(format!(
            "{replicas} replicas in one stack ({} grid points x {} seeds); env steps below are per replica",
            replicas / cfg.seeds.max(1),
            cfg.seeds.max(1)
        ));
    }
    let opts = TrainOptions {
        resume,
        resume_if_exists: args.resume_if_exists,
        progress: true,
        stop: handler.stop.clone(),
        until_update: None,
        memory_budget: args.memory_budget,
        gpu_memory: args.gpu_memory,
        checksum_every: args.checksum_every,
    };
    let summary = with_pool(args.threads, || {
        gridarena::train::train_in(&cfg, &out, &opts, job).map_err(anyhow::Error::from)
    })?;
    // runs/latest names the new run once it exists (also after a failure part-way).
    if fresh
        && root
        && gridarena::train::run_dir::RunDir::config_file(&out).exists()
        && let Err(e) = gridarena::train::run_dir::point_latest(Path::new(RUNS), &out)
    {
        eprintln!("warning: {e}");
    }
    let summary = summary?;
    // Every rank agreed to stop after the same update, so every rank exits the same way.
    let code = if summary.interrupted {
        ExitCode::from(EXIT_STOPPED)
    } else {
        ExitCode::SUCCESS
    };
    if !root {
        return Ok(code);
    }
    print_summary(&summary);
    if let Some(table) = &summary.sweep {
        println!(
            "\nsweep: grid points by final return ({}; sweep.csv, sweep.png):\n{}",
            summary.run.display(),
            table.render()
        );
    }
    if summary.interrupted {
        let by = handler.signal_name().unwrap_or("a signal to another rank");
        eprintln!(
            "stopped by {by} after update {} with a checkpoint; exit status {EXIT_STOPPED}: run \
             the same command with --resume-if-exists (or `gridarena train --resume {}`) to \
             continue",
            summary.updates,
            summary.run.display()
        );
    }
    Ok(code)
}

/// `--resume-if-exists` needs the run directory a requeued job finds again (`--out`), and
/// says nothing `--resume` does not already.
fn refuse_resume_if_exists(args: &TrainArgs) -> Result<()> {
    if !args.resume_if_exists {
        return Ok(());
    }
    if args.resume.is_some() {
        anyhow::bail!(
            "--resume-if-exists with --resume: --resume always resumes; to start a run or \
             resume it by the same command, give --out DIR --resume-if-exists instead"
        );
    }
    if args.out.is_none() {
        anyhow::bail!(
            "--resume-if-exists needs --out DIR: without it every start would train into a new \
             directory under runs/ and never find the run to resume"
        );
    }
    Ok(())
}

/// The command-line flags over the config's values, then every `--set`, in that order.
fn apply_overrides(cfg: &mut RunConfig, args: &TrainArgs) -> Result<()> {
    if let Some(s) = &args.scenario {
        cfg.scenario = Some(s.clone());
    }
    if let Some(a) = args.algo {
        cfg.algo = a;
    }
    if let Some(n) = args.steps {
        cfg.total_steps = n;
    }
    if let Some(s) = args.seed {
        cfg.seed = s;
    }
    if let Some(s) = args.seeds {
        cfg.seeds = s;
    }
    if let Some(d) = args.device {
        cfg.device = d;
    }
    apply_sets(cfg, &args.set)?;
    for axis in &args.sweep {
        let (key, values) = gridarena::train::sweep::parse_axis(axis)?;
        cfg.sweep.insert(key, values);
    }
    Ok(())
}

fn print_summary(summary: &TrainSummary) {
    let total = (summary.sim_seconds + summary.learn_seconds).max(1e-9);
    println!(
        "{} {}: {} updates, {} env steps{} in {:.1} s ({:.0} env steps/s; {:.0}% simulation, {:.0}% learning) on {}",
        if summary.interrupted {
            "stopped"
        } else {
            "finished"
        },
        summary.run.display(),
        summary.updates,
        summary.env_steps,
        if summary.replicas > 1 {
            " per replica"
        } else {
            ""
        },
        summary.seconds,
        summary.env_steps as f64 / summary.seconds.max(1e-9),
        100.0 * summary.sim_seconds / total,
        100.0 * summary.learn_seconds / total,
        summary.device
    );
    if summary.ranks > 1 {
        println!(
            "{} ranks: env steps and env steps/s are the job's, summed over ranks",
            summary.ranks
        );
    }
    if summary.replicas > 1 {
        println!(
            "{} replicas: {} env steps in all, {:.0} env steps/s over all replicas",
            summary.replicas,
            summary.env_steps * summary.replicas as u64,
            (summary.env_steps * summary.replicas as u64) as f64 / summary.seconds.max(1e-9)
        );
    }
    println!(
        "metrics: {}/metrics.jsonl, curve: {}/learning_curve.png",
        summary.run.display(),
        summary.run.display()
    );
}
