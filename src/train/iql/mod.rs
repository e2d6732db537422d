//! IQL: an independent DQN per learner (networks stacked, one dispatch for all) with a
//! struct-of-arrays replay ring buffer, combined experience replay (the newest rows are in every
//! minibatch), Polyak-averaged target networks, Huber loss (or the configured `loss`) on
//! `r + gamma (1 - d) max_a Q_target(s', a)`, and the rate limiter driving the schedule: after
//! every environment step the rows are inserted (never blocking) and exactly the learner steps
//! the limiter allows are run, each consuming one batch. With `threaded`, an actor thread and
//! a learner thread run side by side instead; thread timing then decides which rows each
//! minibatch sees, so threaded runs (and their resumes) are not bit-for-bit reproducible.
//!
//! Seeds and sweeps in one run (see `train::sweep`): every grid point x seed is a replica with
//! its own arenas, replay, rate limiter, exploration and sampling streams (seeded from its own
//! seed as a single run seeds them), and its own networks, the r-th block of one stack. One
//! forward acts for every replica; a learner step stacks every replica's minibatch into one
//! forward/backward, each replica's loss (its own kind and parameters, `q_head.rs`) averaged
//! over its own rows, each network stepped with its replica's learning rate and clip and
//! averaged into its target with its replica's `target_tau`. Each replica learns at its own
//! moments: after every environment step, replica r runs exactly the learner steps its own
//! rate limiter allows (its `samples_per_insert`, `min_replay`, `rate_error_buffer`), so a
//! stacked pass holds the minibatches of the replicas that still have a step to run, and the
//! critic's masked step moves only their networks, each with bias correction from its own Adam
//! step count. So replica k computes exactly what a single run with its configuration computes.
//! With `opponent_models`, every replica has its own models (the r-th block of the models'
//! stack) trained on its own block of each learner step's stacked minibatch at its own
//! learning rate (see `train::opponent`); the models share one step count, so with models the
//! replicas must learn at the same moments (the rate limiter's keys are not swept).
//!
//! With `network: gru` the replay holds sequences of `rollout` steps instead of transitions
//! (R2D2-style, `sequences.rs`): acting reads and writes the arenas' hidden states, a
//! minibatch is `batch_size` whole sequences replayed from their stored hidden states, the
//! first `burn_in` steps carrying no loss. Not with `threaded` or `opponent_models` (refused).
//!
//! Configuration read here (see [`RunConfig`]): `arenas`, `rollout` (environment steps per
//! update), `replay_capacity`, `batch_size`, `cer`, `min_replay`, `samples_per_insert`,
//! `rate_error_buffer`, `target_tau`, `gamma`, `lr`/`lr_decay`/`max_grad_norm`/`radam`,
//! `eps_*`, `shared`, `hidden`, `layers`, `seeds`, `sweep`, `opponent_models`, `threaded`,
//! `wait_seconds`, `network`, `gru_hidden`, `burn_in`.

mod buffer;
mod sequences;
mod threaded;

use super::config::RunConfig;
use super::error::TrainError;
use super::explore::act_epsilon_greedy;
use super::learner::{BoxedLearner, Learner, Progress};
use super::opponent::{OpponentModels, OpponentNetworks, ScoreMean, set_models_params};
use super::q_head::{QHead, q_values_by_replica};
use super::qnet::{q_rows, row_nets, stack_spec, write_input};
use super::replay::{ReplayCore, successor_input};
use super::replicas::{StepValues, UpdateValues, models_in_step, replicas_critic};
use super::schedule::epsilon_by_steps;
use super::sizing::{
    PlanTensor, checkpoint_tensor, fmt, opponent_spec, opponent_tensor, qnet_tensors,
    sequence_replay_tensors,
};
use super::stats::UpdateStats;
use crate::critic::{Backend, Chosen, Critic, Input, StackSpec};
use crate::dist::Job;
use crate::engine::EnvBatch;
use crate::layout::Layout;
use crate::scenario::LoadedScenario;
pub use buffer::td_target;
use buffer::{Minibatch, Replay};
use sequences::{SeqBatch, SeqReplay, Store, sequence_config};

// ------------------------------------------------------------------------------------------
// Learner
// ------------------------------------------------------------------------------------------

