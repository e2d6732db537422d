//! gridarena: a batched ECS engine for multi-agent reinforcement learning in gridworlds.
//!
//! Data flows top-down: a [`scenario`] asset is parsed and validated, a [`layout::Layout`] is
//! derived from it, an [`engine::EnvBatch`] spawns B arenas into one bevy World whose step
//! schedule runs them all at once through the systems, which call the rules in [`substrate`].
//! Learners ([`train::Learner`]) read the dense buffers in [`components::StepBuffers`] and train
//! critics ([`critic`]) on the CPU or the GPU. `docs/design.md` draws the whole flow and says
//! where each concern lives.
//!
//! The guides live in the repository's `docs/` folder; `docs/index.md` is their table of
//! contents. The main pages:
//! - `docs/cli.md`: the command line;
//! - `docs/training.md`: algorithms, run directories, resume, preflight, evaluation;
//! - `docs/python.md`: the Python package;
//! - `docs/scenarios.md` and `docs/authoring.md`: the scenario format and writing scenarios;
//! - `docs/design.md`, `docs/algorithms.md`, `docs/new_substrate.md`,
//!   `docs/new_algorithm.md`: the code's structure, the algorithms and how to extend them;
//! - `docs/scaling.md`: MPI and clusters;
//! - `docs/reliability.md` and `docs/testing.md`: guarantees and tests.
//!
//! The public surface, by what users call:
//! - engine: [`EnvBatch`], [`Scenario`] / [`LoadedScenario`], [`layout::Layout`], the
//!   [`components::StepBuffers`] it exposes, [`metrics`] and [`rollout`] files;
//! - training: [`train()`](train::train), [`RunConfig`], [`TrainOptions`], the [`Learner`] and
//!   [`Policy`] seams, [`load_policy`], evaluation ([`train::eval`]) and the memory preflight;
//! - analysis: exact and learned NashConv ([`analysis`]);
//! - rendering: [`render`] (offscreen frames, GIF/PNG) and, with the `viewer` feature, the window.
//!
//! The step's schedule, its systems and the file helpers are internal.
//!
//! Stepping a batch from Rust with a policy of your own (here: every learner always moves
//! right; `examples/` has longer versions, and training from code):
//!
//! ```
//! use gridarena::engine::EnvBatch;
//! use gridarena::scenario::Scenario;
//!
//! // The embedded default scenario: PettingZoo SISL Pursuit v5 (8 learning pursuers).
//! let loaded = Scenario::default_pursuit();
//! let mut batch = EnvBatch::new(&loaded, 4, 0)?;
//! let (learners, obs_len) = (batch.layout().learners, batch.layout().obs_len);
//! let mut total = 0.0;
//! for _ in 0..10 {
//!     // `[B, N]` actions, arena-major; the Move5 action set: 0 left, 1 right, 2 up, 3 down, 4 stay.
//!     batch.actions_mut().fill(1);
//!     batch.step()?;
//!     let b = batch.buffers();
//!     assert_eq!(b.obs.len(), 4 * learners * obs_len); // `[B, N, O]` observation bytes
//!     total += b.rewards.iter().sum::<f32>(); // `[B, N]` rewards of the last step
//! }
//! assert!(total.is_finite());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The unit tests share helpers with the integration tests (tests/common), which name the crate.
#[cfg(test)]
extern crate self as gridarena;

pub mod aggregate;
pub mod analysis;
pub(crate) mod atomic;
pub mod bench;
pub mod components;
pub mod critic;
pub mod dist;
pub mod engine;
pub mod error;
pub mod layout;
pub mod metrics;
pub mod policy;
pub mod population;
pub mod render;
pub mod rng;
pub mod rollout;
pub mod scenario;
pub(crate) mod schedule;
pub(crate) mod simd;
pub mod substrate;
pub(crate) mod sys;
pub(crate) mod systems;
pub mod train;
#[cfg(feature = "viewer")]
pub mod viewer;

pub use engine::EnvBatch;
pub use policy::{Policy, RandomPolicy};
pub use scenario::{LoadedScenario, Scenario};
pub use train::config::RunConfig;
pub use train::{Learner, TrainOptions, load_policy};
