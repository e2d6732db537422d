//! IPPO: independent PPO learners (de Witt et al., 2020; JaxMARL's `ippo_ff`, CleanRL's
//! `ppo.py`). Every learner slot has a categorical policy network and a value network of its
//! own (or one of each shared, with the learner's one-hot index appended to its observation).
//!
//! Each update: act in B arenas for T steps, sampling each action from the policy (within the
//! action mask) and keeping its log-probability and the value of the observation; GAE(lambda)
//! over the rollout, a time limit bootstrapping from the value of the episode's final
//! observation; then E epochs of shuffled minibatches, each one Adam step of the policy on the
//! clipped surrogate with an entropy bonus (advantages normalised per minibatch) and one of the
//! value network on the (optionally clipped) value loss. The losses are in
//! [`crate::train::kit::ppo`], tested against finite differences.
//!
//! Configuration read here (see [`RunConfig`]): `arenas`, `rollout` (T), its own section `ppo`
//! (`epochs`, `minibatches`, `clip`, `clip_value`, `ent_coef`, `vf_coef`, `gae_lambda`,
//! `normalize_advantages`), `learn` (`gamma`, `lr`/`lr_decay`/`max_grad_norm`/`radam`) and
//! `network` (`kind`, `shared`, `hidden`, `layers`, `gru_hidden`), without opponent models.
//! With `network.kind: gru` the policy is recurrent and trains over whole sequences
//! ([`crate::train::kit::ppo_rollout`]); the value network stays an MLP. Evaluation and
//! `load_policy` act on the policy's mode (the largest logit).

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
use crate::train::kit::qnet::{q_rows, row_nets, stack_spec, truncated_rows, write_input};
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

/// A rewrite of the rollout's advantages between GAE and the minibatch epochs: how an
/// opponent-shaping method built on IPPO ([`super::advantage_alignment`]) changes what each
/// learner's policy climbs.
pub(crate) trait AdvantageShaping: Send {
    /// Rewrites `ro.adv` (`[T, rows]`, row `arena * learners + slot`) in place.
    fn shape(&mut self, ro: &mut PpoRollout, learners: usize);
}

/// An IPPO learner with its arenas.
pub struct Ippo {
    cfg: RunConfig,
    batch: EnvBatch,
    /// The policy networks (one output per action).
    actor: Critic,
    /// The value networks (one output).
    value: Critic,
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
    /// The advantages' rewrite, for a method built on IPPO (none: IPPO itself).
    shaping: Option<Box<dyn AdvantageShaping>>,
}

impl Ippo {
    /// A fresh learner for one rank of `job` (one process: `Job::single()`): arenas and
    /// networks seeded with `cfg.seed`.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<Ippo, TrainError> {
        let learners = loaded.scenario.learners_per_arena();
        check_config("ippo", cfg, learners)?;
        let actions = loaded.scenario.action_set().len();
        let policy_spec = StackSpec {
            head: actions,
            ..stack_spec(cfg, loaded)
        };
        let value_spec = StackSpec {
            head: 1,
            network: Network::Mlp,
            ..policy_spec
        };
        let mut actor = Critic::new(policy_spec, cfg.seed, device)?.data_parallel(job);
        scale_head(&mut actor, POLICY_HEAD_SCALE)?;
        let value_seed = cfg.seed ^ 0x7661_6c75_6500_0000;
        let value = Critic::new(value_spec, value_seed, device)?.data_parallel(job);
        let mut batch = cfg.training_batch(loaded, cfg.seed, job)?;
        batch.start_episode_log(1 << 16);
        batch.set_hidden_width(policy_spec.state_width());
        let rows = cfg.arenas * learners;
        let first = job.first_arena(cfg.arenas);
        let masked = batch.action_mask().is_some();
        let ro = PpoRollout::new((cfg.rollout, rows, policy_spec.input), actions, masked, 0)
            .recurrent(policy_spec.state_width());
        Ok(Ippo {
            sampler: (0..cfg.arenas)
                .map(|a| stream(cfg.seed, first + a as u64, Purpose::Policy))
                .collect(),
            shuffle: stream(cfg.seed, job.rank_key(u64::MAX >> 8), Purpose::Policy),
            input: policy_spec.input,
            losses: PpoLosses::new(device)?,
            index: (0..ro.entries() as u32).collect(),
            ro,
            input_row: vec![0; rows * policy_spec.input],
            nets: row_nets(rows, learners, cfg.network.shared),
            progress: Progress::default(),
            cfg: cfg.clone(),
            batch,
            actor,
            value,
            learners,
            actions,
            shaping: None,
        })
    }

    /// A learner whose advantages `shaping` rewrites before every update's epochs: an
    /// opponent-shaping method built on IPPO. The configuration is checked as a run checks it
    /// before it creates anything, again for a learner built directly.
    pub(crate) fn shaped(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        (device, job): (&Chosen, &Job),
        shaping: Box<dyn AdvantageShaping>,
    ) -> Result<Ippo, TrainError> {
        cfg.validate()
            .and_then(|()| cfg.validate_for(loaded.scenario.learners_per_arena()))
            .map_err(|e| TrainError::Config(e.to_string()))?;
        Ok(Ippo {
            shaping: Some(shaping),
            ..Ippo::new(cfg, loaded, device, job)?
        })
    }

    /// The current observations as network input rows (`[B * N, input]`).
    fn current_input(&mut self) -> Vec<u8> {
        let (n, d, o) = (self.learners, self.input, self.batch.layout().obs_len);
        write_input(&self.batch.buffers().obs, n, o, d, &mut self.input_row);
        self.input_row.clone()
    }

    /// Acts for T steps, storing each step, its log-probabilities and values.
    fn rollout(&mut self) -> Result<(), TrainError> {
        let (n, a, d, rows) = (self.learners, self.actions, self.input, self.ro.buf.rows);
        let nets = std::mem::take(&mut self.nets);
        let shaping = self.cfg.reward_shaping_at(self.progress.env_steps);
        self.batch.set_reward_shaping(shaping);
        let mut input = self.current_input();
        let mut lp = vec![0.0f32; rows * a];
        for t in 0..self.cfg.rollout {
            let logits =
                (self.ro).policy_logits(t, &mut self.actor, (&input, &nets), &mut self.batch)?;
            let values = self.value.forward(Input::U8(&input), &nets)?;
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
            // A time limit bootstraps from the value of the episode's final observation.
            if let Some(f) = truncated_rows(&self.batch, &nets, &[], d) {
                let values = self.value.forward(Input::U8(&f.input), &f.nets)?;
                for (&arena, v) in f.arenas.iter().zip(values.chunks_exact(n)) {
                    let first = t * rows + arena * n;
                    self.ro.buf.final_q[first..first + n].copy_from_slice(v);
                }
            }
        }
        let t_len = self.cfg.rollout;
        let last = self.value.forward(Input::U8(&input), &nets)?;
        self.ro.buf.q_max[t_len * rows..].copy_from_slice(&last);
        self.nets = nets;
        self.progress.env_steps += self.cfg.steps_per_update();
        Ok(())
    }

    /// One update: rollout, GAE, epochs of shuffled minibatches of both losses.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let (lr, adam) = optimiser(&self.cfg, self.progress.update);
        let t0 = std::time::Instant::now();
        let sim_before = self.progress.sim_seconds;
        self.rollout()?;
        (self.ro).advantages(self.cfg.learn.gamma, self.cfg.ppo.gae_lambda);
        if let Some(s) = self.shaping.as_mut() {
            s.shape(&mut self.ro, self.learners);
        }
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

impl Learner for Ippo {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        Ippo::update(self)
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
