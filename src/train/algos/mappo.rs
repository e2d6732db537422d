//! MAPPO: multi-agent PPO with a centralised value function (Yu et al., 2022; JaxMARL's
//! `mappo`). The policy is IPPO's, a categorical policy network per learner slot (or one
//! shared) over the learner's own observation; the value network reads the arena's global
//! state (`Scenario::global_state_layout`, the same for every learner of an arena), followed by
//! the learner's one-hot index when the network is shared, so each learner still gets its own
//! value.
//!
//! Each update: act in B arenas for T steps, sampling each action from the policy within the
//! action mask, keeping its log-probability and the value of the arena's state; GAE(lambda)
//! with time limits bootstrapping from the value of the episode's final state; then E epochs of
//! shuffled minibatches, each one Adam step of the policy on the clipped surrogate with an
//! entropy bonus and one of the value network on the (optionally clipped) value loss
//! ([`crate::train::kit::ppo`]).
//!
//! Configuration read here (see [`RunConfig`]): as IPPO's, `arenas`, `rollout`, the `ppo`
//! section, `learn` (`gamma`, `lr`/`lr_decay`/`max_grad_norm`/`radam`) and `network` (`shared`,
//! `hidden`, `layers`, `kind`, `gru_hidden`), without opponent models. With `network.kind: gru`
//! the policy is recurrent, as IPPO's; the value network over the global state stays an MLP.

use rand_chacha::ChaCha8Rng;

use crate::critic::ppo_loss::PpoLosses;
use crate::critic::{Chosen, Critic, Input, Network, StackSpec};
use crate::dist::Job;
use crate::engine::EnvBatch;
use crate::rng::{Purpose, stream};
use crate::scenario::LoadedScenario;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::kit::ppo_rollout::{PpoRollout, check_config, scale_head};
use crate::train::kit::q_head::QHead;
use crate::train::kit::qnet::{q_rows, row_nets, stack_spec, write_input};
use crate::train::kit::recurrent::{load_hidden, save_hidden};
use crate::train::kit::run_state::StreamsState;
use crate::train::kit::schedule::optimiser;
use crate::train::kit::stats::UpdateStats;
use crate::train::learner::{Learner, Progress};
use crate::train::run::run_dir::Resume;
use crate::train::tensors::{NamedTensors, Tensor};

/// The policy head's initial weights are scaled by this (CleanRL's `std=0.01`): a nearly
/// uniform first policy.
const POLICY_HEAD_SCALE: f32 = 0.01;

/// A MAPPO learner with its arenas.
pub struct Mappo {
    cfg: RunConfig,
    batch: EnvBatch,
    /// The policy networks (one output per action).
    actor: Critic,
    /// The centralised value networks (one output, over the global state).
    value: Critic,
    /// Bytes per value input row: the global state, and the one-hot index when shared.
    value_input: usize,
    value_row: Vec<u8>,
    learners: usize,
    actions: usize,
    /// Bytes per network input row.
    input: usize,
    /// Action sampling streams, one per arena.
    sampler: Vec<ChaCha8Rng>,
    /// Minibatch shuffling.
    shuffle: ChaCha8Rng,
    progress: Progress,
    /// The rollout with the policy's log-probabilities, masks and the values.
    ro: PpoRollout,
    /// PPO's losses, on the device the networks are on.
    losses: PpoLosses,
    input_row: Vec<u8>,
    /// Each row's network.
    nets: Vec<u32>,
    /// The rollout's rows in the order minibatches are cut from.
    index: Vec<u32>,
}

