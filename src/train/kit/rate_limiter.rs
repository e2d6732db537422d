//! The replay rate limiter, with the semantics of Reverb's `SampleToInsertRatio`.
//!
//! Counters: inserts, samples (counted when consumed), deletes. With samples per insert SPI,
//! `min_size_to_sample` and an error buffer e: `min_diff = SPI * min_size - e`,
//! `max_diff = SPI * min_size + e`.
//! - `can_sample(k)`: size >= min_size and `inserts * SPI - samples - k >= min_diff`;
//! - `can_insert(k)`: always while `size + k <= min_size`, else `(inserts + k) * SPI - samples
//!   <= max_diff`.
//!
//! A known single-process deadlock came from inserts that wait for samples that only the same
//! thread could take. Here the single-process scheduler never blocks: after each insert it asks
//! [`RateLimiter::allowed_batches`] how many learner steps the limiter allows and runs exactly
//! those, each consuming one batch (nothing prefetches). The threaded mode waits with timeouts
//! and reports which bound held it, and counts an insert only once its rows are written
//! ([`SharedLimiter::insert_with`]), so a sample is never granted rows still being written.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Rate limiter parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimiterConfig {
    /// Samples per insert (SPI).
    pub samples_per_insert: f64,
    /// Items in the buffer before any sampling.
    pub min_size_to_sample: u64,
    /// Slack around the target ratio (e).
    pub error_buffer: f64,
}

/// Why a configuration would deadlock or can never be met.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateLimiterError {
    /// Non-positive or non-finite values.
    #[error(
        "samples_per_insert must be positive and finite, error_buffer non-negative, min_size_to_sample at least 1: got {0:?}"
    )]
    Values(RateLimiterConfig),
    /// The window cannot fit one insert and one sample.
    #[error(
        "max_diff - min_diff = 2 x error_buffer = {window} < 2 max(1, samples_per_insert) = {need}: \
         inserts and samples would block each other forever; raise error_buffer to at least {half}"
    )]
    Narrow {
        /// The window width.
        window: f64,
        /// The width needed.
        need: f64,
        /// The error buffer that would do.
        half: f64,
    },
    /// The single-process loop inserts whole rollouts and samples whole batches.
    #[error(
        "a loop that inserts {insert} items and samples batches of {batch} needs a window of at \
         least {need} (insert x SPI + batch) to stay inside it; the window is {window}: raise \
         error_buffer to at least {half}"
    )]
    Scheduler {
        /// Items inserted per acting phase.
        insert: u64,
        /// Samples per learner step.
        batch: u64,
        /// The window width needed.
        need: f64,
        /// The window width.
        window: f64,
        /// The error buffer that would do.
        half: f64,
    },
    /// A threaded wait ran out of time.
    #[error(
        "waited {waited:?} to {what} {k}: {bound} (inserts {inserts}, samples {samples}, size {size}, diff {diff:.1} outside [{min_diff:.1}, {max_diff:.1}])"
    )]
    Timeout {
        /// "insert" or "sample".
        what: &'static str,
        /// Items asked for.
        k: u64,
        /// Which bound held the caller.
        bound: &'static str,
        /// How long it waited.
        waited: Duration,
        /// Counters at the time.
        inserts: u64,
        /// Counters at the time.
        samples: u64,
        /// Items in the buffer.
        size: u64,
        /// inserts x SPI - samples.
        diff: f64,
        /// Lower bound.
        min_diff: f64,
        /// Upper bound.
        max_diff: f64,
    },
}

impl RateLimiterConfig {
    /// `min_diff`.
    pub fn min_diff(&self) -> f64 {
        self.samples_per_insert * self.min_size_to_sample as f64 - self.error_buffer
    }

    /// `max_diff`.
    pub fn max_diff(&self) -> f64 {
        self.samples_per_insert * self.min_size_to_sample as f64 + self.error_buffer
    }

    /// Rejects configurations that deadlock: a window narrower than `2 max(1, SPI)` or
    /// `min_diff > SPI * min_size` (a negative error buffer).
    pub fn validate(&self) -> Result<(), RateLimiterError> {
        let spi = self.samples_per_insert;
        let positive = spi.is_finite() && spi > 0.0;
        let buffer_ok = self.error_buffer.is_finite() && self.error_buffer >= 0.0;
        if !positive || !buffer_ok || self.min_size_to_sample == 0 {
            return Err(RateLimiterError::Values(*self));
        }
        let window = 2.0 * self.error_buffer;
        let need = 2.0 * spi.max(1.0);
        if window < need {
            return Err(RateLimiterError::Narrow {
                window,
                need,
                half: need / 2.0,
            });
        }
        Ok(())
    }

