//! Populations and the evaluation protocol on them: manifests (and their errors), the sampling
//! rules, members acting together, cross-play, scenario sets and Schelling diagrams, with the
//! prisoner's dilemma's exact payoffs (16 steps: R 3, S 0, T 5, P 1 per step) as the oracle.

use std::path::{Path, PathBuf};

use gridarena::critic::{Device, choose_device};
use gridarena::population::crossplay::crossplay;
use gridarena::population::manifest::pick;
use gridarena::population::members::{Member, expand};
use gridarena::population::scenario_set::{ScenarioResult, ScenarioSet, evaluate_set};
use gridarena::population::schelling::schelling;
use gridarena::population::{MemberSpec, Population, PopulationError, Sampling};
use gridarena::scenario::Scenario;
use proptest::prelude::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pd() -> gridarena::scenario::LoadedScenario {
    Scenario::load(&root().join("assets/scenarios/prisoners_dilemma.ron")).unwrap()
}

fn scripted(names: &[&str]) -> Population {
    Population {
        name: "pd".into(),
        sampling: Sampling::Uniform,
        members: names
            .iter()
            .map(|n| MemberSpec::Scripted(n.to_string()))
            .collect(),
    }
}

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-pop-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

#[test]
fn crossplay_of_cooperators_and_defectors_is_the_payoff_table() {
    let cpu = choose_device(Device::Cpu).unwrap();
    let pop = scripted(&["always cooperate", "always defect"]);
    let bar = indicatif::ProgressBar::hidden();
    let m = crossplay(&pd(), &pop, &pop, &[0], 8, 3, &cpu, &bar).unwrap();
    assert_eq!(m.rows, ["always cooperate", "always defect"]);
    // Per-capita return over 16 steps: CC 3+3, CD 0+5, DC 5+0, DD 1+1, halved.
    let want = [[48.0, 40.0], [40.0, 16.0]];
    assert_eq!(m.mean, want, "{:?}", m.mean);
    assert_eq!(m.ci95, [[0.0; 2]; 2]);
    assert_eq!(m.self_and_cross(), Some((32.0, 40.0)));
    // The row member's own: C beside C 48, beside D 0; D beside C 80, beside D 16.
    assert_eq!(m.row_mean, [[48.0, 0.0], [80.0, 16.0]]);
}

#[test]
fn crossplay_refuses_slots_the_scenario_lacks() {
    let cpu = choose_device(Device::Cpu).unwrap();
    let pop = scripted(&["always cooperate"]);
    let bar = indicatif::ProgressBar::hidden();
    for slots in [vec![2], vec![0, 1], vec![]] {
        let e = crossplay(&pd(), &pop, &pop, &slots, 2, 0, &cpu, &bar).unwrap_err();
        assert!(e.to_string().contains("learner slots 0..2"), "{e}");
    }
}

#[test]
fn an_unknown_scripted_member_names_the_ones_there_are() {
    let cpu = choose_device(Device::Cpu).unwrap();
    let pop = scripted(&["always betray"]);
    let bar = indicatif::ProgressBar::hidden();
    let e = crossplay(&pd(), &pop, &pop, &[0], 2, 0, &cpu, &bar).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("`always cooperate`") && text.contains("`always defect`"),
        "{text}"
    );
}

#[test]
fn the_prisoners_dilemma_has_a_schelling_dilemma() {
    let cpu = choose_device(Device::Cpu).unwrap();
    let c = Member::Scripted("always cooperate".into());
    let d = Member::Scripted("always defect".into());
    let s = schelling(&pd(), &c, &d, 4, 0, &cpu).unwrap();
    let got: Vec<(usize, f64, f64)> = s
        .points
        .iter()
        .map(|p| (p.others_cooperating, p.cooperator_return, p.defector_return))
        .collect();
    assert_eq!(got, [(0, 0.0, 16.0), (1, 48.0, 80.0)]);
    assert!(s.is_dilemma());
    // Swapped roles: "cooperating" pays more whatever the other does: no dilemma.
    let s = schelling(&pd(), &d, &c, 4, 0, &cpu).unwrap();
    assert!(!s.is_dilemma());
}

