//! PSRO on a small gridworld (any scenario the [`TransitionModel`] enumerates), with exact
//! best responses and an exact meta-game.
//!
//! - **Population members** are per-learner Markov policies over the model's states: the
//!   initial one (uniform-random, or one action in every state, as the matrix version starts
//!   from one action) and then deterministic policies, the greedy actions of the exact best
//!   response ([`Solver::best_response_actions`]; the lowest action among ties). A best
//!   response is added when its action table differs from every member's (tables are compared
//!   over every state of the index, reachable or not).
//! - **The meta-game** holds, for every joint profile of members, each learner's exact expected
//!   discounted return from the start distribution ([`Solver::evaluate`]). Entries are cached
//!   across iterations: an iteration evaluates only the profiles with a new member.
//! - **The meta-solver** is one of [`MetaSolver`]'s, on the empirical meta-game tensor.
//! - **The best response** of learner i is exact against the others' meta-strategies played as
//!   a per-state behavioural mixture, `pi_bar_k(a|s) = sum_j sigma_k,j pi_k,j(a|s)`, and the
//!   NashConv reported each iteration is the exact NashConv of that mixture profile
//!   ([`Solver::nashconv`]). In a single-state game (a one-shot matrix game) the behavioural
//!   mixture is the mixed strategy itself; in general it is the per-step mixture, which
//!   re-draws a member every step: an approximation of the per-episode mixed strategy the
//!   meta-solver computed (which draws one member per episode), not the same thing. The values
//!   in the meta-game are per-episode (pure profiles), so the two coincide on every pure
//!   profile.
//!
//! Memory: the exact NashConv preflight ([`plan`]) plus the populations' action tables and the
//! meta-game; when it does not fit the run is refused with the plan's figures (PSRO with learned
//! best responses, [`super::psro_learned`], runs past that reach).

use std::collections::HashMap;
use std::time::Instant;

use serde::Serialize;

use super::exact::{Behaviour, Solver, Tolerance};
use super::meta_solver::MetaSolver;
use super::model::{Horizon, ModelError, TransitionModel};
use super::plan::{AnalysisPlan, Method, plan};
use super::successors::SuccessorCache;
use crate::train::plan::PlanTensor;
use crate::train::preflight::sizing::fmt;

/// Why gridworld PSRO cannot run.
#[derive(Debug, thiserror::Error)]
pub enum GridPsroError {
    /// The scenario's substrate has no exact model.
    #[error(
        "PSRO runs on matrix games and on the gridworlds the exact analysis models (Pursuit); \
         scenario `{scenario}` uses the {substrate} substrate, which has no exact model: use \
         learned best responses (--best-response learned --config RUN.ron --out DIR)"
    )]
    Unsupported {
        /// The scenario.
        scenario: String,
        /// Its substrate.
        substrate: &'static str,
    },
    /// The state index overflows.
    #[error(transparent)]
    Model(ModelError),
    /// Zero iterations asked for.
    #[error("PSRO needs at least 1 iteration")]
    NoIterations,
    /// A starting action outside the learners' actions.
    #[error("initial action {action}: the scenario has actions 0..{actions}")]
    BadInitial {
        /// The action asked for.
        action: usize,
        /// Actions per learner.
        actions: usize,
    },
    /// A discount outside (0, 1], or 1 with an infinite horizon.
    #[error("gamma {gamma}: {why}")]
    BadGamma {
        /// The discount asked for.
        gamma: f64,
        /// Why it is refused.
        why: &'static str,
    },
    /// The exact analysis does not fit the memory budget.
    #[error(
        "PSRO with exact best responses needs {} for {} states, over the budget {} \
         ({detail}): use learned best responses (--best-response learned --config RUN.ron \
         --out DIR), a smaller scenario or a larger --memory-budget (see `gridarena plan \
         --nashconv exact`)",
        crate::error::human_bytes(*.total_bytes),
        fmt(*.states),
        crate::error::human_bytes(*.budget_bytes)
    )]
    DoesNotFit {
        /// States in the model's index.
        states: u64,
        /// Bytes the plan needs.
        total_bytes: u64,
        /// The budget.
        budget_bytes: u64,
        /// The plan's refusal (its largest table).
        detail: String,
    },
}

impl From<ModelError> for GridPsroError {
    fn from(e: ModelError) -> Self {
        match e {
            ModelError::Unsupported {
                scenario,
                substrate,
            } => GridPsroError::Unsupported {
                scenario,
                substrate,
            },
            other => GridPsroError::Model(other),
        }
    }
}

/// A population's first member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Initial {
    /// Every action with the same probability in every state.
    Uniform,
    /// This action in every state.
    Action(usize),
}

/// Gridworld PSRO's settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridPsroOptions {
    /// Most iterations (meta-game solves).
    pub iterations: usize,
    /// The meta-solver.
    pub meta_solver: MetaSolver,
    /// Every learner's first member.
    pub initial: Initial,
    /// The discount of the values.
    pub gamma: f64,
    /// Value iteration's limits for every solve.
    pub tolerance: Tolerance,
    /// Memory budget in bytes for the preflight.
    pub budget: u64,
}

