//! `RunConfig::validate`, which checks every field's range and the combinations the algorithms
//! refuse (a refusal names the field), and the `MAX_*` limits it checks against (re-exported
//! as `config::MAX_*`).

use super::{Algo, ConfigError, CriticForm, LrScale, NetworkKind, RhoForm, RunConfig, ValueLoss};

/// Largest `arenas`.
pub const MAX_ARENAS: usize = 1 << 20;
/// Largest `rollout` (steps per rollout).
pub const MAX_ROLLOUT: usize = 1 << 16;
/// Largest `epochs` (of every section that has one).
pub const MAX_EPOCHS: usize = 10_000;
/// Largest `network.hidden` (and `pr2.pair_rank`).
pub const MAX_HIDDEN: usize = 1 << 14;
/// Largest `keep_checkpoints`.
pub const MAX_KEEP_CHECKPOINTS: usize = 10_000;
/// Largest `seeds`.
pub const MAX_SEEDS: usize = 1024;
/// Largest `iql.batch_size`, `pr2.buffer_batch_size` and `iql.cer`.
pub const MAX_BATCH: usize = 1 << 20;
/// Largest `learn.bins` of an HL-Gauss head.
pub const MAX_BINS: usize = 1024;
/// Largest `iql.replay_capacity` and `iql.min_replay` (rows).
pub const MAX_REPLAY: usize = 1 << 31;
/// Largest QMIX mixing layer (`qmix.embed`).
pub const MAX_MIXER: usize = 1024;

impl RunConfig {
    /// The network's fields: `layers: 1` and a bounded width for a GRU, and the sequence
    /// fields only where they apply.
    fn validate_network(&self) -> Result<(), ConfigError> {
        let bad = |field, message: String| Err(ConfigError::Invalid { field, message });
        let net = &self.network;
        if net.kind == NetworkKind::Mlp {
            for (field, v) in [
                ("network.gru_hidden", net.gru_hidden),
                ("network.memory_window", net.memory_window),
                ("network.burn_in", net.burn_in),
            ] {
                if v != 0 {
                    return bad(field, format!("{v} needs network.kind: gru"));
                }
            }
            return Ok(());
        }
        if net.layers != 1 {
            return bad(
                "network.layers",
                format!(
                    "{} with network.kind: gru; its one embedding layer feeds the cell: set \
                     network.layers: 1",
                    net.layers
                ),
            );
        }
        if net.gru_hidden > MAX_HIDDEN {
            return bad(
                "network.gru_hidden",
                format!(
                    "{}; between 1 and {MAX_HIDDEN} (0 takes network.hidden)",
                    net.gru_hidden
                ),
            );
        }
        if net.memory_window > self.rollout {
            return bad(
                "network.memory_window",
                format!(
                    "{} is more than rollout {}; the kept window is the end of one rollout",
                    net.memory_window, self.rollout
                ),
            );
        }
        if net.memory_window > 0 && self.algo != Algo::Pqn {
            return bad(
                "network.memory_window",
                format!(
                    "{} applies to algo pqn; IQL and PR2-IQL warm up with network.burn_in",
                    net.memory_window
                ),
            );
        }
        if net.burn_in > 0 && (self.algo == Algo::Pqn || net.burn_in >= self.rollout) {
            return bad(
                "network.burn_in",
                format!(
                    "{}: IQL and PR2-IQL only (PQN uses network.memory_window), and less than \
                     rollout {}",
                    net.burn_in, self.rollout
                ),
            );
        }
        Ok(())
    }

    /// Checks what the algorithm needs of the scenario, which has `learners` learner slots per
    /// arena (before a run creates anything).
    pub fn validate_for(&self, learners: usize) -> Result<(), ConfigError> {
        if matches!(self.algo, Algo::AdvantageAlignment | Algo::Loqa) && learners < 2 {
            return Err(ConfigError::Invalid {
                field: "algo",
                message: format!(
                    "{} shapes each learner's advantage with the others': the scenario has \
                     {learners} learner slot per arena, and it needs at least 2",
                    super::keys::algo_name(self.algo)
                ),
            });
        }
        Ok(())
    }

