//! The run configuration: one typed RON file (assets/runs/*.ron) with documented defaults,
//! command-line overrides (`--set key=value` for any field), one `validate()`. The resolved
//! configuration is saved in the run directory. `validate()` and its limits are in
//! `validate.rs`, the `--set` editing in `set.rs`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::critic::Device;

mod set;
pub mod sweep;
mod validate;

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

impl NetworkKind {
    fn is_mlp(&self) -> bool {
        *self == NetworkKind::Mlp
    }
}

/// The fields the saved form leaves out while they hold their default (so that runs saved
/// before they existed resume unchanged); `--set` still reaches them.
const OMITTED_WHEN_DEFAULT: [&str; 4] = ["network", "gru_hidden", "memory_window", "burn_in"];

fn is_zero(v: &usize) -> bool {
    *v == 0
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

/// Everything a training run needs. Defaults follow the PQN reference (MinAtar) scaled to this
/// machine.
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
    /// Independent replicas trained together (PQN, IQL), seeds seed..seed + seeds (with a sweep:
    /// every grid point runs each seed).
    pub seeds: usize,
    /// Hyperparameter sweep: per-network scalars and the values each takes, e.g.
    /// `sweep: {"lr": [1e-3, 5e-4], "gamma": [0.99, 0.95]}`; every combination x `seeds` is a
    /// replica of one network stack (see `train::sweep`). Empty: no sweep.
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
    /// Passes over each rollout (PQN) or over each sampled batch (PR2-IQL; `num_epochs` is
    /// accepted too).
    #[serde(alias = "num_epochs")]
    pub epochs: usize,
    /// Minibatches per epoch.
    pub minibatches: usize,
    /// Learning rate (start of the linear decay when `lr_decay`).
    pub lr: f32,
    /// Decay the learning rate linearly to 0 over the run.
    pub lr_decay: bool,
    /// Scale `lr` with the effective batch against `reference_batch` (`none`, `linear`,
    /// `sqrt`); the batch is PQN's rows per network per minibatch (`arenas x rollout /
    /// minibatches`), IQL's `batch_size`, PR2-IQL's `buffer_batch_size x rollout`.
    pub lr_scale: LrScale,
    /// The effective batch `lr` was tuned at (needed when `lr_scale` is not `none`).
    pub reference_batch: usize,
    /// Discount.
    pub gamma: f32,
    /// Lambda of the lambda-returns.
    pub lambda: f32,
    /// Exploration at the start.
    pub eps_start: f32,
    /// Exploration after the decay.
    pub eps_finish: f32,
    /// Fraction of the updates over which exploration decays linearly.
    pub eps_fraction: f32,
    /// Global gradient norm per network.
    pub max_grad_norm: f32,
    /// PQN and IQL: the value loss (`default`: MSE for PQN, Huber for IQL).
    pub loss: ValueLoss,
    /// Huber's threshold (`loss: huber`, and IQL's default loss).
    pub huber_delta: f32,
    /// `loss: hl_gauss`: logits per action (the support's bins).
    pub bins: usize,
    /// `loss: hl_gauss`: lower end of the value support (targets below are clipped).
    pub v_min: f32,
    /// `loss: hl_gauss`: upper end of the value support (targets above are clipped).
    pub v_max: f32,
    /// `loss: hl_gauss`: standard deviation of the target's normal; 0 picks 0.75 bin widths.
    pub sigma: f32,
    /// RAdam instead of Adam.
    pub radam: bool,
    /// Start every arena's first episode at a random step count (uniform in `[0, max_steps)`,
    /// from the arena's own spawn stream) so episode ends, and their bootstrap targets, spread
    /// over updates instead of arriving in lockstep; `false` starts every arena at step 0.
    /// Default `true`. Evaluation always uses fresh synchronised arenas.
    pub desync_episodes: bool,
    /// Hidden width of the Q-networks.
    pub hidden: usize,
    /// Hidden layers of the Q-networks (1 with `network: gru`: its embedding).
    pub layers: usize,
    /// The Q-networks: `mlp`, or `gru`, a recurrent network whose hidden state each agent
    /// carries through its episode (see `docs/algorithms.md`, "GRU critic").
    #[serde(skip_serializing_if = "NetworkKind::is_mlp")]
    pub network: NetworkKind,
    /// `network: gru`: the cell's hidden-state width; 0 takes `hidden`.
    #[serde(skip_serializing_if = "is_zero")]
    pub gru_hidden: usize,
    /// PQN with `network: gru`: the last this many steps of each rollout are kept and replayed
    /// before the next rollout's steps in training, from the hidden state stored when they were
    /// acted, to warm the hidden state up (burn-in: no loss on them); at most `rollout`, 0 for
    /// none.
    #[serde(skip_serializing_if = "is_zero")]
    pub memory_window: usize,
    /// IQL and PR2-IQL with `network: gru`: replayed sequences of `rollout` steps start with
    /// this many burn-in steps that only warm the hidden state up (R2D2); less than `rollout`.
    #[serde(skip_serializing_if = "is_zero")]
    pub burn_in: usize,
    /// One network shared by every learner (with the learner's index as an extra input) instead
    /// of one per learner.
    pub shared: bool,
    /// Train opponent models beside the learner: each learner predicts every other learner's
    /// action from its own observation (PR2-IQL: and its own action, the conditional form);
    /// every replica has its own; accuracy and log-loss are logged, per replica with seeds or a
    /// sweep.
    pub opponent_models: bool,
    /// PR2-IQL: the critic's form.
    pub critic: CriticForm,
    /// PR2-IQL: rank of the pairwise terms (0: full `A x A` tables).
    pub pair_rank: usize,
    /// PR2-IQL: the opponent-conditional policy used for expectations (`model` needs
    /// `opponent_models: true`).
    pub rho: RhoForm,
    /// PR2-IQL: whole replayed sequences of `rollout` steps per learner step (each learner
    /// step trains `epochs` times on `buffer_batch_size x rollout x learners` rows).
    pub buffer_batch_size: usize,
    /// IQL: replay capacity in transitions (rows). PR2-IQL counts its replay, `min_replay`
    /// and the rate limiter in arena-steps (one step of one arena with all its learners), and
    /// holds `replay_capacity / rollout` whole sequences.
    pub replay_capacity: usize,
    /// IQL: rows per learner step (with `network: gru`, whole sequences of `rollout` steps).
    pub batch_size: usize,
    /// IQL: samples per inserted row (the rate limiter's SPI).
    pub samples_per_insert: f64,
    /// IQL: rows in the replay before learning starts (min_size_to_sample).
    pub min_replay: u64,
    /// IQL: the rate limiter's error buffer (0 picks the smallest the loop accepts).
    pub rate_error_buffer: f64,
    /// IQL: Polyak factor of the target update after every learner step.
    pub target_tau: f32,
    /// IQL: newest rows always in each minibatch (combined experience replay). PR2-IQL: any
    /// value above 0 puts the newest sequence in every batch.
    pub cer: usize,
    /// IQL: run the actor (arenas, acting) and the learner on separate threads, coordinated
    /// by the rate limiter with bounded waits.
    pub threaded: bool,
    /// IQL threaded: longest wait for the rate limiter before the run stops with a report of
    /// which bound held it, in seconds.
    pub wait_seconds: f64,
    /// Save a checkpoint every this many updates (and at the end).
    pub checkpoint_every: u64,
    /// Checkpoints kept (older ones are deleted).
    pub keep_checkpoints: usize,
    /// IQL and PR2-IQL: checkpoints hold the replay (and the rate limiter's counters), so a
    /// resume continues bit for bit; `false` keeps checkpoints small, and a resumed run then
    /// refills its replay and says the resume is approximate.
    pub checkpoint_replay: bool,
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
            epochs: 2,
            minibatches: 8,
            lr: 5e-4,
            lr_decay: true,
            lr_scale: LrScale::None,
            reference_batch: 0,
            gamma: 0.99,
            lambda: 0.65,
            eps_start: 1.0,
            eps_finish: 0.05,
            eps_fraction: 0.1,
            max_grad_norm: 10.0,
            loss: ValueLoss::Default,
            huber_delta: 1.0,
            bins: 51,
            v_min: -10.0,
            v_max: 10.0,
            sigma: 0.0,
            radam: true,
            desync_episodes: true,
            hidden: 128,
            layers: 2,
            network: NetworkKind::Mlp,
            gru_hidden: 0,
            memory_window: 0,
            burn_in: 0,
            shared: false,
            opponent_models: false,
            critic: CriticForm::Factorized,
            pair_rank: 0,
            rho: RhoForm::Soft,
            buffer_batch_size: 4,
            replay_capacity: 100_000,
            batch_size: 256,
            samples_per_insert: 1.0,
            min_replay: 2_000,
            rate_error_buffer: 0.0,
            target_tau: 0.01,
            cer: 8,
            threaded: false,
            wait_seconds: 30.0,
            checkpoint_every: 50,
            keep_checkpoints: 3,
            checkpoint_replay: true,
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
        Ok(batch)
    }

    /// Reads a configuration file.
    pub fn load(path: &Path) -> Result<RunConfig, ConfigError> {
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
        RunConfig::parse(text, &file)
    }

    /// Parses configuration text; a syntax error names `file:line:column`.
    pub fn parse(text: &str, file: &str) -> Result<RunConfig, ConfigError> {
        crate::scenario::ron_options()
            .from_str(text)
            .map_err(|e| ConfigError::At {
                file: file.to_string(),
                line: e.span.start.line,
                column: e.span.start.col,
                message: e.code.to_string(),
            })
    }

    /// Parses and validates configuration text: every refusal names `file:line:column` (a
    /// value out of range, at its field; a field left out, at the start of the text).
    pub fn parse_valid(text: &str, file: &str) -> Result<RunConfig, ConfigError> {
        let cfg = RunConfig::parse(text, file)?;
        cfg.validate().map_err(|e| match e {
            ConfigError::Invalid { field, message } => {
                let map = crate::scenario::locate::SourceMap::scan(text);
                let path: Vec<_> = field
                    .split('.')
                    .map(|f| crate::scenario::locate::PathSeg::Field(f.to_string()))
                    .collect();
                let at = map.find_or_parent(&path);
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

    /// Renders the configuration as RON.
    pub fn to_ron(&self) -> String {
        ron::ser::to_string_pretty(self, crate::scenario::ron_pretty())
            .unwrap_or_else(|e| format!("/* cannot serialise config: {e} */"))
    }

    /// The GRU cell's hidden-state width (`gru_hidden`, or `hidden` when 0).
    pub fn gru_width(&self) -> usize {
        if self.gru_hidden == 0 {
            self.hidden
        } else {
            self.gru_hidden
        }
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

    /// Derived: the batch `lr_scale` scales with: the rows one network's gradient averages over
    /// per optimiser step (PQN: `arenas x rollout / minibatches`; IQL: `batch_size`; PR2-IQL:
    /// `buffer_batch_size x rollout`).
    pub fn effective_batch(&self) -> usize {
        match self.algo {
            Algo::Pqn => self.arenas * self.rollout / self.minibatches.max(1),
            Algo::Iql => self.batch_size,
            Algo::Pr2Iql => self.buffer_batch_size * self.rollout,
            Algo::OnlineDqn => self.arenas * self.rollout / self.minibatches.max(1),
        }
    }

    /// Derived: updates in the run.
    pub fn updates(&self) -> u64 {
        self.total_steps / self.steps_per_update()
    }
}
