//! The run configuration: one typed RON file (assets/runs/*.ron) with documented defaults,
//! command-line overrides (`--set key=value` for any field, by dotted path or bare name), one
//! `validate()`. A configuration is a few common run fields and one section per concern
//! (`network`, `learn`, `pqn`, `iql`, `pr2`, `online_dqn`, in `sections.rs`); the resolved
//! configuration is saved in the run directory in that form. The old flat form still loads
//! (`migrate.rs`). `validate()` and its limits are in `validate.rs`, the `--set` editing in
//! `set.rs`, the key table and how a key names a field in `keys.rs`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::critic::Device;

pub(crate) mod keys;
mod migrate;
mod sections;
mod set;
pub mod sweep;
mod validate;

pub use migrate::Moved;
pub use sections::{
    AlignmentConfig, IqlConfig, LearnConfig, LoqaConfig, NetworkConfig, OnlineDqnConfig, PpoConfig,
    PqnConfig, Pr2Config, QmixConfig,
};
pub use validate::{
    MAX_ARENAS, MAX_BATCH, MAX_BINS, MAX_EPOCHS, MAX_HIDDEN, MAX_KEEP_CHECKPOINTS, MAX_REPLAY,
    MAX_ROLLOUT, MAX_SEEDS,
};

/// The learning algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Algo {
    /// PQN: vectorised arenas, lambda-returns, no replay, no target network.
    Pqn,
    /// Independent DQN per learner: replay with combined experience replay, target networks,
    /// a rate limiter.
    Iql,
    /// PR2-IQL with combined experience replay: a pairwise-factorised opponent-aware critic
    /// over replayed sequences, bootstrapping from `max_{a_i} E_rho[Q_i]`.
    Pr2Iql,
    /// Online DQN: PQN's rollouts and epochs with one-step targets from a target network
    /// (`target_tau`), no replay.
    OnlineDqn,
    /// IPPO: independent PPO learners (a categorical policy and a value network per learner
    /// slot, or one of each shared), GAE, the clipped surrogate, minibatch epochs.
    Ippo,
    /// MAPPO: IPPO's learners with a centralised value network that reads the arena's global
    /// state (and the learner's one-hot index when shared) instead of the observation.
    Mappo,
    /// PQN-VDN: PQN's rollouts and lambda-returns on the team's value, the sum of the
    /// learners' Q-values (VDN), with the team's summed reward.
    PqnVdn,
    /// VDN as a replay learner: IQL's replay of team transitions, target networks and rate
    /// limiter, trained on the team's value, the sum of the learners' Q-values.
    Vdn,
    /// QMIX: VDN's replay learner with a monotonic mixing network whose weights come from
    /// hypernetworks over the arena's global state (`qmix` section).
    Qmix,
    /// Advantage Alignment (opponent shaping): IPPO's learners with each learner's advantage
    /// reweighted by its past advantages times the other learners' current ones (`alignment`
    /// section).
    AdvantageAlignment,
    /// LOQA (opponent shaping through the opponents' action-values): IPPO's learners with each
    /// learner's advantage rewritten by the gradient of LOQA's opponent loss (`loqa` section).
    Loqa,
}

/// How PR2-IQL represents `Q_i(s, a_i, a_-i)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum CriticForm {
    /// `f_i(s, a_i) + sum_j f_ij(s, a_i, a_j)`: `A + (N-1) A^2` outputs per row (or
    /// `A + 2 (N-1) A k` with `pair_rank: k`).
    Factorized,
    /// Every joint action: `A^N` outputs per row. Small games only; the preflight decides.
    Joint,
}

/// PR2-IQL's opponent-conditional policy `rho_-i(a_-i | s, a_i)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum RhoForm {
    /// The soft-optimal rho of the critic itself, `softmax_{a_j} f_ij(s, a_i, .)` (PR2's
    /// level-1 reasoning; exact from the factors).
    Soft,
    /// The learned conditional opponent model `m_ij(a_j | o_i, a_i)`, trained on replay.
    Model,
}

