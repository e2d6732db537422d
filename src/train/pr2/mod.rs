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
//! No tensor has a dimension of `A^(N-1)` unless `critic: joint`, which the preflight guards
//! ([`sizing`] holds the shapes and the memory plan).

mod sequences;
mod sizing;

use sequences::{Rollout, SequenceReplay};

pub use sizing::{batch_rows, critic_row, head, pass_rows, replay_sequences, stack_spec};
pub(crate) use sizing::{gpu as gpu_sizing, plan};

use rand_core::Rng;

use crate::critic::pr2::Pr2Head;
use crate::critic::pr2_loss::{Pr2Loss, Scratch};
use crate::critic::{AdamConfig, Chosen, Critic, Input, StackSpec};
use crate::engine::EnvBatch;
use crate::rng::below;
use crate::scenario::LoadedScenario;
use crate::train::config::{RhoForm, RunConfig};
use crate::train::error::TrainError;
use crate::train::explore::{act_epsilon_greedy, greedy_actions, max_value};
use crate::train::learner::{BoxedLearner, Learner, Progress};
use crate::train::opponent::{
    ConditionalModels, OpponentNetworks, OpponentScores, ScoreMean, set_models_params,
};
use crate::train::replay::ReplayCore;
use crate::train::schedule::{epsilon_by_steps, optimiser};
use crate::train::stats::UpdateStats;

/// The row buffers of one learner step, reused.
#[derive(Default)]
struct StepBuffers {
    input: Vec<u8>,
    nets: Vec<u32>,
    own: Vec<u32>,
    others: Vec<u32>,
    rewards: Vec<f32>,
    terminated: Vec<f32>,
    /// The row each row's target bootstraps from: the next step's, or a final observation's.
    boot: Vec<usize>,
    train: Vec<bool>,
    targets: Vec<f32>,
    d_out: Vec<f32>,
    values: Vec<f32>,
}

/// One minibatch's rows gathered out of the learner step's rows.
#[derive(Default)]
struct Minibatch {
    input: Vec<u8>,
    nets: Vec<u32>,
    own: Vec<u32>,
    others: Vec<u32>,
}

impl Minibatch {
    fn gather(
        &mut self,
        chunk: &[usize],
        input: &[u8],
        nets: &[u32],
        step: &StepBuffers,
        d: usize,
        o: usize,
    ) {
        self.input.clear();
        self.nets.clear();
        self.own.clear();
        self.others.clear();
        for &r in chunk {
            self.input.extend_from_slice(&input[r * d..(r + 1) * d]);
            self.nets.push(nets[r]);
            self.own.push(step.own[r]);
            self.others
                .extend_from_slice(&step.others[r * o..(r + 1) * o]);
        }
    }
}

// ------------------------------------------------------------------------------------------
// Learner
// ------------------------------------------------------------------------------------------

/// A PR2-IQL learner with its arenas.
pub struct Pr2Iql {
    cfg: RunConfig,
    /// The arenas.
    pub batch: EnvBatch,
    /// The critics (targets beside them).
    pub critic: Critic,
    /// The conditional opponent models (`opponent_models: true`).
    pub models: Option<ConditionalModels>,
    spec: StackSpec,
    /// The head and its value loss (docs/algorithms.md, PR2, "Value loss").
    row: Pr2Loss,
    learners: usize,
    actions: usize,
    core: ReplayCore,
    replay: SequenceReplay,
    rollout: Rollout,
    step: StepBuffers,
    scratch: Scratch,
    progress: Progress,
}

