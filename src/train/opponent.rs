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
//! Seeds and sweeps (PQN, IQL): every replica has its own models, the r-th block of learners
//! networks in the same stack, initialised from its own seed, trained only on its own rows with
//! its own shuffle stream and learning rate and scored on its own, so replica k's models are
//! exactly a single run's (see `train::sweep`). PR2's conditional models ([`ConditionalModels`]) stack
//! their replicas the same way.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use super::error::TrainError;
use super::run_dir::Resume;
use super::tensors::{NamedTensors, Tensor, f32s};
use crate::critic::loss::{Loss, loss_and_grad};
use crate::critic::{AdamConfig, Chosen, Critic, Input, NetOptim, StackSpec};
use crate::dist::Job;
use crate::rng::below;

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

    /// The streams that shuffle the models' minibatches, one per replica (none if they do not
    /// shuffle).
    fn shuffle_streams(&mut self) -> &mut [ChaCha8Rng] {
        &mut []
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
    /// The minibatch shuffling stream (models that shuffle; replica 0's with several).
    pub shuffle: Option<ChaCha8Rng>,
    /// The shuffling streams of replicas 1 onwards (seeds or a sweep).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replica_shuffles: Vec<ChaCha8Rng>,
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
    let streams = m.shuffle_streams();
    Ok(Some(ModelsState {
        adam_steps,
        shuffle: streams.first().cloned(),
        replica_shuffles: streams.iter().skip(1).cloned().collect(),
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
    let streams = m.shuffle_streams();
    let Some((first, rest)) = streams.split_first_mut() else {
        return Ok(Resume::Exact);
    };
    let Some(saved) = &state.shuffle else {
        return Err(
            crate::error::BadField::range("models_state.shuffle", "a stream", "none").into(),
        );
    };
    let saved_rest = &state.replica_shuffles;
    crate::error::BadField::check_len(
        "models_state.replica_shuffles",
        rest.len(),
        saved_rest.len(),
    )?;
    *first = saved.clone();
    rest.clone_from_slice(saved_rest);
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

    fn shuffle_streams(&mut self) -> &mut [ChaCha8Rng] {
        &mut self.shuffle
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

/// Every replica's seed (seeds x sweep grid points; the run's own seed alone without).
fn replica_seeds(cfg: &super::config::RunConfig) -> Result<Vec<u64>, TrainError> {
    Ok(cfg
        .replicas()
        .map_err(|e| TrainError::Config(e.to_string()))?
        .iter()
        .map(|r| r.cfg.seed)
        .collect())
}

/// The models' stack of every replica: replica r's networks the r-th block of `single`'s,
/// initialised from its seed `seeds[r] ^ salt` exactly as a single run's (one replica: the
/// single run's stack).
fn replicas_stack(
    single: StackSpec,
    (seeds, salt): (&[u64], u64),
    (device, job): (&Chosen, &Job),
) -> Result<Critic, TrainError> {
    let spec = StackSpec {
        nets: single.nets * seeds.len(),
        ..single
    };
    let first = seeds.first().copied().unwrap_or_default();
    let mut critic = Critic::new(spec, first ^ salt, device)?.data_parallel(job);
    if seeds.len() > 1 {
        let params: Vec<f32> = seeds
            .iter()
            .flat_map(|&s| crate::critic::init_params(&single, s ^ salt))
            .collect();
        critic.set_params(&params)?;
    }
    Ok(critic)
}

/// The models' optimiser step after a backward: the default Adam at `lrs[0]` with one replica,
/// else each replica's `learners` networks (replica after replica) at its rate `lrs[r]`.
fn step_replicas(critic: &mut Critic, lrs: &[f32], learners: usize) -> Result<(), TrainError> {
    let adam = AdamConfig {
        lr: lrs[0],
        ..AdamConfig::default()
    };
    if lrs.len() == 1 {
        critic.step(&adam)?;
        return Ok(());
    }
    let per_net: Vec<NetOptim> = lrs
        .iter()
        .flat_map(|&lr| {
            let net = NetOptim {
                lr,
                max_grad_norm: adam.max_grad_norm,
            };
            std::iter::repeat_n(net, learners)
        })
        .collect();
    critic.step_nets(&adam, &per_net)?;
    Ok(())
}

/// The opponent models of one run: every replica's models, replica after replica in one stack
/// (one replica without seeds or a sweep).
pub struct OpponentModels {
    critic: Critic,
    learners: usize,
    actions: usize,
    minibatch: usize,
    /// Minibatch shuffling, one stream per replica.
    shuffle: Vec<ChaCha8Rng>,
    /// The gradient of the replicas' losses (several replicas), reused.
    d_out: Vec<f32>,
}

impl OpponentModels {
    /// One model per learner over `input` bytes (hidden width and layers as the Q-networks),
    /// `learners - 1` groups of `actions` outputs, minibatches of `minibatch` rows; one block of
    /// `learners` models per replica of `cfg` (seeds x sweep grid points), each initialised and
    /// shuffled from its replica's seed exactly as a single run with that seed.
    pub fn new(
        cfg: &super::config::RunConfig,
        learners: usize,
        actions: usize,
        input: usize,
        minibatch: usize,
        (device, job): (&Chosen, &Job),
    ) -> Result<OpponentModels, TrainError> {
        two_learners(learners)?;
        let seeds = replica_seeds(cfg)?;
        let single = StackSpec {
            network: Default::default(),
            nets: learners,
            input,
            hidden: cfg.network.hidden,
            layers: cfg.network.layers,
            head: (learners - 1) * actions,
        };
        let critic = replicas_stack(single, (&seeds, 0x6f70_706f), (device, job))?;
        Ok(OpponentModels {
            critic,
            learners,
            actions,
            minibatch: minibatch.max(1),
            shuffle: seeds
                .iter()
                .map(|&s| {
                    let key = job.rank_key(u64::MAX >> 9);
                    crate::rng::stream(s, key, crate::rng::Purpose::Policy)
                })
                .collect(),
            d_out: Vec::new(),
        })
    }

    /// Replicas whose models the stack holds.
    pub fn replicas(&self) -> usize {
        self.shuffle.len()
    }

    /// The j-th other learner of learner i (the others in slot order, skipping i).
    pub fn other(i: usize, k: usize) -> usize {
        if k < i { k } else { k + 1 }
    }

    /// Scores the models on stored rows (`obs` `[R, D]`, `taken` `[R]`, rows ordered
    /// `[..., arena, learner]` so row r's learner is r % N, in runs of `block` rows per replica,
    /// see [`OpponentModels::score_and_train_rows`]), then trains one epoch on them.
    pub fn score_and_train(
        &mut self,
        obs: &[u8],
        taken: &[u32],
        lrs: &[f32],
        block: usize,
    ) -> Result<Vec<OpponentScores>, TrainError> {
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
        self.score_and_train_rows(obs, &slots, &labels, lrs, block)
    }

    /// Scores the models on rows `obs` `[R, D]` of learners `slots` `[R]` whose others took
    /// `labels` `[R, N-1]` (slot order without the learner), then trains one shuffled epoch
    /// of minibatches on them. The rows come in runs of `block` rows per replica, replica after
    /// replica (`[..., replica, block]`; any `block` with one replica): replica r's rows are
    /// scored on their own and train only its models, shuffled by its own stream, stepped with
    /// its learning rate `lrs[r]` and their loss averaged over its own rows. Returns each
    /// replica's scores.
    pub fn score_and_train_rows(
        &mut self,
        obs: &[u8],
        slots: &[u32],
        labels: &[u32],
        lrs: &[f32],
        block: usize,
    ) -> Result<Vec<OpponentScores>, TrainError> {
        let (n, a, reps) = (self.learners, self.actions, self.replicas());
        crate::error::BadField::check_len("opponent-model learning rates", reps, lrs.len())?;
        let rows = slots.len();
        let d = obs.len() / rows.max(1);
        let (groups, block) = (n - 1, block.max(1));
        let replica_of = |g: usize| (g / block) % reps;
        // The row of the input holding replica r's l-th row.
        let row_of = |r: usize, l: usize| (l / block) * block * reps + r * block + l % block;
        let nets: Vec<u32> = (0..rows)
            .map(|g| (replica_of(g) * n) as u32 + slots[g])
            .collect();

        // Score on the fresh rows, each replica on its own.
        let out = self.critic.forward(Input::U8(obs), &nets)?;
        let mut tallies: Vec<Tally> = (0..reps).map(|_| Tally::new(n, a)).collect();
        for g in 0..rows {
            let (t, i) = (&mut tallies[replica_of(g)], slots[g] as usize);
            t.count[i] += 1.0;
            for k in 0..groups {
                let z = &out[(g * groups + k) * a..(g * groups + k + 1) * a];
                t.add((i, k), z, labels[g * groups + k] as usize);
            }
        }

        // One shuffled epoch of cross-entropy per replica, the replicas' minibatches stacked.
        let per = rows / reps;
        let index: Vec<Vec<usize>> = self
            .shuffle
            .iter_mut()
            .map(|rng| {
                let mut index: Vec<usize> = (0..per).collect();
                for k in (1..per).rev() {
                    let j = below(rng.next_u32(), k as u32 + 1) as usize;
                    index.swap(k, j);
                }
                index
            })
            .collect();
        let (mut loss_sum, mut batches) = (vec![0.0f64; reps], 0);
        let (mut mb_obs, mut mb_nets, mut mb_labels) = (Vec::new(), Vec::new(), Vec::new());
        for c in 0..per.div_ceil(self.minibatch) {
            mb_obs.clear();
            mb_nets.clear();
            mb_labels.clear();
            for (r, index) in index.iter().enumerate() {
                for &l in &index[c * self.minibatch..((c + 1) * self.minibatch).min(per)] {
                    let g = row_of(r, l);
                    mb_obs.extend_from_slice(&obs[g * d..(g + 1) * d]);
                    mb_nets.push(nets[g]);
                    mb_labels.extend_from_slice(&labels[g * groups..(g + 1) * groups]);
                }
            }
            let losses = self.minibatch_step(&mb_obs, &mb_nets, &mb_labels, lrs)?;
            for (sum, value) in loss_sum.iter_mut().zip(losses) {
                *sum += value as f64;
            }
            batches += 1;
        }
        Ok(tallies
            .into_iter()
            .zip(loss_sum)
            .map(|(t, sum)| t.scores((sum / f64::from(batches).max(1.0)) as f32))
            .collect())
    }

    /// One cross-entropy step on a minibatch of every replica's rows (equal blocks, replica
    /// after replica), each replica's loss averaged over its own rows and its networks stepped
    /// with its learning rate. Returns each replica's loss.
    fn minibatch_step(
        &mut self,
        obs: &[u8],
        nets: &[u32],
        labels: &[u32],
        lrs: &[f32],
    ) -> Result<Vec<f32>, TrainError> {
        let (reps, groups) = (lrs.len(), self.learners - 1);
        let finite = |value: f32| {
            if value.is_finite() {
                Ok(value)
            } else {
                Err(TrainError::NonFinite {
                    update: 0,
                    tensor: "opponent-model loss".into(),
                    value,
                })
            }
        };
        let out = self.critic.forward(Input::U8(obs), nets)?;
        if reps == 1 {
            self.critic.loss_backward(&Loss::CrossEntropy {
                groups,
                labels,
                mask: None,
            })?;
            let value = finite(self.critic.last_loss()?)?;
            step_replicas(&mut self.critic, lrs, self.learners)?;
            return Ok(vec![value]);
        }
        let (width, size) = (groups * self.actions, nets.len() / reps);
        self.d_out.resize(out.len(), 0.0);
        let mut losses = Vec::with_capacity(reps);
        for r in 0..reps {
            let loss = Loss::CrossEntropy {
                groups,
                labels: &labels[r * size * groups..(r + 1) * size * groups],
                mask: None,
            };
            let vals = r * size * width..(r + 1) * size * width;
            let value = loss_and_grad(&loss, &out[vals.clone()], width, &mut self.d_out[vals]);
            losses.push(finite(value)?);
        }
        self.critic.backward(&self.d_out)?;
        step_replicas(&mut self.critic, lrs, self.learners)?;
        Ok(losses)
    }
}
