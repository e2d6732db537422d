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
//! This file is one run: one seed, one set of hyperparameters. Seeds and sweeps are the
//! replica layer's (`train::replicated`).
//!
//! Configuration read here (see [`RunConfig`]): `arenas`, `rollout` (T), `epochs`,
//! `minibatches`, `gamma`, `lambda`, `lr`/`lr_decay`/`max_grad_norm`/`radam`, `eps_*`,
//! `shared`, `hidden`, `layers`, `network`/`memory_window` (PQN-RNN, `sequences.rs`),
//! `opponent_models`, and the value loss's `loss`, `huber_delta`, `bins`, `v_min`, `v_max`,
//! `sigma` (`q_head.rs`).

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
use super::q_head::QHead;
use super::qnet::{q_rows, row_nets, stack_spec, write_input};
use super::recurrent::{ended_rows, gather_hidden, scatter_hidden};
pub use super::returns::{RolloutSteps, lambda_returns};
use super::run_dir::Resume;
use super::schedule::{epsilon_by_updates, optimiser};
use super::stats::UpdateStats;
use super::tensors::{NamedTensors, Tensor};
use crate::critic::{Chosen, Critic, Input, StackSpec};
use crate::dist::Job;
use crate::engine::{BatchState, EnvBatch};
use crate::error::BadField;
use crate::rng::{Purpose, below, stream};
use crate::scenario::LoadedScenario;
pub use sequences::{Memory, SeqSaved};
use sequences::{Rollout, SeqState};

/// A PQN learner with its arenas.
pub struct Pqn {
    cfg: RunConfig,
    /// The arenas.
    pub batch: EnvBatch,
    /// The Q-networks, one per learner slot (or one shared).
    pub critic: Critic,
    spec: StackSpec,
    /// How outputs become Q-values, and the loss.
    head: QHead,
    learners: usize,
    actions: usize,
    obs_len: usize,
    /// Exploration streams, one per arena.
    explore: Vec<ChaCha8Rng>,
    /// Minibatch shuffling.
    shuffle: ChaCha8Rng,
    progress: Progress,
    // Rollout storage, reused every update: [T, rows, input], [T, rows], [T + 1, rows].
    obs: Vec<u8>,
    taken: Vec<u32>,
    rewards: Vec<f32>,
    terminated: Vec<f32>,
    truncated: Vec<f32>,
    /// `[T, rows]` max Q of the final observation where the step truncated (0 elsewhere).
    final_q: Vec<f32>,
    q_max: Vec<f32>,
    returns: Vec<f32>,
    input_row: Vec<u8>,
    /// Each row's network.
    nets: Vec<u32>,
    /// The order minibatches are cut from: rows of the rollout, or whole sequences.
    index: Vec<u32>,
    mb: Minibatch,
    opponents: Option<OpponentModels>,
    /// With recurrent networks: the rollout's sequences (PQN-RNN).
    seq: Option<SeqState>,
    /// `[rows, g]` the hidden states of the current acting pass (gathered from the batch).
    hidden: Vec<f32>,
    /// `[rows]` scratch: which rows' episodes ended in the last step.
    ended: Vec<u8>,
}

/// A minibatch's rows gathered out of the rollout storage, reused.
#[derive(Default)]
struct Minibatch {
    obs: Vec<u8>,
    nets: Vec<u32>,
    actions: Vec<u32>,
    targets: Vec<f32>,
}

/// The learner's own evolving state beyond the parameters (checkpoints).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PqnState {
    /// Updates done.
    pub update: u64,
    /// Environment steps done.
    pub env_steps: u64,
    /// Exploration streams, one per arena.
    pub explore: Vec<ChaCha8Rng>,
    /// The shuffling stream (a list of one).
    pub shuffle: Vec<ChaCha8Rng>,
    /// The arenas (a list of one batch).
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
    /// the batch's hidden states are tensors of the checkpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequences: Option<SeqSaved>,
}

/// The checkpoint tensor of the batch's hidden states.
const HIDDEN: &str = "pqn.hidden.0";