/// One iteration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridPsroIteration {
    /// Iteration, from 0.
    pub iteration: usize,
    /// Members per learner.
    pub population_sizes: Vec<usize>,
    /// Each learner's meta-strategy over its members (in the order they were added).
    pub meta_strategies: Vec<Vec<f64>>,
    /// Exact NashConv of the behavioural mixture profile.
    pub nashconv: f64,
    /// Each learner's best-response gain (they sum to `nashconv`).
    pub gains: Vec<f64>,
    /// Each learner's value under the mixture profile, from the start distribution.
    pub values: Vec<f64>,
    /// Whether each learner's best response was new (added to its population).
    pub added: Vec<bool>,
    /// Joint profiles evaluated for the meta-game this iteration (the rest were cached).
    pub profiles_evaluated: usize,
    /// Value-iteration sweeps of the NashConv solves (evaluation, then each best response).
    pub sweeps: Vec<usize>,
    /// Wall-clock seconds of the iteration.
    pub seconds: f64,
}

/// A gridworld PSRO run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridPsroReport {
    /// The settings.
    pub options: GridPsroOptions,
    /// States in the model's index.
    pub states: u64,
    /// The model's horizon.
    pub horizon: Horizon,
    /// Bytes the preflight counted, and whether a successor cache was kept.
    pub plan_bytes: u64,
    /// Whether successors were cached.
    pub cached: bool,
    /// Every iteration.
    pub iterations: Vec<GridPsroIteration>,
    /// Each learner's members at the end, described (`uniform`, `action 0`, `best response
    /// of iteration 3`).
    pub members: Vec<Vec<String>>,
    /// Whether it stopped because no learner added a member (rather than at the limit).
    pub converged: bool,
}

/// One population member: a learner's Markov policy.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Member {
    /// Uniform over the actions everywhere.
    Uniform,
    /// One action per state, `[S]`.
    Actions(Vec<u8>),
}

/// A profile of per-learner mixtures over members, played per state.
pub(crate) struct Mixture<'a> {
    actions: usize,
    /// Per learner: (member, weight).
    learners: Vec<Vec<(&'a Member, f64)>>,
}

impl Behaviour for Mixture<'_> {
    fn dist_into(&self, s: u64, i: usize, out: &mut [f64]) {
        out.fill(0.0);
        for (member, w) in &self.learners[i] {
            match member {
                Member::Uniform => out.iter_mut().for_each(|o| *o += w / self.actions as f64),
                Member::Actions(t) => out[t[s as usize] as usize] += w,
            }
        }
    }
}

/// The preflight of gridworld PSRO: the exact NashConv plan (whose frozen-policy table PSRO
/// does not allocate, so it errs high) plus the populations' action tables and the meta-game.
pub fn psro_plan(model: &TransitionModel, options: &GridPsroOptions) -> AnalysisPlan {
    let mut p = plan(model, Method::Exact, options.budget, 0, None);
    let (s, n) = (model.states(), model.learners() as u64);
    let members = options.iterations as u64 + 1;
    p.plan.tensors.push(PlanTensor {
        name: "PSRO populations".into(),
        shape: format!("{members} members x {n} learners x {} states x 1 B", fmt(s)),
        bytes: s.saturating_mul(n).saturating_mul(members),
        knobs: "fewer --iterations, or a smaller scenario",
        disk_bytes: None,
        params: 0,
    });
    let joint = members.saturating_pow(n as u32);
    p.plan.tensors.push(PlanTensor {
        name: "PSRO meta-game".into(),
        shape: format!(
            "{} joint profiles x {n} learners x 8 B (cached)",
            fmt(joint)
        ),
        bytes: joint.saturating_mul(n * 8 + 48),
        knobs: "fewer --iterations",
        disk_bytes: None,
        params: 0,
    });
    p.plan.total_bytes = p
        .plan
        .tensors
        .iter()
        .fold(0u64, |t, x| t.saturating_add(x.bytes));
    p.plan.fits = p.plan.total_bytes <= p.plan.budget_bytes;
    p
}

/// The joint profile with index `joint` over populations of sizes `shape` (player 0 most
/// significant, as the meta-game tensors).
fn profile(mut joint: usize, shape: &[usize]) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    for (o, &k) in out.iter_mut().zip(shape).rev() {
        *o = joint % k;
        joint /= k;
    }
    out
}

