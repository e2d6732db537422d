//! One PR2-IQL learner step: sample sequences, targets from the target critics, `epochs`
//! shuffled passes of `minibatches` value-loss steps, one pass of the opponent models, a
//! Polyak update.

use rand_core::Rng;

use super::sequences::SequenceReplay;
use super::{Pr2Iql, pass_rows};
use crate::critic::Input;
use crate::rng::below;
use crate::train::error::TrainError;
use crate::train::kit::explore::max_legal;
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
    /// `[rows, A]` the action mask at each row's bootstrap row (empty without masks).
    boot_mask: Vec<u8>,
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
        self.boot_mask.clear();
        self.train.clear();
    }

    /// Appends `sequences` of `rp` as rows `[S, T+1+K, N]` (the K final observations after
    /// each sequence's steps, scored but not trained on), learner i's rows through network i.
    fn gather(&mut self, rp: &SequenceReplay, sequences: &[usize]) {
        let (t_max, n, d, k_max) = (rp.steps, rp.learners, rp.width, rp.finals_per);
        let o = n - 1;
        let mask_width = if rp.mask.is_empty() {
            0
        } else {
            rp.action_count as usize
        };
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
                        self.push_untrained(o, mask_width);
                        continue;
                    }
                    let at = (c * t_max + t) * n;
                    self.own.push(rp.actions[at + i]);
                    self.others
                        .extend((0..n).filter(|&j| j != i).map(|j| rp.actions[at + j]));
                    self.rewards.push(rp.rewards[at + i]);
                    self.terminated.push(rp.terminated[c * t_max + t]);
                    let final_k = finals_seen.min(k_max.saturating_sub(1));
                    let next_step = if truncated {
                        t_max + 1 + final_k
                    } else {
                        t + 1
                    };
                    self.boot.push(base + next_step * n + i);
                    let at = (t + 1, truncated.then_some(final_k));
                    if let Some(m) = rp.successor_mask(c, at, i) {
                        self.boot_mask.extend_from_slice(m);
                    }
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
                    self.push_untrained(o, mask_width);
                }
            }
        }
    }

    /// Every gathered row's target from `values` (`[rows, A]`, V(s') per action of each row):
    /// `r + gamma (1 - terminated) max_a V(s', a)` over the actions legal at the bootstrap
    /// row (every action without masks); 0 for a row only scored.
    pub(super) fn fill_targets(&mut self, values: &[f32], a: usize, gamma: f32) {
        let mask = (!self.boot_mask.is_empty()).then_some(&self.boot_mask[..]);
        self.targets.clear();
        for r in 0..self.boot.len() {
            if !self.train[r] {
                self.targets.push(0.0);
                continue;
            }
            let next = &values[self.boot[r] * a..(self.boot[r] + 1) * a];
            let best = max_legal(next, mask.map(|m| &m[r * a..(r + 1) * a]), 0);
            self.targets
                .push(self.rewards[r] + gamma * (1.0 - self.terminated[r]) * best);
        }
    }

    /// The fields of a row only scored (a sequence's last observation or a final one).
    /// `mask_width` bytes of mask: the action count with masks, else 0.
    fn push_untrained(&mut self, others: usize, mask_width: usize) {
        self.own.push(0);
        self.others.extend(std::iter::repeat_n(0, others));
        self.rewards.push(0.0);
        self.terminated.push(1.0);
        self.boot.push(0);
        self.boot_mask.extend(std::iter::repeat_n(1, mask_width));
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
        self.step.fill_targets(&values, a, step.gamma);
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

#[cfg(test)]
mod tests {
    use super::super::sequences::fixture::{A, N, T, boot_mask, masked_replay, values_under};
    use super::StepBuffers;

    /// Each trained row bootstraps under the mask of the observation it bootstraps from: the
    /// next step's, or the final one where its step truncated (the second arena of the
    /// rollout, two truncations); its target takes the best legal value there, never the
    /// larger illegal one.
    #[test]
    fn targets_take_the_best_legal_action_of_the_bootstrap_observation() {
        let replay = masked_replay(0);
        let mut s = StepBuffers::default();
        s.gather(&replay, &[0]);
        let rows = s.boot.len();
        assert_eq!(rows, (T + 3) * N);
        assert_eq!(s.boot_mask.len(), rows * A);
        let mut values = vec![0.0f32; rows * A];
        for t in 0..T {
            for i in 0..N {
                let r = t * N + i;
                let want = boot_mask(t, i);
                let got = &s.boot_mask[r * A..(r + 1) * A];
                assert_eq!(got, want, "step {t}, learner {i}");
                let at = s.boot[r] * A;
                values[at..at + A].copy_from_slice(&values_under(want).0);
            }
        }
        s.fill_targets(&values, A, 0.5);
        for t in 0..T {
            for i in 0..N {
                let best = values_under(boot_mask(t, i)).1;
                // The second arena's rewards: 10 t + N + i.
                let want = (10 * t + N + i) as f32 + 0.5 * best;
                assert_eq!(s.targets[t * N + i], want, "step {t}, learner {i}");
            }
        }
    }
}
