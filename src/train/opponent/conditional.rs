//! PR2's conditional opponent models `m_ij(a_j | a_i, o_i)` (`rho: model` reads them): their
//! stack (every replica's), the hand-built cross-entropy of the taken action's group, scores.

use super::{
    OpponentNetworks, OpponentScores, Tally, replica_seeds, replicas_stack, step_replicas,
    two_learners,
};
use crate::critic::{Chosen, Critic, Input, StackSpec};
use crate::dist::Job;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;

/// The conditional opponent models of PR2 (`rho_ij(a_j | o_i, a_i)`): per learner one network
/// with `(N-1) x A` groups of `A` logits, the group `(j, a_i)` predicting j's action when i takes
/// `a_i`. Only the group of the action i actually took has a label, so the cross-entropy
/// gradient is built here and handed to the stack's backward.
///
/// Seeds and sweeps: one block of `learners` networks per replica, replica after replica (the
/// critics' order, so a row's network `r x N + i` is the same index in both stacks), each
/// initialised from its replica's seed; each replica's rows train only its networks, their
/// gradient averaged over its own trained rows, at its own learning rate, and are scored on
/// their own, so replica k's models are exactly a single run's.
pub struct ConditionalModels {
    critic: Critic,
    learners: usize,
    actions: usize,
    /// Replicas whose models the stack holds.
    replicas: usize,
    d_out: Vec<f32>,
}

impl ConditionalModels {
    /// One model per learner over `input` bytes, for every replica of `cfg`.
    pub fn new(
        cfg: &RunConfig,
        learners: usize,
        actions: usize,
        input: usize,
        (device, job): (&Chosen, &Job),
    ) -> Result<ConditionalModels, TrainError> {
        two_learners(learners)?;
        let seeds = replica_seeds(cfg)?;
        let single = Self::single_spec(cfg, learners, actions, input);
        Ok(ConditionalModels {
            critic: replicas_stack(single, (&seeds, 0x7268_6f00), (device, job))?,
            learners,
            actions,
            replicas: seeds.len(),
            d_out: Vec::new(),
        })
    }

    /// The stack's shape: every replica's (seeds x sweep grid points) `learners` networks.
    pub fn spec(cfg: &RunConfig, learners: usize, actions: usize, input: usize) -> StackSpec {
        let single = Self::single_spec(cfg, learners, actions, input);
        StackSpec {
            nets: single.nets.saturating_mul(cfg.replica_count()),
            ..single
        }
    }

    /// One replica's models.
    fn single_spec(cfg: &RunConfig, learners: usize, actions: usize, input: usize) -> StackSpec {
        StackSpec {
            network: Default::default(),
            nets: learners,
            input,
            hidden: cfg.network.hidden,
            layers: cfg.network.layers,
            head: (learners - 1) * actions * actions,
        }
    }

    /// Scores on rows `obs` `[R, D]` of networks `nets` (replica r's learner i is network
    /// `r x N + i`) that took `own` `[R]` while the others took `others` `[R, N-1]`, then takes
    /// one cross-entropy step on them, each replica's gradient averaged over its own trained
    /// rows and its networks stepped at its learning rate `lrs[r]`. `train` masks rows out of
    /// the step (still scored). Returns each replica's scores.
    pub fn score_and_train(
        &mut self,
        obs: &[u8],
        nets: &[u32],
        (own, others): (&[u32], &[u32]),
        train: &[bool],
        lrs: &[f32],
    ) -> Result<Vec<OpponentScores>, TrainError> {
        let (n, a, reps) = (self.learners, self.actions, self.replicas);
        crate::error::BadField::check_len("opponent-model learning rates", reps, lrs.len())?;
        let groups = n - 1;
        let rows = nets.len();
        let width = groups * a * a;
        let out = self.critic.forward(Input::U8(obs), nets)?;
        self.d_out.clear();
        self.d_out.resize(out.len(), 0.0);
        let replica_of = |r: usize| (nets[r] as usize / n).min(reps - 1);
        let mut trained = vec![0usize; reps];
        for r in (0..rows).filter(|&r| train[r]) {
            trained[replica_of(r)] += 1;
        }
        let trained: Vec<f32> = trained.iter().map(|&t| t.max(1) as f32).collect();
        let mut tallies: Vec<Tally> = (0..reps).map(|_| Tally::new(n, a)).collect();
        let mut losses = vec![0.0f64; reps];
        for r in 0..rows {
            let (rep, i) = (replica_of(r), nets[r] as usize % n);
            let t = &mut tallies[rep];
            t.count[i] += 1.0;
            for k in 0..groups {
                let at = r * width + (k * a + own[r] as usize) * a;
                let z = &out[at..at + a];
                let label = others[r * groups + k] as usize;
                let l = t.add((i, k), z, label);
                if train[r] {
                    let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let sum: f32 = z.iter().map(|v| (v - max).exp()).sum();
                    losses[rep] += l;
                    let scale = trained[rep] * groups as f32;
                    for (c, d) in self.d_out[at..at + a].iter_mut().enumerate() {
                        let p = (z[c] - max).exp() / sum;
                        *d = (p - f32::from(u8::from(c == label))) / scale;
                    }
                }
            }
        }
        let mut scores = Vec::with_capacity(reps);
        for ((t, loss), count) in tallies.into_iter().zip(losses).zip(&trained) {
            let train_loss = (loss / (*count as f64 * groups as f64)) as f32;
            if !train_loss.is_finite() {
                return Err(TrainError::NonFinite {
                    update: 0,
                    tensor: "opponent-model loss".into(),
                    value: train_loss,
                });
            }
            scores.push(t.scores(train_loss));
        }
        self.critic.backward(&self.d_out)?;
        step_replicas(&mut self.critic, lrs, n)?;
        Ok(scores)
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