    /// Checks every value.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, message: String| Err(ConfigError::Invalid { field, message });
        let beta = self.alignment.beta;
        if !beta.is_finite() || beta < 0.0 {
            return bad(
                "alignment.beta",
                format!("{beta}: a finite weight, 0 or more (0 is plain IPPO)"),
            );
        }
        let q = &self.loqa;
        if !q.weight.is_finite() || q.weight < 0.0 {
            return bad(
                "loqa.weight",
                format!("{}: a finite weight, 0 or more (0 is plain IPPO)", q.weight),
            );
        }
        if !q.temperature.is_finite() || q.temperature <= 0.0 {
            return bad(
                "loqa.temperature",
                format!("{}: a finite temperature above 0", q.temperature),
            );
        }
        if !(0.0..=1.0).contains(&q.discount) {
            return bad(
                "loqa.discount",
                format!("{}: a discount in [0, 1]", q.discount),
            );
        }
        if self.name.is_empty() || self.name.contains('/') {
            return bad(
                "name",
                format!("{:?}: a non-empty name without '/'", self.name),
            );
        }
        if let Some(s) = &self.reward_shaping {
            if !(s.start.is_finite() && s.end.is_finite()) {
                return bad(
                    "reward_shaping",
                    format!("start {} and end {}: finite scales", s.start, s.end),
                );
            }
            if s.steps == 0 {
                return bad("reward_shaping", "steps is 0; at least 1".into());
            }
        }
        if let Some(p) = &self.population {
            if p.slots.is_empty() {
                return bad(
                    "population",
                    "slots is empty; name the slots it acts for".into(),
                );
            }
            if p.opponents.is_none() && p.snapshot_every == 0 {
                return bad(
                    "population",
                    "no members: give `opponents` (a population) or `snapshot_every` > 0 (self-play)"
                        .into(),
                );
            }
            if p.snapshot_every > 0 && !(1..=256).contains(&p.max_snapshots) {
                return bad(
                    "population",
                    format!("max_snapshots {}: 1 to 256", p.max_snapshots),
                );
            }
            if let Err(why) = p.sampling.check(None) {
                return bad("population", why);
            }
            let on_policy = matches!(self.algo, Algo::Ippo | Algo::Mappo);
            if !on_policy && !matches!(self.algo, Algo::Pqn | Algo::Iql | Algo::OnlineDqn) {
                return bad(
                    "population",
                    format!(
                        "algo {}: a population plays beside the independent learners only: the value learners pqn, iql and online-dqn (which learn its slots off-policy) and ippo and mappo (which leave its slots out of the loss)",
                        super::keys::algo_name(self.algo)
                    ),
                );
            }
            if on_policy && p.snapshot_every > 0 && !self.network.shared {
                return bad(
                    "population",
                    format!(
                        "self-play with algo {} needs network.shared: true: the population's slots are left out of the loss, so with one network per slot their networks, and the snapshots taken of them, would never learn",
                        super::keys::algo_name(self.algo)
                    ),
                );
            }
        }
        // Every field that sizes a tensor or a loop, with the range it may take: the products
        // computed from them below and in the memory preflight then cannot overflow.
        // Every section's, whichever algorithm reads it.
        for (field, v, max) in [
            ("arenas", self.arenas, MAX_ARENAS),
            ("rollout", self.rollout, MAX_ROLLOUT),
            ("pqn.epochs", self.pqn.epochs, MAX_EPOCHS),
            ("pqn.minibatches", self.pqn.minibatches, usize::MAX),
            ("pr2.epochs", self.pr2.epochs, MAX_EPOCHS),
            ("pr2.minibatches", self.pr2.minibatches, usize::MAX),
            ("online_dqn.epochs", self.online_dqn.epochs, MAX_EPOCHS),
            (
                "online_dqn.minibatches",
                self.online_dqn.minibatches,
                usize::MAX,
            ),
            ("ppo.epochs", self.ppo.epochs, MAX_EPOCHS),
            ("ppo.minibatches", self.ppo.minibatches, usize::MAX),
            ("network.hidden", self.network.hidden, MAX_HIDDEN),
            (
                "network.layers",
                self.network.layers,
                crate::critic::MAX_LAYERS,
            ),
            (
                "keep_checkpoints",
                self.keep_checkpoints,
                MAX_KEEP_CHECKPOINTS,
            ),
            ("seeds", self.seeds, MAX_SEEDS),
            ("pr2.pair_rank", self.pr2.pair_rank.max(1), MAX_HIDDEN),
            ("iql.batch_size", self.iql.batch_size.max(1), MAX_BATCH),
            (
                "pr2.buffer_batch_size",
                self.pr2.buffer_batch_size.max(1),
                MAX_BATCH,
            ),
            (
                "iql.replay_capacity",
                self.iql.replay_capacity.max(1),
                MAX_REPLAY,
            ),
            ("iql.cer", self.iql.cer.max(1), MAX_BATCH),
            ("qmix.embed", self.qmix.embed, MAX_MIXER),
            ("qmix.hyper_hidden", self.qmix.hyper_hidden, MAX_HIDDEN),
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
        if self.iql.min_replay > MAX_REPLAY as u64 {
            return bad(
                "iql.min_replay",
                format!("{}; at most {MAX_REPLAY}", self.iql.min_replay),
            );
        }
        // The minibatches of the section the algorithm reads (IQL reads none).
        let minibatches = match self.algo {
            Algo::Pqn | Algo::PqnVdn => Some(("pqn.minibatches", self.pqn.minibatches)),
            Algo::Pr2Iql => Some(("pr2.minibatches", self.pr2.minibatches)),
            Algo::OnlineDqn => Some(("online_dqn.minibatches", self.online_dqn.minibatches)),
            Algo::Ippo | Algo::Mappo | Algo::AdvantageAlignment | Algo::Loqa => {
                Some(("ppo.minibatches", self.ppo.minibatches))
            }
            Algo::Iql | Algo::Vdn | Algo::Qmix => None,
        };
        if let Some((field, minibatches)) = minibatches
            && minibatches > self.arenas * self.rollout
        {
            return bad(
                field,
                format!(
                    "{} minibatches of {} x {} rollout rows; at most one per row",
                    minibatches, self.arenas, self.rollout
                ),
            );
        }
        for (field, v) in [
            ("learn.gamma", self.learn.gamma),
            ("pqn.lambda", self.pqn.lambda),
            ("learn.eps_start", self.learn.eps_start),
            ("learn.eps_finish", self.learn.eps_finish),
            ("learn.eps_fraction", self.learn.eps_fraction),
            ("ppo.gae_lambda", self.ppo.gae_lambda),
            ("ppo.clip", self.ppo.clip),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(field, format!("{v}; a number in [0, 1]"));
            }
        }
        for (field, v) in [
            ("ppo.ent_coef", self.ppo.ent_coef),
            ("ppo.vf_coef", self.ppo.vf_coef),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(field, format!("{v}; a finite number at least 0"));
            }
        }
        if self.seeds == 0 {
            return bad("seeds", "0; at least 1".into());
        }
        let (iql, pr2) = (&self.iql, &self.pr2);
        if iql.threaded && self.replica_count() > 1 {
            return bad(
                "iql.threaded",
                format!(
                    "true with {} replicas (seeds x sweep grid points): the replicas learn in \
                     lockstep on one thread; use iql.threaded: false",
                    self.replica_count()
                ),
            );
        }
        // PQN, IQL and PR2-IQL give every replica its own models; the threaded learner has
        // no models.
        if self.learn.opponent_models && iql.threaded {
            return bad(
                "learn.opponent_models",
                "true needs iql.threaded false".into(),
            );
        }
        if self.algo == Algo::Pr2Iql {
            if iql.threaded || self.network.shared {
                return bad(
                    if iql.threaded {
                        "iql.threaded"
                    } else {
                        "network.shared"
                    },
                    "true is not available with algo pr2_iql (one network per learner, one thread)"
                        .into(),
                );
            }
            if pr2.rho == RhoForm::Model && !self.learn.opponent_models {
                return bad(
                    "pr2.rho",
                    "model needs learn.opponent_models: true (or use pr2.rho: soft)".into(),
                );
            }
            if pr2.critic == CriticForm::Joint && pr2.pair_rank > 0 {
                return bad(
                    "pr2.pair_rank",
                    format!(
                        "{} with pr2.critic: joint; pair_rank applies to critic: factorized only",
                        pr2.pair_rank
                    ),
                );
            }
            if pr2.buffer_batch_size == 0 {
                return bad("pr2.buffer_batch_size", "0; at least 1 sequence".into());
            }
            let sequence_rows = self.rollout as u64;
            let sequences = iql.replay_capacity as u64 / sequence_rows.max(1);
            if sequences < pr2.buffer_batch_size as u64 {
                return bad(
                    "iql.replay_capacity",
                    format!(
                        "{} rows hold {sequences} sequences of {} steps; at least \
                         pr2.buffer_batch_size {} needed",
                        iql.replay_capacity, self.rollout, pr2.buffer_batch_size
                    ),
                );
            }
        }
        if self.algo == Algo::Iql {
            if iql.batch_size == 0 || iql.cer >= iql.batch_size {
                return bad(
                    "iql.cer",
                    format!(
                        "{} newest rows in batches of {}; fewer than iql.batch_size",
                        iql.cer, iql.batch_size
                    ),
                );
            }
            if (iql.replay_capacity as u64) < iql.min_replay.max(iql.batch_size as u64) {
                return bad(
                    "iql.replay_capacity",
                    format!(
                        "{} is below iql.min_replay {} or iql.batch_size {}",
                        iql.replay_capacity, iql.min_replay, iql.batch_size
                    ),
                );
            }
            if !(iql.target_tau > 0.0 && iql.target_tau <= 1.0) {
                return bad(
                    "iql.target_tau",
                    format!("{}; a number in (0, 1]", iql.target_tau),
                );
            }
        }
        let learn = &self.learn;
        if !(learn.lr > 0.0 && learn.lr.is_finite()) {
            return bad("learn.lr", format!("{}; a positive number", learn.lr));
        }
        if learn.lr_scale != LrScale::None && learn.reference_batch == 0 {
            return bad(
                "learn.reference_batch",
                format!(
                    "0 with learn.lr_scale {:?}; set the effective batch lr was tuned at (this \
                     run's is {})",
                    learn.lr_scale,
                    self.effective_batch()
                ),
            );
        }
        if learn.max_grad_norm.is_nan() || learn.max_grad_norm <= 0.0 {
            return bad(
                "learn.max_grad_norm",
                format!("{}; a positive number", learn.max_grad_norm),
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
        let l = &self.learn;
        if !(l.huber_delta > 0.0 && l.huber_delta.is_finite()) {
            return bad(
                "learn.huber_delta",
                format!("{}; a positive number", l.huber_delta),
            );
        }
        if l.loss == ValueLoss::Default {
            return Ok(());
        }
        if l.loss != ValueLoss::HlGauss {
            return Ok(());
        }
        if !(2..=MAX_BINS).contains(&l.bins) {
            return bad(
                "learn.bins",
                format!("{}; between 2 and {MAX_BINS}", l.bins),
            );
        }
        if !(l.v_min.is_finite() && l.v_max.is_finite()) {
            return bad(
                if l.v_min.is_finite() {
                    "learn.v_max"
                } else {
                    "learn.v_min"
                },
                format!("[{}, {}]; finite numbers", l.v_min, l.v_max),
            );
        }
        if l.v_min >= l.v_max {
            return bad(
                "learn.v_max",
                format!(
                    "{} is not above learn.v_min {}; the support needs v_min < v_max",
                    l.v_max, l.v_min
                ),
            );
        }
        if !(l.sigma >= 0.0 && l.sigma.is_finite()) {
            return bad(
                "learn.sigma",
                format!("{}; a positive number, or 0 for 0.75 bin widths", l.sigma),
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
        let mut c = RunConfig::default();
        c.learn.gamma = 1.5;
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("`learn.gamma`")
        );
        RunConfig::default().validate().unwrap();
    }
}
