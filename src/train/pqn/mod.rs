//! PQN (Gallici et al., ICLR 2025): no replay buffer, no target network. Act in B arenas for T
//! steps with epsilon-greedy actions from the current network, compute lambda-returns from the
//! Q-values stored while acting (a termination cuts the return; a truncation by the time limit
//! bootstraps from the value of the episode's final observation, see [`lambda_returns`]), then
//! E epochs of shuffled minibatches of `0.5 (Q(s,a) - G)^2` (or the `loss` asked for, see
//! `q_head.rs`) with RAdam, per-network gradient clipping and linear learning-rate decay.
//!
//! Multi-agent: every learner of every arena is one row; with independent parameters each
//! learner slot has its own network in the stack (one dispatch serves all), with `shared` one
//! network serves all learners and gets the learner's index as extra one-hot input bytes.
//!
//! Seeds and sweeps in one run: every grid point x seed is a replica (see `train::sweep`), with
//! its own arenas and random streams (seeded with its own seed) and its own networks, all
//! stacked in the same buffers so one pass serves every replica. Each replica draws its own
//! minibatch partition, its loss is normalised by its own minibatch size, and it reads its own
//! exploration schedule, gamma, lambda, learning rate and gradient clip, so replica k computes
//! exactly what a single run with its configuration computes.
//!
//! Configuration read here (see [`RunConfig`]): `arenas`, `rollout` (T), `epochs`,
//! `minibatches`, `gamma`, `lambda`, `lr`/`lr_decay`/`max_grad_norm`/`radam`, `eps_*`,
//! `shared`, `hidden`, `layers`, `seeds`, `opponent_models`, and the value loss's `loss`,
//! `huber_delta`, `bins`, `v_min`, `v_max`, `sigma` (`q_head.rs`).

mod sequences;

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use super::config::RunConfig;
use super::error::TrainError;
use super::explore::{act_epsilon_greedy, max_value};
use super::learner::{BoxedLearner, Learner, Progress};
use super::opponent::{
    ModelsState, OpponentModels, OpponentNetworks, load_models, save_models, set_models_params,
};
use super::q_head::{QHead, q_values_by_replica};
use super::qnet::{q_rows, stack_spec, write_input};
use super::recurrent::{ended_rows, gather_hidden, scatter_hidden};
pub use super::returns::{RolloutSteps, lambda_returns, lambda_returns_per_replica};
use super::run_dir::Resume;
use super::schedule::{epsilon_by_updates, optimiser};
use super::sizing::{
    PlanTensor, checkpoint_tensor, fmt, opponent_spec, opponent_tensor, qnet_tensors,
};
use super::stats::UpdateStats;
use super::tensors::{NamedTensors, Tensor};
use crate::critic::loss::loss_and_grad;
use crate::critic::{AdamConfig, Backend, Chosen, Critic, Input, NetOptim, StackSpec};
use crate::dist::Job;
use crate::engine::{BatchState, EnvBatch};
use crate::error::BadField;
use crate::layout::Layout;
use crate::metrics::EpisodeSummary;
use crate::policy::Policy;
use crate::rng::{Purpose, below, stream};
use crate::scenario::LoadedScenario;
pub use sequences::{Memory, SeqSaved};
use sequences::{Rollout, SeqState};

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
    /// How outputs become Q-values, and the loss.
    head: QHead,
    /// Each replica's head (the same width; a sweep may give them their own loss parameters).
    heads: Vec<QHead>,
    /// Learners per arena.
    learners: usize,
    actions: usize,
    obs_len: usize,
    /// Replicas (grid points x seeds).
    replicas: usize,
    /// Each replica's single-run configuration (its seed and swept values).
    reps: Vec<RunConfig>,
    /// Networks per replica.
    nets_per_replica: usize,
    /// Exploration streams, one per (replica, arena).
    explore: Vec<ChaCha8Rng>,
    /// Minibatch shuffling, one per replica.
    shuffle: Vec<ChaCha8Rng>,
    progress: Progress,
    // Rollout storage, reused every update: [T, rows, input], [T, rows], [T + 1, rows].
    obs: Vec<u8>,
    taken: Vec<u32>,
    rewards: Vec<f32>,
    terminated: Vec<f32>,
    truncated: Vec<f32>,
    /// `[T, rows]` max Q of the final observation where the step truncated (0 elsewhere).
    final_q: Vec<f32>,
    /// Input rows of the truncated arenas' final observations, gathered to score them.
    final_input: Vec<u8>,
    final_nets: Vec<u32>,
    q_max: Vec<f32>,
    returns: Vec<f32>,
    input_row: Vec<u8>,
    nets: Vec<u32>,
    index: Vec<Vec<u32>>,
    mb: Minibatch,
    opponents: Option<OpponentModels>,
    frozen: Option<FrozenOthers>,
    /// With recurrent networks: the rollout's sequences (PQN-RNN).
    seq: Option<SeqState>,
    /// `[rows, g]` the hidden states of the current acting pass (gathered from the batches).
    hidden: Vec<f32>,
    /// `[rows]` scratch: which rows' episodes ended in the last step.
    ended: Vec<u8>,
}

