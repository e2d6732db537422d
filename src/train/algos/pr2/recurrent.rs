//! PR2-IQL with a recurrent critic (`network: gru`): acting reads and advances the arenas'
//! hidden states; a learner step replays each sampled sequence (one column per learner) from
//! the hidden states it was acted with through [`Critic::forward_seq`], the first `burn_in`
//! steps carrying no loss, and the targets come from [`Critic::forward_target_seq`] over the
//! same timeline. A sequence's timeline is its steps with the final observation of every
//! truncated episode inserted after the step that truncated it (continuing that episode's
//! history), then its last observation, padded to `T + 1 + K` steps; so every bootstrap value
//! sees the history its step was acted with. The factorised critic math is PR2's, per row.
//!
//! A minibatch holds whole sequences (a chunk of the epoch's shuffled sequences), not rows.

use super::Pr2Iql;
use super::sequences::SequenceReplay;
use super::step::{finite_loss, shuffle};
use crate::critic::{Input, Sequences};
use crate::train::config::{RhoForm, RunConfig};
use crate::train::error::TrainError;
use crate::train::kit::explore::max_legal;
use crate::train::kit::schedule::StepValues;

/// Refuses what PR2-IQL with `network: gru` does not do, naming the field.
pub(super) fn sequence_config(cfg: &RunConfig) -> Result<(), TrainError> {
    if cfg.learn.opponent_models || cfg.pr2.rho == RhoForm::Model {
        return Err(TrainError::Config(
            "opponent_models: true (or rho: model) with network: gru and algo pr2_iql: the \
             opponent models learn from single observations, not replayed sequences; use \
             opponent_models: false and rho: soft"
                .into(),
        ));
    }
    Ok(())
}

/// One trained row of a sequence: its sequence, timeline step, learner, replayed step.
#[derive(Debug, Clone, Copy)]
struct Trained {
    seq: usize,
    pos: usize,
    learner: usize,
    /// Timeline step of the row its target bootstraps from.
    boot: usize,
    own: u32,
    reward: f32,
    terminated: f32,
}

/// The sampled sequences of one learner step laid out sequence-major (timeline `[L, N]` each).
#[derive(Default)]
pub(super) struct SeqStage {
    /// `[S, L, N, D]`.
    input: Vec<u8>,
    /// `[S, L]`.
    reset: Vec<u8>,
    /// `[S, N, g]`.
    h0: Vec<f32>,
    /// `[S]` the sequence's index in its replay.
    seqs: Vec<usize>,
    /// `[rows, N-1]` the other learners' actions of every trained row.
    others: Vec<u32>,
    rows: Vec<Trained>,
    /// `[rows, A]` the action mask at every trained row's bootstrap (empty without masks).
    boot_mask: Vec<u8>,
    /// L.
    len: usize,
}

impl SeqStage {
    /// Every trained row's target from the target pass's `values` (`[L, bw]` rows of `A`,
    /// `n` learners a sequence): `r + gamma (1 - terminated) max_a V(s', a)` over the actions
    /// legal at its bootstrap step (every action without masks).
    fn targets(&self, values: &[f32], (a, n, bw): (usize, usize, usize), gamma: f32) -> Vec<f32> {
        let mask = (!self.boot_mask.is_empty()).then_some(&self.boot_mask[..]);
        (self.rows.iter().enumerate())
            .map(|(k, t)| {
                let row = t.boot * bw + t.seq * n + t.learner;
                let q = &values[row * a..(row + 1) * a];
                let next = max_legal(q, mask.map(|m| &m[k * a..(k + 1) * a]), 0);
                t.reward + gamma * (1.0 - t.terminated) * next
            })
            .collect()
    }

