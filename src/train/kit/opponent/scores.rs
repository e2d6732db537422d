//! How well the opponent models predict: each batch's tally of hits and log-likelihoods per
//! (learner, other learner), against the uniform prediction and the frequency baseline (each
//! other learner's action frequencies in the scored rows), and the weighted mean of several
//! batches' scores.

use serde::{Deserialize, Serialize};

/// Scores of one rollout, before training on it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpponentScores {
    /// `[i][k]`: fraction of learner i's predictions of its k-th other learner that were right.
    pub accuracy: Vec<Vec<f64>>,
    /// `[i][k]`: mean negative log-likelihood of the action taken.
    pub log_loss: Vec<Vec<f64>>,
    /// ln |A|, the uniform prediction's log-loss.
    pub uniform_log_loss: f64,
    /// `[i][k]`: the frequency baseline's accuracy, the share of the most frequent action of
    /// learner i's k-th other learner in the scored rows.
    pub marginal_accuracy: Vec<Vec<f64>>,
    /// `[i][k]`: the frequency baseline's log-loss, the entropy (nats) of that opponent's
    /// action frequencies in the scored rows.
    pub marginal_log_loss: Vec<Vec<f64>>,
    /// The training loss of this update's pass.
    pub train_loss: f32,
}

impl OpponentScores {
    /// Every `[i][k]` table's rows (the models' and the frequency baseline's), in a fixed
    /// order: what a mean over batches, replicas or ranks averages.
    pub(crate) fn tables_mut(&mut self) -> impl Iterator<Item = &mut Vec<f64>> {
        self.accuracy
            .iter_mut()
            .chain(self.log_loss.iter_mut())
            .chain(self.marginal_accuracy.iter_mut())
            .chain(self.marginal_log_loss.iter_mut())
    }
}

/// One replica's (or the conditional models') running sums while scoring: `[i][k]` hits,
/// negative log-likelihoods and the labels' counts per action, rows per learner.
pub(super) struct Tally {
    correct: Vec<Vec<f64>>,
    nll: Vec<Vec<f64>>,
    /// `[i][k * actions + a]`: how often learner i's k-th other learner took action a.
    labels: Vec<Vec<f64>>,
    pub(super) count: Vec<f64>,
    actions: usize,
}

impl Tally {
    pub(super) fn new(learners: usize, actions: usize) -> Tally {
        let zeros = vec![vec![0.0f64; learners - 1]; learners];
        Tally {
            correct: zeros.clone(),
            nll: zeros,
            labels: vec![vec![0.0f64; (learners - 1) * actions]; learners],
            count: vec![0.0; learners],
            actions,
        }
    }

    /// Scores learner i's prediction `logits` of its k-th other learner's action `label`.
    pub(super) fn add(&mut self, (i, k): (usize, usize), logits: &[f32], label: usize) -> f64 {
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let lse = max + logits.iter().map(|v| (v - max).exp()).sum::<f32>().ln();
        let best = (0..logits.len())
            .max_by(|&x, &y| logits[x].total_cmp(&logits[y]))
            .unwrap_or(0);
        let nll = (lse - logits[label]) as f64;
        self.correct[i][k] += f64::from(u8::from(best == label));
        self.nll[i][k] += nll;
        self.labels[i][k * self.actions + label] += 1.0;
        nll
    }

    /// The means per (learner, other), with `train_loss`.
    pub(super) fn scores(mut self, train_loss: f32) -> OpponentScores {
        let mut marginal_accuracy = self.correct.clone();
        let mut marginal_log_loss = self.nll.clone();
        for (i, &c) in self.count.iter().enumerate() {
            let c = c.max(1.0);
            for k in 0..self.correct[i].len() {
                self.correct[i][k] /= c;
                self.nll[i][k] /= c;
                let freq = &self.labels[i][k * self.actions..(k + 1) * self.actions];
                marginal_accuracy[i][k] = freq.iter().copied().fold(0.0, f64::max) / c;
                marginal_log_loss[i][k] = freq
                    .iter()
                    .filter(|&&n| n > 0.0)
                    .map(|&n| -(n / c) * (n / c).ln())
                    .sum();
            }
        }
        OpponentScores {
            accuracy: self.correct,
            log_loss: self.nll,
            uniform_log_loss: (self.actions as f64).ln(),
            marginal_accuracy,
            marginal_log_loss,
            train_loss,
        }
    }
}

/// Running weighted mean of scores over several scored batches.
#[derive(Debug, Default)]
pub struct ScoreMean {
    total: Option<OpponentScores>,
    weight: f64,
}

impl ScoreMean {
    /// Adds a batch's scores with weight `w` (its rows).
    pub fn add(&mut self, s: OpponentScores, w: f64) {
        let scaled = |mut s: OpponentScores| {
            for row in s.tables_mut() {
                for v in row.iter_mut() {
                    *v *= w;
                }
            }
            s.train_loss = (s.train_loss as f64 * w) as f32;
            s
        };
        self.weight += w;
        match &mut self.total {
            None => self.total = Some(scaled(s)),
            Some(t) => {
                let mut s = scaled(s);
                for (x, y) in t.tables_mut().zip(s.tables_mut()) {
                    for (a, b) in x.iter_mut().zip(y) {
                        *a += *b;
                    }
                }
                t.train_loss += s.train_loss;
            }
        }
    }

    /// The mean, or `None` when nothing was added.
    pub fn mean(self) -> Option<OpponentScores> {
        let w = self.weight.max(f64::MIN_POSITIVE);
        self.total.map(|mut t| {
            for row in t.tables_mut() {
                for v in row.iter_mut() {
                    *v /= w;
                }
            }
            t.train_loss = (t.train_loss as f64 / w) as f32;
            t
        })
    }
}
