//! The replay of the team learners (VDN, QMIX): one entry per arena and step, a *team
//! transition*: every learner's input row before and after, their actions, the team's reward
//! (the sum of the learners'), whether the rules ended the episode, and with a mixer the arena's
//! global state before and after. Minibatches are whole teams: the newest `cer` entries plus
//! uniform samples, as IQL's.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use crate::components::StepBuffers;
use crate::rng::below;
use crate::train::kit::explore::max_legal;
use crate::train::kit::replay::{ReplayColumns, Ring};
use crate::train::tensors::Column;

/// The widths of one team transition: N learners, D input bytes per learner row, S global
/// state bytes (0 without a mixer that reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TeamShape {
    pub learners: usize,
    pub input: usize,
    pub state: usize,
    pub actions: usize,
}

/// A ring of team transitions, one column per field.
pub(crate) struct TeamReplay {
    pub(crate) ring: Ring,
    shape: TeamShape,
    /// `[C, N x D]`.
    obs: Vec<u8>,
    next: Vec<u8>,
    /// `[C, N]`.
    action: Vec<u32>,
    reward: Vec<f32>,
    /// 1 where the rules ended the episode (no bootstrap); a truncation keeps 0 and bootstraps
    /// from the final observations and state.
    terminated: Vec<f32>,
    /// `[C, S]`.
    state: Vec<u8>,
    next_state: Vec<u8>,
    /// `[C, N x A]` the successors' legal actions where the substrate masks some, else empty.
    next_mask: Vec<u8>,
}

impl ReplayColumns for TeamReplay {
    fn ring(&mut self) -> &mut Ring {
        &mut self.ring
    }

    fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        let actions = self.shape.actions as u32;
        let mut columns = vec![
            ("obs", Column::U8(&mut self.obs)),
            ("next", Column::U8(&mut self.next)),
            ("action", Column::U32(&mut self.action, actions)),
            ("reward", Column::F32(&mut self.reward)),
            ("terminated", Column::F32(&mut self.terminated)),
            ("state", Column::U8(&mut self.state)),
            ("next_state", Column::U8(&mut self.next_state)),
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

impl TeamReplay {
    /// An empty replay of `capacity` team transitions.
    pub(crate) fn new(capacity: usize, shape: TeamShape) -> TeamReplay {
        let (n, d, s) = (shape.learners, shape.input, shape.state);
        TeamReplay {
            ring: Ring::new(capacity),
            shape,
            obs: vec![0; capacity * n * d],
            next: vec![0; capacity * n * d],
            action: vec![0; capacity * n],
            reward: vec![0.0; capacity],
            terminated: vec![0.0; capacity],
            state: vec![0; capacity * s],
            next_state: vec![0; capacity * s],
            next_mask: Vec::new(),
        }
    }

    /// Keeps each entry's successor action masks (a substrate that masks actions).
    pub(crate) fn keep_masks(&mut self) {
        let per = self.shape.learners * self.shape.actions;
        self.next_mask = vec![1; self.reward.len() * per];
    }

    /// Adds one environment step of every arena: the learners' input rows `obs` before and
    /// `next` after (`[B x N, D]`, successors from the final observations where episodes
    /// ended), the actions `taken` (`[B x N]`), the rewards and terminations of `b`, and the
    /// global states before and after (`[B, S]`, empty without a mixer), the successors'
    /// masks `next_mask` (`[B x N, A]`, empty without masks). Returns the entries evicted.
    pub(crate) fn insert_step(
        &mut self,
        (obs, next, next_mask): (&[u8], &[u8], &[u8]),
        taken: &[u32],
        b: &StepBuffers,
        (state, next_state): (&[u8], &[u8]),
    ) -> u64 {
        let (n, w, s) = (
            self.shape.learners,
            self.shape.learners * self.shape.input,
            self.shape.state,
        );
        let mut evicted = 0;
        for k in 0..b.terminated.len() {
            let i = self.ring.head();
            self.obs[i * w..(i + 1) * w].copy_from_slice(&obs[k * w..(k + 1) * w]);
            self.next[i * w..(i + 1) * w].copy_from_slice(&next[k * w..(k + 1) * w]);
            self.action[i * n..(i + 1) * n].copy_from_slice(&taken[k * n..(k + 1) * n]);
            self.reward[i] = b.rewards[k * n..(k + 1) * n].iter().sum();
            self.terminated[i] = f32::from(b.terminated[k] != 0);
            if s > 0 {
                self.state[i * s..(i + 1) * s].copy_from_slice(&state[k * s..(k + 1) * s]);
                let after = &next_state[k * s..(k + 1) * s];
                self.next_state[i * s..(i + 1) * s].copy_from_slice(after);
            }
            if !self.next_mask.is_empty() {
                let per = n * self.shape.actions;
                let row = &next_mask[k * per..(k + 1) * per];
                self.next_mask[i * per..(i + 1) * per].copy_from_slice(row);
            }
            evicted += u64::from(self.ring.advance());
        }
        evicted
    }
}

/// Each arena's global state after a step (`[B, S]`): the state, or the final state where the
/// episode ended (the reset's state starts another episode and is no successor).
pub(crate) fn successor_state(b: &StepBuffers, out: &mut Vec<u8>) {
    let s = b.state_width;
    out.clear();
    for k in 0..b.terminated.len() {
        let ended = b.terminated[k] != 0 || b.truncated[k] != 0;
        let src = if ended { &b.final_state } else { &b.state };
        out.extend_from_slice(&src[k * s..(k + 1) * s]);
    }
}

/// A minibatch of P team transitions copied out of the replay.
#[derive(Default)]
pub(crate) struct TeamBatch {
    /// `[P x N, D]`.
    pub obs: Vec<u8>,
    pub next: Vec<u8>,
    /// `[P x N]`.
    pub actions: Vec<u32>,
    /// `[P]`.
    pub rewards: Vec<f32>,
    pub terminated: Vec<f32>,
    /// `[P, S]`.
    pub state: Vec<u8>,
    pub next_state: Vec<u8>,
    /// `[P x N, A]` the successors' legal actions; empty without masks.
    pub next_mask: Vec<u8>,
}

impl TeamBatch {
    /// The newest `cer` entries plus uniform samples, `size` in all.
    pub(crate) fn fill(
        &mut self,
        replay: &TeamReplay,
        sampler: &mut ChaCha8Rng,
        (size, cer): (usize, usize),
    ) {
        let TeamShape {
            learners: n,
            input: d,
            state: s,
            ..
        } = replay.shape;
        let (w, len) = (n * d, replay.ring.len);
        for v in [
            &mut self.obs,
            &mut self.next,
            &mut self.state,
            &mut self.next_state,
            &mut self.next_mask,
        ] {
            v.clear();
        }
        self.actions.clear();
        self.rewards.clear();
        self.terminated.clear();
        for k in 0..size {
            let i = if k < cer.min(len) {
                replay.ring.newest(k)
            } else {
                below(sampler.next_u32(), len as u32) as usize
            };
            self.obs.extend_from_slice(&replay.obs[i * w..(i + 1) * w]);
            self.next
                .extend_from_slice(&replay.next[i * w..(i + 1) * w]);
            self.actions
                .extend_from_slice(&replay.action[i * n..(i + 1) * n]);
            self.rewards.push(replay.reward[i]);
            self.terminated.push(replay.terminated[i]);
            self.state
                .extend_from_slice(&replay.state[i * s..(i + 1) * s]);
            self.next_state
                .extend_from_slice(&replay.next_state[i * s..(i + 1) * s]);
            if !replay.next_mask.is_empty() {
                let per = n * replay.shape.actions;
                self.next_mask
                    .extend_from_slice(&replay.next_mask[i * per..(i + 1) * per]);
            }
        }
    }

    /// The best legal value of each of the `[P x N, A]` successor rows `values` (every action
    /// where the substrate masks none): what a greedy target bootstraps from.
    pub(crate) fn best_next(&self, values: &[f32], actions: usize) -> Vec<f32> {
        let mask = (!self.next_mask.is_empty()).then_some(&self.next_mask[..]);
        (values.chunks_exact(actions).enumerate())
            .map(|(row, q)| max_legal(q, mask, row))
            .collect()
    }

    /// Teams in the minibatch.
    pub(crate) fn teams(&self) -> usize {
        self.rewards.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    /// Two arenas of two learners: an entry per arena with the team's summed reward, both
    /// learners' rows and actions, the termination, and the states before and after; a
    /// minibatch of the newest entries reads them back.
    #[test]
    fn an_entry_is_a_team_transition() {
        let shape = TeamShape {
            learners: 2,
            input: 3,
            state: 2,
            actions: 5,
        };
        let mut replay = TeamReplay::new(4, shape);
        let b = StepBuffers {
            rewards: vec![1.0, 2.5, -1.0, 0.25],
            terminated: vec![0, 1],
            truncated: vec![0, 0],
            ..Default::default()
        };
        let obs: Vec<u8> = (0..12).collect();
        let next: Vec<u8> = (100..112).collect();
        let states = ([1, 2, 3, 4], [5, 6, 7, 8]);
        let evicted = replay.insert_step(
            (&obs, &next, &[]),
            &[0, 1, 2, 3],
            &b,
            (&states.0, &states.1),
        );
        assert_eq!((evicted, replay.ring.len), (0, 2));
        let mut mb = TeamBatch::default();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        mb.fill(&replay, &mut rng, (2, 2));
        // The newest first: arena 1, then arena 0.
        assert_eq!(mb.rewards, [-0.75, 3.5]);
        assert_eq!(mb.terminated, [1.0, 0.0]);
        assert_eq!(mb.actions, [2, 3, 0, 1]);
        assert_eq!(&mb.obs[..6], &obs[6..]);
        assert_eq!(&mb.next[6..], &next[..6]);
        assert_eq!(mb.state, [3, 4, 1, 2]);
        assert_eq!(mb.next_state, [7, 8, 5, 6]);
        assert_eq!(mb.teams(), 2);
        // Three more arenas' steps overwrite the oldest.
        let evicted = replay.insert_step(
            (&obs, &next, &[]),
            &[0, 1, 2, 3],
            &b,
            (&states.0, &states.1),
        );
        assert_eq!((evicted, replay.ring.len), (0, 4));
        let evicted = replay.insert_step(
            (&obs, &next, &[]),
            &[0, 1, 2, 3],
            &b,
            (&states.0, &states.1),
        );
        assert_eq!((evicted, replay.ring.len), (2, 4));
    }

    /// With masks kept, a minibatch's bootstrap is each learner's best legal successor value,
    /// never a masked action's, however large.
    #[test]
    fn the_bootstrap_takes_the_best_legal_successor_action() {
        let shape = TeamShape {
            learners: 2,
            input: 1,
            state: 0,
            actions: 3,
        };
        let mut replay = TeamReplay::new(2, shape);
        replay.keep_masks();
        let b = StepBuffers {
            rewards: vec![0.0, 0.0],
            terminated: vec![0],
            truncated: vec![0],
            ..Default::default()
        };
        // Learner 0 may take actions 0 and 2, learner 1 only action 1.
        let mask = [1, 0, 1, 0, 1, 0];
        replay.insert_step((&[0, 0], &[1, 1], &mask), &[0, 0], &b, (&[], &[]));
        let mut mb = TeamBatch::default();
        mb.fill(&replay, &mut ChaCha8Rng::seed_from_u64(0), (1, 1));
        let values = [1.0, 9.0, 2.0, 7.0, 3.0, 8.0];
        assert_eq!(mb.best_next(&values, 3), [2.0, 3.0]);
        // Without masks every action counts.
        let mut plain = TeamReplay::new(2, shape);
        plain.insert_step((&[0, 0], &[1, 1], &[]), &[0, 0], &b, (&[], &[]));
        mb.fill(&plain, &mut ChaCha8Rng::seed_from_u64(0), (1, 1));
        assert_eq!(mb.best_next(&values, 3), [9.0, 8.0]);
    }

    /// Where an episode ended the successor state is the final one, not the reset's.
    #[test]
    fn successor_states_are_final_where_episodes_ended() {
        let b = StepBuffers {
            state_width: 2,
            state: vec![1, 2, 3, 4, 5, 6],
            final_state: vec![9, 9, 8, 8, 7, 7],
            terminated: vec![1, 0, 0],
            truncated: vec![0, 1, 0],
            ..Default::default()
        };
        let mut out = Vec::new();
        successor_state(&b, &mut out);
        assert_eq!(out, [9, 9, 8, 8, 5, 6]);
    }
}
