//! IQL with recurrent networks (`network: gru`): R2D2-style sequence replay.
//!
//! Every learner row of every arena records one sequence of `rollout` steps per update: the
//! hidden state entering its first step (as acted), each step's input and successor input,
//! action, reward, termination, truncation, and whether the step starts an episode (the engine
//! zeroes the hidden state there). A finished sequence goes into a ring of
//! `replay_capacity / rollout` sequences; the rate limiter counts its `rollout` steps.
//!
//! A minibatch is `batch_size` whole sequences (the newest `cer` of them, then uniform
//! samples). The online networks replay each from its stored hidden state through
//! [`Critic::forward_seq`]; the first `burn_in` steps only warm the state up (zero loss
//! weight). The targets `r + gamma (1 - terminated) max_a Q_target(next, a)` come from
//! [`Critic::forward_target_seq`] over the same sequence with each episode's successor
//! observation inserted after the step that ended it (and after the last step): the inserted
//! step continues the ended episode's history, the step after it starts a new episode with a
//! zero state, so every bootstrap value sees exactly the history its step was acted with.
//! Where the substrate masks actions, each step also keeps its successor's mask and the `max`
//! runs over the successor's legal actions only.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use super::buffer::Replay;
use super::td_target;
use crate::components::StepBuffers;
use crate::critic::loss::loss_and_grad;
use crate::critic::{Critic, Input, Sequences, StackSpec};
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

/// The replay: transitions for an MLP (`rows`), sequences for a GRU (`seqs`, and `rows` left
/// empty); checkpoints save whichever holds the data.
pub(super) struct Store {
    /// The transitions (an MLP's replay).
    pub(super) rows: Replay,
    /// The sequences (a recurrent network's replay).
    pub(super) seqs: Option<SeqReplay>,
}

impl Store {
    /// An empty replay for the networks `spec` (sequences when they are recurrent) of
    /// `replay_capacity` rows, `rows` learner rows acting per step, with `groups` other
    /// learners' actions per row (opponent models); actions and networks below `sizes`.
    pub(super) fn new(
        cfg: &RunConfig,
        spec: &StackSpec,
        (rows, groups): (usize, usize),
        sizes: (usize, usize),
    ) -> Store {
        let (capacity, steps, width) = (cfg.iql.replay_capacity, cfg.rollout, spec.state_width());
        if width == 0 {
            return Store {
                rows: Replay::new(capacity, spec.input, groups, sizes),
                seqs: None,
            };
        }
        Store {
            rows: Replay::new(0, spec.input, groups, sizes),
            seqs: Some(SeqReplay::new(
                (capacity / steps, steps),
                (spec.input, width),
                rows,
                sizes,
            )),
        }
    }

    /// Rate-limiter items per stored entry: one per row, `rollout` per sequence.
    pub(super) fn items_per_step(&self, cfg: &RunConfig) -> usize {
        if self.seqs.is_some() { cfg.rollout } else { 1 }
    }
}

impl ReplayColumns for Store {
    fn ring(&mut self) -> &mut Ring {
        match &mut self.seqs {
            Some(s) => s.ring(),
            None => self.rows.ring(),
        }
    }

    fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        match &mut self.seqs {
            Some(s) => s.columns(),
            None => self.rows.columns(),
        }
    }

    fn items_per_entry(&self) -> u64 {
        match &self.seqs {
            Some(s) => s.items_per_entry(),
            None => self.rows.items_per_entry(),
        }
    }

    fn live(&mut self) -> Vec<(&'static str, Column<'_>)> {
        match &mut self.seqs {
            Some(s) => s.live(),
            None => self.rows.live(),
        }
    }
}

/// One step of every learner row, `[T, rows]` (or `[C, T]` in the ring).
#[derive(Debug, Default)]
struct Steps {
    obs: Vec<u8>,
    next: Vec<u8>,
    /// The successor's action mask, `A` bytes a step (empty where the substrate masks nothing).
    next_mask: Vec<u8>,
    action: Vec<u32>,
    reward: Vec<f32>,
    terminated: Vec<f32>,
    truncated: Vec<f32>,
    reset: Vec<u8>,
}

impl Steps {
    /// Room for `n` steps of `d` input bytes and `m` mask bytes (0 without masks; every
    /// action legal until written).
    fn zeros(n: usize, d: usize, m: usize) -> Steps {
        Steps {
            obs: vec![0; n * d],
            next: vec![0; n * d],
            next_mask: vec![1; n * m],
            action: vec![0; n],
            reward: vec![0.0; n],
            terminated: vec![0.0; n],
            truncated: vec![0.0; n],
            reset: vec![0; n],
        }
    }

