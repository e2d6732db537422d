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
//! Seeds and sweeps in one run (see `train::sweep`): every grid point x seed is a replica with
//! its own arenas, sequence replay, rate limiter, exploration and sampling streams (seeded from
//! its own seed as a single run seeds them), and its own networks, the r-th block of one critic
//! stack, with its own value loss (`loss` and its parameters; every replica's head as wide).
//! One forward acts for every replica. Each replica runs exactly the learner steps its own
//! rate limiter allows: a learner step stacks the sequences of the replicas that step this
//! time ([`step`]), each replica's rows scored and trained with its own loss and averaged over
//! its own rows, its networks stepped with its learning rate and clip (the critic's masked
//! step: each network counts its own Adam steps, the others' stay untouched) and averaged into
//! its targets with its `target_tau` (the others' with a factor of 0). So replica k computes
//! exactly what a single run with its configuration computes. Each replica has its own
//! conditional opponent models (network `r x N + i` of their stack, as of the critics'), trained
//! on its own rows at its learning rate and scored on its own; `rho: model` reads a row's own
//! replica's models. The models' stack counts one step for all, so with models the replicas
//! must learn at the same moments (a rate-limiter sweep is refused).
//!
//! No tensor has a dimension of `A^(N-1)` unless `critic: joint`, which the preflight guards
//! ([`sizing`] holds the shapes and the memory plan).

mod recurrent;
mod sequences;
mod sizing;
mod step;

use sequences::{Rollout, SequenceReplay};
use step::StepBuffers;

pub use sizing::{batch_rows, critic_row, head, pass_rows, replay_sequences, stack_spec};
pub(crate) use sizing::{gpu as gpu_sizing, plan};

use crate::critic::pr2::Pr2Head;
use crate::critic::pr2_loss::{Pr2Loss, Scratch};
use crate::critic::{Chosen, Critic, Input, StackSpec};
use crate::dist::Job;
use crate::engine::EnvBatch;
use crate::scenario::LoadedScenario;
use crate::train::config::{RhoForm, RunConfig};
use crate::train::error::TrainError;
use crate::train::explore::{act_epsilon_greedy, greedy_actions};
use crate::train::learner::{BoxedLearner, Learner, Progress};
use crate::train::opponent::{ConditionalModels, OpponentNetworks, set_models_params};
use crate::train::replay::ReplayCore;
use crate::train::replicas::{UpdateValues, replicas_critic};
use crate::train::schedule::epsilon_by_steps;
use crate::train::stats::UpdateStats;

// ------------------------------------------------------------------------------------------
// Learner
// ------------------------------------------------------------------------------------------

/// A PR2-IQL learner with its arenas (every replica's).
pub struct Pr2Iql {
    cfg: RunConfig,
    /// Every replica's own arenas, replay and schedule (one without seeds or a sweep).
    lanes: Vec<Lane>,
    /// The critics of every replica (targets beside them).
    pub critic: Critic,
    /// The conditional opponent models (`opponent_models: true`; every replica's).
    pub models: Option<ConditionalModels>,
    /// The whole stack (every replica's networks).
    spec: StackSpec,
    /// Each replica's head and value loss (docs/algorithms.md, PR2, "Value loss"): the same
    /// head and width, each with its replica's loss and parameters.
    rows: Vec<Pr2Loss>,
    learners: usize,
    actions: usize,
    /// Each acting row's network in the stack, `[R x B x N]`.
    nets: Vec<u32>,
    /// `[rows, g]` the hidden states of the current acting pass (recurrent critic).
    hidden: Vec<f32>,
    step: StepBuffers,
    scratch: Scratch,
    progress: Progress,
}

/// One replica of a PR2-IQL run: its single-run configuration, arenas, streams, limiter,
/// sequence replay and rollout.
struct Lane {
    cfg: RunConfig,
    batch: EnvBatch,
    core: ReplayCore,
    replay: SequenceReplay,
    rollout: Rollout,
}

