//! Advantage Alignment on the iterated prisoner's dilemma: independent PPO learners (beta 0)
//! learn to defect whatever the other did, while aligned learners reciprocate on several seeds,
//! cooperating after mutual cooperation and defecting after mutual defection. And what it
//! cannot work on is refused.

use std::path::{Path, PathBuf};

use gridarena::critic::Device;
use gridarena::policy::Policy;
use gridarena::train::config::sweep::parse_axis;
use gridarena::train::config::{Algo, RunConfig};
use gridarena::train::{TrainOptions, load_policy, train};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-aa-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn ipd(beta: f32, seed: u64, updates: u64) -> RunConfig {
    let mut cfg = RunConfig {
        scenario: Some(root().join("assets/scenarios/prisoners_dilemma.ron")),
        algo: Algo::AdvantageAlignment,
        device: Device::Cpu,
        seed,
        arenas: 64,
        rollout: 16,
        total_steps: 64 * 16 * updates,
        checkpoint_every: updates,
        ..RunConfig::default()
    };
    cfg.alignment.beta = beta;
    // One network for both players (with the player's index as an input).
    cfg.network.shared = true;
    cfg.learn.gamma = 0.96;
    cfg.learn.lr = 0.005;
    cfg.network.hidden = 16;
    cfg.network.layers = 1;
    cfg
}

/// The memory-one states: (name, the observation both players see: the previous joint action
/// one-hot per player, then the first-step flag).
const STATES: [(&str, [u8; 5]); 5] = [
    ("start", [0, 0, 0, 0, 1]),
    ("CC", [1, 0, 1, 0, 0]),
    ("CD", [1, 0, 0, 1, 0]),
    ("DC", [0, 1, 1, 0, 0]),
    ("DD", [0, 1, 0, 1, 0]),
];

/// Each player's probability of cooperating in each state (`[player][state]`).
fn cooperation(run: &Path) -> [[f64; 5]; 2] {
    let mut policy = load_policy(run).unwrap();
    let mut out = [[0.0; 5]; 2];
    for (s, (_, obs)) in STATES.iter().enumerate() {
        let both: Vec<u8> = obs.iter().chain(obs.iter()).copied().collect();
        let logits = policy.q_values(&both).unwrap().unwrap();
        for (p, z) in logits.chunks_exact(2).enumerate() {
            let (c, d) = (z[0] as f64, z[1] as f64);
            out[p][s] = 1.0 / (1.0 + (d - c).exp());
        }
    }
    out
}

/// Whether both players reciprocate: cooperate (> 0.5) after mutual cooperation and defect
/// (< 0.5) after mutual defection.
fn reciprocate(coop: &[[f64; 5]; 2]) -> bool {
    coop.iter().all(|p| p[1] > 0.5 && p[4] < 0.5)
}

#[test]
fn aligned_learners_reciprocate_where_independent_ones_defect() {
    // Measured here: seeds 0, 3 and 4 of 5 reciprocate (the others: one player cooperates or
    // defects whatever happened); independent learners defect in every state on every seed.
    let dir = temp("ipd");
    let updates = 300;
    let mut reciprocal = 0;
    for seed in 0..5 {
        let run = dir.join(format!("aa{seed}"));
        train(&ipd(1.0, seed, updates), &run, &TrainOptions::default()).unwrap();
        let coop = cooperation(&run);
        eprintln!("seed {seed} aligned: {coop:.2?}");
        reciprocal += usize::from(reciprocate(&coop));
    }
    assert!(reciprocal >= 2, "{reciprocal} of 5 seeds reciprocate");
    let run = dir.join("ippo");
    train(&ipd(0.0, 0, updates), &run, &TrainOptions::default()).unwrap();
    let coop = cooperation(&run);
    eprintln!("independent: {coop:.2?}");
    for p in coop {
        assert!(p.iter().all(|&c| c < 0.5), "beta 0 defects: {coop:?}");
    }
}

#[test]
fn a_sweep_varies_the_alignment_weight_per_replica() {
    let dir = temp("sweep");
    let mut cfg = ipd(1.0, 0, 4);
    let (key, values) = parse_axis("beta=[0.0, 2.0]").unwrap();
    cfg.sweep.insert(key, values);
    let run = dir.join("run");
    let summary = train(&cfg, &run, &TrainOptions::default()).unwrap();
    let table = summary.sweep.expect("a sweep run ranks its grid points");
    assert_eq!(table.keys, ["beta"]);
    // Replica 1 (beta 2) learns from other advantages than replica 0 (beta 0, IPPO): their
    // policies part after the first update, from the same seed.
    let at = |k: usize| {
        let mut p = gridarena::train::GreedyPolicy::restore_replica(
            gridarena::train::new_learner(
                &RunConfig {
                    sweep: Default::default(),
                    ..cfg.clone()
                },
                &gridarena::scenario::Scenario::load(cfg.scenario.as_ref().unwrap()).unwrap(),
                &gridarena::critic::choose_device(Device::Cpu).unwrap(),
            )
            .unwrap(),
            &gridarena::train::run_dir::RunDir::open(&run).unwrap(),
            k,
        )
        .unwrap();
        let obs: Vec<u8> = STATES
            .iter()
            .flat_map(|(_, o)| o.iter().chain(o.iter()))
            .copied()
            .collect();
        p.q_values(&obs).unwrap().unwrap()
    };
    assert_ne!(at(0), at(1));
}

#[test]
fn what_cannot_be_aligned_is_refused() {
    let dir = temp("refused");
    let mut one = ipd(1.0, 0, 2);
    one.scenario = Some(root().join("assets/scenarios/cue_memory.ron"));
    let mut negative = ipd(-1.0, 0, 2);
    negative.checkpoint_every = 1;
    for (k, (cfg, needle)) in [(one, "at least 2"), (negative, "`alignment.beta`")]
        .into_iter()
        .enumerate()
    {
        let run = dir.join(format!("case{k}"));
        let e = train(&cfg, &run, &TrainOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "case {k}: {e}");
        assert!(
            !run.join("checkpoints").exists(),
            "case {k} left a checkpoint"
        );
    }
}