    /// Copies step `from` of `src` into step `to` (`d` input bytes each, masks of the same
    /// width on both sides).
    fn copy_step(&mut self, to: usize, src: &Steps, from: usize, d: usize) {
        self.obs[to * d..(to + 1) * d].copy_from_slice(&src.obs[from * d..(from + 1) * d]);
        self.next[to * d..(to + 1) * d].copy_from_slice(&src.next[from * d..(from + 1) * d]);
        let m = self.next_mask.len() / self.action.len().max(1);
        if m > 0 {
            self.next_mask[to * m..(to + 1) * m]
                .copy_from_slice(&src.next_mask[from * m..(from + 1) * m]);
        }
        self.action[to] = src.action[from];
        self.reward[to] = src.reward[from];
        self.terminated[to] = src.terminated[from];
        self.truncated[to] = src.truncated[from];
        self.reset[to] = src.reset[from];
    }
}

/// A ring of sequences of `steps` steps, one column per field, and the sequences being acted.
pub(super) struct SeqReplay {
    pub(super) ring: Ring,
    /// T (`rollout`).
    steps: usize,
    /// Input bytes per step.
    width: usize,
    /// g, the hidden-state width.
    state: usize,
    /// Mask bytes per step: the action count where the substrate masks actions, else 0.
    mask_width: usize,
    /// `[C, T]` per step.
    stored: Steps,
    /// `[C, g]` the hidden state entering each sequence's first step, as acted.
    h0: Vec<f32>,
    /// `[C]` each sequence's network.
    net: Vec<u32>,
    /// The sequences being acted, `[T, rows]` (step-major), and their `[rows, g]` start.
    acting: Steps,
    acting_h0: Vec<f32>,
    /// `[rows]` whether the next step acted starts an episode (1 before the first step).
    next_reset: Vec<u8>,
    /// Bounds of the integer columns (checked on restore): actions, networks.
    actions: u32,
    nets: u32,
}

impl ReplayColumns for SeqReplay {
    fn ring(&mut self) -> &mut Ring {
        &mut self.ring
    }

    fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        let s = &mut self.stored;
        let mut columns = vec![
            ("obs", Column::U8(&mut s.obs)),
            ("next", Column::U8(&mut s.next)),
            ("action", Column::U32(&mut s.action, self.actions)),
            ("reward", Column::F32(&mut s.reward)),
            ("terminated", Column::F32(&mut s.terminated)),
            ("truncated", Column::F32(&mut s.truncated)),
            ("reset", Column::U8(&mut s.reset)),
            ("h0", Column::F32(&mut self.h0)),
            ("net", Column::U32(&mut self.net, self.nets)),
        ];
        if !s.next_mask.is_empty() {
            columns.push(("next_mask", Column::U8(&mut s.next_mask)));
        }
        columns
    }

    fn items_per_entry(&self) -> u64 {
        self.steps as u64
    }

    /// Checkpoints fall between updates, where no sequence is half acted: only the flags
    /// saying which rows start an episode at the next step carry over.
    fn live(&mut self) -> Vec<(&'static str, Column<'_>)> {
        vec![("next_reset", Column::U8(&mut self.next_reset))]
    }
}

impl SeqReplay {
    /// An empty replay of `capacity` sequences of `steps` steps of `width` input bytes, with
    /// hidden states of `state` floats, for `rows` learner rows acting; actions below
    /// `actions`, networks below `nets`.
    pub(super) fn new(
        (capacity, steps): (usize, usize),
        (width, state): (usize, usize),
        rows: usize,
        (actions, nets): (usize, usize),
    ) -> SeqReplay {
        SeqReplay {
            ring: Ring::new(capacity),
            steps,
            width,
            state,
            mask_width: 0,
            stored: Steps::zeros(capacity * steps, width, 0),
            h0: vec![0.0; capacity * state],
            net: vec![0; capacity],
            acting: Steps::zeros(steps * rows, width, 0),
            acting_h0: vec![0.0; rows * state],
            next_reset: vec![1; rows],
            actions: actions as u32,
            nets: nets as u32,
        }
    }

    /// Keeps every step's successor mask of `actions` bytes from now on (a substrate with
    /// action masks); a checkpoint without them restores with every action legal.
    pub(super) fn keep_masks(&mut self, actions: usize) {
        let rows = self.next_reset.len();
        let capacity = self.ring.capacity;
        self.mask_width = actions;
        self.stored.next_mask = vec![1; capacity * self.steps * actions];
        self.acting.next_mask = vec![1; self.steps * rows * actions];
    }

    /// Before acting step `t` of the sequences with `hidden` `[rows, g]` the states entering
    /// it and `obs` the input rows: records the step's episode starts, input, and at `t = 0`
    /// the hidden states training replays from.
    pub(super) fn before_step(&mut self, t: usize, obs: &[u8], hidden: &[f32]) {
        let rows = self.next_reset.len();
        let d = self.width;
        self.acting.reset[t * rows..(t + 1) * rows].copy_from_slice(&self.next_reset);
        self.acting.obs[t * rows * d..(t + 1) * rows * d].copy_from_slice(obs);
        if t == 0 {
            self.acting_h0.copy_from_slice(hidden);
        }
    }

