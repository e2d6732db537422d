//! PQN-VDN (purejaxql's `pqn_vdn`, JaxMARL's strongest Q-learning baseline on Overcooked):
//! PQN's vectorised rollouts and lambda-returns, on the team's value. Every learner acts
//! epsilon-greedily on its own `Q_i(o_i, .)`; the team's value is the sum
//! `Q_tot = sum_i Q_i(o_i, a_i)` ([`crate::train::kit::vdn`]), its reward the sum of the
//! learners' rewards, and its lambda-returns bootstrap from `sum_i max_a Q_i` (over legal
//! actions; a truncation from the final observations', a termination cuts). Then E epochs of
//! shuffled minibatches of team rows (an arena at a step, with all its learners) of
//! `0.5 (Q_tot - G_tot)^2`.
//!
//! Configuration read here (see [`RunConfig`]): `arenas`, `rollout` (T), the `pqn` section
//! (`epochs`, `minibatches` of team rows, `lambda`), `learn` (`gamma`,
//! `lr`/`lr_decay`/`max_grad_norm`/`radam`, `eps_*`; the value loss is MSE) and `network`
//! (`shared`, `hidden`, `layers`). Memoryless networks only, without opponent models.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use crate::critic::{Chosen, Critic, Input};
use crate::dist::Job;
use crate::engine::EnvBatch;
use crate::rng::{Purpose, below, stream};
use crate::scenario::LoadedScenario;
use crate::train::config::{NetworkKind, RunConfig, ValueLoss};
use crate::train::error::TrainError;
use crate::train::kit::explore::{act_epsilon_greedy, max_legal};
use crate::train::kit::q_head::QHead;
use crate::train::kit::qnet::{q_rows, row_nets, stack_spec, truncated_rows, write_input};
use crate::train::kit::returns::RolloutBuffer;
use crate::train::kit::run_state::StreamsState;
use crate::train::kit::schedule::{epsilon_by_updates, optimiser};
use crate::train::kit::stats::UpdateStats;
use crate::train::kit::vdn::team_loss;
use crate::train::learner::{Learner, Progress};
use crate::train::run::run_dir::Resume;
use crate::train::tensors::{NamedTensors, Tensor};

/// A PQN-VDN learner with its arenas.
pub struct PqnVdn {
    cfg: RunConfig,
    batch: EnvBatch,
    /// The Q-networks, one per learner slot (or one shared).
    critic: Critic,
    learners: usize,
    actions: usize,
    /// Bytes per network input row.
    input: usize,
    /// Exploration streams, one per arena.
    explore: Vec<ChaCha8Rng>,
    /// Minibatch shuffling.
    shuffle: ChaCha8Rng,
    progress: Progress,
    /// The team's columns, one row per arena: summed rewards, ends, `sum_i max Q_i` (row T
    /// after the rollout), the final observations' sums, the returns.
    team: RolloutBuffer,
    /// `[T, B x N, input]` the learners' inputs.
    obs: Vec<u8>,
    /// `[T, B x N]` the actions played.
    taken: Vec<u32>,
    input_row: Vec<u8>,
    /// Each learner row's network.
    nets: Vec<u32>,
    /// The team rows (`t * B + arena`) in the order minibatches are cut from.
    index: Vec<u32>,
}

