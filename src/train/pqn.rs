//! PQN (Gallici et al., ICLR 2025): no replay buffer, no target network. Act in B arenas for T
//! steps with epsilon-greedy actions from the current network, compute lambda-returns from the
//! Q-values stored while acting, then E epochs of shuffled minibatches of `0.5 (Q(s,a) - G)^2`
//! with RAdam, per-network gradient clipping and linear learning-rate decay.
//!
//! Multi-agent: every learner of every arena is one row; with independent parameters each
//! learner slot has its own network in the stack (one dispatch serves all), with `shared` one
//! network serves all learners and gets the learner's index as extra one-hot input bytes.
//!
//! Seeds in one run: `seeds` S replicas, each with its own arenas and random streams (replica r
//! is seeded with seed + r) and its own networks, all stacked in the same buffers so one pass
//! serves every replica. Each replica draws its own minibatch partition and its loss is
//! normalised by its own minibatch size, so replica r computes exactly what a single run with
//! seed + r computes.

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
    /// The arenas, one batch per replica.
    pub batches: Vec<EnvBatch>,
    /// The Q-networks of every replica.
    pub critic: Critic,
    spec: StackSpec,
    /// Learners per arena.
    learners: usize,
    actions: usize,
    obs_len: usize,
    /// Replicas (seeds) S.
    replicas: usize,
    /// Exploration streams, one per (replica, arena).
    explore: Vec<ChaCha8Rng>,
    /// Minibatch shuffling, one per replica.
    shuffle: Vec<ChaCha8Rng>,
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
    index: Vec<Vec<u32>>,
    mb_rows: Vec<usize>,
    d_out: Vec<f32>,
    mb_obs: Vec<u8>,
    mb_nets: Vec<u32>,
    mb_actions: Vec<u32>,
    mb_targets: Vec<f32>,
    sim_seconds: f64,
    learn_seconds: f64,
    opponents: Option<super::opponent::OpponentModels>,
    frozen: Option<FrozenOthers>,
}

/// The learning rate at `update` (linear decay to 0 over the run when `lr_decay`) and the
/// optimiser settings every learner uses.
pub fn optimiser(cfg: &RunConfig, update: u64) -> (f32, AdamConfig) {
    let progress = update as f32 / cfg.updates().max(1) as f32;
    let lr = if cfg.lr_decay {
        cfg.lr * (1.0 - progress).max(0.0)
    } else {
        cfg.lr
    };
    let adam = AdamConfig {
        lr: lr.max(1e-12),
        max_grad_norm: Some(cfg.max_grad_norm),
        radam: cfg.radam,
        ..AdamConfig::default()
    };
    (lr, adam)
}

/// Exploration after `env_steps` steps: linear from `eps_start` to `eps_finish` over
/// `eps_fraction` of the run's steps (the replay learners' schedule).
pub fn epsilon_by_steps(cfg: &RunConfig, env_steps: u64) -> f32 {
    let horizon = (cfg.eps_fraction as f64 * cfg.total_steps as f64).max(1.0);
    let frac = (env_steps as f64 / horizon).min(1.0) as f32;
    cfg.eps_start + (cfg.eps_finish - cfg.eps_start) * frac
}

/// Maps raw observations `[B, N, O]` to actions `[B x N]`.
pub type FixedPolicy = Box<dyn FnMut(&[u8]) -> Result<Vec<u8>, TrainError>>;

