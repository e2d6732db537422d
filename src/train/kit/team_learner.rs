//! The replay learners of a team's value (VDN, QMIX), around what each algorithm defines: IQL's
//! schedule over team transitions. Every learner acts epsilon-greedily on its own `Q_i` (the
//! greedy joint action of a sum or a monotonic mixer is each learner's greedy action); after
//! every environment step the arenas' team transitions go into a [`TeamReplay`] and exactly the
//! learner steps the rate limiter allows are run, each on `batch_size` teams, each one call of
//! the algorithm's [`TeamValue::learn`]. Checkpoints hold the replay, the limiter, the streams
//! and every target network, so a resume continues bit for bit.
//!
//! Configuration read here: `arenas`, `rollout`, the `iql` section (`replay_capacity` and
//! `min_replay` in team transitions, `batch_size` teams, `cer`, `samples_per_insert`,
//! `rate_error_buffer`, `target_tau`), `learn` (`gamma`, `lr`/`lr_decay`/`max_grad_norm`/
//! `radam`, `eps_*`; the loss is MSE) and `network` (`shared`, `hidden`, `layers`). Memoryless
//! networks only, without opponent models or `threaded`.

use std::time::Instant;

use crate::critic::{Chosen, Critic, Input};
use crate::dist::Job;
use crate::engine::EnvBatch;
use crate::scenario::LoadedScenario;
use crate::train::config::{NetworkKind, RunConfig, ValueLoss};
use crate::train::error::TrainError;
use crate::train::kit::explore::act_epsilon_greedy;
use crate::train::kit::opponent::OpponentModels;
use crate::train::kit::q_head::QHead;
use crate::train::kit::qnet::{q_rows, row_nets, stack_spec, write_input};
use crate::train::kit::replay::{ReplayCore, restore_target, successor_input, successor_mask};
use crate::train::kit::schedule::{StepValues, epsilon_by_steps, optimiser};
use crate::train::kit::stats::UpdateStats;
use crate::train::kit::team_replay::{TeamBatch, TeamReplay, TeamShape, successor_state};
use crate::train::learner::{Learner, Progress};
use crate::train::run::run_dir::Resume;
use crate::train::tensors::{NamedTensors, Tensor, f32s};

/// What a team-value algorithm defines: its targets and loss on a minibatch of teams.
pub(crate) trait TeamValue: Send {
    /// Whether the value reads the arenas' global state (a mixer's hypernetworks).
    fn reads_state(&self) -> bool;

    /// One learner step on `mb`: targets from the target networks, one optimiser step of the
    /// `agents`' networks (whose rows are `nets`) and the value's own, one Polyak update of
    /// every target. Returns the loss.
    fn learn(
        &mut self,
        agents: &mut Critic,
        batch: (&TeamBatch, &[u32]),
        shape: TeamShape,
        step: &StepValues,
    ) -> Result<f32, TrainError>;

    /// The value's own networks (QMIX's hypernetworks), none for a sum.
    fn critics(&mut self) -> Vec<&mut Critic>;
}

/// A replay learner of a team's value with its arenas.
pub struct TeamLearner<V> {
    cfg: RunConfig,
    batch: EnvBatch,
    core: ReplayCore,
    replay: TeamReplay,
    /// The learners' Q-networks (one per learner slot, or one shared), with their targets.
    agents: Critic,
    value: V,
    shape: TeamShape,
    progress: Progress,
    /// The networks of the acting rows (`[B x N]`) and of a minibatch's rows.
    nets: Vec<u32>,
    mb_nets: Vec<u32>,
    mb: TeamBatch,
}

impl<V: TeamValue> TeamLearner<V> {
    /// A fresh learner `name` (for messages) for one rank of `job`, with the algorithm's
    /// `value`; refuses what it does not train (recurrent networks, opponent models,
    /// `threaded`, a value loss other than MSE).
    pub(crate) fn new(
        name: &str,
        (cfg, loaded): (&RunConfig, &LoadedScenario),
        (device, job): (&Chosen, &Job),
        value: V,
    ) -> Result<TeamLearner<V>, TrainError> {
        let mse = matches!(cfg.learn.loss, ValueLoss::Default | ValueLoss::Mse);
        let plain = cfg.network.kind == NetworkKind::Mlp && !cfg.iql.threaded;
        if cfg.learn.opponent_models || !plain || !mse {
            return Err(TrainError::Config(format!(
                "algo {name} takes network.kind: mlp, learn.loss: mse, iql.threaded: false and \
                 learn.opponent_models: false"
            )));
        }
        let spec = stack_spec(cfg, loaded);
        let agents = Critic::new(spec, cfg.seed, device)?.data_parallel(job);
        let learners = loaded.scenario.learners_per_arena();
        let mut batch = cfg.training_batch(loaded, cfg.seed, job)?;
        batch.start_episode_log(1 << 16);
        let state = if value.reads_state() {
            batch.set_global_state(true);
            loaded.scenario.global_state_len()
        } else {
            0
        };
        let shape = TeamShape {
            learners,
            input: spec.input,
            state,
            actions: spec.head,
        };
        let items = (cfg.arenas as u64, cfg.iql.batch_size as u64);
        let mut replay = TeamReplay::new(cfg.iql.replay_capacity, shape);
        if batch.action_mask().is_some() {
            replay.keep_masks();
        }
        Ok(TeamLearner {
            core: ReplayCore::new_in(cfg, items, job)?,
            replay,
            nets: row_nets(cfg.arenas * learners, learners, cfg.network.shared),
            mb_nets: row_nets(cfg.iql.batch_size * learners, learners, cfg.network.shared),
            mb: TeamBatch::default(),
            progress: Progress::default(),
            cfg: cfg.clone(),
            batch,
            agents,
            value,
            shape,
        })
    }

