//! The configuration's sections: the network, what every value learner reads (`learn`), and
//! each algorithm's own fields. A file may give a section in part (`learn: (lr: 1e-3)`): the
//! fields it leaves out take their defaults.

use serde::{Deserialize, Serialize};

use super::{CriticForm, LrScale, NetworkKind, RhoForm, ValueLoss};

/// The Q-networks (`network:`): their kind, size and, for a GRU, its memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// The Q-networks: `mlp`, or `gru`, a recurrent network whose hidden state each agent
    /// carries through its episode (see `docs/algorithms.md`, "GRU critic"). The old flat
    /// field `network: gru` (and `--set network=gru`) reaches it too.
    pub kind: NetworkKind,
    /// Hidden width of the Q-networks.
    pub hidden: usize,
    /// Hidden layers of the Q-networks (1 with `kind: gru`: its embedding).
    pub layers: usize,
    /// `kind: gru`: the cell's hidden-state width; 0 takes `hidden`.
    pub gru_hidden: usize,
    /// PQN with `kind: gru`: the last this many steps of each rollout are kept and replayed
    /// before the next rollout's steps in training, from the hidden state stored when they were
    /// acted, to warm the hidden state up (burn-in: no loss on them); at most `rollout`, 0 for
    /// none.
    pub memory_window: usize,
    /// IQL and PR2-IQL with `kind: gru`: replayed sequences of `rollout` steps start with this
    /// many burn-in steps that only warm the hidden state up (R2D2); less than `rollout`.
    pub burn_in: usize,
    /// One network shared by every learner (with the learner's index as an extra input) instead
    /// of one per learner.
    pub shared: bool,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            kind: NetworkKind::Mlp,
            hidden: 128,
            layers: 2,
            gru_hidden: 0,
            memory_window: 0,
            burn_in: 0,
            shared: false,
        }
    }
}

/// What every value learner reads (`learn:`): the optimiser, the discount, the value loss,
/// exploration and the opponent models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnConfig {
    /// Learning rate (start of the linear decay when `lr_decay`).
    pub lr: f32,
    /// Decay the learning rate linearly to 0 over the run.
    pub lr_decay: bool,
    /// Scale `lr` with the effective batch against `reference_batch` (`none`, `linear`,
    /// `sqrt`); the batch is PQN's rows per network per minibatch (`arenas x rollout /
    /// pqn.minibatches`), IQL's `iql.batch_size`, PR2-IQL's `pr2.buffer_batch_size x rollout`.
    pub lr_scale: LrScale,
    /// The effective batch `lr` was tuned at (needed when `lr_scale` is not `none`).
    pub reference_batch: usize,
    /// Discount.
    pub gamma: f32,
    /// Global gradient norm per network.
    pub max_grad_norm: f32,
    /// RAdam instead of Adam.
    pub radam: bool,
    /// The value loss (`default`: MSE for PQN, Huber for IQL and PR2-IQL).
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
    /// Exploration at the start.
    pub eps_start: f32,
    /// Exploration after the decay.
    pub eps_finish: f32,
    /// Fraction of the updates over which exploration decays linearly.
    pub eps_fraction: f32,
    /// Train opponent models beside the learner: each learner predicts every other learner's
    /// action from its own observation (PR2-IQL: and its own action, the conditional form);
    /// every replica has its own; accuracy and log-loss are logged, per replica with seeds or a
    /// sweep.
    pub opponent_models: bool,
}

impl Default for LearnConfig {
    fn default() -> Self {
        LearnConfig {
            lr: 5e-4,
            lr_decay: true,
            lr_scale: LrScale::None,
            reference_batch: 0,
            gamma: 0.99,
            max_grad_norm: 10.0,
            radam: true,
            loss: ValueLoss::Default,
            huber_delta: 1.0,
            bins: 51,
            v_min: -10.0,
            v_max: 10.0,
            sigma: 0.0,
            eps_start: 1.0,
            eps_finish: 0.05,
            eps_fraction: 0.1,
            opponent_models: false,
        }
    }
}

/// PQN's own fields (`pqn:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PqnConfig {
    /// Passes over each rollout (`num_epochs` is accepted too).
    #[serde(alias = "num_epochs")]
    pub epochs: usize,
    /// Minibatches per epoch.
    pub minibatches: usize,
    /// Lambda of the lambda-returns.
    pub lambda: f32,
}

impl Default for PqnConfig {
    fn default() -> Self {
        PqnConfig {
            epochs: 2,
            minibatches: 8,
            lambda: 0.65,
        }
    }
}

/// The replay learners' fields (`iql:`): IQL's, and the replay, rate limiter and target
/// networks of PR2-IQL too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IqlConfig {
    /// Replay capacity in transitions (rows). PR2-IQL counts its replay, `min_replay` and the
    /// rate limiter in arena-steps (one step of one arena with all its learners), and holds
    /// `replay_capacity / rollout` whole sequences.
    pub replay_capacity: usize,
    /// IQL: rows per learner step (with `network.kind: gru`, whole sequences of `rollout`
    /// steps).
    pub batch_size: usize,
    /// Samples per inserted row (the rate limiter's SPI).
    pub samples_per_insert: f64,
    /// Rows in the replay before learning starts (min_size_to_sample).
    pub min_replay: u64,
    /// The rate limiter's error buffer (0 picks the smallest the loop accepts).
    pub rate_error_buffer: f64,
    /// Polyak factor of the target update after every learner step.
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
}

