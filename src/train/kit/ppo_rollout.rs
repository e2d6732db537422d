//! The on-policy storage and the minibatch step the PPO learners (IPPO, MAPPO) share: a
//! rollout with the policy's columns (log-probabilities, masks, advantages) and the value
//! network's own input rows when it reads something else than the policy (MAPPO's global
//! state), acting by sampling within the mask, and one Adam step of each network on PPO's
//! losses ([`super::ppo`]).
//!
//! With a recurrent policy (`network.kind: gru`) every learner row of the rollout is one
//! sequence: acting reads and advances the batch's hidden states (zeroed by the engine where an
//! episode starts), the rollout keeps the hidden state entering its first step and where each
//! later step starts an episode, and a minibatch is whole sequences replayed from that state
//! through all T steps (backpropagation through time), as recurrent PPO does (CleanRL's
//! `ppo_atari_lstm`, JaxMARL's `ippo_rnn`). The value network stays an MLP.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use super::ppo::{PpoCoefs, gae, log_softmax, sample};
use super::returns::{RolloutBuffer, RolloutSteps};
use crate::critic::ppo_loss::PpoLosses;
use crate::critic::{AdamConfig, Critic, Input, Sequences};
use crate::engine::EnvBatch;
use crate::rng::below;
use crate::train::config::{NetworkKind, PpoConfig, RunConfig};
use crate::train::error::TrainError;
use crate::train::kit::recurrent::ended_rows;

/// A PPO rollout: [`RolloutBuffer`]'s columns (its `q_max` holds `V(s_t)`, row T the value after
/// the rollout; `final_q` the final observations' values; `returns` G) and the policy's.
pub(crate) struct PpoRollout {
    pub buf: RolloutBuffer,
    /// `[T, rows]` the acting policy's log-probability of each action played.
    pub logp: Vec<f32>,
    /// `[T, rows]` advantages.
    pub adv: Vec<f32>,
    /// `[T, rows, A]` the action masks acted under (empty without masks).
    pub masks: Vec<u8>,
    /// `[T, rows, value_input]` the value network's input rows, when it reads other rows
    /// than the policy (empty: it reads the policy's).
    pub value_obs: Vec<u8>,
    /// Bytes per value input row (0: the policy's rows).
    pub value_input: usize,
    pub actions: usize,
    /// g, the policy's hidden-state width (0: a memoryless policy).
    pub width: usize,
    /// `[rows, g]` the hidden state entering the rollout's first step.
    pub h0: Vec<f32>,
    /// `[T, rows]` 1 where a step starts an episode (step 0's start is in `h0` already).
    pub reset: Vec<u8>,
    /// Per learner slot, whether a fixed actor (a population) played it: its rows are left out
    /// of the losses, since the policy did not choose their actions (empty: every slot learns).
    pub skip: Vec<bool>,
}

impl PpoRollout {
    /// Storage for `steps` x `rows` rows of `input` policy bytes, `actions` actions (masks kept
    /// when `masked`), and `value_input` bytes of value input (0: the policy's rows).
    pub(crate) fn new(
        (steps, rows, input): (usize, usize, usize),
        actions: usize,
        masked: bool,
        value_input: usize,
    ) -> PpoRollout {
        let n = steps * rows;
        PpoRollout {
            buf: RolloutBuffer::new(steps, rows, input),
            logp: vec![0.0; n],
            adv: vec![0.0; n],
            masks: if masked {
                vec![0; n * actions]
            } else {
                Vec::new()
            },
            value_obs: vec![0; n * value_input],
            value_input,
            actions,
            width: 0,
            h0: Vec::new(),
            reset: Vec::new(),
            skip: Vec::new(),
        }
    }

    /// The same rollout for a recurrent policy of hidden width `g`.
    pub(crate) fn recurrent(self, g: usize) -> PpoRollout {
        let (rows, n) = (self.buf.rows, self.logp.len());
        PpoRollout {
            width: g,
            h0: vec![0.0; rows * g],
            reset: vec![0; if g > 0 { n } else { 0 }],
            ..self
        }
    }