/// An IQL learner with its arenas.
pub struct Iql {
    cfg: RunConfig,
    /// Every replica's own arenas, replay and schedule (one without seeds or a sweep).
    lanes: Vec<Lane>,
    /// The online networks of every replica (targets live beside them in the critic).
    pub critic: Critic,
    /// The whole stack (every replica's networks).
    spec: StackSpec,
    nets_per_replica: usize,
    /// How outputs become Q-values, and the loss (replica 0's: the [`Learner`] seam's).
    head: QHead,
    /// Each replica's head (the same width; a sweep may give them their own loss parameters).
    heads: Vec<QHead>,
    learners: usize,
    actions: usize,
    progress: Progress,
    /// Each row's network within its replica, `[B x N]` (what the replay stores).
    local_nets: Vec<u32>,
    /// Each row's network in the stack, `[R x B x N]` (acting).
    nets: Vec<u32>,
    /// Every replica's minibatch stacked (several replicas).
    stacked: Minibatch,
    /// Opponent models (`opponent_models: true`; every replica's, one block each), trained on
    /// every sampled minibatch.
    pub models: Option<OpponentModels>,
    /// Each replica's opponent-model scores over the update's learner steps.
    scores: Vec<ScoreMean>,
    /// With `network: gru`: every learning replica's sequences stacked (reused).
    seq_batch: SeqBatch,
    /// `[rows, g]` the hidden states of the current acting pass (gathered from the batches).
    hidden: Vec<f32>,
}

/// One replica of an IQL run: its single-run configuration, arenas, replay, streams, limiter
/// and minibatch.
struct Lane {
    cfg: RunConfig,
    batch: EnvBatch,
    core: ReplayCore,
    replay: Store,
    mb: Minibatch,
    /// With `network: gru`: the sequences of this replica's next minibatch.
    picks: Vec<usize>,
}

pub use super::replicas::ReplicasState;

