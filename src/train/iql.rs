//! IQL: an independent DQN per learner (networks stacked, one dispatch for all) with a
//! struct-of-arrays replay ring buffer, combined experience replay (the newest rows are in every
//! minibatch), Polyak-averaged target networks, Huber loss (or the configured `loss`) on
//! `r + gamma (1 - d) max_a Q_target(s', a)`, and the rate limiter driving the schedule: after
//! every environment step the rows are inserted (never blocking) and exactly the learner steps
//! the limiter allows are run, each consuming one batch. With `threaded`, an actor thread and
//! a learner thread run side by side instead; thread timing then decides which rows each
//! minibatch sees, so threaded runs (and their resumes) are not bit-for-bit reproducible.
//!
//! Configuration read here (see [`RunConfig`]): `arenas`, `rollout` (environment steps per
//! update), `replay_capacity`, `batch_size`, `cer`, `min_replay`, `samples_per_insert`,
//! `rate_error_buffer`, `target_tau`, `gamma`, `lr`/`lr_decay`/`max_grad_norm`/`radam`,
//! `eps_*`, `shared`, `hidden`, `layers`, `opponent_models`, `threaded`, `wait_seconds`, and
//! the value loss's `loss`, `huber_delta`, `bins`, `v_min`, `v_max`, `sigma` (`q_head.rs`).

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use super::config::RunConfig;
use super::error::TrainError;
use super::explore::{act_epsilon_greedy, max_value};
use super::learner::{BoxedLearner, Learner, Progress};
use super::opponent::{OpponentModels, OpponentNetworks, ScoreMean, set_models_params};
use super::q_head::QHead;
use super::qnet::{q_rows, row_nets, stack_spec, write_input};
use super::replay::{ReplayColumns, ReplayCore, Ring, successor_input};
use super::schedule::{epsilon_by_steps, optimiser};
use super::sizing::{
    PlanTensor, checkpoint_tensor, fmt, opponent_spec, opponent_tensor, qnet_tensors,
};
use super::stats::UpdateStats;
use super::tensors::Column;
use crate::components::StepBuffers;
use crate::critic::{AdamConfig, Backend, Chosen, Critic, Input, StackSpec};
use crate::engine::EnvBatch;
use crate::layout::Layout;
use crate::rng::below;
use crate::scenario::LoadedScenario;

// ------------------------------------------------------------------------------------------
// Replay
// ------------------------------------------------------------------------------------------

/// A ring buffer of transitions, one column per field.
struct Replay {
    ring: Ring,
    width: usize,
    obs: Vec<u8>,
    next: Vec<u8>,
    action: Vec<u32>,
    reward: Vec<f32>,
    /// 1 where the rules ended the episode (no bootstrap); a truncation keeps 0 and its `next`
    /// is the episode's final observation.
    terminated: Vec<f32>,
    net: Vec<u32>,
    /// With opponent models: the learner's slot and the others' actions `[C, N-1]`.
    slot: Vec<u32>,
    others: Vec<u32>,
    groups: usize,
    /// Bounds of the integer columns (checked on restore): actions, networks.
    actions: u32,
    nets: u32,
}

impl ReplayColumns for Replay {
    fn ring(&mut self) -> &mut Ring {
        &mut self.ring
    }

    fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        let learners = self.groups as u32 + 1;
        vec![
            ("obs", Column::U8(&mut self.obs)),
            ("next", Column::U8(&mut self.next)),
            ("action", Column::U32(&mut self.action, self.actions)),
            ("reward", Column::F32(&mut self.reward)),
            ("terminated", Column::F32(&mut self.terminated)),
            ("net", Column::U32(&mut self.net, self.nets)),
            ("slot", Column::U32(&mut self.slot, learners)),
            ("others", Column::U32(&mut self.others, self.actions)),
        ]
    }

    fn items_per_entry(&self) -> u64 {
        1
    }
}