    /// The policy's logits (`[rows, A]`) for step `t`'s `input`: a forward pass, or with a
    /// recurrent policy an acting step from the batch's hidden states, which it advances
    /// (keeping the states entering step 0).
    pub(crate) fn policy_logits(
        &mut self,
        t: usize,
        actor: &mut Critic,
        (input, nets): (&[u8], &[u32]),
        batch: &mut EnvBatch,
    ) -> Result<Vec<f32>, TrainError> {
        if self.width == 0 {
            return Ok(actor.forward(Input::U8(input), nets)?);
        }
        let mut h = batch.hidden_states().to_vec();
        if t == 0 {
            self.h0.copy_from_slice(&h);
        }
        let out = actor.act(Input::U8(input), nets, &mut h)?;
        batch.hidden_states_mut().copy_from_slice(&h);
        Ok(out)
    }

    /// After step `t`: with a recurrent policy, which rows start an episode at step `t + 1`.
    pub(crate) fn episode_starts(&mut self, t: usize, batch: &EnvBatch, learners: usize) {
        let rows = self.buf.rows;
        if self.width > 0 && (t + 2) * rows <= self.reset.len() {
            ended_rows(
                batch,
                learners,
                &mut self.reset[(t + 1) * rows..(t + 2) * rows],
            );
        }
    }

    /// Leaves the rows of the slots `fixed` names out of the losses from now on (`None`:
    /// every slot learns): the batch's fixed slots, read before each update.
    pub(crate) fn skip_slots(&mut self, fixed: Option<&[bool]>) {
        self.skip.clear();
        self.skip.extend_from_slice(fixed.unwrap_or(&[]));
    }

    /// The entries the losses learn from, into `index`: every entry of
    /// [`PpoRollout::entries`] but those of rows whose slot is skipped (row `r` is slot
    /// `r % skip.len()`).
    pub(crate) fn learning_entries(&self, index: &mut Vec<u32>) {
        let (rows, n) = (self.buf.rows, self.skip.len());
        index.clear();
        for e in 0..self.entries() {
            let row = if self.width > 0 { e } else { e % rows };
            if n == 0 || !self.skip[row % n] {
                index.push(e as u32);
            }
        }
    }

    /// Entries the minibatches are cut from: whole sequences (rows) with a recurrent policy,
    /// else every step of every row.
    pub(crate) fn entries(&self) -> usize {
        if self.width > 0 {
            self.buf.rows
        } else {
            self.logp.len()
        }
    }

    /// Samples every row's action from its `logits` (`[rows, A]`) within the `mask`, each
    /// arena's rows (`learners` each) from its own stream; writes the actions into `acts` and
    /// the log-probabilities of every action into `lp` (`[rows, A]`), and keeps step `t`'s masks.
    pub(crate) fn act(
        &mut self,
        t: usize,
        logits: &[f32],
        (acts, mask): (&mut [u8], Option<&[u8]>),
        (samplers, learners): (&mut [ChaCha8Rng], usize),
        lp: &mut [f32],
    ) {
        let (a, rows) = (self.actions, self.buf.rows);
        if let Some(m) = mask {
            self.masks[t * rows * a..(t + 1) * rows * a].copy_from_slice(m);
        }
        for (row, act) in acts.iter_mut().enumerate() {
            let m = mask.map(|m| &m[row * a..(row + 1) * a]);
            let out = &mut lp[row * a..(row + 1) * a];
            log_softmax(&logits[row * a..(row + 1) * a], m, out);
            let u = (samplers[row / learners].next_u32() >> 8) as f32 / (1u32 << 24) as f32;
            *act = sample(out, u) as u8;
        }
    }

    /// After the batch stepped: the log-probability of each action played at step `t` (a slot
    /// the batch played itself keeps the policy's probability of that action).
    pub(crate) fn keep_logp(&mut self, t: usize, lp: &[f32]) {
        let (a, rows) = (self.actions, self.buf.rows);
        for row in 0..rows {
            let taken = self.buf.taken[t * rows + row] as usize;
            self.logp[t * rows + row] = lp[row * a + taken];
        }
    }

    /// GAE(lambda) of the stored rollout into `returns` and `adv`.
    pub(crate) fn advantages(&mut self, gamma: f32, lambda: f32) {
        let RolloutBuffer {
            rows,
            rewards,
            terminated,
            truncated,
            q_max,
            final_q,
            returns,
            ..
        } = &mut self.buf;
        let steps = RolloutSteps {
            rows: *rows,
            rewards,
            terminated,
            truncated,
            q_max,
            final_q,
        };
        gae(&steps, gamma, lambda, returns, &mut self.adv);
    }

