//! The exact NashConv driver: one policy evaluation, then one best response per learner, each
//! a value-iteration solve of [`super::Solver`]. Between two sweeps its state is an
//! [`ExactProgress`] (the finished solves and the values of the one under way); a run can be
//! stopped after any sweep by a [`SweepHook`] and continued from that state with the same bits
//! as an uninterrupted one ([`nashconv_from`]). The checkpoint file is
//! [`crate::analysis::partial`]'s.

use std::ops::ControlFlow;
use std::time::Instant;

use serde::Serialize;

use super::{PolicyTable, Solved, Solver, Tolerance};
use crate::analysis::model::TransitionModel;
use crate::analysis::successors::{CacheStats, SuccessorCache};

/// NashConv of a joint policy with the per-agent gains.
#[derive(Debug, Clone, Serialize)]
pub struct NashConv {
    /// `sum_i [V_i(BR_i, pi_-i) - V_i(pi)]` from the start distribution.
    pub nashconv: f64,
    /// `V_i(BR_i, pi_-i) - V_i(pi)` per learner.
    pub per_agent_gain: Vec<f64>,
    /// `V_i(pi)` per learner.
    pub policy_values: Vec<f64>,
    /// `V_i(BR_i, pi_-i)` per learner.
    pub best_response_values: Vec<f64>,
    /// `exact`.
    pub method: String,
    /// States in the index.
    pub states: u64,
    /// Value-iteration sweeps per solve (evaluation first, then each best response).
    pub sweeps: Vec<usize>,
    /// Whether a successor cache was used.
    pub cached: bool,
    /// The successor cache's cap, bytes used, hits, misses and evictions (absent without one).
    pub cache: Option<CacheStats>,
    /// Wall-clock seconds (with those before a resume).
    pub seconds: f64,
    /// Where a resumed analysis continued from (`evaluation, sweep 40`); absent when it
    /// started afresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<String>,
}

/// The evaluation, once done: each learner's value from the start distribution, and its sweeps.
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluationDone {
    /// `V_i(pi)` per learner.
    pub policy_values: Vec<f64>,
    /// Sweeps it took.
    pub sweeps: usize,
}

/// One best response, once done.
#[derive(Debug, Clone, PartialEq)]
pub struct BestResponseDone {
    /// The learner.
    pub agent: usize,
    /// `V_i(BR_i, pi_-i)` from the start distribution.
    pub value: f64,
    /// Sweeps it took.
    pub sweeps: usize,
}

/// The solves an exact NashConv has finished: the evaluation, then the best responses in
/// agent order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stages {
    /// The policy evaluation (None while under way).
    pub evaluation: Option<EvaluationDone>,
    /// The best responses done, in the order they are solved.
    pub best_responses: Vec<BestResponseDone>,
}

impl Stages {
    /// The solve under way after these: `evaluation`, or `best response of learner i`.
    pub fn next_solve(&self, agents: &[usize]) -> String {
        match (&self.evaluation, agents.get(self.best_responses.len())) {
            (None, _) => "evaluation".into(),
            (Some(_), Some(i)) => format!("best response of learner {i}"),
            (Some(_), None) => "done".into(),
        }
    }
}

/// Where an exact NashConv stands between two sweeps: the finished solves, the one under way
/// (values `[S, N]` for the evaluation, `[S]` for a best response, its sweeps and last change)
/// and the wall-clock seconds spent so far. What a checkpoint saves and a resume starts from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExactProgress {
    /// The finished solves.
    pub stages: Stages,
    /// The solve under way (None: the next one has not started).
    pub current: Option<Solved>,
    /// Seconds spent before.
    pub seconds: f64,
}

/// Called after every sweep with the finished solves and the one under way; a break stops the
/// analysis with [`ExactError::Interrupted`].
pub type SweepHook<'h> = dyn FnMut(&Stages, &Solved) -> ControlFlow<()> + 'h;

/// Why an exact NashConv did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ExactError {
    /// The hook stopped it; the state to continue from.
    #[error("interrupted: {} sweeps into the {}", .0.current.as_ref().map_or(0, |c| c.sweeps), if .0.stages.evaluation.is_none() { "evaluation" } else { "best responses" })]
    Interrupted(Box<ExactProgress>),
    /// The state to continue from does not fit this analysis.
    #[error("cannot continue from this state: {0}")]
    Inconsistent(String),
}

/// Each of the `width` value columns of `values` (`[S, width]`) averaged over the start
/// distribution: the expected value from the start.
pub(crate) fn from_start(start: &[(u64, f64)], values: &[f64], width: usize) -> Vec<f64> {
    (0..width)
        .map(|k| {
            start
                .iter()
                .map(|(s, p)| p * values[*s as usize * width + k])
                .sum()
        })
        .collect()
}

/// The learners whose best responses `only` asks for, in solve order.
pub(crate) fn agents_of(learners: usize, only: Option<usize>) -> Vec<usize> {
    only.map_or_else(|| (0..learners).collect(), |i| vec![i])
}