impl Replay {
    /// An empty replay of `capacity` rows of `width` input bytes; with `groups` other
    /// learners' actions per row; actions below `actions`, networks below `nets`.
    fn new(
        capacity: usize,
        width: usize,
        groups: usize,
        (actions, nets): (usize, usize),
    ) -> Replay {
        Replay {
            ring: Ring::new(capacity),
            width,
            obs: vec![0; capacity * width],
            next: vec![0; capacity * width],
            action: vec![0; capacity],
            reward: vec![0.0; capacity],
            terminated: vec![0.0; capacity],
            net: vec![0; capacity],
            slot: vec![0; if groups > 0 { capacity } else { 0 }],
            others: vec![0; capacity * groups],
            groups,
            actions: actions as u32,
            nets: nets as u32,
        }
    }

    /// Adds one environment step of every learner of every arena: input rows `obs` before and
    /// `next` after (the successor rows of [`successor_input`]), the actions `taken`, rewards
    /// and terminations from `b`, each row's network; with `opponents`, each row's slot and
    /// the others' actions too. Returns the rows evicted.
    fn insert_step(
        &mut self,
        (obs, next): (&[u8], &[u8]),
        taken: &[u32],
        b: &StepBuffers,
        nets: &[u32],
        n: usize,
        opponents: bool,
    ) -> u64 {
        let (w, mut evicted) = (self.width, 0);
        for r in 0..taken.len() {
            let i = self.ring.head();
            if opponents {
                let (base, slot) = (r - r % n, r % n);
                self.slot[i] = slot as u32;
                let others = (0..n).filter(|&j| j != slot).map(|j| taken[base + j]);
                for (o, v) in self.others[i * self.groups..(i + 1) * self.groups]
                    .iter_mut()
                    .zip(others)
                {
                    *o = v;
                }
            }
            self.obs[i * w..(i + 1) * w].copy_from_slice(&obs[r * w..(r + 1) * w]);
            self.next[i * w..(i + 1) * w].copy_from_slice(&next[r * w..(r + 1) * w]);
            self.action[i] = taken[r];
            self.reward[i] = b.rewards[r];
            self.terminated[i] = f32::from(b.terminated[r / n] != 0);
            self.net[i] = nets[r];
            evicted += u64::from(self.ring.advance());
        }
        evicted
    }
}

/// A minibatch's rows copied out of the replay (so a shared replay is locked only while
/// copying).
#[derive(Default)]
struct Minibatch {
    obs: Vec<u8>,
    next: Vec<u8>,
    nets: Vec<u32>,
    actions: Vec<u32>,
    rewards: Vec<f32>,
    terminated: Vec<f32>,
    targets: Vec<f32>,
    slots: Vec<u32>,
    others: Vec<u32>,
}

impl Minibatch {
    /// The newest `cer` rows plus uniform samples, `batch_size` in all.
    fn fill(&mut self, replay: &Replay, sampler: &mut ChaCha8Rng, cfg: &RunConfig) {
        let (d, g, len) = (replay.width, replay.groups, replay.ring.len);
        self.obs.clear();
        self.next.clear();
        self.nets.clear();
        self.actions.clear();
        self.rewards.clear();
        self.terminated.clear();
        self.slots.clear();
        self.others.clear();
        for k in 0..cfg.batch_size {
            let i = if k < cfg.cer.min(len) {
                replay.ring.newest(k)
            } else {
                below(sampler.next_u32(), len as u32) as usize
            };
            self.obs.extend_from_slice(&replay.obs[i * d..(i + 1) * d]);
            self.next
                .extend_from_slice(&replay.next[i * d..(i + 1) * d]);
            self.nets.push(replay.net[i]);
            self.actions.push(replay.action[i]);
            self.rewards.push(replay.reward[i]);
            self.terminated.push(replay.terminated[i]);
            if g > 0 {
                self.slots.push(replay.slot[i]);
                self.others
                    .extend_from_slice(&replay.others[i * g..(i + 1) * g]);
            }
        }
    }

    // --------------------------------------------------------------------------------------
    // Targets and update
    // --------------------------------------------------------------------------------------