fn write_set(dir: &Path) -> PathBuf {
    let pd = root().join("assets/scenarios/prisoners_dilemma.ron");
    let text = format!(
        r#"ScenarioSet(
    name: "pd",
    scenarios: [
        (
            name: "against_cooperators",
            scenario: "{}",
            focal_slots: [0],
            background: Members(members: [Scripted("always cooperate")]),
            zero: Scripted("always cooperate"),
            one: Scripted("always defect"),
        ),
        (
            name: "both_focal",
            scenario: "{}",
            focal_slots: [0, 1],
            background: Members(members: []),
            zero: Scripted("always defect"),
            one: Scripted("always cooperate"),
            episodes: Some(6),
        ),
    ],
)"#,
        pd.display(),
        pd.display()
    );
    let path = dir.join("set.ron");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_scenario_set_normalises_between_its_baselines() {
    let cpu = choose_device(Device::Cpu).unwrap();
    let dir = temp("set");
    let set = ScenarioSet::load(&write_set(&dir)).unwrap();
    let bar = indicatif::ProgressBar::hidden();
    // Half the arenas defect, half cooperate (member r mod 2).
    let pop = scripted(&["always defect", "always cooperate"]);
    let r = evaluate_set(&set, &pop, 10, 0, &cpu, &bar).unwrap();
    let a = &r.scenarios[0];
    // Against cooperators: defecting gets 80, cooperating 48; baselines 48 (0) and 80 (1).
    assert_eq!(a.per_member, [80.0, 48.0]);
    assert_eq!(a.per_member_normalised, [Some(1.0), Some(0.0)]);
    assert_eq!(a.focal_return, 64.0);
    assert_eq!(a.normalised, Some(0.5));
    assert_eq!(a.baselines[0], ("always cooperate".to_string(), 48.0));
    assert_eq!(a.social.collective_return, (80.0 + 48.0 + 0.0 + 48.0) / 2.0);
    // Both slots focal, 6 episodes: a defector pair (16 each) and a cooperator pair (48 each);
    // baselines 16 (0) and 48 (1).
    let b = &r.scenarios[1];
    assert_eq!(b.episodes, 6);
    assert_eq!(b.per_member_normalised, [Some(0.0), Some(1.0)]);
    let scores = r.scores();
    assert_eq!(scores["tasks"][1], "both_focal");
    assert_eq!(scores["algorithms"]["pd"][0][0], 1.0);
    assert_eq!(scores["algorithms"]["pd"][1][1], 1.0);
}

#[test]
fn every_shipped_scenario_set_runs() {
    let cpu = choose_device(Device::Cpu).unwrap();
    let bar = indicatif::ProgressBar::hidden();
    let random = Population {
        name: "random".into(),
        sampling: Sampling::Uniform,
        members: vec![MemberSpec::Random],
    };
    let dir = root().join("assets/scenario_sets");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let set = ScenarioSet::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let r = evaluate_set(&set, &random, 2, 0, &cpu, &bar)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for s in &r.scenarios {
            // Random in the focal slots is the `zero` baseline itself, on the same starts.
            assert_eq!(s.focal_return, s.baselines[0].1, "{}", s.name);
            assert!(
                s.normalised.is_none_or(|x| x == 0.0),
                "{}: {:?}",
                s.name,
                s.normalised
            );
        }
        seen += 1;
    }
    assert_eq!(seen, 9);
}