/// Refuses a state that is not one of this analysis': wrong learners, agents or value sizes.
fn check(
    model: &TransitionModel,
    agents: &[usize],
    from: &ExactProgress,
) -> Result<(), ExactError> {
    let (n, s) = (model.learners(), model.states() as usize);
    let bad = |what: String| Err(ExactError::Inconsistent(what));
    let st = &from.stages;
    if let Some(e) = &st.evaluation
        && e.policy_values.len() != n
    {
        return bad(format!(
            "{} policy values for {n} learners",
            e.policy_values.len()
        ));
    }
    if st.evaluation.is_none() && !st.best_responses.is_empty() {
        return bad("best responses without the evaluation".into());
    }
    if st.best_responses.len() > agents.len()
        || st
            .best_responses
            .iter()
            .zip(agents)
            .any(|(b, &i)| b.agent != i)
    {
        return bad(format!(
            "best responses of learners {:?}, not of {agents:?}",
            st.best_responses
                .iter()
                .map(|b| b.agent)
                .collect::<Vec<_>>()
        ));
    }
    if let Some(c) = &from.current {
        let width = if st.evaluation.is_none() { n } else { 1 };
        if st.best_responses.len() == agents.len() && st.evaluation.is_some() {
            return bad("a solve under way after the last one".into());
        }
        if c.values.len() != s * width {
            return bad(format!(
                "{} values, not {s} states x {width}",
                c.values.len()
            ));
        }
    }
    Ok(())
}

/// Exact NashConv of `policy` (all agents, or only `only`), each solve stopping at `tol`.
pub fn nashconv(
    model: &TransitionModel,
    policy: &PolicyTable,
    gamma: f64,
    tol: Tolerance,
    cache: Option<SuccessorCache>,
    only: Option<usize>,
    progress: &indicatif::ProgressBar,
) -> NashConv {
    let run = nashconv_from(
        model,
        policy,
        (gamma, tol),
        cache,
        only,
        progress,
        ExactProgress::default(),
        &mut |_, _| ControlFlow::Continue(()),
    );
    match run {
        Ok(r) => r,
        // A fresh start is consistent and a hook that never breaks never interrupts.
        Err(e) => unreachable!("{e}"),
    }
}

/// [`nashconv`] continued from `from` (the default: from the start), `hook` called after every
/// sweep. Its result has the same bits as an uninterrupted run's, whichever sweep `from` was
/// saved at; only `seconds` and the cache's counters (this process' only) differ.
#[expect(
    clippy::too_many_arguments,
    reason = "nashconv's arguments, the state to continue from and the hook"
)]
pub fn nashconv_from(
    model: &TransitionModel,
    policy: &PolicyTable,
    (gamma, tol): (f64, Tolerance),
    cache: Option<SuccessorCache>,
    only: Option<usize>,
    progress: &indicatif::ProgressBar,
    from: ExactProgress,
    hook: &mut SweepHook,
) -> Result<NashConv, ExactError> {
    let t0 = Instant::now();
    let n = model.learners();
    let agents = agents_of(n, only);
    check(model, &agents, &from)?;
    let ExactProgress {
        mut stages,
        mut current,
        seconds,
    } = from;
    let cached = cache.is_some();
    let solver = Solver::new(model, cache, gamma, tol);
    let start = model.start_distribution();
    let stop = |stages: Stages, cur: Solved| {
        ExactError::Interrupted(Box::new(ExactProgress {
            stages,
            current: Some(cur),
            seconds: seconds + t0.elapsed().as_secs_f64(),
        }))
    };
    if stages.evaluation.is_none() {
        let done = &stages;
        let eval =
            match solver.evaluate_from(policy, current.take(), progress, &mut |c| hook(done, c)) {
                Ok(e) => e,
                Err(c) => return Err(stop(stages, c)),
            };
        let policy_values = from_start(&start, &eval.values, n);
        stages.evaluation = Some(EvaluationDone {
            policy_values,
            sweeps: eval.sweeps,
        });
    }
    while let Some(&i) = agents.get(stages.best_responses.len()) {
        let done = &stages;
        let br = match solver
            .best_response_from(policy, i, current.take(), progress, &mut |c| hook(done, c))
        {
            Ok(b) => b,
            Err(c) => return Err(stop(stages, c)),
        };
        stages.best_responses.push(BestResponseDone {
            agent: i,
            value: from_start(&start, &br.values, 1)[0],
            sweeps: br.sweeps,
        });
    }
    let Some(eval) = stages.evaluation else {
        return Err(ExactError::Inconsistent("no evaluation".into()));
    };
    let policy_values = eval.policy_values;
    let mut sweeps = vec![eval.sweeps];
    let mut br_values = policy_values.clone();
    for b in &stages.best_responses {
        sweeps.push(b.sweeps);
        br_values[b.agent] = b.value;
    }
    let gains: Vec<f64> = (0..n).map(|k| br_values[k] - policy_values[k]).collect();
    Ok(NashConv {
        nashconv: agents.iter().map(|&i| gains[i]).sum(),
        per_agent_gain: gains,
        policy_values,
        best_response_values: br_values,
        method: "exact".into(),
        states: model.states(),
        sweeps,
        cached,
        cache: solver.cache_stats(),
        seconds: seconds + t0.elapsed().as_secs_f64(),
        resumed_from: None,
    })
}