impl Pr2Iql {
    /// A fresh learner.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<Pr2Iql, TrainError> {
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
        // The limiter counts arena-steps: `arenas x rollout` inserted per update,
        // `buffer_batch_size x rollout` sampled per learner step.
        let (insert, sample) = (
            (cfg.arenas * cfg.rollout) as u64,
            (cfg.buffer_batch_size * cfg.rollout) as u64,
        );
        let core = ReplayCore::new(cfg, insert, sample)?;
        let batch = cfg.training_batch(loaded, cfg.seed)?;
        let critic = Critic::new(spec, cfg.seed, device)?;
        let models = if cfg.opponent_models {
            Some(ConditionalModels::new(
                cfg, learners, actions, spec.input, device,
            )?)
        } else {
            None
        };
        let (t, b, d) = (cfg.rollout, cfg.arenas, spec.input);
        let finals_per = t.div_ceil(batch.layout().max_steps.max(1) as usize);
        let mut pr2 = Pr2Iql {
            batch,
            critic,
            models,
            spec,
            row,
            learners,
            actions,
            core,
            replay: SequenceReplay::new(
                replay_sequences(cfg),
                (t, learners, finals_per),
                d,
                actions,
            ),
            rollout: Rollout {
                arenas: b,
                obs: vec![0; (t + 1) * b * learners * d],
                actions: vec![0; t * b * learners],
                rewards: vec![0.0; t * b * learners],
                terminated: vec![0.0; t * b],
                truncated: vec![0.0; t * b],
                finals: vec![0; b * finals_per * learners * d],
                kept: vec![0; b],
            },
            step: StepBuffers::default(),
            scratch: Scratch::default(),
            progress: Progress::default(),
            cfg: cfg.clone(),
        };
        pr2.batch.start_episode_log(1 << 16);
        Ok(pr2)
    }

    /// [`Pr2Iql::new`] behind the [`Learner`] seam (the registry's constructor).
    pub(crate) fn boxed(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<BoxedLearner, TrainError> {
        Ok(Box::new(Pr2Iql::new(cfg, loaded, device)?))
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

    /// `E_rho[Q_i(s, a_i, .)]` per row `[R, A]` from critic rows `out` and, with a learned
    /// rho, the models' probabilities `rho` `[R, N-1, A, A]`.
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
        match (&mut self.models, self.cfg.rho) {
            (Some(m), RhoForm::Model) => Ok(Some(m.probs(input, nets)?)),
            _ => Ok(None),
        }
    }

    /// `E_rho[Q_i(s, a_i, .)]` `[R x N, A]` of the online critic for observation rows
    /// `[R, N, O]`.
    pub fn values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        let rows = obs.len() / self.spec.input.max(1);
        let nets: Vec<u32> = (0..rows).map(|r| (r % self.learners) as u32).collect();
        let out = self.critic.forward(Input::U8(obs), &nets)?;
        let rho = self.rho_for(obs, &nets)?;
        let mut values = Vec::new();
        self.expectations(&out, rho.as_deref(), &mut values);
        Ok(values)
    }

    /// `E_rho[Q_i]` `[B x N, A]` for the current observations (online critic).
    pub fn acting_values(&mut self) -> Result<Vec<f32>, TrainError> {
        let obs = self.batch.buffers().obs.clone();
        self.values(&obs)
    }

    /// The conditional opponent models' predictions for the current observations at each
    /// learner's greedy action: `[B x N, N-1, A]`, or `None` without models.
    pub fn predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        let a = self.actions;
        let greedy = greedy_actions(&self.acting_values()?, a);
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
    // Targets and update (one learner step)
    // --------------------------------------------------------------------------------------

    /// Fills the step buffers from `sequences` of the replay: rows `[S, T+1+K, N]` (the K
    /// final observations after each sequence's steps, scored but not trained on).
    fn gather(&mut self, sequences: &[usize]) {
        let (t_max, n, d, o) = (
            self.cfg.rollout,
            self.learners,
            self.spec.input,
            self.learners - 1,
        );
        let rp = &self.replay;
        let s = &mut self.step;
        s.input.clear();
        s.nets.clear();
        s.own.clear();
        s.others.clear();
        s.rewards.clear();
        s.terminated.clear();
        s.boot.clear();
        s.train.clear();
        let k_max = rp.finals_per;
        for &c in sequences {
            let base = s.nets.len();
            let seq_obs = (c * (t_max + 1) * n) * d..((c + 1) * (t_max + 1) * n) * d;
            s.input.extend_from_slice(&rp.obs[seq_obs]);
            let mut finals_seen = 0;
            for t in 0..=t_max {
                let last = t == t_max;
                let truncated = !last && rp.truncated[c * t_max + t] != 0.0;
                for i in 0..n {
                    s.nets.push(i as u32);
                    s.train.push(!last);
                    if last {
                        s.own.push(0);
                        s.others.extend(std::iter::repeat_n(0, o));
                        s.rewards.push(0.0);
                        s.terminated.push(1.0);
                        s.boot.push(0);
                        continue;
                    }
                    let at = (c * t_max + t) * n;
                    s.own.push(rp.actions[at + i]);
                    s.others
                        .extend((0..n).filter(|&j| j != i).map(|j| rp.actions[at + j]));
                    s.rewards.push(rp.rewards[at + i]);
                    s.terminated.push(rp.terminated[c * t_max + t]);
                    let next_step = if truncated {
                        t_max + 1 + finals_seen.min(k_max.saturating_sub(1))
                    } else {
                        t + 1
                    };
                    s.boot.push(base + next_step * n + i);
                }
                finals_seen += usize::from(truncated);
            }
            let per = k_max * n * d;
            s.input
                .extend_from_slice(&rp.finals[c * per..(c + 1) * per]);
            for _ in 0..k_max {
                for i in 0..n {
                    s.nets.push(i as u32);
                    s.train.push(false);
                    s.own.push(0);
                    s.others.extend(std::iter::repeat_n(0, o));
                    s.rewards.push(0.0);
                    s.terminated.push(1.0);
                    s.boot.push(0);
                }
            }
        }
    }

    /// One learner step: sample sequences, targets from the target critics (in passes of at
    /// most [`pass_rows`] rows), `epochs` shuffled passes of `minibatches` value-loss steps, one
    /// pass of the opponent models, a Polyak update. Returns the mean loss and the models'
    /// scores.
    fn learn(&mut self, adam: &AdamConfig) -> Result<(f32, Option<OpponentScores>), TrainError> {
        let s_count = self.cfg.buffer_batch_size;
        let mut chosen = Vec::with_capacity(s_count);
        for k in 0..s_count {
            chosen.push(if k == 0 && self.cfg.cer > 0 {
                self.replay.ring.newest(0)
            } else {
                below(self.core.sampler.next_u32(), self.replay.ring.len as u32) as usize
            });
        }
        self.gather(&chosen);
        let (n, w, a, d) = (
            self.learners,
            self.row.width(),
            self.actions,
            self.spec.input,
        );
        let o = n - 1;
        let rows = self.step.nets.len();
        let pass = pass_rows(&self.cfg, n);

        // Targets: V(s') = max_a E_rho[Q_target(s', a, .)] of row `boot[r]`: s_{t+1}, or the
        // final observation where step t truncated; a termination does not bootstrap.
        let input = std::mem::take(&mut self.step.input);
        let nets = std::mem::take(&mut self.step.nets);
        let mut values = std::mem::take(&mut self.step.values);
        values.clear();
        let mut chunk_values = Vec::new();
        for start in (0..rows).step_by(pass) {
            let end = (start + pass).min(rows);
            let q = self
                .critic
                .forward_target(Input::U8(&input[start * d..end * d]), &nets[start..end])?;
            let rho = self.rho_for(&input[start * d..end * d], &nets[start..end])?;
            self.expectations(&q, rho.as_deref(), &mut chunk_values);
            values.extend_from_slice(&chunk_values);
        }
        let gamma = self.cfg.gamma;
        let s = &mut self.step;
        s.targets.clear();
        s.targets.extend((0..rows).map(|r| {
            if !s.train[r] {
                return 0.0;
            }
            let next = &values[s.boot[r] * a..(s.boot[r] + 1) * a];
            let best = max_value(next);
            s.rewards[r] + gamma * (1.0 - s.terminated[r]) * best
        }));
        self.step.values = values;

        // Epochs of shuffled minibatches of the value loss on the observed Q(s, a_i, a_-i).
        let mut order: Vec<usize> = (0..rows).filter(|&r| self.step.train[r]).collect();
        let per_batch = order.len().div_ceil(self.cfg.minibatches.max(1)).max(1);
        let mut mb = Minibatch::default();
        let (mut loss_sum, mut batches) = (0.0f64, 0u64);
        for _ in 0..self.cfg.epochs {
            for k in (1..order.len()).rev() {
                let j = below(self.core.sampler.next_u32(), k as u32 + 1) as usize;
                order.swap(k, j);
            }
            for chunk in order.chunks(per_batch) {
                mb.gather(chunk, &input, &nets, &self.step, d, o);
                let out = self.critic.forward(Input::U8(&mb.input), &mb.nets)?;
                let s = &mut self.step;
                s.d_out.clear();
                s.d_out.resize(out.len(), 0.0);
                let mut loss = 0.0f64;
                let scale = 1.0 / chunk.len() as f32;
                for (k, &r) in chunk.iter().enumerate() {
                    let row = &out[k * w..(k + 1) * w];
                    let others = &s.others[r * o..(r + 1) * o];
                    let own = s.own[r] as usize;
                    loss += self.row.row_loss(
                        row,
                        own,
                        others,
                        s.targets[r],
                        scale,
                        &mut self.scratch,
                        &mut s.d_out[k * w..(k + 1) * w],
                    ) as f64;
                }
                drop(out);
                let loss = (loss / chunk.len() as f64) as f32;
                if !loss.is_finite() {
                    return Err(TrainError::NonFinite {
                        update: self.progress.update + 1,
                        tensor: "PR2 critic loss".into(),
                        value: loss,
                    });
                }
                loss_sum += loss as f64;
                batches += 1;
                self.critic.backward(&self.step.d_out)?;
                self.critic.step(adam);
            }
        }
        self.critic.polyak(self.cfg.target_tau);

        // The opponent models: one pass over the same rows, scored before each step.
        let scores = match &mut self.models {
            Some(m) => {
                let mut mean = ScoreMean::default();
                for chunk in order.chunks(per_batch) {
                    mb.gather(chunk, &input, &nets, &self.step, d, o);
                    let train = vec![true; chunk.len()];
                    let sc = m.score_and_train(
                        &mb.input, &mb.nets, &mb.own, &mb.others, &train, adam.lr,
                    )?;
                    mean.add(sc, chunk.len() as f64);
                }
                mean.mean()
            }
            None => None,
        };
        self.step.input = input;
        self.step.nets = nets;
        self.core
            .limiter
            .sample((self.cfg.buffer_batch_size * self.cfg.rollout) as u64);
        self.core.learner_steps += 1;
        Ok(((loss_sum / batches.max(1) as f64) as f32, scores))
    }

    // --------------------------------------------------------------------------------------
    // Rollout and schedule
    // --------------------------------------------------------------------------------------

    /// One update: a rollout of every arena, stored as sequences, then the learner steps the
    /// rate limiter allows.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let epsilon = self.epsilon();
        let (lr, adam) = optimiser(&self.cfg, self.progress.update);
        let threshold = crate::rng::threshold(epsilon as f64);
        let (n, a, b) = (self.learners, self.actions, self.cfg.arenas);
        let per_step = b * n * self.spec.input;
        self.rollout.kept.fill(0);
        for t in 0..self.cfg.rollout {
            let t_learn = std::time::Instant::now();
            let values = self.acting_values()?;
            let obs = &self.batch.buffers().obs;
            self.rollout.obs[t * per_step..(t + 1) * per_step].copy_from_slice(obs);
            let chosen = self.batch.actions_mut();
            act_epsilon_greedy(&mut self.core.explore, &values, a, threshold, chosen);
            for (taken, &action) in self.rollout.actions[t * b * n..(t + 1) * b * n]
                .iter_mut()
                .zip(chosen.iter())
            {
                *taken = action as u32;
            }
            self.progress.learn_seconds += t_learn.elapsed().as_secs_f64();
            let t_sim = std::time::Instant::now();
            self.batch.step()?;
            self.progress.sim_seconds += t_sim.elapsed().as_secs_f64();
            let buf = self.batch.buffers();
            self.rollout.rewards[t * b * n..(t + 1) * b * n].copy_from_slice(&buf.rewards);
            self.rollout.record_ends(t, buf, n * self.spec.input);
        }
        let t_learn = std::time::Instant::now();
        let last = self.cfg.rollout * per_step;
        self.rollout.obs[last..last + per_step].copy_from_slice(&self.batch.buffers().obs);
        let mut evicted = 0u64;
        for arena in 0..b {
            evicted += u64::from(self.replay.push(&self.rollout, arena));
        }
        let t_steps = self.cfg.rollout as u64;
        self.core.limiter.insert(b as u64 * t_steps);
        self.core.limiter.delete(evicted * t_steps);
        let (mut losses, mut steps, mut scores) = (0.0f64, 0u64, None);
        for _ in 0..self
            .core
            .limiter
            .allowed_batches((self.cfg.buffer_batch_size as u64) * t_steps)
        {
            let (loss, s) = self.learn(&adam)?;
            losses += loss as f64;
            steps += 1;
            scores = s.or(scores);
        }
        self.progress.learn_seconds += t_learn.elapsed().as_secs_f64();
        self.progress.env_steps += self.cfg.steps_per_update();
        self.progress.update += 1;
        let episodes = self.batch.take_episodes();
        let opponents = scores;
        Ok(UpdateStats::replay(
            (losses, steps),
            (epsilon, lr),
            episodes,
            opponents,
        ))
    }
}

// ------------------------------------------------------------------------------------------
// Acting, predictions and checkpoints (the Learner seam)
// ------------------------------------------------------------------------------------------

impl Learner for Pr2Iql {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        Pr2Iql::update(self)
    }

    fn act_exploring(&mut self) -> Result<Vec<u8>, TrainError> {
        let threshold = crate::rng::threshold(self.epsilon() as f64);
        let values = self.acting_values()?;
        let mut chosen = vec![0u8; values.len() / self.actions.max(1)];
        act_epsilon_greedy(
            &mut self.core.explore,
            &values,
            self.actions,
            threshold,
            &mut chosen,
        );
        Ok(chosen)
    }

    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        self.values(obs)
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
    crate::train::replay::replay_learner_plumbing!();
}
