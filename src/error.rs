//! Typed errors of the library.

use std::path::PathBuf;

/// A checkpoint field that does not fit the run: its name, what was expected and what was
/// found (a length or a value out of range).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("checkpoint field `{field}`: expected {expected}, found {found}")]
pub struct BadField {
    /// The field, e.g. `batch.pos` or `replay.obs`.
    pub field: String,
    /// What the run's layout needs.
    pub expected: String,
    /// What the checkpoint holds.
    pub found: String,
}

impl BadField {
    /// A field whose length is not the layout's.
    pub fn length(field: &str, expected: usize, found: usize) -> BadField {
        BadField {
            field: field.into(),
            expected: format!("{expected} values"),
            found: format!("{found}"),
        }
    }

    /// A field holding a value out of range.
    pub fn range(
        field: &str,
        expected: impl std::fmt::Display,
        found: impl std::fmt::Display,
    ) -> BadField {
        BadField {
            field: field.into(),
            expected: expected.to_string(),
            found: found.to_string(),
        }
    }

    /// Checks a length.
    pub fn check_len(field: &str, expected: usize, found: usize) -> Result<(), BadField> {
        if expected == found {
            Ok(())
        } else {
            Err(BadField::length(field, expected, found))
        }
    }
}

/// The kind of scenario problem, so tools and tests can tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The file could not be read.
    Io,
    /// Not valid RON.
    Syntax,
    /// A field the format does not have.
    UnknownField,
    /// A required field is absent.
    MissingField,
    /// A value of the wrong type or an unknown enum variant.
    WrongType,
    /// Map rows of different lengths.
    RaggedMap,
    /// A map character outside the legend.
    UnknownSymbol,
    /// An empty or oversized map.
    InvalidMap,
    /// More agents of a kind than spawn cells for them.
    TooManyAgents,
    /// Slip outside [0, 1].
    SlipOutOfRange,
    /// Observation window larger than the map.
    WindowTooLarge,
    /// Any other out-of-range value.
    InvalidValue,
    /// A chemistry reaction graph that does not hold together.
    ReactionGraph,
    /// A matrix-game payoff table of the wrong shape.
    PayoffShape,
}

/// A problem in a scenario asset, located in its file.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}{}; allowed: {allowed}", field_note(.field))]
pub struct ScenarioError {
    /// The file (or a description of the source).
    pub file: String,
    /// 1-based line (0 when the scenario came from memory).
    pub line: usize,
    /// 1-based column in characters.
    pub column: usize,
    /// What kind of problem.
    pub class: ErrorClass,
    /// The field path, e.g. `roles[1].count` (empty when not known).
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// What would be accepted.
    pub allowed: String,
}

fn field_note(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!(" (field `{field}`)")
    }
}

/// Errors of the simulation engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The fixed actor of some learner slots failed ([`crate::engine::EnvBatch::fix_slots`]).
    #[error("the fixed slots' policy: {0}")]
    FixedSlots(String),
    /// An action index outside the scenario's action set.
    #[error("arena {arena}, learner {learner}: action {action} is not in 0..{actions}")]
    InvalidAction {
        /// Arena index.
        arena: usize,
        /// Learner index within the arena.
        learner: usize,
        /// The offending value.
        action: u8,
        /// Size of the action set.
        actions: usize,
    },
    /// A batch request too large for the memory budget.
    #[error(
        "{what}: {arenas} arenas x {per_arena} B per arena = {} > budget {}; lower --arenas",
        human_bytes(*needed),
        human_bytes(*budget)
    )]
    OverBudget {
        /// What was being allocated.
        what: &'static str,
        /// Arenas requested.
        arenas: usize,
        /// Bytes each arena needs.
        per_arena: usize,
        /// Total bytes needed.
        needed: u64,
        /// Budget in bytes.
        budget: u64,
    },
    /// Zero arenas requested.
    #[error("a batch needs at least one arena")]
    NoArenas,
    /// An agent position outside the map or on a wall.
    #[error("agent {slot} at ({x}, {y}) is not on an open cell of the map")]
    BadPosition {
        /// Agent slot.
        slot: usize,
        /// Column.
        x: i32,
        /// Row.
        y: i32,
    },
    /// A per-learner buffer of the wrong length.
    #[error("{what}: {got} values is not a whole number of rows for {expected} learner rows")]
    Shape {
        /// Which buffer.
        what: &'static str,
        /// Learner rows in the batch.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// A saved state from another scenario or batch size.
    #[error("cannot restore the batch: {0}")]
    StateMismatch(String),
    /// A saved state with a vector of the wrong length or a value out of range.
    #[error(transparent)]
    BadField(#[from] BadField),
    /// A scenario problem.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// Errors reading or writing artifacts (rollouts).
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// Filesystem problem.
    #[error("{path}: {error}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The cause.
        error: std::io::Error,
    },
    /// Not a rollout, or unparsable.
    #[error("{path}: not a gridarena rollout: {reason}")]
    Format {
        /// The file concerned.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A rollout of another format version.
    #[error(
        "{path}: rollout format version {found}, this build reads version {supported}; re-record it with `gridarena rollout`"
    )]
    Version {
        /// The file concerned.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        supported: u32,
    },
}

/// Formats bytes as `1.23 GiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}