/// How the learning rate follows the effective batch (`lr_scale`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LrScale {
    /// `lr` as given.
    None,
    /// `lr x batch / reference_batch`.
    Linear,
    /// `lr x sqrt(batch / reference_batch)`.
    Sqrt,
}

/// A hyperparameter sweep's grid: each swept key with its values (RON values, as a `--set`
/// would read them); expanded into replicas by `train::sweep`.
pub type Sweep = std::collections::BTreeMap<String, Vec<ron::Value>>;

/// The Q-networks' kind (see `docs/algorithms.md`, "GRU critic").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum NetworkKind {
    /// `layers` x (Linear -> LayerNorm -> ReLU), then a linear head.
    #[default]
    Mlp,
    /// Linear -> LayerNorm -> ReLU (`hidden` wide), a GRU cell of `gru_hidden` units carried
    /// from step to step (zeroed when an episode starts), then a linear head; `layers: 1`.
    Gru,
}

/// The value loss of PQN and IQL (see `docs/algorithms.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ValueLoss {
    /// Each algorithm's own: MSE for PQN, Huber (`huber_delta`) for IQL and PR2-IQL.
    Default,
    /// `0.5 (Q(s, a) - y)^2`.
    Mse,
    /// Huber with threshold `huber_delta`.
    Huber,
    /// HL-Gauss cross-entropy ("Stop Regressing"): `bins` logits per action over
    /// `[v_min, v_max]`, Q the histogram's expectation.
    HlGauss,
}

/// A linear schedule for the scale of the substrate's shaped reward terms (overcooked's
/// placement, plate and soup rewards): `start` at environment step 0, `end` from `steps` on,
/// linear between, as JaxMARL's `REW_SHAPING_HORIZON` anneal. Each step's reward is
/// `sparse + scale * shaped`; substrates without shaped terms ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardShaping {
    /// Scale at the start of training.
    pub start: f32,
    /// Scale once `steps` environment steps are done.
    pub end: f32,
    /// Environment steps (arena-steps) over which the scale moves from `start` to `end`.
    pub steps: u64,
}

impl RewardShaping {
    /// The scale after `env_steps` environment steps.
    pub fn at(&self, env_steps: u64) -> f32 {
        let frac = (env_steps as f64 / self.steps.max(1) as f64).min(1.0) as f32;
        self.start + (self.end - self.start) * frac
    }
}

/// The algorithm's name as configs and the command line write it (`pqn`, `ippo`, ...).
pub fn algo_label(algo: Algo) -> &'static str {
    keys::algo_name(algo)
}

/// Training against a population (`population: Some((slots: [1], ...))`): the population acts
/// for `slots` in every arena instead of the learner, one member per arena drawn at every
/// episode start by `sampling`. Its members are the frozen population `opponents` (a manifest
/// or a run directory) and, with `snapshot_every > 0`, snapshots of the run's own networks
/// (self-play against past checkpoints), the newest `max_snapshots` kept. The learner still
/// learns from every slot's transitions (off-policy for the population's slots), so only the
/// value learners take it: `pqn`, `iql`, `online-dqn`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PopulationTraining {
    /// The learner slots the population acts for.
    pub slots: Vec<usize>,
    /// A frozen population: manifest file or run directory.
    #[serde(default)]
    pub opponents: Option<PathBuf>,
    /// Add a snapshot of the learner's networks every this many updates (0: no self-play).
    #[serde(default)]
    pub snapshot_every: u64,
    /// Snapshots kept (the oldest is dropped).
    #[serde(default = "default_max_snapshots")]
    pub max_snapshots: usize,
    /// How each arena draws its member.
    #[serde(default)]
    pub sampling: crate::population::Sampling,
}

fn default_max_snapshots() -> usize {
    8
}

