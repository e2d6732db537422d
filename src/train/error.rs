//! What can stop a learner: the critic, the arenas, a configuration it cannot run, a
//! non-finite value, a frozen policy, or a checkpoint state it cannot read.

use crate::critic::CriticError;
use crate::error::{BadField, EngineError};
use crate::policy::PolicyError;

/// Errors while training.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// The critic failed.
    #[error(transparent)]
    Critic(#[from] CriticError),
    /// The environment failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A configuration the learner cannot run.
    #[error("{0}")]
    Config(String),
    /// A non-finite value appeared.
    #[error("update {update}: {tensor} is not finite ({value}); the last good checkpoint is kept")]
    NonFinite {
        /// The update.
        update: u64,
        /// Which tensor.
        tensor: String,
        /// The offending value.
        value: f32,
    },
    /// The ranks of a data-parallel job no longer hold the same parameters.
    #[error(
        "after update {update} the parameters of rank(s) {ranks} differ from rank 0's \
         (checksums by rank: {checksums}); the ranks no longer train one model, so the run stops \
         (the last good checkpoint is kept)"
    )]
    Diverged {
        /// The update after which they were compared.
        update: u64,
        /// The ranks whose checksum differs from rank 0's.
        ranks: String,
        /// Every rank's checksum, in rank order.
        checksums: String,
    },
    /// A frozen policy acting for some slots failed.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A checkpoint field that does not fit the run (length or range).
    #[error(transparent)]
    BadField(#[from] BadField),
    /// A learner state (checkpoint JSON) that cannot be written or read.
    #[error(transparent)]
    State(#[from] serde_json::Error),
}
