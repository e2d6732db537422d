//! Opponent models: for every learner i, a network predicting each other learner j's action
//! from i's own observation, `m_ij(a_j | o_i)`, trained by cross-entropy on the actions observed
//! in the rollouts. All models live in one stack (one network per learner, one output group per
//! other learner), so one pass serves everyone. Before each training pass the models are scored
//! on the fresh rollout: accuracy and log-loss per (agent, opponent) pair, against two
//! predictions that ignore the observation: the uniform one (log-loss ln |A|) and the
//! frequency baseline, each opponent's action frequencies in the scored rows themselves (its
//! accuracy the most frequent action's share, its log-loss their entropy: no constant
//! prediction does better on those rows, so a model that beats it reads the observation).
//!
//! The models belong to one run (one seed): with seeds or a sweep every replica's learner has
//! its own (see `train::replicated`). PR2's conditional models are [`ConditionalModels`].

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::critic::loss::Loss;
use crate::critic::{AdamConfig, Chosen, Critic, Input, StackSpec};
use crate::dist::Job;
use crate::rng::below;
use crate::train::error::TrainError;
use crate::train::run::run_dir::Resume;
use crate::train::tensors::{NamedTensors, Tensor, f32s};

mod conditional;
mod scores;

pub use conditional::ConditionalModels;
use scores::Tally;
pub use scores::{OpponentScores, ScoreMean};

/// Softmax over every `width` consecutive values.
fn softmax_rows(out: &mut [f32], width: usize) {
    for z in out.chunks_exact_mut(width) {
        let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0.0;
        for v in z.iter_mut() {
            *v = (*v - max).exp();
            sum += *v;
        }
        for v in z.iter_mut() {
            *v /= sum;
        }
    }
}

/// What both kinds of opponent models share: one stack of networks whose outputs are groups
/// of logits over the actions, saved with every checkpoint.
pub trait OpponentNetworks {
    /// The models' network stack.
    fn networks(&mut self) -> &mut Critic;

    /// Actions per output group.
    fn group_width(&self) -> usize;

    /// The networks' parameters (checkpoints).
    fn params(&mut self) -> Result<Vec<f32>, TrainError> {
        Ok(self.networks().params()?)
    }

    /// Restores parameters.
    fn set_params(&mut self, p: &[f32]) -> Result<(), TrainError> {
        Ok(self.networks().set_params(p)?)
    }

    /// The stream that shuffles the models' minibatches (none if they do not shuffle).
    fn shuffle_stream(&mut self) -> Option<&mut ChaCha8Rng> {
        None
    }

    /// Every output group's distribution for input rows `obs` `[R, D]` of learners `nets`:
    /// `[R, N-1, A]` for [`OpponentModels`], `[R, N-1, A, A]` (other, own action, other's
    /// action) for [`ConditionalModels`].
    fn probs(&mut self, obs: &[u8], nets: &[u32]) -> Result<Vec<f32>, TrainError> {
        let a = self.group_width();
        let mut out = self.networks().forward(Input::U8(obs), nets)?;
        softmax_rows(&mut out, a);
        Ok(out)
    }
}

/// The opponent models' evolving state besides their tensors (`models.params`,
/// `models.adam_m`, `models.adam_v` in the checkpoint's safetensors file).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelsState {
    /// Adam's step count.
    pub adam_steps: u64,
    /// The minibatch shuffling stream (models that shuffle).
    pub shuffle: Option<ChaCha8Rng>,
}

/// Saves a run's opponent models (nothing without models): parameters and Adam into `extra`,
/// the rest returned for the JSON.
pub(crate) fn save_models<M: OpponentNetworks>(
    models: &mut Option<M>,
    extra: &mut NamedTensors,
) -> Result<Option<ModelsState>, TrainError> {
    let Some(m) = models else {
        return Ok(None);
    };
    let params = m.params()?;
    let (adam_m, adam_v, adam_steps) = m.networks().adam_state()?;
    for (name, t) in [
        ("models.params", params),
        ("models.adam_m", adam_m),
        ("models.adam_v", adam_v),
    ] {
        extra.push((name.into(), Tensor::F32(t)));
    }
    Ok(Some(ModelsState {
        adam_steps,
        shuffle: m.shuffle_stream().cloned(),
    }))
}

