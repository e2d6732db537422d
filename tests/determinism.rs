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

#[test]
fn the_episode_log_changes_no_trajectory_and_reports_each_episode_as_stepped() {
    // The log is filled in the step's own pass (from what each arena kept before its respawn):
    // a logged batch must step exactly like an unlogged one, and every entry must match the
    // rewards and steps the step buffers showed.
    let (arenas, steps) = (16, 300);
    for (name, loaded) in shipped_scenarios() {
        let mut plain = EnvBatch::new(&loaded, arenas, 9).unwrap();
        let mut logged = EnvBatch::new(&loaded, arenas, 9).unwrap();
        logged.start_episode_log(10_000);
        plain.desync_clocks();
        logged.desync_clocks();
        let n = logged.layout().learners;
        let mut policy = RandomPolicy::new(9, arenas, logged.layout().actions);
        // Per arena: learners' returns summed from the reward buffer, steps since the episode
        // began, episodes finished, and the counters seen after the previous step.
        let mut returns = vec![vec![0.0f32; n]; arenas];
        let mut length: Vec<u32> = (0..arenas).map(|k| logged.clock(k).t).collect();
        let mut episode = vec![0u32; arenas];
        let mut counters: Vec<Vec<u32>> = (0..arenas).map(|k| logged.counters(k)).collect();
        let mut seen = 0;
        for step in 0..steps {
            policy.act(plain.actions_mut());
            logged.actions_mut().copy_from_slice(plain.actions_mut());
            plain.step().unwrap();
            logged.step().unwrap();
            assert_eq!(
                plain.state_hash(),
                logged.state_hash(),
                "{name}: the log changed the trajectory at step {step}"
            );
            let b = logged.buffers();
            let (rewards, term, trunc) =
                (b.rewards.clone(), b.terminated.clone(), b.truncated.clone());
            let mut entries = logged.take_episodes().into_iter();
            for k in 0..arenas {
                for (r, x) in returns[k].iter_mut().zip(&rewards[k * n..(k + 1) * n]) {
                    *r += x;
                }
                length[k] += 1;
                if term[k] == 0 && trunc[k] == 0 {
                    let now = logged.counters(k);
                    assert!(
                        now.iter().zip(&counters[k]).all(|(a, b)| a >= b),
                        "{name}: arena {k}'s counters went down within an episode"
                    );
                    counters[k] = now;
                    continue;
                }
                let e = entries.next().unwrap_or_else(|| {
                    panic!("{name}: arena {k}'s episode ended at step {step} but was not logged")
                });
                assert_eq!(e.arena as usize, k, "{name}: log out of arena order");
                assert_eq!(
                    e.terminated,
                    term[k] != 0,
                    "{name}: arena {k} terminated flag"
                );
                assert_eq!(e.length, length[k], "{name}: arena {k} episode length");
                assert_eq!(e.episode, episode[k], "{name}: arena {k} episode index");
                assert_eq!(e.returns[..n], returns[k][..], "{name}: arena {k} returns");
                assert!(
                    e.counters.len() == counters[k].len()
                        && e.counters.iter().zip(&counters[k]).all(|(a, b)| a >= b),
                    "{name}: arena {k} logged counters {:?} below the last seen {:?}",
                    e.counters,
                    counters[k]
                );
                returns[k].fill(0.0);
                length[k] = 0;
                episode[k] += 1;
                counters[k] = logged.counters(k);
                seen += 1;
            }
            assert!(
                entries.next().is_none(),
                "{name}: an episode logged that did not end"
            );
        }
        if loaded.scenario.max_steps <= 1000 {
            assert!(seen > 0, "{name}: no episode ended in {steps} steps");
        }
    }
}

/// `reseed` turns a batch that has stepped under one seed into the batch `new` makes with
/// another, for every shipped scenario: the same trajectory, state hash by state hash.
#[test]
fn reseed_steps_exactly_as_a_new_batch_with_that_seed() {
    for (name, loaded) in shipped_scenarios() {
        let arenas = 6;
        let mut fresh = EnvBatch::new(&loaded, arenas, 77).unwrap();
        let mut reused = EnvBatch::new(&loaded, arenas, 5).unwrap();
        let mut warmup = RandomPolicy::new(1, arenas, reused.layout().actions);
        for _ in 0..37 {
            warmup.act(reused.actions_mut());
            reused.step().unwrap();
        }
        reused.reseed(77);
        assert_eq!(reused.seed(), 77);
        assert!(
            reused.buffers().obs == fresh.buffers().obs,
            "{name}: first observations differ"
        );
        assert_eq!(
            reused.state_hash(),
            fresh.state_hash(),
            "{name}: first state"
        );
        let mut a = RandomPolicy::new(9, arenas, fresh.layout().actions);
        let mut b = RandomPolicy::new(9, arenas, reused.layout().actions);
        for t in 0..120 {
            a.act(fresh.actions_mut());
            b.act(reused.actions_mut());
            fresh.step().unwrap();
            reused.step().unwrap();
            assert_eq!(
                fresh.state_hash(),
                reused.state_hash(),
                "{name}: step {t} differs after reseed"
            );
            assert!(
                fresh.buffers().obs == reused.buffers().obs,
                "{name}: step {t} obs"
            );
        }
    }
}

#[test]
fn arenas_step_alike_in_a_batch_too_big_for_the_cache() {
    // 512 Commons Harvest arenas hold about 5 MiB of observations and cells, more than a core's
    // second-level cache: the step then asks for each next arena's map ahead of use. The first
    // 8 arenas must step exactly as they do in a batch of 8.
    let text = std::fs::read_to_string("assets/scenarios/commons_harvest_open.ron").unwrap();
    let loaded = Scenario::parse(&text, "commons_harvest_open.ron").unwrap();
    let mut small = EnvBatch::new(&loaded, 8, 3).unwrap();
    let mut large = EnvBatch::new(&loaded, 512, 3).unwrap();
    let mut policy = RandomPolicy::new(3, 512, large.layout().actions);
    let per_arena = small.buffers().obs.len() / 8;
    for step in 0..60 {
        policy.act(large.actions_mut());
        let acts = large.actions_mut()[..small.actions_mut().len()].to_vec();
        small.actions_mut().copy_from_slice(&acts);
        small.step().unwrap();
        large.step().unwrap();
        assert_eq!(
            small.buffers().obs,
            large.buffers().obs[..8 * per_arena],
            "step {step}"
        );
        for k in 0..8 {
            assert_eq!(small.agents(k), large.agents(k), "arena {k}, step {step}");
        }
    }
}
