//! Online DQN: DQN with a target network and no replay buffer. Act in B arenas for T steps
//! with epsilon-greedy actions from the online network, score every next observation with the
//! target network, then E epochs of shuffled minibatches of the value loss to the one-step
//! targets `r_t + gamma (1 - terminated_t) max_a Q_target(s_{t+1}, a)` (a truncation by the
//! time limit bootstraps from the episode's final observation), and a Polyak step of the target
//! network (`target_tau`) after each update.
//!
//! It is PQN with lambda = 0 and its bootstrap values from a slowly moving copy: the small
//! algorithm docs/new_algorithm.md adds, in this one file plus its `Algo` variant, its
//! configuration section, its sweep keys and one registry line. Seeds, sweeps, resume,
//! evaluation, MPI and Python's `load_policy` come from the layers below it.
//!
//! Configuration read here (see [`RunConfig`]): `arenas`, `rollout` (T), its own section
//! `online_dqn` (`epochs`, `minibatches`, `target_tau`), `learn` (`gamma`,
//! `lr`/`lr_decay`/`max_grad_norm`/`radam`, `eps_*`, and the value loss: `loss`, Huber by
//! default) and `network` (`shared`, `hidden`, `layers`). Memoryless networks only, without
//! opponent models.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::critic::{Chosen, Critic, Input};
use crate::dist::Job;
use crate::engine::{BatchState, EnvBatch};
use crate::error::BadField;
use crate::rng::{Purpose, below, stream};
use crate::scenario::LoadedScenario;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::kit::explore::{act_epsilon_greedy, max_legal};
use crate::train::kit::q_head::QHead;
use crate::train::kit::qnet::{q_rows, row_nets, stack_spec, truncated_rows, write_input};
use crate::train::kit::replay::restore_target;
use crate::train::kit::returns::{Minibatch, RolloutBuffer};
use crate::train::kit::schedule::{epsilon_by_updates, optimiser};
use crate::train::kit::stats::UpdateStats;
use crate::train::learner::{Learner, Progress};
use crate::train::run::run_dir::Resume;
use crate::train::tensors::{NamedTensors, Tensor, f32s};

/// An online DQN learner with its arenas.
pub struct OnlineDqn {
    cfg: RunConfig,
    batch: EnvBatch,
    /// The online and target Q-networks, one per learner slot (or one shared).
    critic: Critic,
    head: QHead,
    learners: usize,
    actions: usize,
    obs_len: usize,
    /// Exploration streams, one per arena.
    explore: Vec<ChaCha8Rng>,
    /// Minibatch shuffling.
    shuffle: ChaCha8Rng,
    progress: Progress,
    /// The rollout; its values are the target network's max Q of the next observations.
    buf: RolloutBuffer,
    input_row: Vec<u8>,
    /// Each row's network.
    nets: Vec<u32>,
    /// The rows of the rollout in the order minibatches are cut from.
    index: Vec<u32>,
    mb: Minibatch,
}

/// The learner's checkpointed state beyond parameters and Adam (the target network is the
/// `target` tensor).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OnlineDqnState {
    /// Updates done.
    pub update: u64,
    /// Environment steps done.
    pub env_steps: u64,
    /// Exploration streams, one per arena.
    pub explore: Vec<ChaCha8Rng>,
    /// The shuffling stream.
    pub shuffle: ChaCha8Rng,
    /// The arenas.
    pub batch: BatchState,
}

