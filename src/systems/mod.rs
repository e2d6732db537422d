//! The step's systems, grouped by concern. Each runs once per step over the whole batch: it
//! takes the agent columns (`B * M` values, arena-major) and arena columns (`B` values) whole,
//! splits them into per-arena chunks and runs the substrate's rule function on every arena in
//! parallel with rayon. No system loops over arenas sequentially, none allocates.

pub mod chance;
pub mod episode;
pub mod interactions;
pub mod movement;
pub mod observations;
pub mod record;

/// Arenas per rayon task: enough work per task to amortise scheduling.
pub const ARENAS_PER_TASK: usize = 16;

/// The message for the construction-time invariant that agents and arenas live in one table.
pub(crate) const ONE_TABLE: &str =
    "agent and arena components are table-stored in one archetype (checked in EnvBatch::new)";
