//! The `gridarena` command line: a thin layer over the library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use gridarena::bench::{EnvBenchConfig, bench_env};
use gridarena::engine::EnvBatch;
use gridarena::error::human_bytes;
use gridarena::scenario::{Control, DEFAULT_SCENARIO_NAME, LoadedScenario, Scenario};

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
    },
    /// Throughput benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Record a random-policy rollout of one arena to a file (atomically written).
    Rollout(RolloutArgs),
    /// Draw a recorded rollout headless into an animated GIF or a directory of PNG frames.
    #[cfg(feature = "gpu")]
    Render(RenderArgs),
    /// Watch a recorded rollout, or a run's greedy policy live, in a window.
    #[cfg(feature = "viewer")]
    View(gridarena::viewer::ViewArgs),
}

#[cfg(feature = "gpu")]
#[derive(Args, Debug)]
struct RenderArgs {
    /// Rollout file (from `gridarena rollout`).
    rollout: PathBuf,
    /// Output: FILE.gif, or a directory for PNG frames.
    #[arg(long)]
    out: PathBuf,
    /// Pixels per grid cell.
    #[arg(long, default_value_t = 24)]
    cell: u32,
    /// GIF frames per second.
    #[arg(long, default_value_t = 10)]
    fps: u32,
    /// Render only the first N frames.
    #[arg(long)]
    frames: Option<usize>,
}

#[derive(Args, Debug, Default)]
struct TrainArgs {
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
    /// Critic device (overrides the config's).
    #[arg(long, value_enum)]
    device: Option<gridarena::critic::Device>,
    /// Run directory (default runs/<name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Continue the run in this directory from its newest checkpoint.
    #[arg(long, conflicts_with_all = ["config", "out"])]
    resume: Option<PathBuf>,
    /// Set any config field: key=value (RON value), repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Memory budget for the preflight, e.g. 2GiB (default: 3/4 of the available memory).
    #[arg(long, value_parser = gridarena::train::plan::parse_bytes)]
    memory_budget: Option<u64>,
}

#[derive(Args, Debug)]
struct PlanArgs {
    /// Run configuration (defaults when omitted).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Set any config field: key=value, repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Memory budget, e.g. 2GiB (default: 3/4 of the available memory).
    #[arg(long, value_parser = gridarena::train::plan::parse_bytes)]
    memory_budget: Option<u64>,
    /// Print one JSON object: tensors [{name, shape, bytes}], total_bytes, budget_bytes, fits.
    #[arg(long)]
    json: bool,
    /// Plan an exact analysis of the config's scenario instead of training: `exact` (values per
    /// state, successors on the fly) or `explicit` (materialise the transition graph).
    #[arg(long, value_enum)]
    nashconv: Option<gridarena::analysis::plan::Method>,
}

#[derive(Args, Debug)]
struct EvalArgs {
    /// Run directory.
    #[arg(long)]
    run: PathBuf,
    /// Episodes per policy.
    #[arg(long, default_value_t = 100)]
    episodes: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Critic device.
    #[arg(long, value_enum, default_value = "auto")]
    device: gridarena::critic::Device,
    /// Measure exploitability instead: NashConv of the greedy joint policy, exactly (value
    /// iteration over every state) or learned (trained best responses: a lower bound).
    #[arg(long, value_enum)]
    nashconv: Option<NashConvMethod>,
    /// With --nashconv: only this learner's gain.
    #[arg(long)]
    agent: Option<usize>,
    /// With --nashconv exact: memory budget, e.g. 1GiB (default: 3/4 of the available memory).
    #[arg(long, value_parser = gridarena::train::plan::parse_bytes)]
    memory_budget: Option<u64>,
    /// With --nashconv learned: environment steps of best-response training per learner.
    #[arg(long, default_value_t = 1_000_000)]
    br_steps: u64,
}

/// How `eval --nashconv` computes NashConv.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum NashConvMethod {
    /// Value iteration over every state, successors from the rules on the fly.
    Exact,
    /// Train a best response per learner against the frozen others (a lower bound).
    Learned,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Environment steps per second under a uniformly random policy.
    Env(BenchEnvArgs),
    /// Critic updates: rows per second of forward + loss + backward + Adam, and GFLOP/s.
    Critic(BenchCriticArgs),
    /// Training throughput: environment steps per second including learning.
    Train(BenchTrainArgs),
}