/// A minibatch's rows gathered out of the rollout storage, reused.
#[derive(Default)]
struct Minibatch {
    rows: Vec<usize>,
    d_out: Vec<f32>,
    obs: Vec<u8>,
    nets: Vec<u32>,
    actions: Vec<u32>,
    targets: Vec<f32>,
}

/// A fixed policy acting for some slots while the others learn (learned best responses):
/// `policy` maps raw observations `[B, N, O]` to actions `[B x N]`; `slots[l]` says whether
/// slot l's action comes from it.
pub struct FrozenOthers {
    /// The frozen policy.
    pub policy: Box<dyn Policy>,
    /// Which learner slots it controls.
    pub slots: Vec<bool>,
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
    /// The opponent models' parameters in checkpoints written before the models' state and
    /// tensors were saved (read, never written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<f32>>,
    /// The opponent models' optimiser steps and shuffle stream (their parameters and Adam
    /// moments are tensors of the checkpoint).
    #[serde(default)]
    pub models_state: Option<ModelsState>,
    /// With recurrent networks: the memory's length (its arrays, the episode-start flags and
    /// the batches' hidden states are tensors of the checkpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequences: Option<SeqSaved>,
}

// ------------------------------------------------------------------------------------------
// Network
// ------------------------------------------------------------------------------------------

impl Pqn {
    /// A fresh learner: replica r's arenas and networks seeded with its own seed (`cfg.seed +
    /// s` for seed index s).
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<Pqn, TrainError> {
        Pqn::new_in(cfg, loaded, device, &Job::single())
    }

