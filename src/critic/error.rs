//! The critic layer's errors, and the length check every buffer goes through.

/// A [`CriticError::Shape`] unless a buffer of `got` values has the `expected` length.
pub(crate) fn check_len(
    what: &'static str,
    expected: usize,
    got: usize,
) -> Result<(), CriticError> {
    if got == expected {
        Ok(())
    } else {
        Err(CriticError::Shape {
            what,
            expected,
            got,
        })
    }
}

/// Errors of the critic layer.
#[derive(Debug, thiserror::Error)]
pub enum CriticError {
    /// A row names a network the stack does not have.
    #[error("row {row} names network {net}, but the stack has {nets}")]
    NetOutOfRange {
        /// Row.
        row: usize,
        /// Its network index.
        net: u32,
        /// Networks in the stack.
        nets: usize,
    },
    /// Buffer lengths that do not match the shape.
    #[error("{what}: expected {expected} values, got {got}")]
    Shape {
        /// Which buffer.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// An invalid stack shape.
    #[error("invalid stack: {0}")]
    Spec(String),
    /// A row-wise operation on a recurrent stack, or a recurrent one a backend lacks.
    #[error(
        "the stack's networks are recurrent (GRU): {0} is not available; recurrent stacks act with `act` and train with `forward_seq`"
    )]
    Recurrent(&'static str),
    /// A loss with unusable parameters.
    #[error("invalid loss: {0}")]
    Loss(String),
    /// An operation needs more GPU dispatches than its uniform buffer holds.
    #[error("one GPU operation needs {dispatches} dispatches, at most {max} fit: lower `layers`")]
    TooManyDispatches {
        /// Dispatches needed.
        dispatches: usize,
        /// Dispatches one operation may use.
        max: usize,
    },
    /// No usable GPU.
    #[error("no GPU: {0}")]
    NoGpu(String),
    /// A GPU operation failed.
    #[error("GPU: {0}")]
    Gpu(String),
    /// `--device gpu:K` names an adapter past the last one present.
    #[error(
        "device gpu:{index}: there is no adapter {index}, {count} found (`gridarena devices` lists them)"
    )]
    NoSuchAdapter {
        /// The index asked for.
        index: usize,
        /// Adapters present.
        count: usize,
    },
    /// A launcher's node-local rank variable that is not a rank.
    #[error(
        "{var}={value:?} is not a node-local rank (0, 1, 2, ...); `--device gpu` under MPI or Slurm picks the adapter from it"
    )]
    LocalRank {
        /// The variable (`OMPI_COMM_WORLD_LOCAL_RANK`, `SLURM_LOCALID`, `MPI_LOCALRANKID`).
        var: &'static str,
        /// Its value.
        value: String,
    },
}