#[test]
fn the_trained_coin_game_background_plays_like_a_selfish_collector() {
    // The shipped PQN resident (assets/populations/coin_game_pqn) takes the visitor's coins: a
    // random visitor beside it loses about 8 per episode (measured -8.3 ± 0.5 over 200
    // episodes), as beside the scripted nearest-coin player, where beside random players it
    // breaks even; the scripted visitor holds its own (+0.4 ± 0.5).
    let cpu = choose_device(Device::Cpu).unwrap();
    let bar = indicatif::ProgressBar::hidden();
    let set =
        ScenarioSet::load(&root().join("assets/scenario_sets/coin_game_trained.ron")).unwrap();
    let pop = |m: MemberSpec| Population {
        name: "visitor".into(),
        sampling: Sampling::Uniform,
        members: vec![m],
    };
    let random = evaluate_set(&set, &pop(MemberSpec::Random), 64, 0, &cpu, &bar).unwrap();
    let scripted = evaluate_set(
        &set,
        &pop(MemberSpec::Scripted("nearest coin".into())),
        64,
        0,
        &cpu,
        &bar,
    )
    .unwrap();
    for (r, s) in random.scenarios.iter().zip(&scripted.scenarios) {
        assert!(r.focal_return < -5.0, "{}: {}", r.name, r.focal_return);
        assert!(s.focal_return > -2.0, "{}: {}", s.name, s.focal_return);
        assert!(r.baselines_apart, "{}", r.name);
        assert_eq!(s.normalised, Some(1.0));
    }
}

/// One scenario of a `*_trained` set played by a random visitor: its result holds the random
/// visitor's return (also the `zero` baseline) and the scripted visitor's (the `one` baseline),
/// beside the same trained residents on the same starts.
fn visit_trained(set: &str, episodes: usize) -> ScenarioResult {
    let cpu = choose_device(Device::Cpu).unwrap();
    let bar = indicatif::ProgressBar::hidden();
    let set = ScenarioSet::load(&root().join("assets/scenario_sets").join(set)).unwrap();
    let random = Population {
        name: "random".into(),
        sampling: Sampling::Uniform,
        members: vec![MemberSpec::Random],
    };
    evaluate_set(&set, &random, episodes, 0, &cpu, &bar)
        .unwrap()
        .scenarios
        .remove(0)
}

#[test]
fn the_trained_gift_background_collects_and_consumes_the_tokens() {
    // The shipped PQN residents (assets/populations/gift_refinements_pqn) pick up and consume
    // tokens as fast as the scripted heuristic and do not gift: a random visitor beside them
    // gets about 1.6 per episode (beside random players 13), the scripted one about 18 (beside
    // random players 79), all six together about 145 (random players 82); measured over 64
    // episodes.
    let s = visit_trained("gift_refinements_trained.ron", 4);
    let (random, scripted) = (s.baselines[0].1, s.baselines[1].1);
    assert!(random < 5.0, "{random}");
    assert!((8.0..35.0).contains(&scripted), "{scripted}");
    let collective = s.social.collective_return;
    assert!(collective > 100.0, "{collective}");
}

#[test]
fn the_trained_commons_background_strips_the_orchard() {
    // The shipped PQN residents (assets/populations/commons_harvest_pqn) eat every apple in
    // sight at once: about 71 apples per episode in all, eaten at step 22 on average (the
    // sustainability metric; beside random players 870), so nothing regrows. A random visitor
    // beside them gets about 1.2 per episode (beside random players 42), the scripted
    // sustainable harvester about 11 (beside random players 390); measured over 64 episodes.
    let s = visit_trained("commons_harvest_trained.ron", 4);
    let (random, scripted) = (s.baselines[0].1, s.baselines[1].1);
    assert!(random < 8.0, "{random}");
    assert!(scripted < 30.0, "{scripted}");
    let collective = s.social.collective_return;
    assert!(collective < 100.0, "{collective}");
    let rewarded_at = s.social.sustainability.unwrap();
    assert!(rewarded_at < 100.0, "{rewarded_at}");
}

#[test]
fn the_trained_chemistry_background_runs_the_metabolic_cycles() {
    // The shipped PQN residents (assets/populations/chemistry_pqn) carry cycle molecules to
    // each other: beside a random visitor they fire the cycles' R2 and R3 reactions about 3
    // times per episode (random players 0.7, the food-fetching heuristic 0.1) and earn about
    // 1.3 each (random players 0.3); measured over 32 episodes, as here (64: 3.8 and 1.3).
    let s = visit_trained("chemistry_trained.ron", 32);
    let c = &s.social.counters;
    let cycles: f64 = ["R2x", "R2y", "R3x", "R3y"]
        .iter()
        .map(|r| c[&format!("reaction_{r}")])
        .sum();
    assert!(cycles > 1.8, "{cycles}");
    let residents = s.social.per_agent[1..].iter().sum::<f64>() / 3.0;
    assert!(residents > 0.7, "{residents}");
}