impl Mappo {
    /// A fresh learner for one rank of `job` (one process: `Job::single()`): arenas and
    /// networks seeded with `cfg.seed`.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<Mappo, TrainError> {
        let learners = loaded.scenario.learners_per_arena();
        check_config("mappo", cfg, learners)?;
        let actions = loaded.scenario.action_set().len();
        let policy_spec = StackSpec {
            head: actions,
            ..stack_spec(cfg, loaded)
        };
        let value_input =
            loaded.scenario.global_state_len() + if cfg.network.shared { learners } else { 0 };
        let value_spec = StackSpec {
            head: 1,
            network: Network::Mlp,
            input: value_input,
            ..policy_spec
        };
        let mut actor = Critic::new(policy_spec, cfg.seed, device)?.data_parallel(job);
        scale_head(&mut actor, POLICY_HEAD_SCALE)?;
        let value_seed = cfg.seed ^ 0x7661_6c75_6500_0000;
        let value = Critic::new(value_spec, value_seed, device)?.data_parallel(job);
        let mut batch = cfg.training_batch(loaded, cfg.seed, job)?;
        batch.start_episode_log(1 << 16);
        batch.set_hidden_width(policy_spec.state_width());
        batch.set_global_state(true);
        let rows = cfg.arenas * learners;
        let first = job.first_arena(cfg.arenas);
        let masked = batch.action_mask().is_some();
        let ro = PpoRollout::new(
            (cfg.rollout, rows, policy_spec.input),
            actions,
            masked,
            value_input,
        )
        .recurrent(policy_spec.state_width());
        Ok(Mappo {
            sampler: (0..cfg.arenas)
                .map(|a| stream(cfg.seed, first + a as u64, Purpose::Policy))
                .collect(),
            shuffle: stream(cfg.seed, job.rank_key(u64::MAX >> 8), Purpose::Policy),
            input: policy_spec.input,
            losses: PpoLosses::new(device)?,
            index: (0..ro.entries() as u32).collect(),
            ro,
            value_input,
            value_row: vec![0; rows * value_input],
            input_row: vec![0; rows * policy_spec.input],
            nets: row_nets(rows, learners, cfg.network.shared),
            progress: Progress::default(),
            cfg: cfg.clone(),
            batch,
            actor,
            value,
            learners,
            actions,
        })
    }

    /// The current observations as network input rows (`[B * N, input]`).
    fn current_input(&mut self) -> Vec<u8> {
        let (n, d, o) = (self.learners, self.input, self.batch.layout().obs_len);
        write_input(&self.batch.buffers().obs, n, o, d, &mut self.input_row);
        self.input_row.clone()
    }

    /// The value network's input rows (`[B * N, value_input]`) for states `[B, S]`.
    fn value_rows(&mut self, state: &[u8]) -> Vec<u8> {
        write_state_rows(state, self.learners, self.value_input, &mut self.value_row);
        self.value_row.clone()
    }

    /// Acts for T steps, storing each step, its log-probabilities and values.
    fn rollout(&mut self) -> Result<(), TrainError> {
        let (n, a, d, rows) = (self.learners, self.actions, self.input, self.ro.buf.rows);
        let nets = std::mem::take(&mut self.nets);
        let shaping = self.cfg.reward_shaping_at(self.progress.env_steps);
        self.batch.set_reward_shaping(shaping);
        let dv = self.value_input;
        let mut input = self.current_input();
        let mut state = self.value_rows(&self.batch.buffers().state.clone());
        let mut lp = vec![0.0f32; rows * a];
        for t in 0..self.cfg.rollout {
            let logits =
                (self.ro).policy_logits(t, &mut self.actor, (&input, &nets), &mut self.batch)?;
            let values = self.value.forward(Input::U8(&state), &nets)?;
            self.ro.value_obs[t * rows * dv..(t + 1) * rows * dv].copy_from_slice(&state);
            let buf = &mut self.ro.buf;
            buf.q_max[t * rows..(t + 1) * rows].copy_from_slice(&values);
            buf.obs[t * rows * d..(t + 1) * rows * d].copy_from_slice(&input);
            let acting = self.batch.actions_and_mask();
            self.ro
                .act(t, &logits, acting, (&mut self.sampler, n), &mut lp);
            let t0 = std::time::Instant::now();
            self.batch.step()?;
            self.progress.sim_seconds += t0.elapsed().as_secs_f64();
            self.ro.buf.record(t, self.batch.buffers(), n);
            self.ro.keep_logp(t, &lp);
            self.ro.episode_starts(t, &self.batch, n);
            input = self.current_input();
            state = self.value_rows(&self.batch.buffers().state.clone());
            // A time limit bootstraps from the value of the episode's final state.
            if let Some(f) = self.final_state_rows(&nets) {
                let values = self.value.forward(Input::U8(&f.0), &f.1)?;
                for (&arena, v) in f.2.iter().zip(values.chunks_exact(n)) {
                    let first = t * rows + arena * n;
                    self.ro.buf.final_q[first..first + n].copy_from_slice(v);
                }
            }
        }
        let t_len = self.cfg.rollout;
        let last = self.value.forward(Input::U8(&state), &nets)?;
        self.ro.buf.q_max[t_len * rows..].copy_from_slice(&last);
        self.nets = nets;
        self.progress.env_steps += self.cfg.steps_per_update();
        Ok(())
    }

    /// The value input rows, networks and arenas of the arenas whose episode the last step
    /// truncated, from their final states; `None` when none did.
    fn final_state_rows(&self, nets: &[u32]) -> Option<(Vec<u8>, Vec<u32>, Vec<usize>)> {
        let (n, s) = (self.learners, self.batch.layout().state_len);
        let b = self.batch.buffers();
        let arenas: Vec<usize> = (0..self.batch.arenas())
            .filter(|&k| b.truncated[k] != 0)
            .collect();
        if arenas.is_empty() {
            return None;
        }
        let mut states = Vec::with_capacity(arenas.len() * s);
        let mut row_nets = Vec::with_capacity(arenas.len() * n);
        for &k in &arenas {
            states.extend_from_slice(&b.final_state[k * s..(k + 1) * s]);
            row_nets.extend_from_slice(&nets[k * n..(k + 1) * n]);
        }
        let mut rows = vec![0; arenas.len() * n * self.value_input];
        write_state_rows(&states, n, self.value_input, &mut rows);
        Some((rows, row_nets, arenas))
    }

    /// One update: rollout, GAE, epochs of shuffled minibatches of both losses.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let (lr, adam) = optimiser(&self.cfg, self.progress.update);
        let t0 = std::time::Instant::now();
        let sim_before = self.progress.sim_seconds;
        self.rollout()?;
        (self.ro).advantages(self.cfg.learn.gamma, self.cfg.ppo.gae_lambda);
        // The slots a population played are left out: their actions were not the policy's.
        self.ro.skip_slots(self.batch.fixed_slot_mask());
        let loss = self.ro.train_epochs(
            (&self.nets, &mut self.index, &mut self.shuffle),
            (&mut self.actor, &mut self.value, &mut self.losses),
            (&self.cfg.ppo, &adam),
            self.progress.update,
        )?;
        self.progress.update += 1;
        self.progress.learn_seconds +=
            t0.elapsed().as_secs_f64() - (self.progress.sim_seconds - sim_before);
        let episodes = self.batch.take_episodes();
        // No exploration rate: the policy explores by sampling.
        Ok(UpdateStats::of_run(loss, (0.0, lr), episodes, None))
    }
}