    /// The smallest error buffer a loop that inserts `insert` items and then samples batches
    /// of `batch` accepts: half of `max(2 max(1, SPI), insert x SPI + batch, 2 insert x SPI)`.
    pub fn loop_error_buffer(&self, insert: u64, batch: u64) -> f64 {
        self.loop_window(insert, batch) / 2.0
    }

    /// The window width [`RateLimiterConfig::loop_error_buffer`] is half of.
    fn loop_window(&self, insert: u64, batch: u64) -> f64 {
        // Steady state: after an insert, diff rises from below min_diff + batch by insert x SPI.
        // First crossing of min_size: diff can reach SPI x (min_size + insert), so the error
        // buffer itself must cover one insert. And the limiter's own bound: one insert and
        // one sample must fit.
        let spi = self.samples_per_insert;
        let step = insert as f64 * spi;
        (step + batch as f64)
            .max(2.0 * step)
            .max(2.0 * spi.max(1.0))
    }

    /// Also checks the single-process loop (insert `insert` items, then learner steps of
    /// `batch` samples each) stays inside the window. A refusal names the smallest error
    /// buffer that satisfies both this and [`RateLimiterConfig::validate`].
    pub fn validate_for_loop(&self, insert: u64, batch: u64) -> Result<(), RateLimiterError> {
        match self.validate() {
            Ok(()) | Err(RateLimiterError::Narrow { .. }) => {}
            Err(e) => return Err(e),
        }
        // 2 x error_buffer is the window (max_diff - min_diff without its rounding), so the
        // suggested buffer, need / 2, passes exactly.
        let window = 2.0 * self.error_buffer;
        let need = self.loop_window(insert, batch);
        if window < need {
            return Err(RateLimiterError::Scheduler {
                insert,
                batch,
                need,
                window,
                half: need / 2.0,
            });
        }
        self.validate()
    }
}

/// The counters and the rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateLimiter {
    cfg: RateLimiterConfig,
    /// Items inserted.
    pub inserts: u64,
    /// Samples consumed.
    pub samples: u64,
    /// Items deleted (evicted).
    pub deletes: u64,
}

impl RateLimiter {
    /// A limiter with zeroed counters (the configuration must validate).
    pub fn new(cfg: RateLimiterConfig) -> Result<RateLimiter, RateLimiterError> {
        cfg.validate()?;
        Ok(RateLimiter {
            cfg,
            inserts: 0,
            samples: 0,
            deletes: 0,
        })
    }

    /// Items in the buffer.
    pub fn size(&self) -> u64 {
        self.inserts - self.deletes
    }

    /// `inserts * SPI - samples`.
    pub fn diff(&self) -> f64 {
        self.inserts as f64 * self.cfg.samples_per_insert - self.samples as f64
    }

    /// Whether `k` samples may be taken now.
    pub fn can_sample(&self, k: u64) -> bool {
        self.size() >= self.cfg.min_size_to_sample && self.diff() - k as f64 >= self.cfg.min_diff()
    }

    /// Whether `k` items may be inserted now.
    pub fn can_insert(&self, k: u64) -> bool {
        self.size() + k <= self.cfg.min_size_to_sample
            || (self.inserts + k) as f64 * self.cfg.samples_per_insert - self.samples as f64
                <= self.cfg.max_diff()
    }

    /// Records inserted items.
    pub fn insert(&mut self, k: u64) {
        self.inserts += k;
    }

    /// Records consumed samples.
    pub fn sample(&mut self, k: u64) {
        self.samples += k;
    }

    /// Records evicted items.
    pub fn delete(&mut self, k: u64) {
        self.deletes += k.min(self.size());
    }

