//! The commands of the `gridarena` binary, one module each; `main.rs` parses and dispatches.
//!
//! Each command module holds its clap arguments (`...Args`) and a `run` function that does the
//! work through the library and prints the result. What several commands share (scenario
//! loading, the one-line scenario description, run configs, the worker pool) is in [`common`].

pub(crate) mod bench;
pub(crate) mod check;
pub(crate) mod check_run;
pub(crate) mod common;
pub(crate) mod devices;
pub(crate) mod eval;
pub(crate) mod nashconv;
pub(crate) mod new;
pub(crate) mod plan;
pub(crate) mod plot;
pub(crate) mod population;
pub(crate) mod psro;
pub(crate) mod psro_grid;
pub(crate) mod psro_learned;
#[cfg(feature = "gpu")]
pub(crate) mod render;
pub(crate) mod report;
pub(crate) mod rollout;
pub(crate) mod signals;
pub(crate) mod train;
#[cfg(feature = "viewer")]
pub(crate) mod view;
