//! Opponent models: for every learner i, a network predicting each other learner j's action
//! from i's own observation, `m_ij(a_j | o_i)`, trained by cross-entropy on the actions observed
//! in the rollouts. All models live in one stack (one network per learner, one output group per
//! other learner), so one pass serves everyone. Before each training pass the models are scored
//! on the fresh rollout: accuracy and log-loss per (agent, opponent) pair, against the uniform
//! prediction's log-loss ln |A|.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use super::error::TrainError;
use super::run_dir::Resume;
use super::tensors::{NamedTensors, Tensor, f32s};
use crate::critic::loss::Loss;
use crate::critic::{AdamConfig, Chosen, Critic, Input, StackSpec};
use crate::rng::below;

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

    /// The stream that shuffles the models' minibatches, if they shuffle.
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
    match (m.shuffle_stream(), &state.shuffle) {
        (Some(live), Some(saved)) => *live = saved.clone(),
        (Some(_), None) => {
            return Err(
                crate::error::BadField::range("models_state.shuffle", "a stream", "none").into(),
            );
        }
        _ => {}
    }
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

impl OpponentNetworks for ConditionalModels {
    fn networks(&mut self) -> &mut Critic {
        &mut self.critic
    }

    fn group_width(&self) -> usize {
        self.actions
    }
}

/// Scores of one rollout, before training on it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpponentScores {
    /// `[i][k]`: fraction of learner i's predictions of its k-th other learner that were right.
    pub accuracy: Vec<Vec<f64>>,
    /// `[i][k]`: mean negative log-likelihood of the action taken.
    pub log_loss: Vec<Vec<f64>>,
    /// ln |A|, the uniform prediction's log-loss.
    pub uniform_log_loss: f64,
    /// The training loss of this update's pass.
    pub train_loss: f32,
}

/// The opponent models of one run.
pub struct OpponentModels {
    critic: Critic,
    learners: usize,
    actions: usize,
    minibatch: usize,
    shuffle: ChaCha8Rng,
}

impl OpponentModels {
    /// One model per learner over `input` bytes (hidden width and layers as the Q-networks),
    /// `learners - 1` groups of `actions` outputs, minibatches of `minibatch` rows.
    pub fn new(
        cfg: &super::config::RunConfig,
        learners: usize,
        actions: usize,
        input: usize,
        minibatch: usize,
        device: &Chosen,
    ) -> Result<OpponentModels, TrainError> {
        if learners < 2 {
            return Err(TrainError::Config(
                "opponent models need at least two learners per arena".into(),
            ));
        }
        let spec = StackSpec {
            nets: learners,
            input,
            hidden: cfg.hidden,
            layers: cfg.layers,
            head: (learners - 1) * actions,
        };
        Ok(OpponentModels {
            critic: Critic::new(spec, cfg.seed ^ 0x6f70_706f, device)?,
            learners,
            actions,
            minibatch: minibatch.max(1),
            shuffle: crate::rng::stream(cfg.seed, u64::MAX >> 9, crate::rng::Purpose::Policy),
        })
    }

    /// The j-th other learner of learner i (the others in slot order, skipping i).
    pub fn other(i: usize, k: usize) -> usize {
        if k < i { k } else { k + 1 }
    }

