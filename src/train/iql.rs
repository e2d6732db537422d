//! IQL: an independent DQN per learner (networks stacked, one dispatch for all) with a
//! struct-of-arrays replay ring buffer, combined experience replay (the newest rows are in every
//! minibatch), Polyak-averaged target networks, Huber loss on
//! `r + gamma (1 - d) max_a Q_target(s', a)`, and the rate limiter driving the schedule: after
//! every environment step the rows are inserted (never blocking) and exactly the learner steps
//! the limiter allows are run, each consuming one batch.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use super::config::RunConfig;
use super::pqn::{TrainError, UpdateStats, argmax, epsilon_greedy, optimiser, stack_spec};
use super::rate_limiter::{RateLimiter, RateLimiterConfig};
use crate::critic::loss::Loss;
use crate::critic::{AdamConfig, Chosen, Critic, Input, StackSpec};
use crate::engine::{BatchState, EnvBatch};
use crate::rng::{Purpose, below, stream};
use crate::scenario::LoadedScenario;

// ------------------------------------------------------------------------------------------
// Replay
// ------------------------------------------------------------------------------------------

/// A ring buffer of transitions, one column per field.
struct Replay {
    capacity: usize,
    width: usize,
    len: usize,
    head: usize,
    obs: Vec<u8>,
    next: Vec<u8>,
    action: Vec<u32>,
    reward: Vec<f32>,
    done: Vec<f32>,
    net: Vec<u32>,
    /// With opponent models: the learner's slot and the others' actions `[C, N-1]`.
    slot: Vec<u32>,
    others: Vec<u32>,
    groups: usize,
}

impl Replay {
    fn new(capacity: usize, width: usize, groups: usize) -> Replay {
        Replay {
            capacity,
            width,
            len: 0,
            head: 0,
            obs: vec![0; capacity * width],
            next: vec![0; capacity * width],
            action: vec![0; capacity],
            reward: vec![0.0; capacity],
            done: vec![0.0; capacity],
            net: vec![0; capacity],
            slot: vec![0; if groups > 0 { capacity } else { 0 }],
            others: vec![0; capacity * groups],
            groups,
        }
    }

    /// Adds one row, overwriting the oldest when full; returns whether one was evicted.
    fn push(
        &mut self,
        obs: &[u8],
        next: &[u8],
        (action, reward, done, net): (u32, f32, f32, u32),
        opponents: Option<(u32, &[u32])>,
    ) -> bool {
        let (i, w) = (self.head, self.width);
        if let Some((slot, others)) = opponents {
            self.slot[i] = slot;
            self.others[i * self.groups..(i + 1) * self.groups].copy_from_slice(others);
        }
        self.obs[i * w..(i + 1) * w].copy_from_slice(obs);
        self.next[i * w..(i + 1) * w].copy_from_slice(next);
        self.action[i] = action;
        self.reward[i] = reward;
        self.done[i] = done;
        self.net[i] = net;
        self.head = (self.head + 1) % self.capacity;
        let evicted = self.len == self.capacity;
        self.len = (self.len + 1).min(self.capacity);
        evicted
    }

    /// The k-th newest row (0 is the newest).
    fn newest(&self, k: usize) -> usize {
        (self.head + self.capacity - 1 - k % self.len.max(1)) % self.capacity
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
    dones: Vec<f32>,
    targets: Vec<f32>,
    slots: Vec<u32>,
    others: Vec<u32>,
}

impl Minibatch {
    /// The newest `cer` rows plus uniform samples, `batch_size` in all.
    fn fill(&mut self, replay: &Replay, sampler: &mut ChaCha8Rng, cfg: &RunConfig) {
        let d = replay.width;
        self.obs.clear();
        self.next.clear();
        self.nets.clear();
        self.actions.clear();
        self.rewards.clear();
        self.dones.clear();
        self.slots.clear();
        self.others.clear();
        let g = replay.groups;
        for k in 0..cfg.batch_size {
            let i = if k < cfg.cer.min(replay.len) {
                replay.newest(k)
            } else {
                below(sampler.next_u32(), replay.len as u32) as usize
            };
            self.obs.extend_from_slice(&replay.obs[i * d..(i + 1) * d]);
            self.next
                .extend_from_slice(&replay.next[i * d..(i + 1) * d]);
            self.nets.push(replay.net[i]);
            self.actions.push(replay.action[i]);
            self.rewards.push(replay.reward[i]);
            self.dones.push(replay.done[i]);
            if g > 0 {
                self.slots.push(replay.slot[i]);
                self.others
                    .extend_from_slice(&replay.others[i * g..(i + 1) * g]);
            }
        }
    }

