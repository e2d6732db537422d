//! gridarena: a batched ECS engine for multi-agent reinforcement learning in gridworlds.
//!
//! Data flows top-down: a [`scenario`] asset is parsed and validated, a [`layout::Layout`] is
//! derived from it, an [`engine::EnvBatch`] spawns B arenas into one bevy World whose
//! [`schedule`] steps them all at once through the [`systems`], which call the rules in
//! [`substrate`]. Learners read the dense buffers in [`components::StepBuffers`].

pub mod analysis;
pub mod atomic;
pub mod bench;
pub mod components;
pub mod critic;
pub mod engine;
pub mod error;
pub mod layout;
pub mod metrics;
pub mod policy;
pub mod render;
pub mod rng;
pub mod rollout;
pub mod scenario;
pub mod schedule;
pub mod substrate;
pub mod sys;
pub mod systems;
pub mod train;
#[cfg(feature = "viewer")]
pub mod viewer;