impl Iql {
    /// A fresh learner: replica r's arenas, streams and networks seeded with its own seed
    /// (`cfg.seed + s` for seed index s).
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
        let reps = cfg
            .replicas()
            .map_err(|e| TrainError::Config(e.to_string()))?;
        let single = stack_spec(cfg, loaded);
        let (critic, spec) = replicas_critic(single, (cfg.seed, &reps), (device, job))?;
        // Replica 0's head acts for the Learner seam; every replica's has the same width (the
        // sweep refuses others).
        let heads: Vec<QHead> = reps.iter().map(|r| QHead::of(&r.cfg)).collect();
        let head = heads[0];
        let actions = spec.head / head.outputs_per_action();
        let learners = loaded.scenario.learners_per_arena();
        let rows_per_step = cfg.arenas * learners;
        let width = spec.state_width();
        if width > 0 {
            sequence_config(cfg)?;
        }
        // Rate-limiter items inserted at once and sampled per learner step: rows, or whole
        // sequences of `rollout` rows.
        let per_entry = if width > 0 { cfg.rollout } else { 1 };
        let models = if cfg.learn.opponent_models {
            Some(OpponentModels::new(
                cfg,
                learners,
                actions,
                spec.input,
                cfg.iql.batch_size,
                (device, job),
            )?)
        } else {
            None
        };
        let groups = if cfg.learn.opponent_models { learners - 1 } else { 0 };
        let scores = reps.iter().map(|_| ScoreMean::default()).collect();
        let mut lanes = Vec::with_capacity(reps.len());
        for r in reps {
            let mut batch = cfg.training_batch(loaded, r.cfg.seed, job)?;
            batch.start_episode_log(1 << 16);
            if width > 0 {
                batch.set_hidden_width(width);
            }
            let sizes = (actions, single.nets);
            let items = (rows_per_step * per_entry, cfg.iql.batch_size * per_entry);
            let (capacity, steps) = (cfg.iql.replay_capacity, cfg.rollout);
            let replay = match width {
                0 => Store {
                    rows: Replay::new(capacity, spec.input, groups, sizes),
                    seqs: None,
                },
                _ => Store {
                    rows: Replay::new(0, spec.input, groups, sizes),
                    seqs: Some(SeqReplay::new(
                        (capacity / steps, steps),
                        (spec.input, width),
                        rows_per_step,
                        sizes,
                    )),
                },
            };
            lanes.push(Lane {
                core: ReplayCore::new_in(&r.cfg, (items.0 as u64, items.1 as u64), job)?,
                replay,
                mb: Minibatch::default(),
                picks: Vec::new(),
                batch,
                cfg: r.cfg,
            });
        }
        let local_nets = row_nets(rows_per_step, learners, cfg.network.shared);
        let nets = (0..lanes.len())
            .flat_map(|r| local_nets.iter().map(move |n| n + (r * single.nets) as u32))
            .collect();
        Ok(Iql {
            lanes,
            critic,
            spec,
            nets_per_replica: single.nets,
            head,
            heads,
            learners,
            actions,
            progress: Progress::default(),
            local_nets,
            nets,
            stacked: Minibatch::default(),
            models,
            scores,
            seq_batch: SeqBatch::default(),
            hidden: Vec::new(),
            cfg: cfg.clone(),
        })
    }

    /// [`Iql::new`] behind the [`Learner`] seam (the registry's constructor).
    pub(crate) fn boxed(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<BoxedLearner, TrainError> {
        Ok(Box::new(Iql::new_in(cfg, loaded, device, job)?))
    }

    /// The network stack's shape (every replica's networks).
    pub fn spec(&self) -> StackSpec {
        self.spec
    }

    /// The observation rows of the first `replicas` replicas as network input, replica after
    /// replica (with the learner's one-hot index when shared).
    fn input(&self, replicas: usize) -> Vec<u8> {
        let (n, d) = (self.learners, self.spec.input);
        let o = self.lanes[0].batch.layout().obs_len;
        let per = self.cfg.arenas * n * d;
        let mut out = vec![0u8; replicas * per];
        for (lane, rows) in self.lanes.iter().zip(out.chunks_exact_mut(per.max(1))) {
            write_input(&lane.batch.buffers().obs, n, o, d, rows);
        }
        out
    }

    /// The exploration rate now (replica 0's; linear over `eps_fraction` of the run's steps).
    pub fn epsilon(&self) -> f32 {
        epsilon_by_steps(&self.lanes[0].cfg, self.progress.env_steps)
    }

    // --------------------------------------------------------------------------------------
    // Rollout
    // --------------------------------------------------------------------------------------

    /// Epsilon-greedy actions of the first `thresholds.len()` replicas (one forward for all),
    /// each with its own streams and exploration threshold, into their arenas; returns the
    /// input rows acted on and each replica's actions. With a recurrent network the pass reads
    /// and advances the arenas' hidden states; `step` `Some(t)` records step t of the
    /// sequences being acted (the replay's).
    fn act(
        &mut self,
        thresholds: &[u64],
        step: Option<usize>,
    ) -> Result<(Vec<u8>, Vec<Vec<u32>>), TrainError> {
        let obs = self.input(thresholds.len());
        let per = self.local_nets.len();
        let nets = &self.nets[..thresholds.len() * per];
        let out = if self.spec.state_width() == 0 {
            self.critic.forward(Input::U8(&obs), nets)?
        } else {
            let lanes = &mut self.lanes[..thresholds.len()];
            let (d, g) = (self.spec.input, self.spec.state_width());
            self.hidden.clear();
            for (lane, rows) in lanes.iter_mut().zip(obs.chunks_exact(per * d)) {
                let h = lane.batch.hidden_states();
                if let (Some(t), Some(seqs)) = (step, &mut lane.replay.seqs) {
                    seqs.before_step(t, rows, h);
                }
                self.hidden.extend_from_slice(h);
            }
            let out = self.critic.act(Input::U8(&obs), nets, &mut self.hidden)?;
            for (lane, h) in lanes.iter_mut().zip(self.hidden.chunks_exact(per * g)) {
                lane.batch.hidden_states_mut().copy_from_slice(h);
            }
            out
        };
        let q = q_values_by_replica(&self.heads, out, nets, self.nets_per_replica);
        let a = self.actions;
        let mut taken = Vec::with_capacity(thresholds.len());
        for ((lane, q), &threshold) in self.lanes.iter_mut().zip(q.chunks(per * a)).zip(thresholds)
        {
            let chosen = lane.batch.actions_mut();
            act_epsilon_greedy(&mut lane.core.explore, q, a, threshold, chosen);
            taken.push(chosen.iter().map(|&x| x as u32).collect());
        }
        Ok((obs, taken))
    }

    /// Rate-limiter items a learner step samples: `batch_size` rows, or `batch_size`
    /// sequences of `rollout` rows with a recurrent network.
    fn sampled_items(&self) -> u64 {
        let per_entry = if self.spec.state_width() > 0 {
            self.cfg.rollout
        } else {
            1
        };
        (self.cfg.iql.batch_size * per_entry) as u64
    }

    /// The learner steps each replica's rate limiter allows now.
    fn allowed_steps(&self) -> Vec<u64> {
        let batch = self.sampled_items();
        self.lanes
            .iter()
            .map(|lane| lane.core.limiter.allowed_batches(batch))
            .collect()
    }

    /// One learner step for every replica whose `active[r]` is true: each fills its minibatch
    /// (the newest rows and uniform samples of its own replay, with its own stream), all
    /// stacked into one pass that steps their networks only.
    fn learn(&mut self, values: &[StepValues], active: &[bool]) -> Result<f32, TrainError> {
        let update = self.progress.update;
        if self.spec.state_width() > 0 {
            return self.learn_sequences(values, active);
        }
        models_in_step(self.models.is_some(), active)?;
        for (lane, _) in self.lanes.iter_mut().zip(active).filter(|(_, a)| **a) {
            lane.mb
                .fill(&lane.replay.rows, &mut lane.core.sampler, &lane.cfg);
        }
        let mb = if self.lanes.len() == 1 {
            &mut self.lanes[0].mb
        } else {
            let parts = (self.lanes.iter().enumerate())
                .filter(|(r, _)| active[*r])
                .map(|(r, l)| (r, &l.mb));
            self.stacked.stack(parts, self.nets_per_replica);
            &mut self.stacked
        };
        let sizes = (self.actions, self.nets_per_replica, &self.heads[..]);
        let value = mb.train(&mut self.critic, (values, active), sizes, update)?;
        if let Some(m) = &mut self.models {
            // Each replica's models on its own block of rows, at its learning rate.
            let lrs: Vec<f32> = values.iter().map(|v| v.adam.lr).collect();
            let block = self.cfg.iql.batch_size;
            let scores = m.score_and_train_rows(&mb.obs, &mb.slots, &mb.others, &lrs, block)?;
            for (mean, s) in self.scores.iter_mut().zip(scores) {
                mean.add(s, block as f64);
            }
        }
        for (lane, _) in self.lanes.iter_mut().zip(active).filter(|(_, a)| **a) {
            lane.core.limiter.sample(self.cfg.iql.batch_size as u64);
            lane.core.learner_steps += 1;
        }
        Ok(value)
    }

    /// [`Iql::learn`] with a recurrent network: each active replica samples whole sequences,
    /// all stacked into one sequence pass (see `sequences.rs`).
    fn learn_sequences(
        &mut self,
        values: &[StepValues],
        active: &[bool],
    ) -> Result<f32, TrainError> {
        for (lane, _) in self.lanes.iter_mut().zip(active).filter(|(_, a)| **a) {
            // Each replica's own `cer` (a sweep may vary it).
            let sizes = (lane.cfg.iql.batch_size, lane.cfg.iql.cer);
            if let Some(seqs) = &lane.replay.seqs {
                seqs.sample(&mut lane.core.sampler, sizes, &mut lane.picks);
            }
        }
        let parts = (self.lanes.iter().enumerate())
            .filter(|(r, _)| active[*r])
            .filter_map(|(r, l)| l.replay.seqs.as_ref().map(|s| (r, s, &l.picks[..])));
        self.seq_batch
            .gather(parts, self.nets_per_replica, self.cfg.network.burn_in);
        let sizes = (self.actions, self.nets_per_replica, &self.heads[..]);
        let update = self.progress.update;
        let critic = &mut self.critic;
        let value = self
            .seq_batch
            .train(critic, (values, active), sizes, update)?;
        let sampled = self.sampled_items();
        for (lane, _) in self.lanes.iter_mut().zip(active).filter(|(_, a)| **a) {
            lane.core.limiter.sample(sampled);
            lane.core.learner_steps += 1;
        }
        Ok(value)
    }

    /// One update: `rollout` environment steps, each followed by the learner steps the rate
    /// limiter allows (or, `threaded`, an actor and a learner thread side by side). With a
    /// recurrent network every learner row's sequence of the `rollout` steps goes into the
    /// replay after the last of them.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let (update, env_steps) = (self.progress.update, self.progress.env_steps);
        let cfgs = self.lanes.iter().map(|l| &l.cfg);
        let values = UpdateValues::of(cfgs, update, env_steps);
        let (mut losses, mut steps) = (0.0f64, 0u64);
        let rollout = if self.cfg.iql.threaded {
            let t0 = std::time::Instant::now();
            let sim_before = self.progress.sim_seconds;
            let (adam, threshold) = (values.steps[0].adam, values.thresholds[0]);
            (losses, steps) = self.update_threaded(&adam, threshold)?;
            self.progress.learn_seconds +=
                t0.elapsed().as_secs_f64() - (self.progress.sim_seconds - sim_before);
            0
        } else {
            self.cfg.rollout
        };
        let (n, d) = (self.learners, self.spec.input);
        let per_input = self.local_nets.len() * d;
        let mut next = Vec::new();
        for t in 0..rollout {
            let t_learn = std::time::Instant::now();
            let (obs, taken) = self.act(&values.thresholds, Some(t))?;
            let acting = t_learn.elapsed().as_secs_f64();
            let t_sim = std::time::Instant::now();
            for lane in &mut self.lanes {
                lane.batch.step()?;
            }
            self.progress.sim_seconds += t_sim.elapsed().as_secs_f64();
            let t_learn = std::time::Instant::now();
            let opponents = self.models.is_some();
            for (r, (lane, taken)) in self.lanes.iter_mut().zip(&taken).enumerate() {
                let (b, o) = (lane.batch.buffers(), lane.batch.layout().obs_len);
                successor_input(b, (n, o, d), &mut next);
                if let Some(seqs) = &mut lane.replay.seqs {
                    seqs.after_step(t, (&next, taken), b, n);
                    if t + 1 == rollout {
                        let evicted = seqs.finish(&self.local_nets);
                        lane.core.limiter.insert((taken.len() * rollout) as u64);
                        lane.core.limiter.delete(evicted * rollout as u64);
                    }
                    continue;
                }
                let obs = &obs[r * per_input..(r + 1) * per_input];
                let evicted = lane.replay.rows.insert_step(
                    (obs, &next),
                    taken,
                    b,
                    &self.local_nets,
                    n,
                    opponents,
                );
                lane.core.limiter.insert(taken.len() as u64);
                lane.core.limiter.delete(evicted);
            }
            // Each replica runs its own limiter's steps; a pass serves those with one left.
            let allowed = self.allowed_steps();
            let most = allowed.iter().copied().max().unwrap_or(0);
            for i in 0..most {
                let active: Vec<bool> = allowed.iter().map(|&a| a > i).collect();
                losses += self.learn(&values.steps, &active)? as f64;
                steps += 1;
            }
            self.progress.learn_seconds += acting + t_learn.elapsed().as_secs_f64();
        }

        // --------------------------------------------------------------------------------------
        // Logging
        // --------------------------------------------------------------------------------------
        self.progress.env_steps += self.cfg.steps_per_update();
        self.progress.update += 1;
        // Each replica's scores (all or none: the replicas learn in the same steps).
        let scores: Option<Vec<_>> = self
            .scores
            .iter_mut()
            .map(|s| std::mem::take(s).mean())
            .collect();
        let replicas = self.lanes.len();
        let per_replica = self.lanes.iter_mut().map(|l| l.batch.take_episodes());
        Ok(values
            .stats((losses, steps), per_replica.collect(), None)
            .with_opponents(scores.unwrap_or_default(), replicas))
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
        let o = self.lanes[0].batch.layout().obs_len;
        let shape = (self.learners, o, self.spec.input);
        q_rows(&mut self.critic, &self.head, obs, shape, &mut [])
    }

    fn q_values_recurrent(
        &mut self,
        obs: &[u8],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, TrainError> {
        let o = self.lanes[0].batch.layout().obs_len;
        let shape = (self.learners, o, self.spec.input);
        q_rows(&mut self.critic, &self.head, obs, shape, hidden)
    }

    fn opponent_predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        let input = self.input(1);
        let n = self.learners as u32;
        let nets: Vec<u32> = (0..self.local_nets.len() as u32).map(|r| r % n).collect();
        match &mut self.models {
            Some(m) => Ok(Some(m.probs(&input, &nets)?)),
            None => Ok(None),
        }
    }

    fn set_opponent_params(&mut self, p: &[f32]) -> Result<(), TrainError> {
        set_models_params(&mut self.models, p)
    }

    // State, progress and the batch/critic accessors: the same fields in IQL and PR2-IQL.
    crate::train::replicas::replica_learner_plumbing!();
}

