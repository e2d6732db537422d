//! IQL: an independent DQN per learner (one network per learner, or one shared, evaluated in
//! one dispatch) with a struct-of-arrays replay ring buffer, combined experience replay (the
//! newest rows are in every minibatch), Polyak-averaged target networks, Huber loss (or the
//! configured `loss`) on `r + gamma (1 - d) max_a Q_target(s', a)`, and the rate limiter
//! driving the schedule: after every environment step the rows are inserted (never blocking)
//! and exactly the learner steps the limiter allows are run, each consuming one batch. With
//! `threaded`, an actor thread and a learner thread run side by side instead; thread timing
//! then decides which rows each minibatch sees, so threaded runs (and their resumes) are not
//! bit-for-bit reproducible.
//!
//! This file is one run: one seed, one set of hyperparameters. Seeds and sweeps run one `Iql`
//! per replica under the replica layer (`train::replicated`).
//!
//! With `opponent_models`, the models (see `train::opponent`) train on every learner step's
//! minibatch. With `network: gru` the replay holds sequences of `rollout` steps instead of
//! transitions (R2D2-style, `sequences.rs`): acting reads and writes the arenas' hidden
//! states, a minibatch is `batch_size` whole sequences replayed from their stored hidden
//! states, the first `burn_in` steps carrying no loss. Not with `threaded` or
//! `opponent_models` (refused).
//!
//! Configuration read here (see [`RunConfig`]): `arenas`, `rollout` (environment steps per
//! update), `replay_capacity`, `batch_size`, `cer`, `min_replay`, `samples_per_insert`,
//! `rate_error_buffer`, `target_tau`, `gamma`, `lr`/`lr_decay`/`max_grad_norm`/`radam`,
//! `eps_*`, `shared`, `hidden`, `layers`, `opponent_models`, `threaded`, `wait_seconds`,
//! `network`, `gru_hidden`, `burn_in`.

mod buffer;
mod sequences;
mod threaded;

use std::time::Instant;

use crate::critic::{Chosen, Critic, Input, StackSpec};
use crate::dist::Job;
use crate::engine::EnvBatch;
use crate::scenario::LoadedScenario;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::kit::explore::act_epsilon_greedy;
use crate::train::kit::opponent::{OpponentModels, OpponentNetworks, ScoreMean, set_models_params};
use crate::train::kit::q_head::QHead;
use crate::train::kit::qnet::{q_rows, row_nets, stack_spec, write_input};
use crate::train::kit::replay::{ReplayCore, successor_input, successor_mask};
use crate::train::kit::schedule::StepValues;
use crate::train::kit::schedule::{epsilon_by_steps, optimiser};
use crate::train::kit::stats::UpdateStats;
use crate::train::learner::{BoxedLearner, Learner, Progress};
use buffer::Minibatch;
pub use buffer::td_target;
use sequences::{SeqBatch, Store, sequence_config};

/// An IQL learner with its arenas.
pub struct Iql {
    cfg: RunConfig,
    batch: EnvBatch,
    /// Exploration and sampling streams, the rate limiter, the learner-step count.
    core: ReplayCore,
    replay: Store,
    /// The online networks (the targets live beside them in the critic).
    pub critic: Critic,
    spec: StackSpec,
    /// How outputs become Q-values, and the loss.
    head: QHead,
    learners: usize,
    actions: usize,
    progress: Progress,
    /// Each row's network, `[B x N]`.
    nets: Vec<u32>,
    mb: Minibatch,
    /// With `network: gru`: the sequences of the next minibatch, and the minibatch.
    picks: Vec<usize>,
    seq_batch: SeqBatch,
    /// Opponent models (`opponent_models: true`), trained on every sampled minibatch.
    pub models: Option<OpponentModels>,
    /// The opponent-model scores over the update's learner steps.
    score: ScoreMean,
}

