//! PR2-IQL's storage: the sequence replay (whole rollouts of single arenas, the final
//! observations of their truncated episodes beside them) and the rollout it is filled from.

use crate::components::StepBuffers;
use crate::train::kit::replay::{ReplayColumns, Ring};
use crate::train::tensors::Column;

/// Whole rollouts of single arenas, one column per field: `obs` `[C, T+1, N, D]`, `own`
/// `[C, T, N]` actions, `rewards` `[C, T, N]`, `terminated` and `truncated` `[C, T]`, and
/// `finals` `[C, K, N, D]`: the final observations of the sequence's truncated episodes in
/// order (K = `ceil(T / max_steps)`, the most truncations a sequence can hold), which their
/// last steps bootstrap from (the observation after a truncation is the reset's). With a
/// recurrent critic (`state` g > 0) also `h0` `[C, N, g]`, the hidden states entering each
/// sequence as acted, and `reset` `[C, T]`, 1 where a step starts an episode. Where the
/// substrate masks actions also `mask` `[C, T+1, N, A]` and `final_mask` `[C, K, N, A]`, each
/// observation's action mask, which the targets' `max` keeps to (empty otherwise).
pub(super) struct SequenceReplay {
    pub(super) ring: Ring,
    pub(super) steps: usize,
    pub(super) learners: usize,
    pub(super) width: usize,
    /// K: final observations per sequence.
    pub(super) finals_per: usize,
    pub(super) obs: Vec<u8>,
    pub(super) actions: Vec<u32>,
    pub(super) rewards: Vec<f32>,
    pub(super) terminated: Vec<f32>,
    pub(super) truncated: Vec<f32>,
    pub(super) finals: Vec<u8>,
    /// g, the hidden-state width (0 for an MLP).
    pub(super) state: usize,
    pub(super) h0: Vec<f32>,
    pub(super) reset: Vec<u8>,
    pub(super) mask: Vec<u8>,
    pub(super) final_mask: Vec<u8>,
    /// `[B]` whether each arena's next step acted starts an episode (a recurrent critic's live
    /// state: 1 before the first step).
    pub(super) next_reset: Vec<u8>,
    /// Actions per learner (the bound of `actions`, checked on restore).
    pub(super) action_count: u32,
}

impl ReplayColumns for SequenceReplay {
    fn ring(&mut self) -> &mut Ring {
        &mut self.ring
    }

    fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        let mut columns = vec![
            ("obs", Column::U8(&mut self.obs)),
            ("actions", Column::U32(&mut self.actions, self.action_count)),
            ("rewards", Column::F32(&mut self.rewards)),
            ("terminated", Column::F32(&mut self.terminated)),
            ("truncated", Column::F32(&mut self.truncated)),
            ("finals", Column::U8(&mut self.finals)),
        ];
        if self.state > 0 {
            columns.push(("h0", Column::F32(&mut self.h0)));
            columns.push(("reset", Column::U8(&mut self.reset)));
        }
        if !self.mask.is_empty() {
            columns.push(("mask", Column::U8(&mut self.mask)));
            columns.push(("final_mask", Column::U8(&mut self.final_mask)));
        }
        columns
    }

    fn items_per_entry(&self) -> u64 {
        self.steps as u64
    }

    /// Checkpoints fall between updates: a recurrent critic's episode-start flags of the next
    /// step carry over (the arenas' hidden states are saved beside them).
    fn live(&mut self) -> Vec<(&'static str, Column<'_>)> {
        if self.state == 0 {
            return Vec::new();
        }
        vec![("next_reset", Column::U8(&mut self.next_reset))]
    }
}