/// Runs PSRO on `model` (see the module docs), calling `on_iteration` after each iteration.
pub fn grid_psro(
    model: &TransitionModel,
    options: &GridPsroOptions,
    progress: &indicatif::ProgressBar,
    on_iteration: &mut dyn FnMut(&GridPsroIteration),
) -> Result<GridPsroReport, GridPsroError> {
    if options.iterations == 0 {
        return Err(GridPsroError::NoIterations);
    }
    let (n, a, s) = (model.learners(), model.actions(), model.states() as usize);
    let gamma = options.gamma;
    if !(gamma > 0.0 && gamma <= 1.0) {
        return Err(GridPsroError::BadGamma {
            gamma,
            why: "the discount must be in (0, 1]",
        });
    }
    if gamma == 1.0 && model.horizon() == Horizon::Discounted {
        return Err(GridPsroError::BadGamma {
            gamma,
            why: "an infinite-horizon model needs a discount below 1",
        });
    }
    let first = match options.initial {
        Initial::Uniform => Member::Uniform,
        Initial::Action(k) if k < a => Member::Actions(vec![k as u8; s]),
        Initial::Action(action) => {
            return Err(GridPsroError::BadInitial { action, actions: a });
        }
    };
    let p = psro_plan(model, options);
    if let Some(detail) = p.plan.refusal() {
        return Err(GridPsroError::DoesNotFit {
            states: model.states(),
            total_bytes: p.plan.total_bytes,
            budget_bytes: p.plan.budget_bytes,
            detail,
        });
    }
    let cache = p.cache.then(|| SuccessorCache::new(model, p.cache_bytes));
    let solver = Solver::new(model, cache, gamma, options.tolerance);
    let start = model.start_distribution();
    let start_value = |values: &[f64], k: usize| -> f64 {
        start
            .iter()
            .map(|(s, p)| p * values[*s as usize * n + k])
            .sum()
    };
    let first_label = match options.initial {
        Initial::Uniform => "uniform".to_string(),
        Initial::Action(k) => format!("action {k}"),
    };
    let mut populations: Vec<Vec<Member>> = vec![vec![first]; n];
    let mut labels: Vec<Vec<String>> = vec![vec![first_label]; n];
    let mut payoffs: HashMap<Vec<usize>, Vec<f64>> = HashMap::new();
    let mut iterations = Vec::new();
    let mut converged = false;
    for iteration in 0..options.iterations {
        let t0 = Instant::now();
        let shape: Vec<usize> = populations.iter().map(Vec::len).collect();
        let total: usize = shape.iter().product();
        let mut meta = vec![Vec::with_capacity(total); n];
        let mut evaluated = 0;
        for joint in 0..total {
            let idx = profile(joint, &shape);
            let row = payoffs.entry(idx.clone()).or_insert_with(|| {
                evaluated += 1;
                let pure = Mixture {
                    actions: a,
                    learners: idx
                        .iter()
                        .zip(&populations)
                        .map(|(&j, pop)| vec![(&pop[j], 1.0)])
                        .collect(),
                };
                let v = solver.evaluate(&pure, progress).values;
                (0..n).map(|k| start_value(&v, k)).collect()
            });
            for (t, x) in meta.iter_mut().zip(row.iter()) {
                t.push(*x);
            }
        }
        let meta_strategies = options.meta_solver.solve(&meta, &shape);
        let mixture = Mixture {
            actions: a,
            learners: populations
                .iter()
                .zip(&meta_strategies)
                .map(|(pop, sigma)| pop.iter().zip(sigma.iter().copied()).collect())
                .collect(),
        };
        let (nc, responses) = solver.nashconv(&mixture, None, progress);
        let best: Vec<Vec<u8>> = responses
            .iter()
            .enumerate()
            .map(|(i, br)| solver.best_response_actions(&mixture, i, &br.values))
            .collect();
        drop(mixture);
        let mut added = vec![false; n];
        for (i, table) in best.into_iter().enumerate() {
            let member = Member::Actions(table);
            if !populations[i].contains(&member) {
                populations[i].push(member);
                labels[i].push(format!("best response of iteration {iteration}"));
                added[i] = true;
            }
        }
        let record = GridPsroIteration {
            iteration,
            population_sizes: shape,
            meta_strategies,
            nashconv: nc.nashconv,
            gains: nc.per_agent_gain,
            values: nc.policy_values,
            added: added.clone(),
            profiles_evaluated: evaluated,
            sweeps: nc.sweeps,
            seconds: t0.elapsed().as_secs_f64(),
        };
        on_iteration(&record);
        iterations.push(record);
        if !added.contains(&true) {
            converged = true;
            break;
        }
    }
    // A member added after the last solve is not in any meta-strategy: report the members the
    // last iteration mixed.
    if let Some(last) = iterations.last() {
        for (l, &k) in labels.iter_mut().zip(&last.population_sizes) {
            l.truncate(k);
        }
    }
    Ok(GridPsroReport {
        options: options.clone(),
        states: model.states(),
        horizon: model.horizon(),
        plan_bytes: p.plan.total_bytes,
        cached: p.cache,
        iterations,
        members: labels,
        converged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_count_with_the_last_learner_fastest() {
        assert_eq!(profile(0, &[2, 3]), vec![0, 0]);
        assert_eq!(profile(4, &[2, 3]), vec![1, 1]);
        assert_eq!(profile(5, &[2, 3]), vec![1, 2]);
    }
}
