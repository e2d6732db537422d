//! PR2-IQL with combined experience replay (docs/algorithms.md, PR2). Each learner i has a critic
//! network whose output row is a [`Pr2Head`]: pairwise-factorised `f_i(s, a_i) + sum_j
//! f_ij(s, a_i, a_j)` (optionally low rank), or, for small games, the joint table. The
//! opponent-conditional policy rho is the critic's own soft-optimal one or a learned
//! conditional opponent model; expectations under it are exact from the factors.
//!
//! Schedule (as JaxMARL's IQL): act `rollout` steps in every arena epsilon-greedily on
//! `E_rho[Q_i(s, a_i, .)]`, store each arena's rollout as one sequence, insert into the rate
//! limiter (counted in arena-steps), then run exactly the learner steps it allows. A learner
//! step samples `buffer_batch_size` sequences (the newest always among them when `cer > 0`),
//! computes targets `r + gamma (1 - terminated) max_{a_i} E_rho[Q_target(s', a_i, .)]` once
//! (s' the final observation where the step truncated), and takes `epochs` steps of the value
//! loss ([`Pr2Loss`]: Huber by default) on all `rollout x sequences x learners` rows, then a
//! Polyak update.
//!
//! This file is one run: one seed, one set of hyperparameters. Seeds and sweeps run one
//! `Pr2Iql` per replica under the replica layer (`train::replicated`).
//!
//! No tensor has a dimension of `A^(N-1)` unless `critic: joint`, which the preflight guards
//! (`shapes` holds the shapes, `preflight/pr2.rs` the memory plan).

mod recurrent;
mod sequences;
mod shapes;
mod step;

use sequences::{Rollout, SequenceReplay};
use step::StepBuffers;

pub use shapes::{batch_rows, critic_row, head, pass_rows, replay_sequences, stack_spec};

use crate::critic::pr2::Pr2Head;
use crate::critic::pr2_loss::{Pr2Loss, Scratch};
use crate::critic::{Chosen, Critic, Input, StackSpec};
use crate::dist::Job;
use crate::engine::EnvBatch;
use crate::scenario::LoadedScenario;
use crate::train::config::{RhoForm, RunConfig};
use crate::train::error::TrainError;
use crate::train::kit::explore::{act_epsilon_greedy, greedy_actions};
use crate::train::kit::opponent::{ConditionalModels, OpponentNetworks, set_models_params};
use crate::train::kit::replay::ReplayCore;
use crate::train::kit::schedule::StepValues;
use crate::train::kit::schedule::{epsilon_by_steps, optimiser};
use crate::train::kit::stats::UpdateStats;
use crate::train::learner::{BoxedLearner, Learner, Progress};

// ------------------------------------------------------------------------------------------
// Learner
// ------------------------------------------------------------------------------------------

/// A PR2-IQL learner with its arenas.
pub struct Pr2Iql {
    cfg: RunConfig,
    batch: EnvBatch,
    /// Exploration and sampling streams, the rate limiter (counting arena-steps), the
    /// learner-step count.
    core: ReplayCore,
    replay: SequenceReplay,
    /// The update's rollout, stored as one sequence per arena after its last step.
    rollout: Rollout,
    /// The critics (targets beside them).
    pub critic: Critic,
    /// The conditional opponent models (`opponent_models: true`).
    pub models: Option<ConditionalModels>,
    spec: StackSpec,
    /// The head and value loss (docs/algorithms.md, PR2, "Value loss").
    row: Pr2Loss,
    learners: usize,
    actions: usize,
    /// Each acting row's network, `[B x N]`.
    nets: Vec<u32>,
    step: StepBuffers,
    scratch: Scratch,
    progress: Progress,
}