/// Restores a run's opponent models from `state` and the tensors of `extra`, or, from a
/// checkpoint written before those existed, the parameters alone (`legacy`, an approximate
/// resume).
pub(crate) fn load_models<M: OpponentNetworks>(
    models: &mut Option<M>,
    state: Option<&ModelsState>,
    legacy: Option<&[f32]>,
    extra: &[(String, Tensor)],
) -> Result<Resume, TrainError> {
    let Some(m) = models else {
        return Ok(Resume::Exact);
    };
    let n = m.params()?.len();
    let Some(state) = state else {
        return match legacy {
            Some(p) => {
                crate::error::BadField::check_len("models", n, p.len())?;
                m.set_params(p)?;
                Ok(Resume::Approximate(
                    "the checkpoint predates the opponent models' optimiser state".into(),
                ))
            }
            None => Ok(Resume::Approximate(
                "the checkpoint holds no opponent models; they start afresh".into(),
            )),
        };
    };
    m.set_params(f32s(extra, "models.params", n)?)?;
    let (am, av) = (
        f32s(extra, "models.adam_m", n)?,
        f32s(extra, "models.adam_v", n)?,
    );
    m.networks().set_adam_state(am, av, state.adam_steps)?;
    let Some(stream) = m.shuffle_stream() else {
        return Ok(Resume::Exact);
    };
    let Some(saved) = &state.shuffle else {
        return Err(
            crate::error::BadField::range("models_state.shuffle", "a stream", "none").into(),
        );
    };
    *stream = saved.clone();
    Ok(Resume::Exact)
}

/// Restores a run's opponent models' parameters (nothing without models).
pub(crate) fn set_models_params<M: OpponentNetworks>(
    models: &mut Option<M>,
    p: &[f32],
) -> Result<(), TrainError> {
    models.as_mut().map_or(Ok(()), |m| m.set_params(p))
}

impl OpponentNetworks for OpponentModels {
    fn networks(&mut self) -> &mut Critic {
        &mut self.critic
    }

    fn shuffle_stream(&mut self) -> Option<&mut ChaCha8Rng> {
        Some(&mut self.shuffle)
    }

    fn group_width(&self) -> usize {
        self.actions
    }
}

/// Refuses models for fewer than two learners per arena (no other learner to predict).
fn two_learners(learners: usize) -> Result<(), TrainError> {
    if learners < 2 {
        return Err(TrainError::Config(
            "opponent models need at least two learners per arena".into(),
        ));
    }
    Ok(())
}

/// The models' optimiser step after a backward: the default Adam at `lr`.
fn step(critic: &mut Critic, lr: f32) -> Result<(), TrainError> {
    let adam = AdamConfig {
        lr,
        ..AdamConfig::default()
    };
    critic.step(&adam)?;
    Ok(())
}

/// The opponent models of one run.
pub struct OpponentModels {
    critic: Critic,
    learners: usize,
    actions: usize,
    minibatch: usize,
    /// Minibatch shuffling.
    shuffle: ChaCha8Rng,
}

impl OpponentModels {
    /// One model per learner over `input` bytes (hidden width and layers as the Q-networks),
    /// `learners - 1` groups of `actions` outputs, minibatches of `minibatch` rows, initialised
    /// and shuffled from `cfg.seed`.
    pub fn new(
        cfg: &crate::train::config::RunConfig,
        learners: usize,
        actions: usize,
        input: usize,
        minibatch: usize,
        (device, job): (&Chosen, &Job),
    ) -> Result<OpponentModels, TrainError> {
        two_learners(learners)?;
        let spec = StackSpec {
            network: Default::default(),
            nets: learners,
            input,
            hidden: cfg.network.hidden,
            layers: cfg.network.layers,
            head: (learners - 1) * actions,
        };
        let critic = Critic::new(spec, cfg.seed ^ 0x6f70_706f, device)?.data_parallel(job);
        let key = job.rank_key(u64::MAX >> 9);
        Ok(OpponentModels {
            critic,
            learners,
            actions,
            minibatch: minibatch.max(1),
            shuffle: crate::rng::stream(cfg.seed, key, crate::rng::Purpose::Policy),
        })
    }

