//! One PR2-IQL learner step of the replicas whose rate limiters allow one now, at once: each
//! samples sequences of its own replay with its own stream, their rows are stacked (replica
//! r's networks the r-th block of the stack) and go through one target pass and one pass per
//! minibatch; each replica's rows are shuffled with its own stream, scored and trained with its
//! own value loss and averaged over its own rows, and its networks alone are stepped (masked)
//! and averaged into their targets with its values. So replica k computes what a single run
//! with its configuration computes.

use rand_core::Rng;

use super::sequences::SequenceReplay;
use super::{Pr2Iql, pass_rows};
use crate::critic::Input;
use crate::rng::below;
use crate::train::error::TrainError;
use crate::train::explore::max_value;
use crate::train::opponent::{OpponentScores, ScoreMean};
use crate::train::replicas::{StepValues, masked_step, masked_target_update, models_in_step};

/// The row buffers of one learner step (every replica's rows, replica after replica), reused.
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
    /// each sequence's steps, scored but not trained on), their networks from `net_offset` on.
    fn gather(&mut self, rp: &SequenceReplay, sequences: &[usize], net_offset: u32) {
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
                    self.nets.push(net_offset + i as u32);
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
                    self.nets.push(net_offset + i as u32);
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

/// A replica's mean critic loss as f32, or the error naming it (in the update after
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
    /// One learner step of every replica with `active[r]`: sample sequences, targets from the
    /// target critics (in passes of at most [`pass_rows`] rows per replica), `epochs` shuffled
    /// passes of `minibatches` value-loss steps (masked steps of their networks), one pass of
    /// the opponent models (each replica's on its own rows), a Polyak update of their targets;
    /// `settings` holds each replica's values. Returns the mean of their losses and each
    /// replica's opponent-model scores.
    pub(super) fn learn(
        &mut self,
        settings: &[StepValues],
        active: &[bool],
    ) -> Result<(f32, Option<Vec<OpponentScores>>), TrainError> {
        models_in_step(self.models.is_some(), active)?;
        if self.spec.state_width() > 0 {
            return Ok((self.learn_sequences(settings, active)?, None));
        }
        let (n, w, a, d) = (
            self.learners,
            self.rows[0].width(),
            self.actions,
            self.spec.input,
        );
        // The replicas that learn this time, in stack order.
        let stepping: Vec<usize> = (0..self.lanes.len()).filter(|&r| active[r]).collect();
        let (o, replicas) = (n - 1, stepping.len());
        self.step.clear();
        let mut chosen = Vec::new();
        for &r in &stepping {
            self.sample_sequences(r, &mut chosen);
            self.step
                .gather(&self.lanes[r].replay, &chosen, (r * n) as u32);
        }
        let rows = self.step.nets.len();
        let own_rows = rows / replicas;
        let pass = pass_rows(&self.cfg, n) * replicas;

        // Targets: V(s') = max_a E_rho[Q_target(s', a, .)] of row `boot[r]`: s_{t+1}, or the
        // final observation where step t truncated; a termination does not bootstrap.
        let input = std::mem::take(&mut self.step.input);
        let nets = std::mem::take(&mut self.step.nets);
        let mut values = std::mem::take(&mut self.step.values);
        values.clear();
        let mut chunk_values = Vec::new();
        for start in (0..rows).step_by(pass) {
            let end = (start + pass).min(rows);
            let q = self
                .critic
                .forward_target(Input::U8(&input[start * d..end * d]), &nets[start..end])?;
            let rho = self.rho_for(&input[start * d..end * d], &nets[start..end])?;
            self.expectations((&q, &nets[start..end]), rho.as_deref(), &mut chunk_values);
            values.extend_from_slice(&chunk_values);
        }
        let s = &mut self.step;
        s.targets.clear();
        s.targets.extend((0..rows).map(|r| {
            if !s.train[r] {
                return 0.0;
            }
            let gamma = settings[nets[r] as usize / n].gamma;
            let next = &values[s.boot[r] * a..(s.boot[r] + 1) * a];
            s.rewards[r] + gamma * (1.0 - s.terminated[r]) * max_value(next)
        }));
        self.step.values = values;

        // Epochs of shuffled minibatches of each replica's value loss on the observed
        // Q(s, a_i, a_-i); minibatch c holds the c-th chunk of every stepping replica's own
        // shuffled rows.
        let mut orders: Vec<Vec<usize>> = (0..replicas)
            .map(|k| {
                (k * own_rows..(k + 1) * own_rows)
                    .filter(|&r| self.step.train[r])
                    .collect()
            })
            .collect();
        let own_train = orders[0].len();
        let per_batch = own_train.div_ceil(self.cfg.pr2.minibatches.max(1)).max(1);
        let mut mb = Minibatch::default();
        let mut chunk = Vec::new();
        let (mut loss_sum, mut batches) = (0.0f64, 0u64);
        for _ in 0..self.cfg.pr2.epochs {
            for (&r, order) in stepping.iter().zip(&mut orders) {
                shuffle(order, &mut self.lanes[r].core.sampler);
            }
            for start in (0..own_train).step_by(per_batch) {
                let end = (start + per_batch).min(own_train);
                chunk.clear();
                for order in &orders {
                    chunk.extend_from_slice(&order[start..end]);
                }
                mb.gather(&chunk, &input, &nets, &self.step, d, o);
                let out = self.critic.forward(Input::U8(&mb.input), &mb.nets)?;
                let s = &mut self.step;
                s.d_out.clear();
                s.d_out.resize(out.len(), 0.0);
                let own = end - start;
                let scale = 1.0 / own as f32;
                let mut mean = 0.0f64;
                for (rows_k, rows_r) in chunk.chunks(own).enumerate() {
                    let row_loss = self.rows[stepping[rows_k]];
                    let mut loss = 0.0f64;
                    for (j, &r) in rows_r.iter().enumerate() {
                        let k = rows_k * own + j;
                        let row = &out[k * w..(k + 1) * w];
                        let others = &s.others[r * o..(r + 1) * o];
                        let own_action = s.own[r] as usize;
                        loss += row_loss.row_loss(
                            row,
                            own_action,
                            others,
                            s.targets[r],
                            scale,
                            &mut self.scratch,
                            &mut s.d_out[k * w..(k + 1) * w],
                        ) as f64;
                    }
                    mean += finite_loss(loss / own as f64, self.progress.update)? as f64;
                }
                drop(out);
                loss_sum += mean / replicas as f64;
                batches += 1;
                self.critic.backward(&self.step.d_out)?;
                masked_step(&mut self.critic, (settings, active), n)?;
            }
        }
        masked_target_update(&mut self.critic, (settings, active), n)?;

        // The opponent models: one pass over the same rows, minibatch c the c-th chunk of
        // every replica's last order, each replica's rows scored before each step and training
        // its own models at its learning rate.
        let scores = match &mut self.models {
            Some(m) => {
                let lrs: Vec<f32> = settings.iter().map(|v| v.adam.lr).collect();
                let mut means: Vec<ScoreMean> =
                    orders.iter().map(|_| ScoreMean::default()).collect();
                for c in 0..own_train.div_ceil(per_batch) {
                    let own = c * per_batch..((c + 1) * per_batch).min(own_train);
                    chunk.clear();
                    chunk.extend(orders.iter().flat_map(|order| &order[own.clone()]));
                    mb.gather(&chunk, &input, &nets, &self.step, d, o);
                    let train = vec![true; chunk.len()];
                    let labels = (&mb.own[..], &mb.others[..]);
                    let sc = m.score_and_train(&mb.input, &mb.nets, labels, &train, &lrs)?;
                    for (mean, s) in means.iter_mut().zip(sc) {
                        mean.add(s, own.len() as f64);
                    }
                }
                means.into_iter().map(ScoreMean::mean).collect()
            }
            None => None,
        };
        self.step.input = input;
        self.step.nets = nets;
        self.count_step(&stepping);
        Ok(((loss_sum / batches.max(1) as f64) as f32, scores))
    }

    /// Replica r's sequences of one learner step into `chosen`: the newest first when `cer >
    /// 0`, then uniform samples from its sampling stream.
    pub(super) fn sample_sequences(&mut self, r: usize, chosen: &mut Vec<usize>) {
        let lane = &mut self.lanes[r];
        chosen.clear();
        for k in 0..lane.cfg.pr2.buffer_batch_size {
            chosen.push(if k == 0 && lane.cfg.iql.cer > 0 {
                lane.replay.ring.newest(0)
            } else {
                below(lane.core.sampler.next_u32(), lane.replay.ring.len as u32) as usize
            });
        }
    }

    /// Counts a learner step of the replicas `stepping` in their rate limiters.
    pub(super) fn count_step(&mut self, stepping: &[usize]) {
        for &r in stepping {
            let lane = &mut self.lanes[r];
            let sampled = lane.cfg.pr2.buffer_batch_size * lane.cfg.rollout;
            lane.core.limiter.sample(sampled as u64);
            lane.core.learner_steps += 1;
        }
    }
}
