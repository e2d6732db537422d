//! The same seed gives the same trajectories whatever the thread count, for every shipped
//! scenario; another seed gives others.

use gridarena::engine::EnvBatch;
use gridarena::policy::RandomPolicy;
use gridarena::scenario::{LoadedScenario, Scenario};

/// Hash of the whole batch after every step of a random-policy rollout.
fn rollout_hash(loaded: &LoadedScenario, seed: u64, threads: usize) -> Vec<u64> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let arenas = 48; // several rayon tasks per thread
        let mut batch = EnvBatch::new(loaded, arenas, seed).unwrap();
        let mut policy = RandomPolicy::new(seed, arenas, batch.layout().actions);
        (0..150)
            .map(|_| {
                policy.act(batch.actions_mut());
                batch.step().unwrap();
                batch.state_hash()
            })
            .collect()
    })
}

fn shipped_scenarios() -> Vec<(String, LoadedScenario)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("assets/scenarios").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "ron") {
            let loaded = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
            out.push((path.display().to_string(), loaded));
        }
    }
    assert!(
        out.len() >= 2,
        "expected the shipped scenarios under assets/scenarios"
    );
    out
}

#[test]
fn one_and_two_threads_give_identical_trajectories_for_every_scenario() {
    for (name, loaded) in shipped_scenarios() {
        let one = rollout_hash(&loaded, 42, 1);
        let two = rollout_hash(&loaded, 42, 2);
        assert_eq!(
            one, two,
            "{name}: trajectories differ between 1 and 2 threads"
        );
        let other = rollout_hash(&loaded, 43, 2);
        assert_ne!(
            one.last(),
            other.last(),
            "{name}: seed 43 gave seed 42's trajectory"
        );
    }
}

#[test]
fn arena_streams_do_not_depend_on_batch_size() {
    // Arena 0 of a 1-arena batch and of a 48-arena batch see the same randomness.
    let loaded = Scenario::default_pursuit();
    let mut small = EnvBatch::new(&loaded, 1, 5).unwrap();
    let mut large = EnvBatch::new(&loaded, 48, 5).unwrap();
    let mut p_small = RandomPolicy::new(5, 1, 5);
    let mut p_large = RandomPolicy::new(5, 48, 5);
    for _ in 0..100 {
        p_small.act(small.actions_mut());
        p_large.act(large.actions_mut());
        small.step().unwrap();
        large.step().unwrap();
        assert_eq!(small.agents(0), large.agents(0));
    }
}
