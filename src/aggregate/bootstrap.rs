//! Stratified bootstrap confidence intervals, as rliable computes them: each bootstrap sample
//! draws, for every task on its own, as many runs as there are, with replacement (so the task
//! set stays fixed and only the runs vary), evaluates the statistic, and the interval is the
//! percentile interval of the statistic over `reps` samples (numpy's linear interpolation).
//! Statistics of two algorithms (the probability of improvement) resample each independently.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use super::estimators::Scores;

/// A point estimate with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    /// The statistic on the scores as they are.
    pub point: f64,
    /// Lower end of the interval.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

/// How intervals are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bootstrap {
    /// Bootstrap samples.
    pub reps: usize,
    /// Coverage of the interval (0.95: the 2.5th to the 97.5th percentile).
    pub size: f64,
    /// Seed of the resampling stream.
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            reps: 2000,
            size: 0.95,
            seed: 0,
        }
    }
}

/// A uniform index below `n` (Lemire's method without the rejection step's bias: the 64-bit
/// product's high half, rejecting the few draws that would favour small indices).
fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    let n = n as u64;
    let zone = u64::MAX - (u64::MAX - n + 1) % n;
    loop {
        let x = rng.next_u64();
        if x <= zone {
            return ((x as u128 * n as u128) >> 64) as usize;
        }
    }
}

/// numpy's `percentile` (linear interpolation) of sorted `v` at `q` in [0, 100].
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let pos = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

fn interval(samples: &mut [Vec<f64>], size: f64) -> Vec<(f64, f64)> {
    let alpha = (1.0 - size) / 2.0 * 100.0;
    samples
        .iter_mut()
        .map(|s| {
            s.sort_by(f64::total_cmp);
            (percentile(s, alpha), percentile(s, 100.0 - alpha))
        })
        .collect()
}

impl Bootstrap {
    /// The estimates of a vector-valued statistic `f` (a performance profile: one value per
    /// threshold) of `scores`.
    pub fn estimate_many(&self, scores: &Scores, f: impl Fn(&Scores) -> Vec<f64>) -> Vec<Estimate> {
        let point = f(scores);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut samples = vec![Vec::with_capacity(self.reps); point.len()];
        let runs = scores.runs();
        for _ in 0..self.reps.max(1) {
            let s = scores.resampled(|_, _| below(&mut rng, runs));
            for (k, v) in f(&s).into_iter().enumerate() {
                samples[k].push(v);
            }
        }
        point
            .iter()
            .zip(interval(&mut samples, self.size))
            .map(|(&point, (lo, hi))| Estimate { point, lo, hi })
            .collect()
    }

    /// The estimate of a statistic `f` of `scores`.
    pub fn estimate(&self, scores: &Scores, f: impl Fn(&Scores) -> f64) -> Estimate {
        self.estimate_many(scores, |s| vec![f(s)])[0]
    }

    /// The estimate of a statistic `f` of two algorithms' scores, each resampled on its own.
    pub fn estimate_pair(
        &self,
        x: &Scores,
        y: &Scores,
        f: impl Fn(&Scores, &Scores) -> f64,
    ) -> Estimate {
        let point = f(x, y);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut samples = vec![Vec::with_capacity(self.reps)];
        for _ in 0..self.reps.max(1) {
            let a = x.resampled(|_, _| below(&mut rng, x.runs()));
            let b = y.resampled(|_, _| below(&mut rng, y.runs()));
            samples[0].push(f(&a, &b));
        }
        let (lo, hi) = interval(&mut samples, self.size)[0];
        Estimate { point, lo, hi }
    }
}
