//! Training: the run configuration, the learners, the run directory with metrics and
//! atomic checkpoints, resuming, plots and evaluation. [`train`] drives one run.
//!
//! Where things are, by folder:
//!
//! - `algos/`: the algorithms, one file or folder each (`pqn/`, `iql/`, `pr2/`,
//!   `online_dqn.rs`), and their registry (`algos/mod.rs`: [`new_learner`], and what the
//!   preflight sizes for each).
//! - `kit/`: the algorithm kit they share: targets (`returns`), acting (`explore`), the
//!   Q-networks and their head (`qnet`, `q_head`, `recurrent`), replay (`replay`,
//!   `rate_limiter`), opponent models (`opponent`), learning and
//!   exploration rates (`schedule`) and update statistics (`stats`).
//! - `preflight/`: the memory preflight: the check and its table (`plan`), the device half
//!   (`gpu_plan`), each algorithm's tensors (`sizing`, `pr2`).
//! - `run/`: the run around the learner: the training loop ([`train_in`], `run/mod.rs`), its
//!   setup, reports and checkpoints, the run directory, checkpoint shards and what a job of
//!   several ranks checks, resume checks, TensorBoard files, plots, sweep reports, and the
//!   greedy policy and evaluation of a trained run.
//! - here: the [`Learner`] seam every algorithm implements (`learner`), the replica layer
//!   under the algorithms (`replicated`), the configuration (`config`, with the sweep grid in
//!   `config/sweep.rs`), the learners' errors (`error`) and a checkpoint's named tensors
//!   (`tensors`).
//!
//! The public modules are re-exported here (`train::pqn`, `train::run_dir`, `train::plan`, ...),
//! so a caller names a module without its folder.

pub(crate) mod algos;
pub mod config;
mod error;
pub(crate) mod kit;
mod learner;
pub(crate) mod preflight;
mod replicated;
pub(crate) mod run;
pub mod tensors;

pub use algos::{ippo, iql, mappo, new_learner, new_learner_in, online_dqn, pqn, pqn_vdn, pr2};
pub use config::sweep;
pub use error::TrainError;
pub use kit::replay::ReplayState;
pub use kit::stats::{UpdateStats, mean_ci};
pub use kit::{opponent, rate_limiter, schedule};
pub use learner::{BoxedLearner, Learner, Progress};
pub use preflight::{gpu_plan, plan};
pub use run::greedy::{GreedyPolicy, load_policy};
pub use run::resume_check::Change;
pub use run::run_dir::Resume;
pub use run::{
    CHECKSUM_EVERY, RunError, TrainOptions, TrainSummary, load_scenario, restore, restore_in,
    train, train_in, trained_scenario,
};
pub use run::{
    check_run, eval, integrity, plot, run_dir, shards, state_policy, sweep_report, tensorboard,
};
