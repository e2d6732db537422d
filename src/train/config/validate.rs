//! `RunConfig::validate`, which checks every field's range and the combinations the algorithms
//! refuse (a refusal names the field), and the `MAX_*` limits it checks against (re-exported
//! as `config::MAX_*`).

use super::{Algo, ConfigError, CriticForm, LrScale, NetworkKind, RhoForm, RunConfig, ValueLoss};

/// Largest `arenas`.
pub const MAX_ARENAS: usize = 1 << 20;
/// Largest `rollout` (steps per rollout).
pub const MAX_ROLLOUT: usize = 1 << 16;
/// Largest `epochs`.
pub const MAX_EPOCHS: usize = 10_000;
/// Largest `hidden` (and `pair_rank`).
pub const MAX_HIDDEN: usize = 1 << 14;
/// Largest `keep_checkpoints`.
pub const MAX_KEEP_CHECKPOINTS: usize = 10_000;
/// Largest `seeds`.
pub const MAX_SEEDS: usize = 1024;
/// Largest `batch_size`, `buffer_batch_size` and `cer`.
pub const MAX_BATCH: usize = 1 << 20;
/// Largest `bins` of an HL-Gauss head.
pub const MAX_BINS: usize = 1024;
/// Largest `replay_capacity` and `min_replay` (rows).
pub const MAX_REPLAY: usize = 1 << 31;

impl RunConfig {
    /// The network's fields: `layers: 1` and a bounded width for a GRU, and the sequence
    /// fields only where they apply.
    fn validate_network(&self) -> Result<(), ConfigError> {
        let bad = |field, message: String| Err(ConfigError::Invalid { field, message });
        if self.network == NetworkKind::Mlp {
            for (field, v) in [
                ("gru_hidden", self.gru_hidden),
                ("memory_window", self.memory_window),
                ("burn_in", self.burn_in),
            ] {
                if v != 0 {
                    return bad(field, format!("{v} needs network: gru"));
                }
            }
            return Ok(());
        }
        if self.layers != 1 {
            return bad(
                "layers",
                format!(
                    "{} with network: gru; its one embedding layer feeds the cell: set layers: 1",
                    self.layers
                ),
            );
        }
        if self.gru_hidden > MAX_HIDDEN {
            return bad(
                "gru_hidden",
                format!(
                    "{}; between 1 and {MAX_HIDDEN} (0 takes hidden)",
                    self.gru_hidden
                ),
            );
        }
        if self.memory_window > self.rollout {
            return bad(
                "memory_window",
                format!(
                    "{} is more than rollout {}; the kept window is the end of one rollout",
                    self.memory_window, self.rollout
                ),
            );
        }
        if self.memory_window > 0 && self.algo != Algo::Pqn {
            return bad(
                "memory_window",
                format!(
                    "{} applies to algo pqn; IQL and PR2-IQL warm up with burn_in",
                    self.memory_window
                ),
            );
        }
        if self.burn_in > 0 && (self.algo == Algo::Pqn || self.burn_in >= self.rollout) {
            return bad(
                "burn_in",
                format!(
                    "{}: IQL and PR2-IQL only (PQN uses memory_window), and less than rollout {}",
                    self.burn_in, self.rollout
                ),
            );
        }
        Ok(())
    }