impl SequenceReplay {
    /// An empty replay of `capacity` sequences of `steps` steps of `learners` rows of `width`
    /// bytes with `finals_per` final observations each, actions below `actions`, hidden
    /// states of `state` floats per learner (0 for an MLP) and `arenas` arenas acting.
    pub(super) fn new(
        capacity: usize,
        (steps, learners, finals_per): (usize, usize, usize),
        (width, state): (usize, usize),
        (actions, arenas): (usize, usize),
    ) -> SequenceReplay {
        let recurrent = usize::from(state > 0);
        SequenceReplay {
            ring: Ring::new(capacity),
            steps,
            learners,
            width,
            finals_per,
            action_count: actions as u32,
            obs: vec![0; capacity * (steps + 1) * learners * width],
            actions: vec![0; capacity * steps * learners],
            rewards: vec![0.0; capacity * steps * learners],
            terminated: vec![0.0; capacity * steps],
            truncated: vec![0.0; capacity * steps],
            finals: vec![0; capacity * finals_per * learners * width],
            state,
            h0: vec![0.0; capacity * learners * state],
            reset: vec![0; recurrent * capacity * steps],
            mask: Vec::new(),
            final_mask: Vec::new(),
            next_reset: vec![1; recurrent * arenas],
        }
    }

    /// Keeps every observation's action mask from now on (a substrate with masks; a
    /// checkpoint without them restores with every action legal).
    pub(super) fn keep_masks(&mut self) {
        let (c, n, a) = (
            self.ring.capacity,
            self.learners,
            self.action_count as usize,
        );
        self.mask = vec![1; c * (self.steps + 1) * n * a];
        self.final_mask = vec![1; c * self.finals_per * n * a];
    }

    /// Learner `i`'s action mask at the observation a target bootstraps from: sequence `c`'s
    /// step `t` (`t = T`: the observation after the last step), or with `final_k` its
    /// `final_k`-th final observation; `None` without masks.
    pub(super) fn successor_mask(
        &self,
        c: usize,
        (t, final_k): (usize, Option<usize>),
        i: usize,
    ) -> Option<&[u8]> {
        if self.mask.is_empty() {
            return None;
        }
        let (n, a) = (self.learners, self.action_count as usize);
        let (column, row) = match final_k {
            Some(k) => (&self.final_mask, (c * self.finals_per + k) * n + i),
            None => (&self.mask, (c * (self.steps + 1) + t) * n + i),
        };
        Some(&column[row * a..(row + 1) * a])
    }

    /// Copies arena `b`'s sequence out of a rollout laid out `[T(+1), B, N, ...]`; returns
    /// whether the oldest sequence was evicted.
    pub(super) fn push(&mut self, roll: &Rollout, b: usize) -> bool {
        let (t_max, n, d, arenas) = (self.steps, self.learners, self.width, roll.arenas);
        let c = self.ring.head();
        for t in 0..=t_max {
            let src = ((t * arenas + b) * n) * d;
            let dst = ((c * (t_max + 1) + t) * n) * d;
            self.obs[dst..dst + n * d].copy_from_slice(&roll.obs[src..src + n * d]);
        }
        for t in 0..t_max {
            let src = (t * arenas + b) * n;
            let dst = (c * t_max + t) * n;
            self.actions[dst..dst + n].copy_from_slice(&roll.actions[src..src + n]);
            self.rewards[dst..dst + n].copy_from_slice(&roll.rewards[src..src + n]);
            self.terminated[c * t_max + t] = roll.terminated[t * arenas + b];
            self.truncated[c * t_max + t] = roll.truncated[t * arenas + b];
        }
        let per = self.finals_per * n * d;
        self.finals[c * per..(c + 1) * per].copy_from_slice(&roll.finals[b * per..(b + 1) * per]);
        if !self.mask.is_empty() {
            let na = n * self.action_count as usize;
            for t in 0..=t_max {
                let (src, dst) = ((t * arenas + b) * na, (c * (t_max + 1) + t) * na);
                self.mask[dst..dst + na].copy_from_slice(&roll.mask[src..src + na]);
            }
            let per = self.finals_per * na;
            self.final_mask[c * per..(c + 1) * per]
                .copy_from_slice(&roll.final_mask[b * per..(b + 1) * per]);
        }
        if self.state > 0 {
            let h = n * self.state;
            self.h0[c * h..(c + 1) * h].copy_from_slice(&roll.h0[b * h..(b + 1) * h]);
            for t in 0..t_max {
                self.reset[c * t_max + t] = roll.reset[t * arenas + b];
            }
        }
        self.ring.advance()
    }
}