/// Writes each learner's value input row from its arena's state (`states` `[K, S]`, `learners`
/// rows per arena): the state, followed by the learner's one-hot index when `width > S`.
fn write_state_rows(states: &[u8], learners: usize, width: usize, out: &mut [u8]) {
    let arenas = out.len() / (learners * width).max(1);
    let s = states.len() / arenas.max(1);
    for (row, chunk) in out.chunks_exact_mut(width).enumerate() {
        let arena = row / learners;
        chunk[..s].copy_from_slice(&states[arena * s..(arena + 1) * s]);
        if width > s {
            chunk[s..].fill(0);
            chunk[s + row % learners] = 1;
        }
    }
}

impl Learner for Mappo {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        Mappo::update(self)
    }

    /// The policy's logits: the greedy action is the policy's mode.
    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        let shape = (self.learners, self.batch.layout().obs_len, self.input);
        q_rows(&mut self.actor, &QHead::Mse, obs, shape, &mut [])
    }

    fn q_label(&self) -> &'static str {
        "policy logits"
    }

    fn q_values_recurrent(
        &mut self,
        obs: &[u8],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, TrainError> {
        let shape = (self.learners, self.batch.layout().obs_len, self.input);
        q_rows(&mut self.actor, &QHead::Mse, obs, shape, hidden)
    }

    fn save_state(&mut self, extra: &mut NamedTensors) -> Result<String, TrainError> {
        save_hidden(&self.batch, extra);
        let streams = (&self.sampler[..], &self.shuffle);
        StreamsState::save(&self.progress, streams, &mut self.batch)
    }

    fn load_state(&mut self, json: &str, extra: &[(String, Tensor)]) -> Result<Resume, TrainError> {
        load_hidden(&mut self.batch, extra)?;
        let streams = (&mut self.sampler, &mut self.shuffle);
        StreamsState::load(json, &mut self.progress, streams, &mut self.batch)
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
        vec![&mut self.actor, &mut self.value]
    }
}
