//! cue_memory (docs/scenarios.md): the cue is shown at the first step only, the choice at the
//! last step pays the cue's action, and no memoryless policy beats chance while remembering the
//! cue earns the optimum (checked exactly, by enumerating every deterministic memoryless policy).

use std::collections::BTreeMap;

use gridarena::engine::EnvBatch;
use gridarena::policy::{RandomPolicy, heuristics_for};
use gridarena::scenario::Scenario;
use gridarena::train::config::NetworkConfig;
use gridarena::train::eval::evaluate_policy;

/// A cue_memory scenario with `k` cues, choice at step `l`, `players` players.
fn scenario(k: u8, l: u16, wrong: f32, players: u32) -> String {
    format!(
        r#"Scenario(
    name: "cue",
    substrate: CueMemory((
        cues: {k},
        length: {l},
        wrong_reward: {wrong:?},
    )),
    roles: [(kind: player, count: {players})],
    max_steps: {l},
)"#
    )
}

fn batch(src: &str, arenas: usize, seed: u64) -> EnvBatch {
    let loaded = Scenario::parse(src, "cue.ron").unwrap();
    EnvBatch::new(&loaded, arenas, seed).unwrap()
}

/// Each learner's cue, read from its first-step observation (`k` cue bytes, then the flag).
fn shown_cues(obs: &[u8], k: usize) -> Vec<u8> {
    obs.chunks_exact(k + 1)
        .map(|o| {
            assert_eq!(o[..k].iter().filter(|&&v| v != 0).count(), 1, "{o:?}");
            o[..k].iter().position(|&v| v == 1).unwrap() as u8
        })
        .collect()
}

#[test]
fn the_cue_is_shown_at_the_first_step_only_and_the_last_step_is_flagged() {
    let (k, l) = (3usize, 4u16);
    let mut b = batch(&scenario(k as u8, l, 0.0, 2), 64, 5);
    assert_eq!(b.layout().obs_len, k + 1);
    let first = shown_cues(&b.buffers().obs, k);
    for o in b.buffers().obs.chunks_exact(k + 1) {
        assert_eq!(o[k], 0, "no choice at the cue's step");
    }
    // Each player has its own cue: in some arena the two players' cues differ.
    assert!(first.chunks_exact(2).any(|p| p[0] != p[1]));
    for t in 1..l {
        b.actions_mut().fill(0);
        b.step().unwrap();
        for o in b.buffers().obs.chunks_exact(k + 1) {
            assert_eq!(o[..k], vec![0u8; k][..], "step {t}: the cue is gone");
            assert_eq!(o[k], u8::from(t == l - 1), "step {t}: choose-now flag");
        }
    }
    // The choice ends the episode; the next one shows a fresh cue.
    b.actions_mut().fill(0);
    b.step().unwrap();
    assert_eq!(b.buffers().terminated, vec![1; 64]);
    assert_eq!(b.buffers().truncated, vec![0; 64]);
    assert_eq!(b.clock(0).episode, 1);
    let second = shown_cues(&b.buffers().obs, k);
    assert_ne!(first, second);
}

#[test]
fn cues_are_uniform_and_keyed_by_the_seed() {
    let k = 4;
    let b = batch(&scenario(k as u8, 2, 0.0, 1), 4000, 9);
    let cues = shown_cues(&b.buffers().obs, k);
    let mut counts = [0usize; 4];
    for &c in &cues {
        counts[c as usize] += 1;
    }
    // 1000 expected per cue, standard deviation 27.4: five of them either way.
    for n in counts {
        assert!((863..=1137).contains(&n), "{counts:?}");
    }
    let again = batch(&scenario(k as u8, 2, 0.0, 1), 4000, 9);
    assert_eq!(shown_cues(&again.buffers().obs, k), cues);
    let other = batch(&scenario(k as u8, 2, 0.0, 1), 4000, 10);
    assert_ne!(shown_cues(&other.buffers().obs, k), cues);
}

