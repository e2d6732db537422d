//! PQN (Gallici et al., ICLR 2025): no replay buffer, no target network. Act in B arenas for T
//! steps with epsilon-greedy actions from the current network, compute lambda-returns from the
//! Q-values stored while acting, then E epochs of shuffled minibatches of `0.5 (Q(s,a) - G)^2`
//! with RAdam, per-network gradient clipping and linear learning-rate decay.
//!
//! Multi-agent: every learner of every arena is one row; with independent parameters each
//! learner slot has its own network in the stack (one dispatch serves all), with `shared` one
//! network serves all learners and gets the learner's index as extra one-hot input bytes.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::critic::loss::Loss;
use crate::critic::{AdamConfig, Chosen, Critic, CriticError, Input, StackSpec};
use crate::engine::{BatchState, EnvBatch};
use crate::error::EngineError;
use crate::metrics::EpisodeSummary;
use crate::rng::{Purpose, below, stream};
use crate::scenario::LoadedScenario;

use super::config::RunConfig;

// ------------------------------------------------------------------------------------------
// State
// ------------------------------------------------------------------------------------------

/// A PQN learner with its arenas.
pub struct Pqn {
    cfg: RunConfig,
    /// The arenas.
    pub batch: EnvBatch,
    /// The Q-networks.
    pub critic: Critic,
    spec: StackSpec,
    /// Learners per arena.
    learners: usize,
    actions: usize,
    obs_len: usize,
    /// Exploration streams, one per arena.
    explore: Vec<ChaCha8Rng>,
    /// Minibatch shuffling.
    shuffle: ChaCha8Rng,
    /// Updates done.
    pub update: u64,
    /// Environment (arena) steps done.
    pub env_steps: u64,
    // Rollout storage, reused every update: [T, rows, input], [T, rows], [T + 1, rows].
    obs: Vec<u8>,
    taken: Vec<u32>,
    rewards: Vec<f32>,
    dones: Vec<f32>,
    q_max: Vec<f32>,
    returns: Vec<f32>,
    input_row: Vec<u8>,
    nets: Vec<u32>,
    index: Vec<u32>,
    mb_obs: Vec<u8>,
    mb_nets: Vec<u32>,
    mb_actions: Vec<u32>,
    mb_targets: Vec<f32>,
    sim_seconds: f64,
    learn_seconds: f64,
}

/// What one update did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UpdateStats {
    /// Mean loss over the update's minibatches.
    pub loss: f32,
    /// Exploration rate used while acting.
    pub epsilon: f32,
    /// Learning rate used.
    pub lr: f32,
    /// Episodes that finished during the rollout.
    pub episodes: Vec<EpisodeSummary>,
}

/// The learner's own evolving state beyond the parameters (checkpoints).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PqnState {
    /// Updates done.
    pub update: u64,
    /// Environment steps done.
    pub env_steps: u64,
    /// Exploration streams.
    pub explore: Vec<ChaCha8Rng>,
    /// Shuffling stream.
    pub shuffle: ChaCha8Rng,
    /// The arenas.
    pub batch: BatchState,
}

/// Errors while training.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// The critic failed.
    #[error(transparent)]
    Critic(#[from] CriticError),
    /// The environment failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A configuration the learner cannot run.
    #[error("{0}")]
    Config(String),
    /// A non-finite value appeared.
    #[error("update {update}: {tensor} is not finite ({value}); the last good checkpoint is kept")]
    NonFinite {
        /// The update.
        update: u64,
        /// Which tensor.
        tensor: String,
        /// The offending value.
        value: f32,
    },
}

// ------------------------------------------------------------------------------------------
// Network
// ------------------------------------------------------------------------------------------

/// The Q-network stack a scenario needs under this configuration.
pub fn stack_spec(cfg: &RunConfig, loaded: &LoadedScenario) -> StackSpec {
    let learners = loaded.scenario.learners_per_arena();
    let obs = loaded.scenario.observation_len();
    StackSpec {
        nets: if cfg.shared { 1 } else { learners },
        input: obs + if cfg.shared { learners } else { 0 },
        hidden: cfg.hidden,
        layers: cfg.layers,
        head: loaded.scenario.action_set().len(),
    }
}

