//! Opponent shaping on the iterated prisoner's dilemma. Independent PPO learners (beta 0) learn
//! to defect whatever the other did. Advantage Alignment's learners reciprocate on several seeds,
//! cooperating after mutual cooperation and defecting after mutual defection. LOQA's learners
//! play tit-for-tat's replies on most seeds, so always-defect cannot exploit them. And what
//! either cannot work on is refused.

use std::path::{Path, PathBuf};

use gridarena::critic::{Device, choose_device};
use gridarena::policy::Policy;
use gridarena::population::crossplay::crossplay;
use gridarena::population::{MemberSpec, Population, Sampling};
use gridarena::train::config::sweep::parse_axis;
use gridarena::train::config::{Algo, RunConfig};
use gridarena::train::run_dir::RunDir;
use gridarena::train::state_policy::state_policy;
use gridarena::train::{GreedyPolicy, TrainOptions, load_scenario, new_learner, train};

#[path = "common/checks.rs"]
mod checks;
#[path = "common/runs.rs"]
mod runs;
#[path = "common/skip.rs"]
mod skip;
#[path = "common/sweeps.rs"]
mod sweeps;

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
    // As assets/runs/advantage_alignment_ipd.ron.
    cfg.ppo.gae_lambda = 0.6;
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

/// A replica's greedy policy (its networks restored from the run's newest checkpoint).
fn replica(cfg: &RunConfig, run: &Path, k: usize) -> GreedyPolicy {
    let one = RunConfig {
        seeds: 1,
        sweep: Default::default(),
        ..cfg.clone()
    };
    let loaded = load_scenario(&one).unwrap();
    let learner = new_learner(&one, &loaded, &choose_device(Device::Cpu).unwrap()).unwrap();
    GreedyPolicy::restore_replica(learner, &RunDir::open(run).unwrap(), k).unwrap()
}

/// Each player's probability of cooperating in each state (`[player][state]`), from the
/// evaluation's state table; checked against the policy's values on observations written
/// here by hand.
fn cooperation(cfg: &RunConfig, run: &Path, k: usize) -> [[f64; 5]; 2] {
    let loaded = load_scenario(cfg).unwrap();
    let mut policy = replica(cfg, run, k);
    let table = state_policy(&loaded, &mut policy, true).unwrap().unwrap();
    let names = [
        "start",
        "cooperate/cooperate",
        "cooperate/defect",
        "defect/cooperate",
    ];
    assert_eq!(table.states[..4], names);
    let mut out = [[0.0; 5]; 2];
    for (s, (_, obs)) in STATES.iter().enumerate() {
        let both: Vec<u8> = obs.iter().chain(obs.iter()).copied().collect();
        let logits = policy.q_values(&both).unwrap().unwrap();
        for (p, z) in logits.chunks_exact(2).enumerate() {
            let (c, d) = (z[0] as f64, z[1] as f64);
            out[p][s] = 1.0 / (1.0 + (d - c).exp());
            let listed = table.probs[p][s][0];
            assert!(
                (listed - out[p][s]).abs() < 1e-6,
                "{p} {s}: {listed} vs {}",
                out[p][s]
            );
        }
    }
    out
}

/// Whether both players reciprocate: cooperate (> 0.5) after mutual cooperation and defect
/// (< 0.5) after mutual defection.
fn reciprocate(coop: &[[f64; 5]; 2]) -> bool {
    coop.iter().all(|p| p[1] > 0.5 && p[4] < 0.5)
}

/// Player 0's return over 16 rounds against always-defect when it plays its greedy choice in
/// each state (cooperate when its probability is above 0.5).
fn return_against_defector(coop: &[[f64; 5]; 2]) -> f64 {
    let mut state = 0; // start
    let mut total = 0.0;
    for _ in 0..16 {
        let cooperates = coop[0][state] > 0.5;
        total += if cooperates { 0.0 } else { 1.0 };
        state = if cooperates { 2 } else { 4 }; // (C, D) or (D, D)
    }
    total
}

#[test]
fn aligned_learners_reciprocate_where_independent_ones_defect() {
    // 10 seeds as the replicas of one run. Measured here: 7 of 10 reciprocate (15 of 20
    // over seeds 0-19); independent learners defect in every state.
    let dir = temp("ipd");
    let mut cfg = ipd(1.0, 0, 300);
    cfg.seeds = 10;
    let run = dir.join("aa");
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let mut reciprocal = 0;
    let mut predicted = Vec::new();
    for k in 0..cfg.seeds {
        let coop = cooperation(&cfg, &run, k);
        eprintln!("seed {k} aligned: {coop:.2?}");
        reciprocal += usize::from(reciprocate(&coop));
        predicted.push(return_against_defector(&coop));
    }
    assert!(reciprocal >= 5, "{reciprocal} of 10 seeds reciprocate");
    // Against always-defect, through cross-play (player 0's slot): each seed earns what its
    // state table predicts, and a defector earns 1 a round.
    let loaded = load_scenario(&cfg).unwrap();
    let fixed = Population {
        name: "fixed".into(),
        sampling: Sampling::Uniform,
        members: vec![MemberSpec::Scripted("always defect".into())],
    };
    let mut rows = Population::of_run(&run);
    rows.members
        .insert(0, MemberSpec::Scripted("always defect".into()));
    let table = crossplay(
        &loaded,
        &rows,
        &fixed,
        &[0],
        8,
        0,
        &choose_device(Device::Cpu).unwrap(),
        &indicatif::ProgressBar::hidden(),
    )
    .unwrap();
    assert_eq!(
        table.row_mean[0][0], 16.0,
        "a defector beside always-defect"
    );
    for (k, want) in predicted.iter().enumerate() {
        assert_eq!(
            table.row_mean[1 + k][0],
            *want,
            "seed {k} beside always-defect"
        );
    }
    eprintln!("beside always-defect: {predicted:?} (a defector: 16)");
    let mut indep = ipd(0.0, 0, 300);
    indep.seeds = 2;
    let run = dir.join("ippo");
    train(&indep, &run, &TrainOptions::default()).unwrap();
    for k in 0..indep.seeds {
        let coop = cooperation(&indep, &run, k);
        eprintln!("seed {k} independent: {coop:.2?}");
        for p in coop {
            assert!(p.iter().all(|&c| c < 0.5), "beta 0 defects: {coop:?}");
        }
    }
}