#[test]
fn the_last_step_pays_the_cue_and_no_other_step_pays() {
    let (k, l, arenas) = (3usize, 3u16, 32);
    let mut b = batch(&scenario(k as u8, l, -0.25, 1), arenas, 2);
    b.start_episode_log(64);
    let cues = shown_cues(&b.buffers().obs, k);
    // Before the last step, playing the cue earns nothing and ends nothing.
    for _ in 1..l {
        b.actions_mut().copy_from_slice(&cues);
        b.step().unwrap();
        assert_eq!(b.buffers().rewards, vec![0.0; arenas]);
        assert_eq!(b.buffers().terminated, vec![0; arenas]);
    }
    // Last step: even arenas play their cue, odd arenas the next action.
    let choice: Vec<u8> = cues
        .iter()
        .enumerate()
        .map(|(i, &c)| if i % 2 == 0 { c } else { (c + 1) % k as u8 })
        .collect();
    b.actions_mut().copy_from_slice(&choice);
    b.step().unwrap();
    let expected: Vec<f32> = (0..arenas)
        .map(|i| if i % 2 == 0 { 1.0 } else { -0.25 })
        .collect();
    assert_eq!(b.buffers().rewards, expected);
    assert_eq!(b.buffers().terminated, vec![1; arenas]);
    let mut log = b.take_episodes();
    log.sort_by_key(|e| e.arena);
    assert_eq!(log.len(), arenas);
    for e in &log {
        let right = e.arena % 2 == 0;
        assert_eq!(e.counters, vec![u32::from(right)], "arena {}", e.arena);
        assert_eq!(e.returns, vec![if right { 1.0 } else { -0.25 }]);
        assert!(e.terminated);
        assert_eq!(e.length, u32::from(l));
    }
}

/// The value of every deterministic memoryless policy (a map from observation to action), each
/// averaged over the K cues exactly: the rules are deterministic given the cue, so every arena
/// showing cue c earns the same, and the value is the mean over c of that return. Returns the
/// values and the value of the policy that remembers the cue.
fn memoryless_values(k: u8, l: u16, wrong: f32) -> (Vec<f64>, f64) {
    let src = scenario(k, l, wrong, 1);
    let (arenas, seed) = (256, 3);
    let obs_len = k as usize + 1;
    // Every observation a policy can meet: the observations do not depend on the actions,
    // so one episode of any play lists them all (a lookup below would fail otherwise).
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut b = batch(&src, arenas, seed);
    for _ in 0..l {
        for o in b.buffers().obs.chunks_exact(obs_len) {
            if !seen.contains(&o.to_vec()) {
                seen.push(o.to_vec());
            }
        }
        b.actions_mut().fill(0);
        b.step().unwrap();
    }
    assert_eq!(
        seen.len(),
        k as usize + if l > 2 { 2 } else { 1 },
        "{seen:?}"
    );

    // One episode under `act(observation, remembered cue)`; the value averaged over cues.
    let run = |act: &dyn Fn(&[u8], u8) -> u8| -> f64 {
        let mut b = batch(&src, arenas, seed);
        let cues = shown_cues(&b.buffers().obs, k as usize);
        let mut ret = vec![0.0f64; arenas];
        for _ in 0..l {
            let actions: Vec<u8> = b
                .buffers()
                .obs
                .chunks_exact(obs_len)
                .zip(&cues)
                .map(|(o, &c)| act(o, c))
                .collect();
            b.actions_mut().copy_from_slice(&actions);
            b.step().unwrap();
            for (r, &x) in ret.iter_mut().zip(&b.buffers().rewards) {
                *r += f64::from(x);
            }
        }
        assert_eq!(b.buffers().terminated, vec![1; arenas]);
        let mut by_cue: BTreeMap<u8, f64> = BTreeMap::new();
        for (&c, &r) in cues.iter().zip(&ret) {
            let v = *by_cue.entry(c).or_insert(r);
            assert_eq!(v, r, "cue {c}: the return is a function of the cue");
        }
        assert_eq!(by_cue.len(), k as usize, "every cue drawn");
        by_cue.values().sum::<f64>() / f64::from(k)
    };

    let n = seen.len() as u32;
    let values = (0..u32::from(k).pow(n))
        .map(|index| {
            let table: Vec<u8> = (0..n)
                .map(|j| ((index / u32::from(k).pow(j)) % u32::from(k)) as u8)
                .collect();
            run(&|o, _| {
                let j = seen
                    .iter()
                    .position(|s| s == o)
                    .expect("a listed observation");
                table[j]
            })
        })
        .collect();
    let remember = run(&|o, c| if o[k as usize] != 0 { c } else { 0 });
    (values, remember)
}