impl Iql {
    /// A fresh learner: its arenas, streams and networks seeded with `cfg.seed`.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<Iql, TrainError> {
        Iql::new_in(cfg, loaded, device, &Job::single())
    }

    /// [`Iql::new`] for one rank of a data-parallel job (see
    /// [`new_learner_in`](crate::train::new_learner_in)): its own arenas, replay and rate
    /// limiter, its learner steps averaged over the ranks.
    pub fn new_in(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<Iql, TrainError> {
        let spec = stack_spec(cfg, loaded);
        let critic = Critic::new(spec, cfg.seed, device)?.data_parallel(job);
        let head = QHead::of(cfg);
        let actions = spec.head / head.outputs_per_action();
        let learners = loaded.scenario.learners_per_arena();
        let rows_per_step = cfg.arenas * learners;
        if spec.state_width() > 0 {
            sequence_config(cfg)?;
        }
        let models = match cfg.learn.opponent_models {
            true => Some(OpponentModels::new(
                cfg,
                learners,
                actions,
                spec.input,
                cfg.iql.batch_size,
                (device, job),
            )?),
            false => None,
        };
        let groups = if cfg.learn.opponent_models {
            learners - 1
        } else {
            0
        };
        let mut batch = cfg.training_batch(loaded, cfg.seed, job)?;
        batch.start_episode_log(1 << 16);
        if spec.state_width() > 0 {
            batch.set_hidden_width(spec.state_width());
        }
        let mut replay = Store::new(cfg, &spec, (rows_per_step, groups), (actions, spec.nets));
        if batch.action_mask().is_some() {
            match &mut replay.seqs {
                Some(seqs) => seqs.keep_masks(actions),
                None => replay.rows.keep_masks(),
            }
        }
        // Rate-limiter items inserted at once and sampled per learner step.
        let per_entry = replay.items_per_step(cfg) as u64;
        let items = (
            rows_per_step as u64 * per_entry,
            cfg.iql.batch_size as u64 * per_entry,
        );
        Ok(Iql {
            core: ReplayCore::new_in(cfg, items, job)?,
            replay,
            batch,
            critic,
            spec,
            head,
            learners,
            actions,
            progress: Progress::default(),
            nets: row_nets(rows_per_step, learners, cfg.network.shared),
            mb: Minibatch::default(),
            picks: Vec::new(),
            seq_batch: SeqBatch::default(),
            models,
            score: ScoreMean::default(),
            cfg: cfg.clone(),
        })
    }

    /// [`Iql::new_in`] behind the [`Learner`] seam (the registry's constructor).
    pub(crate) fn boxed(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<BoxedLearner, TrainError> {
        Ok(Box::new(Iql::new_in(cfg, loaded, device, job)?))
    }

    /// The network stack's shape.
    pub fn spec(&self) -> StackSpec {
        self.spec
    }

    /// The arenas' observation rows as network input (with the learner's one-hot index when
    /// shared).
    fn input(&self) -> Vec<u8> {
        let (n, d) = (self.learners, self.spec.input);
        let o = self.batch.layout().obs_len;
        let mut out = vec![0u8; self.cfg.arenas * n * d];
        write_input(&self.batch.buffers().obs, n, o, d, &mut out);
        out
    }

    /// The exploration rate now (linear over `eps_fraction` of the run's steps).
    pub fn epsilon(&self) -> f32 {
        epsilon_by_steps(&self.cfg, self.progress.env_steps)
    }

    // --------------------------------------------------------------------------------------
    // Rollout
    // --------------------------------------------------------------------------------------

    /// Epsilon-greedy actions (exploration `threshold`) into the arenas; returns the input rows
    /// acted on and the actions. With a recurrent network the pass reads and advances the
    /// arenas' hidden states, and step `t` of the sequences being acted is recorded.
    fn act(&mut self, threshold: u64, t: usize) -> Result<(Vec<u8>, Vec<u32>), TrainError> {
        let obs = self.input();
        let out = if self.spec.state_width() == 0 {
            self.critic.forward(Input::U8(&obs), &self.nets)?
        } else {
            let mut hidden = self.batch.hidden_states().to_vec();
            if let Some(seqs) = &mut self.replay.seqs {
                seqs.before_step(t, &obs, &hidden);
            }
            let out = self.critic.act(Input::U8(&obs), &self.nets, &mut hidden)?;
            self.batch.hidden_states_mut().copy_from_slice(&hidden);
            out
        };
        let q = self.head.q_values(out);
        let (chosen, mask) = self.batch.actions_and_mask();
        act_epsilon_greedy(
            &mut self.core.explore,
            &q,
            self.actions,
            threshold,
            (chosen, mask),
        );
        Ok((obs, chosen.iter().map(|&x| x as u32).collect()))
    }

    /// One learner step: a minibatch (the newest rows and uniform samples, or whole sequences
    /// with a recurrent network), a step of the loss, a Polyak update; the opponent models
    /// train on the same rows.
    fn learn(&mut self, step: &StepValues) -> Result<f32, TrainError> {
        let (cfg, update) = (&self.cfg, self.progress.update);
        let sizes = (self.actions, self.head);
        let value = if let Some(seqs) = &self.replay.seqs {
            let sampler = &mut self.core.sampler;
            seqs.sample(sampler, (cfg.iql.batch_size, cfg.iql.cer), &mut self.picks);
            self.seq_batch
                .gather(seqs, &self.picks, cfg.network.burn_in);
            self.seq_batch
                .train(&mut self.critic, step, sizes, update)?
        } else {
            self.mb.fill(&self.replay.rows, &mut self.core.sampler, cfg);
            let value = self.mb.train(&mut self.critic, step, sizes, update)?;
            if let Some(m) = &mut self.models {
                let (mb, rows) = (&self.mb, cfg.iql.batch_size);
                let lr = step.adam.lr;
                let s = m.score_and_train_rows(&mb.obs, &mb.slots, &mb.others, lr)?;
                self.score.add(s, rows as f64);
            }
            value
        };
        let sampled = self.replay.items_per_step(&self.cfg) * self.cfg.iql.batch_size;
        self.core.limiter.sample(sampled as u64);
        self.core.learner_steps += 1;
        Ok(value)
    }

    /// One update: `rollout` environment steps, each followed by the learner steps the rate
    /// limiter allows (or, `threaded`, an actor and a learner thread side by side). With a
    /// recurrent network every learner row's sequence of the `rollout` steps goes into the
    /// replay after the last of them.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let (update, env_steps) = (self.progress.update, self.progress.env_steps);
        self.batch
            .set_reward_shaping(self.cfg.reward_shaping_at(env_steps));
        let epsilon = epsilon_by_steps(&self.cfg, env_steps);
        let threshold = crate::rng::threshold(epsilon as f64);
        let (lr, adam) = optimiser(&self.cfg, update);
        let step = StepValues::of(&self.cfg, adam);
        let (mut losses, mut steps) = (0.0f64, 0u64);
        let rollout = if self.cfg.iql.threaded {
            let t0 = Instant::now();
            let sim_before = self.progress.sim_seconds;
            (losses, steps) = self.update_threaded(&adam, threshold)?;
            self.progress.learn_seconds +=
                t0.elapsed().as_secs_f64() - (self.progress.sim_seconds - sim_before);
            0
        } else {
            self.cfg.rollout
        };
        let (n, d) = (self.learners, self.spec.input);
        let (mut next, mut next_mask) = (Vec::new(), Vec::new());
        let masked = self.batch.action_mask().is_some();
        for t in 0..rollout {
            let t_act = Instant::now();
            let (obs, taken) = self.act(threshold, t)?;
            let acting = t_act.elapsed().as_secs_f64();
            let t_sim = Instant::now();
            self.batch.step()?;
            self.progress.sim_seconds += t_sim.elapsed().as_secs_f64();
            let t_learn = Instant::now();
            let (b, o) = (self.batch.buffers(), self.batch.layout().obs_len);
            successor_input(b, (n, o, d), &mut next);
            successor_mask(b, masked, &mut next_mask);
            let limiter = &mut self.core.limiter;
            if let Some(seqs) = &mut self.replay.seqs {
                seqs.after_step(t, (&next, &next_mask, &taken), b, n);
                if t + 1 == rollout {
                    let evicted = seqs.finish(&self.nets);
                    limiter.insert((taken.len() * rollout) as u64);
                    limiter.delete(evicted * rollout as u64);
                }
            } else {
                let opponents = self.models.is_some();
                let rows = &mut self.replay.rows;
                let evicted = rows.insert_step(
                    (&obs, &next, &next_mask),
                    &taken,
                    b,
                    &self.nets,
                    n,
                    opponents,
                );
                limiter.insert(taken.len() as u64);
                limiter.delete(evicted);
            }
            let sampled = self.replay.items_per_step(&self.cfg) * self.cfg.iql.batch_size;
            for _ in 0..self.core.limiter.allowed_batches(sampled as u64) {
                losses += self.learn(&step)? as f64;
                steps += 1;
            }
            self.progress.learn_seconds += acting + t_learn.elapsed().as_secs_f64();
        }

        // ----------------------------------------------------------------------------------
        // Logging
        // ----------------------------------------------------------------------------------
        self.progress.env_steps += self.cfg.steps_per_update();
        self.progress.update += 1;
        let scores = std::mem::take(&mut self.score).mean();
        let episodes = self.batch.take_episodes();
        let rates = (epsilon, lr);
        Ok(UpdateStats::replay(
            (losses, steps),
            rates,
            episodes,
            scores,
        ))
    }
}

// ------------------------------------------------------------------------------------------
// Acting, predictions and checkpoints (the Learner seam)
// ------------------------------------------------------------------------------------------

impl Learner for Iql {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        Iql::update(self)
    }

    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        let shape = (self.learners, self.batch.layout().obs_len, self.spec.input);
        q_rows(&mut self.critic, &self.head, obs, shape, &mut [])
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
        let input = self.input();
        let n = self.learners as u32;
        let nets: Vec<u32> = (0..self.nets.len() as u32).map(|r| r % n).collect();
        match &mut self.models {
            Some(m) => Ok(Some(m.probs(&input, &nets)?)),
            None => Ok(None),
        }
    }

    fn set_opponent_params(&mut self, p: &[f32]) -> Result<(), TrainError> {
        set_models_params(&mut self.models, p)
    }

    // State, progress and the batch/critic accessors: the same fields in IQL and PR2-IQL.
    crate::train::kit::replay::replay_learner_plumbing!();
}