    /// The arenas' observation rows as network input (`[B x N, D]`).
    fn input(&self) -> Vec<u8> {
        let (n, d) = (self.shape.learners, self.shape.input);
        let o = self.batch.layout().obs_len;
        let mut out = vec![0u8; self.cfg.arenas * n * d];
        write_input(&self.batch.buffers().obs, n, o, d, &mut out);
        out
    }

    /// One learner step: a minibatch of teams, the algorithm's step on it.
    fn learn(&mut self, step: &StepValues) -> Result<f32, TrainError> {
        let size = (self.cfg.iql.batch_size, self.cfg.iql.cer);
        self.mb.fill(&self.replay, &mut self.core.sampler, size);
        let batch = (&self.mb, &self.mb_nets[..]);
        let loss = self
            .value
            .learn(&mut self.agents, batch, self.shape, step)?;
        if !loss.is_finite() {
            return Err(TrainError::NonFinite {
                update: self.progress.update + 1,
                tensor: "loss".into(),
                value: loss,
            });
        }
        self.core.limiter.sample(self.cfg.iql.batch_size as u64);
        self.core.learner_steps += 1;
        Ok(loss)
    }

    /// One update: `rollout` environment steps, each followed by the learner steps the rate
    /// limiter allows.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let (update, env_steps) = (self.progress.update, self.progress.env_steps);
        self.batch
            .set_reward_shaping(self.cfg.reward_shaping_at(env_steps));
        let epsilon = epsilon_by_steps(&self.cfg, env_steps);
        let threshold = crate::rng::threshold(epsilon as f64);
        let (lr, adam) = optimiser(&self.cfg, update);
        let step = StepValues::of(&self.cfg, adam);
        let (n, d, a) = (self.shape.learners, self.shape.input, self.shape.actions);
        let (mut losses, mut steps) = (0.0f64, 0u64);
        let (mut next, mut state, mut next_state) = (Vec::new(), Vec::new(), Vec::new());
        let mut next_mask = Vec::new();
        let masked = self.batch.action_mask().is_some();
        for _ in 0..self.cfg.rollout {
            let t_act = Instant::now();
            let obs = self.input();
            let q = self.agents.forward(Input::U8(&obs), &self.nets)?;
            let (chosen, mask) = self.batch.actions_and_mask();
            act_epsilon_greedy(&mut self.core.explore, &q, a, threshold, (chosen, mask));
            let taken: Vec<u32> = chosen.iter().map(|&x| x as u32).collect();
            state.clear();
            state.extend_from_slice(self.batch.global_state().unwrap_or_default());
            let acting = t_act.elapsed().as_secs_f64();
            let t_sim = Instant::now();
            self.batch.step()?;
            self.progress.sim_seconds += t_sim.elapsed().as_secs_f64();
            let t_learn = Instant::now();
            let (b, o) = (self.batch.buffers(), self.batch.layout().obs_len);
            successor_input(b, (n, o, d), &mut next);
            if self.shape.state > 0 {
                successor_state(b, &mut next_state);
            }
            successor_mask(b, masked, &mut next_mask);
            let successors = (&obs[..], &next[..], &next_mask[..]);
            let evicted = (self.replay).insert_step(successors, &taken, b, (&state, &next_state));
            self.core.limiter.insert(self.cfg.arenas as u64);
            self.core.limiter.delete(evicted);
            let sampled = self.cfg.iql.batch_size as u64;
            for _ in 0..self.core.limiter.allowed_batches(sampled) {
                losses += self.learn(&step)? as f64;
                steps += 1;
            }
            self.progress.learn_seconds += acting + t_learn.elapsed().as_secs_f64();
        }
        self.progress.env_steps += self.cfg.steps_per_update();
        self.progress.update += 1;
        let episodes = self.batch.take_episodes();
        Ok(UpdateStats::replay(
            (losses, steps),
            (epsilon, lr),
            episodes,
            None,
        ))
    }
}

/// The name of the k-th value network's target tensor in a checkpoint.
fn value_target(k: usize) -> String {
    format!("value{k}.target")
}

impl<V: TeamValue> Learner for TeamLearner<V> {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        TeamLearner::update(self)
    }

    /// Each learner's own `Q_i`: the team's greedy joint action maximises them one by one.
    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        let shape = (
            self.shape.learners,
            self.batch.layout().obs_len,
            self.shape.input,
        );
        q_rows(&mut self.agents, &QHead::Mse, obs, shape, &mut [])
    }

    fn save_state(&mut self, extra: &mut NamedTensors) -> Result<String, TrainError> {
        let arenas = (&mut self.batch, &mut self.replay);
        let none = &mut None::<OpponentModels>;
        let json = (self.core).save_json(&self.progress, &mut self.agents, none, arenas, extra)?;
        for (k, c) in self.value.critics().into_iter().enumerate() {
            extra.push((value_target(k), Tensor::F32(c.target_params()?)));
        }
        Ok(json)
    }

    fn load_state(&mut self, json: &str, extra: &[(String, Tensor)]) -> Result<Resume, TrainError> {
        // Every value target is checked before anything changes.
        let mut targets = Vec::new();
        for (k, c) in self.value.critics().into_iter().enumerate() {
            let n = c.spec().params();
            targets.push(f32s(extra, &value_target(k), n)?.to_vec());
        }
        let arenas = (&mut self.batch, &mut self.replay);
        let none = &mut None::<OpponentModels>;
        let progress = &mut self.progress;
        let resume =
            (self.core).load_json(json, progress, &mut self.agents, none, arenas, extra)?;
        for (c, t) in self.value.critics().into_iter().zip(&targets) {
            restore_target(c, t)?;
        }
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
        let mut all = vec![&mut self.agents];
        all.extend(self.value.critics());
        all
    }
}