impl Pr2Iql {
    /// A fresh learner: its arenas, streams and networks seeded with `cfg.seed`.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<Pr2Iql, TrainError> {
        Pr2Iql::new_in(cfg, loaded, device, &Job::single())
    }

    /// [`Pr2Iql::new`] for one rank of a data-parallel job (see
    /// [`new_learner_in`](crate::train::new_learner_in)): its own arenas, replay and rate
    /// limiter, its learner steps (critics and models) averaged over the ranks.
    pub fn new_in(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<Pr2Iql, TrainError> {
        if cfg.network.kind != crate::train::config::NetworkKind::Mlp {
            recurrent::sequence_config(cfg)?;
        }
        let learners = loaded.scenario.learners_per_arena();
        if learners < 2 {
            return Err(TrainError::Config(format!(
                "algo pr2_iql models the other learners; {} has {learners} learner per arena",
                loaded.scenario.name
            )));
        }
        let actions = loaded.scenario.action_set().len();
        let row = critic_row(cfg, learners, actions);
        if row.width_checked().is_none_or(|w| w > u32::MAX as u64) {
            return Err(TrainError::Config(format!(
                "critic: joint needs {actions}^{learners} x {} outputs per row; use critic: factorized",
                row.bins()
            )));
        }
        let spec = stack_spec(cfg, loaded);
        let critic = Critic::new(spec, cfg.seed, device)?.data_parallel(job);
        let models = match cfg.learn.opponent_models {
            true => Some(ConditionalModels::new(
                cfg,
                learners,
                actions,
                spec.input,
                (device, job),
            )?),
            false => None,
        };
        // The rate limiter counts arena-steps: `arenas x rollout` inserted per update,
        // `buffer_batch_size x rollout` sampled per learner step.
        let (t, b, g) = (cfg.rollout, cfg.arenas, spec.state_width());
        let items = ((b * t) as u64, (cfg.pr2.buffer_batch_size * t) as u64);
        let core = ReplayCore::new_in(cfg, items, job)?;
        let mut batch = cfg.training_batch(loaded, cfg.seed, job)?;
        batch.start_episode_log(1 << 16);
        if g > 0 {
            batch.set_hidden_width(g);
        }
        let finals_per = t.div_ceil(batch.layout().max_steps.max(1) as usize);
        let mut replay = SequenceReplay::new(
            replay_sequences(cfg),
            (t, learners, finals_per),
            (spec.input, g),
            (actions, b),
        );
        let mut rollout = Rollout::new((t, b), (learners, spec.input, g), finals_per);
        if batch.action_mask().is_some() {
            replay.keep_masks();
            rollout.keep_masks((t, learners, finals_per, actions));
        }
        Ok(Pr2Iql {
            batch,
            core,
            replay,
            rollout,
            critic,
            models,
            spec,
            row,
            learners,
            actions,
            nets: (0..b * learners).map(|k| (k % learners) as u32).collect(),
            step: StepBuffers::default(),
            scratch: Scratch::default(),
            progress: Progress::default(),
            cfg: cfg.clone(),
        })
    }

    /// [`Pr2Iql::new`] behind the [`Learner`] seam (the registry's constructor).
    pub(crate) fn boxed(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<BoxedLearner, TrainError> {
        Ok(Box::new(Pr2Iql::new_in(cfg, loaded, device, job)?))
    }

    /// The critic stack's shape.
    pub fn spec(&self) -> StackSpec {
        self.spec
    }

    /// The critic head.
    pub fn head(&self) -> Pr2Head {
        self.row.head
    }

    // --------------------------------------------------------------------------------------
    // Network: values under rho
    // --------------------------------------------------------------------------------------

    /// `E_rho[Q_i(s, a_i, .)]` per row `[R, A]` from the rows `out` and, with a learned rho,
    /// the models' probabilities `rho` `[R, N-1, A, A]`.
    fn expectations(&mut self, out: &[f32], rho: Option<&[f32]>, values: &mut Vec<f32>) {
        let (w, a) = (self.row.width(), self.actions);
        let rows = out.len() / w;
        values.clear();
        values.resize(rows * a, 0.0);
        let m = (self.learners - 1) * a * a;
        for r in 0..rows {
            self.row.expectation(
                &out[r * w..(r + 1) * w],
                rho.map(|p| &p[r * m..(r + 1) * m]),
                &mut self.scratch,
                &mut values[r * a..(r + 1) * a],
            );
        }
    }

    fn rho_for(&mut self, input: &[u8], nets: &[u32]) -> Result<Option<Vec<f32>>, TrainError> {
        match (&mut self.models, self.cfg.pr2.rho) {
            (Some(m), RhoForm::Model) => Ok(Some(m.probs(input, nets)?)),
            _ => Ok(None),
        }
    }

    /// `E_rho[Q_i(s, a_i, .)]` `[R x N, A]` of the online critic for observation rows
    /// `[R, N, O]`.
    pub fn values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        let rows = obs.len() / self.spec.input.max(1);
        let nets: Vec<u32> = (0..rows).map(|r| (r % self.learners) as u32).collect();
        self.values_of(obs, &nets)
    }

    /// `E_rho[Q]` of the online networks `nets`, one per observation row of `obs`.
    fn values_of(&mut self, obs: &[u8], nets: &[u32]) -> Result<Vec<f32>, TrainError> {
        let out = self.critic.forward(Input::U8(obs), nets)?;
        let rho = self.rho_for(obs, nets)?;
        let mut values = Vec::new();
        self.expectations(&out, rho.as_deref(), &mut values);
        Ok(values)
    }

    /// `E_rho[Q_i]` `[B x N, A]` for the current observations (online critic; a recurrent
    /// one reads and advances the arenas' hidden states).
    pub fn acting_values(&mut self) -> Result<Vec<f32>, TrainError> {
        if self.spec.state_width() > 0 {
            return self.recurrent_acting_values();
        }
        let obs = self.batch.buffers().obs.clone();
        self.values(&obs)
    }

    /// The conditional opponent models' predictions for the current observations at
    /// each learner's greedy action: `[B x N, N-1, A]`, or `None` without models.
    pub fn predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        if self.models.is_none() {
            // Without models nothing to predict, and no acting pass (a recurrent critic's
            // would advance the arenas' hidden states).
            return Ok(None);
        }
        let a = self.actions;
        let values = self.acting_values()?;
        let greedy = greedy_actions(&values, a, self.batch.action_mask());
        let obs = self.batch.buffers().obs.clone();
        let nets: Vec<u32> = (0..greedy.len())
            .map(|r| (r % self.learners) as u32)
            .collect();
        let Some(models) = &mut self.models else {
            return Ok(None);
        };
        let p = models.probs(&obs, &nets)?;
        let (o, m) = (self.learners - 1, (self.learners - 1) * a * a);
        let mut out = Vec::with_capacity(greedy.len() * o * a);
        for (r, &g) in greedy.iter().enumerate() {
            for j in 0..o {
                let at = r * m + (j * a + g as usize) * a;
                out.extend_from_slice(&p[at..at + a]);
            }
        }
        Ok(Some(out))
    }

    /// The exploration rate now (linear over `eps_fraction` of the run's steps).
    pub fn epsilon(&self) -> f32 {
        epsilon_by_steps(&self.cfg, self.progress.env_steps)
    }

    // --------------------------------------------------------------------------------------
    // Rollout and schedule
    // --------------------------------------------------------------------------------------

    /// One update: a rollout of every arena, stored as sequences, then the learner steps the
    /// rate limiter allows.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let (update, env_steps) = (self.progress.update, self.progress.env_steps);
        self.batch
            .set_reward_shaping(self.cfg.reward_shaping_at(env_steps));
        let epsilon = epsilon_by_steps(&self.cfg, env_steps);
        let threshold = crate::rng::threshold(epsilon as f64);
        let (lr, adam) = optimiser(&self.cfg, update);
        let step = StepValues::of(&self.cfg, adam);
        let (n, b, d) = (self.learners, self.cfg.arenas, self.spec.input);
        let per_step = b * n * d;
        self.rollout.kept.fill(0);
        self.rollout.finals.fill(0);
        self.rollout.final_mask.fill(1);
        for t in 0..self.cfg.rollout {
            let t_learn = std::time::Instant::now();
            if self.spec.state_width() > 0 {
                let h = self.batch.hidden_states();
                self.rollout.before_step(t, &self.replay.next_reset, h);
            }
            let q = self.acting_values()?;
            self.act(t, &q, threshold);
            self.progress.learn_seconds += t_learn.elapsed().as_secs_f64();
            let t_sim = std::time::Instant::now();
            self.batch.step()?;
            self.progress.sim_seconds += t_sim.elapsed().as_secs_f64();
            let buf = self.batch.buffers();
            self.rollout.rewards[t * b * n..(t + 1) * b * n].copy_from_slice(&buf.rewards);
            self.rollout.record_ends(t, buf, n * d);
            for (r, (&term, &trunc)) in
                (self.replay.next_reset.iter_mut()).zip(buf.terminated.iter().zip(&buf.truncated))
            {
                *r = u8::from(term != 0 || trunc != 0);
            }
        }
        let t_learn = std::time::Instant::now();
        let (last, t_steps) = (self.cfg.rollout * per_step, self.cfg.rollout as u64);
        let obs = &self.batch.buffers().obs;
        self.rollout.obs[last..last + per_step].copy_from_slice(obs);
        self.rollout
            .record_mask(self.cfg.rollout, self.batch.action_mask());
        let mut evicted = 0u64;
        for arena in 0..b {
            evicted += u64::from(self.replay.push(&self.rollout, arena));
        }
        self.core.limiter.insert(b as u64 * t_steps);
        self.core.limiter.delete(evicted * t_steps);
        let (mut losses, mut steps, mut scores) = (0.0f64, 0u64, None);
        let batch = self.cfg.pr2.buffer_batch_size as u64 * t_steps;
        for _ in 0..self.core.limiter.allowed_batches(batch) {
            let (loss, s) = self.learn(&step)?;
            losses += loss as f64;
            steps += 1;
            scores = s.or(scores);
        }
        self.progress.learn_seconds += t_learn.elapsed().as_secs_f64();
        self.progress.env_steps += self.cfg.steps_per_update();
        self.progress.update += 1;
        let episodes = self.batch.take_episodes();
        let rates = (epsilon, lr);
        Ok(UpdateStats::replay(
            (losses, steps),
            rates,
            episodes,
            scores,
        ))
    }

    /// Step `t` of the rollout: records the observations, then acts epsilon-greedily (with
    /// `threshold`) on `values` `[B x N, A]` into the arenas and the rollout.
    fn act(&mut self, t: usize, values: &[f32], threshold: u64) {
        let obs = &self.batch.buffers().obs;
        let per_step = obs.len();
        self.rollout.obs[t * per_step..(t + 1) * per_step].copy_from_slice(obs);
        self.rollout.record_mask(t, self.batch.action_mask());
        let (chosen, mask) = self.batch.actions_and_mask();
        let rows = chosen.len();
        act_epsilon_greedy(
            &mut self.core.explore,
            values,
            self.actions,
            threshold,
            (chosen, mask),
        );
        let taken = &mut self.rollout.actions[t * rows..(t + 1) * rows];
        for (taken, &action) in taken.iter_mut().zip(chosen.iter()) {
            *taken = action as u32;
        }
    }
}

// ------------------------------------------------------------------------------------------
// Acting, predictions and checkpoints (the Learner seam)
// ------------------------------------------------------------------------------------------

impl Learner for Pr2Iql {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        Pr2Iql::update(self)
    }

    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        self.values(obs)
    }

    fn q_values_recurrent(
        &mut self,
        obs: &[u8],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, TrainError> {
        if hidden.is_empty() {
            return self.values(obs);
        }
        self.values_recurrent(obs, hidden)
    }

    fn q_label(&self) -> &'static str {
        "E_rho[Q]"
    }

    fn opponent_predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        self.predictions()
    }

    fn set_opponent_params(&mut self, p: &[f32]) -> Result<(), TrainError> {
        set_models_params(&mut self.models, p)
    }

    // State, progress and the batch/critic accessors: the same fields in IQL and PR2-IQL.
    crate::train::kit::replay::replay_learner_plumbing!();
}
