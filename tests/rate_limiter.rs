//! The rate limiter: the single-process scheduler never stalls and keeps
//! `inserts * SPI - samples` inside the window, for any valid configuration; the threaded mode
//! finishes a stress run without deadlock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use gridarena::train::rate_limiter::{
    RateLimiter, RateLimiterConfig, RateLimiterError, SharedLimiter,
};

/// Runs the single-process scheduler for `inserts` inserts of `insert` items, each followed by
/// exactly the learner steps (one batch each) the limiter allows, checking after every phase
/// that `inserts x SPI - samples` stays in the window and that no allowed step is left undone,
/// and at the end that the learner kept pace with SPI. Returns the learner steps.
fn run_scheduler(
    cfg: RateLimiterConfig,
    insert: u64,
    batch: u64,
    inserts: u64,
) -> Result<u64, TestCaseError> {
    let (spi, min_size) = (cfg.samples_per_insert, cfg.min_size_to_sample);
    let mut l = RateLimiter::new(cfg).unwrap();
    let mut learner_steps = 0u64;
    for _ in 0..inserts {
        // Acting: an insert never blocks.
        l.insert(insert);
        prop_assert!(
            l.diff() <= cfg.max_diff() + 1e-9 || l.size() <= min_size,
            "diff {} above max_diff {}",
            l.diff(),
            cfg.max_diff()
        );
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
    prop_assert!(
        learner_steps as f64 + 1.0 >= expected,
        "{learner_steps} learner steps, expected about {expected}"
    );
    Ok(learner_steps)
}

/// Validates `cfg` for the loop: accepted, it runs; refused, the error must name an error
/// buffer that is accepted and then runs. Returns the learner steps.
fn runs_or_suggests_a_buffer_that_runs(
    cfg: RateLimiterConfig,
    insert: u64,
    batch: u64,
    inserts: u64,
) -> Result<u64, TestCaseError> {
    let cfg = match cfg.validate_for_loop(insert, batch) {
        Ok(()) => cfg,
        Err(e) => {
            let RateLimiterError::Scheduler { half, .. } = e else {
                return Err(TestCaseError::fail(format!(
                    "refused without a working buffer: {e}"
                )));
            };
            let message = e.to_string();
            prop_assert!(
                message.contains(&format!("raise error_buffer to at least {half}")),
                "{message}"
            );
            let fixed = RateLimiterConfig {
                error_buffer: half,
                ..cfg
            };
            prop_assert!(
                fixed.validate_for_loop(insert, batch).is_ok(),
                "the suggested buffer {half} is refused too"
            );
            fixed
        }
    };
    run_scheduler(cfg, insert, batch, inserts)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))), ..ProptestConfig::default() })]

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
        run_scheduler(cfg, insert, batch, 200)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))), ..ProptestConfig::default() })]

    /// Any error buffer, tiny ones included, at settings around the reported deadlock's (SPI
    /// 128, batch 256, error buffer 0.1, min size 2,000, 2,048 rows per insert): the loop
    /// either runs or is refused with a buffer that runs.
    #[test]
    fn any_error_buffer_runs_or_is_refused_with_one_that_runs(
        spi in prop_oneof![Just(128.0f64), 0.05f64..256.0],
        min_size in prop_oneof![Just(2_000u64), 1u64..5_000],
        batch in prop_oneof![Just(256u64), 32u64..512],
        insert in prop_oneof![Just(2_048u64), 1u64..4_096],
        error_buffer in prop_oneof![Just(0.1f64), 0.0f64..1.0, 0.0f64..1e6],
    ) {
        let cfg = RateLimiterConfig { samples_per_insert: spi, min_size_to_sample: min_size, error_buffer };
        // Bound the learner steps per case (about 100k).
        let per_insert = (insert as f64 * spi / batch as f64).max(1.0);
        let inserts = ((100_000.0 / per_insert) as u64).clamp(20, 200);
        runs_or_suggests_a_buffer_that_runs(cfg, insert, batch, inserts)?;
    }
}

/// The reported deadlock's settings exactly: refused, with a suggested error buffer under
/// which 200 inserts (about 200k learner steps) stay in the window and keep pace.
#[test]
fn the_reported_deadlock_settings_are_refused_with_an_error_buffer_that_works() {
    let (insert, batch) = (2_048, 256);
    let cfg = RateLimiterConfig {
        samples_per_insert: 128.0,
        min_size_to_sample: 2_000,
        error_buffer: 0.1,
    };
    let err = cfg.validate_for_loop(insert, batch).unwrap_err();
    assert!(
        matches!(err, RateLimiterError::Scheduler { half, .. } if half == 262_144.0),
        "{err}"
    );
    let steps = runs_or_suggests_a_buffer_that_runs(cfg, insert, batch, 200).unwrap();
    // 2,048 x 128 / 256 = 1,024 learner steps per insert, less the lag the window allows.
    assert!(steps >= 199 * 1_024 - 2_048, "{steps} learner steps");
}

/// Threaded IQL's actor: while an insert's rows are being written (the moment the learner
/// could run), the limiter must count only rows already in the replay and grant no sample
/// beyond them. Counting first (the old order) fails here at the first insert.
#[test]
fn a_threaded_insert_is_counted_only_after_its_rows_are_written() {
    let cfg = RateLimiterConfig {
        samples_per_insert: 1.0,
        min_size_to_sample: 8,
        error_buffer: 16.0,
    };
    let shared = SharedLimiter::new(RateLimiter::new(cfg).unwrap());
    let mut written = 0u64;
    for _ in 0..6 {
        let mut write = || {
            let l = shared.snapshot();
            assert_eq!(
                l.inserts, written,
                "the limiter counted rows not yet written"
            );
            // The learner tries every sample it can while the rows are being written: each
            // must be backed by rows already written.
            while shared.sample(1, Duration::ZERO).is_ok() {
                assert!(
                    written >= cfg.min_size_to_sample,
                    "a sample was granted with only {written} rows written"
                );
            }
            written += 8;
            0
        };
        shared
            .insert_with(8, Duration::from_secs(1), &mut write)
            .unwrap();
        assert_eq!(shared.snapshot().inserts, written);
    }
    assert!(shared.snapshot().samples > 0, "the learner never sampled");
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