/// A fixed policy acting for some slots while the others learn (learned best responses):
/// `policy` maps raw observations `[B, N, O]` to actions `[B x N]`; `slots[l]` says whether
/// slot l's action comes from it.
pub struct FrozenOthers {
    /// The frozen policy.
    pub policy: FixedPolicy,
    /// Which learner slots it controls.
    pub slots: Vec<bool>,
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
    /// Episodes that finished during the rollout (replica 0's, or every replica's with
    /// `per_replica`).
    pub episodes: Vec<EpisodeSummary>,
    /// With several seeds: each replica's finished episodes.
    pub per_replica: Vec<Vec<EpisodeSummary>>,
    /// Opponent-model scores on this rollout (when enabled).
    pub opponents: Option<super::opponent::OpponentScores>,
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
    /// Shuffling streams, one per replica.
    pub shuffle: Vec<ChaCha8Rng>,
    /// The arenas of every replica.
    pub batches: Vec<BatchState>,
    /// The opponent models' parameters, when trained.
    #[serde(default)]
    pub models: Option<Vec<f32>>,
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
    /// A fresh learner: replica r's arenas and networks seeded with `cfg.seed + r`.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<Pqn, TrainError> {
        let replicas = cfg.seeds.max(1);
        let single = stack_spec(cfg, loaded);
        let spec = StackSpec {
            nets: single.nets * replicas,
            ..single
        };
        let mut critic = Critic::new(spec, cfg.seed, device)?;
        if replicas > 1 {
            let params: Vec<f32> = (0..replicas)
                .flat_map(|r| crate::critic::init_params(&single, cfg.seed + r as u64))
                .collect();
            critic.set_params(&params)?;
        }
        let mut batches = Vec::with_capacity(replicas);
        for r in 0..replicas {
            let mut b = EnvBatch::new(loaded, cfg.arenas, cfg.seed + r as u64)?;
            b.start_episode_log(1 << 16);
            batches.push(b);
        }
        let (learners, actions, obs_len) =
            (loaded.scenario.learners_per_arena(), spec.head, spec.input);
        let per = cfg.arenas * learners;
        let rows = replicas * per;
        let opponents = if cfg.opponent_models {
            Some(super::opponent::OpponentModels::new(
                cfg,
                learners,
                actions,
                obs_len,
                (cfg.rollout * per / cfg.minibatches).max(1),
                device,
            )?)
        } else {
            None
        };
        Ok(Pqn {
            opponents,
            frozen: None,
            batches,
            critic,
            spec,
            learners,
            actions,
            obs_len,
            replicas,
            explore: (0..replicas)
                .flat_map(|r| (0..cfg.arenas).map(move |a| (r, a)))
                .map(|(r, a)| stream(cfg.seed + r as u64, a as u64, Purpose::Policy))
                .collect(),
            shuffle: (0..replicas)
                .map(|r| stream(cfg.seed + r as u64, u64::MAX >> 8, Purpose::Policy))
                .collect(),
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
                .map(|g| {
                    let (r, local) = (g / per, g % per);
                    (r * single.nets + if cfg.shared { 0 } else { local % learners }) as u32
                })
                .collect(),
            index: vec![(0..(cfg.rollout * per) as u32).collect(); replicas],
            mb_rows: Vec::new(),
            d_out: Vec::new(),
            mb_obs: Vec::new(),
            mb_nets: Vec::new(),
            mb_actions: Vec::new(),
            mb_targets: Vec::new(),
            sim_seconds: 0.0,
            learn_seconds: 0.0,
            cfg: cfg.clone(),
        })
    }

    /// Replica 0's arenas (the ones evaluation and the viewer look at).
    pub fn batch(&mut self) -> &mut EnvBatch {
        &mut self.batches[0]
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

    /// Current observations of every replica as network input rows (`[S * B * N, input]`):
    /// the observation bytes, plus the learner's one-hot index with shared parameters.
    fn current_input(&mut self) -> &[u8] {
        let (n, d) = (self.learners, self.obs_len);
        let o = self.batches[0].layout().obs_len;
        let per = self.cfg.arenas * n * d;
        for (r, b) in self.batches.iter().enumerate() {
            let obs = &b.buffers().obs;
            let out = &mut self.input_row[r * per..(r + 1) * per];
            if !self.cfg.shared {
                out.copy_from_slice(obs);
            } else {
                for (row, chunk) in out.chunks_exact_mut(d).enumerate() {
                    chunk[..o].copy_from_slice(&obs[row * o..(row + 1) * o]);
                    chunk[o..].fill(0);
                    chunk[o + row % n] = 1;
                }
            }
        }
        &self.input_row
    }

    /// Greedy actions of replica 0 for its current observations (evaluation).
    pub fn greedy(&mut self) -> Result<Vec<u8>, TrainError> {
        let (per, d) = (self.cfg.arenas * self.learners, self.obs_len);
        let input = self.current_input()[..per * d].to_vec();
        let q = self.critic.forward(Input::U8(&input), &self.nets[..per])?;
        Ok(q.chunks_exact(self.actions).map(argmax).collect())
    }

    /// Restores the opponent models' parameters (when the run has models).
    pub fn set_opponent_params(&mut self, p: &[f32]) -> Result<(), TrainError> {
        match &mut self.opponents {
            Some(m) => m.set_params(p),
            None => Ok(()),
        }
    }

    /// Lets `frozen` act for its slots from now on (their networks still train on what they
    /// see, but never act).
    pub fn freeze_others(&mut self, frozen: FrozenOthers) {
        self.frozen = Some(frozen);
    }

    /// The opponent models' predicted distributions `[B x N, N-1, A]` for the current
    /// observations of replica 0, or `None` without models.
    pub fn opponent_predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        let (per, d) = (self.cfg.arenas * self.learners, self.obs_len);
        let input = self.current_input()[..per * d].to_vec();
        let n = self.learners as u32;
        let nets: Vec<u32> = (0..per as u32).map(|r| r % n).collect();
        match &mut self.opponents {
            Some(m) => Ok(Some(m.probs(&input, &nets)?)),
            None => Ok(None),
        }
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
        let (n, a, d) = (self.learners, self.actions, self.obs_len);
        let per = self.cfg.arenas * n;
        let rows = self.replicas * per;
        let threshold = crate::rng::threshold(epsilon as f64);
        let nets = std::mem::take(&mut self.nets);
        for t in 0..self.cfg.rollout {
            let input = self.current_input().to_vec();
            let q = self.critic.forward(Input::U8(&input), &nets)?;
            self.obs[t * rows * d..(t + 1) * rows * d].copy_from_slice(&input);
            for (r, batch) in self.batches.iter_mut().enumerate() {
                let chosen = batch.actions_mut();
                let streams = &mut self.explore[r * self.cfg.arenas..(r + 1) * self.cfg.arenas];
                for (arena, rng) in streams.iter_mut().enumerate() {
                    for l in 0..n {
                        let (local, g) = (arena * n + l, r * per + arena * n + l);
                        let qr = &q[g * a..(g + 1) * a];
                        self.q_max[t * rows + g] =
                            qr.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                        let action = epsilon_greedy(rng, qr, threshold);
                        chosen[local] = action;
                        self.taken[t * rows + g] = action as u32;
                    }
                }
                if let Some(f) = &mut self.frozen {
                    let fixed = (f.policy)(&batch.buffers().obs)?;
                    let chosen = batch.actions_mut();
                    for local in 0..per {
                        if f.slots[local % n] {
                            chosen[local] = fixed[local];
                            self.taken[t * rows + r * per + local] = fixed[local] as u32;
                        }
                    }
                }
                let t0 = std::time::Instant::now();
                batch.step()?;
                self.sim_seconds += t0.elapsed().as_secs_f64();
                let b = batch.buffers();
                for local in 0..per {
                    let (g, arena) = (r * per + local, local / n);
                    self.rewards[t * rows + g] = b.rewards[local];
                    self.dones[t * rows + g] =
                        f32::from(b.terminated[arena] != 0 || b.truncated[arena] != 0);
                }
            }
        }
        let input = self.current_input().to_vec();
        let q = self.critic.forward(Input::U8(&input), &nets)?;
        let last = self.cfg.rollout * rows;
        for g in 0..rows {
            self.q_max[last + g] = q[g * a..(g + 1) * a]
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
        let rows = self.replicas * self.cfg.arenas * self.learners;
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
        let (lr, adam) = optimiser(&self.cfg, self.update);
        let t0 = std::time::Instant::now();
        let sim_before = self.sim_seconds;
        self.rollout(epsilon)?;
        self.lambda_returns();
        let opponents = match &mut self.opponents {
            Some(models) => Some(models.score_and_train(&self.obs, &self.taken, self.cfg.lr)?),
            None => None,
        };

        let per = self.cfg.arenas * self.learners;
        let rows = self.replicas * per;
        let total = self.cfg.rollout * per;
        let size = total / self.cfg.minibatches;
        let (d, a) = (self.obs_len, self.actions);
        let mut losses = 0.0f64;
        let mut count = 0;
        // Each replica's shuffle depends only on its stream (resuming restores the stream).
        for index in &mut self.index {
            for (i, v) in index.iter_mut().enumerate() {
                *v = i as u32;
            }
        }
        for _ in 0..self.cfg.epochs {
            for (index, rng) in self.index.iter_mut().zip(&mut self.shuffle) {
                for k in (1..total).rev() {
                    let j = below(rng.next_u32(), k as u32 + 1) as usize;
                    index.swap(k, j);
                }
            }
            for mb in 0..self.cfg.minibatches {
                // Replica r's k-th slice, as storage rows [t][replica][local row].
                self.mb_rows.clear();
                for (r, index) in self.index.iter().enumerate() {
                    for &i in &index[mb * size..(mb + 1) * size] {
                        let (t, local) = (i as usize / per, i as usize % per);
                        self.mb_rows.push(t * rows + r * per + local);
                    }
                }
                self.mb_obs.clear();
                self.mb_nets.clear();
                self.mb_actions.clear();
                self.mb_targets.clear();
                for &g in &self.mb_rows {
                    self.mb_obs.extend_from_slice(&self.obs[g * d..(g + 1) * d]);
                    self.mb_nets.push(self.nets[g % rows]);
                    self.mb_actions.push(self.taken[g]);
                    self.mb_targets.push(self.returns[g]);
                }
                let value = if self.replicas == 1 {
                    self.critic
                        .forward(Input::U8(&self.mb_obs), &self.mb_nets)?;
                    let loss = Loss::Mse {
                        actions: &self.mb_actions,
                        targets: &self.mb_targets,
                        mask: None,
                    };
                    self.critic.loss_backward(&loss)?;
                    self.critic.last_loss()?
                } else {
                    // Each replica's loss is averaged over its own minibatch.
                    let out = self
                        .critic
                        .forward(Input::U8(&self.mb_obs), &self.mb_nets)?;
                    self.d_out.resize(out.len(), 0.0);
                    let mut sum = 0.0;
                    for r in 0..self.replicas {
                        let (rows_r, vals) =
                            (r * size..(r + 1) * size, r * size * a..(r + 1) * size * a);
                        let loss = Loss::Mse {
                            actions: &self.mb_actions[rows_r.clone()],
                            targets: &self.mb_targets[rows_r],
                            mask: None,
                        };
                        sum += crate::critic::loss::loss_and_grad(
                            &loss,
                            &out[vals.clone()],
                            a,
                            &mut self.d_out[vals],
                        );
                    }
                    self.critic.backward(&self.d_out)?;
                    sum / self.replicas as f32
                };
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
        let mut per_replica: Vec<Vec<EpisodeSummary>> =
            self.batches.iter_mut().map(|b| b.take_episodes()).collect();
        let episodes = per_replica[0].clone();
        if self.replicas == 1 {
            per_replica.clear();
        }
        Ok(UpdateStats {
            loss: (losses / count.max(1) as f64) as f32,
            epsilon,
            lr,
            episodes,
            per_replica,
            opponents,
        })
    }

    // --------------------------------------------------------------------------------------
    // Checkpoints
    // --------------------------------------------------------------------------------------

    /// The learner's evolving state beyond the parameters.
    pub fn save_state(&mut self) -> Result<PqnState, TrainError> {
        Ok(PqnState {
            update: self.update,
            env_steps: self.env_steps,
            explore: self.explore.clone(),
            shuffle: self.shuffle.clone(),
            batches: self.batches.iter_mut().map(|b| b.save_state()).collect(),
            models: match &mut self.opponents {
                Some(m) => Some(m.params()?),
                None => None,
            },
        })
    }

    /// Restores what [`Pqn::save_state`] saved.
    pub fn load_state(&mut self, s: &PqnState) -> Result<(), TrainError> {
        self.update = s.update;
        self.env_steps = s.env_steps;
        self.explore = s.explore.clone();
        self.shuffle = s.shuffle.clone();
        if s.batches.len() != self.batches.len() {
            return Err(TrainError::Config(format!(
                "checkpoint has {} replicas, the run {}",
                s.batches.len(),
                self.batches.len()
            )));
        }
        for (b, state) in self.batches.iter_mut().zip(&s.batches) {
            b.load_state(state)?;
        }
        if let (Some(m), Some(p)) = (&mut self.opponents, &s.models) {
            m.set_params(p)?;
        }
        Ok(())
    }
}

/// The epsilon-greedy action for one row of Q-values: with probability `threshold / 2^32` a
/// uniform action, else the greedy one (one draw, plus one more when exploring).
pub fn epsilon_greedy(rng: &mut ChaCha8Rng, q: &[f32], threshold: u64) -> u8 {
    if (rng.next_u32() as u64) < threshold {
        below(rng.next_u32(), q.len() as u32) as u8
    } else {
        argmax(q)
    }
}

/// Greedy actions of independent or shared Q-networks for raw observation rows `[R, N, O]`
/// (R arenas' learners in slot order): the learner's one-hot index is appended when `shared`
/// (the network's input is wider than an observation).
pub fn greedy_rows(
    critic: &mut Critic,
    obs: &[u8],
    learners: usize,
    obs_len: usize,
    input: usize,
    actions: usize,
) -> Result<Vec<u8>, TrainError> {
    let rows = obs.len() / obs_len.max(1);
    let shared = input > obs_len;
    let nets: Vec<u32> = (0..rows)
        .map(|r| if shared { 0 } else { (r % learners) as u32 })
        .collect();
    let q = if shared {
        let mut x = vec![0u8; rows * input];
        for (r, row) in x.chunks_exact_mut(input).enumerate() {
            row[..obs_len].copy_from_slice(&obs[r * obs_len..(r + 1) * obs_len]);
            row[obs_len + r % learners] = 1;
        }
        critic.forward(Input::U8(&x), &nets)?
    } else {
        critic.forward(Input::U8(obs), &nets)?
    };
    Ok(q.chunks_exact(actions).map(argmax).collect())
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