impl Pr2Iql {
    /// A fresh learner: replica r's arenas, streams and networks seeded with its own seed
    /// (`cfg.seed + s` for seed index s).
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
        if cfg.network.kind != super::config::NetworkKind::Mlp {
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
        let reps = cfg
            .replicas()
            .map_err(|e| TrainError::Config(e.to_string()))?;
        let single = stack_spec(cfg, loaded);
        let (critic, spec) = replicas_critic(single, (cfg.seed, &reps), (device, job))?;
        let models = if cfg.learn.opponent_models {
            Some(ConditionalModels::new(
                cfg,
                learners,
                actions,
                single.input,
                (device, job),
            )?)
        } else {
            None
        };
        let rows = (reps.iter())
            .map(|r| critic_row(&r.cfg, learners, actions))
            .collect();
        let mut lanes = Vec::with_capacity(reps.len());
        for r in reps {
            lanes.push(Lane::new(
                r.cfg,
                (loaded, job),
                (learners, actions, (single.input, single.state_width())),
            )?);
        }
        let per = cfg.arenas * learners;
        let nets = (0..lanes.len() * per)
            .map(|k| ((k / per) * learners + k % learners) as u32)
            .collect();
        Ok(Pr2Iql {
            lanes,
            critic,
            models,
            spec,
            rows,
            learners,
            actions,
            nets,
            hidden: Vec::new(),
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
        self.rows[0].head
    }

    // --------------------------------------------------------------------------------------
    // Network: values under rho
    // --------------------------------------------------------------------------------------

    /// `E_rho[Q_i(s, a_i, .)]` per row `[R, A]` from the rows `out` of networks `nets` (each
    /// row read with its replica's loss) and, with a learned rho, the models' probabilities
    /// `rho` `[R, N-1, A, A]`.
    fn expectations(
        &mut self,
        (out, nets): (&[f32], &[u32]),
        rho: Option<&[f32]>,
        values: &mut Vec<f32>,
    ) {
        let (w, a) = (self.rows[0].width(), self.actions);
        let rows = out.len() / w;
        values.clear();
        values.resize(rows * a, 0.0);
        let m = (self.learners - 1) * a * a;
        for r in 0..rows {
            let row = self.rows[nets[r] as usize / self.learners];
            row.expectation(
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

    /// `E_rho[Q_i(s, a_i, .)]` `[R x N, A]` of replica 0's online critic for observation rows
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
        self.expectations((&out, nets), rho.as_deref(), &mut values);
        Ok(values)
    }

    /// `E_rho[Q_i]` `[B x N, A]` for replica 0's current observations (online critic; a
    /// recurrent one reads and advances replica 0's hidden states).
    pub fn acting_values(&mut self) -> Result<Vec<f32>, TrainError> {
        if self.spec.state_width() > 0 {
            return self.recurrent_acting_values(1);
        }
        let obs = self.lanes[0].batch.buffers().obs.clone();
        self.values(&obs)
    }

    /// `E_rho[Q_i]` `[R x B x N, A]` for every replica's current observations, each through
    /// its own networks, in one forward.
    fn all_acting_values(&mut self) -> Result<Vec<f32>, TrainError> {
        if self.spec.state_width() > 0 {
            return self.recurrent_acting_values(self.lanes.len());
        }
        if self.lanes.len() == 1 {
            return self.acting_values();
        }
        let obs: Vec<u8> = self
            .lanes
            .iter()
            .flat_map(|l| l.batch.buffers().obs.iter().copied())
            .collect();
        let nets = std::mem::take(&mut self.nets);
        let values = self.values_of(&obs, &nets);
        self.nets = nets;
        values
    }

    /// The conditional opponent models' predictions for replica 0's current observations at
    /// each learner's greedy action: `[B x N, N-1, A]`, or `None` without models.
    pub fn predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        if self.models.is_none() {
            // Without models nothing to predict, and no acting pass (a recurrent critic's
            // would advance the arenas' hidden states).
            return Ok(None);
        }
        let a = self.actions;
        let greedy = greedy_actions(&self.acting_values()?, a);
        let obs = self.lanes[0].batch.buffers().obs.clone();
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

    /// The exploration rate now (replica 0's; linear over `eps_fraction` of the run's steps).
    pub fn epsilon(&self) -> f32 {
        epsilon_by_steps(&self.lanes[0].cfg, self.progress.env_steps)
    }

    // --------------------------------------------------------------------------------------
    // Rollout and schedule
    // --------------------------------------------------------------------------------------

    /// One update: a rollout of every arena of every replica (one forward acting for all),
    /// stored as sequences, then the learner steps the rate limiters allow.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let (update, env_steps) = (self.progress.update, self.progress.env_steps);
        let cfgs = self.lanes.iter().map(|l| &l.cfg);
        let values = UpdateValues::of(cfgs, update, env_steps);
        let (n, a, b, d) = (
            self.learners,
            self.actions,
            self.cfg.arenas,
            self.spec.input,
        );
        let per_step = b * n * d;
        for lane in &mut self.lanes {
            lane.rollout.kept.fill(0);
            lane.rollout.finals.fill(0);
        }
        for t in 0..self.cfg.rollout {
            let t_learn = std::time::Instant::now();
            if self.spec.state_width() > 0 {
                for lane in &mut self.lanes {
                    let h = lane.batch.hidden_states();
                    lane.rollout.before_step(t, &lane.replay.next_reset, h);
                }
            }
            let q = self.all_acting_values()?;
            for ((lane, q), &threshold) in self
                .lanes
                .iter_mut()
                .zip(q.chunks(b * n * a))
                .zip(&values.thresholds)
            {
                lane.act(t, q, (a, threshold));
            }
            self.progress.learn_seconds += t_learn.elapsed().as_secs_f64();
            let t_sim = std::time::Instant::now();
            for lane in &mut self.lanes {
                lane.batch.step()?;
            }
            self.progress.sim_seconds += t_sim.elapsed().as_secs_f64();
            for lane in &mut self.lanes {
                let buf = lane.batch.buffers();
                lane.rollout.rewards[t * b * n..(t + 1) * b * n].copy_from_slice(&buf.rewards);
                lane.rollout.record_ends(t, buf, n * d);
                for (r, (&term, &trunc)) in (lane.replay.next_reset.iter_mut())
                    .zip(buf.terminated.iter().zip(&buf.truncated))
                {
                    *r = u8::from(term != 0 || trunc != 0);
                }
            }
        }
        let t_learn = std::time::Instant::now();
        let last = self.cfg.rollout * per_step;
        let t_steps = self.cfg.rollout as u64;
        for lane in &mut self.lanes {
            let obs = &lane.batch.buffers().obs;
            lane.rollout.obs[last..last + per_step].copy_from_slice(obs);
            let mut evicted = 0u64;
            for arena in 0..b {
                evicted += u64::from(lane.replay.push(&lane.rollout, arena));
            }
            lane.core.limiter.insert(b as u64 * t_steps);
            lane.core.limiter.delete(evicted * t_steps);
        }
        let (mut losses, mut steps, mut scores) = (0.0f64, 0u64, None);
        // Each replica runs its own limiter's steps; a learner step serves those with one left.
        let batch = self.cfg.pr2.buffer_batch_size as u64 * t_steps;
        let allowed: Vec<u64> = (self.lanes.iter())
            .map(|l| l.core.limiter.allowed_batches(batch))
            .collect();
        for i in 0..allowed.iter().copied().max().unwrap_or(0) {
            let active: Vec<bool> = allowed.iter().map(|&a| a > i).collect();
            let (loss, s) = self.learn(&values.steps, &active)?;
            losses += loss as f64;
            steps += 1;
            scores = s.or(scores);
        }
        self.progress.learn_seconds += t_learn.elapsed().as_secs_f64();
        self.progress.env_steps += self.cfg.steps_per_update();
        self.progress.update += 1;
        let replicas = self.lanes.len();
        let per_replica = self.lanes.iter_mut().map(|l| l.batch.take_episodes());
        Ok(values
            .stats((losses, steps), per_replica.collect(), None)
            .with_opponents(scores.unwrap_or_default(), replicas))
    }
}

impl Lane {
    /// A replica's arenas (seeded with its seed), streams, limiter (counting arena-steps:
    /// `arenas x rollout` inserted per update, `buffer_batch_size x rollout` sampled per
    /// learner step), sequence replay and rollout buffers, for `learners` learners of `actions`
    /// actions and observations of `d` bytes.
    fn new(
        cfg: RunConfig,
        (loaded, job): (&LoadedScenario, &Job),
        (learners, actions, (d, g)): (usize, usize, (usize, usize)),
    ) -> Result<Lane, TrainError> {
        let (insert, sample) = (
            (cfg.arenas * cfg.rollout) as u64,
            (cfg.pr2.buffer_batch_size * cfg.rollout) as u64,
        );
        let core = ReplayCore::new_in(&cfg, (insert, sample), job)?;
        let mut batch = cfg.training_batch(loaded, cfg.seed, job)?;
        batch.start_episode_log(1 << 16);
        if g > 0 {
            batch.set_hidden_width(g);
        }
        let (t, b) = (cfg.rollout, cfg.arenas);
        let finals_per = t.div_ceil(batch.layout().max_steps.max(1) as usize);
        let replay = SequenceReplay::new(
            replay_sequences(&cfg),
            (t, learners, finals_per),
            (d, g),
            (actions, b),
        );
        let recurrent = usize::from(g > 0);
        let rollout = Rollout {
            arenas: b,
            obs: vec![0; (t + 1) * b * learners * d],
            actions: vec![0; t * b * learners],
            rewards: vec![0.0; t * b * learners],
            terminated: vec![0.0; t * b],
            truncated: vec![0.0; t * b],
            finals: vec![0; b * finals_per * learners * d],
            kept: vec![0; b],
            h0: vec![0.0; b * learners * g],
            reset: vec![0; recurrent * t * b],
        };
        Ok(Lane {
            cfg,
            batch,
            core,
            replay,
            rollout,
        })
    }

    /// Step `t` of the rollout: records the observations, then acts epsilon-greedily (with
    /// `threshold`, on this replica's streams) on `values` `[B x N, A]` into the arenas and the
    /// rollout.
    fn act(&mut self, t: usize, values: &[f32], (a, threshold): (usize, u64)) {
        let per_step = self.batch.buffers().obs.len();
        let obs = &self.batch.buffers().obs;
        self.rollout.obs[t * per_step..(t + 1) * per_step].copy_from_slice(obs);
        let chosen = self.batch.actions_mut();
        let rows = chosen.len();
        act_epsilon_greedy(&mut self.core.explore, values, a, threshold, chosen);
        for (taken, &action) in self.rollout.actions[t * rows..(t + 1) * rows]
            .iter_mut()
            .zip(chosen.iter())
        {
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
    crate::train::replicas::replica_learner_plumbing!();
}
