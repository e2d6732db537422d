//! Who acts in a live arena: a run's greedy policy or a scripted one ([`PolicyChoice`] asks,
//! `Actor` holds the one acting with its batch), the scripted policy a scenario gets, and what
//! keeps a run's networks from acting in a scenario.

use std::path::{Path, PathBuf};

use crate::engine::EnvBatch;
use crate::layout::Layout;
use crate::policy::{Policy, RandomPolicy, heuristics_for};
use crate::scenario::LoadedScenario;
use crate::train::GreedyPolicy;

/// What acts in a live arena.
pub(super) enum Actor {
    /// A run's greedy policy; its learner owns the arena.
    Run(GreedyPolicy),
    /// A scripted policy (random, or the substrate's heuristic) stepping its own arena.
    Scripted {
        batch: Box<EnvBatch>,
        policy: Box<dyn Policy>,
    },
}

impl Actor {
    pub(super) fn batch(&mut self) -> &mut EnvBatch {
        match self {
            Actor::Run(p) => p.learner().batch(),
            Actor::Scripted { batch, .. } => batch,
        }
    }

    pub(super) fn policy(&mut self) -> &mut dyn Policy {
        match self {
            Actor::Run(p) => p,
            Actor::Scripted { policy, .. } => policy.as_mut(),
        }
    }
}

/// Who acts in a live scenario (`gridarena view --scenario S --policy ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyChoice {
    /// Uniformly random actions.
    Random,
    /// The substrate's scripted baseline (`gridarena eval` reports the same one).
    Heuristic,
    /// A run directory: its newest checkpoint's greedy policy.
    Run(PathBuf),
}

impl std::str::FromStr for PolicyChoice {
    type Err = std::convert::Infallible;

    /// `random`, `heuristic`, or else a run directory (write `./random` for a run named so).
    fn from_str(s: &str) -> Result<PolicyChoice, Self::Err> {
        Ok(match s {
            "random" => PolicyChoice::Random,
            "heuristic" => PolicyChoice::Heuristic,
            other => PolicyChoice::Run(PathBuf::from(other)),
        })
    }
}

pub(super) fn run_acting(run: &Path, update: u64) -> String {
    format!("greedy policy of run {} (update {update})", run.display())
}

/// A scripted policy for `loaded` as `choice` asks, its name, and why it is not the one asked
/// for (a substrate without a heuristic for its action set gets the random policy).
pub(super) fn scripted(
    loaded: &LoadedScenario,
    choice: &PolicyChoice,
    seed: u64,
) -> (Box<dyn Policy>, String, Option<String>) {
    let actions = loaded.scenario.action_set().len();
    let random = || Box::new(RandomPolicy::new(seed, 1, actions)) as Box<dyn Policy>;
    match choice {
        PolicyChoice::Heuristic => match heuristics_for(loaded, seed, 1).into_iter().next() {
            Some((name, policy)) => (policy, format!("heuristic {name}"), None),
            None => (
                random(),
                "random policy".into(),
                Some(format!(
                    "no scripted heuristic for {} with the {:?} action set: the random policy \
                     acts",
                    loaded.scenario.substrate.name(),
                    loaded.scenario.action_set()
                )),
            ),
        },
        _ => (random(), "random policy".into(), None),
    }
}

/// What keeps a run's networks (built for `run`) from acting in `other`, empty when they fit.
pub(super) fn fit_problems(run: &Layout, other: &Layout) -> Vec<String> {
    let mut problems = Vec::new();
    if run.obs_len != other.obs_len {
        problems.push(format!(
            "observations of {} bytes, the run's networks read {}",
            other.obs_len, run.obs_len
        ));
    }
    if run.actions != other.actions {
        problems.push(format!(
            "{} actions, the run's networks have {}",
            other.actions, run.actions
        ));
    }
    if run.learners != other.learners {
        problems.push(format!(
            "{} learners, the run has {}",
            other.learners, run.learners
        ));
    }
    problems
}