    /// After step `t`: the successor inputs `next` and masks `next_mask` (`[rows, A]`, read
    /// when the replay keeps masks), actions `taken` and the step's rewards and ends from `b`
    /// (`n` learners per arena); rows whose episode ended start one next step.
    pub(super) fn after_step(
        &mut self,
        t: usize,
        (next, next_mask, taken): (&[u8], &[u8], &[u32]),
        b: &StepBuffers,
        n: usize,
    ) {
        let rows = self.next_reset.len();
        let (d, at, m) = (self.width, t * rows, self.mask_width);
        self.acting.next[at * d..(at + rows) * d].copy_from_slice(next);
        if m > 0 {
            self.acting.next_mask[at * m..(at + rows) * m].copy_from_slice(&next_mask[..rows * m]);
        }
        for (r, &action) in taken.iter().enumerate().take(rows) {
            let (term, trunc) = (b.terminated[r / n] != 0, b.truncated[r / n] != 0);
            self.acting.action[at + r] = action;
            self.acting.reward[at + r] = b.rewards[r];
            self.acting.terminated[at + r] = f32::from(term);
            self.acting.truncated[at + r] = f32::from(trunc);
            self.next_reset[r] = u8::from(term || trunc);
        }
    }

    /// Stores every row's finished sequence (row r's network `nets[r]`); returns the sequences
    /// evicted.
    pub(super) fn finish(&mut self, nets: &[u32]) -> u64 {
        let (rows, steps, g) = (self.next_reset.len(), self.steps, self.state);
        let mut evicted = 0;
        for (r, &net) in nets.iter().enumerate().take(rows) {
            let i = self.ring.head();
            for t in 0..steps {
                let d = self.width;
                self.stored
                    .copy_step(i * steps + t, &self.acting, t * rows + r, d);
            }
            self.h0[i * g..(i + 1) * g].copy_from_slice(&self.acting_h0[r * g..(r + 1) * g]);
            self.net[i] = net;
            evicted += u64::from(self.ring.advance());
        }
        evicted
    }

    /// The sequences of a minibatch: the newest `cer` then uniform samples, `size` in all.
    pub(super) fn sample(
        &self,
        sampler: &mut ChaCha8Rng,
        (size, cer): (usize, usize),
        out: &mut Vec<usize>,
    ) {
        let len = self.ring.len;
        out.clear();
        for k in 0..size {
            out.push(if k < cer.min(len) {
                self.ring.newest(k)
            } else {
                below(sampler.next_u32(), len as u32) as usize
            });
        }
    }
}

