//! PQN-RNN (PQN with `network: gru`): what a rollout keeps for training by backpropagation
//! through time, and the sequence minibatches.
//!
//! Every learner row of every arena is one sequence. While acting, the rollout records for
//! each row the hidden state entering its first step, and whether each step starts an episode
//! (the engine zeroes the hidden state there). Training replays each sequence from that hidden
//! state through the whole rollout with the current parameters. With `memory_window: W`, the
//! last W steps of each rollout (their observations, episode starts and the hidden state
//! entering the first of them) are kept and replayed before the next rollout's steps: burn-in
//! steps that warm the hidden state up and carry no loss. Exactly W steps are carried, never
//! more ([`Memory`]).

use serde::{Deserialize, Serialize};

use crate::critic::loss::loss_and_grad;
use crate::critic::{Critic, Input, Sequences};
use crate::train::error::TrainError;
use crate::train::kit::q_head::QHead;
use crate::train::tensors::{NamedTensors, Tensor};

/// The steps carried from one rollout to the next (the burn-in of the next update).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Memory {
    /// Steps held: 0 before the first update, then exactly `memory_window`.
    pub steps: usize,
    /// `[steps, rows, input]` the network input of each carried step.
    pub obs: Vec<u8>,
    /// `[steps, rows]` 1 where a carried step starts an episode.
    pub reset: Vec<u8>,
    /// `[rows, g]` the hidden state entering the first carried step, as acted.
    pub h0: Vec<f32>,
}

/// The small part of `SeqState` a checkpoint keeps as JSON (the arrays are tensors).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SeqSaved {
    /// Steps the memory holds.
    pub memory_steps: usize,
}

/// The rollout's recurrent bookkeeping and the sequence minibatch buffers.
#[derive(Debug)]
pub(crate) struct SeqState {
    /// g.
    width: usize,
    /// W, `memory_window`.
    window: usize,
    /// `[rows, g]` hidden state entering the rollout's first step.
    h_start: Vec<f32>,
    /// `[T, rows]` 1 where step t starts an episode.
    reset: Vec<u8>,
    /// `[rows]` whether the next step acted starts an episode (1 before the first step).
    next_reset: Vec<u8>,
    /// `[rows, g]` hidden state entering step `T - W` (the next memory's start).
    h_window: Vec<f32>,
    /// The steps carried from the previous rollout.
    pub(crate) memory: Memory,
    mb: SeqMinibatch,
}

/// One minibatch of whole sequences, time-major (`[L, n]` with L = carried + T steps).
#[derive(Debug, Default)]
struct SeqMinibatch {
    input: Vec<u8>,
    nets: Vec<u32>,
    h0: Vec<f32>,
    reset: Vec<u8>,
    actions: Vec<u32>,
    targets: Vec<f32>,
    mask: Vec<f32>,
    d_out: Vec<f32>,
}

/// What the rollout storage holds, for gathering sequences.
pub(crate) struct Rollout<'a> {
    /// T.
    pub(crate) steps: usize,
    /// Rows per step.
    pub(crate) rows: usize,
    /// Input bytes per row.
    pub(crate) input: usize,
    /// `[T, rows, input]`.
    pub(crate) obs: &'a [u8],
    /// `[T, rows]`.
    pub(crate) taken: &'a [u32],
    /// `[T, rows]` lambda-returns.
    pub(crate) returns: &'a [f32],
    /// `[rows]` each row's network.
    pub(crate) nets: &'a [u32],
}

impl SeqState {
    pub(crate) fn new(width: usize, window: usize, steps: usize, rows: usize) -> SeqState {
        SeqState {
            width,
            window,
            h_start: vec![0.0; rows * width],
            reset: vec![0; steps * rows],
            next_reset: vec![1; rows],
            h_window: vec![0.0; rows * width],
            memory: Memory::default(),
            mb: SeqMinibatch::default(),
        }
    }

    /// Before acting step `t` of a `steps`-step rollout, with `hidden` `[rows, g]` the states
    /// entering it: records the step's episode starts and the hidden states training replays
    /// from.
    pub(crate) fn before_step(&mut self, t: usize, steps: usize, hidden: &[f32]) {
        let rows = self.next_reset.len();
        self.reset[t * rows..(t + 1) * rows].copy_from_slice(&self.next_reset);
        if t == 0 {
            self.h_start.copy_from_slice(hidden);
        }
        if self.window > 0 && t == steps - self.window {
            self.h_window.copy_from_slice(hidden);
        }
    }

    /// Rows `at..at + ended.len()` start an episode at the next step where `ended` is 1.
    pub(crate) fn after_step(&mut self, at: usize, ended: &[u8]) {
        self.next_reset[at..at + ended.len()].copy_from_slice(ended);
    }

    /// After training: keeps the rollout's last W steps as the next memory (exactly W).
    pub(crate) fn keep_window(&mut self, r: &Rollout) {
        let w = self.window;
        if w == 0 {
            return;
        }
        let (rows, d, from) = (r.rows, r.input, r.steps - w);
        let m = &mut self.memory;
        m.steps = w;
        m.obs.clear();
        m.obs
            .extend_from_slice(&r.obs[from * rows * d..r.steps * rows * d]);
        m.reset.clear();
        m.reset
            .extend_from_slice(&self.reset[from * rows..r.steps * rows]);
        m.h0.clone_from(&self.h_window);
    }