impl Pqn {
    /// A fresh learner: arenas and networks seeded with `cfg.seed`.
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
        let spec = stack_spec(cfg, loaded);
        let critic = Critic::new(spec, cfg.seed, device)?.data_parallel(job);
        let width = spec.state_width();
        let mut batch = cfg.training_batch(loaded, cfg.seed, job)?;
        batch.start_episode_log(1 << 16);
        batch.set_hidden_width(width);
        let head = QHead::of(cfg);
        let actions = spec.head / head.outputs_per_action();
        let (learners, obs_len) = (loaded.scenario.learners_per_arena(), spec.input);
        let rows = cfg.arenas * learners;
        let seq = (width > 0).then(|| SeqState::new(width, cfg.memory_window, cfg.rollout, rows));
        let opponents = match cfg.opponent_models {
            true => Some(OpponentModels::new(
                cfg,
                learners,
                actions,
                obs_len,
                (cfg.rollout * rows / cfg.minibatches).max(1),
                (device, job),
            )?),
            false => None,
        };
        let first = job.first_arena(cfg.arenas);
        let (t, seqs) = (cfg.rollout, width > 0);
        Ok(Pqn {
            explore: (0..cfg.arenas)
                .map(|a| stream(cfg.seed, first + a as u64, Purpose::Policy))
                .collect(),
            shuffle: stream(cfg.seed, job.rank_key(u64::MAX >> 8), Purpose::Policy),
            opponents,
            batch,
            critic,
            spec,
            head,
            learners,
            actions,
            obs_len,
            progress: Progress::default(),
            obs: vec![0; t * rows * obs_len],
            taken: vec![0; t * rows],
            rewards: vec![0.0; t * rows],
            terminated: vec![0.0; t * rows],
            truncated: vec![0.0; t * rows],
            final_q: vec![0.0; t * rows],
            q_max: vec![0.0; (t + 1) * rows],
            returns: vec![0.0; t * rows],
            input_row: vec![0; rows * obs_len],
            nets: row_nets(rows, learners, cfg.shared),
            index: (0..(if seqs { rows } else { t * rows }) as u32).collect(),
            seq,
            hidden: Vec::new(),
            ended: vec![0; rows],
            mb: Minibatch::default(),
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

    /// The exploration rate at the current update.
    pub fn epsilon(&self) -> f32 {
        epsilon_by_updates(&self.cfg, self.progress.update)
    }

    /// The current observations as network input rows (`[B * N, input]`): the observation
    /// bytes, plus the learner's one-hot index with shared parameters.
    fn current_input(&mut self) -> Vec<u8> {
        let (n, d) = (self.learners, self.obs_len);
        let o = self.batch.layout().obs_len;
        write_input(&self.batch.buffers().obs, n, o, d, &mut self.input_row);
        self.input_row.clone()
    }

    /// Acts for T steps with epsilon-greedy actions, storing what the returns and the
    /// minibatches read.
    fn rollout(&mut self, epsilon: f32) -> Result<(), TrainError> {
        let (n, a, d) = (self.learners, self.actions, self.obs_len);
        let rows = self.cfg.arenas * n;
        let threshold = crate::rng::threshold(epsilon as f64);
        let nets = std::mem::take(&mut self.nets);
        for t in 0..self.cfg.rollout {
            let input = self.current_input();
            gather_hidden(std::slice::from_ref(&self.batch), &mut self.hidden);
            if let Some(seq) = &mut self.seq {
                seq.before_step(t, self.cfg.rollout, &self.hidden);
            }
            let out = (self.critic).act(Input::U8(&input), &nets, &mut self.hidden)?;
            scatter_hidden(&self.hidden, std::slice::from_mut(&mut self.batch));
            let q = self.head.q_values(out);
            self.obs[t * rows * d..(t + 1) * rows * d].copy_from_slice(&input);
            let at = t * rows;
            for (row, values) in q.chunks_exact(a).enumerate() {
                self.q_max[at + row] = max_value(values);
            }
            let batch = &mut self.batch;
            act_epsilon_greedy(&mut self.explore, &q, a, threshold, batch.actions_mut());
            let t0 = std::time::Instant::now();
            batch.step()?;
            self.progress.sim_seconds += t0.elapsed().as_secs_f64();
            // The actions played (slots a fixed actor plays for took its actions in the step).
            let b = batch.buffers();
            for row in 0..rows {
                let arena = row / n;
                self.taken[at + row] = b.actions[row] as u32;
                self.rewards[at + row] = b.rewards[row];
                self.terminated[at + row] = f32::from(b.terminated[arena] != 0);
                self.truncated[at + row] = f32::from(b.truncated[arena] != 0);
                self.final_q[at + row] = 0.0;
            }
            ended_rows(batch, n, &mut self.ended);
            if let Some(seq) = &mut self.seq {
                seq.after_step(0, &self.ended);
            }
            self.score_final_observations(t, &nets)?;
        }
        // The values of the observations after the last step, from the hidden states they
        // would be acted with (a copy: the next rollout acts from the states themselves).
        let input = self.current_input();
        gather_hidden(std::slice::from_ref(&self.batch), &mut self.hidden);
        let out = (self.critic).act(Input::U8(&input), &nets, &mut self.hidden)?;
        let last = self.cfg.rollout * rows;
        for (row, values) in self.head.q_values(out).chunks_exact(a).enumerate() {
            self.q_max[last + row] = max_value(values);
        }
        self.nets = nets;
        self.progress.env_steps += self.cfg.steps_per_update();
        Ok(())
    }

    /// Scores the final observations of the arenas that truncated at step `t` (their episode
    /// goes on past the time limit, so its target bootstraps from them): one forward pass over
    /// just those arenas' rows, maxima into `final_q`.
    fn score_final_observations(&mut self, t: usize, nets: &[u32]) -> Result<(), TrainError> {
        let (n, d, g) = (self.learners, self.obs_len, self.spec.state_width());
        let o = self.batch.layout().obs_len;
        let b = self.batch.buffers();
        let truncated: Vec<usize> = (0..self.cfg.arenas)
            .filter(|&k| b.truncated[k] != 0)
            .collect();
        if truncated.is_empty() {
            return Ok(());
        }
        let (mut input, mut final_nets, mut hidden) = (Vec::new(), Vec::new(), Vec::new());
        for &arena in &truncated {
            let at = input.len();
            input.resize(at + n * d, 0);
            let src = &b.final_obs[arena * n * o..(arena + 1) * n * o];
            write_input(src, n, o, d, &mut input[at..]);
            final_nets.extend_from_slice(&nets[arena * n..(arena + 1) * n]);
            // The hidden states the final observations are seen with: those this step's
            // acting pass left, before the episode's end zeroed them.
            hidden.extend_from_slice(&self.hidden[arena * n * g..(arena + 1) * n * g]);
        }
        let out = (self.critic).act(Input::U8(&input), &final_nets, &mut hidden)?;
        let q = self.head.q_values(out);
        let rows = self.cfg.arenas * n;
        for (&arena, values) in truncated.iter().zip(q.chunks_exact(self.actions * n)) {
            let first = t * rows + arena * n;
            for (slot, v) in self.final_q[first..first + n]
                .iter_mut()
                .zip(values.chunks(self.actions))
            {
                *slot = max_value(v);
            }
        }
        Ok(())
    }

    /// Gathers minibatch `mb` of `size` rows out of the rollout, in the shuffled order.
    fn gather(&mut self, mb: usize, size: usize) {
        let (d, m) = (self.obs_len, &mut self.mb);
        let rows = self.cfg.arenas * self.learners;
        m.obs.clear();
        m.nets.clear();
        m.actions.clear();
        m.targets.clear();
        for &i in &self.index[mb * size..(mb + 1) * size] {
            let g = i as usize;
            m.obs.extend_from_slice(&self.obs[g * d..(g + 1) * d]);
            m.nets.push(self.nets[g % rows]);
            m.actions.push(self.taken[g]);
            m.targets.push(self.returns[g]);
        }
    }

    /// Forward and backward of minibatch `mb`: the value loss to the returns, over gathered
    /// rows, or over whole sequences (PQN-RNN, `sequences.rs`). Returns the loss.
    fn minibatch_loss(&mut self, mb: usize, size: usize) -> Result<f32, TrainError> {
        if self.seq.is_some() {
            let seqs: Vec<usize> = self.index[mb * size..(mb + 1) * size]
                .iter()
                .map(|&i| i as usize)
                .collect();
            let rows = self.cfg.arenas * self.learners;
            let view = rollout_view(&self.cfg, rows, self.obs_len, &self.obs);
            let r = view(&self.taken, &self.returns, &self.nets);
            let Some(seq) = &mut self.seq else {
                return Ok(0.0);
            };
            return seq.minibatch_loss(&mut self.critic, &[self.head], &r, &seqs);
        }
        self.gather(mb, size);
        let m = &self.mb;
        self.critic.forward(Input::U8(&m.obs), &m.nets)?;
        self.critic
            .loss_backward(&self.head.loss(&m.actions, &m.targets))?;
        Ok(self.critic.last_loss()?)
    }

    /// One PQN update: rollout, lambda-returns, epochs of shuffled minibatches.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let epsilon = self.epsilon();
        let (lr, adam) = optimiser(&self.cfg, self.progress.update);
        let t0 = std::time::Instant::now();
        let sim_before = self.progress.sim_seconds;
        self.rollout(epsilon)?;
        let rows = self.cfg.arenas * self.learners;
        let steps = RolloutSteps {
            rows,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated: &self.truncated,
            q_max: &self.q_max,
            final_q: &self.final_q,
        };
        lambda_returns(&steps, self.cfg.gamma, self.cfg.lambda, &mut self.returns);
        // The opponent models learn from the same rollout, at the (undecayed) lr.
        let opponents = match &mut self.opponents {
            Some(models) => models.score_and_train(&self.obs, &self.taken, &[self.cfg.lr], rows)?,
            None => Vec::new(),
        };

        let size = self.index.len() / self.cfg.minibatches;
        if size == 0 {
            return Err(TrainError::Config(format!(
                "minibatches {} with network: gru: a minibatch holds whole sequences, one per \
                 learner of an arena, and there are only {} (arenas x learners)",
                self.cfg.minibatches,
                self.index.len()
            )));
        }
        let (mut losses, mut count) = (0.0f64, 0);
        for (i, v) in self.index.iter_mut().enumerate() {
            *v = i as u32;
        }
        for _ in 0..self.cfg.epochs {
            // Fisher-Yates with the run's own stream (resuming restores the stream).
            for k in (1..self.index.len()).rev() {
                let j = below(self.shuffle.next_u32(), k as u32 + 1) as usize;
                self.index.swap(k, j);
            }
            for mb in 0..self.cfg.minibatches {
                let value = self.minibatch_loss(mb, size)?;
                if !value.is_finite() {
                    return Err(TrainError::NonFinite {
                        update: self.progress.update + 1,
                        tensor: "loss".into(),
                        value,
                    });
                }
                losses += value as f64;
                count += 1;
                self.critic.step(&adam)?;
            }
        }
        if let Some(seq) = &mut self.seq {
            // The window of this rollout that the next one's burn-in replays.
            let view = rollout_view(&self.cfg, rows, self.obs_len, &self.obs);
            seq.keep_window(&view(&self.taken, &self.returns, &self.nets));
        }

        self.progress.update += 1;
        self.progress.learn_seconds +=
            t0.elapsed().as_secs_f64() - (self.progress.sim_seconds - sim_before);
        Ok(UpdateStats {
            loss: (losses / count.max(1) as f64) as f32,
            epsilon,
            lr,
            replica_scalars: Vec::new(),
            episodes: self.batch.take_episodes(),
            per_replica: Vec::new(),
            opponents: None,
            opponents_per_replica: Vec::new(),
        }
        .with_opponents(opponents, 1))
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

impl Learner for Pqn {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        Pqn::update(self)
    }

    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        self.q_values_recurrent(obs, &mut [])
    }

    fn q_values_recurrent(
        &mut self,
        obs: &[u8],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, TrainError> {
        let shape = (self.learners, self.batch.layout().obs_len, self.spec.input);
        q_rows(&mut self.critic, &self.head, obs, shape, hidden)
    }

    fn opponent_predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        let input = self.current_input();
        let n = self.learners as u32;
        let nets: Vec<u32> = (0..self.nets.len() as u32).map(|r| r % n).collect();
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
            shuffle: vec![self.shuffle.clone()],
            batches: vec![self.batch.save_state()],
            models: None,
            models_state: save_models(&mut self.opponents, extra)?,
            sequences: self.seq.as_ref().map(|seq| seq.save(extra)),
        };
        let h = self.batch.hidden_states();
        if !h.is_empty() {
            extra.push((HIDDEN.into(), Tensor::F32(h.to_vec())));
        }
        Ok(serde_json::to_string(&state)?)
    }

    fn load_state(&mut self, json: &str, extra: &[(String, Tensor)]) -> Result<Resume, TrainError> {
        let s: PqnState = serde_json::from_str(json)?;
        BadField::check_len("batches", 1, s.batches.len())?;
        BadField::check_len("explore", self.explore.len(), s.explore.len())?;
        BadField::check_len("shuffle", 1, s.shuffle.len())?;
        self.batch.load_state(&s.batches[0])?;
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
        let h = self.batch.hidden_states_mut();
        if !h.is_empty() {
            h.copy_from_slice(super::tensors::f32s(extra, HIDDEN, h.len())?);
        }
        self.progress.update = s.update;
        self.progress.env_steps = s.env_steps;
        self.explore = s.explore;
        self.shuffle = s.shuffle[0].clone();
        Ok(resume)
    }

    fn progress(&self) -> &Progress {
        &self.progress
    }

    fn progress_mut(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn batch(&mut self) -> &mut EnvBatch {
        &mut self.batch
    }

    fn critics(&mut self) -> Vec<&mut Critic> {
        vec![&mut self.critic]
    }
}

#[cfg(test)]
mod tests;
