//! Stepping allocates nothing in steady state: every buffer is made at spawn.

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;

use gridarena::engine::EnvBatch;
use gridarena::policy::RandomPolicy;
use gridarena::scenario::Scenario;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn steady_state_steps_do_not_allocate() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        // Every shipped scenario.
        let mut paths: Vec<_> = std::fs::read_dir("assets/scenarios")
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "ron"))
            .collect();
        paths.sort();
        assert!(paths.len() >= 11, "{paths:?}");
        for path in &paths {
            let path = path.display().to_string();
            let loaded = Scenario::load(std::path::Path::new(&path)).unwrap();
            let mut batch = EnvBatch::new(&loaded, 256, 1).unwrap();
            let mut policy = RandomPolicy::new(1, 256, batch.layout().actions);
            // Warm-up: the first runs initialise schedules and query caches. Scenarios with short
            // episodes (pursuit_3, coin and matrix games) cover auto-resets in the measured region.
            for _ in 0..20 {
                policy.act(batch.actions_mut());
                batch.step().unwrap();
            }
            let region = Region::new(GLOBAL);
            for _ in 0..200 {
                policy.act(batch.actions_mut());
                batch.step().unwrap();
            }
            let stats = region.change();
            assert_eq!(
                stats.allocations + stats.reallocations,
                0,
                "{path}: 200 steps allocated: {stats:?}"
            );
        }
    });
}