    /// Targets from the target networks, a Huber step on the online networks, a Polyak update.
    fn train(
        &mut self,
        critic: &mut Critic,
        cfg: &RunConfig,
        actions: usize,
        adam: &AdamConfig,
        update: u64,
    ) -> Result<f32, TrainError> {
        let q_next = critic.forward_target(Input::U8(&self.next), &self.nets)?;
        self.targets.clear();
        for k in 0..self.nets.len() {
            let best = q_next[k * actions..(k + 1) * actions]
                .iter()
                .copied()
                .fold(f32::NEG_INFINITY, f32::max);
            self.targets
                .push(self.rewards[k] + cfg.gamma * (1.0 - self.dones[k]) * best);
        }
        critic.forward(Input::U8(&self.obs), &self.nets)?;
        let loss = Loss::Huber {
            delta: 1.0,
            actions: &self.actions,
            targets: &self.targets,
            mask: None,
        };
        critic.loss_backward(&loss)?;
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
    learners: usize,
    actions: usize,
    explore: Vec<ChaCha8Rng>,
    sampler: ChaCha8Rng,
    limiter: RateLimiter,
    replay: Replay,
    /// Updates (rollouts of `rollout` steps) done.
    pub update: u64,
    /// Environment steps done.
    pub env_steps: u64,
    /// Learner steps done.
    pub learner_steps: u64,
    nets: Vec<u32>,
    mb: Minibatch,
    /// Opponent models (`opponent_models: true`), trained on every sampled minibatch.
    pub models: Option<super::opponent::OpponentModels>,
    scores: super::opponent::ScoreMean,
    sim_seconds: f64,
    learn_seconds: f64,
}

/// IQL's evolving state beyond the online parameters and Adam (checkpoints). The replay
/// buffer is not saved: a resumed run refills it, so IQL resumes are not bit-identical.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IqlState {
    /// Updates done.
    pub update: u64,
    /// Environment steps done.
    pub env_steps: u64,
    /// Learner steps done.
    pub learner_steps: u64,
    /// Exploration streams.
    pub explore: Vec<ChaCha8Rng>,
    /// Minibatch sampling stream.
    pub sampler: ChaCha8Rng,
    /// Target parameters.
    pub target: Vec<f32>,
    /// The opponent models' parameters, when trained.
    #[serde(default)]
    pub models: Option<Vec<f32>>,
    /// The arenas.
    pub batch: BatchState,
}

/// The limiter configuration the run uses (the smallest error buffer the loop accepts when the
/// config says 0).
pub fn limiter_config(cfg: &RunConfig, rows_per_step: u64) -> RateLimiterConfig {
    let spi = cfg.samples_per_insert;
    let step = rows_per_step as f64 * spi;
    let smallest = ((step + cfg.batch_size as f64) / 2.0)
        .max(step)
        .max(spi.max(1.0));
    RateLimiterConfig {
        samples_per_insert: spi,
        min_size_to_sample: cfg.min_replay.max(cfg.batch_size as u64),
        error_buffer: if cfg.rate_error_buffer > 0.0 {
            cfg.rate_error_buffer
        } else {
            smallest
        },
    }
}

impl Iql {
    /// A fresh learner.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<Iql, TrainError> {
        let batch = EnvBatch::new(loaded, cfg.arenas, cfg.seed)?;
        let spec = stack_spec(cfg, loaded);
        let critic = Critic::new(spec, cfg.seed, device)?;
        let learners = loaded.scenario.learners_per_arena();
        let rows_per_step = (cfg.arenas * learners) as u64;
        let limits = limiter_config(cfg, rows_per_step);
        limits
            .validate_for_loop(rows_per_step, cfg.batch_size as u64)
            .map_err(|e| TrainError::Config(format!("rate limiter: {e}")))?;
        let mut iql = Iql {
            batch,
            critic,
            spec,
            learners,
            actions: spec.head,
            explore: (0..cfg.arenas)
                .map(|a| stream(cfg.seed, a as u64, Purpose::Policy))
                .collect(),
            sampler: stream(cfg.seed, u64::MAX >> 8, Purpose::Policy),
            limiter: RateLimiter::new(limits)
                .map_err(|e| TrainError::Config(format!("rate limiter: {e}")))?,
            replay: Replay::new(
                cfg.replay_capacity,
                spec.input,
                if cfg.opponent_models { learners - 1 } else { 0 },
            ),
            update: 0,
            env_steps: 0,
            learner_steps: 0,
            nets: (0..rows_per_step as usize)
                .map(|r| if cfg.shared { 0 } else { (r % learners) as u32 })
                .collect(),
            mb: Minibatch::default(),
            models: if cfg.opponent_models {
                Some(super::opponent::OpponentModels::new(
                    cfg,
                    learners,
                    spec.head,
                    spec.input,
                    cfg.batch_size,
                    device,
                )?)
            } else {
                None
            },
            scores: Default::default(),
            sim_seconds: 0.0,
            learn_seconds: 0.0,
            cfg: cfg.clone(),
        };
        iql.batch.start_episode_log(1 << 16);
        Ok(iql)
    }

