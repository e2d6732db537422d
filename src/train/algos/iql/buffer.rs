//! IQL's transitions: the struct-of-arrays replay ring, the minibatches drawn from it (the
//! newest `cer` rows plus uniform samples), and the learner step on a minibatch: targets from
//! the target networks, a Huber step on the online networks, a Polyak update.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use crate::components::StepBuffers;
use crate::critic::{Critic, Input};
use crate::rng::below;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::kit::explore::max_legal;
use crate::train::kit::q_head::QHead;
use crate::train::kit::replay::{ReplayColumns, Ring};
use crate::train::kit::schedule::StepValues;
use crate::train::tensors::Column;

// ------------------------------------------------------------------------------------------
// Replay
// ------------------------------------------------------------------------------------------

/// A ring buffer of transitions, one column per field.
pub(super) struct Replay {
    pub(super) ring: Ring,
    width: usize,
    obs: Vec<u8>,
    next: Vec<u8>,
    action: Vec<u32>,
    reward: Vec<f32>,
    /// 1 where the rules ended the episode (no bootstrap); a truncation keeps 0 and its `next`
    /// is the episode's final observation.
    terminated: Vec<f32>,
    /// The row's network (0 with `shared`, else the learner's slot).
    net: Vec<u32>,
    /// With opponent models: the learner's slot and the others' actions `[C, N-1]`.
    slot: Vec<u32>,
    others: Vec<u32>,
    /// Where the substrate masks actions: the successor's legal actions `[C, A]` (the target
    /// bootstraps from the best legal one); empty otherwise.
    next_mask: Vec<u8>,
    groups: usize,
    /// Bounds of the integer columns (checked on restore): actions, networks.
    actions: u32,
    nets: u32,
}

impl ReplayColumns for Replay {
    fn ring(&mut self) -> &mut Ring {
        &mut self.ring
    }

    fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        let learners = self.groups as u32 + 1;
        let mut columns = vec![
            ("obs", Column::U8(&mut self.obs)),
            ("next", Column::U8(&mut self.next)),
            ("action", Column::U32(&mut self.action, self.actions)),
            ("reward", Column::F32(&mut self.reward)),
            ("terminated", Column::F32(&mut self.terminated)),
            ("net", Column::U32(&mut self.net, self.nets)),
            ("slot", Column::U32(&mut self.slot, learners)),
            ("others", Column::U32(&mut self.others, self.actions)),
        ];
        if !self.next_mask.is_empty() {
            columns.push(("next_mask", Column::U8(&mut self.next_mask)));
        }
        columns
    }

    fn items_per_entry(&self) -> u64 {
        1
    }
}

impl Replay {
    /// An empty replay of `capacity` rows of `width` input bytes; with `groups` other
    /// learners' actions per row; actions below `actions`, networks below `nets`.
    pub(super) fn new(
        capacity: usize,
        width: usize,
        groups: usize,
        (actions, nets): (usize, usize),
    ) -> Replay {
        Replay {
            ring: Ring::new(capacity),
            width,
            obs: vec![0; capacity * width],
            next: vec![0; capacity * width],
            action: vec![0; capacity],
            reward: vec![0.0; capacity],
            terminated: vec![0.0; capacity],
            net: vec![0; capacity],
            slot: vec![0; if groups > 0 { capacity } else { 0 }],
            others: vec![0; capacity * groups],
            next_mask: Vec::new(),
            groups,
            actions: actions as u32,
            nets: nets as u32,
        }
    }

    /// Keeps each row's successor action mask (a substrate that masks actions).
    pub(super) fn keep_masks(&mut self) {
        self.next_mask = vec![1; self.action.len() * self.actions as usize];
    }

    /// Adds one environment step of every learner of every arena: input rows `obs` before and
    /// `next` after (the successor rows of [`successor_input`](crate::train::kit::replay::successor_input))
    /// with the successors' masks `next_mask` (`[rows, A]`, empty without masks), the actions
    /// `taken`, rewards and terminations from `b`, each row's network; with `opponents`, each
    /// row's slot and the others' actions too. Returns the rows evicted.
    pub(super) fn insert_step(
        &mut self,
        (obs, next, next_mask): (&[u8], &[u8], &[u8]),
        taken: &[u32],
        b: &StepBuffers,
        nets: &[u32],
        n: usize,
        opponents: bool,
    ) -> u64 {
        let (w, mut evicted) = (self.width, 0);
        for r in 0..taken.len() {
            let i = self.ring.head();
            if opponents {
                let (base, slot) = (r - r % n, r % n);
                self.slot[i] = slot as u32;
                let others = (0..n).filter(|&j| j != slot).map(|j| taken[base + j]);
                for (o, v) in self.others[i * self.groups..(i + 1) * self.groups]
                    .iter_mut()
                    .zip(others)
                {
                    *o = v;
                }
            }
            self.obs[i * w..(i + 1) * w].copy_from_slice(&obs[r * w..(r + 1) * w]);
            self.next[i * w..(i + 1) * w].copy_from_slice(&next[r * w..(r + 1) * w]);
            self.action[i] = taken[r];
            self.reward[i] = b.rewards[r];
            self.terminated[i] = f32::from(b.terminated[r / n] != 0);
            self.net[i] = nets[r];
            if !self.next_mask.is_empty() {
                let a = self.actions as usize;
                self.next_mask[i * a..(i + 1) * a].copy_from_slice(&next_mask[r * a..(r + 1) * a]);
            }
            evicted += u64::from(self.ring.advance());
        }
        evicted
    }
}

// ------------------------------------------------------------------------------------------
// Minibatches
// ------------------------------------------------------------------------------------------