    /// Targets from the target networks, a step of the value loss (Huber by default) on the
    /// online networks, a Polyak update.
    fn train(
        &mut self,
        critic: &mut Critic,
        cfg: &RunConfig,
        (actions, head): (usize, &QHead),
        adam: &AdamConfig,
        update: u64,
    ) -> Result<f32, TrainError> {
        let q_next = head.q_values(critic.forward_target(Input::U8(&self.next), &self.nets)?);
        self.targets.clear();
        for (k, row) in q_next.chunks_exact(actions).enumerate() {
            let target = td_target(
                self.rewards[k],
                self.terminated[k],
                max_value(row),
                cfg.gamma,
            );
            self.targets.push(target);
        }
        critic.forward(Input::U8(&self.obs), &self.nets)?;
        critic.loss_backward(&head.loss(&self.actions, &self.targets))?;
        let value = critic.last_loss()?;
        if !value.is_finite() {
            return Err(TrainError::NonFinite {
                update: update + 1,
                tensor: "loss".into(),
                value,
            });
        }
        critic.step(adam);
        critic.polyak(cfg.target_tau);
        Ok(value)
    }
}

/// IQL's one-step target `r + gamma (1 - terminated) max_a Q_target(next, a)`: a truncated
/// transition keeps `terminated` 0 and its `next` is the final observation (Pardo et al., 2018),
/// so the time limit bootstraps instead of cutting.
pub fn td_target(reward: f32, terminated: f32, next_best: f32, gamma: f32) -> f32 {
    reward + gamma * (1.0 - terminated) * next_best
}

// ------------------------------------------------------------------------------------------
// Learner
// ------------------------------------------------------------------------------------------

/// An IQL learner with its arenas.
pub struct Iql {
    cfg: RunConfig,
    /// The arenas.
    pub batch: EnvBatch,
    /// The online networks (targets live beside them in the critic).
    pub critic: Critic,
    spec: StackSpec,
    /// How outputs become Q-values, and the loss.
    head: QHead,
    learners: usize,
    actions: usize,
    core: ReplayCore,
    replay: Replay,
    progress: Progress,
    nets: Vec<u32>,
    mb: Minibatch,
    /// Opponent models (`opponent_models: true`), trained on every sampled minibatch.
    pub models: Option<OpponentModels>,
    scores: ScoreMean,
}