    /// [`Pqn::new`] for one rank of a data-parallel job (see
    /// [`new_learner_in`](crate::train::new_learner_in)).
    pub fn new_in(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<Pqn, TrainError> {
        let reps: Vec<RunConfig> = cfg
            .replicas()
            .map_err(|e| TrainError::Config(e.to_string()))?
            .into_iter()
            .map(|r| r.cfg)
            .collect();
        let replicas = reps.len();
        let single = stack_spec(cfg, loaded);
        let spec = StackSpec {
            nets: single.nets * replicas,
            ..single
        };
        // One replica: its own seed (a rank's one-replica share of a split run may be replica
        // k > 0, seeded `seed + k`; a plain run's replica 0 has the run's seed).
        let mut critic = Critic::new(spec, reps[0].seed, device)?.data_parallel(job);
        if replicas > 1 {
            let params: Vec<f32> = reps
                .iter()
                .flat_map(|r| crate::critic::init_params(&single, r.seed))
                .collect();
            critic.set_params(&params)?;
        }
        let width = spec.state_width();
        let mut batches = Vec::with_capacity(replicas);
        for r in &reps {
            let mut b = cfg.training_batch(loaded, r.seed, job)?;
            b.start_episode_log(1 << 16);
            b.set_hidden_width(width);
            batches.push(b);
        }
        // Replica 0's head acts for the Learner seam; every replica's has the same width (the
        // sweep checks it), its own loss parameters.
        let heads: Vec<QHead> = reps.iter().map(QHead::of).collect();
        let head = heads[0];
        let actions = spec.head / head.outputs_per_action();
        let (learners, obs_len) = (loaded.scenario.learners_per_arena(), spec.input);
        let per = cfg.arenas * learners;
        let rows = replicas * per;
        let seq = (width > 0).then(|| SeqState::new(width, cfg.memory_window, cfg.rollout, rows));
        let opponents = if cfg.opponent_models {
            Some(OpponentModels::new(
                cfg,
                learners,
                actions,
                obs_len,
                (cfg.rollout * per / cfg.minibatches).max(1),
                (device, job),
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
            head,
            heads,
            learners,
            actions,
            obs_len,
            replicas,
            explore: reps
                .iter()
                .flat_map(|r| {
                    let first = job.first_arena(cfg.arenas);
                    (0..cfg.arenas).map(move |a| stream(r.seed, first + a as u64, Purpose::Policy))
                })
                .collect(),
            shuffle: reps
                .iter()
                .map(|r| stream(r.seed, job.rank_key(u64::MAX >> 8), Purpose::Policy))
                .collect(),
            progress: Progress::default(),
            obs: vec![0; cfg.rollout * rows * obs_len],
            taken: vec![0; cfg.rollout * rows],
            rewards: vec![0.0; cfg.rollout * rows],
            terminated: vec![0.0; cfg.rollout * rows],
            truncated: vec![0.0; cfg.rollout * rows],
            final_q: vec![0.0; cfg.rollout * rows],
            final_input: Vec::new(),
            final_nets: Vec::new(),
            q_max: vec![0.0; (cfg.rollout + 1) * rows],
            returns: vec![0.0; cfg.rollout * rows],
            input_row: vec![0; rows * obs_len],
            nets: (0..rows)
                .map(|g| {
                    let (r, local) = (g / per, g % per);
                    (r * single.nets + if cfg.shared { 0 } else { local % learners }) as u32
                })
                .collect(),
            // The order minibatches are cut from: rows of the rollout, or whole sequences.
            index: vec![
                (0..(if width > 0 { per } else { cfg.rollout * per }) as u32).collect();
                replicas
            ],
            seq,
            hidden: Vec::new(),
            ended: vec![0; per],
            mb: Minibatch::default(),
            nets_per_replica: single.nets,
            reps,
            cfg: cfg.clone(),
        })
    }

    /// [`Pqn::new`] behind the [`Learner`] seam (the registry's constructor).
    pub(crate) fn boxed(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<BoxedLearner, TrainError> {
        Ok(Box::new(Pqn::new_in(cfg, loaded, device, job)?))
    }

    /// The network stack's shape.
    pub fn spec(&self) -> StackSpec {
        self.spec
    }

    /// Lets `frozen` act for its slots from now on (their networks still train on what they
    /// see, but never act).
    pub fn freeze_others(&mut self, frozen: FrozenOthers) {
        self.frozen = Some(frozen);
    }

    /// Takes back the frozen policy given to [`Pqn::freeze_others`]; every slot learns and
    /// acts again.
    pub fn take_frozen(&mut self) -> Option<FrozenOthers> {
        self.frozen.take()
    }

    /// Current observations of every replica as network input rows (`[S * B * N, input]`):
    /// the observation bytes, plus the learner's one-hot index with shared parameters.
    fn current_input(&mut self) -> &[u8] {
        let (n, d) = (self.learners, self.obs_len);
        let o = self.batches[0].layout().obs_len;
        let per = self.cfg.arenas * n * d;
        for (r, b) in self.batches.iter().enumerate() {
            write_input(
                &b.buffers().obs,
                n,
                o,
                d,
                &mut self.input_row[r * per..(r + 1) * per],
            );
        }
        &self.input_row
    }

    /// Replica 0's current input rows and their networks.
    fn replica0_input(&mut self) -> (Vec<u8>, Vec<u32>) {
        let (per, d) = (self.cfg.arenas * self.learners, self.obs_len);
        let input = self.current_input()[..per * d].to_vec();
        (input, self.nets[..per].to_vec())
    }

    // --------------------------------------------------------------------------------------
    // Rollout
    // --------------------------------------------------------------------------------------

    /// Q-values `[R, A]` of network outputs `[R, head]` whose row r went through network
    /// `nets[r]`: each row read by its replica's head.
    fn q_of_rows(&self, out: Vec<f32>, nets: &[u32]) -> Vec<f32> {
        q_values_by_replica(&self.heads, out, nets, self.nets_per_replica)
    }

    /// The exploration rate at the current update (replica 0's).
    pub fn epsilon(&self) -> f32 {
        epsilon_by_updates(&self.reps[0], self.progress.update)
    }

    /// Each replica's exploration rate at the current update.
    fn epsilons(&self) -> Vec<f32> {
        let update = self.progress.update;
        self.reps
            .iter()
            .map(|r| epsilon_by_updates(r, update))
            .collect()
    }

    fn rollout(&mut self, epsilons: &[f32]) -> Result<(), TrainError> {
        let (n, a, d) = (self.learners, self.actions, self.obs_len);
        let arenas = self.cfg.arenas;
        let per = arenas * n;
        let rows = self.replicas * per;
        let thresholds: Vec<u64> = epsilons
            .iter()
            .map(|e| crate::rng::threshold(*e as f64))
            .collect();
        let nets = std::mem::take(&mut self.nets);
        let mut fixed = vec![0u8; per];
        for t in 0..self.cfg.rollout {
            let input = self.current_input().to_vec();
            gather_hidden(&self.batches, &mut self.hidden);
            if let Some(seq) = &mut self.seq {
                seq.before_step(t, self.cfg.rollout, &self.hidden);
            }
            let out = self
                .critic
                .act(Input::U8(&input), &nets, &mut self.hidden)?;
            scatter_hidden(&self.hidden, &mut self.batches);
            let q = self.q_of_rows(out, &nets);
            self.obs[t * rows * d..(t + 1) * rows * d].copy_from_slice(&input);
            for (r, batch) in self.batches.iter_mut().enumerate() {
                let (at, q_r) = (t * rows + r * per, &q[r * per * a..(r + 1) * per * a]);
                for (local, row) in q_r.chunks_exact(a).enumerate() {
                    self.q_max[at + local] = max_value(row);
                }
                let streams = &mut self.explore[r * arenas..(r + 1) * arenas];
                act_epsilon_greedy(streams, q_r, a, thresholds[r], batch.actions_mut());
                if let Some(f) = &mut self.frozen {
                    f.policy.actions(&batch.buffers().obs, &mut fixed)?;
                    let chosen = batch.actions_mut();
                    for local in (0..per).filter(|l| f.slots[l % n]) {
                        chosen[local] = fixed[local];
                    }
                }
                for (local, &action) in batch.actions_mut().iter().enumerate() {
                    self.taken[at + local] = action as u32;
                }
                let t0 = std::time::Instant::now();
                batch.step()?;
                self.progress.sim_seconds += t0.elapsed().as_secs_f64();
                let b = batch.buffers();
                for local in 0..per {
                    let arena = local / n;
                    self.rewards[at + local] = b.rewards[local];
                    self.terminated[at + local] = f32::from(b.terminated[arena] != 0);
                    self.truncated[at + local] = f32::from(b.truncated[arena] != 0);
                    self.final_q[at + local] = 0.0;
                }
                ended_rows(batch, n, &mut self.ended);
                if let Some(seq) = &mut self.seq {
                    seq.after_step(r * per, &self.ended);
                }
                if let Some(f) = &mut self.frozen {
                    let starts: Vec<bool> = self.ended.iter().step_by(n).map(|&e| e != 0).collect();
                    f.policy.episodes_start(&starts);
                }
            }
            self.score_final_observations(t, &nets)?;
        }
        // The values of the observations after the last step, from the hidden states they
        // would be acted with (a copy: the next rollout acts from the states themselves).
        let input = self.current_input().to_vec();
        gather_hidden(&self.batches, &mut self.hidden);
        let out = self
            .critic
            .act(Input::U8(&input), &nets, &mut self.hidden)?;
        let q = self.q_of_rows(out, &nets);
        let last = self.cfg.rollout * rows;
        for (g, row) in q.chunks_exact(a).enumerate() {
            self.q_max[last + g] = max_value(row);
        }
        self.nets = nets;
        self.progress.env_steps += self.cfg.steps_per_update();
        Ok(())
    }

    /// Scores the final observations of the arenas that truncated at step `t` (their episode
    /// goes on past the time limit, so its target bootstraps from them): one forward pass over
    /// just those arenas' rows, maxima into `final_q`.
    fn score_final_observations(&mut self, t: usize, nets: &[u32]) -> Result<(), TrainError> {
        let (n, d) = (self.learners, self.obs_len);
        let per = self.cfg.arenas * n;
        let rows = self.replicas * per;
        let o = self.batches[0].layout().obs_len;
        self.final_input.clear();
        self.final_nets.clear();
        let mut final_hidden = Vec::new();
        for (r, batch) in self.batches.iter().enumerate() {
            let b = batch.buffers();
            for arena in (0..self.cfg.arenas).filter(|&k| b.truncated[k] != 0) {
                let at = self.final_input.len();
                self.final_input.resize(at + n * d, 0);
                let src = &b.final_obs[arena * n * o..(arena + 1) * n * o];
                write_input(src, n, o, d, &mut self.final_input[at..]);
                let first = r * per + arena * n;
                self.final_nets.extend_from_slice(&nets[first..first + n]);
                // The hidden states the final observations are seen with: those this step's
                // acting pass left, before the episode's end zeroed them.
                let g = self.spec.state_width();
                final_hidden.extend_from_slice(&self.hidden[first * g..(first + n) * g]);
            }
        }
        if self.final_nets.is_empty() {
            return Ok(());
        }
        let input = Input::U8(&self.final_input);
        let out = self
            .critic
            .act(input, &self.final_nets, &mut final_hidden)?;
        let q = self.q_of_rows(out, &self.final_nets);
        let mut values = q.chunks_exact(self.actions).map(max_value);
        for (r, batch) in self.batches.iter().enumerate() {
            let b = batch.buffers();
            for arena in (0..self.cfg.arenas).filter(|&k| b.truncated[k] != 0) {
                let first = t * rows + r * per + arena * n;
                for slot in &mut self.final_q[first..first + n] {
                    *slot = values.next().unwrap_or(0.0);
                }
            }
        }
        Ok(())
    }

    // --------------------------------------------------------------------------------------
    // Targets
    // --------------------------------------------------------------------------------------

    /// This rollout's lambda-returns (see [`lambda_returns`]), each replica's rows with its own
    /// gamma and lambda.
    fn lambda_returns(&mut self) {
        let steps = RolloutSteps {
            rows: self.replicas * self.cfg.arenas * self.learners,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated: &self.truncated,
            q_max: &self.q_max,
            final_q: &self.final_q,
        };
        let per_replica: Vec<(f32, f32)> = self.reps.iter().map(|r| (r.gamma, r.lambda)).collect();
        lambda_returns_per_replica(&steps, &per_replica, &mut self.returns);
    }

    // --------------------------------------------------------------------------------------
    // Update
    // --------------------------------------------------------------------------------------

    /// Shuffles each replica's row order with its own stream (resuming restores the stream).
    fn shuffle(&mut self) {
        for (index, rng) in self.index.iter_mut().zip(&mut self.shuffle) {
            let total = index.len();
            for k in (1..total).rev() {
                let j = below(rng.next_u32(), k as u32 + 1) as usize;
                index.swap(k, j);
            }
        }
    }

    /// Gathers minibatch `mb`: replica r's mb-th slice of its order, as storage rows
    /// `[t][replica][local row]`.
    fn gather(&mut self, mb: usize, size: usize) {
        let per = self.cfg.arenas * self.learners;
        let rows = self.replicas * per;
        let d = self.obs_len;
        let m = &mut self.mb;
        m.rows.clear();
        for (r, index) in self.index.iter().enumerate() {
            for &i in &index[mb * size..(mb + 1) * size] {
                let (t, local) = (i as usize / per, i as usize % per);
                m.rows.push(t * rows + r * per + local);
            }
        }
        m.obs.clear();
        m.nets.clear();
        m.actions.clear();
        m.targets.clear();
        for &g in &m.rows {
            m.obs.extend_from_slice(&self.obs[g * d..(g + 1) * d]);
            m.nets.push(self.nets[g % rows]);
            m.actions.push(self.taken[g]);
            m.targets.push(self.returns[g]);
        }
    }

    /// Forward and backward of the gathered minibatch: the value loss to the returns; with
    /// several replicas each replica's loss is averaged over its own rows. Returns the mean loss.
    fn minibatch_loss(&mut self, size: usize) -> Result<f32, TrainError> {
        let m = &mut self.mb;
        if self.replicas == 1 {
            self.critic.forward(Input::U8(&m.obs), &m.nets)?;
            let loss = self.head.loss(&m.actions, &m.targets);
            self.critic.loss_backward(&loss)?;
            return Ok(self.critic.last_loss()?);
        }
        let a = self.spec.head;
        let out = self.critic.forward(Input::U8(&m.obs), &m.nets)?;
        m.d_out.resize(out.len(), 0.0);
        let mut sum = 0.0;
        for r in 0..self.replicas {
            let (rows_r, vals) = (r * size..(r + 1) * size, r * size * a..(r + 1) * size * a);
            let loss = self.heads[r].loss(&m.actions[rows_r.clone()], &m.targets[rows_r]);
            sum += loss_and_grad(&loss, &out[vals.clone()], a, &mut m.d_out[vals]);
        }
        self.critic.backward(&m.d_out)?;
        Ok(sum / self.replicas as f32)
    }

    /// PQN-RNN's minibatch `mb`: replica r's mb-th slice of its sequence order, each sequence
    /// replayed whole (see `sequences.rs`). Returns the mean loss.
    fn sequence_loss(&mut self, mb: usize, size: usize) -> Result<f32, TrainError> {
        let per = self.cfg.arenas * self.learners;
        let seqs: Vec<usize> = self
            .index
            .iter()
            .enumerate()
            .flat_map(|(r, index)| {
                index[mb * size..(mb + 1) * size]
                    .iter()
                    .map(move |&i| r * per + i as usize)
            })
            .collect();
        let view = rollout_view(&self.cfg, self.replicas * per, self.obs_len, &self.obs);
        let r = view(&self.taken, &self.returns, &self.nets);
        let Some(seq) = &mut self.seq else {
            return Ok(0.0);
        };
        seq.minibatch_loss(&mut self.critic, &self.heads, &r, &seqs)
    }

    /// One PQN update: rollout, lambda-returns, epochs of shuffled minibatches.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let epsilons = self.epsilons();
        let epsilon = epsilons[0];
        let update = self.progress.update;
        let per_replica_opt: Vec<(f32, AdamConfig)> =
            self.reps.iter().map(|r| optimiser(r, update)).collect();
        let (lr, adam) = per_replica_opt[0];
        // One optimiser setting for the whole stack unless the replicas' differ.
        let per_net: Option<Vec<NetOptim>> =
            per_replica_opt.iter().any(|(_, a)| *a != adam).then(|| {
                per_replica_opt
                    .iter()
                    .flat_map(|(_, a)| {
                        let net = NetOptim {
                            lr: a.lr,
                            max_grad_norm: a.max_grad_norm,
                        };
                        std::iter::repeat_n(net, self.nets_per_replica)
                    })
                    .collect()
            });
        let t0 = std::time::Instant::now();
        let sim_before = self.progress.sim_seconds;
        self.rollout(&epsilons)?;
        self.lambda_returns();
        // Each replica's models at its (undecayed) lr on its own rows, runs of `per` rows.
        let lrs: Vec<f32> = self.reps.iter().map(|r| r.lr).collect();
        let per = self.cfg.arenas * self.learners;
        let opponents = match &mut self.opponents {
            Some(models) => models.score_and_train(&self.obs, &self.taken, &lrs, per)?,
            None => Vec::new(),
        };

        let size = self.index[0].len() / self.cfg.minibatches;
        if size == 0 {
            return Err(TrainError::Config(format!(
                "minibatches {} with network: gru: a minibatch holds whole sequences, one per \
                 learner of an arena, and there are only {} (arenas x learners)",
                self.cfg.minibatches,
                self.index[0].len()
            )));
        }
        let (mut losses, mut count) = (0.0f64, 0);
        for index in &mut self.index {
            for (i, v) in index.iter_mut().enumerate() {
                *v = i as u32;
            }
        }
        for _ in 0..self.cfg.epochs {
            self.shuffle();
            for mb in 0..self.cfg.minibatches {
                let value = match self.seq.is_some() {
                    true => self.sequence_loss(mb, size)?,
                    false => {
                        self.gather(mb, size);
                        self.minibatch_loss(size)?
                    }
                };
                if !value.is_finite() {
                    return Err(TrainError::NonFinite {
                        update: self.progress.update + 1,
                        tensor: "loss".into(),
                        value,
                    });
                }
                losses += value as f64;
                count += 1;
                match &per_net {
                    Some(nets) => self.critic.step_nets(&adam, nets)?,
                    None => self.critic.step(&adam)?,
                }
            }
        }

        if let Some(seq) = &mut self.seq {
            let view = rollout_view(&self.cfg, self.replicas * per, self.obs_len, &self.obs);
            seq.keep_window(&view(&self.taken, &self.returns, &self.nets));
        }

        // --------------------------------------------------------------------------------------
        // Logging
        // --------------------------------------------------------------------------------------
        self.progress.update += 1;
        self.progress.learn_seconds +=
            t0.elapsed().as_secs_f64() - (self.progress.sim_seconds - sim_before);
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
            replica_scalars: if self.replicas == 1 {
                Vec::new()
            } else {
                epsilons
                    .iter()
                    .zip(&per_replica_opt)
                    .map(|(e, (lr, _))| (*e, *lr))
                    .collect()
            },
            episodes,
            per_replica,
            opponents: None,
            opponents_per_replica: Vec::new(),
        }
        .with_opponents(opponents, self.replicas))
    }
}