    /// Appends sequence `c` of `rp`, its steps before `burn_in` untrained.
    fn push(&mut self, rp: &SequenceReplay, c: usize, burn_in: usize) {
        let (t_max, n, d, k_max) = (rp.steps, rp.learners, rp.width, rp.finals_per);
        let seq = self.seqs.len();
        self.len = t_max + 1 + k_max;
        self.seqs.push(c);
        let h = n * rp.state;
        self.h0.extend_from_slice(&rp.h0[c * h..(c + 1) * h]);
        let obs = |t: usize| {
            &rp.obs[((c * (t_max + 1) + t) * n) * d..((c * (t_max + 1) + t + 1) * n) * d]
        };
        let mut pos = 0;
        let mut finals = 0;
        let mut pending: Vec<Trained> = Vec::with_capacity(t_max * n);
        for t in 0..t_max {
            let at = c * t_max + t;
            self.input.extend_from_slice(obs(t));
            self.reset.push(rp.reset[at]);
            let truncated = rp.truncated[at] != 0.0 && finals < k_max;
            let boot = pos + 1;
            for i in 0..n {
                let a = (at * n) + i;
                if t >= burn_in {
                    let final_k = truncated.then_some(finals);
                    if let Some(m) = rp.successor_mask(c, (t + 1, final_k), i) {
                        self.boot_mask.extend_from_slice(m);
                    }
                    pending.push(Trained {
                        seq,
                        pos,
                        learner: i,
                        boot,
                        own: rp.actions[a],
                        reward: rp.rewards[a],
                        terminated: rp.terminated[at],
                    });
                    self.others
                        .extend((0..n).filter(|&j| j != i).map(|j| rp.actions[at * n + j]));
                }
            }
            pos += 1;
            if truncated {
                let per = k_max * n * d;
                let f = c * per + finals * n * d;
                self.input.extend_from_slice(&rp.finals[f..f + n * d]);
                self.reset.push(0);
                finals += 1;
                pos += 1;
            }
        }
        let last = c * t_max + t_max - 1;
        self.input.extend_from_slice(obs(t_max));
        self.reset.push(u8::from(
            rp.terminated[last] != 0.0 || rp.truncated[last] != 0.0,
        ));
        pos += 1;
        while pos < self.len {
            self.input.extend(std::iter::repeat_n(0, n * d));
            self.reset.push(1);
            pos += 1;
        }
        self.rows.extend(pending);
    }
}

/// Sequences `seqs` of a stage as one time-major pass `[L, |seqs| x N]` (column `k x N + i`
/// sequence `seqs[k]`'s learner i).
#[derive(Default)]
struct Pass {
    input: Vec<u8>,
    reset: Vec<u8>,
    h0: Vec<f32>,
    nets: Vec<u32>,
    /// `[L x B]` the network of every output row.
    row_nets: Vec<u32>,
}

impl Pass {
    fn gather(&mut self, st: &SeqStage, seqs: &[usize], (n, d, g): (usize, usize, usize)) {
        let l = st.len;
        self.input.clear();
        self.reset.clear();
        self.h0.clear();
        self.nets.clear();
        for &s in seqs {
            self.h0
                .extend_from_slice(&st.h0[s * n * g..(s + 1) * n * g]);
            self.nets.extend(0..n as u32);
        }
        for p in 0..l {
            for &s in seqs {
                let at = ((s * l + p) * n) * d;
                self.input.extend_from_slice(&st.input[at..at + n * d]);
                self.reset
                    .extend(std::iter::repeat_n(st.reset[s * l + p], n));
            }
        }
        self.row_nets.clear();
        for _ in 0..l {
            self.row_nets.extend_from_slice(&self.nets);
        }
    }

    fn sequences(&self) -> Sequences<'_> {
        Sequences {
            input: Input::U8(&self.input),
            nets: &self.nets,
            h0: &self.h0,
            reset: &self.reset,
        }
    }
}

impl Pr2Iql {
    /// `E_rho[Q_i]` `[B x N, A]` of the current observations through
    /// [`crate::critic::CriticBackend::act`], reading and advancing the arenas' hidden states.
    pub(super) fn recurrent_acting_values(&mut self) -> Result<Vec<f32>, TrainError> {
        let obs = self.batch.buffers().obs.clone();
        let mut hidden = self.batch.hidden_states().to_vec();
        let rows = obs.len() / self.spec.input.max(1);
        let nets = self.nets[..rows].to_vec();
        let out = self.critic.act(Input::U8(&obs), &nets, &mut hidden)?;
        self.batch.hidden_states_mut().copy_from_slice(&hidden);
        let mut values = Vec::new();
        self.expectations(&out, None, &mut values);
        Ok(values)
    }

