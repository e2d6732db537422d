//! `gridarena eval --run RUN --nashconv exact|learned`: loads the run's configuration and newest
//! checkpoint, runs the preflight, tabulates the frozen greedy policies over every state (in
//! batches through the networks), solves, and writes the result atomically as
//! `RUN/nashconv_<method>.json`.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::exact::{
    ExactError, ExactProgress, NashConv, PolicyTable, Solved, Stages, Tolerance, agents_of,
    nashconv_from,
};
use super::model::{ModelError, TransitionModel};
use super::partial::{Fingerprint, PartialError, partial_path, read_partial, write_partial};
use super::plan::{Method, plan};
use super::successors::SuccessorCache;
use crate::critic::Chosen;
use crate::policy::{Policy, PolicyError};
use crate::scenario::Scenario;
use crate::train::config::RunConfig;
use crate::train::{GreedyPolicy, RunError, TrainError, trained_scenario};

/// Everything that can stop an analysis.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// The scenario cannot be modelled.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The run or its checkpoint.
    #[error(transparent)]
    Run(Box<RunError>),
    /// Running the networks or training a best response.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// A policy could not act.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The preflight refused.
    #[error("analysis preflight: {0} (see `gridarena plan --nashconv`)")]
    Refused(String),
    /// A bad request.
    #[error("{0}")]
    Invalid(String),
    /// The checkpoint of an analysis under way: refused, or not written.
    #[error(transparent)]
    Partial(#[from] PartialError),
    /// Stopped on request after a checkpoint; the same command continues from it.
    #[error(
        "stopped at the {at}; checkpoint in {path} (run the same command again to continue, \
         or with --fresh to start over)"
    )]
    Interrupted {
        /// The checkpoint.
        path: PathBuf,
        /// The solve and sweep it stopped at.
        at: String,
    },
    /// Writing the result.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        error: std::io::Error,
    },
}

impl From<RunError> for AnalysisError {
    fn from(e: RunError) -> Self {
        AnalysisError::Run(Box::new(e))
    }
}

/// States per batch when tabulating the frozen policies.
pub const POLICY_BATCH: usize = 4096;

/// The run's configuration with a single evaluation arena.
pub fn run_config(run: &Path) -> Result<RunConfig, AnalysisError> {
    let mut cfg = crate::train::run_dir::RunDir::load_config(run).map_err(RunError::from)?;
    cfg.arenas = 1;
    cfg.seeds = 1;
    cfg.sweep.clear();
    Ok(cfg)
}

/// The actions of `policy` at every state of `model`, `[S, N]`, in batches.
pub fn greedy_actions(
    model: &TransitionModel,
    policy: &mut dyn Policy,
    progress: &indicatif::ProgressBar,
) -> Result<Vec<u8>, AnalysisError> {
    if policy.has_memory() {
        return Err(AnalysisError::Invalid(
            "exact analysis tabulates a policy state by state, and this run's networks are \
             recurrent (network: gru): their actions depend on the episode so far, not on the \
             state alone; evaluate them with `gridarena eval`"
                .into(),
        ));
    }
    let (n, o) = (model.learners(), model.layout().obs_len);
    let states = model.states() as usize;
    let mut actions = vec![0u8; states * n];
    let mut obs = vec![0u8; POLICY_BATCH * n * o];
    for start in (0..states).step_by(POLICY_BATCH) {
        let end = (start + POLICY_BATCH).min(states);
        let rows = &mut obs[..(end - start) * n * o];
        rows.par_chunks_mut(n * o).enumerate().for_each_init(
            || model.scratch(),
            |scratch, (k, out)| {
                model.load((start + k) as u64, scratch);
                out.copy_from_slice(scratch.observe(model.layout()));
            },
        );
        policy.actions(rows, &mut actions[start * n..end * n])?;
        progress.inc((end - start) as u64);
    }
    Ok(actions)
}

fn bar(len: u64, what: &str, show: bool) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{what:<22} {{bar:30}} {{pos}}/{{len}} {{msg}} {{elapsed}}"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    b
}

/// How an exact analysis checkpoints, resumes and stops.
#[derive(Debug, Clone)]
pub struct ExactOptions {
    /// Write the checkpoint ([`partial_path`]) when this long has passed since the last one
    /// (None: never, except on a stop).
    pub checkpoint_every: Option<Duration>,
    /// Start over, ignoring a checkpoint of an earlier analysis (replaced by this one's).
    pub fresh: bool,
    /// Checkpoint and stop after the current sweep once this is set (Ctrl-C).
    pub stop: Option<Arc<AtomicBool>>,
    /// Checkpoint and stop after this many sweeps of this call (a deterministic interruption).
    pub stop_after_sweeps: Option<u64>,
    /// Where every solve stops.
    pub tol: Tolerance,
}