/// Everything a training run needs: the run's common fields, then one section for the
/// network, one for what every value learner reads and one per algorithm. Defaults follow the
/// PQN reference (MinAtar) scaled to this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// Run name (kept in the run's config.ron); without `--out` a run goes to a new
    /// directory named from its scenario, algorithm, seed and start time.
    pub name: String,
    /// Scenario file; the embedded default Pursuit scenario when absent.
    pub scenario: Option<PathBuf>,
    /// Algorithm.
    pub algo: Algo,
    /// Run seed (replica r of a multi-seed run uses seed + r).
    pub seed: u64,
    /// Independent replicas trained together, seeds seed..seed + seeds (with a sweep: every
    /// grid point runs each seed).
    pub seeds: usize,
    /// Hyperparameter sweep: per-network scalars and the values each takes, e.g.
    /// `sweep: {"learn.lr": [1e-3, 5e-4], "gamma": [0.99, 0.95]}` (keys as `--set` takes
    /// them); every combination x `seeds` is a replica of one network stack (see
    /// `train::sweep`). Empty: no sweep.
    pub sweep: Sweep,
    /// Replicas `first..end` of the run's (grid points x seeds) only: one rank's share of a
    /// job that splits its replicas over ranks. Set by training; never read from or written to
    /// a file.
    #[serde(skip)]
    pub replica_shard: Option<(usize, usize)>,
    /// Compute device for the critic.
    pub device: Device,
    /// Environment steps to train for (arena-steps: arenas x steps per rollout x updates).
    pub total_steps: u64,
    /// Arenas stepped together (B).
    pub arenas: usize,
    /// Steps per arena per rollout (T; `num_steps` is accepted too).
    #[serde(alias = "num_steps")]
    pub rollout: usize,
    /// Start every arena's first episode at a random step count (uniform in `[0, max_steps)`,
    /// from the arena's own spawn stream) so episode ends, and their bootstrap targets, spread
    /// over updates instead of arriving in lockstep; `false` starts every arena at step 0.
    /// Default `true`. Evaluation always uses fresh synchronised arenas.
    pub desync_episodes: bool,
    /// Anneal the substrate's shaped reward terms: `Some((start: 1.0, end: 0.0, steps: N))`
    /// (see [`RewardShaping`]); absent, the scale stays 1.0. Evaluation uses the scale 1.0.
    pub reward_shaping: Option<RewardShaping>,
    /// Train against a population or past snapshots of the run ([`PopulationTraining`]).
    pub population: Option<PopulationTraining>,
    /// Save a checkpoint every this many updates (and at the end).
    pub checkpoint_every: u64,
    /// Checkpoints kept (older ones are deleted).
    pub keep_checkpoints: usize,
    /// Also keep, beyond the newest `keep_checkpoints`, every checkpoint whose update is a
    /// multiple of this (0: none). Default 0.
    pub keep_every: u64,
    /// IQL and PR2-IQL: checkpoints hold the replay (and the rate limiter's counters), so a
    /// resume continues bit for bit; `false` keeps checkpoints small, and a resumed run then
    /// refills its replay and says the resume is approximate.
    pub checkpoint_replay: bool,
    /// The Q-networks.
    pub network: NetworkConfig,
    /// What every value learner reads: optimiser, discount, value loss, exploration, opponent
    /// models.
    pub learn: LearnConfig,
    /// PQN's own fields.
    pub pqn: PqnConfig,
    /// The replay learners' fields (IQL's; PR2-IQL's replay, rate limiter and target networks).
    pub iql: IqlConfig,
    /// PR2-IQL's own fields.
    pub pr2: Pr2Config,
    /// Online DQN's own fields.
    pub online_dqn: OnlineDqnConfig,
    /// The PPO learners' fields (IPPO's and MAPPO's).
    pub ppo: PpoConfig,
    /// QMIX's mixer.
    pub qmix: QmixConfig,
    /// Advantage Alignment's weight (read by `advantage_alignment`).
    pub alignment: AlignmentConfig,
    /// LOQA's opponent term (read by `loqa`).
    pub loqa: LoqaConfig,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            name: "pqn_pursuit".into(),
            scenario: None,
            algo: Algo::Pqn,
            seed: 0,
            seeds: 1,
            sweep: Sweep::new(),
            replica_shard: None,
            device: Device::Auto,
            total_steps: 4_000_000,
            arenas: 256,
            rollout: 32,
            desync_episodes: true,
            reward_shaping: None,
            population: None,
            checkpoint_every: 50,
            keep_checkpoints: 3,
            keep_every: 0,
            checkpoint_replay: true,
            network: NetworkConfig::default(),
            learn: LearnConfig::default(),
            pqn: PqnConfig::default(),
            iql: IqlConfig::default(),
            pr2: Pr2Config::default(),
            online_dqn: OnlineDqnConfig::default(),
            ppo: PpoConfig::default(),
            qmix: QmixConfig::default(),
            alignment: AlignmentConfig::default(),
            loqa: LoqaConfig::default(),
        }
    }
}