    /// Scores the models on `rows` stored rows (`obs` `[R, D]`, `taken` `[R]`, rows ordered
    /// `[..., arena, learner]` so row r's learner is r % N), then trains one epoch on them.
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
        let nets: Vec<u32> = (0..rows).map(|r| (r % n) as u32).collect();
        self.score_and_train_rows(obs, &nets, &labels, lr)
    }

    /// Scores the models on rows `obs` `[R, D]` of learners `nets` `[R]` whose others took
    /// `labels` `[R, N-1]` (slot order without the learner), then trains one shuffled epoch
    /// of minibatches on them.
    pub fn score_and_train_rows(
        &mut self,
        obs: &[u8],
        nets: &[u32],
        labels: &[u32],
        lr: f32,
    ) -> Result<OpponentScores, TrainError> {
        let (n, a) = (self.learners, self.actions);
        let rows = nets.len();
        let d = obs.len() / rows.max(1);
        let groups = n - 1;

        // Score on the fresh rows.
        let out = self.critic.forward(Input::U8(obs), nets)?;
        let (mut correct, mut nll) = (vec![vec![0.0f64; groups]; n], vec![vec![0.0f64; groups]; n]);
        let mut count = vec![0.0f64; n];
        for r in 0..rows {
            let i = nets[r] as usize;
            count[i] += 1.0;
            for k in 0..groups {
                let z = &out[(r * groups + k) * a..(r * groups + k + 1) * a];
                let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let lse = max + z.iter().map(|v| (v - max).exp()).sum::<f32>().ln();
                let label = labels[r * groups + k] as usize;
                let best = (0..a).max_by(|&x, &y| z[x].total_cmp(&z[y])).unwrap_or(0);
                correct[i][k] += f64::from(u8::from(best == label));
                nll[i][k] += (lse - z[label]) as f64;
            }
        }
        for i in 0..n {
            for k in 0..groups {
                correct[i][k] /= count[i].max(1.0);
                nll[i][k] /= count[i].max(1.0);
            }
        }

        // One shuffled epoch of cross-entropy.
        let mut index: Vec<usize> = (0..rows).collect();
        for k in (1..rows).rev() {
            let j = below(self.shuffle.next_u32(), k as u32 + 1) as usize;
            index.swap(k, j);
        }
        let adam = AdamConfig {
            lr,
            ..AdamConfig::default()
        };
        let (mut loss_sum, mut batches) = (0.0f64, 0);
        for chunk in index.chunks(self.minibatch) {
            let mb_obs: Vec<u8> = chunk
                .iter()
                .flat_map(|&r| obs[r * d..(r + 1) * d].iter().copied())
                .collect();
            let mb_nets: Vec<u32> = chunk.iter().map(|&r| nets[r]).collect();
            let mb_labels: Vec<u32> = chunk
                .iter()
                .flat_map(|&r| labels[r * groups..(r + 1) * groups].iter().copied())
                .collect();
            self.critic.forward(Input::U8(&mb_obs), &mb_nets)?;
            self.critic.loss_backward(&Loss::CrossEntropy {
                groups,
                labels: &mb_labels,
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
            loss_sum += value as f64;
            batches += 1;
            self.critic.step(&adam);
        }
        Ok(OpponentScores {
            accuracy: correct,
            log_loss: nll,
            uniform_log_loss: (a as f64).ln(),
            train_loss: (loss_sum / batches.max(1) as f64) as f32,
        })
    }
}

/// Running weighted mean of scores over several scored batches.
#[derive(Debug, Default)]
pub struct ScoreMean {
    total: Option<OpponentScores>,
    weight: f64,
}

impl ScoreMean {
    /// Adds a batch's scores with weight `w` (its rows).
    pub fn add(&mut self, s: OpponentScores, w: f64) {
        let scaled = |mut s: OpponentScores| {
            for row in s.accuracy.iter_mut().chain(s.log_loss.iter_mut()) {
                for v in row.iter_mut() {
                    *v *= w;
                }
            }
            s.train_loss = (s.train_loss as f64 * w) as f32;
            s
        };
        self.weight += w;
        match &mut self.total {
            None => self.total = Some(scaled(s)),
            Some(t) => {
                let s = scaled(s);
                for (x, y) in t
                    .accuracy
                    .iter_mut()
                    .zip(&s.accuracy)
                    .chain(t.log_loss.iter_mut().zip(&s.log_loss))
                {
                    for (a, b) in x.iter_mut().zip(y) {
                        *a += b;
                    }
                }
                t.train_loss += s.train_loss;
            }
        }
    }

    /// The mean, or `None` when nothing was added.
    pub fn mean(self) -> Option<OpponentScores> {
        let w = self.weight.max(f64::MIN_POSITIVE);
        self.total.map(|mut t| {
            for row in t.accuracy.iter_mut().chain(t.log_loss.iter_mut()) {
                for v in row.iter_mut() {
                    *v /= w;
                }
            }
            t.train_loss = (t.train_loss as f64 / w) as f32;
            t
        })
    }
}

/// The conditional opponent models of PR2 (`rho_ij(a_j | o_i, a_i)`): per learner one network
/// with `(N-1) x A` groups of `A` logits, the group `(j, a_i)` predicting j's action when i takes
/// `a_i`. Only the group of the action i actually took has a label, so the cross-entropy
/// gradient is built here and handed to the stack's backward.
pub struct ConditionalModels {
    critic: Critic,
    learners: usize,
    actions: usize,
    d_out: Vec<f32>,
}

impl ConditionalModels {
    /// One model per learner over `input` bytes.
    pub fn new(
        cfg: &super::config::RunConfig,
        learners: usize,
        actions: usize,
        input: usize,
        device: &Chosen,
    ) -> Result<ConditionalModels, TrainError> {
        if learners < 2 {
            return Err(TrainError::Config(
                "opponent models need at least two learners per arena".into(),
            ));
        }
        let spec = Self::spec(cfg, learners, actions, input);
        Ok(ConditionalModels {
            critic: Critic::new(spec, cfg.seed ^ 0x7268_6f00, device)?,
            learners,
            actions,
            d_out: Vec::new(),
        })
    }

    /// The stack's shape.
    pub fn spec(
        cfg: &super::config::RunConfig,
        learners: usize,
        actions: usize,
        input: usize,
    ) -> StackSpec {
        StackSpec {
            nets: learners,
            input,
            hidden: cfg.hidden,
            layers: cfg.layers,
            head: (learners - 1) * actions * actions,
        }
    }

    /// Scores on rows `obs` `[R, D]` of learners `nets` that took `own` `[R]` while the others
    /// took `others` `[R, N-1]`, then takes one cross-entropy step on them. `train` masks rows
    /// out of the step (still scored).
    pub fn score_and_train(
        &mut self,
        obs: &[u8],
        nets: &[u32],
        own: &[u32],
        others: &[u32],
        train: &[bool],
        lr: f32,
    ) -> Result<OpponentScores, TrainError> {
        let (n, a) = (self.learners, self.actions);
        let groups = n - 1;
        let rows = nets.len();
        let width = groups * a * a;
        let out = self.critic.forward(Input::U8(obs), nets)?;
        self.d_out.clear();
        self.d_out.resize(out.len(), 0.0);
        let trained = train.iter().filter(|t| **t).count().max(1) as f32;
        let (mut correct, mut nll) = (vec![vec![0.0f64; groups]; n], vec![vec![0.0f64; groups]; n]);
        let mut count = vec![0.0f64; n];
        let mut loss = 0.0f64;
        for r in 0..rows {
            let i = nets[r] as usize;
            count[i] += 1.0;
            for k in 0..groups {
                let at = r * width + (k * a + own[r] as usize) * a;
                let z = &out[at..at + a];
                let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let sum: f32 = z.iter().map(|v| (v - max).exp()).sum();
                let lse = max + sum.ln();
                let label = others[r * groups + k] as usize;
                let best = (0..a).max_by(|&x, &y| z[x].total_cmp(&z[y])).unwrap_or(0);
                correct[i][k] += f64::from(u8::from(best == label));
                let l = (lse - z[label]) as f64;
                nll[i][k] += l;
                if train[r] {
                    loss += l;
                    for (c, d) in self.d_out[at..at + a].iter_mut().enumerate() {
                        let p = (z[c] - max).exp() / sum;
                        *d = (p - f32::from(u8::from(c == label))) / (trained * groups as f32);
                    }
                }
            }
        }
        for i in 0..n {
            for k in 0..groups {
                correct[i][k] /= count[i].max(1.0);
                nll[i][k] /= count[i].max(1.0);
            }
        }
        let train_loss = (loss / (trained as f64 * groups as f64)) as f32;
        if !train_loss.is_finite() {
            return Err(TrainError::NonFinite {
                update: 0,
                tensor: "opponent-model loss".into(),
                value: train_loss,
            });
        }
        self.critic.backward(&self.d_out)?;
        self.critic.step(&AdamConfig {
            lr,
            ..AdamConfig::default()
        });
        Ok(OpponentScores {
            accuracy: correct,
            log_loss: nll,
            uniform_log_loss: (a as f64).ln(),
            train_loss,
        })
    }
}
