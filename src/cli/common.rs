//! What several commands share: loading a scenario (or the embedded default), describing it in
//! one line, loading a run config with its `--set` overrides, and running on a worker pool.

use std::path::Path;

use anyhow::{Context, Result};

use gridarena::scenario::{Control, DEFAULT_SCENARIO_NAME, LoadedScenario, Scenario};
use gridarena::train::config::RunConfig;

/// The scenario at `path`, or the embedded default Pursuit scenario; with the name to print.
pub(crate) fn load_scenario(path: Option<&Path>) -> Result<(LoadedScenario, String)> {
    match path {
        None => Ok((
            Scenario::default_pursuit(),
            DEFAULT_SCENARIO_NAME.to_string(),
        )),
        Some(p) => Ok((Scenario::load(p)?, p.display().to_string())),
    }
}

/// The run config at `path` (defaults when `None`) with every `--set key=value` applied in order.
/// A file in the old flat form loads, with one warning naming where its fields are now.
pub(crate) fn load_config(path: Option<&Path>, set: &[String]) -> Result<RunConfig> {
    let mut cfg = match path {
        Some(p) => {
            let (cfg, moved) = RunConfig::load_with_moves(p)?;
            if !moved.is_empty() {
                let moves: Vec<String> = moved
                    .iter()
                    .map(|m| format!("{} is now {}", m.from, m.to.join(" and ")))
                    .collect();
                eprintln!(
                    "warning: {} is in the old flat form (it loads as before): {}",
                    p.display(),
                    moves.join(", ")
                );
            }
            cfg
        }
        None => RunConfig::default(),
    };
    apply_sets(&mut cfg, set)?;
    Ok(cfg)
}

/// Applies every `--set key=value` to `cfg`, in order (those setting `algo` first, so that a
/// bare name several sections hold resolves with the run's algorithm).
pub(crate) fn apply_sets(cfg: &mut RunConfig, set: &[String]) -> Result<()> {
    cfg.set_all(set)?;
    Ok(())
}

/// Runs `f` on a rayon pool of `threads` workers (default: one per core).
pub(crate) fn with_pool<T: Send>(
    threads: Option<usize>,
    f: impl FnOnce() -> T + Send,
) -> Result<T> {
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        anyhow::ensure!(t >= 1, "--threads must be at least 1");
        builder = builder.num_threads(t);
    }
    let pool = builder.build().context("cannot start the worker threads")?;
    Ok(pool.install(f))
}

/// One line a human can check a scenario against.
pub(crate) fn describe(loaded: &LoadedScenario) -> String {
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