/// A problem with a run configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Unreadable or unparsable file.
    #[error("{file}: {message}")]
    Parse {
        /// The file.
        file: String,
        /// What went wrong, with its position.
        message: String,
    },
    /// A `--set` that does not fit the format.
    #[error("--set {assignment}: {message}")]
    Override {
        /// The assignment as given.
        assignment: String,
        /// Why it was refused.
        message: String,
    },
    /// A problem at a position of a configuration file: a syntax error, or a value out of range
    /// located at its field.
    #[error("{file}:{line}:{column}: {message}")]
    At {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (characters).
        column: usize,
        /// What went wrong.
        message: String,
    },
    /// A value out of range.
    #[error("run config field `{field}`: {message}")]
    Invalid {
        /// Field.
        field: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
}

impl RunConfig {
    /// The arenas a training run starts with: `arenas` fresh arenas seeded with `seed`, their
    /// clocks spread out when `desync_episodes` is on.
    pub(crate) fn training_batch(
        &self,
        loaded: &crate::scenario::LoadedScenario,
        seed: u64,
        job: &crate::dist::Job,
    ) -> Result<crate::engine::EnvBatch, crate::error::EngineError> {
        let first = job.first_arena(self.arenas);
        let mut batch = crate::engine::EnvBatch::new_from(loaded, self.arenas, seed, first)?;
        if self.desync_episodes {
            batch.desync_clocks();
        }
        batch.set_reward_shaping(self.reward_shaping_at(0));
        Ok(batch)
    }

    /// Reads a configuration file, in the sectioned form or the old flat one.
    pub fn load(path: &Path) -> Result<RunConfig, ConfigError> {
        RunConfig::load_with_moves(path).map(|(cfg, _)| cfg)
    }

