//! `gridarena eval --run RUN --nashconv exact|learned`: loads the run's configuration and newest
//! checkpoint, runs the preflight, tabulates the frozen greedy policies over every state (in
//! batches through the networks), solves, and writes the result atomically as
//! `RUN/nashconv_<method>.json`.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::exact::{NashConv, PolicyTable, Tolerance, nashconv};
use super::model::{ModelError, TransitionModel};
use super::plan::{Method, plan};
use super::successors::SuccessorCache;
use crate::critic::Chosen;
use crate::policy::{Policy, PolicyError};
use crate::train::config::RunConfig;
use crate::train::{GreedyPolicy, RunError, TrainError, load_scenario};

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

/// Exact NashConv of the run's newest checkpoint (all learners, or only `agent`), the successor
/// cache capped at `cache_bytes` (default: the preflight's choice within `budget`).
pub fn exact(
    run: &Path,
    device: &Chosen,
    agent: Option<usize>,
    budget: u64,
    cache_bytes: Option<u64>,
    progress: bool,
) -> Result<NashConv, AnalysisError> {
    let cfg = run_config(run)?;
    let loaded = load_scenario(&cfg).map_err(RunError::from)?;
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
    let gamma = cfg.learn.gamma as f64;
    let result = nashconv(
        &model,
        &policy,
        gamma,
        Tolerance::default(),
        cache,
        agent,
        &b,
    );
    b.finish_and_clear();
    write_result(run, &source, &result)?;
    Ok(result)
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