impl PqnVdn {
    /// A fresh learner for one rank of `job` (one process: `Job::single()`).
    pub fn new(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
        job: &Job,
    ) -> Result<PqnVdn, TrainError> {
        let mse = matches!(cfg.learn.loss, ValueLoss::Default | ValueLoss::Mse);
        if cfg.learn.opponent_models || cfg.network.kind != NetworkKind::Mlp || !mse {
            return Err(TrainError::Config(
                "algo pqn_vdn takes network.kind: mlp, learn.loss: mse and \
                 learn.opponent_models: false"
                    .into(),
            ));
        }
        let spec = stack_spec(cfg, loaded);
        let critic = Critic::new(spec, cfg.seed, device)?.data_parallel(job);
        let mut batch = cfg.training_batch(loaded, cfg.seed, job)?;
        batch.start_episode_log(1 << 16);
        let learners = loaded.scenario.learners_per_arena();
        let (b, t) = (cfg.arenas, cfg.rollout);
        let rows = b * learners;
        let first = job.first_arena(b);
        Ok(PqnVdn {
            explore: (0..b)
                .map(|a| stream(cfg.seed, first + a as u64, Purpose::Policy))
                .collect(),
            shuffle: stream(cfg.seed, job.rank_key(u64::MAX >> 8), Purpose::Policy),
            actions: spec.head,
            input: spec.input,
            team: RolloutBuffer::new(t, b, 0),
            obs: vec![0; t * rows * spec.input],
            taken: vec![0; t * rows],
            input_row: vec![0; rows * spec.input],
            nets: row_nets(rows, learners, cfg.network.shared),
            index: (0..(t * b) as u32).collect(),
            progress: Progress::default(),
            cfg: cfg.clone(),
            batch,
            critic,
            learners,
        })
    }

    /// The current observations as network input rows (`[B * N, input]`).
    fn current_input(&mut self) -> Vec<u8> {
        let (n, d, o) = (self.learners, self.input, self.batch.layout().obs_len);
        write_input(&self.batch.buffers().obs, n, o, d, &mut self.input_row);
        self.input_row.clone()
    }

    /// `sum_i max_a Q_i` of each arena of `q` (`[B x N, A]`), over the legal actions of `mask`.
    fn team_max(&self, q: &[f32], mask: Option<&[u8]>) -> Vec<f32> {
        let (n, a) = (self.learners, self.actions);
        let rows: Vec<f32> = (0..q.len() / a)
            .map(|row| max_legal(&q[row * a..(row + 1) * a], mask, row))
            .collect();
        rows.chunks_exact(n).map(|r| r.iter().sum()).collect()
    }

    /// Acts for T steps, storing each step and the team's values.
    fn rollout(&mut self, epsilon: f32) -> Result<(), TrainError> {
        let (n, a, d) = (self.learners, self.actions, self.input);
        let (b, rows) = (self.cfg.arenas, self.cfg.arenas * self.learners);
        let threshold = crate::rng::threshold(epsilon as f64);
        let nets = std::mem::take(&mut self.nets);
        let shaping = self.cfg.reward_shaping_at(self.progress.env_steps);
        self.batch.set_reward_shaping(shaping);
        let mut input = self.current_input();
        for t in 0..self.cfg.rollout {
            let q = self.critic.forward(Input::U8(&input), &nets)?;
            self.obs[t * rows * d..(t + 1) * rows * d].copy_from_slice(&input);
            let sums = self.team_max(&q, self.batch.action_mask());
            self.team.q_max[t * b..(t + 1) * b].copy_from_slice(&sums);
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
            let s = self.batch.buffers();
            for row in 0..rows {
                self.taken[t * rows + row] = s.actions[row] as u32;
            }
            for k in 0..b {
                let i = t * b + k;
                self.team.rewards[i] = s.rewards[k * n..(k + 1) * n].iter().sum();
                self.team.terminated[i] = f32::from(s.terminated[k] != 0);
                self.team.truncated[i] = f32::from(s.truncated[k] != 0);
                self.team.final_q[i] = 0.0;
            }
            input = self.current_input();
            // A time limit bootstraps from the final observations' `sum_i max Q_i`, over the
            // actions legal in the final state where the substrate masks some.
            if let Some(f) = truncated_rows(&self.batch, &nets, &[], d) {
                let q = self.critic.forward(Input::U8(&f.input), &f.nets)?;
                let mask = self.batch.final_action_mask();
                for (&arena, team) in f.arenas.iter().zip(q.chunks_exact(n * a)) {
                    let best = team.chunks_exact(a).enumerate();
                    let best = best.map(|(k, v)| max_legal(v, mask, arena * n + k));
                    self.team.final_q[t * b + arena] = best.sum();
                }
            }
        }
        let q = self.critic.forward(Input::U8(&input), &nets)?;
        let last = self.team_max(&q, self.batch.action_mask());
        let t_len = self.cfg.rollout;
        self.team.q_max[t_len * b..].copy_from_slice(&last);
        self.nets = nets;
        self.progress.env_steps += self.cfg.steps_per_update();
        Ok(())
    }

