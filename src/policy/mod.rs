//! Policies: what picks every learner's action in every arena.

mod random;

pub use random::RandomPolicy;
