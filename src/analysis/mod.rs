//! Exact analysis without materialising graphs: the procedural transition model
//! ([`model`]), exact best responses and NashConv with memory proportional to the states
//! ([`exact`]) with a successor cache under a byte cap ([`successors`]), an explicit-graph reference for small scenarios ([`explicit`]), the preflight
//! that sizes every table before anything is allocated ([`plan`]), learned best responses for
//! scenarios too large to enumerate ([`learned`]), PSRO on matrix games ([`psro`]) and on small
//! gridworlds with exact best responses ([`psro_grid`]) and on any two-slot scenario with learned
//! ones ([`psro_learned`]), with their meta-solvers in
//! [`meta_solver`], and the `eval --nashconv` driver ([`run`]) with the checkpoint an exact
//! analysis resumes from ([`partial`]).

pub mod exact;
pub mod explicit;
pub mod learned;
pub mod meta_solver;
pub mod model;
pub mod partial;
pub mod plan;
pub mod psro;
pub mod psro_grid;
pub mod psro_learned;
pub mod run;
pub mod successors;

pub use model::{Horizon, ModelError, TransitionModel};
