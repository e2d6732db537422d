//! Aggregate statistics over runs and tasks, done as rliable does them: the interquartile
//! mean, median, mean and optimality gap of a score matrix with stratified bootstrap
//! confidence intervals ([`bootstrap`]), performance profiles and the probability of
//! improvement ([`estimators`]); the score files `gridarena report` reads and the report it
//! writes ([`report`]), with its figures ([`figures`]), also as one self-contained HTML page.

pub mod bootstrap;
pub mod estimators;
pub mod figures;
mod html;
pub mod report;

pub use bootstrap::{Bootstrap, Estimate};
pub use estimators::{Metric, Scores, ScoresError, probability_of_improvement};