    /// The j-th other learner of learner i (the others in slot order, skipping i).
    pub fn other(i: usize, k: usize) -> usize {
        if k < i { k } else { k + 1 }
    }

    /// Scores the models on stored rows (`obs` `[R, D]`, `taken` `[R]`, rows ordered
    /// `[..., arena, learner]` so row r's learner is r % N), then trains one epoch on them at
    /// learning rate `lr`.
    pub fn score_and_train(
        &mut self,
        obs: &[u8],
        taken: &[u32],
        lr: f32,
    ) -> Result<OpponentScores, TrainError> {
        let n = self.learners;
        let rows = taken.len();
        let groups = n - 1;
        // Labels: for row r (learner i of its arena), the actions of the others in that arena.
        let labels: Vec<u32> = (0..rows)
            .flat_map(|r| {
                let (base, i) = (r - r % n, r % n);
                (0..groups).map(move |k| taken[base + Self::other(i, k)])
            })
            .collect();
        let slots: Vec<u32> = (0..rows).map(|r| (r % n) as u32).collect();
        self.score_and_train_rows(obs, &slots, &labels, lr)
    }

    /// Scores the models on rows `obs` `[R, D]` of learners `slots` `[R]` whose others took
    /// `labels` `[R, N-1]` (slot order without the learner), then trains one shuffled epoch
    /// of minibatches on them at learning rate `lr`. Returns the scores.
    pub fn score_and_train_rows(
        &mut self,
        obs: &[u8],
        slots: &[u32],
        labels: &[u32],
        lr: f32,
    ) -> Result<OpponentScores, TrainError> {
        let (n, a) = (self.learners, self.actions);
        let rows = slots.len();
        let d = obs.len() / rows.max(1);
        let groups = n - 1;

        // Score on the fresh rows.
        let out = self.critic.forward(Input::U8(obs), slots)?;
        let mut tally = Tally::new(n, a);
        for g in 0..rows {
            let i = slots[g] as usize;
            tally.count[i] += 1.0;
            for k in 0..groups {
                let z = &out[(g * groups + k) * a..(g * groups + k + 1) * a];
                tally.add((i, k), z, labels[g * groups + k] as usize);
            }
        }

        // One shuffled epoch of cross-entropy.
        let mut index: Vec<usize> = (0..rows).collect();
        for k in (1..rows).rev() {
            let j = below(self.shuffle.next_u32(), k as u32 + 1) as usize;
            index.swap(k, j);
        }
        let (mut loss_sum, mut batches) = (0.0f64, 0);
        let (mut mb_obs, mut mb_nets, mut mb_labels) = (Vec::new(), Vec::new(), Vec::new());
        for chunk in index.chunks(self.minibatch) {
            mb_obs.clear();
            mb_nets.clear();
            mb_labels.clear();
            for &g in chunk {
                mb_obs.extend_from_slice(&obs[g * d..(g + 1) * d]);
                mb_nets.push(slots[g]);
                mb_labels.extend_from_slice(&labels[g * groups..(g + 1) * groups]);
            }
            loss_sum += self.minibatch_step(&mb_obs, &mb_nets, &mb_labels, lr)? as f64;
            batches += 1;
        }
        Ok(tally.scores((loss_sum / f64::from(batches).max(1.0)) as f32))
    }

    /// One cross-entropy step on a minibatch at learning rate `lr`. Returns the loss.
    fn minibatch_step(
        &mut self,
        obs: &[u8],
        nets: &[u32],
        labels: &[u32],
        lr: f32,
    ) -> Result<f32, TrainError> {
        let groups = self.learners - 1;
        self.critic.forward(Input::U8(obs), nets)?;
        self.critic.loss_backward(&Loss::CrossEntropy {
            groups,
            labels,
            mask: None,
        })?;
        let value = self.critic.last_loss()?;
        if !value.is_finite() {
            return Err(TrainError::NonFinite {
                update: 0,
                tensor: "opponent-model loss".into(),
                value,
            });
        }
        step(&mut self.critic, lr)?;
        Ok(value)
    }
}
