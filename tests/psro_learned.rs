//! PSRO with learned best responses (`analysis::psro_learned`): on one-round matching pennies
//! from "always heads" it finds the 50/50 equilibrium as matrix PSRO does (NashConv 2, 2, ~0),
//! populations grow by one run per slot and iteration, meta-strategies are distributions and
//! NashConv is finite, non-negative and has an interval; a second invocation with more
//! iterations trains only the new ones; `Sampling::Weights` and bad settings are refused with
//! their reasons, leaving the output directory as it was.

use std::path::{Path, PathBuf};
use std::process::Command;

use gridarena::analysis::meta_solver::{MetaSolver, PrdParams};
use gridarena::analysis::psro_learned::{
    LearnedPsroError, LearnedPsroOptions, LearnedPsroReport, STATE_FILE, learned_psro,
};
use gridarena::critic::{Device, choose_device};
use gridarena::population::{MemberSpec, Population, Sampling};
use gridarena::scenario::{LoadedScenario, Scenario};
use gridarena::train::config::{
    Algo, LearnConfig, NetworkConfig, PopulationTraining, PqnConfig, RunConfig,
};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-psrol-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

const ONCE: &str = "tests/data/matching_pennies_once.ron";

/// A small PQN best response: 16 arenas x 8 steps x 80 updates, a 1 x 16 network.
fn tiny_pqn() -> RunConfig {
    RunConfig {
        algo: Algo::Pqn,
        device: Device::Cpu,
        arenas: 16,
        rollout: 8,
        total_steps: 16 * 8 * 80,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
            ..Default::default()
        },
        learn: LearnConfig {
            lr: 3e-3,
            gamma: 0.5,
            ..Default::default()
        },
        pqn: PqnConfig {
            minibatches: 2,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

fn options(scenario: &str, iterations: usize, first: MemberSpec) -> LearnedPsroOptions {
    LearnedPsroOptions {
        iterations,
        meta_solver: MetaSolver::Prd(PrdParams::default()),
        first,
        episodes: 16,
        config: tiny_pqn(),
        scenario: root().join(scenario),
        progress: false,
    }
}

fn load(path: &str) -> LoadedScenario {
    Scenario::load(&root().join(path)).unwrap()
}

/// Runs PSRO, returning the report and the iterations this call finished.
fn run(
    o: &LearnedPsroOptions,
    dir: &Path,
) -> Result<(LearnedPsroReport, Vec<usize>), LearnedPsroError> {
    let cpu = choose_device(Device::Cpu).unwrap();
    let loaded = Scenario::load(&o.scenario).unwrap();
    let mut seen = Vec::new();
    let r = learned_psro(&loaded, o, dir, &cpu, &mut |it| seen.push(it.iteration))?;
    Ok((r, seen))
}

/// Modification times of every file under `dir`.
fn mtimes(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(mtimes(&p));
        } else {
            out.push((p.clone(), e.metadata().unwrap().modified().unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn one_round_matching_pennies_reaches_the_mixed_equilibrium_and_resumes() {
    let dir = temp("pennies");
    let heads = MemberSpec::Scripted("always heads".into());
    let (r, seen) = run(&options(ONCE, 3, heads.clone()), &dir).unwrap();
    assert_eq!(seen, vec![0, 1, 2]);
    for (k, it) in r.iterations.iter().enumerate() {
        // The population grows by one learned member per slot and iteration.
        assert_eq!(it.population_sizes, vec![k + 1, k + 1]);
        for sigma in &it.meta_strategies {
            assert_eq!(sigma.len(), k + 1);
            assert!(
                sigma.iter().all(|w| w.is_finite() && *w >= 0.0),
                "{sigma:?}"
            );
            assert!((sigma.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{sigma:?}");
        }
        assert!(it.nashconv.is_finite() && it.nashconv >= 0.0, "{it:?}");
        assert!(
            it.nashconv_ci95.is_finite() && it.nashconv_ci95 >= 0.0,
            "{it:?}"
        );
        assert_eq!(it.gains.len(), 2);
        assert_eq!(
            it.runs,
            vec![format!("iter_{k}/slot_0"), format!("iter_{k}/slot_1")]
        );
    }
    assert_eq!(
        r.members.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![4, 4]
    );
    // Matrix PSRO from (heads, heads): NashConv 2 (slot 1 switches to tails), then 2 (slot 0
    // follows), then the 2 x 2 game whose equilibrium mixes 50/50: NashConv ~0.
    let nc: Vec<f64> = r.iterations.iter().map(|i| i.nashconv).collect();
    assert!(nc[0] > 1.9 && nc[1] > 1.9 && nc[2] < 0.2, "{nc:?}");
    // Each member's action, read off the meta-game against the other slot's "always heads".
    let entry = |p: [usize; 2]| {
        r.payoffs
            .iter()
            .find(|e| e.profile == p)
            .unwrap_or_else(|| panic!("no entry {p:?}"))
    };
    let last = r.iterations.last().unwrap();
    for slot in 0..2 {
        let heads_mass: f64 = last.meta_strategies[slot]
            .iter()
            .enumerate()
            .filter(|(j, _)| {
                let p = if slot == 0 { [*j, 0] } else { [0, *j] };
                // Against heads, heads matches: +1 for slot 0, -1 for slot 1.
                let v = entry(p).mean[slot];
                if slot == 0 { v > 0.0 } else { v < 0.0 }
            })
            .map(|(_, w)| w)
            .sum();
        assert!(
            (heads_mass - 0.5).abs() < 0.1,
            "slot {slot}: heads {heads_mass}"
        );
    }
    // Continued with one more iteration: only iteration 3 is trained; nothing of the first
    // three changes.
    let before: Vec<_> = mtimes(&dir)
        .into_iter()
        .filter(|(p, _)| !p.ends_with(STATE_FILE))
        .collect();
    let (r2, seen) = run(&options(ONCE, 4, heads.clone()), &dir).unwrap();
    assert_eq!(seen, vec![3]);
    for (a, b) in r2.iterations.iter().zip(&r.iterations) {
        // Read back from psro.json (f64 through JSON text: equal to the last digits).
        assert_eq!((a.iteration, &a.runs), (b.iteration, &b.runs));
        assert!((a.nashconv - b.nashconv).abs() < 1e-12);
    }
    let after = mtimes(&dir);
    for (p, t) in &before {
        assert!(after.contains(&(p.clone(), *t)), "{} changed", p.display());
    }
    assert!(dir.join("iter_3/slot_1/config.ron").is_file());
    // Asking for no more than is done trains nothing.
    let (r3, seen) = run(&options(ONCE, 2, heads), &dir).unwrap();
    assert!(seen.is_empty());
    assert_eq!(r3.iterations.len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn weights_sampling_is_checked_with_its_reason() {
    let bad = |s: Sampling, m: Option<usize>| s.check(m).unwrap_err();
    assert!(bad(Sampling::Weights(vec![0.5, 0.5]), Some(3)).contains("2 weights for 3 members"));
    assert!(bad(Sampling::Weights(vec![0.5, -0.1]), None).contains("weight 1 is -0.1"));
    assert!(bad(Sampling::Weights(vec![f64::NAN]), None).contains("finite"));
    assert!(bad(Sampling::Weights(vec![0.0, 0.0]), Some(2)).contains("sum to 0"));
    assert!(Sampling::Weights(vec![0.0, 2.0]).check(Some(2)).is_ok());
    // Drawn in proportion; a zero weight is never drawn.
    let mut counts = [0usize; 3];
    for k in 0..3000 {
        let u = (k as f64 + 0.5) / 3000.0;
        counts[gridarena::population::manifest::pick(
            &Sampling::Weights(vec![1.0, 0.0, 3.0]),
            3,
            &[],
            u,
        )] += 1;
    }
    assert_eq!(counts, [750, 0, 2250]);
    // In a manifest: the reason, with the file.
    let text = "Population(name: \"p\", sampling: Weights([1.0]), members: [Random, Random])";
    let err = Population::parse(text).unwrap_err();
    assert!(err.contains("1 weights for 2 members"), "{err}");
    // In a run configuration: negative weights before anything runs, a wrong length once the
    // population is expanded.
    let dir = temp("weights");
    let manifest = dir.join("pop.ron");
    std::fs::write(
        &manifest,
        "Population(name: \"p\", members: [Random, Random])",
    )
    .unwrap();
    let mut cfg = tiny_pqn();
    cfg.scenario = Some(root().join("assets/scenarios/stag_hunt.ron"));
    cfg.total_steps = 16 * 8;
    let population = |sampling| PopulationTraining {
        slots: vec![1],
        opponents: Some(manifest.clone()),
        snapshot_every: 0,
        max_snapshots: 8,
        sampling,
    };
    cfg.population = Some(population(Sampling::Weights(vec![1.0, -1.0])));
    let err = cfg.validate().unwrap_err().to_string();
    assert!(err.contains("weight 1 is -1"), "{err}");
    cfg.population = Some(population(Sampling::Weights(vec![1.0, 1.0, 1.0])));
    let opts = gridarena::train::TrainOptions::default();
    let err = gridarena::train::train(&cfg, &dir.join("run"), &opts)
        .unwrap_err()
        .to_string();
    assert!(err.contains("3 weights for 2 members"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_settings_are_refused_and_leave_the_directory_as_it_was() {
    let dir = temp("bad");
    let o = options(ONCE, 1, MemberSpec::Random);
    // Three learner slots.
    let mut three = options(
        "assets/scenarios/lbf_10x10_3p_3f.ron",
        1,
        MemberSpec::Random,
    );
    three.scenario = root().join("assets/scenarios/lbf_10x10_3p_3f.ron");
    assert!(matches!(
        run(&three, &dir),
        Err(LearnedPsroError::Learners { learners: 3, .. })
    ));
    let mut x = o.clone();
    x.iterations = 0;
    assert!(matches!(run(&x, &dir), Err(LearnedPsroError::NoIterations)));
    x = o.clone();
    x.episodes = 1;
    assert!(matches!(run(&x, &dir), Err(LearnedPsroError::Episodes(1))));
    x = o.clone();
    x.first = MemberSpec::Run {
        path: "runs/x".into(),
        replica: None,
    };
    assert!(matches!(run(&x, &dir), Err(LearnedPsroError::First(_))));
    x = o.clone();
    x.first = MemberSpec::Scripted("always edge".into());
    let err = run(&x, &dir).unwrap_err().to_string();
    assert!(err.contains("no scripted baseline `always edge`"), "{err}");
    x = o.clone();
    x.config.algo = Algo::Vdn;
    let err = run(&x, &dir).unwrap_err().to_string();
    assert!(
        matches!(run(&x, &dir), Err(LearnedPsroError::Config(_))) && err.contains("pqn, iql"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
    let _ = load(ONCE);
    // A saved run with other settings, and an unreadable state file: refused, untouched.
    let (_, seen) = run(&o, &dir).unwrap();
    assert_eq!(seen, vec![0]);
    let state = dir.join(STATE_FILE);
    let saved = std::fs::read(&state).unwrap();
    x = o.clone();
    x.iterations = 2;
    x.episodes = 8;
    let err = run(&x, &dir).unwrap_err();
    assert!(
        matches!(err, LearnedPsroError::Mismatch { .. })
            && err.to_string().contains("episodes: 16 -> 8"),
        "{err}"
    );
    x = o.clone();
    x.iterations = 2;
    x.config.seed = 9;
    let err = run(&x, &dir).unwrap_err().to_string();
    assert!(err.contains("config.seed: 0 -> 9"), "{err}");
    assert_eq!(std::fs::read(&state).unwrap(), saved);
    assert!(!dir.join("iter_1").exists());
    // An entry that names no member: refused, not a panic.
    let mut edited: serde_json::Value = serde_json::from_slice(&saved).unwrap();
    edited["payoffs"][0]["profile"] = serde_json::json!([7, 0]);
    std::fs::write(&state, edited.to_string()).unwrap();
    x.config.seed = 0;
    let err = run(&x, &dir).unwrap_err().to_string();
    assert!(err.contains("names no pair of members"), "{err}");
    std::fs::write(&state, b"{ not json").unwrap();
    x.config.seed = 0;
    assert!(matches!(run(&x, &dir), Err(LearnedPsroError::State { .. })));
    assert_eq!(std::fs::read(&state).unwrap(), b"{ not json");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_command_line_runs_learned_psro_on_the_stag_hunt_and_continues() {
    let dir = temp("cli");
    let config = dir.join("br.ron");
    std::fs::write(
        &config,
        "(algo: pqn, device: cpu, arenas: 16, rollout: 8, total_steps: 1280, \
         network: (hidden: 16, layers: 1), learn: (lr: 0.003, gamma: 0.5), pqn: (minibatches: 2))",
    )
    .unwrap();
    let out = dir.join("psro");
    let bin = env!("CARGO_BIN_EXE_gridarena");
    let go = |iterations: &str, extra: &[&str]| {
        Command::new(bin)
            .args([
                "psro",
                "assets/scenarios/stag_hunt.ron",
                "--best-response",
                "learned",
            ])
            .arg("--config")
            .arg(&config)
            .arg("--out")
            .arg(&out)
            .args(["--iterations", iterations, "--episodes", "8"])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = go("1", &[]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("NashConv is a lower bound"), "{text}");
    assert!(
        text.contains("iteration   0  population sizes 1 1  NashConv >= "),
        "{text}"
    );
    // Continued: only iteration 1 is run and printed.
    let o = go("2", &[]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("continuing") && text.contains("after iteration 0 of 2"),
        "{text}"
    );
    assert!(
        text.contains("iteration   1  population sizes 2 2"),
        "{text}"
    );
    assert!(!text.contains("iteration   0  population"), "{text}");
    let o = go("2", &["--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let its = report["iterations"].as_array().unwrap();
    assert_eq!(its.len(), 2);
    // Random first members: the entries have a spread, and the interval is positive.
    assert!(its[0]["nashconv_ci95"].as_f64().unwrap() > 0.0, "{report}");
    assert!(out.join(STATE_FILE).is_file() && out.join("iter_1/slot_0").is_dir());
    // Without --config: refused with the reason; the exact default refuses coin_game with the
    // way out.
    let o = Command::new(bin)
        .args([
            "psro",
            "assets/scenarios/stag_hunt.ron",
            "--best-response",
            "learned",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("needs --config RUN.ron") && !err.contains("panicked"),
        "{err}"
    );
    let o = Command::new(bin)
        .args(["psro", "assets/scenarios/coin_game.ron"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--best-response learned"), "{err}");
    // `auto` on the coin game (no exact model): learned, saying why.
    let o = Command::new(bin)
        .args([
            "psro",
            "assets/scenarios/coin_game.ron",
            "--best-response",
            "auto",
        ])
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(dir.join("coin"))
        .args(["--iterations", "1", "--episodes", "8"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("no exact model") && text.contains("learning them instead"),
        "{text}"
    );
    assert!(
        text.contains("iteration   0  population sizes 1 1  NashConv >= "),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
