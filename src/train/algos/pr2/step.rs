//! One PR2-IQL learner step: sample sequences, targets from the target critics, `epochs`
//! shuffled passes of `minibatches` value-loss steps, one pass of the opponent models, a
//! Polyak update.

use rand_core::Rng;

use super::sequences::SequenceReplay;
use super::{Pr2Iql, pass_rows};
use crate::critic::Input;
use crate::rng::below;
use crate::train::error::TrainError;
use crate::train::kit::explore::max_value;
use crate::train::kit::opponent::{OpponentScores, ScoreMean};
use crate::train::kit::schedule::StepValues;

/// The row buffers of one learner step, reused.
#[derive(Default)]
pub(super) struct StepBuffers {
    input: Vec<u8>,
    nets: Vec<u32>,
    own: Vec<u32>,
    others: Vec<u32>,
    rewards: Vec<f32>,
    terminated: Vec<f32>,
    /// The row each row's target bootstraps from: the next step's, or a final observation's.
    boot: Vec<usize>,
    train: Vec<bool>,
    targets: Vec<f32>,
    d_out: Vec<f32>,
    values: Vec<f32>,
}

impl StepBuffers {
    /// Empties the gathered rows.
    fn clear(&mut self) {
        self.input.clear();
        self.nets.clear();
        self.own.clear();
        self.others.clear();
        self.rewards.clear();
        self.terminated.clear();
        self.boot.clear();
        self.train.clear();
    }

    /// Appends `sequences` of `rp` as rows `[S, T+1+K, N]` (the K final observations after
    /// each sequence's steps, scored but not trained on), learner i's rows through network i.
    fn gather(&mut self, rp: &SequenceReplay, sequences: &[usize]) {
        let (t_max, n, d, k_max) = (rp.steps, rp.learners, rp.width, rp.finals_per);
        let o = n - 1;
        for &c in sequences {
            let base = self.nets.len();
            let seq_obs = (c * (t_max + 1) * n) * d..((c + 1) * (t_max + 1) * n) * d;
            self.input.extend_from_slice(&rp.obs[seq_obs]);
            let mut finals_seen = 0;
            for t in 0..=t_max {
                let last = t == t_max;
                let truncated = !last && rp.truncated[c * t_max + t] != 0.0;
                for i in 0..n {
                    self.nets.push(i as u32);
                    self.train.push(!last);
                    if last {
                        self.push_untrained(o);
                        continue;
                    }
                    let at = (c * t_max + t) * n;
                    self.own.push(rp.actions[at + i]);
                    self.others
                        .extend((0..n).filter(|&j| j != i).map(|j| rp.actions[at + j]));
                    self.rewards.push(rp.rewards[at + i]);
                    self.terminated.push(rp.terminated[c * t_max + t]);
                    let next_step = if truncated {
                        t_max + 1 + finals_seen.min(k_max.saturating_sub(1))
                    } else {
                        t + 1
                    };
                    self.boot.push(base + next_step * n + i);
                }
                finals_seen += usize::from(truncated);
            }
            let per = k_max * n * d;
            self.input
                .extend_from_slice(&rp.finals[c * per..(c + 1) * per]);
            for _ in 0..k_max {
                for i in 0..n {
                    self.nets.push(i as u32);
                    self.train.push(false);
                    self.push_untrained(o);
                }
            }
        }
    }

    /// The fields of a row only scored (a sequence's last observation or a final one).
    fn push_untrained(&mut self, others: usize) {
        self.own.push(0);
        self.others.extend(std::iter::repeat_n(0, others));
        self.rewards.push(0.0);
        self.terminated.push(1.0);
        self.boot.push(0);
    }
}

/// One minibatch's rows gathered out of the learner step's rows.
#[derive(Default)]
struct Minibatch {
    input: Vec<u8>,
    nets: Vec<u32>,
    own: Vec<u32>,
    others: Vec<u32>,
}

impl Minibatch {
    fn gather(
        &mut self,
        chunk: &[usize],
        input: &[u8],
        nets: &[u32],
        step: &StepBuffers,
        d: usize,
        o: usize,
    ) {
        self.input.clear();
        self.nets.clear();
        self.own.clear();
        self.others.clear();
        for &r in chunk {
            self.input.extend_from_slice(&input[r * d..(r + 1) * d]);
            self.nets.push(nets[r]);
            self.own.push(step.own[r]);
            self.others
                .extend_from_slice(&step.others[r * o..(r + 1) * o]);
        }
    }
}

/// A mean critic loss as f32, or the error naming it (in the update after
/// `update`) where it is not finite.
pub(super) fn finite_loss(loss: f64, update: u64) -> Result<f32, TrainError> {
    let loss = loss as f32;
    if !loss.is_finite() {
        return Err(TrainError::NonFinite {
            update: update + 1,
            tensor: "PR2 critic loss".into(),
            value: loss,
        });
    }
    Ok(loss)
}

/// Shuffles `order` in place (Fisher-Yates) with `sampler`.
pub(super) fn shuffle(order: &mut [usize], sampler: &mut rand_chacha::ChaCha8Rng) {
    for k in (1..order.len()).rev() {
        let j = below(sampler.next_u32(), k as u32 + 1) as usize;
        order.swap(k, j);
    }
}