/// One rollout of every arena: `obs` `[T+1, B, N, D]`, `actions`/`rewards` `[T, B, N]`,
/// `terminated`/`truncated` `[T, B]`, `finals` `[B, K, N, D]` with `kept` `[B]` of them
/// written this rollout; with a recurrent critic `h0` `[B, N, g]` the hidden states entering
/// the rollout and `reset` `[T, B]` its episode starts; where the substrate masks actions
/// `mask` `[T+1, B, N, A]` and `final_mask` `[B, K, N, A]` beside `obs` and `finals`.
pub(super) struct Rollout {
    pub(super) arenas: usize,
    pub(super) obs: Vec<u8>,
    pub(super) actions: Vec<u32>,
    pub(super) rewards: Vec<f32>,
    pub(super) terminated: Vec<f32>,
    pub(super) truncated: Vec<f32>,
    pub(super) finals: Vec<u8>,
    pub(super) kept: Vec<usize>,
    pub(super) h0: Vec<f32>,
    pub(super) reset: Vec<u8>,
    pub(super) mask: Vec<u8>,
    pub(super) final_mask: Vec<u8>,
    /// Mask bytes of one arena's observation (`N x A`; 0 without masks).
    mask_width: usize,
}

impl Rollout {
    /// Empty buffers for `t` steps of `b` arenas of `n` learners with `d`-byte observations
    /// (hidden states of `g` floats, 0 without recurrence), `k` final observations per arena.
    pub(super) fn new((t, b): (usize, usize), (n, d, g): (usize, usize, usize), k: usize) -> Self {
        Rollout {
            arenas: b,
            obs: vec![0; (t + 1) * b * n * d],
            actions: vec![0; t * b * n],
            rewards: vec![0.0; t * b * n],
            terminated: vec![0.0; t * b],
            truncated: vec![0.0; t * b],
            finals: vec![0; b * k * n * d],
            kept: vec![0; b],
            h0: vec![0.0; b * n * g],
            reset: vec![0; usize::from(g > 0) * t * b],
            mask: Vec::new(),
            final_mask: Vec::new(),
            mask_width: 0,
        }
    }

    /// Keeps the action masks (`A` bytes per learner) beside the observations.
    pub(super) fn keep_masks(&mut self, (t, n, k, a): (usize, usize, usize, usize)) {
        let b = self.arenas;
        self.mask_width = n * a;
        self.mask = vec![1; (t + 1) * b * n * a];
        self.final_mask = vec![1; b * k * n * a];
    }

    /// Records the masks `mask` (`[B, N, A]`) of the observations of step `t` (`t = T`: the
    /// last); nothing without masks.
    pub(super) fn record_mask(&mut self, t: usize, mask: Option<&[u8]>) {
        let per = self.arenas * self.mask_width;
        if let Some(mask) = mask.filter(|_| per > 0) {
            self.mask[t * per..(t + 1) * per].copy_from_slice(&mask[..per]);
        }
    }

    /// Before acting step `t` (recurrent critic): records which arenas start an episode there
    /// (`next_reset`) and at `t = 0` the hidden states `hidden` `[B, N, g]` entering it.
    pub(super) fn before_step(&mut self, t: usize, next_reset: &[u8], hidden: &[f32]) {
        let b = self.arenas;
        self.reset[t * b..(t + 1) * b].copy_from_slice(next_reset);
        if t == 0 {
            self.h0.copy_from_slice(hidden);
        }
    }

    /// Records step `t`'s episode ends from `buf`, keeping each truncated arena's final
    /// observation (`[N, D]` bytes) in its next free slot of `finals`.
    pub(super) fn record_ends(&mut self, t: usize, buf: &StepBuffers, nd: usize) {
        let (b, per) = (self.arenas, self.finals.len() / self.arenas.max(1));
        for arena in 0..b {
            let truncated = buf.truncated[arena] != 0;
            self.terminated[t * b + arena] = f32::from(buf.terminated[arena] != 0);
            self.truncated[t * b + arena] = f32::from(truncated);
            let at = arena * per + self.kept[arena] * nd;
            if truncated && at + nd <= (arena + 1) * per {
                let src = &buf.final_obs[arena * nd..(arena + 1) * nd];
                self.finals[at..at + nd].copy_from_slice(src);
                let na = self.mask_width;
                if na > 0 {
                    // The final mask into the same slot: `na` bytes an observation, K slots.
                    let kp = self.final_mask.len() / (b * na);
                    let dst = (arena * kp + self.kept[arena]) * na;
                    self.final_mask[dst..dst + na]
                        .copy_from_slice(&buf.final_action_mask[arena * na..(arena + 1) * na]);
                }
                self.kept[arena] += 1;
            }
        }
    }
}