#[test]
fn bad_manifests_are_refused_with_their_reason() {
    for (text, needle) in [
        ("Population(name: \"x\", members: [])", "`members` is empty"),
        (
            "Population(name: \"x\", sampling: Fixed(3), members: [Random])",
            "Fixed(3)",
        ),
        (
            "Population(name: \"x\", sampling: Prioritized(exponent: -1.0), members: [Random])",
            "exponent",
        ),
        ("Population(name: \"x\",\n members: [Rnadom])", "2:"),
    ] {
        let e = Population::parse(text).unwrap_err();
        assert!(e.contains(needle), "{text}: {e}");
    }
    let dir = temp("manifest");
    let p = dir.join("pop.ron");
    std::fs::write(
        &p,
        "Population(name: \"x\", members: [Run(path: \"no_such_run\")])",
    )
    .unwrap();
    let pop = Population::load(&p).unwrap();
    match expand(&pop) {
        Err(PopulationError::Run { path, .. }) => assert_eq!(path, dir.join("no_such_run")),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Population::load(&dir.join("missing.ron")),
        Err(PopulationError::Io { .. })
    ));
    assert!(Member::parse("no/such/dir").is_err());
    assert!(Member::parse("x#y").is_err());
    assert_eq!(Member::parse("random").unwrap(), Member::Random);
}

#[test]
fn prioritised_sampling_favours_the_members_the_focal_side_beats_least() {
    let rates = [Some(0.9), Some(0.5), None, Some(1.0)];
    let mut counts = [0usize; 4];
    let draws = 100_000;
    for k in 0..draws {
        let u = (k as f64 + 0.5) / draws as f64;
        counts[pick(&Sampling::Prioritized { exponent: 1.0 }, 4, &rates, u)] += 1;
    }
    // Weights 0.1, 0.5, 0.5 (unknown), 0: shares 1/11, 5/11, 5/11, 0.
    assert_eq!(counts[3], 0);
    for (c, want) in counts.iter().zip([1.0 / 11.0, 5.0 / 11.0, 5.0 / 11.0, 0.0]) {
        assert!((*c as f64 / draws as f64 - want).abs() < 1e-3, "{counts:?}");
    }
    // Beating everyone falls back to uniform.
    assert_eq!(
        pick(
            &Sampling::Prioritized { exponent: 2.0 },
            2,
            &[Some(1.0), Some(1.0)],
            0.75
        ),
        1
    );
    assert_eq!(pick(&Sampling::Fixed(1), 3, &[], 0.0), 1);
}

proptest! {
    #[test]
    fn uniform_sampling_picks_a_member_with_equal_shares(members in 1usize..40, u in 0.0f64..1.0) {
        let k = pick(&Sampling::Uniform, members, &[], u);
        prop_assert!(k < members);
        // Member k owns [k/M, (k+1)/M).
        prop_assert!(u >= k as f64 / members as f64 - 1e-12 && u < (k + 1) as f64 / members as f64 + 1e-12);
    }

    #[test]
    fn prioritised_sampling_always_picks_a_member(
        rates in proptest::collection::vec(proptest::option::of(0.0f64..=1.0), 1..10),
        exponent in 0.0f64..5.0,
        u in 0.0f64..1.0,
    ) {
        let k = pick(&Sampling::Prioritized { exponent }, rates.len(), &rates, u);
        prop_assert!(k < rates.len());
        // A member the focal side always beats is never drawn while another is not beaten.
        if exponent > 0.0 && rates[k] == Some(1.0) {
            prop_assert!(rates.iter().all(|r| *r == Some(1.0)));
        }
    }
}