    /// Checks every value.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, message: String| Err(ConfigError::Invalid { field, message });
        if self.name.is_empty() || self.name.contains('/') {
            return bad(
                "name",
                format!("{:?}: a non-empty name without '/'", self.name),
            );
        }
        // Every field that sizes a tensor or a loop, with the range it may take: the products
        // computed from them below and in the memory preflight then cannot overflow.
        for (field, v, max) in [
            ("arenas", self.arenas, MAX_ARENAS),
            ("rollout", self.rollout, MAX_ROLLOUT),
            ("epochs", self.epochs, MAX_EPOCHS),
            ("minibatches", self.minibatches, usize::MAX),
            ("hidden", self.hidden, MAX_HIDDEN),
            ("layers", self.layers, crate::critic::MAX_LAYERS),
            (
                "keep_checkpoints",
                self.keep_checkpoints,
                MAX_KEEP_CHECKPOINTS,
            ),
            ("seeds", self.seeds, MAX_SEEDS),
            ("pair_rank", self.pair_rank.max(1), MAX_HIDDEN),
            ("batch_size", self.batch_size.max(1), MAX_BATCH),
            (
                "buffer_batch_size",
                self.buffer_batch_size.max(1),
                MAX_BATCH,
            ),
            ("replay_capacity", self.replay_capacity.max(1), MAX_REPLAY),
            ("cer", self.cer.max(1), MAX_BATCH),
        ] {
            if v == 0 || v > max {
                let range = if max == usize::MAX {
                    "at least 1".to_string()
                } else {
                    format!("between 1 and {max}")
                };
                return bad(field, format!("{v}; {range}"));
            }
        }
        if self.min_replay > MAX_REPLAY as u64 {
            return bad(
                "min_replay",
                format!("{}; at most {MAX_REPLAY}", self.min_replay),
            );
        }
        if self.minibatches > self.arenas * self.rollout {
            return bad(
                "minibatches",
                format!(
                    "{} minibatches of {} x {} rollout rows; at most one per row",
                    self.minibatches, self.arenas, self.rollout
                ),
            );
        }
        for (field, v) in [
            ("gamma", self.gamma),
            ("lambda", self.lambda),
            ("eps_start", self.eps_start),
            ("eps_finish", self.eps_finish),
            ("eps_fraction", self.eps_fraction),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(field, format!("{v}; a number in [0, 1]"));
            }
        }
        if self.seeds == 0 {
            return bad("seeds", "0; at least 1".into());
        }
        if self.threaded && self.replica_count() > 1 {
            return bad(
                "threaded",
                format!(
                    "true with {} replicas (seeds x sweep grid points): the replicas learn in \
                     lockstep on one thread; use threaded: false",
                    self.replica_count()
                ),
            );
        }
        // PQN, IQL and PR2-IQL give every replica its own models; the threaded learner has
        // no models.
        if self.opponent_models && self.threaded {
            return bad("opponent_models", "true needs threaded false".into());
        }
        if self.algo == Algo::Pr2Iql {
            if self.threaded || self.shared {
                return bad(
                    if self.threaded { "threaded" } else { "shared" },
                    "true is not available with algo pr2_iql (one network per learner, one thread)"
                        .into(),
                );
            }
            if self.rho == RhoForm::Model && !self.opponent_models {
                return bad(
                    "rho",
                    "model needs opponent_models: true (or use rho: soft)".into(),
                );
            }
            if self.critic == CriticForm::Joint && self.pair_rank > 0 {
                return bad(
                    "pair_rank",
                    format!(
                        "{} with critic: joint; pair_rank applies to critic: factorized only",
                        self.pair_rank
                    ),
                );
            }
            if self.buffer_batch_size == 0 {
                return bad("buffer_batch_size", "0; at least 1 sequence".into());
            }
            let sequence_rows = self.rollout as u64;
            let sequences = self.replay_capacity as u64 / sequence_rows.max(1);
            if sequences < self.buffer_batch_size as u64 {
                return bad(
                    "replay_capacity",
                    format!(
                        "{} rows hold {sequences} sequences of {} steps; at least buffer_batch_size {} needed",
                        self.replay_capacity, self.rollout, self.buffer_batch_size
                    ),
                );
            }
        }
        if self.algo == Algo::Iql {
            if self.batch_size == 0 || self.cer >= self.batch_size {
                return bad(
                    "cer",
                    format!(
                        "{} newest rows in batches of {}; fewer than batch_size",
                        self.cer, self.batch_size
                    ),
                );
            }
            if (self.replay_capacity as u64) < self.min_replay.max(self.batch_size as u64) {
                return bad(
                    "replay_capacity",
                    format!(
                        "{} is below min_replay {} or batch_size {}",
                        self.replay_capacity, self.min_replay, self.batch_size
                    ),
                );
            }
            if !(self.target_tau > 0.0 && self.target_tau <= 1.0) {
                return bad(
                    "target_tau",
                    format!("{}; a number in (0, 1]", self.target_tau),
                );
            }
        }
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            return bad("lr", format!("{}; a positive number", self.lr));
        }
        if self.lr_scale != LrScale::None && self.reference_batch == 0 {
            return bad(
                "reference_batch",
                format!(
                    "0 with lr_scale {:?}; set the effective batch lr was tuned at (this run's is {})",
                    self.lr_scale,
                    self.effective_batch()
                ),
            );
        }
        if self.max_grad_norm.is_nan() || self.max_grad_norm <= 0.0 {
            return bad(
                "max_grad_norm",
                format!("{}; a positive number", self.max_grad_norm),
            );
        }
        self.validate_loss()?;
        self.validate_network()?;
        if self.total_steps < (self.arenas * self.rollout) as u64 {
            return bad(
                "total_steps",
                format!(
                    "{} is less than one rollout ({} arenas x {} steps)",
                    self.total_steps, self.arenas, self.rollout
                ),
            );
        }
        Ok(())
    }

    /// The value-loss fields: `huber_delta` positive; with `hl_gauss`, `bins` in
    /// `2..=MAX_BINS`, a finite support `v_min < v_max`, `sigma` 0 or positive (every
    /// learner, PR2-IQL included).
    fn validate_loss(&self) -> Result<(), ConfigError> {
        let bad = |field, message: String| Err(ConfigError::Invalid { field, message });
        if !(self.huber_delta > 0.0 && self.huber_delta.is_finite()) {
            return bad(
                "huber_delta",
                format!("{}; a positive number", self.huber_delta),
            );
        }
        if self.loss == ValueLoss::Default {
            return Ok(());
        }
        if self.loss != ValueLoss::HlGauss {
            return Ok(());
        }
        if !(2..=MAX_BINS).contains(&self.bins) {
            return bad("bins", format!("{}; between 2 and {MAX_BINS}", self.bins));
        }
        if !(self.v_min.is_finite() && self.v_max.is_finite()) {
            return bad(
                if self.v_min.is_finite() {
                    "v_max"
                } else {
                    "v_min"
                },
                format!("[{}, {}]; finite numbers", self.v_min, self.v_max),
            );
        }
        if self.v_min >= self.v_max {
            return bad(
                "v_max",
                format!(
                    "{} is not above v_min {}; the support needs v_min < v_max",
                    self.v_max, self.v_min
                ),
            );
        }
        if !(self.sigma >= 0.0 && self.sigma.is_finite()) {
            return bad(
                "sigma",
                format!(
                    "{}; a positive number, or 0 for 0.75 bin widths",
                    self.sigma
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_field() {
        let c = RunConfig {
            gamma: 1.5,
            ..RunConfig::default()
        };
        assert!(c.validate().unwrap_err().to_string().contains("gamma"));
        RunConfig::default().validate().unwrap();
    }
}