    /// E epochs (`p.epochs`) of M shuffled minibatches (`p.minibatches`) of the rollout's
    /// learning entries ([`PpoRollout::learning_entries`] into `index`, reshuffled with
    /// `shuffle`), one [`PpoMinibatch::step`] each, rows through `nets`; the mean loss. A
    /// non-finite loss stops it, naming update `update + 1`.
    pub(crate) fn train_epochs(
        &self,
        (nets, index, shuffle): (&[u32], &mut Vec<u32>, &mut ChaCha8Rng),
        networks: (&mut Critic, &mut Critic, &mut PpoLosses),
        (p, adam): (&PpoConfig, &AdamConfig),
        update: u64,
    ) -> Result<f32, TrainError> {
        let (actor, value, losses) = networks;
        self.learning_entries(index);
        let size = index.len() / p.minibatches;
        if size == 0 {
            return Err(TrainError::Config(format!(
                "ppo.minibatches {}: more than the {} entries the learner's own slots give \
                 (the population's slots are left out of the loss)",
                p.minibatches,
                index.len()
            )));
        }
        let mut mb = PpoMinibatch::default();
        let (mut total, mut count) = (0.0f64, 0);
        for _ in 0..p.epochs {
            for k in (1..index.len()).rev() {
                let j = below(shuffle.next_u32(), k as u32 + 1) as usize;
                index.swap(k, j);
            }
            for m in 0..p.minibatches {
                self.gather(&index[m * size..(m + 1) * size], nets, &mut mb);
                let loss = mb.step((&mut *actor, &mut *value, &mut *losses), p, adam)?;
                if !loss.is_finite() {
                    return Err(TrainError::NonFinite {
                        update: update + 1,
                        tensor: "loss".into(),
                        value: loss,
                    });
                }
                total += loss as f64;
                count += 1;
            }
        }
        Ok((total / count.max(1) as f64) as f32)
    }

    /// Gathers the rollout's entries `picks` into `m`, row `r` through network `nets[r %
    /// rows]`: rows `t * rows + row` of a memoryless policy, or with a recurrent one the whole
    /// sequences `row`, time-major (`t * picks + k`), with their entering states and episode
    /// starts.
    pub(crate) fn gather(&self, picks: &[u32], nets: &[u32], m: &mut PpoMinibatch) {
        let rows = self.buf.rows;
        m.clear();
        if self.width == 0 {
            for &i in picks {
                self.gather_row(i as usize, nets, m);
            }
            return;
        }
        let (g, steps) = (self.width, self.logp.len() / rows.max(1));
        for t in 0..steps {
            for &row in picks {
                let i = t * rows + row as usize;
                self.gather_row(i, nets, m);
                m.reset.push(self.reset[i]);
            }
        }
        for &row in picks {
            let row = row as usize;
            m.seq_nets.push(nets[row]);
            m.h0.extend_from_slice(&self.h0[row * g..(row + 1) * g]);
        }
    }

    /// Appends rollout row `g` (`t * rows + row`) to `m`.
    fn gather_row(&self, g: usize, nets: &[u32], m: &mut PpoMinibatch) {
        let (b, a, dv) = (&self.buf, self.actions, self.value_input);
        let d = b.input;
        m.obs.extend_from_slice(&b.obs[g * d..(g + 1) * d]);
        m.value_obs
            .extend_from_slice(&self.value_obs[g * dv..(g + 1) * dv]);
        m.nets.push(nets[g % b.rows]);
        m.taken.push(b.taken[g]);
        m.logp.push(self.logp[g]);
        m.adv.push(self.adv[g]);
        m.returns.push(b.returns[g]);
        m.old_v.push(b.q_max[g]);
        if !self.masks.is_empty() {
            m.masks.extend_from_slice(&self.masks[g * a..(g + 1) * a]);
        }
    }
}

/// A minibatch's rows gathered out of a [`PpoRollout`], reused.
#[derive(Default)]
pub(crate) struct PpoMinibatch {
    pub obs: Vec<u8>,
    pub value_obs: Vec<u8>,
    pub nets: Vec<u32>,
    pub taken: Vec<u32>,
    pub logp: Vec<f32>,
    pub adv: Vec<f32>,
    pub returns: Vec<f32>,
    pub old_v: Vec<f32>,
    pub masks: Vec<u8>,
    /// With a recurrent policy: each sequence's network, entering state `[S, g]` and
    /// `[T, S]` episode starts (empty otherwise).
    pub seq_nets: Vec<u32>,
    pub h0: Vec<f32>,
    pub reset: Vec<u8>,
}