/// A minibatch's rows copied out of the replay (so a shared replay is locked only while
/// copying).
#[derive(Default)]
pub(super) struct Minibatch {
    pub(super) obs: Vec<u8>,
    next: Vec<u8>,
    nets: Vec<u32>,
    actions: Vec<u32>,
    rewards: Vec<f32>,
    terminated: Vec<f32>,
    /// `[rows, A]` the successors' legal actions; empty without masks.
    next_mask: Vec<u8>,
    targets: Vec<f32>,
    pub(super) slots: Vec<u32>,
    pub(super) others: Vec<u32>,
}

impl Minibatch {
    /// Empties every column.
    fn clear(&mut self) {
        self.obs.clear();
        self.next.clear();
        self.nets.clear();
        self.actions.clear();
        self.rewards.clear();
        self.terminated.clear();
        self.next_mask.clear();
        self.slots.clear();
        self.others.clear();
    }

    /// The newest `cer` rows plus uniform samples, `batch_size` in all.
    pub(super) fn fill(&mut self, replay: &Replay, sampler: &mut ChaCha8Rng, cfg: &RunConfig) {
        let (d, g, len) = (replay.width, replay.groups, replay.ring.len);
        self.clear();
        for k in 0..cfg.iql.batch_size {
            let i = if k < cfg.iql.cer.min(len) {
                replay.ring.newest(k)
            } else {
                below(sampler.next_u32(), len as u32) as usize
            };
            self.obs.extend_from_slice(&replay.obs[i * d..(i + 1) * d]);
            self.next
                .extend_from_slice(&replay.next[i * d..(i + 1) * d]);
            self.nets.push(replay.net[i]);
            self.actions.push(replay.action[i]);
            self.rewards.push(replay.reward[i]);
            self.terminated.push(replay.terminated[i]);
            if !replay.next_mask.is_empty() {
                let a = replay.actions as usize;
                self.next_mask
                    .extend_from_slice(&replay.next_mask[i * a..(i + 1) * a]);
            }
            if g > 0 {
                self.slots.push(replay.slot[i]);
                self.others
                    .extend_from_slice(&replay.others[i * g..(i + 1) * g]);
            }
        }
    }

    // --------------------------------------------------------------------------------------
    // Targets and update
    // --------------------------------------------------------------------------------------

    /// The TD targets from the successor values `q_next` (`[rows, A]`): each bootstraps from
    /// the best successor action, the best legal one where the substrate masks some.
    fn set_targets(&mut self, q_next: &[f32], actions: usize, gamma: f32) {
        self.targets.clear();
        let mask = (!self.next_mask.is_empty()).then_some(&self.next_mask[..]);
        for (k, row) in q_next.chunks_exact(actions).enumerate() {
            let (reward, done) = (self.rewards[k], self.terminated[k]);
            let target = td_target(reward, done, max_legal(row, mask, k), gamma);
            self.targets.push(target);
        }
    }

    /// Targets from the target networks, a step of the value loss (Huber by default, the
    /// head's) on the online networks, a Polyak update with `step`'s factor. Returns the loss.
    pub(super) fn train(
        &mut self,
        critic: &mut Critic,
        step: &StepValues,
        (actions, head): (usize, QHead),
        update: u64,
    ) -> Result<f32, TrainError> {
        let next = critic.forward_target(Input::U8(&self.next), &self.nets)?;
        let q_next = head.q_values(next);
        self.set_targets(&q_next, actions, step.gamma);
        critic.forward(Input::U8(&self.obs), &self.nets)?;
        critic.loss_backward(&head.loss(&self.actions, &self.targets))?;
        let value = critic.last_loss()?;
        if !value.is_finite() {
            return Err(TrainError::NonFinite {
                update: update + 1,
                tensor: "loss".into(),
                value,
            });
        }
        critic.step(&step.adam)?;
        critic.polyak(step.tau)?;
        Ok(value)
    }
}

/// IQL's one-step target `r + gamma (1 - terminated) max_a Q_target(next, a)`: a truncated
/// transition keeps `terminated` 0 and its `next` is the final observation (Pardo et al., 2018),
/// so the time limit bootstraps instead of cutting.
pub fn td_target(reward: f32, terminated: f32, next_best: f32, gamma: f32) -> f32 {
    reward + gamma * (1.0 - terminated) * next_best
}

#[cfg(test)]
mod tests {
    use rand_core::SeedableRng;

    use super::*;

    /// With masks kept, each row's successor mask comes back with it in a minibatch, and the
    /// target bootstraps from the best legal successor value.
    #[test]
    fn rows_keep_their_successor_masks() {
        let mut replay = Replay::new(4, 1, 0, (3, 1));
        replay.keep_masks();
        let b = StepBuffers {
            rewards: vec![0.0, 0.0],
            terminated: vec![0],
            ..Default::default()
        };
        // Two learners of one arena: learner 0 may take actions 0 and 2, learner 1 action 1.
        let mask = [1, 0, 1, 0, 1, 0];
        replay.insert_step((&[0, 0], &[1, 1], &mask), &[0, 0], &b, &[0, 0], 2, false);
        let cfg = RunConfig {
            iql: crate::train::config::IqlConfig {
                batch_size: 2,
                cer: 2,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut mb = Minibatch::default();
        mb.fill(&replay, &mut ChaCha8Rng::seed_from_u64(0), &cfg);
        // The newest first: learner 1's row, then learner 0's.
        assert_eq!(mb.next_mask, [0, 1, 0, 1, 0, 1]);
        // Rewards 0, not terminated, gamma 0.5: half the best legal value.
        mb.set_targets(&[7.0, 3.0, 8.0, 1.0, 9.0, 2.0], 3, 0.5);
        assert_eq!(mb.targets, [1.5, 1.0]);
    }
}
