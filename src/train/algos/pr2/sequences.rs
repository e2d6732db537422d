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
/// sequence as acted, and `reset` `[C, T]`, 1 where a step starts an episode.
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
            next_reset: vec![1; recurrent * arenas],
        }
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
/// the rollout and `reset` `[T, B]` its episode starts.
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
                self.kept[arena] += 1;
            }
        }
    }
}