impl PpoMinibatch {
    fn clear(&mut self) {
        self.obs.clear();
        self.value_obs.clear();
        self.nets.clear();
        self.taken.clear();
        self.logp.clear();
        self.adv.clear();
        self.returns.clear();
        self.old_v.clear();
        self.masks.clear();
        self.seq_nets.clear();
        self.h0.clear();
        self.reset.clear();
    }

    /// One Adam step of the policy on the clipped surrogate and entropy bonus, and one of the
    /// value network on the value loss (advantages normalised first when `p` says so); the
    /// sum of both losses.
    pub(crate) fn step(
        &mut self,
        (actor, value, losses): (&mut Critic, &mut Critic, &mut PpoLosses),
        p: &PpoConfig,
        adam: &AdamConfig,
    ) -> Result<f32, TrainError> {
        let coefs = PpoCoefs {
            clip: p.clip,
            ent_coef: p.ent_coef,
            vf_coef: p.vf_coef,
            clip_value: p.clip_value,
        };
        if p.normalize_advantages {
            normalise(&mut self.adv);
        }
        let logits = if self.seq_nets.is_empty() {
            actor.forward(Input::U8(&self.obs), &self.nets)?
        } else {
            actor.forward_seq(Sequences {
                input: Input::U8(&self.obs),
                nets: &self.seq_nets,
                h0: &self.h0,
                reset: &self.reset,
            })?
        };
        let mask = (!self.masks.is_empty()).then_some(&self.masks[..]);
        let batch = (&self.taken[..], &self.logp[..], &self.adv[..]);
        let (terms, d_logits) = losses.policy(&logits, mask, batch, coefs)?;
        actor.backward(&d_logits)?;
        actor.step(adam)?;
        let value_rows = if self.value_obs.is_empty() {
            &self.obs
        } else {
            &self.value_obs
        };
        let values = value.forward(Input::U8(value_rows), &self.nets)?;
        let (v_loss, d_values) = losses.value(&values, &self.old_v, &self.returns, coefs)?;
        value.backward(&d_values)?;
        value.step(adam)?;
        Ok(terms.surrogate - coefs.ent_coef * terms.entropy + v_loss)
    }
}

/// Refuses what the PPO learner `name` does not train: opponent models, and with a recurrent
/// policy more minibatches than learner rows (a minibatch is whole sequences).
pub(crate) fn check_config(name: &str, cfg: &RunConfig, learners: usize) -> Result<(), TrainError> {
    if cfg.learn.opponent_models {
        return Err(TrainError::Config(format!(
            "algo {name} takes learn.opponent_models: false"
        )));
    }
    let rows = cfg.arenas * learners;
    if cfg.network.kind == NetworkKind::Gru && cfg.ppo.minibatches > rows {
        return Err(TrainError::Config(format!(
            "algo {name} with network.kind: gru cuts minibatches of whole sequences, one per \
             learner row: ppo.minibatches {} is more than the {rows} rows (arenas x learners)",
            cfg.ppo.minibatches
        )));
    }
    Ok(())
}

/// Zero mean, unit standard deviation (CleanRL's `(adv - mean) / (std + 1e-8)`).
pub(crate) fn normalise(x: &mut [f32]) {
    let n = x.len().max(1) as f64;
    let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    let scale = 1.0 / (var.sqrt() + 1e-8);
    for v in x {
        *v = ((*v as f64 - mean) * scale) as f32;
    }
}

/// Multiplies every network's head weights by `factor` (CleanRL's `std=0.01` policy head).
pub(crate) fn scale_head(critic: &mut Critic, factor: f32) -> Result<(), TrainError> {
    let spec = *critic.spec();
    let Some(head) = spec.tensors().into_iter().find(|t| t.name == "head.weight") else {
        return Ok(());
    };
    let mut p = critic.params()?;
    for block in p.chunks_exact_mut(spec.params_per_net()) {
        for w in &mut block[head.offset..head.offset + head.rows * head.cols] {
            *w *= factor;
        }
    }
    critic.set_params(&p)?;
    Ok(())
}

#[cfg(test)]
mod tests;