    /// The network stack's shape.
    pub fn spec(&self) -> StackSpec {
        self.spec
    }

    /// Observation rows as network input (with the learner's one-hot index when shared).
    fn input(&self) -> Vec<u8> {
        let (n, o, d) = (self.learners, self.batch.layout().obs_len, self.spec.input);
        let obs = &self.batch.buffers().obs;
        if !self.cfg.shared {
            return obs.clone();
        }
        let mut out = vec![0u8; obs.len() / o * d];
        for (r, row) in out.chunks_exact_mut(d).enumerate() {
            row[..o].copy_from_slice(&obs[r * o..(r + 1) * o]);
            row[o + r % n] = 1;
        }
        out
    }

    /// Greedy actions for the current observations.
    pub fn greedy(&mut self) -> Result<Vec<u8>, TrainError> {
        let input = self.input();
        let q = self.critic.forward(Input::U8(&input), &self.nets.clone())?;
        Ok(q.chunks_exact(self.actions).map(argmax).collect())
    }

    /// The opponent models' predicted distributions `[B x N, N-1, A]` for the current
    /// observations, or `None` without models.
    pub fn opponent_predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        let input = self.input();
        let n = self.learners as u32;
        let nets: Vec<u32> = (0..self.nets.len() as u32).map(|r| r % n).collect();
        match &mut self.models {
            Some(m) => Ok(Some(m.probs(&input, &nets)?)),
            None => Ok(None),
        }
    }

    /// The exploration rate now (linear over `eps_fraction` of the run's steps).
    pub fn epsilon(&self) -> f32 {
        super::pqn::epsilon_by_steps(&self.cfg, self.env_steps)
    }

    /// One learner step on a minibatch with the newest rows and uniform samples.
    fn learn(&mut self, adam: &AdamConfig) -> Result<f32, TrainError> {
        self.mb.fill(&self.replay, &mut self.sampler, &self.cfg);
        let value = self
            .mb
            .train(&mut self.critic, &self.cfg, self.actions, adam, self.update)?;
        if let Some(m) = &mut self.models {
            let scores =
                m.score_and_train_rows(&self.mb.obs, &self.mb.slots, &self.mb.others, adam.lr)?;
            self.scores.add(scores, self.mb.slots.len() as f64);
        }
        self.limiter.sample(self.cfg.batch_size as u64);
        self.learner_steps += 1;
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
        let limiter = SharedLimiter::new(self.limiter.clone());
        let replay = Mutex::new(std::mem::replace(&mut self.replay, Replay::new(0, 0, 0)));
        let snapshot = Mutex::new(self.critic.params()?);
        let version = AtomicU64::new(0);
        let done = AtomicBool::new(false);
        let Iql {
            cfg,
            batch,
            critic,
            spec,
            learners,
            actions,
            explore,
            sampler,
            nets,
            mb,
            update,
            learner_steps,
            sim_seconds,
            ..
        } = self;
        let (cfg, spec, n, a) = (&*cfg, *spec, *learners, *actions);
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
                        Ok(q) => q.to_vec(),
                        Err(e) => return finish(Err(e.into())),
                    };
                    let chosen = batch.actions_mut();
                    let mut taken = vec![0u32; chosen.len()];
                    for (arena, rng) in explore.iter_mut().enumerate() {
                        for l in 0..n {
                            let r = arena * n + l;
                            let action = epsilon_greedy(rng, &q[r * a..(r + 1) * a], threshold);
                            chosen[r] = action;
                            taken[r] = action as u32;
                        }
                    }
                    let t0 = Instant::now();
                    if let Err(e) = batch.step() {
                        return finish(Err(e.into()));
                    }
                    sim += t0.elapsed().as_secs_f64();
                    if let Err(e) = limiter.insert(taken.len() as u64, wait) {
                        return finish(Err(TrainError::Config(format!("actor: {e}"))));
                    }
                    let b = batch.buffers();
                    let d = spec.input;
                    let mut evicted = 0;
                    let mut rp = lock_replay();
                    for r in 0..taken.len() {
                        let done_r = f32::from(b.terminated[r / n] != 0 || b.truncated[r / n] != 0);
                        let row = r * d..(r + 1) * d;
                        evicted += u64::from(rp.push(
                            &obs[row.clone()],
                            &b.obs[row],
                            (taken[r], b.rewards[r], done_r, nets[r]),
                            None,
                        ));
                    }
                    drop(rp);
                    limiter.delete(evicted);
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
                            losses += mb.train(critic, cfg, a, adam, *update)? as f64;
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
            let seconds = acted_seconds(&acted);
            (
                learned.and(acted.map(|_| ())).map(|()| (losses, steps)),
                seconds,
            )
        });
        *sim_seconds += actor_seconds;
        self.limiter = limiter.snapshot();
        self.replay = replay.into_inner().unwrap_or_else(|p| p.into_inner());
        result
    }

    /// One update: `rollout` environment steps, each followed by the learner steps the rate
    /// limiter allows (or, `threaded`, an actor and a learner thread side by side).
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let epsilon = self.epsilon();
        let (lr, adam) = optimiser(&self.cfg, self.update);
        let threshold = crate::rng::threshold(epsilon as f64);
        let (n, a, d) = (self.learners, self.actions, self.spec.input);
        let nets = self.nets.clone();
        let (mut losses, mut steps) = (0.0f64, 0u64);
        let rollout = if self.cfg.threaded {
            let t0 = std::time::Instant::now();
            let sim_before = self.sim_seconds;
            (losses, steps) = self.update_threaded(&adam, threshold)?;
            self.learn_seconds += t0.elapsed().as_secs_f64() - (self.sim_seconds - sim_before);
            0
        } else {
            self.cfg.rollout
        };
        for _ in 0..rollout {
            let t_learn = std::time::Instant::now();
            let obs = self.input();
            let q = self.critic.forward(Input::U8(&obs), &nets)?;
            let chosen = self.batch.actions_mut();
            let mut taken = vec![0u32; chosen.len()];
            for (arena, rng) in self.explore.iter_mut().enumerate() {
                for l in 0..n {
                    let r = arena * n + l;
                    let action = epsilon_greedy(rng, &q[r * a..(r + 1) * a], threshold);
                    chosen[r] = action;
                    taken[r] = action as u32;
                }
            }
            let acting = t_learn.elapsed().as_secs_f64();
            let t_sim = std::time::Instant::now();
            self.batch.step()?;
            self.sim_seconds += t_sim.elapsed().as_secs_f64();
            let t_learn = std::time::Instant::now();
            let next = self.input();
            let b = self.batch.buffers();
            let (rewards, dones): (Vec<f32>, Vec<f32>) = (0..taken.len())
                .map(|r| {
                    (
                        b.rewards[r],
                        f32::from(b.terminated[r / n] != 0 || b.truncated[r / n] != 0),
                    )
                })
                .unzip();
            let mut evicted = 0;
            let mut others = Vec::with_capacity(n);
            for r in 0..taken.len() {
                let row = r * d..(r + 1) * d;
                let opponents = if self.models.is_some() {
                    let (base, i) = (r - r % n, r % n);
                    others.clear();
                    others.extend((0..n).filter(|&j| j != i).map(|j| taken[base + j]));
                    Some((i as u32, &others[..]))
                } else {
                    None
                };
                evicted += u64::from(self.replay.push(
                    &obs[row.clone()],
                    &next[row],
                    (taken[r], rewards[r], dones[r], nets[r]),
                    opponents,
                ));
            }
            self.limiter.insert(taken.len() as u64);
            self.limiter.delete(evicted);
            for _ in 0..self.limiter.allowed_batches(self.cfg.batch_size as u64) {
                losses += self.learn(&adam)? as f64;
                steps += 1;
            }
            self.learn_seconds += acting + t_learn.elapsed().as_secs_f64();
        }
        self.env_steps += self.cfg.steps_per_update();
        self.update += 1;
        Ok(UpdateStats {
            loss: if steps == 0 {
                0.0
            } else {
                (losses / steps as f64) as f32
            },
            epsilon,
            lr,
            episodes: self.batch.take_episodes(),
            per_replica: Vec::new(),
            opponents: std::mem::take(&mut self.scores).mean(),
        })
    }

    /// Seconds spent stepping arenas and learning since the last call.
    pub fn take_timing(&mut self) -> (f64, f64) {
        let t = (self.sim_seconds, self.learn_seconds);
        self.sim_seconds = 0.0;
        self.learn_seconds = 0.0;
        t
    }

    /// The evolving state beyond parameters and Adam.
    pub fn save_state(&mut self) -> Result<IqlState, TrainError> {
        Ok(IqlState {
            update: self.update,
            env_steps: self.env_steps,
            learner_steps: self.learner_steps,
            explore: self.explore.clone(),
            sampler: self.sampler.clone(),
            target: self.critic.target_params()?,
            models: match &mut self.models {
                Some(m) => Some(m.params()?),
                None => None,
            },
            batch: self.batch.save_state(),
        })
    }

    /// Restores what [`Iql::save_state`] saved (the replay starts empty again).
    pub fn load_state(&mut self, s: &IqlState) -> Result<(), TrainError> {
        self.update = s.update;
        self.env_steps = s.env_steps;
        self.learner_steps = s.learner_steps;
        self.explore = s.explore.clone();
        self.sampler = s.sampler.clone();
        restore_target(&mut self.critic, &s.target)?;
        if let (Some(m), Some(p)) = (&mut self.models, &s.models) {
            m.set_params(p)?;
        }
        self.batch.load_state(&s.batch)?;
        Ok(())
    }
}

/// Sets the target parameters: copies them into the online slot, averages them fully into
/// the target, then puts the online parameters back.
pub(super) fn restore_target(critic: &mut Critic, target: &[f32]) -> Result<(), TrainError> {
    let online = critic.params()?;
    critic.set_params(target)?;
    critic.polyak(1.0);
    critic.set_params(&online)?;
    Ok(())
}

fn acted_seconds(r: &Result<f64, TrainError>) -> f64 {
    r.as_ref().map_or(0.0, |s| *s)
}