impl Pr2Iql {
    /// One learner step: sample sequences, targets from the target critics (in passes of at
    /// most [`pass_rows`] rows), `epochs` shuffled passes of `minibatches` value-loss steps,
    /// one pass of the opponent models over the same rows, a Polyak update of the targets.
    /// Returns the mean loss and the opponent-model scores.
    pub(super) fn learn(
        &mut self,
        step: &StepValues,
    ) -> Result<(f32, Option<OpponentScores>), TrainError> {
        if self.spec.state_width() > 0 {
            return Ok((self.learn_sequences(step)?, None));
        }
        let (n, w, a, d) = (
            self.learners,
            self.row.width(),
            self.actions,
            self.spec.input,
        );
        let o = n - 1;
        self.step.clear();
        let mut chosen = Vec::new();
        self.sample_sequences(&mut chosen);
        self.step.gather(&self.replay, &chosen);
        let rows = self.step.nets.len();
        let pass = pass_rows(&self.cfg, n);

        // Targets: V(s') = max_a E_rho[Q_target(s', a, .)] of row `boot[r]`: s_{t+1}, or the
        // final observation where step t truncated; a termination does not bootstrap.
        let input = std::mem::take(&mut self.step.input);
        let nets = std::mem::take(&mut self.step.nets);
        let mut values = std::mem::take(&mut self.step.values);
        values.clear();
        let mut chunk_values = Vec::new();
        for start in (0..rows).step_by(pass) {
            let end = (start + pass).min(rows);
            let (x, nets) = (&input[start * d..end * d], &nets[start..end]);
            let q = self.critic.forward_target(Input::U8(x), nets)?;
            let rho = self.rho_for(x, nets)?;
            self.expectations(&q, rho.as_deref(), &mut chunk_values);
            values.extend_from_slice(&chunk_values);
        }
        let s = &mut self.step;
        s.targets.clear();
        s.targets.extend((0..rows).map(|r| {
            if !s.train[r] {
                return 0.0;
            }
            let next = &values[s.boot[r] * a..(s.boot[r] + 1) * a];
            s.rewards[r] + step.gamma * (1.0 - s.terminated[r]) * max_value(next)
        }));
        self.step.values = values;

        // Epochs of shuffled minibatches of the value loss on the observed Q(s, a_i, a_-i).
        let mut order: Vec<usize> = (0..rows).filter(|&r| self.step.train[r]).collect();
        let trained = order.len();
        let per_batch = trained.div_ceil(self.cfg.pr2.minibatches.max(1)).max(1);
        let mut mb = Minibatch::default();
        let (mut loss_sum, mut batches) = (0.0f64, 0u64);
        for _ in 0..self.cfg.pr2.epochs {
            shuffle(&mut order, &mut self.core.sampler);
            for start in (0..trained).step_by(per_batch) {
                let chunk = &order[start..(start + per_batch).min(trained)];
                mb.gather(chunk, &input, &nets, &self.step, d, o);
                let out = self.critic.forward(Input::U8(&mb.input), &mb.nets)?;
                let s = &mut self.step;
                s.d_out.clear();
                s.d_out.resize(out.len(), 0.0);
                let scale = 1.0 / chunk.len() as f32;
                let mut loss = 0.0f64;
                for (k, &r) in chunk.iter().enumerate() {
                    loss += self.row.row_loss(
                        &out[k * w..(k + 1) * w],
                        s.own[r] as usize,
                        &s.others[r * o..(r + 1) * o],
                        s.targets[r],
                        scale,
                        &mut self.scratch,
                        &mut s.d_out[k * w..(k + 1) * w],
                    ) as f64;
                }
                let loss = loss / chunk.len() as f64;
                loss_sum += finite_loss(loss, self.progress.update)? as f64;
                batches += 1;
                self.critic.backward(&self.step.d_out)?;
                self.critic.step(&step.adam)?;
            }
        }
        self.critic.polyak(step.tau)?;

        // The opponent models: one pass over the same rows in the last epoch's order, each
        // minibatch scored before the models step on it.
        let mut score = ScoreMean::default();
        if let Some(m) = &mut self.models {
            for chunk in order.chunks(per_batch) {
                mb.gather(chunk, &input, &nets, &self.step, d, o);
                let train = vec![true; chunk.len()];
                let labels = (&mb.own[..], &mb.others[..]);
                let s = m.score_and_train(&mb.input, &mb.nets, labels, &train, step.adam.lr)?;
                score.add(s, chunk.len() as f64);
            }
        }
        self.step.input = input;
        self.step.nets = nets;
        self.count_step();
        Ok(((loss_sum / batches.max(1) as f64) as f32, score.mean()))
    }

    /// The sequences of one learner step into `chosen`: the newest first when `cer > 0`, then
    /// uniform samples from the sampling stream.
    pub(super) fn sample_sequences(&mut self, chosen: &mut Vec<usize>) {
        chosen.clear();
        for k in 0..self.cfg.pr2.buffer_batch_size {
            chosen.push(if k == 0 && self.cfg.iql.cer > 0 {
                self.replay.ring.newest(0)
            } else {
                below(self.core.sampler.next_u32(), self.replay.ring.len as u32) as usize
            });
        }
    }

    /// Counts a learner step in the rate limiter.
    pub(super) fn count_step(&mut self) {
        let sampled = self.cfg.pr2.buffer_batch_size * self.cfg.rollout;
        self.core.limiter.sample(sampled as u64);
        self.core.learner_steps += 1;
    }
}