    /// How many batches of `k` samples the limiter allows right now (the single-process
    /// scheduler runs exactly this many learner steps).
    pub fn allowed_batches(&self, k: u64) -> u64 {
        if k == 0 || self.size() < self.cfg.min_size_to_sample {
            return 0;
        }
        let slack = self.diff() - self.cfg.min_diff();
        if slack < k as f64 {
            0
        } else {
            (slack / k as f64).floor() as u64
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RateLimiterConfig {
        &self.cfg
    }
}

/// A limiter shared by an actor thread and a learner thread, with bounded waits.
pub struct SharedLimiter {
    state: Mutex<RateLimiter>,
    changed: Condvar,
    closed: std::sync::atomic::AtomicBool,
}

impl SharedLimiter {
    /// Wraps a limiter.
    pub fn new(limiter: RateLimiter) -> SharedLimiter {
        SharedLimiter {
            state: Mutex::new(limiter),
            changed: Condvar::new(),
            closed: Default::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RateLimiter> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn timeout(
        l: &RateLimiter,
        what: &'static str,
        k: u64,
        bound: &'static str,
        waited: Duration,
    ) -> RateLimiterError {
        RateLimiterError::Timeout {
            what,
            k,
            bound,
            waited,
            inserts: l.inserts,
            samples: l.samples,
            size: l.size(),
            diff: l.diff(),
            min_diff: l.cfg.min_diff(),
            max_diff: l.cfg.max_diff(),
        }
    }

    /// Waits (at most `timeout`) until `k` items may be inserted, then records them: for items
    /// already in the buffer. An actor that still has to write them uses
    /// [`SharedLimiter::insert_with`].
    pub fn insert(&self, k: u64, timeout: Duration) -> Result<(), RateLimiterError> {
        self.insert_with(k, timeout, || 0)
    }

    /// Waits (at most `timeout`) until `k` items may be inserted, runs `write` (which puts them
    /// into the buffer and returns how many it evicted), and only then counts the inserts and
    /// the evictions, so a sampler is never granted rows that are not written yet. The limiter
    /// is not locked while `write` runs. For a single inserter: the permission cannot lapse,
    /// as samples and evictions only widen it.
    pub fn insert_with(
        &self,
        k: u64,
        timeout: Duration,
        write: impl FnOnce() -> u64,
    ) -> Result<(), RateLimiterError> {
        let guard = self.lock();
        let (l, result) = self
            .changed
            .wait_timeout_while(guard, timeout, |l| !l.can_insert(k))
            .unwrap_or_else(|p| p.into_inner());
        if result.timed_out() && !l.can_insert(k) {
            return Err(Self::timeout(
                &l,
                "insert",
                k,
                "max_diff: the learner has not sampled enough",
                timeout,
            ));
        }
        drop(l);
        let evicted = write();
        let mut l = self.lock();
        l.insert(k);
        l.delete(evicted);
        drop(l);
        self.changed.notify_all();
        Ok(())
    }

    /// Waits (at most `timeout`) until `k` samples may be taken, then records them.
    pub fn sample(&self, k: u64, timeout: Duration) -> Result<(), RateLimiterError> {
        let guard = self.lock();
        let (mut l, result) = self
            .changed
            .wait_timeout_while(guard, timeout, |l| !l.can_sample(k) && !self.is_closed())
            .unwrap_or_else(|p| p.into_inner());
        if (result.timed_out() || self.is_closed()) && !l.can_sample(k) {
            let bound = if self.is_closed() {
                "closed: the actor has finished"
            } else if l.size() < l.cfg.min_size_to_sample {
                "min_size_to_sample: the buffer is not full enough"
            } else {
                "min_diff: the actor has not inserted enough"
            };
            return Err(Self::timeout(&l, "sample", k, bound, timeout));
        }
        l.sample(k);
        drop(l);
        self.changed.notify_all();
        Ok(())
    }

    /// Records evicted items.
    pub fn delete(&self, k: u64) {
        self.lock().delete(k);
        self.changed.notify_all();
    }

    /// Whether `k` samples may be taken now.
    pub fn can_sample(&self, k: u64) -> bool {
        self.lock().can_sample(k)
    }

    /// Marks the actor side finished: waiting samplers return at once when nothing more can
    /// be sampled.
    pub fn close(&self) {
        let _guard = self.lock();
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.changed.notify_all();
    }

    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A copy of the counters.
    pub fn snapshot(&self) -> RateLimiter {
        self.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_windows_and_negative_buffers_are_refused_with_the_reason() {
        let narrow = RateLimiterConfig {
            samples_per_insert: 4.0,
            min_size_to_sample: 10,
            error_buffer: 3.0,
        };
        assert!(
            matches!(narrow.validate(), Err(RateLimiterError::Narrow { need, .. }) if need == 8.0)
        );
        let negative = RateLimiterConfig {
            error_buffer: -1.0,
            ..narrow
        };
        assert!(negative.validate().is_err());
        let ok = RateLimiterConfig {
            error_buffer: 4.0,
            ..narrow
        };
        ok.validate().unwrap();
        let loop_err = ok.validate_for_loop(100, 32).unwrap_err();
        assert!(
            loop_err
                .to_string()
                .contains("raise error_buffer to at least 400"),
            "{loop_err}"
        );
    }

    #[test]
    fn sampling_waits_for_min_size_then_follows_the_ratio() {
        let cfg = RateLimiterConfig {
            samples_per_insert: 2.0,
            min_size_to_sample: 5,
            error_buffer: 10.0,
        };
        let mut l = RateLimiter::new(cfg).unwrap();
        l.insert(4);
        assert!(!l.can_sample(1), "below min size");
        l.insert(1);
        // diff = 10, min_diff = 0: five batches of 2.
        assert_eq!(l.allowed_batches(2), 5);
        l.sample(10);
        assert!(!l.can_sample(1));
        assert!(l.can_insert(1));
    }
}