#[test]
fn every_memoryless_policy_earns_chance_and_remembering_earns_the_optimum() {
    for (k, l, wrong) in [(2u8, 3u16, 0.0f32), (3, 2, 0.0), (3, 4, -0.5)] {
        let (values, remember) = memoryless_values(k, l, wrong);
        let chance = (1.0 + f64::from(k - 1) * f64::from(wrong)) / f64::from(k);
        assert!(
            values.len() >= 16,
            "{k} cues, length {l}: {} policies",
            values.len()
        );
        let best = values.iter().copied().fold(f64::MIN, f64::max);
        for v in &values {
            assert!(
                (v - chance).abs() < 1e-12,
                "{k} cues, length {l}: {v} vs {chance}"
            );
        }
        assert!((best - chance).abs() < 1e-12);
        assert_eq!(remember, 1.0, "{k} cues, length {l}");
    }
}

#[test]
fn the_shipped_asset_remember_the_cue_earns_one_and_random_about_a_quarter() {
    let loaded = Scenario::load("assets/scenarios/cue_memory.ron".as_ref()).unwrap();
    let episodes = 400;
    let mut h = heuristics_for(&loaded, 1, episodes);
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].0, "remember the cue");
    let remembered = evaluate_policy(&loaded, episodes, 1, h[0].1.as_mut()).unwrap();
    // Every episode pays 1 (the mean over 400 is 1 up to summation rounding).
    assert!(
        (remembered.mean_return - 1.0).abs() < 1e-9,
        "{}",
        remembered.mean_return
    );
    assert!((remembered.counters["correct"] - 1.0).abs() < 1e-9);
    let mut random = RandomPolicy::new(1, episodes, 4);
    let random = evaluate_policy(&loaded, episodes, 1, &mut random).unwrap();
    // 1/4 expected; the standard error over 400 episodes is 0.022.
    assert!(
        (random.mean_return - 0.25).abs() < 0.1,
        "{}",
        random.mean_return
    );
}

#[test]
fn bad_parameters_are_located_errors() {
    let cases = [
        (scenario(1, 4, 0.0, 1), "1 cues", "substrate.cues"),
        (scenario(3, 1, 0.0, 1), "length 1", "substrate.length"),
        (
            scenario(3, 8, 0.0, 1).replace("max_steps: 8", "max_steps: 5"),
            "max_steps 5 cuts off the choice at step 8",
            "max_steps",
        ),
        (
            scenario(3, 8, 1.0, 1),
            "wrong_reward 1 is not below correct_reward 1",
            "substrate.wrong_reward",
        ),
        (
            scenario(3, 8, 0.0, 1).replace("roles:", "map: [\"*\"],\n    roles:"),
            "has no map",
            "map",
        ),
    ];
    for (src, message, field) in cases {
        let e = Scenario::parse(&src, "cue.ron").unwrap_err();
        assert!(e.message.contains(message), "{e}");
        assert_eq!(e.field, field, "{e}");
        assert!(e.line >= 1 && e.column >= 1, "{e}");
    }
}

/// PQN with a GRU network learns to remember the cue (the greedy policy, acted step by step
/// with its hidden state by `eval`, is right nearly always), where every memoryless policy is
/// at chance (above). One seed of the README figure: 1M environment steps.
#[test]
fn pqn_with_a_gru_network_learns_to_remember_the_cue() {
    use gridarena::critic::{Chosen, Device};
    use gridarena::train::config::{NetworkKind, RunConfig};
    use gridarena::train::{TrainOptions, train};
    let out = std::env::temp_dir().join(format!("gridarena-cue-gru-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let cfg = RunConfig {
        scenario: Some("assets/scenarios/cue_memory.ron".into()),
        device: Device::Cpu,
        total_steps: 1_000_000,
        network: NetworkConfig {
            kind: NetworkKind::Gru,
            layers: 1,
            hidden: 64,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    train(&cfg, &out, &TrainOptions::default()).unwrap();
    let cpu = Chosen::Cpu {
        reason: "test".into(),
    };
    let report = gridarena::train::eval::evaluate(&out, 400, &cpu).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        report.policy.mean_return >= 0.9,
        "greedy GRU policy: {}",
        report.policy.mean_return
    );
    assert!(
        report.random.mean_return < 0.35,
        "{}",
        report.random.mean_return
    );
}