/// Test fixtures: a replay holding one sequence with action masks.
#[cfg(test)]
pub(super) mod fixture {
    use super::{Rollout, SequenceReplay};
    use crate::components::StepBuffers;

    /// Steps, learners, actions, final observations per sequence of [`masked_replay`].
    pub(in crate::train::algos::pr2) const T: usize = 4;
    pub(in crate::train::algos::pr2) const N: usize = 2;
    pub(in crate::train::algos::pr2) const A: usize = 3;
    const K: usize = 2;

    /// Learner `i`'s mask at the observation of step `t` in arena `b`: action `(t + i + b) % 3`
    /// illegal.
    pub(in crate::train::algos::pr2) fn obs_mask(t: usize, i: usize, b: usize) -> [u8; A] {
        std::array::from_fn(|a| u8::from(a != (t + i + b) % A))
    }

    /// Whether arena `b`'s episode is truncated at step `t`: arena 1 at steps 1 and 3, arena 0
    /// never.
    pub(in crate::train::algos::pr2) fn truncated(t: usize, b: usize) -> bool {
        b == 1 && (t == 1 || t == 3)
    }

    /// Learner `i`'s mask at the final observation of arena `b`'s truncation at step `t`: only
    /// action `(i + t) % 3` legal.
    pub(in crate::train::algos::pr2) fn final_mask(t: usize, i: usize, b: usize) -> [u8; A] {
        std::array::from_fn(|a| u8::from(b == 1 && a == (i + t) % A))
    }

    /// The mask a trained row (arena 1's step `t`, learner `i`) bootstraps under.
    pub(in crate::train::algos::pr2) fn boot_mask(t: usize, i: usize) -> [u8; A] {
        if truncated(t, 1) {
            final_mask(t, i, 1)
        } else {
            obs_mask(t + 1, i, 1)
        }
    }

    /// Values for a bootstrap row under `mask`: 100 for the illegal actions, `a + 1` for the
    /// legal ones; and the best legal one, which the target must take.
    pub(in crate::train::algos::pr2) fn values_under(mask: [u8; A]) -> ([f32; A], f32) {
        let values = std::array::from_fn(|a| if mask[a] == 0 { 100.0 } else { a as f32 + 1.0 });
        let best = (0..A).filter(|&a| mask[a] != 0).map(|a| a as f32 + 1.0);
        (values, best.fold(f32::MIN, f32::max))
    }

    /// Two arenas' rollout of `T` steps of `N` learners (1-byte observations, hidden states of
    /// `g` floats); arena 1's, truncated twice, stored as a sequence with its masks.
    pub(in crate::train::algos::pr2) fn masked_replay(g: usize) -> SequenceReplay {
        let mut replay = SequenceReplay::new(2, (T, N, K), (1, g), (A, 2));
        replay.keep_masks();
        let mut roll = Rollout::new((T, 2), (N, 1, g), K);
        roll.keep_masks((T, N, K, A));
        for t in 0..=T {
            let mask: Vec<u8> = (0..2)
                .flat_map(|b| (0..N).flat_map(move |i| obs_mask(t, i, b)))
                .collect();
            roll.record_mask(t, Some(&mask));
        }
        for t in 0..T {
            let buf = StepBuffers {
                rewards: vec![0.0; 2 * N],
                terminated: vec![0, 0],
                truncated: (0..2).map(|b| u8::from(truncated(t, b))).collect(),
                final_obs: vec![7; 2 * N],
                final_action_mask: (0..2)
                    .flat_map(|b| (0..N).flat_map(move |i| final_mask(t, i, b)))
                    .collect(),
                ..Default::default()
            };
            roll.record_ends(t, &buf, N);
            for r in 0..2 * N {
                roll.rewards[t * 2 * N + r] = (10 * t + r) as f32;
            }
        }
        replay.push(&roll, 1);
        replay
    }
}