/// As `assets/runs/loqa_ipd.ron`: LOQA's opponent term with weight 6, the authors' TD(0)
/// advantage and an entropy bonus of 0.1.
fn ipd_loqa(seed: u64, updates: u64) -> RunConfig {
    let mut cfg = ipd(0.0, seed, updates);
    cfg.algo = Algo::Loqa;
    cfg.loqa.weight = 6.0;
    cfg.ppo.gae_lambda = 0.0;
    cfg.ppo.ent_coef = 0.1;
    cfg
}

/// Whether both players play tit-for-tat's replies: cooperate after mutual cooperation, defect
/// after being exploited (player 0 after cooperate/defect, player 1 after defect/cooperate) and
/// after mutual defection.
fn tit_for_tat_replies(coop: &[[f64; 5]; 2]) -> bool {
    let exploited = [2, 3];
    coop.iter()
        .zip(exploited)
        .all(|(p, s)| p[1] > 0.5 && p[s] < 0.5 && p[4] < 0.5)
}

#[test]
fn loqa_learners_retaliate_and_are_not_exploited_by_always_defect() {
    // 10 seeds as the replicas of one run. Measured here: 10 of 10 play tit-for-tat's
    // replies (20 of 20 over seeds 0-19 and over 100-119; with PPO's usual entropy bonus of
    // 0.01, 8 of 10 and 16 of 20).
    let dir = temp("loqa");
    let mut cfg = ipd_loqa(0, 300);
    cfg.seeds = 10;
    let run = dir.join("loqa");
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let mut replies = 0;
    let mut predicted = Vec::new();
    for k in 0..cfg.seeds {
        let coop = cooperation(&cfg, &run, k);
        eprintln!("seed {k} loqa: {coop:.2?}");
        replies += usize::from(tit_for_tat_replies(&coop));
        predicted.push(return_against_defector(&coop));
    }
    eprintln!("beside always-defect: {predicted:?} (a defector: 16)");
    assert!(
        replies >= 9,
        "{replies} of 10 seeds play tit-for-tat's replies"
    );
    // Beside always-defect a seed loses at most the first round's 1 to a defector (16).
    let held = predicted.iter().filter(|&&r| r >= 15.0).count();
    assert!(
        held >= 9,
        "{held} of 10 seeds within 1 of a defector: {predicted:?}"
    );
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
fn shaping_learners_resume_bit_for_bit_and_their_replicas_equal_single_runs() {
    // Both rewrites keep nothing across updates: a resumed run continues bit for bit, and each
    // replica of a sweep is the single run of its grid point.
    for (name, base, axis) in [
        ("aa", ipd(1.0, 3, 6), "beta=[0.5, 2.0]"),
        ("loqa", ipd_loqa(3, 6), "weight=[1.0, 4.0]"),
    ] {
        let cfg = RunConfig {
            checkpoint_every: 2,
            ..base.clone()
        };
        let run = sweeps::assert_resumes_exactly(&cfg, &format!("shaping-{name}"), false);
        let _ = std::fs::remove_dir_all(run);
        let sweep = RunConfig {
            seeds: 2,
            ..sweeps::with_sweep(base.clone(), &[axis])
        };
        let replicas = sweep.replicas().unwrap();
        assert_eq!(replicas.len(), 4);
        let multi = sweeps::temp(&format!("shaping-{name}"));
        train(&sweep, &multi, &TrainOptions::default()).unwrap();
        sweeps::check_replicas_equal_single_runs(&multi, (&base, &replicas), &[1, 2], false);
        let _ = std::fs::remove_dir_all(multi);
    }
}

#[test]
fn what_cannot_be_aligned_is_refused() {
    let dir = temp("refused");
    let mut one = ipd(1.0, 0, 2);
    one.scenario = Some(root().join("assets/scenarios/cue_memory.ron"));
    let mut negative = ipd(-1.0, 0, 2);
    negative.checkpoint_every = 1;
    let mut loqa_one = ipd_loqa(0, 2);
    loqa_one.scenario = one.scenario.clone();
    let mut cold = ipd_loqa(0, 2);
    cold.loqa.temperature = 0.0;
    let mut far = ipd_loqa(0, 2);
    far.loqa.discount = 1.5;
    let cases = [
        (one, "at least 2"),
        (negative, "`alignment.beta`"),
        (loqa_one, "loqa shapes"),
        (cold, "`loqa.temperature`"),
        (far, "`loqa.discount`"),
    ];
    for (k, (cfg, needle)) in cases.into_iter().enumerate() {
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