impl Pqn {
    /// A fresh learner: arenas seeded with `cfg.seed`, networks initialised from it.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<Pqn, TrainError> {
        let batch = EnvBatch::new(loaded, cfg.arenas, cfg.seed)?;
        let spec = stack_spec(cfg, loaded);
        let critic = Critic::new(spec, cfg.seed, device)?;
        let (learners, actions, obs_len) =
            (loaded.scenario.learners_per_arena(), spec.head, spec.input);
        let rows = cfg.arenas * learners;
        let mut pqn = Pqn {
            batch,
            critic,
            spec,
            learners,
            actions,
            obs_len,
            explore: (0..cfg.arenas)
                .map(|a| stream(cfg.seed, a as u64, Purpose::Policy))
                .collect(),
            shuffle: stream(cfg.seed, u64::MAX >> 8, Purpose::Policy),
            update: 0,
            env_steps: 0,
            obs: vec![0; cfg.rollout * rows * obs_len],
            taken: vec![0; cfg.rollout * rows],
            rewards: vec![0.0; cfg.rollout * rows],
            dones: vec![0.0; cfg.rollout * rows],
            q_max: vec![0.0; (cfg.rollout + 1) * rows],
            returns: vec![0.0; cfg.rollout * rows],
            input_row: vec![0; rows * obs_len],
            nets: (0..rows)
                .map(|r| if cfg.shared { 0 } else { (r % learners) as u32 })
                .collect(),
            index: (0..(cfg.rollout * rows) as u32).collect(),
            mb_obs: Vec::new(),
            mb_nets: Vec::new(),
            mb_actions: Vec::new(),
            mb_targets: Vec::new(),
            sim_seconds: 0.0,
            learn_seconds: 0.0,
            cfg: cfg.clone(),
        };
        pqn.batch.start_episode_log(1 << 16);
        Ok(pqn)
    }

    /// Seconds spent stepping arenas and in the critic since the last call.
    pub fn take_timing(&mut self) -> (f64, f64) {
        let t = (self.sim_seconds, self.learn_seconds);
        self.sim_seconds = 0.0;
        self.learn_seconds = 0.0;
        t
    }

    /// The network stack's shape.
    pub fn spec(&self) -> StackSpec {
        self.spec
    }

    /// Current observations as network input rows (`[B * N, input]`): the observation bytes,
    /// plus the learner's one-hot index with shared parameters.
    fn current_input(&mut self) -> &[u8] {
        let (n, o, d) = (self.learners, self.batch.layout().obs_len, self.obs_len);
        let obs = &self.batch.buffers().obs;
        if !self.cfg.shared {
            self.input_row.copy_from_slice(obs);
        } else {
            for (r, row) in self.input_row.chunks_exact_mut(d).enumerate() {
                row[..o].copy_from_slice(&obs[r * o..(r + 1) * o]);
                row[o..].fill(0);
                row[o + r % n] = 1;
            }
        }
        &self.input_row
    }

    /// Greedy actions for the current observations (evaluation).
    pub fn greedy(&mut self) -> Result<Vec<u8>, TrainError> {
        let input = self.current_input().to_vec();
        let q = self.critic.forward(Input::U8(&input), &self.nets.clone())?;
        Ok(q.chunks_exact(self.actions).map(argmax).collect())
    }

    // --------------------------------------------------------------------------------------
    // Rollout
    // --------------------------------------------------------------------------------------

    /// The exploration rate at the current update.
    pub fn epsilon(&self) -> f32 {
        let horizon = (self.cfg.eps_fraction as f64 * self.cfg.updates() as f64).max(1.0);
        let frac = (self.update as f64 / horizon).min(1.0) as f32;
        self.cfg.eps_start + (self.cfg.eps_finish - self.cfg.eps_start) * frac
    }

    fn rollout(&mut self, epsilon: f32) -> Result<(), TrainError> {
        let rows = self.cfg.arenas * self.learners;
        let (d, a, n) = (self.obs_len, self.actions, self.learners);
        let threshold = crate::rng::threshold(epsilon as f64);
        let nets = std::mem::take(&mut self.nets);
        for t in 0..self.cfg.rollout {
            let input = self.current_input().to_vec();
            let q = self.critic.forward(Input::U8(&input), &nets)?;
            self.obs[t * rows * d..(t + 1) * rows * d].copy_from_slice(&input);
            let chosen = self.batch.actions_mut();
            for (arena, rng) in self.explore.iter_mut().enumerate() {
                for l in 0..n {
                    let r = arena * n + l;
                    let qr = &q[r * a..(r + 1) * a];
                    self.q_max[t * rows + r] = qr.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let explore = (rng.next_u32() as u64) < threshold;
                    let action = if explore {
                        below(rng.next_u32(), a as u32) as u8
                    } else {
                        argmax(qr)
                    };
                    chosen[r] = action;
                    self.taken[t * rows + r] = action as u32;
                }
            }
            let t0 = std::time::Instant::now();
            self.batch.step()?;
            self.sim_seconds += t0.elapsed().as_secs_f64();
            let b = self.batch.buffers();
            for r in 0..rows {
                let arena = r / n;
                self.rewards[t * rows + r] = b.rewards[r];
                self.dones[t * rows + r] =
                    f32::from(b.terminated[arena] != 0 || b.truncated[arena] != 0);
            }
        }
        let input = self.current_input().to_vec();
        let q = self.critic.forward(Input::U8(&input), &nets)?;
        let last = self.cfg.rollout * rows;
        for r in 0..rows {
            self.q_max[last + r] = q[r * a..(r + 1) * a]
                .iter()
                .copied()
                .fold(f32::NEG_INFINITY, f32::max);
        }
        self.nets = nets;
        self.env_steps += self.cfg.steps_per_update();
        Ok(())
    }

    // --------------------------------------------------------------------------------------
    // Targets
    // --------------------------------------------------------------------------------------

    /// Lambda-returns backwards from the stored maxima:
    /// `G_t = r_t + gamma (1 - d_t) [(1 - lambda) max Q(s_{t+1}) + lambda G_{t+1}]`, G_T = max Q(s_T).
    fn lambda_returns(&mut self) {
        let rows = self.cfg.arenas * self.learners;
        let (gamma, lambda) = (self.cfg.gamma, self.cfg.lambda);
        let t_len = self.cfg.rollout;
        for r in 0..rows {
            let mut next = self.q_max[t_len * rows + r];
            for t in (0..t_len).rev() {
                let i = t * rows + r;
                let boot = (1.0 - lambda) * self.q_max[i + rows] + lambda * next;
                next = self.rewards[i] + gamma * (1.0 - self.dones[i]) * boot;
                self.returns[i] = next;
            }
        }
    }

    // --------------------------------------------------------------------------------------
    // Update
    // --------------------------------------------------------------------------------------

    /// One PQN update: rollout, lambda-returns, epochs of shuffled minibatches.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let epsilon = self.epsilon();
        let progress = self.update as f32 / self.cfg.updates().max(1) as f32;
        let lr = if self.cfg.lr_decay {
            self.cfg.lr * (1.0 - progress).max(0.0)
        } else {
            self.cfg.lr
        };
        let adam = AdamConfig {
            lr: lr.max(1e-12),
            max_grad_norm: Some(self.cfg.max_grad_norm),
            radam: self.cfg.radam,
            ..AdamConfig::default()
        };
        let t0 = std::time::Instant::now();
        let sim_before = self.sim_seconds;
        self.rollout(epsilon)?;
        self.lambda_returns();

        let total = self.index.len();
        let size = total / self.cfg.minibatches;
        let d = self.obs_len;
        let rows = self.cfg.arenas * self.learners;
        let mut losses = 0.0f64;
        let mut count = 0;
        // The shuffle depends only on the stream (resuming restores the stream, not this array).
        for (i, v) in self.index.iter_mut().enumerate() {
            *v = i as u32;
        }
        for _ in 0..self.cfg.epochs {
            for k in (1..total).rev() {
                let j = below(self.shuffle.next_u32(), k as u32 + 1) as usize;
                self.index.swap(k, j);
            }
            for mb in 0..self.cfg.minibatches {
                let idx = &self.index[mb * size..(mb + 1) * size];
                self.mb_obs.clear();
                self.mb_nets.clear();
                self.mb_actions.clear();
                self.mb_targets.clear();
                for &i in idx {
                    let i = i as usize;
                    self.mb_obs.extend_from_slice(&self.obs[i * d..(i + 1) * d]);
                    self.mb_nets.push(self.nets[i % rows]);
                    self.mb_actions.push(self.taken[i]);
                    self.mb_targets.push(self.returns[i]);
                }
                self.critic
                    .forward(Input::U8(&self.mb_obs), &self.mb_nets)?;
                let loss = Loss::Mse {
                    actions: &self.mb_actions,
                    targets: &self.mb_targets,
                    mask: None,
                };
                self.critic.loss_backward(&loss)?;
                let value = self.critic.last_loss()?;
                if !value.is_finite() {
                    return Err(TrainError::NonFinite {
                        update: self.update + 1,
                        tensor: "loss".into(),
                        value,
                    });
                }
                losses += value as f64;
                count += 1;
                self.critic.step(&adam);
            }
        }
        self.update += 1;
        self.learn_seconds += t0.elapsed().as_secs_f64() - (self.sim_seconds - sim_before);
        Ok(UpdateStats {
            loss: (losses / count.max(1) as f64) as f32,
            epsilon,
            lr,
            episodes: self.batch.take_episodes(),
        })
    }

    // --------------------------------------------------------------------------------------
    // Checkpoints
    // --------------------------------------------------------------------------------------

    /// The learner's evolving state beyond the parameters.
    pub fn save_state(&mut self) -> PqnState {
        PqnState {
            update: self.update,
            env_steps: self.env_steps,
            explore: self.explore.clone(),
            shuffle: self.shuffle.clone(),
            batch: self.batch.save_state(),
        }
    }

    /// Restores what [`Pqn::save_state`] saved.
    pub fn load_state(&mut self, s: &PqnState) -> Result<(), TrainError> {
        self.update = s.update;
        self.env_steps = s.env_steps;
        self.explore = s.explore.clone();
        self.shuffle = s.shuffle.clone();
        self.batch.load_state(&s.batch)?;
        Ok(())
    }
}

/// Index of the largest value (the first on ties).
pub fn argmax(q: &[f32]) -> u8 {
    let mut best = 0;
    for (i, v) in q.iter().enumerate() {
        if *v > q[best] {
            best = i;
        }
    }
    best as u8
}