impl Default for ExactOptions {
    /// A checkpoint every 5 minutes, resuming a matching one.
    fn default() -> Self {
        ExactOptions {
            checkpoint_every: Some(Duration::from_secs(300)),
            fresh: false,
            stop: None,
            stop_after_sweeps: None,
            tol: Tolerance::default(),
        }
    }
}

/// Exact NashConv of the run's newest checkpoint (all learners, or only `agent`), the successor
/// cache capped at `cache_bytes` (default: the preflight's choice within `budget`), with the
/// default [`ExactOptions`].
pub fn exact(
    run: &Path,
    device: &Chosen,
    agent: Option<usize>,
    budget: u64,
    cache_bytes: Option<u64>,
    progress: bool,
) -> Result<NashConv, AnalysisError> {
    let opts = ExactOptions::default();
    exact_with(run, device, agent, (budget, cache_bytes), progress, &opts)
}

/// [`exact`] with `opts`: checkpoints to `RUN/`[`partial_path`], resumed when one of the same
/// analysis is there (unless `opts.fresh`) and removed on success.
pub fn exact_with(
    run: &Path,
    device: &Chosen,
    agent: Option<usize>,
    (budget, cache_bytes): (u64, Option<u64>),
    progress: bool,
    opts: &ExactOptions,
) -> Result<NashConv, AnalysisError> {
    let cfg = run_config(run)?;
    let loaded = trained_scenario(run, &cfg).map_err(RunError::from)?;
    let model = TransitionModel::new(&loaded, None)?;
    if let Some(i) = agent
        && i >= model.learners()
    {
        return Err(AnalysisError::Invalid(format!(
            "--agent {i}: the scenario has learners 0..{}",
            model.learners()
        )));
    }
    let p = plan(
        &model,
        Method::Exact,
        budget,
        POLICY_BATCH as u64,
        cache_bytes,
    );
    if let Some(r) = p.plan.refusal() {
        return Err(AnalysisError::Refused(r));
    }
    let mut greedy = GreedyPolicy::from_run(run, &cfg, &loaded, device)?;
    let source = Provenance {
        checkpoint: format!("checkpoints/update_{:08}", greedy.update()),
        update: greedy.update(),
        gamma: cfg.learn.gamma as f64,
        method: "exact".into(),
        agent,
    };
    let b = bar(model.states(), "policies", progress);
    let actions = greedy_actions(&model, &mut greedy, &b)?;
    b.finish_and_clear();
    drop(greedy);
    let policy = PolicyTable::from_actions(&model, &actions);
    drop(actions);
    let cache = p.cache.then(|| SuccessorCache::new(&model, p.cache_bytes));
    let b = bar(0, "value iteration", progress);
    let job = ExactJob {
        model: &model,
        scenario: &loaded.scenario,
        policy: &policy,
        gamma: cfg.learn.gamma as f64,
        update: source.update,
        agent,
    };
    let result = exact_resumable(&job, cache, &partial_path(run, agent), opts, &b);
    b.finish_and_clear();
    let result = result?;
    write_result(run, &source, &result)?;
    Ok(result)
}

/// One exact analysis: the policy of the checkpoint of `update` on `model` of `scenario`.
#[derive(Debug, Clone, Copy)]
pub struct ExactJob<'a> {
    /// The transition model.
    pub model: &'a TransitionModel,
    /// The scenario it models (part of the checkpoint's fingerprint).
    pub scenario: &'a Scenario,
    /// The frozen policies.
    pub policy: &'a PolicyTable,
    /// The discount.
    pub gamma: f64,
    /// The update of the checkpoint the policies come from (0 when none).
    pub update: u64,
    /// The one learner analysed, or none for all.
    pub agent: Option<usize>,
}