    /// One update: rollout, the team's lambda-returns, epochs of shuffled team minibatches.
    pub fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let epsilon = epsilon_by_updates(&self.cfg, self.progress.update);
        let (lr, adam) = optimiser(&self.cfg, self.progress.update);
        let t0 = std::time::Instant::now();
        let sim_before = self.progress.sim_seconds;
        self.rollout(epsilon)?;
        (self.team).lambda_returns(self.cfg.learn.gamma, self.cfg.pqn.lambda);
        let (n, a, d) = (self.learners, self.actions, self.input);
        let (b, rows) = (self.cfg.arenas, self.cfg.arenas * self.learners);
        let size = self.index.len() / self.cfg.pqn.minibatches;
        let (mut obs, mut nets, mut taken, mut targets) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut losses, mut count) = (0.0f64, 0);
        for (i, v) in self.index.iter_mut().enumerate() {
            *v = i as u32;
        }
        for _ in 0..self.cfg.pqn.epochs {
            for k in (1..self.index.len()).rev() {
                let j = below(self.shuffle.next_u32(), k as u32 + 1) as usize;
                self.index.swap(k, j);
            }
            for mb in 0..self.cfg.pqn.minibatches {
                obs.clear();
                nets.clear();
                taken.clear();
                targets.clear();
                for &i in &self.index[mb * size..(mb + 1) * size] {
                    let (t, arena) = (i as usize / b, i as usize % b);
                    for l in 0..n {
                        let row = arena * n + l;
                        let g = t * rows + row;
                        obs.extend_from_slice(&self.obs[g * d..(g + 1) * d]);
                        nets.push(self.nets[row]);
                        taken.push(self.taken[g]);
                    }
                    targets.push(self.team.returns[i as usize]);
                }
                let out = self.critic.forward(Input::U8(&obs), &nets)?;
                let mut d_out = vec![0.0; out.len()];
                let loss = team_loss(&out, (n, a), &taken, &targets, &mut d_out);
                if !loss.is_finite() {
                    return Err(TrainError::NonFinite {
                        update: self.progress.update + 1,
                        tensor: "loss".into(),
                        value: loss,
                    });
                }
                self.critic.backward(&d_out)?;
                self.critic.step(&adam)?;
                losses += loss as f64;
                count += 1;
            }
        }
        self.progress.update += 1;
        self.progress.learn_seconds +=
            t0.elapsed().as_secs_f64() - (self.progress.sim_seconds - sim_before);
        let loss = (losses / count.max(1) as f64) as f32;
        let episodes = self.batch.take_episodes();
        Ok(UpdateStats::of_run(loss, (epsilon, lr), episodes, None))
    }
}

impl Learner for PqnVdn {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        PqnVdn::update(self)
    }

    /// Each learner's own `Q_i`: the greedy joint action maximises their sum.
    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        let shape = (self.learners, self.batch.layout().obs_len, self.input);
        q_rows(&mut self.critic, &QHead::Mse, obs, shape, &mut [])
    }

    fn save_state(&mut self, _extra: &mut NamedTensors) -> Result<String, TrainError> {
        let streams = (&self.explore[..], &self.shuffle);
        StreamsState::save(&self.progress, streams, &mut self.batch)
    }

    fn load_state(
        &mut self,
        json: &str,
        _extra: &[(String, Tensor)],
    ) -> Result<Resume, TrainError> {
        let streams = (&mut self.explore, &mut self.shuffle);
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
        vec![&mut self.critic]
    }
}