    /// Forward and BPTT of the sequences `seqs` (rows of the rollout): burn-in from the
    /// memory, then the rollout's steps with the value loss (`head`'s) to their returns,
    /// averaged over the trained steps. Returns the loss.
    pub(crate) fn minibatch_loss(
        &mut self,
        critic: &mut Critic,
        head: QHead,
        r: &Rollout,
        seqs: &[usize],
    ) -> Result<f32, TrainError> {
        let out = self.replay(critic, r, seqs)?;
        let m = &mut self.mb;
        let a = critic.spec().head;
        let loss = head.masked_loss(&m.actions, &m.targets, Some(&m.mask));
        m.d_out.clear();
        m.d_out.resize(out.len(), 0.0);
        let value = loss_and_grad(&loss, &out, a, &mut m.d_out);
        critic.backward(&m.d_out)?;
        Ok(value)
    }

    /// The training forward of the sequences `seqs` (the memory's steps, then the rollout's,
    /// from the memory's or the rollout's stored hidden state): outputs `[L, n, head]`.
    pub(crate) fn replay(
        &mut self,
        critic: &mut Critic,
        r: &Rollout,
        seqs: &[usize],
    ) -> Result<Vec<f32>, TrainError> {
        self.gather(r, seqs);
        let m = &self.mb;
        Ok(critic.forward_seq(Sequences {
            input: Input::U8(&m.input),
            nets: &m.nets,
            h0: &m.h0,
            reset: &m.reset,
        })?)
    }

    /// The minibatch of sequences `seqs`: the memory's steps then the rollout's.
    fn gather(&mut self, r: &Rollout, seqs: &[usize]) {
        let (g, d, rows, n) = (self.width, r.input, r.rows, seqs.len());
        let mem = &self.memory;
        let len = mem.steps + r.steps;
        let m = &mut self.mb;
        m.input.resize(len * n * d, 0);
        m.reset.resize(len * n, 0);
        m.actions.resize(len * n, 0);
        m.targets.resize(len * n, 0.0);
        m.mask.resize(len * n, 0.0);
        m.nets.clear();
        m.h0.clear();
        let h0 = if mem.steps > 0 {
            &mem.h0
        } else {
            &self.h_start
        };
        for &s in seqs {
            m.nets.push(r.nets[s]);
            m.h0.extend_from_slice(&h0[s * g..(s + 1) * g]);
        }
        for l in 0..len {
            let (carried, t) = (l < mem.steps, l.wrapping_sub(mem.steps));
            for (j, &s) in seqs.iter().enumerate() {
                let (i, src) = (l * n + j, if carried { l } else { t } * rows + s);
                let dst = &mut m.input[i * d..(i + 1) * d];
                if carried {
                    dst.copy_from_slice(&mem.obs[src * d..(src + 1) * d]);
                    m.reset[i] = mem.reset[src];
                    (m.actions[i], m.targets[i], m.mask[i]) = (0, 0.0, 0.0);
                } else {
                    dst.copy_from_slice(&r.obs[src * d..(src + 1) * d]);
                    m.reset[i] = self.reset[src];
                    (m.actions[i], m.targets[i], m.mask[i]) = (r.taken[src], r.returns[src], 1.0);
                }
            }
        }
    }

    /// The checkpoint's part: the memory and the recurrent bookkeeping as tensors (the
    /// batches' hidden states are saved with the batches' tensors by the learner).
    pub(crate) fn save(&self, extra: &mut NamedTensors) -> SeqSaved {
        let m = &self.memory;
        extra.push(("pqn.next_reset".into(), Tensor::U8(self.next_reset.clone())));
        extra.push(("pqn.memory.obs".into(), Tensor::U8(m.obs.clone())));
        extra.push(("pqn.memory.reset".into(), Tensor::U8(m.reset.clone())));
        extra.push(("pqn.memory.h0".into(), Tensor::F32(m.h0.clone())));
        SeqSaved {
            memory_steps: m.steps,
        }
    }

    /// Restores what [`SeqState::save`] wrote; `rows` and `input` size the checks.
    pub(crate) fn load(
        &mut self,
        saved: &SeqSaved,
        extra: &[(String, Tensor)],
        input: usize,
    ) -> Result<(), TrainError> {
        use crate::error::BadField;
        use crate::train::tensors::{f32s, find};
        let rows = self.next_reset.len();
        let steps = saved.memory_steps;
        if steps != 0 && steps != self.window {
            return Err(BadField::range(
                "memory_steps",
                format!("0 or memory_window {}", self.window),
                steps.to_string(),
            )
            .into());
        }
        let bytes = |name: &str, len: usize| -> Result<Vec<u8>, TrainError> {
            match find(extra, name) {
                Some(Tensor::U8(v)) => {
                    BadField::check_len(name, len, v.len())?;
                    Ok(v.clone())
                }
                _ => Err(BadField::range(name, format!("{len} bytes"), "no U8 tensor").into()),
            }
        };
        self.next_reset = bytes("pqn.next_reset", rows)?;
        let m = &mut self.memory;
        m.steps = steps;
        m.obs = bytes("pqn.memory.obs", steps * rows * input)?;
        m.reset = bytes("pqn.memory.reset", steps * rows)?;
        let h0_len = if steps > 0 { rows * self.width } else { 0 };
        let h0 = match find(extra, "pqn.memory.h0") {
            Some(_) => f32s(extra, "pqn.memory.h0", h0_len)?.to_vec(),
            None => return Err(BadField::range("pqn.memory.h0", "a tensor", "none").into()),
        };
        m.h0 = h0;
        Ok(())
    }
}