/// A view of the rollout storage for gathering sequences.
fn rollout_view<'a>(
    cfg: &RunConfig,
    rows: usize,
    input: usize,
    obs: &'a [u8],
) -> impl Fn(&'a [u32], &'a [f32], &'a [u32]) -> Rollout<'a> {
    let steps = cfg.rollout;
    move |taken, returns, nets| Rollout {
        steps,
        rows,
        input,
        obs,
        taken,
        returns,
        nets,
    }
}

// ------------------------------------------------------------------------------------------
// Acting, predictions and checkpoints (the Learner seam)
// ------------------------------------------------------------------------------------------

impl Learner for Pqn {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        Pqn::update(self)
    }

    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        let o = self.batches[0].layout().obs_len;
        let shape = (self.learners, o, self.spec.input);
        q_rows(&mut self.critic, &self.head, obs, shape, &mut [])
    }

    fn q_values_recurrent(
        &mut self,
        obs: &[u8],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, TrainError> {
        let o = self.batches[0].layout().obs_len;
        let shape = (self.learners, o, self.spec.input);
        q_rows(&mut self.critic, &self.head, obs, shape, hidden)
    }

    fn opponent_predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        let (input, nets) = self.replica0_input();
        let n = self.learners as u32;
        let nets: Vec<u32> = (0..nets.len() as u32).map(|r| r % n).collect();
        match &mut self.opponents {
            Some(m) => Ok(Some(m.probs(&input, &nets)?)),
            None => Ok(None),
        }
    }

    fn set_opponent_params(&mut self, p: &[f32]) -> Result<(), TrainError> {
        set_models_params(&mut self.opponents, p)
    }

    fn save_state(&mut self, extra: &mut NamedTensors) -> Result<String, TrainError> {
        let state = PqnState {
            update: self.progress.update,
            env_steps: self.progress.env_steps,
            explore: self.explore.clone(),
            shuffle: self.shuffle.clone(),
            batches: self.batches.iter_mut().map(|b| b.save_state()).collect(),
            models: None,
            models_state: save_models(&mut self.opponents, extra)?,
            sequences: self.seq.as_ref().map(|seq| seq.save(extra)),
        };
        for (r, b) in self.batches.iter().enumerate() {
            if !b.hidden_states().is_empty() {
                extra.push((
                    format!("pqn.hidden.{r}"),
                    Tensor::F32(b.hidden_states().to_vec()),
                ));
            }
        }
        Ok(serde_json::to_string(&state)?)
    }

    fn load_state(&mut self, json: &str, extra: &[(String, Tensor)]) -> Result<Resume, TrainError> {
        let s: PqnState = serde_json::from_str(json)?;
        BadField::check_len("batches", self.batches.len(), s.batches.len())?;
        BadField::check_len("explore", self.explore.len(), s.explore.len())?;
        BadField::check_len("shuffle", self.shuffle.len(), s.shuffle.len())?;
        for (b, state) in self.batches.iter_mut().zip(&s.batches) {
            b.load_state(state)?;
        }
        let models = s.models_state.as_ref();
        let resume = load_models(&mut self.opponents, models, s.models.as_deref(), extra)?;
        match (&mut self.seq, &s.sequences) {
            (Some(seq), Some(saved)) => seq.load(saved, extra, self.obs_len)?,
            (None, None) => {}
            (Some(_), None) | (None, Some(_)) => {
                return Err(BadField::range(
                    "sequences",
                    "the recurrent state exactly when network: gru",
                    "a checkpoint of the other network kind",
                )
                .into());
            }
        }
        for (r, b) in self.batches.iter_mut().enumerate() {
            let h = b.hidden_states_mut();
            if !h.is_empty() {
                let name = format!("pqn.hidden.{r}");
                h.copy_from_slice(super::tensors::f32s(extra, &name, h.len())?);
            }
        }
        self.progress.update = s.update;
        self.progress.env_steps = s.env_steps;
        self.explore = s.explore;
        self.shuffle = s.shuffle;
        Ok(resume)
    }

    fn progress(&self) -> &Progress {
        &self.progress
    }

    fn progress_mut(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn batch(&mut self) -> &mut EnvBatch {
        &mut self.batches[0]
    }

    fn critics(&mut self) -> Vec<&mut Critic> {
        vec![&mut self.critic]
    }
}

