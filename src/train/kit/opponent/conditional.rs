//! PR2's conditional opponent models `m_ij(a_j | a_i, o_i)` (`rho: model` reads them): their
//! stack, the hand-built cross-entropy of the taken action's group, scores.

use super::{OpponentNetworks, OpponentScores, Tally, step, two_learners};
use crate::critic::{Chosen, Critic, Input, StackSpec};
use crate::dist::Job;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;

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
    /// One model per learner over `input` bytes, initialised from `cfg.seed`.
    pub fn new(
        cfg: &RunConfig,
        learners: usize,
        actions: usize,
        input: usize,
        (device, job): (&Chosen, &Job),
    ) -> Result<ConditionalModels, TrainError> {
        two_learners(learners)?;
        let single = Self::single_spec(cfg, learners, actions, input);
        let critic = Critic::new(single, cfg.seed ^ 0x7268_6f00, device)?.data_parallel(job);
        Ok(ConditionalModels {
            critic,
            learners,
            actions,
            d_out: Vec::new(),
        })
    }

    /// The models of every replica of `cfg` (seeds x sweep grid points) as one shape, for the
    /// memory preflight.
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

    /// Scores on rows `obs` `[R, D]` of networks `nets` (learner i's is network i) that took
    /// `own` `[R]` while the others took `others` `[R, N-1]`, then takes one cross-entropy step
    /// on them at learning rate `lr`, the gradient averaged over the trained rows. `train` masks
    /// rows out of the step (still scored). Returns the scores.
    pub fn score_and_train(
        &mut self,
        obs: &[u8],
        nets: &[u32],
        (own, others): (&[u32], &[u32]),
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
        let trained = train.iter().filter(|&&t| t).count().max(1) as f32;
        let mut t = Tally::new(n, a);
        let mut loss = 0.0f64;
        for r in 0..rows {
            let i = nets[r] as usize % n;
            t.count[i] += 1.0;
            for k in 0..groups {
                let at = r * width + (k * a + own[r] as usize) * a;
                let z = &out[at..at + a];
                let label = others[r * groups + k] as usize;
                let l = t.add((i, k), z, label);
                if train[r] {
                    let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let sum: f32 = z.iter().map(|v| (v - max).exp()).sum();
                    loss += l;
                    let scale = trained * groups as f32;
                    for (c, d) in self.d_out[at..at + a].iter_mut().enumerate() {
                        let p = (z[c] - max).exp() / sum;
                        *d = (p - f32::from(u8::from(c == label))) / scale;
                    }
                }
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
        let scores = t.scores(train_loss);
        self.critic.backward(&self.d_out)?;
        step(&mut self.critic, lr)?;
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