/// Refuses what IQL with `network: gru` does not do, naming the field: the threaded learner
/// and the opponent models (both learn from single transitions), and a replay too small for
/// one minibatch of whole sequences.
pub(super) fn sequence_config(cfg: &RunConfig) -> Result<(), TrainError> {
    if cfg.iql.threaded {
        return Err(TrainError::Config(
            "threaded: true with network: gru: the threaded learner replays single transitions, \
             not sequences; use threaded: false"
                .into(),
        ));
    }
    if cfg.learn.opponent_models {
        return Err(TrainError::Config(
            "opponent_models: true with network: gru: IQL's opponent models learn from single \
             transitions, not replayed sequences; use opponent_models: false"
                .into(),
        ));
    }
    let sequences = cfg.iql.replay_capacity / cfg.rollout.max(1);
    if sequences < cfg.iql.batch_size {
        return Err(TrainError::Config(format!(
            "replay_capacity: {} rows hold {sequences} sequences of rollout {} steps with \
             network: gru; a minibatch is batch_size {} whole sequences, so at least {} rows",
            cfg.iql.replay_capacity,
            cfg.rollout,
            cfg.iql.batch_size,
            cfg.iql.batch_size * cfg.rollout
        )));
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Minibatch of sequences
// ------------------------------------------------------------------------------------------

/// A minibatch of sequences side by side (`[T, n]` time-major), with the target pass's
/// sequences beside them; reused.
#[derive(Debug, Default)]
pub(super) struct SeqBatch {
    /// `[T, n]` the sampled steps.
    steps: Steps,
    nets: Vec<u32>,
    h0: Vec<f32>,
    mask: Vec<f32>,
    /// `[L, n]` the target pass: the steps with the successors inserted, padded.
    target_input: Vec<u8>,
    target_reset: Vec<u8>,
    /// `[T, n]` each step's bootstrap row in the target pass.
    boot: Vec<usize>,
    targets: Vec<f32>,
    d_out: Vec<f32>,
}

impl SeqBatch {
    /// Gathers the sampled sequences `picks` of `replay` time-major, the first `burn_in` steps
    /// masked out of the loss.
    pub(super) fn gather(&mut self, replay: &SeqReplay, picks: &[usize], burn_in: usize) {
        let n = picks.len();
        if n == 0 {
            return;
        }
        let (steps, d, g, m) = (replay.steps, replay.width, replay.state, replay.mask_width);
        if self.steps.action.len() != steps * n || self.steps.next_mask.len() != steps * n * m {
            self.steps = Steps::zeros(steps * n, d, m);
        }
        self.nets.clear();
        self.h0.clear();
        for &i in picks {
            self.nets.push(replay.net[i]);
            self.h0.extend_from_slice(&replay.h0[i * g..(i + 1) * g]);
        }
        self.mask.clear();
        for t in 0..steps {
            for &i in picks {
                self.steps
                    .copy_step(self.mask.len(), &replay.stored, i * steps + t, d);
                self.mask.push(f32::from(u8::from(t >= burn_in)));
            }
        }
        self.target_sequences(n, steps, d);
    }

    /// The target pass's sequences: each column's steps with the successor of every step that
    /// ended an episode (and of the last step) inserted after it, padded to the longest with
    /// zero input and episode starts; `boot` says where each step's bootstrap row is.
    fn target_sequences(&mut self, n: usize, steps: usize, d: usize) {
        let s = &self.steps;
        let inserted = |j: usize, t: usize| {
            let k = t * n + j;
            t + 1 == steps || s.terminated[k] != 0.0 || s.truncated[k] != 0.0
        };
        let len = (0..n)
            .map(|j| steps + (0..steps).filter(|&t| inserted(j, t)).count())
            .max()
            .unwrap_or(0);
        self.target_input.clear();
        self.target_input.resize(len * n * d, 0);
        self.target_reset.clear();
        self.target_reset.resize(len * n, 1);
        self.boot.clear();
        self.boot.resize(steps * n, 0);
        for j in 0..n {
            let mut l = 0;
            let put = |l: usize, src: &[u8], reset: u8, input: &mut [u8], resets: &mut [u8]| {
                let row = l * n + j;
                input[row * d..(row + 1) * d].copy_from_slice(src);
                resets[row] = reset;
            };
            for t in 0..steps {
                let k = t * n + j;
                let obs = &s.obs[k * d..(k + 1) * d];
                put(
                    l,
                    obs,
                    s.reset[k],
                    &mut self.target_input,
                    &mut self.target_reset,
                );
                l += 1;
                if inserted(j, t) {
                    let next = &s.next[k * d..(k + 1) * d];
                    put(l, next, 0, &mut self.target_input, &mut self.target_reset);
                }
                self.boot[k] = l * n + j;
                l += usize::from(inserted(j, t));
            }
        }
    }

    // --------------------------------------------------------------------------------------
    // Targets and update
    // --------------------------------------------------------------------------------------

    /// Targets from the target networks over the target sequences, a step of the value loss
    /// on the online networks' replay of the sequences (burn-in steps weigh 0), a Polyak
    /// update with `step`'s factor. Returns the loss.
    pub(super) fn train(
        &mut self,
        critic: &mut Critic,
        step: &StepValues,
        (actions, head): (usize, QHead),
        update: u64,
    ) -> Result<f32, TrainError> {
        let out = critic.forward_target_seq(Sequences {
            input: Input::U8(&self.target_input),
            nets: &self.nets,
            h0: &self.h0,
            reset: &self.target_reset,
        })?;
        let q_next = head.q_values(out);
        let s = &self.steps;
        let mask = (!s.next_mask.is_empty()).then_some(&s.next_mask[..]);
        self.targets.clear();
        for (k, &boot) in self.boot.iter().enumerate() {
            // Row k of the mask is step k's successor: the one row `boot` holds.
            let q = &q_next[boot * actions..(boot + 1) * actions];
            let best = max_legal(q, mask.map(|m| &m[k * actions..(k + 1) * actions]), 0);
            self.targets
                .push(td_target(s.reward[k], s.terminated[k], best, step.gamma));
        }
        let out = critic.forward_seq(Sequences {
            input: Input::U8(&s.obs),
            nets: &self.nets,
            h0: &self.h0,
            reset: &s.reset,
        })?;
        let width = out.len() / s.action.len().max(1);
        let loss = head.masked_loss(&s.action, &self.targets, Some(&self.mask));
        self.d_out.clear();
        self.d_out.resize(out.len(), 0.0);
        let value = loss_and_grad(&loss, &out, width, &mut self.d_out);
        critic.backward(&self.d_out)?;
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

#[cfg(test)]
mod tests;