// ------------------------------------------------------------------------------------------
// Memory plan
// ------------------------------------------------------------------------------------------

/// PQN's tensors for the memory preflight: the Q-network stack of every replica with a pass of
/// a training minibatch (or of acting on every learner), the rollout storage, and the
/// opponent models, which score a whole rollout in one pass.
pub(crate) fn plan(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
) -> Vec<PlanTensor> {
    let replicas = cfg.replica_count() as u64;
    let (b, t, n) = (
        cfg.arenas as u64,
        cfg.rollout as u64,
        layout.learners as u64,
    );
    let rows_per_step = replicas * b * n;
    let pass_rows = super::sizing::pqn_pass_rows(cfg, layout);
    let pass = match cfg.network {
        super::config::NetworkKind::Mlp => "rollout x arenas x learners / minibatches",
        super::config::NetworkKind::Gru => {
            "(memory_window + rollout) x arenas x learners / minibatches"
        }
    };
    let (mut tensors, spec) = qnet_tensors(cfg, loaded, layout, backend, pass_rows, pass);
    let d = spec.input as u64;
    let g = spec.state_width() as u64;
    if g > 0 {
        let (w, rows) = (cfg.memory_window as u64, rows_per_step);
        let mb = rows / cfg.minibatches as u64 * (w + t);
        tensors.push(PlanTensor {
            name: "recurrent state and sequences".into(),
            shape: format!(
                "{} rows x {g} hidden x 4 B x 5, {t} + {w} steps of episode starts and memory, \
                 minibatches of {} sequence steps",
                fmt(rows),
                fmt(mb)
            ),
            // The batches' hidden states, the acting pass's copy, the rollout's and the
            // window's start states and the memory's; episode starts of the rollout, the next
            // step and the memory; the memory's inputs; a minibatch's gathered input, starts,
            // actions, targets, mask and its per-replica copies (outputs and gradients are the
            // critic's activations).
            bytes: 5 * rows * g * 4
                + (t + 1 + w) * rows
                + w * rows * d
                + mb * (d + 1 + 4 * 3 + 4 * 3),
            knobs: "lower gru_hidden, memory_window, arenas or seeds",
        });
    }
    tensors.push(PlanTensor {
        name: "rollout storage".into(),
        shape: format!(
            "{t} steps x {} rows x ({d} B obs + 32 B)",
            fmt(rows_per_step)
        ),
        bytes: t * rows_per_step * (d + 32) + rows_per_step * 4,
        knobs: "lower rollout, arenas or seeds",
    });
    if cfg.opponent_models {
        let rows = replicas * t * b * n;
        let extra = rows * (4 + 4 * n);
        tensors.push(opponent_tensor(
            cfg, layout, spec.input, backend, rows, extra,
        ));
    }
    let models = if cfg.opponent_models {
        opponent_spec(cfg, layout, spec.input).params() as u64
    } else {
        0
    };
    // With recurrent networks an arena's checkpoint also holds its learners' hidden states,
    // episode-start flags and memory (tensors, counted with the arena's state).
    let recurrent = if g > 0 {
        n * (4 * g * 2 + 1 + cfg.memory_window as u64 * (d + 1))
    } else {
        0
    };
    let (params, arenas) = (
        spec.params() as u64,
        (replicas * b, layout.bytes_per_arena() as u64 + recurrent),
    );
    tensors.push(checkpoint_tensor(cfg, (params, false), models, 0, arenas));
    tensors
}

#[cfg(test)]
mod tests;