/// Exact NashConv of `job` with checkpoints to `partial` (see [`ExactOptions`]): continued from
/// `partial` when it holds this analysis' state (its result then has the bits of an
/// uninterrupted one), refused with [`AnalysisError::Partial`] and left as it is when it holds
/// another's, removed on success. A stop returns [`AnalysisError::Interrupted`] after writing
/// it.
pub fn exact_resumable(
    job: &ExactJob,
    cache: Option<SuccessorCache>,
    partial: &Path,
    opts: &ExactOptions,
    progress: &indicatif::ProgressBar,
) -> Result<NashConv, AnalysisError> {
    let t0 = Instant::now();
    let tol = opts.tol;
    let fp = Fingerprint::new(
        job.model,
        job.scenario,
        job.policy,
        (job.gamma, tol),
        job.agent,
        job.update,
    );
    let from = match opts.fresh {
        true => None,
        false => read_partial(partial, &fp)?,
    };
    let agents = agents_of(job.model.learners(), job.agent);
    let at = |stages: &Stages, current: Option<&Solved>| {
        let sweep = current.map_or(0, |c| c.sweeps);
        format!("{}, sweep {sweep}", stages.next_solve(&agents))
    };
    let resumed_from = from.as_ref().map(|p| at(&p.stages, p.current.as_ref()));
    if let Some(r) = &resumed_from {
        eprintln!("resuming from {} ({r})", partial.display());
    }
    let before = from.as_ref().map_or(0.0, |p| p.seconds);
    let (mut last, mut sweeps, mut failed) = (Instant::now(), 0u64, None);
    let mut hook = |stages: &Stages, cur: &Solved| {
        sweeps += 1;
        let stop = opts.stop_after_sweeps.is_some_and(|k| sweeps >= k)
            || opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst));
        let due = opts.checkpoint_every.is_some_and(|e| last.elapsed() >= e);
        if stop || due {
            let seconds = before + t0.elapsed().as_secs_f64();
            match write_partial(partial, &fp, stages, Some(cur), seconds) {
                Ok(_) => last = Instant::now(),
                Err(e) if stop => failed = Some(e),
                Err(e) => {
                    eprintln!("warning: no checkpoint of the analysis: {e}");
                    last = Instant::now();
                }
            }
        }
        match stop {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    };
    let run = nashconv_from(
        job.model,
        job.policy,
        (job.gamma, tol),
        cache,
        job.agent,
        progress,
        from.unwrap_or_else(ExactProgress::default),
        &mut hook,
    );
    match run {
        Ok(mut r) => {
            r.resumed_from = resumed_from;
            match std::fs::remove_file(partial) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    eprintln!("warning: {}: not removed: {e}", partial.display());
                }
                _ => {}
            }
            Ok(r)
        }
        Err(ExactError::Interrupted(p)) => Err(match failed {
            Some(e) => e.into(),
            None => AnalysisError::Interrupted {
                path: partial.to_path_buf(),
                at: at(&p.stages, p.current.as_ref()),
            },
        }),
        Err(ExactError::Inconsistent(what)) => Err(PartialError::Corrupt {
            path: partial.to_path_buf(),
            what,
        }
        .into()),
    }
}

/// Where an analysis result came from, recorded in its file beside the numbers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Provenance {
    /// The checkpoint evaluated, relative to the run directory.
    pub checkpoint: String,
    /// Its update.
    pub update: u64,
    /// The discount the values use.
    pub gamma: f64,
    /// `exact` or `learned`.
    pub method: String,
    /// The one learner analysed (`--agent`), or none for all of them.
    pub agent: Option<usize>,
}

impl Provenance {
    /// The file the result goes to: `nashconv_<method>.json`, or
    /// `nashconv_<method>_agent<i>.json` for one learner (so it never replaces the all-learner
    /// result).
    pub fn file_name(&self) -> String {
        match self.agent {
            Some(i) => format!("nashconv_{}_agent{i}.json", self.method),
            None => format!("nashconv_{}.json", self.method),
        }
    }
}

/// Writes the result with its provenance (under `source`) atomically to
/// `RUN/`[`Provenance::file_name`].
pub fn write_result(
    run: &Path,
    source: &Provenance,
    value: &impl serde::Serialize,
) -> Result<(), AnalysisError> {
    let path = run.join(source.file_name());
    let invalid =
        |e: serde_json::Error| AnalysisError::Invalid(format!("cannot serialise the result: {e}"));
    let mut object = serde_json::to_value(value).map_err(invalid)?;
    if let Some(map) = object.as_object_mut() {
        map.insert(
            "source".into(),
            serde_json::to_value(source).map_err(invalid)?,
        );
    }
    let text = serde_json::to_string_pretty(&object).map_err(invalid)?;
    crate::atomic::write_atomic(&path, text.as_bytes())
        .map_err(|error| AnalysisError::Io { path, error })
}