impl OnlineDqn {
    /// A fresh learner for one rank of `job` (one process: `Job::single()`): arenas and
    /// networks seeded with `cfg.seed`.
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<OnlineDqn, TrainError> {
        if cfg.learn.opponent_models || cfg.network.kind != crate::train::config::NetworkKind::Mlp {
            return Err(TrainError::Config(
                "algo online_dqn takes network.kind: mlp and learn.opponent_models: false".into(),
            ));
        }
        let spec = stack_spec(cfg, loaded);
        let critic = Critic::new(spec, cfg.seed, device)?.data_parallel(job);
        let mut batch = cfg.training_batch(loaded, cfg.seed, job)?;
        batch.start_episode_log(1 << 16);
        let head = QHead::of(cfg);
        let learners = loaded.scenario.learners_per_arena();
        let rows = cfg.arenas * learners;
        let first = job.first_arena(cfg.arenas);
        Ok(OnlineDqn {
            explore: (0..cfg.arenas)
                .map(|a| stream(cfg.seed, first + a as u64, Purpose::Policy))
                .collect(),
            shuffle: stream(cfg.seed, job.rank_key(u64::MAX >> 8), Purpose::Policy),
            actions: spec.head / head.outputs_per_action(),
            obs_len: spec.input,
            buf: RolloutBuffer::new(cfg.rollout, rows, spec.input),
            input_row: vec![0; rows * spec.input],
            nets: row_nets(rows, learners, cfg.network.shared),
            index: (0..(cfg.rollout * rows) as u32).collect(),
            mb: Minibatch::default(),
            progress: Progress::default(),
            cfg: cfg.clone(),
            batch,
            critic,
            head,
            learners,
        })
    }

    /// The current observations as network input rows (`[B * N, input]`).
    fn current_input(&mut self) -> Vec<u8> {
        let (n, d, o) = (self.learners, self.obs_len, self.batch.layout().obs_len);
        write_input(&self.batch.buffers().obs, n, o, d, &mut self.input_row);
        self.input_row.clone()
    }

    /// `max_a Q_target` of each row of `input` (`[rows, input]` through `nets`), over the legal
    /// actions of `mask` (`[rows, A]`) when given.
    fn target_max(
        &mut self,
        input: &[u8],
        nets: &[u32],
        mask: Option<&[u8]>,
    ) -> Result<Vec<f32>, TrainError> {
        let out = self.critic.forward_target(Input::U8(input), nets)?;
        let q = self.head.q_values(out);
        Ok(q.chunks_exact(self.actions)
            .enumerate()
            .map(|(row, v)| max_legal(v, mask, row))
            .collect())
    }

    /// Acts for T steps, storing each step and the target network's values of what follows it.
    fn rollout(&mut self, epsilon: f32) -> Result<(), TrainError> {
        let (n, a, d, rows) = (self.learners, self.actions, self.obs_len, self.buf.rows);
        let threshold = crate::rng::threshold(epsilon as f64);
        let nets = std::mem::take(&mut self.nets);
        let shaping = self.cfg.reward_shaping_at(self.progress.env_steps);
        self.batch.set_reward_shaping(shaping);
        let mut input = self.current_input();
        for t in 0..self.cfg.rollout {
            let q = self
                .head
                .q_values(self.critic.forward(Input::U8(&input), &nets)?);
            self.buf.obs[t * rows * d..(t + 1) * rows * d].copy_from_slice(&input);
            act_epsilon_greedy(
                &mut self.explore,
                &q,
                a,
                threshold,
                self.batch.actions_and_mask(),
            );
            let t0 = std::time::Instant::now();
            self.batch.step()?;
            self.progress.sim_seconds += t0.elapsed().as_secs_f64();
            self.buf.record(t, self.batch.buffers(), n);
            // The next observations (a reset's where an episode ended: its target is cut by
            // `terminated`, or bootstraps from the final observation where it truncated).
            input = self.current_input();
            let mask = self.batch.action_mask().map(<[u8]>::to_vec);
            let next = self.target_max(&input, &nets, mask.as_deref())?;
            self.buf.q_max[(t + 1) * rows..(t + 2) * rows].copy_from_slice(&next);
            if let Some(f) = truncated_rows(&self.batch, &nets, &[], d) {
                // The final observations' masks are not kept: every action counts.
                let values = self.target_max(&f.input, &f.nets, None)?;
                for (&arena, v) in f.arenas.iter().zip(values.chunks_exact(n)) {
                    let first = t * rows + arena * n;
                    self.buf.final_q[first..first + n].copy_from_slice(v);
                }
            }
        }
        self.nets = nets;
        self.progress.env_steps += self.cfg.steps_per_update();
        Ok(())
    }

