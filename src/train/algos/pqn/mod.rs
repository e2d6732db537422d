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
mod state;

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use crate::critic::{Chosen, Critic, Input};
use crate::dist::Job;
use crate::engine::EnvBatch;
use crate::rng::{Purpose, below, stream};
use crate::scenario::LoadedScenario;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::kit::explore::{act_epsilon_greedy, max_legal};
use crate::train::kit::opponent::{OpponentModels, OpponentNetworks, set_models_params};
use crate::train::kit::q_head::QHead;
use crate::train::kit::qnet::{q_rows, row_nets, stack_spec, truncated_rows, write_input};
use crate::train::kit::recurrent::{ended_rows, gather_hidden, scatter_hidden};
use crate::train::kit::returns::{Minibatch, RolloutBuffer};
pub use crate::train::kit::returns::{RolloutSteps, lambda_returns};
use crate::train::kit::schedule::{epsilon_by_updates, optimiser};
use crate::train::kit::stats::UpdateStats;
use crate::train::learner::{Learner, Progress};
use crate::train::run::run_dir::Resume;
use crate::train::tensors::{NamedTensors, Tensor};
pub use sequences::{Memory, SeqSaved};
use sequences::{Rollout, SeqState};
pub use state::PqnState;

/// A PQN learner with its arenas.
pub struct Pqn {
    cfg: RunConfig,
    /// The arenas.
    pub batch: EnvBatch,
    /// The Q-networks, one per learner slot (or one shared).
    pub critic: Critic,
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
    /// The rollout, reused every update (its values are max Q).
    buf: RolloutBuffer,
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
        let seq =
            (width > 0).then(|| SeqState::new(width, cfg.network.memory_window, cfg.rollout, rows));
        let opponents = match cfg.learn.opponent_models {
            true => Some(OpponentModels::new(
                cfg,
                learners,
                actions,
                obs_len,
                (cfg.rollout * rows / cfg.pqn.minibatches).max(1),
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
            head,
            learners,
            actions,
            obs_len,
            progress: Progress::default(),
            buf: RolloutBuffer::new(t, rows, obs_len),
            input_row: vec![0; rows * obs_len],
            nets: row_nets(rows, learners, cfg.network.shared),
            index: (0..(if seqs { rows } else { t * rows }) as u32).collect(),
            seq,
            hidden: Vec::new(),
            ended: vec![0; rows],
            mb: Minibatch::default(),
            cfg: cfg.clone(),
        })
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
        let shaping = self.cfg.reward_shaping_at(self.progress.env_steps);
        self.batch.set_reward_shaping(shaping);
        for t in 0..self.cfg.rollout {
            let input = self.current_input();
            gather_hidden(std::slice::from_ref(&self.batch), &mut self.hidden);
            if let Some(seq) = &mut self.seq {
                seq.before_step(t, self.cfg.rollout, &self.hidden);
            }
            let out = (self.critic).act(Input::U8(&input), &nets, &mut self.hidden)?;
            scatter_hidden(&self.hidden, std::slice::from_mut(&mut self.batch));
            let q = self.head.q_values(out);
            self.buf.obs[t * rows * d..(t + 1) * rows * d].copy_from_slice(&input);
            // Bootstraps from the best legal action where the substrate masks some.
            let mask = self.batch.action_mask();
            for (row, values) in q.chunks_exact(a).enumerate() {
                self.buf.q_max[t * rows + row] = max_legal(values, mask, row);
            }
            let batch = &mut self.batch;
            act_epsilon_greedy(
                &mut self.explore,
                &q,
                a,
                threshold,
                batch.actions_and_mask(),
            );
            let t0 = std::time::Instant::now();
            batch.step()?;
            self.progress.sim_seconds += t0.elapsed().as_secs_f64();
            // The actions played (slots a fixed actor plays took its actions in the step).
            self.buf.record(t, batch.buffers(), n);
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
        let mask = self.batch.action_mask();
        for (row, values) in self.head.q_values(out).chunks_exact(a).enumerate() {
            self.buf.q_max[last + row] = max_legal(values, mask, row);
        }
        self.nets = nets;
        self.progress.env_steps += self.cfg.steps_per_update();
        Ok(())
    }

    /// Scores the final observations of the arenas that truncated at step `t` (their episode
    /// goes on past the time limit, so its target bootstraps from them): one forward pass over
    /// just those arenas' rows, maxima into `final_q`.
    fn score_final_observations(&mut self, t: usize, nets: &[u32]) -> Result<(), TrainError> {
        let Some(mut f) = truncated_rows(&self.batch, nets, &self.hidden, self.obs_len) else {
            return Ok(());
        };
        let out = (self.critic).act(Input::U8(&f.input), &f.nets, &mut f.hidden)?;
        let (n, a) = (self.learners, self.actions);
        let q = self.head.q_values(out);
        // The best action legal in the final state where the substrate masks some.
        let mask = self.batch.final_action_mask();
        for (&arena, values) in f.arenas.iter().zip(q.chunks_exact(a * n)) {
            let first = t * self.buf.rows + arena * n;
            let slots = self.buf.final_q[first..first + n].iter_mut();
            for (k, (slot, v)) in slots.zip(values.chunks(a)).enumerate() {
                *slot = max_legal(v, mask, arena * n + k);
            }
        }
        Ok(())
    }

    /// Forward and backward of minibatch `mb`: the value loss to the returns, over gathered
    /// rows, or over whole sequences (PQN-RNN, `sequences.rs`). Returns the loss.
    fn minibatch_loss(&mut self, mb: usize, size: usize) -> Result<f32, TrainError> {
        if self.seq.is_some() {
            let seqs: Vec<usize> = self.index[mb * size..(mb + 1) * size]
                .iter()
                .map(|&i| i as usize)
                .collect();
            let r = sequences_of(&self.buf, &self.nets);
            let Some(seq) = &mut self.seq else {
                return Ok(0.0);
            };
            return seq.minibatch_loss(&mut self.critic, self.head, &r, &seqs);
        }
        let picks = &self.index[mb * size..(mb + 1) * size];
        self.buf.gather(picks, &self.nets, &mut self.mb);
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
        self.buf
            .lambda_returns(self.cfg.learn.gamma, self.cfg.pqn.lambda);
        // The opponent models learn from the same rollout, at the (undecayed) lr.
        let opponents = match &mut self.opponents {
            Some(models) => {
                Some(models.score_and_train(&self.buf.obs, &self.buf.taken, self.cfg.learn.lr)?)
            }
            None => None,
        };

        let size = self.index.len() / self.cfg.pqn.minibatches;
        if size == 0 {
            return Err(TrainError::Config(format!(
                "pqn.minibatches {} with network.kind: gru: a minibatch holds whole sequences, one per \
                 learner of an arena, and there are only {} (arenas x learners)",
                self.cfg.pqn.minibatches,
                self.index.len()
            )));
        }
        let (mut losses, mut count) = (0.0f64, 0);
        for (i, v) in self.index.iter_mut().enumerate() {
            *v = i as u32;
        }
        for _ in 0..self.cfg.pqn.epochs {
            // Fisher-Yates with the run's own stream (resuming restores the stream).
            for k in (1..self.index.len()).rev() {
                let j = below(self.shuffle.next_u32(), k as u32 + 1) as usize;
                self.index.swap(k, j);
            }
            for mb in 0..self.cfg.pqn.minibatches {
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
            seq.keep_window(&sequences_of(&self.buf, &self.nets));
        }

        self.progress.update += 1;
        self.progress.learn_seconds +=
            t0.elapsed().as_secs_f64() - (self.progress.sim_seconds - sim_before);
        let loss = (losses / count.max(1) as f64) as f32;
        let episodes = self.batch.take_episodes();
        Ok(UpdateStats::of_run(
            loss,
            (epsilon, lr),
            episodes,
            opponents,
        ))
    }
}

/// The rollout as PQN-RNN's sequences read it.
fn sequences_of<'a>(b: &'a RolloutBuffer, nets: &'a [u32]) -> Rollout<'a> {
    Rollout {
        steps: b.steps,
        rows: b.rows,
        input: b.input,
        obs: &b.obs,
        taken: &b.taken,
        returns: &b.returns,
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
        let shape = (self.learners, self.batch.layout().obs_len, self.obs_len);
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
        self.save(extra)
    }

    fn load_state(&mut self, json: &str, extra: &[(String, Tensor)]) -> Result<Resume, TrainError> {
        self.load(json, extra)
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