impl Iql {
    /// A fresh learner.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<Iql, TrainError> {
        let batch = cfg.training_batch(loaded, cfg.seed)?;
        let spec = stack_spec(cfg, loaded);
        let head = QHead::of(cfg);
        let actions = spec.head / head.outputs_per_action();
        let critic = Critic::new(spec, cfg.seed, device)?;
        let learners = loaded.scenario.learners_per_arena();
        let rows_per_step = cfg.arenas * learners;
        let core = ReplayCore::new(cfg, rows_per_step as u64, cfg.batch_size as u64)?;
        let models = if cfg.opponent_models {
            Some(OpponentModels::new(
                cfg,
                learners,
                actions,
                spec.input,
                cfg.batch_size,
                device,
            )?)
        } else {
            None
        };
        let groups = if cfg.opponent_models { learners - 1 } else { 0 };
        let mut iql = Iql {
            batch,
            critic,
            spec,
            head,
            learners,
            actions,
            core,
            replay: Replay::new(
                cfg.replay_capacity,
                spec.input,
                groups,
                (actions, spec.nets),
            ),
            progress: Progress::default(),
            nets: row_nets(rows_per_step, learners, cfg.shared),
            mb: Minibatch::default(),
            models,
            scores: Default::default(),
            cfg: cfg.clone(),
        };
        iql.batch.start_episode_log(1 << 16);
        Ok(iql)
    }

    /// [`Iql::new`] behind the [`Learner`] seam (the registry's constructor).
    pub(crate) fn boxed(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<BoxedLearner, TrainError> {
        Ok(Box::new(Iql::new(cfg, loaded, device)?))
    }

    /// The network stack's shape.
    pub fn spec(&self) -> StackSpec {
        self.spec
    }

    /// Observation rows as network input (with the learner's one-hot index when shared).
    fn input(&self) -> Vec<u8> {
        let (n, o, d) = (self.learners, self.batch.layout().obs_len, self.spec.input);
        let obs = &self.batch.buffers().obs;
        let mut out = vec![0u8; obs.len() / o * d];
        write_input(obs, n, o, d, &mut out);
        out
    }

    /// The exploration rate now (linear over `eps_fraction` of the run's steps).
    pub fn epsilon(&self) -> f32 {
        epsilon_by_steps(&self.cfg, self.progress.env_steps)
    }

    // --------------------------------------------------------------------------------------
    // Rollout
    // --------------------------------------------------------------------------------------

    /// Epsilon-greedy actions for the current observations into the batch; returns the input
    /// rows acted on and the actions taken.
    fn act(&mut self, threshold: u64) -> Result<(Vec<u8>, Vec<u32>), TrainError> {
        let obs = self.input();
        let q = self
            .head
            .forward(&mut self.critic, Input::U8(&obs), &self.nets)?;
        let chosen = self.batch.actions_mut();
        act_epsilon_greedy(&mut self.core.explore, &q, self.actions, threshold, chosen);
        let taken = chosen.iter().map(|&a| a as u32).collect();
        Ok((obs, taken))
    }

    /// One learner step on a minibatch with the newest rows and uniform samples.
    fn learn(&mut self, adam: &AdamConfig) -> Result<f32, TrainError> {
        let update = self.progress.update;
        self.mb
            .fill(&self.replay, &mut self.core.sampler, &self.cfg);
        let value = self.mb.train(
            &mut self.critic,
            &self.cfg,
            (self.actions, &self.head),
            adam,
            update,
        )?;
        if let Some(m) = &mut self.models {
            let scores =
                m.score_and_train_rows(&self.mb.obs, &self.mb.slots, &self.mb.others, adam.lr)?;
            self.scores.add(scores, self.mb.slots.len() as f64);
        }
        self.core.limiter.sample(self.cfg.batch_size as u64);
        self.core.learner_steps += 1;
        Ok(value)
    }

    /// Threaded mode: an actor thread steps the arenas and inserts rows (waiting on the rate
    /// limiter when the learner falls behind), this thread learns whenever the limiter allows.
    /// The actor acts with a copy of the parameters refreshed every 8 learner steps. Waits are
    /// bounded by `wait_seconds`; running out reports which bound held the thread.
    /// Returns the summed loss and the learner steps.
    fn update_threaded(
        &mut self,
        adam: &AdamConfig,
        threshold: u64,
    ) -> Result<(f64, u64), TrainError> {
        use std::sync::Mutex;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::time::{Duration, Instant};

        use super::rate_limiter::SharedLimiter;

        let wait = Duration::from_secs_f64(self.cfg.wait_seconds.max(0.001));
        let limiter = SharedLimiter::new(self.core.limiter.clone());
        let replay = Mutex::new(std::mem::replace(
            &mut self.replay,
            Replay::new(0, 0, 0, (0, 0)),
        ));
        let snapshot = Mutex::new(self.critic.params()?);
        let version = AtomicU64::new(0);
        let done = AtomicBool::new(false);
        let Iql {
            cfg,
            batch,
            critic,
            spec,
            head,
            learners,
            actions,
            core,
            nets,
            mb,
            progress,
            ..
        } = self;
        let (cfg, spec, head, n, a) = (&*cfg, *spec, *head, *learners, *actions);
        let ReplayCore {
            explore,
            sampler,
            learner_steps,
            ..
        } = core;
        let update = progress.update;
        let lock_replay = || replay.lock().unwrap_or_else(|p| p.into_inner());

        let (result, actor_seconds) = std::thread::scope(|scope| {
            let actor = scope.spawn(|| -> Result<f64, TrainError> {
                let finish = |r| {
                    done.store(true, Ordering::SeqCst);
                    limiter.close();
                    r
                };
                let mut acting = match crate::critic::cpu::CpuCritic::new(spec, 0) {
                    Ok(c) => c,
                    Err(e) => return finish(Err(e.into())),
                };
                let (mut seen, mut sim) = (u64::MAX, 0.0);
                let mut next = Vec::new();
                for _ in 0..cfg.rollout {
                    let v = version.load(Ordering::SeqCst);
                    if v != seen {
                        let p = snapshot.lock().unwrap_or_else(|p| p.into_inner()).clone();
                        if let Err(e) = acting.set_params(&p) {
                            return finish(Err(e.into()));
                        }
                        seen = v;
                    }
                    let obs = batch.buffers().obs.clone();
                    let q = match acting.forward(Input::U8(&obs), nets) {
                        Ok(q) => head.q_values(q.to_vec()),
                        Err(e) => return finish(Err(e.into())),
                    };
                    let chosen = batch.actions_mut();
                    act_epsilon_greedy(explore, &q, a, threshold, chosen);
                    let taken: Vec<u32> = chosen.iter().map(|&x| x as u32).collect();
                    let t0 = Instant::now();
                    if let Err(e) = batch.step() {
                        return finish(Err(e.into()));
                    }
                    sim += t0.elapsed().as_secs_f64();
                    // The rows go into the replay before the limiter counts them: counting
                    // first would let the learner sample rows not yet written.
                    let b = batch.buffers();
                    let o = batch.layout().obs_len;
                    successor_input(b, (n, o, o), &mut next);
                    let write =
                        || lock_replay().insert_step((&obs, &next), &taken, b, nets, n, false);
                    if let Err(e) = limiter.insert_with(taken.len() as u64, wait, write) {
                        return finish(Err(TrainError::Config(format!("actor: {e}"))));
                    }
                }
                finish(Ok(sim))
            });

            // The learner, on this thread.
            let (mut losses, mut steps) = (0.0f64, 0u64);
            let mut waited = Duration::ZERO;
            let mut learn = || -> Result<(), TrainError> {
                loop {
                    let start = Instant::now();
                    match limiter.sample(cfg.batch_size as u64, Duration::from_millis(20)) {
                        Ok(()) => {
                            waited = Duration::ZERO;
                            mb.fill(&lock_replay(), sampler, cfg);
                            losses += mb.train(critic, cfg, (a, &head), adam, update)? as f64;
                            steps += 1;
                            *learner_steps += 1;
                            if steps % 8 == 0 {
                                *snapshot.lock().unwrap_or_else(|p| p.into_inner()) =
                                    critic.params()?;
                                version.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        Err(e) => {
                            if done.load(Ordering::SeqCst)
                                && !limiter.can_sample(cfg.batch_size as u64)
                            {
                                return Ok(());
                            }
                            waited += start.elapsed();
                            if waited > wait {
                                return Err(TrainError::Config(format!("learner: {e}")));
                            }
                        }
                    }
                }
            };
            let learned = learn();
            if learned.is_err() {
                done.store(true, Ordering::SeqCst);
            }
            let acted = actor
                .join()
                .unwrap_or_else(|_| Err(TrainError::Config("the actor thread panicked".into())));
            let seconds = acted.as_ref().map_or(0.0, |s| *s);
            (
                learned.and(acted.map(|_| ())).map(|()| (losses, steps)),
                seconds,
            )
        });
        progress.sim_seconds += actor_seconds;
        self.core.limiter = limiter.snapshot();
        self.replay = replay.into_inner().unwrap_or_else(|p| p.into_inner());
        result
    }

    /// One update: `rollout` environment steps, each followed by the learner steps the rate
    /// limiter allows (or, `threaded`, an actor and a learner thread side by side).
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let epsilon = self.epsilon();
        let (lr, adam) = optimiser(&self.cfg, self.progress.update);
        let threshold = crate::rng::threshold(epsilon as f64);
        let (mut losses, mut steps) = (0.0f64, 0u64);
        let rollout = if self.cfg.threaded {
            let t0 = std::time::Instant::now();
            let sim_before = self.progress.sim_seconds;
            (losses, steps) = self.update_threaded(&adam, threshold)?;
            self.progress.learn_seconds +=
                t0.elapsed().as_secs_f64() - (self.progress.sim_seconds - sim_before);
            0
        } else {
            self.cfg.rollout
        };
        for _ in 0..rollout {
            let t_learn = std::time::Instant::now();
            let (obs, taken) = self.act(threshold)?;
            let acting = t_learn.elapsed().as_secs_f64();
            let t_sim = std::time::Instant::now();
            self.batch.step()?;
            self.progress.sim_seconds += t_sim.elapsed().as_secs_f64();
            let t_learn = std::time::Instant::now();
            let mut next = Vec::new();
            let dims = (self.learners, self.batch.layout().obs_len, self.spec.input);
            successor_input(self.batch.buffers(), dims, &mut next);
            let (b, opponents) = (self.batch.buffers(), self.models.is_some());
            let evicted = self.replay.insert_step(
                (&obs, &next),
                &taken,
                b,
                &self.nets,
                self.learners,
                opponents,
            );
            self.core.limiter.insert(taken.len() as u64);
            self.core.limiter.delete(evicted);
            for _ in 0..self
                .core
                .limiter
                .allowed_batches(self.cfg.batch_size as u64)
            {
                losses += self.learn(&adam)? as f64;
                steps += 1;
            }
            self.progress.learn_seconds += acting + t_learn.elapsed().as_secs_f64();
        }

        // --------------------------------------------------------------------------------------
        // Logging
        // --------------------------------------------------------------------------------------
        self.progress.env_steps += self.cfg.steps_per_update();
        self.progress.update += 1;
        let episodes = self.batch.take_episodes();
        let opponents = std::mem::take(&mut self.scores).mean();
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

impl Learner for Iql {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        Iql::update(self)
    }

    fn act_exploring(&mut self) -> Result<Vec<u8>, TrainError> {
        let threshold = crate::rng::threshold(self.epsilon() as f64);
        let (_, taken) = self.act(threshold)?;
        Ok(taken.into_iter().map(|a| a as u8).collect())
    }

    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        let o = self.batch.layout().obs_len;
        let shape = (self.learners, o, self.spec.input);
        q_rows(&mut self.critic, &self.head, obs, shape)
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
    super::replay::replay_learner_plumbing!();
}

// ------------------------------------------------------------------------------------------
// Memory plan
// ------------------------------------------------------------------------------------------

/// IQL's tensors for the memory preflight: the Q-network stack with a pass of a minibatch (or
/// of acting on every learner), the replay buffer, and the opponent models, which score one
/// minibatch per pass and store the others' actions with every replayed row.
pub(crate) fn plan(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
) -> Vec<PlanTensor> {
    let n = layout.learners as u64;
    let pass_rows = super::sizing::iql_pass_rows(cfg, layout);
    let pass = "batch_size, or arenas x learners when acting";
    let (mut tensors, spec) = qnet_tensors(cfg, loaded, layout, backend, pass_rows, pass);
    let d = spec.input as u64;
    tensors.push(PlanTensor {
        name: "replay buffer".into(),
        shape: format!(
            "{} rows x (2 x {d} B obs + 16 B)",
            fmt(cfg.replay_capacity as u64)
        ),
        bytes: cfg.replay_capacity as u64 * (2 * d + 16),
        knobs: "lower replay_capacity",
    });
    let mut replay = cfg.replay_capacity as u64 * (2 * d + 16);
    let mut models = 0;
    if cfg.opponent_models {
        let (rows, extra) = (cfg.batch_size as u64, cfg.replay_capacity as u64 * 4 * n);
        tensors.push(opponent_tensor(
            cfg, layout, spec.input, backend, rows, extra,
        ));
        replay += extra;
        models = opponent_spec(cfg, layout, spec.input).params() as u64;
    }
    let params = (spec.params() as u64, true);
    let arenas = (
        cfg.seeds.max(1) as u64 * cfg.arenas as u64,
        layout.bytes_per_arena() as u64,
    );
    tensors.push(checkpoint_tensor(cfg, params, models, replay, arenas));
    tensors
}