    /// `E_rho[Q_i]` of the online critics for observation rows `[R, N, O]` entering with the
    /// hidden states `hidden` `[R x N, g]`, which it advances (greedy evaluation).
    pub(super) fn values_recurrent(
        &mut self,
        obs: &[u8],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, TrainError> {
        let rows = obs.len() / self.spec.input.max(1);
        let nets: Vec<u32> = (0..rows).map(|r| (r % self.learners) as u32).collect();
        let out = self.critic.act(Input::U8(obs), &nets, hidden)?;
        let mut values = Vec::new();
        self.expectations(&out, None, &mut values);
        Ok(values)
    }

    /// One learner step on a recurrent critic (see the module's doc); returns the mean loss.
    pub(super) fn learn_sequences(&mut self, step: &StepValues) -> Result<f32, TrainError> {
        let (n, w, a, d, g) = (
            self.learners,
            self.row.width(),
            self.actions,
            self.spec.input,
            self.spec.state_width(),
        );
        let o = n - 1;
        let mut stage = SeqStage::default();
        let mut chosen = Vec::new();
        self.sample_sequences(&mut chosen);
        for &c in &chosen {
            stage.push(&self.replay, c, self.cfg.network.burn_in);
        }
        let mut order: Vec<usize> = (0..stage.seqs.len()).collect();
        let bw = order.len() * n;

        // Targets from the target critics over the whole timeline of every sequence.
        let mut pass = Pass::default();
        pass.gather(&stage, &order, (n, d, g));
        let q = self.critic.forward_target_seq(pass.sequences())?;
        let mut values = Vec::new();
        self.expectations(&q, None, &mut values);
        let targets = stage.targets(&values, (a, n, bw), step.gamma);
        // Each sequence's trained rows (indices into stage.rows).
        let mut rows_of: Vec<Vec<usize>> = vec![Vec::new(); order.len()];
        for (k, t) in stage.rows.iter().enumerate() {
            rows_of[t.seq].push(k);
        }

        let per_batch = order.len().div_ceil(self.cfg.pr2.minibatches.max(1)).max(1);
        let (mut loss_sum, mut batches) = (0.0f64, 0u64);
        let mut d_out = Vec::new();
        for _ in 0..self.cfg.pr2.epochs {
            shuffle(&mut order, &mut self.core.sampler);
            for chunk in order.chunks(per_batch) {
                pass.gather(&stage, chunk, (n, d, g));
                let out = self.critic.forward_seq(pass.sequences())?;
                let b = chunk.len() * n;
                d_out.clear();
                d_out.resize(out.len(), 0.0);
                let count: usize = chunk.iter().map(|&s| rows_of[s].len()).sum();
                let scale = 1.0 / count as f32;
                let mut loss = 0.0f64;
                for (col, &s) in chunk.iter().enumerate() {
                    for &ri in &rows_of[s] {
                        let t = stage.rows[ri];
                        let at = t.pos * b + col * n + t.learner;
                        loss += self.row.row_loss(
                            &out[at * w..(at + 1) * w],
                            t.own as usize,
                            &stage.others[ri * o..(ri + 1) * o],
                            targets[ri],
                            scale,
                            &mut self.scratch,
                            &mut d_out[at * w..(at + 1) * w],
                        ) as f64;
                    }
                }
                if count > 0 {
                    loss_sum += finite_loss(loss / count as f64, self.progress.update)? as f64;
                }
                batches += 1;
                self.critic.backward(&d_out)?;
                self.critic.step(&step.adam)?;
            }
        }
        self.critic.polyak(step.tau)?;
        self.count_step();
        Ok((loss_sum / batches.max(1) as f64) as f32)
    }
}

#[cfg(test)]
mod tests {
    use super::super::sequences::fixture::{A, N, T, boot_mask, masked_replay, values_under};
    use super::SeqStage;

    /// The recurrent critic's targets, as the feed-forward ones: each trained row (after a
    /// burn-in step) keeps the mask of the step it bootstraps from (a final observation after
    /// each truncation) and its target takes the best legal value.
    #[test]
    fn recurrent_targets_take_the_best_legal_action_of_the_bootstrap_step() {
        let replay = masked_replay(4);
        let mut stage = SeqStage::default();
        stage.push(&replay, 0, 1);
        assert_eq!(stage.rows.len(), (T - 1) * N);
        assert_eq!(stage.boot_mask.len(), (T - 1) * N * A);
        let bw = N;
        let mut values = vec![0.0f32; stage.len * bw * A];
        for (k, row) in stage.rows.iter().enumerate() {
            let t = 1 + k / N;
            let want = boot_mask(t, row.learner);
            assert_eq!(stage.boot_mask[k * A..(k + 1) * A], want, "row {k}");
            let at = (row.boot * bw + row.learner) * A;
            values[at..at + A].copy_from_slice(&values_under(want).0);
        }
        let targets = stage.targets(&values, (A, N, bw), 0.5);
        for (k, row) in stage.rows.iter().enumerate() {
            let best = values_under(boot_mask(1 + k / N, row.learner)).1;
            assert_eq!(targets[k], row.reward + 0.5 * best, "row {k}");
        }
    }
}
