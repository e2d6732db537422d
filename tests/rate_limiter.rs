//! The rate limiter: the single-process scheduler never stalls and keeps
//! `inserts * SPI - samples` inside the window, for any valid configuration; the threaded mode
//! finishes a stress run without deadlock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use proptest::prelude::*;

use gridarena::train::rate_limiter::{
    RateLimiter, RateLimiterConfig, RateLimiterError, SharedLimiter,
};

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_single_process_scheduler_never_stalls_and_stays_in_the_window(
        spi in 0.05f64..8.0,
        min_size in 1u64..300,
        batch in 1u64..64,
        insert in 1u64..256,
        extra in 0.0f64..100.0,
    ) {
        // The smallest error buffer the loop accepts, plus some slack.
        let step = insert as f64 * spi;
        let error_buffer = ((step + batch as f64) / 2.0).max(step).max(spi.max(1.0)) + extra;
        let cfg = RateLimiterConfig { samples_per_insert: spi, min_size_to_sample: min_size, error_buffer };
        prop_assert!(cfg.validate_for_loop(insert, batch).is_ok());
        let mut l = RateLimiter::new(cfg).unwrap();
        let mut learner_steps = 0u64;
        for _ in 0..200 {
            // Acting: an insert never blocks.
            l.insert(insert);
            prop_assert!(l.diff() <= cfg.max_diff() + 1e-9 || l.size() <= min_size, "diff {} above max_diff {}", l.diff(), cfg.max_diff());
            // Learning: exactly the steps the limiter allows, one batch each.
            let n = l.allowed_batches(batch);
            for _ in 0..n {
                prop_assert!(l.can_sample(batch));
                l.sample(batch);
                learner_steps += 1;
            }
            prop_assert!(!l.can_sample(batch), "a step was left undone");
            if l.size() >= min_size {
                prop_assert!(l.diff() >= cfg.min_diff() - 1e-9);
                prop_assert!(l.diff() < cfg.min_diff() + batch as f64 + 1e-9);
            }
        }
        // Never stalls: once past min_size the learner keeps pace with SPI.
        let expected = (l.inserts as f64 * spi - cfg.max_diff()).max(0.0) / batch as f64;
        prop_assert!(learner_steps as f64 + 1.0 >= expected, "{learner_steps} learner steps, expected about {expected}");
    }
}

#[test]
fn threaded_actor_and_learner_finish_without_deadlock() {
    let cfg = RateLimiterConfig {
        samples_per_insert: 4.0,
        min_size_to_sample: 100,
        error_buffer: 64.0,
    };
    let shared = Arc::new(SharedLimiter::new(RateLimiter::new(cfg).unwrap()));
    let done = Arc::new(AtomicBool::new(false));
    let total = 20_000u64;
    let actor = {
        let (shared, done) = (shared.clone(), done.clone());
        std::thread::spawn(move || -> Result<(), RateLimiterError> {
            for _ in 0..total {
                shared.insert(1, Duration::from_secs(10))?;
            }
            done.store(true, Ordering::SeqCst);
            Ok(())
        })
    };
    let learner = {
        let (shared, done) = (shared.clone(), done.clone());
        std::thread::spawn(move || {
            let mut steps = 0u64;
            let mut timeouts = Vec::new();
            loop {
                match shared.sample(8, Duration::from_millis(20)) {
                    Ok(()) => steps += 1,
                    Err(e) => {
                        if done.load(Ordering::SeqCst) && !shared.snapshot().can_sample(8) {
                            break;
                        }
                        timeouts.push(e.to_string());
                        assert!(
                            timeouts.len() < 500,
                            "learner starved: {}",
                            timeouts.last().unwrap()
                        );
                    }
                }
            }
            steps
        })
    };
    actor.join().unwrap().unwrap();
    let steps = learner.join().unwrap();
    let l = shared.snapshot();
    assert_eq!(l.inserts, total);
    assert_eq!(l.samples, steps * 8);
    assert!(
        l.diff() >= cfg.min_diff() && l.diff() < cfg.min_diff() + 8.0,
        "final diff {}",
        l.diff()
    );
}

#[test]
fn a_timed_out_wait_reports_the_bound_that_held_it() {
    let cfg = RateLimiterConfig {
        samples_per_insert: 1.0,
        min_size_to_sample: 10,
        error_buffer: 5.0,
    };
    let shared = SharedLimiter::new(RateLimiter::new(cfg).unwrap());
    let err = shared.sample(1, Duration::from_millis(10)).unwrap_err();
    assert!(err.to_string().contains("min_size_to_sample"), "{err}");
    for _ in 0..15 {
        shared.insert(1, Duration::from_millis(10)).unwrap();
    }
    let err = shared.insert(1, Duration::from_millis(10)).unwrap_err();
    assert!(err.to_string().contains("max_diff"), "{err}");
}