    /// Reads a configuration file, with the fields it gave in the old flat form and where each
    /// went (none for a file in the sectioned form).
    pub fn load_with_moves(path: &Path) -> Result<(RunConfig, Vec<Moved>), ConfigError> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| ConfigError::Parse {
            file: file.clone(),
            message: e.to_string(),
        })?;
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            let at = crate::scenario::locate::Pos::of_utf8_error(&bytes, &e);
            ConfigError::At {
                file: file.clone(),
                line: at.line,
                column: at.col,
                message: "a byte that is not UTF-8 text".into(),
            }
        })?;
        RunConfig::parse_with_moves(text, &file)
    }

    /// Parses configuration text (sectioned, or the old flat form, migrated); a refusal names
    /// `file:line:column`.
    pub fn parse(text: &str, file: &str) -> Result<RunConfig, ConfigError> {
        RunConfig::parse_with_moves(text, file).map(|(cfg, _)| cfg)
    }

    /// [`RunConfig::parse`], with the fields the text gave in the old flat form and where each
    /// went.
    pub fn parse_with_moves(
        text: &str,
        file: &str,
    ) -> Result<(RunConfig, Vec<Moved>), ConfigError> {
        migrate::parse(text, file)
    }

    /// Parses and validates configuration text: every refusal names `file:line:column` (a
    /// value out of range, at its field, or at its flat name in the old form; a field left
    /// out, at its section or the start of the text).
    pub fn parse_valid(text: &str, file: &str) -> Result<RunConfig, ConfigError> {
        let cfg = RunConfig::parse(text, file)?;
        cfg.validate().map_err(|e| match e {
            ConfigError::Invalid { field, message } => {
                let at = migrate::locate(text, field);
                ConfigError::At {
                    file: file.to_string(),
                    line: at.line,
                    column: at.col,
                    message: format!("field `{field}`: {message}"),
                }
            }
            e => e,
        })?;
        Ok(cfg)
    }

    /// Renders the configuration as RON, in the sectioned form (every field written).
    pub fn to_ron(&self) -> String {
        ron::ser::to_string_pretty(self, crate::scenario::ron_pretty())
            .unwrap_or_else(|e| format!("/* cannot serialise config: {e} */"))
    }

    /// The GRU cell's hidden-state width (`network.gru_hidden`, or `network.hidden` when 0).
    pub fn gru_width(&self) -> usize {
        if self.network.gru_hidden == 0 {
            self.network.hidden
        } else {
            self.network.gru_hidden
        }
    }

    /// The configured algorithm's `(epochs, minibatches)`: its own section's (`pqn`, `pr2`,
    /// `online_dqn` or `ppo`); IQL reads neither and gets PQN's.
    pub fn passes(&self) -> (usize, usize) {
        match self.algo {
            Algo::Pqn | Algo::Iql | Algo::PqnVdn | Algo::Vdn | Algo::Qmix => {
                (self.pqn.epochs, self.pqn.minibatches)
            }
            Algo::Pr2Iql => (self.pr2.epochs, self.pr2.minibatches),
            Algo::OnlineDqn => (self.online_dqn.epochs, self.online_dqn.minibatches),
            Algo::Ippo | Algo::Mappo | Algo::AdvantageAlignment | Algo::Loqa => {
                (self.ppo.epochs, self.ppo.minibatches)
            }
        }
    }

    /// The scale of the shaped reward terms after `env_steps` environment steps (1.0 without
    /// `reward_shaping`).
    pub fn reward_shaping_at(&self, env_steps: u64) -> f32 {
        self.reward_shaping.map_or(1.0, |s| s.at(env_steps))
    }

    /// Derived: environment steps per update.
    pub fn steps_per_update(&self) -> u64 {
        (self.arenas * self.rollout) as u64
    }

    /// Derived: replicas trained together (sweep grid points x seeds, saturating; see
    /// `train::sweep`).
    pub fn replica_count(&self) -> usize {
        match self.replica_shard {
            Some((first, end)) => end.saturating_sub(first),
            None => self.all_replica_count(),
        }
    }

    /// Derived: replicas of the whole run, whatever share [`RunConfig::replica_shard`] takes.
    pub fn all_replica_count(&self) -> usize {
        self.sweep
            .values()
            .fold(self.seeds.max(1), |n, v| n.saturating_mul(v.len()))
    }

    /// Derived: the batch `learn.lr_scale` scales with: the rows one network's gradient
    /// averages over per optimiser step (PQN: `arenas x rollout / pqn.minibatches`; IQL:
    /// `iql.batch_size`; PR2-IQL: `pr2.buffer_batch_size x rollout`; online DQN: `arenas x
    /// rollout / online_dqn.minibatches`; IPPO and MAPPO: `arenas x rollout /
    /// ppo.minibatches`).
    pub fn effective_batch(&self) -> usize {
        match self.algo {
            Algo::Pqn | Algo::PqnVdn => self.arenas * self.rollout / self.pqn.minibatches.max(1),
            Algo::Iql | Algo::Vdn | Algo::Qmix => self.iql.batch_size,
            Algo::Pr2Iql => self.pr2.buffer_batch_size * self.rollout,
            Algo::OnlineDqn => self.arenas * self.rollout / self.online_dqn.minibatches.max(1),
            Algo::Ippo | Algo::Mappo | Algo::AdvantageAlignment | Algo::Loqa => {
                self.arenas * self.rollout / self.ppo.minibatches.max(1)
            }
        }
    }

    /// Derived: updates in the run.
    pub fn updates(&self) -> u64 {
        self.total_steps / self.steps_per_update()
    }
}