#[derive(Args, Debug)]
struct BenchTrainArgs {
    /// Run configuration (defaults when omitted).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Updates timed (after one warm-up update).
    #[arg(long, default_value_t = 10)]
    updates: u64,
    /// Set any config field: key=value, repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

#[derive(Args, Debug)]
struct BenchCriticArgs {
    /// Networks in the stack (K).
    #[arg(long, default_value_t = 8)]
    nets: usize,
    /// Rows per update (spread evenly over the networks).
    #[arg(long, default_value_t = 4096)]
    rows: usize,
    /// Input features (u8 observation bytes).
    #[arg(long, default_value_t = 147)]
    input: usize,
    /// Hidden width.
    #[arg(long, default_value_t = 128)]
    hidden: usize,
    /// Hidden layers.
    #[arg(long, default_value_t = 2)]
    layers: usize,
    /// Head width.
    #[arg(long, default_value_t = 5)]
    head: usize,
    /// Compute device: auto (a hardware GPU if there is one, else the CPU), cpu or gpu.
    #[arg(long, default_value = "auto")]
    device: gridarena::critic::Device,
    /// Timed updates per repeat.
    #[arg(long, default_value_t = 20)]
    updates: usize,
    /// Repeats; the median is reported.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// Worker threads for the CPU backend (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

#[derive(Args, Debug)]
struct BenchEnvArgs {
    /// Scenario file; the embedded default Pursuit scenario when omitted.
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Arenas stepped together.
    #[arg(long, default_value_t = 1024)]
    arenas: usize,
    /// Timed steps per repeat.
    #[arg(long, default_value_t = 1000)]
    steps: usize,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Repeats; the median is reported.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// Untimed warm-up steps before each repeat.
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Args, Debug)]
struct RolloutArgs {
    /// Scenario file; the embedded default Pursuit scenario when omitted.
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Steps to record.
    #[arg(long, default_value_t = 500)]
    steps: usize,
    /// Arenas stepped (arena 0 is recorded; social metrics cover every arena's episodes).
    #[arg(long, default_value_t = 1)]
    arenas: usize,
    /// Output file (.ron).
    #[arg(long)]
    out: PathBuf,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command.unwrap_or(Command::Train(TrainArgs::default())) {
        Command::Train(args) => train(args).map(|()| ExitCode::SUCCESS),
        Command::Eval(args) => eval(args).map(|()| ExitCode::SUCCESS),
        Command::Plan(args) => plan(args),
        Command::Plot { run } => {
            let png = gridarena::train::plot::plot_run(&run).map_err(anyhow::Error::msg)?;
            println!("wrote {}", png.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { scenario } => Ok(check(&scenario)),
        Command::Bench(BenchCommand::Env(args)) => bench(args).map(|()| ExitCode::SUCCESS),
        Command::Bench(BenchCommand::Critic(args)) => {
            bench_critic(args).map(|()| ExitCode::SUCCESS)
        }
        Command::Bench(BenchCommand::Train(args)) => bench_train(args).map(|()| ExitCode::SUCCESS),
        Command::Rollout(args) => rollout(args).map(|()| ExitCode::SUCCESS),
        #[cfg(feature = "gpu")]
        Command::Render(args) => render(args).map(|()| ExitCode::SUCCESS),
        #[cfg(feature = "viewer")]
        Command::View(args) => gridarena::viewer::run(args)
            .map(|()| ExitCode::SUCCESS)
            .map_err(anyhow::Error::from),
    }
}

fn load(path: Option<&Path>) -> Result<(LoadedScenario, String)> {
    match path {
        None => Ok((
            Scenario::default_pursuit(),
            DEFAULT_SCENARIO_NAME.to_string(),
        )),
        Some(p) => Ok((Scenario::load(p)?, p.display().to_string())),
    }
}

fn check(path: &Path) -> ExitCode {
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

/// One line a human can check a scenario against.
fn describe(loaded: &LoadedScenario) -> String {
    let s = &loaded.scenario;
    let roles: Vec<String> = s
        .roles
        .iter()
        .map(|r| {
            let control = match r.control() {
                Control::Learner => "learning",
                Control::RandomWalk => "random-walking",
            };
            let plural = if r.count == 1 { "" } else { "s" };
            format!("{} {} {}{plural}", r.count, control, r.kind.name())
        })
        .collect();
    let rules = s.substrate.describe();
    let map = if s.substrate.uses_map() {
        format!(
            "{}x{} map, {} open cells, ",
            loaded.grid.width,
            loaded.grid.height,
            loaded.grid.open_cells()
        )
    } else {
        String::new()
    };
    format!(
        "{} ({}): {map}{}; {rules}; {} actions; slip {}; {} steps; {} B observation",
        s.name,
        s.substrate.name(),
        roles.join(", "),
        s.action_set().len(),
        s.slip,
        s.max_steps,
        s.observation_len(),
    )
}

fn with_pool<T: Send>(threads: Option<usize>, f: impl FnOnce() -> T + Send) -> Result<T> {
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        anyhow::ensure!(t >= 1, "--threads must be at least 1");
        builder = builder.num_threads(t);
    }
    let pool = builder.build().context("cannot start the worker threads")?;
    Ok(pool.install(f))
}

fn bench(args: BenchEnvArgs) -> Result<()> {
    let (loaded, name) = load(args.scenario.as_deref())?;
    anyhow::ensure!(args.steps >= 1, "--steps must be at least 1");
    let cfg = EnvBenchConfig {
        arenas: args.arenas,
        steps: args.steps,
        warmup: args.warmup,
        repeat: args.repeat.max(1),
        seed: args.seed,
    };
    println!("scenario: {name}\n  {}", describe(&loaded));
    let result = with_pool(args.threads, || bench_env(&loaded, &cfg))?
        .with_context(|| format!("benchmarking {name}"))?;
    let rates: Vec<String> = result
        .env_steps_per_s
        .iter()
        .map(|r| format!("{r:.0}"))
        .collect();
    println!(
        "arenas {}  steps {}  threads {}  repeats {}",
        cfg.arenas, cfg.steps, result.threads, cfg.repeat
    );
    println!("env-steps/s per repeat: [{}]", rates.join(", "));
    println!("env-steps/s (median):   {:.0}", result.median_env_steps());
    println!(
        "agent-steps/s (median): {:.0}  ({} learning agents per arena)",
        result.median_agent_steps(),
        result.learners
    );
    println!(
        "resident memory: {} (peak {})",
        result.rss_bytes.map_or("n/a".into(), human_bytes),
        result.peak_rss_bytes.map_or("n/a".into(), human_bytes)
    );
    Ok(())
}

fn train(args: TrainArgs) -> Result<()> {
    use gridarena::train::config::RunConfig;
    let (mut cfg, out, resume) = match &args.resume {
        Some(run) => {
            let cfg = RunConfig::load(&run.join("config.ron"))
                .with_context(|| format!("resuming {}", run.display()))?;
            (cfg, run.clone(), true)
        }
        None => {
            let cfg = match &args.config {
                Some(p) => RunConfig::load(p)?,
                None => RunConfig::default(),
            };
            (cfg, PathBuf::new(), false)
        }
    };
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
    for assignment in &args.set {
        cfg.set(assignment)?;
    }
    cfg.validate()?;
    let out = if resume {
        out
    } else {
        args.out
            .clone()
            .unwrap_or_else(|| PathBuf::from("runs").join(&cfg.name))
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || {
            if stop.swap(true, std::sync::atomic::Ordering::SeqCst) {
                eprintln!("\nsecond interrupt: exiting without a checkpoint");
                std::process::exit(130);
            }
            eprintln!("\ninterrupt: finishing the current update and saving a checkpoint (Ctrl-C again to abort)");
        })
        .context("installing the Ctrl-C handler")?;
    }
    let scenario = cfg
        .scenario
        .as_ref()
        .map_or(DEFAULT_SCENARIO_NAME.to_string(), |p| {
            p.display().to_string()
        });
    println!(
        "training {:?} on {scenario}: {} env steps ({} updates of {} arenas x {} steps){}",
        cfg.algo,
        cfg.total_steps,
        cfg.updates(),
        cfg.arenas,
        cfg.rollout,
        if resume { ", resuming" } else { "" }
    );
    let opts = gridarena::train::TrainOptions {
        resume,
        progress: true,
        stop,
        until_update: None,
        memory_budget: args.memory_budget,
    };
    let summary = with_pool(None, || {
        gridarena::train::train(&cfg, &out, &opts).map_err(anyhow::Error::from)
    })??;
    let total = (summary.sim_seconds + summary.learn_seconds).max(1e-9);
    println!(
        "{} {}: {} updates, {} env steps in {:.1} s ({:.0} env steps/s; {:.0}% simulation, {:.0}% learning) on {}",
        if summary.interrupted {
            "stopped"
        } else {
            "finished"
        },
        summary.run.display(),
        summary.updates,
        summary.env_steps,
        summary.seconds,
        summary.env_steps as f64 / summary.seconds.max(1e-9),
        100.0 * summary.sim_seconds / total,
        100.0 * summary.learn_seconds / total,
        summary.device
    );
    println!(
        "metrics: {}/metrics.jsonl, curve: {}/learning_curve.png",
        summary.run.display(),
        summary.run.display()
    );
    Ok(())
}

#[cfg(feature = "gpu")]
fn render(args: RenderArgs) -> Result<()> {
    anyhow::ensure!(
        (1..=256).contains(&args.cell),
        "--cell {}: between 1 and 256 pixels",
        args.cell
    );
    let rollout = gridarena::rollout::Rollout::load(&args.rollout)?;
    let n = args.frames.unwrap_or(usize::MAX).min(rollout.frames.len());
    let bar = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        indicatif::ProgressBar::new(n as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let s = gridarena::render::output::render_rollout(
        &rollout,
        &args.out,
        args.cell,
        args.fps,
        args.frames,
        &bar,
    )?;
    bar.finish_and_clear();
    println!(
        "rendered {} frames of {}x{} px to {} on {}: drawing {:.2} s ({:.0} frames/s), encoding {:.2} s",
        s.frames,
        s.size.0,
        s.size.1,
        s.out.display(),
        s.adapter,
        s.render_seconds,
        s.frames as f64 / s.render_seconds.max(1e-9),
        s.encode_seconds
    );
    Ok(())
}

fn plan(args: PlanArgs) -> Result<ExitCode> {
    use gridarena::train::{config::RunConfig, load_scenario, plan};
    let mut cfg = match &args.config {
        Some(p) => RunConfig::load(p)?,
        None => RunConfig::default(),
    };
    for a in &args.set {
        cfg.set(a)?;
    }
    cfg.validate()?;
    let loaded = load_scenario(&cfg)?;
    if let Some(method) = args.nashconv {
        let model = gridarena::analysis::TransitionModel::new(&loaded, None)?;
        let budget = args.memory_budget.unwrap_or_else(plan::default_budget);
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
        return Ok(if p.plan.fits {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let device = gridarena::critic::choose_device(cfg.device)?;
    let p = plan::plan(
        &cfg,
        &loaded,
        &device,
        args.memory_budget.unwrap_or_else(plan::default_budget),
    );
    if args.json {
        println!("{}", serde_json::to_string(&p)?);
    } else {
        print!("{}", p.table());
        if let Some(r) = p.refusal() {
            eprintln!("error: {r}");
        }
    }
    Ok(if p.fits {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn nashconv(args: &EvalArgs, method: NashConvMethod) -> Result<()> {
    let device = gridarena::critic::choose_device(args.device)?;
    let progress = !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let report = gridarena::train::eval::evaluate(&args.run, args.episodes, &device)?;
    let mut value = serde_json::to_value(&report)?;
    let result = match method {
        NashConvMethod::Exact => {
            let budget = args
                .memory_budget
                .unwrap_or_else(gridarena::train::plan::default_budget);
            serde_json::to_value(gridarena::analysis::run::exact(
                &args.run, &device, args.agent, budget, progress,
            )?)?
        }
        NashConvMethod::Learned => serde_json::to_value(gridarena::analysis::learned::learned(
            &args.run,
            &device,
            args.agent,
            gridarena::analysis::learned::LearnedOptions {
                steps: args.br_steps,
                episodes: args.episodes,
            },
            progress,
        )?)?,
    };
    if let (Some(obj), Some(res)) = (value.as_object_mut(), result.as_object()) {
        for (k, v) in res {
            obj.insert(k.clone(), v.clone());
        }
    }
    if args.json {
        println!("{value}");
        return Ok(());
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
        println!("95% intervals: {ci}; the learned value is a lower bound on NashConv");
    }
    if let Some(states) = value.get("states") {
        println!("states: {states}; sweeps per solve: {}", get("sweeps"));
    }
    println!(
        "written to {}",
        args.run
            .join(format!(
                "nashconv_{}.json",
                if method == NashConvMethod::Exact {
                    "exact"
                } else {
                    "learned"
                }
            ))
            .display()
    );
    Ok(())
}

fn eval(args: EvalArgs) -> Result<()> {
    if let Some(method) = args.nashconv {
        return with_pool(None, || nashconv(&args, method))?;
    }
    let device = gridarena::critic::choose_device(args.device)?;
    let report = with_pool(None, || {
        gridarena::train::eval::evaluate(&args.run, args.episodes, &device)
            .map_err(anyhow::Error::from)
    })??;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!(
        "{} episodes per policy, checkpoint of update {}",
        report.episodes, report.update
    );
    for (name, r) in [
        ("greedy policy", &report.policy),
        ("random policy", &report.random),
    ] {
        let per: Vec<String> = r
            .per_agent
            .iter()
            .zip(&r.per_agent_ci95)
            .map(|(m, c)| format!("{m:.2}±{c:.2}"))
            .collect();
        println!(
            "{name}: mean return {:.3} ± {:.3} (95% CI); per agent [{}]",
            r.mean_return,
            r.ci95,
            per.join(", ")
        );
        let counters: Vec<String> = r
            .counters
            .iter()
            .map(|(k, v)| format!("{k} {v:.2}"))
            .collect();
        println!(
            "  collective {:.2}, equality {:.3}; per episode: {}",
            r.collective_return,
            r.equality,
            counters.join(", ")
        );
    }
    Ok(())
}

fn bench_train(args: BenchTrainArgs) -> Result<()> {
    use gridarena::train::{Learner, config::RunConfig, load_scenario};
    let mut cfg = match &args.config {
        Some(p) => RunConfig::load(p)?,
        None => RunConfig::default(),
    };
    for a in &args.set {
        cfg.set(a)?;
    }
    anyhow::ensure!(args.updates >= 1, "--updates must be at least 1");
    cfg.total_steps = cfg.steps_per_update() * (args.updates + 1);
    cfg.validate()?;
    let loaded = load_scenario(&cfg)?;
    let device = gridarena::critic::choose_device(cfg.device)?;
    println!("device: {device}");
    let result = with_pool(None, || -> Result<(f64, f64, f64)> {
        let mut pqn = Learner::new(&cfg, &loaded, &device)?;
        pqn.update()?;
        pqn.take_timing();
        let start = std::time::Instant::now();
        for _ in 0..args.updates {
            pqn.update()?;
        }
        let secs = start.elapsed().as_secs_f64();
        let (sim, learn) = pqn.take_timing();
        Ok((
            (cfg.steps_per_update() * args.updates) as f64 / secs,
            sim,
            learn,
        ))
    })??;
    let (sps, sim, learn) = result;
    println!(
        "{:?}: {} arenas x {} steps, {} epochs x {} minibatches, {}x{} MLP{}",
        cfg.algo,
        cfg.arenas,
        cfg.rollout,
        cfg.epochs,
        cfg.minibatches,
        cfg.layers,
        cfg.hidden,
        if cfg.shared {
            " shared"
        } else {
            " per learner"
        }
    );
    println!("env steps/s including learning: {sps:.0}");
    println!(
        "time in simulation {:.1}%, in learning {:.1}%",
        100.0 * sim / (sim + learn),
        100.0 * learn / (sim + learn)
    );
    Ok(())
}

fn bench_critic(args: BenchCriticArgs) -> Result<()> {
    use gridarena::bench::{CriticBenchConfig, bench_critic_cpu, gemm_peak_gflops};
    use gridarena::critic::{StackSpec, choose_device};
    let spec = StackSpec {
        nets: args.nets,
        input: args.input,
        hidden: args.hidden,
        layers: args.layers,
        head: args.head,
    };
    spec.validate().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        args.rows >= 1 && args.updates >= 1,
        "--rows and --updates must be at least 1"
    );
    let cfg = CriticBenchConfig {
        spec,
        rows: args.rows,
        updates: args.updates,
        repeat: args.repeat.max(1),
    };
    let chosen = choose_device(args.device)?;
    println!("device: {chosen}");
    println!(
        "stack: K={} nets, input {} (u8), {}x{} LayerNorm MLP, head {}, {} parameters; {} rows per update",
        spec.nets,
        spec.input,
        spec.layers,
        spec.hidden,
        spec.head,
        spec.params(),
        args.rows
    );
    let result = match &chosen {
        gridarena::critic::Chosen::Cpu { .. } => {
            with_pool(args.threads, || bench_critic_cpu(&cfg))??
        }
        #[cfg(feature = "gpu")]
        gridarena::critic::Chosen::Gpu { .. } => gridarena::critic::gpu::bench_critic_gpu(&cfg)?,
    };
    let rates: Vec<String> = result
        .rows_per_s
        .iter()
        .map(|r| format!("{r:.0}"))
        .collect();
    println!("rows/s per repeat: [{}]", rates.join(", "));
    println!(
        "rows/s (median):   {:.0}  (forward, loss, backward, Adam)",
        result.median_rows()
    );
    println!(
        "GFLOP/s (median):  {:.1}  ({} FLOP per row)",
        result.gflops(),
        result.flops_per_row
    );
    if matches!(chosen, gridarena::critic::Chosen::Cpu { .. }) {
        let peak = with_pool(args.threads, || gemm_peak_gflops(512, 9))?;
        println!(
            "GEMM peak here:    {peak:.1} GFLOP/s (matrixmultiply, 512^3 per thread, best of 9)"
        );
    }
    Ok(())
}

fn rollout(args: RolloutArgs) -> Result<()> {
    let (loaded, name) = load(args.scenario.as_deref())?;
    let mut batch = EnvBatch::new(&loaded, args.arenas, args.seed)?;
    let mut policy =
        gridarena::policy::RandomPolicy::new(args.seed, args.arenas, batch.layout().actions);
    batch.start_recording(0);
    batch.start_episode_log(100_000);
    with_pool(None, || -> Result<()> {
        for _ in 0..args.steps {
            policy.act(batch.actions_mut());
            batch.step()?;
        }
        Ok(())
    })??;
    let rollout = batch.finish_recording().context("recorder missing")?;
    rollout
        .save(&args.out)
        .with_context(|| format!("writing the rollout of {name}"))?;
    let episodes = rollout
        .frames
        .iter()
        .filter(|f| f.terminated || f.truncated)
        .count();
    println!(
        "wrote {}: {} frames, {} steps, {} finished episodes in arena 0, scenario {}",
        args.out.display(),
        rollout.frames.len(),
        args.steps,
        episodes,
        rollout.scenario.name
    );
    print_social_metrics(&rollout.counter_names, &rollout.episodes);
    Ok(())
}

fn print_social_metrics(counter_names: &[String], episodes: &[gridarena::metrics::EpisodeSummary]) {
    if episodes.is_empty() {
        println!("social metrics: no episode finished (raise --steps or --arenas)");
        return;
    }
    let m = gridarena::metrics::summarize(counter_names, episodes);
    let per_agent: Vec<String> = m.mean_return.iter().map(|r| format!("{r:.3}")).collect();
    println!(
        "social metrics over {} finished episodes (uniformly random policy):",
        m.episodes
    );
    println!("  return per agent:   [{}]", per_agent.join(", "));
    println!("  collective return:  {:.3}", m.collective_return);
    println!("  equality (1-Gini):  {:.3}", m.equality);
    for (name, v) in &m.counters {
        println!("  {name}: {v:.3} per episode");
    }
}