/// A tiny two-seed PQN run on the coin game (a few updates: the networks are barely trained,
/// which is all cross-play needs to open and play them).
fn tiny_coin_run(dir: &Path) -> PathBuf {
    use gridarena::train::config::{Algo, NetworkConfig, RunConfig};
    use gridarena::train::{TrainOptions, train};
    let cfg = RunConfig {
        scenario: Some(root().join("assets/scenarios/coin_game.ron")),
        algo: Algo::Pqn,
        device: Device::Cpu,
        arenas: 4,
        rollout: 8,
        seeds: 2,
        total_steps: 4 * 8 * 2,
        checkpoint_every: 100,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    let run = dir.join("pqn_coin");
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    run
}

#[test]
fn runs_join_populations_replica_by_replica_and_refuse_other_scenarios() {
    let cpu = choose_device(Device::Cpu).unwrap();
    let dir = temp("runs");
    let run = tiny_coin_run(&dir);
    let learners = Population::open(&run).unwrap();
    let members = expand(&learners).unwrap();
    assert_eq!(
        members.iter().map(Member::name).collect::<Vec<_>>(),
        ["pqn_coin/r0", "pqn_coin/r1"]
    );
    let coin = Scenario::load(&root().join("assets/scenarios/coin_game.ron")).unwrap();
    let baselines = Population {
        name: "baselines".into(),
        sampling: Sampling::Uniform,
        members: vec![
            MemberSpec::Scripted("nearest coin".into()),
            MemberSpec::Random,
        ],
    };
    let bar = indicatif::ProgressBar::hidden();
    let m = crossplay(&coin, &learners, &baselines, &[0], 4, 0, &cpu, &bar).unwrap();
    assert_eq!((m.rows.len(), m.cols.len()), (2, 2));
    assert!(m.mean.iter().flatten().all(|v| v.is_finite()));
    // The same cell twice gives the same numbers (fresh arenas, same seed).
    let again = crossplay(&coin, &learners, &baselines, &[0], 4, 0, &cpu, &bar).unwrap();
    assert_eq!(m, again);
    // A coin-game run cannot play the prisoner's dilemma.
    let e = crossplay(&pd(), &learners, &baselines, &[0], 2, 0, &cpu, &bar).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("observation values") && text.contains("coin_game"),
        "{text}"
    );
    // A replica the run lacks.
    let p = dir.join("one.ron");
    std::fs::write(
        &p,
        "Population(name: \"x\", members: [Run(path: \"pqn_coin\", replica: Some(5))])",
    )
    .unwrap();
    let e = expand(&Population::load(&p).unwrap()).unwrap_err();
    assert!(
        e.to_string().contains("replica 5 asked; the run has 0..2"),
        "{e}"
    );
}

#[test]
fn the_command_line_writes_the_matrix_and_refuses_bad_input() {
    let bin = env!("CARGO_BIN_EXE_gridarena");
    let dir = temp("cli");
    let pop = dir.join("pd.ron");
    std::fs::write(
        &pop,
        "Population(name: \"pd\", members: [Scripted(\"always cooperate\"), Scripted(\"always defect\")])",
    )
    .unwrap();
    let pd = root().join("assets/scenarios/prisoners_dilemma.ron");
    let out = std::process::Command::new(bin)
        .args(["eval", "--crossplay"])
        .arg(&pop)
        .arg(&pop)
        .arg("--scenario")
        .arg(&pd)
        .args(["--episodes", "4", "--out"])
        .arg(dir.join("report"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("diagonal (self-play) 32.000, off-diagonal (cross-play) 40.000"),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report/crossplay.json")).unwrap())
            .unwrap();
    assert_eq!(json["mean"][1][1], 16.0);
    // A manifest that does not parse: exit 1, the file and the line, no panic.
    std::fs::write(
        &pop,
        "Population(name: \"pd\",\n members: [Scripted(\"x\"), Sometimes])",
    )
    .unwrap();
    let out = std::process::Command::new(bin)
        .args(["eval", "--crossplay"])
        .arg(&pop)
        .arg(&pop)
        .arg("--scenario")
        .arg(&pd)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("pd.ron") && stderr.contains("2:") && !stderr.contains("panicked"),
        "{stderr}"
    );
    // --scenario-set without --population: a usage error.
    let out = std::process::Command::new(bin)
        .args([
            "eval",
            "--scenario-set",
            "assets/scenario_sets/coin_game.ron",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--population"));
}
