//! Populations and the evaluation protocol built on them: a population is a named set of
//! policies ([`manifest`]: runs' checkpoints, a sweep's replicas, scripted baselines, random)
//! opened on a scenario as policies ([`members`]) that act together, one member per slot
//! ([`mix`]). On top: cross-play matrices between two populations ([`crossplay`]), scenario
//! sets in Melting Pot's sense, focal players beside a held-out background population
//! ([`scenario_set`]), and Schelling diagrams ([`schelling`]).

pub mod crossplay;
pub mod manifest;
pub mod members;
pub mod mix;
pub mod scenario_set;
pub mod schelling;

use std::path::PathBuf;

pub use manifest::{MemberSpec, Population, Sampling};
pub use members::Member;

/// Why a population could not be read, opened or evaluated.
#[derive(Debug, thiserror::Error)]
pub enum PopulationError {
    /// A file could not be read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        error: std::io::Error,
    },
    /// A manifest or scenario set that does not parse or says something impossible.
    #[error("{path}: {reason}")]
    Manifest {
        /// The file.
        path: PathBuf,
        /// What is wrong, with line and column when parsing.
        reason: String,
    },
    /// A run member that cannot act here.
    #[error("run {path}: {reason}")]
    Run {
        /// The run directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Arguments that do not fit the scenario or each other.
    #[error("{0}")]
    Invalid(String),
    /// Playing the episodes failed.
    #[error(transparent)]
    Play(Box<crate::train::RunError>),
}

impl From<crate::train::RunError> for PopulationError {
    fn from(e: crate::train::RunError) -> Self {
        PopulationError::Play(Box::new(e))
    }
}

/// The number of learner slots of `loaded`.
pub(crate) fn learners(loaded: &crate::scenario::LoadedScenario) -> usize {
    loaded.scenario.learners_per_arena()
}

/// Per-episode mean of `returns[slot]` over `slots`.
pub(crate) fn mean_over(returns: &[f32], slots: &[usize]) -> f64 {
    let sum: f64 = slots.iter().map(|&s| returns[s] as f64).sum();
    sum / slots.len().max(1) as f64
}

/// Writes `value` as pretty JSON to `dir/name` atomically (creating `dir`), returning the path.
pub fn write_json(
    dir: &std::path::Path,
    name: &str,
    value: &impl serde::Serialize,
) -> Result<PathBuf, PopulationError> {
    let path = dir.join(name);
    let io = |error| PopulationError::Io {
        path: path.clone(),
        error,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| PopulationError::Invalid(format!("cannot serialise {name}: {e}")))?;
    crate::atomic::write_atomic(&path, text.as_bytes()).map_err(io)?;
    Ok(path)
}