impl Default for IqlConfig {
    fn default() -> Self {
        IqlConfig {
            replay_capacity: 100_000,
            batch_size: 256,
            samples_per_insert: 1.0,
            min_replay: 2_000,
            rate_error_buffer: 0.0,
            target_tau: 0.01,
            cer: 8,
            threaded: false,
            wait_seconds: 30.0,
        }
    }
}

/// PR2-IQL's own fields (`pr2:`); its replay, rate limiter and target networks are in `iql`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pr2Config {
    /// The critic's form.
    pub critic: CriticForm,
    /// Rank of the pairwise terms (0: full `A x A` tables).
    pub pair_rank: usize,
    /// The opponent-conditional policy used for expectations (`model` needs
    /// `learn.opponent_models: true`).
    pub rho: RhoForm,
    /// Whole replayed sequences of `rollout` steps per learner step (each learner step trains
    /// `epochs` times on `buffer_batch_size x rollout x learners` rows).
    pub buffer_batch_size: usize,
    /// Passes over each sampled batch (`num_epochs` is accepted too).
    #[serde(alias = "num_epochs")]
    pub epochs: usize,
    /// Minibatches per epoch.
    pub minibatches: usize,
}

impl Default for Pr2Config {
    fn default() -> Self {
        Pr2Config {
            critic: CriticForm::Factorized,
            pair_rank: 0,
            rho: RhoForm::Soft,
            buffer_batch_size: 4,
            epochs: 2,
            minibatches: 8,
        }
    }
}

/// The PPO learners' fields (`ppo:`, read by IPPO and MAPPO): CleanRL's and JaxMARL's names and
/// defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PpoConfig {
    /// Passes over each rollout (CleanRL's `update_epochs`).
    pub epochs: usize,
    /// Minibatches per epoch (`num_minibatches`).
    pub minibatches: usize,
    /// The surrogate's clipping range epsilon (`clip_coef`, JaxMARL's `CLIP_EPS`).
    pub clip: f32,
    /// Clip the value loss around the rollout's values by the same epsilon (`clip_vloss`).
    pub clip_value: bool,
    /// Weight of the entropy bonus.
    pub ent_coef: f32,
    /// Weight of the value loss (scales the value network's gradient).
    pub vf_coef: f32,
    /// GAE's lambda.
    pub gae_lambda: f32,
    /// Normalise the advantages within each minibatch (CleanRL's `norm_adv`).
    pub normalize_advantages: bool,
}

impl Default for PpoConfig {
    fn default() -> Self {
        PpoConfig {
            epochs: 4,
            minibatches: 4,
            clip: 0.2,
            clip_value: true,
            ent_coef: 0.01,
            vf_coef: 0.5,
            gae_lambda: 0.95,
            normalize_advantages: true,
        }
    }
}

/// Advantage Alignment (`alignment:`, read by `advantage_alignment`): the weight beta of the
/// alignment term, `A*_i(t) = A_i(t) + beta * (sum_{k<t} gamma^(t-1-k) A_i(k)) * A_-i(t)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlignmentConfig {
    /// beta: 0 is plain IPPO.
    pub beta: f32,
}

impl Default for AlignmentConfig {
    fn default() -> Self {
        AlignmentConfig { beta: 1.0 }
    }
}

/// LOQA (`loqa:`, read by `loqa`): `A*_i(k) = A_i(k) + weight * gamma * mean_{j != i} c_ij(k) *
/// M_j(k)`, `c_ij(k) = sum_{t<k} (gamma * discount)^(k-1-t) A_i(t) (1 - pi_j(b_t | s_t)) /
/// temperature`, with `M_j` opponent j's Monte Carlo advantage (the LOQA authors' defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoqaConfig {
    /// The opponent term's weight (the authors' `opponent_differentiation_weight`); 0 is IPPO.
    pub weight: f32,
    /// The opponents' softmax temperature (the authors' `op_softmax_temp`): the term scales
    /// with its inverse.
    pub temperature: f32,
    /// Loaded DiCE's extra discount of the past sum, in [0, 1] (the authors'
    /// `differentiable_opponent.discount`).
    pub discount: f32,
}

impl Default for LoqaConfig {
    fn default() -> Self {
        LoqaConfig {
            weight: 1.0,
            temperature: 1.0,
            discount: 1.0,
        }
    }
}

/// QMIX's mixer (`qmix:`): the mixing layer's width and the hypernetworks' hidden width
/// (pymarl's and JaxMARL's `mixer_embed_dim` / `hypernet_embed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QmixConfig {
    /// E: the mixing layer's units.
    pub embed: usize,
    /// The hypernetworks' hidden layer width.
    pub hyper_hidden: usize,
}

impl Default for QmixConfig {
    fn default() -> Self {
        QmixConfig {
            embed: 32,
            hyper_hidden: 64,
        }
    }
}

/// Online DQN's own fields (`online_dqn:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OnlineDqnConfig {
    /// Passes over each rollout (`num_epochs` is accepted too).
    #[serde(alias = "num_epochs")]
    pub epochs: usize,
    /// Minibatches per epoch.
    pub minibatches: usize,
    /// Polyak factor of the target network's step after every update.
    pub target_tau: f32,
}

impl Default for OnlineDqnConfig {
    fn default() -> Self {
        OnlineDqnConfig {
            epochs: 2,
            minibatches: 8,
            target_tau: 0.01,
        }
    }
}