// ------------------------------------------------------------------------------------------
// Memory plan
// ------------------------------------------------------------------------------------------

/// IQL's tensors for the memory preflight: the Q-network stack of every replica with a pass of
/// every replica's minibatch (or of acting on every learner), every replica's replay buffer
/// (of sequences with `network: gru`, with the sequences being acted and the minibatch's
/// buffers), and the opponent models, which score one minibatch per pass and store the
/// others' actions with every replayed row.
pub(crate) fn plan(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
) -> Vec<PlanTensor> {
    let (n, replicas) = (layout.learners as u64, cfg.replica_count() as u64);
    let pass_rows = super::sizing::iql_pass_rows(cfg, layout);
    let pass = "replicas x batch_size (x rollout with network: gru), or replicas x arenas x \
                learners when acting";
    let (mut tensors, spec) = qnet_tensors(cfg, loaded, layout, backend, pass_rows, pass);
    let d = spec.input as u64;
    let mut replay = replicas * cfg.iql.replay_capacity as u64 * (2 * d + 16);
    if spec.state_width() > 0 {
        let (lines, ring) = sequence_replay_tensors(cfg, layout, (&spec, backend));
        tensors.extend(lines);
        replay = ring;
    } else {
        tensors.push(PlanTensor {
            name: "replay buffer".into(),
            shape: format!(
                "{replicas} replicas x {} rows x (2 x {d} B obs + 16 B)",
                fmt(cfg.iql.replay_capacity as u64)
            ),
            bytes: replay,
            knobs: "lower replay_capacity or seeds",
        });
    }
    let mut models = 0;
    if cfg.learn.opponent_models {
        let rows = replicas * cfg.iql.batch_size as u64;
        let extra = replicas * cfg.iql.replay_capacity as u64 * 4 * n;
        tensors.push(opponent_tensor(
            cfg, layout, spec.input, backend, rows, extra,
        ));
        replay += extra;
        models = opponent_spec(cfg, layout, spec.input).params() as u64;
    }
    let params = (spec.params() as u64, true);
    let arenas = (
        replicas * cfg.arenas as u64,
        layout.bytes_per_arena() as u64,
    );
    tensors.push(checkpoint_tensor(cfg, params, models, replay, arenas));
    tensors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::critic::{Device, choose_device};

    /// Replicas whose rate limiters allow different learner steps (here: replica 1 counted
    /// batches it never learned from, so its limiter holds it back) each run their own: replica
    /// 0's networks step, replica 1's stay, each network counting its own Adam steps.
    #[test]
    fn replicas_whose_limiters_disagree_learn_their_own_steps() {
        let mut cfg = RunConfig {
            algo: super::super::config::Algo::Iql,
            scenario: Some("tests/data/chase.ron".into()),
            device: Device::Cpu,
            arenas: 2,
            rollout: 8,
            seeds: 2,
            total_steps: 2 * 8 * 4,
            ..RunConfig::default()
        };
        (cfg.iql.batch_size, cfg.iql.cer) = (4, 1);
        (cfg.iql.replay_capacity, cfg.iql.min_replay) = (64, 8);
        (cfg.network.hidden, cfg.network.layers) = (8, 1);
        cfg.validate().unwrap();
        let loaded = super::super::load_scenario(&cfg).unwrap();
        let device = choose_device(Device::Cpu).unwrap();
        let mut iql = Iql::new(&cfg, &loaded, &device).unwrap();
        iql.update().unwrap();
        let per = iql.nets_per_replica;
        let before = iql.critic.net_steps().to_vec();
        assert!(before[0] > 0 && before[..] == [before[0]].repeat(before.len())[..]);
        let params = iql.critic.params().unwrap();
        iql.lanes[1].core.limiter.sample(1 << 20);
        iql.update().unwrap();
        let after = iql.critic.net_steps().to_vec();
        assert!(after[..per].iter().all(|&s| s > before[0]), "{after:?}");
        assert_eq!(after[per..], before[per..], "replica 1 stepped");
        let p = iql.critic.params().unwrap();
        let half = p.len() / 2;
        assert_eq!(p[half..], params[half..], "replica 1's parameters moved");
        assert_ne!(
            p[..half],
            params[..half],
            "replica 0's parameters did not move"
        );
    }
}