    /// One update: rollout, one-step targets, epochs of shuffled minibatches, target step.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let epsilon = epsilon_by_updates(&self.cfg, self.progress.update);
        let (lr, adam) = optimiser(&self.cfg, self.progress.update);
        let t0 = std::time::Instant::now();
        let sim_before = self.progress.sim_seconds;
        self.rollout(epsilon)?;
        // Lambda-returns with lambda = 0 are the one-step targets from the stored values.
        self.buf.lambda_returns(self.cfg.learn.gamma, 0.0);
        let size = self.index.len() / self.cfg.online_dqn.minibatches;
        let (mut losses, mut count) = (0.0f64, 0);
        for (i, v) in self.index.iter_mut().enumerate() {
            *v = i as u32;
        }
        for _ in 0..self.cfg.online_dqn.epochs {
            for k in (1..self.index.len()).rev() {
                let j = below(self.shuffle.next_u32(), k as u32 + 1) as usize;
                self.index.swap(k, j);
            }
            for mb in 0..self.cfg.online_dqn.minibatches {
                let picks = &self.index[mb * size..(mb + 1) * size];
                self.buf.gather(picks, &self.nets, &mut self.mb);
                let m = &self.mb;
                self.critic.forward(Input::U8(&m.obs), &m.nets)?;
                (self.critic).loss_backward(&self.head.loss(&m.actions, &m.targets))?;
                let value = self.critic.last_loss()?;
                if !value.is_finite() {
                    return Err(TrainError::NonFinite {
                        update: self.progress.update + 1,
                        tensor: "loss".into(),
                        value,
                    });
                }
                losses += value as f64;
                count += 1;
                self.critic.step(&adam)?;
            }
        }
        self.critic.polyak(self.cfg.online_dqn.target_tau)?;
        self.progress.update += 1;
        self.progress.learn_seconds +=
            t0.elapsed().as_secs_f64() - (self.progress.sim_seconds - sim_before);
        let loss = (losses / count.max(1) as f64) as f32;
        let episodes = self.batch.take_episodes();
        Ok(UpdateStats::of_run(loss, (epsilon, lr), episodes, None))
    }
}

impl Learner for OnlineDqn {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        OnlineDqn::update(self)
    }

    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        let shape = (self.learners, self.batch.layout().obs_len, self.obs_len);
        q_rows(&mut self.critic, &self.head, obs, shape, &mut [])
    }

    fn opponent_predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        Ok(None)
    }

    fn set_opponent_params(&mut self, p: &[f32]) -> Result<(), TrainError> {
        BadField::check_len(
            "opponent model parameters (online_dqn has none)",
            0,
            p.len(),
        )?;
        Ok(())
    }

    fn save_state(&mut self, extra: &mut NamedTensors) -> Result<String, TrainError> {
        extra.push(("target".into(), Tensor::F32(self.critic.target_params()?)));
        Ok(serde_json::to_string(&OnlineDqnState {
            update: self.progress.update,
            env_steps: self.progress.env_steps,
            explore: self.explore.clone(),
            shuffle: self.shuffle.clone(),
            batch: self.batch.save_state(),
        })?)
    }

    fn load_state(&mut self, json: &str, extra: &[(String, Tensor)]) -> Result<Resume, TrainError> {
        let s: OnlineDqnState = serde_json::from_str(json)?;
        BadField::check_len("explore", self.explore.len(), s.explore.len())?;
        let target = f32s(extra, "target", self.critic.spec().params())?;
        self.batch.load_state(&s.batch)?;
        restore_target(&mut self.critic, target)?;
        self.progress.update = s.update;
        self.progress.env_steps = s.env_steps;
        self.explore = s.explore;
        self.shuffle = s.shuffle;
        Ok(Resume::Exact)
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
        vec![&mut self.critic]
    }
}
