//! PSRO on matrix games: convergence on the shipped zero-sum games, the climbing game's optimum,
//! NashConv's sign and zeros on random games, the command line, and agreement with OpenSpiel
//! 2.0.2's meta-solvers on the samples under tests/data/openspiel/ (written by
//! python/scripts/openspiel_samples.sh).

use std::process::Command;

use gridarena::analysis::meta_solver::{MetaSolver, PrdParams, RegretMatchingParams};
use gridarena::analysis::psro::{NormalFormGame, PsroOptions, PsroReport, psro};
use gridarena::scenario::Scenario;
use proptest::prelude::*;

fn game(path: &str) -> NormalFormGame {
    NormalFormGame::from_scenario(&Scenario::load(path.as_ref()).unwrap().scenario).unwrap()
}

fn run(game: &NormalFormGame, solver: MetaSolver, initial: Vec<usize>) -> PsroReport {
    psro(
        game,
        &PsroOptions {
            iterations: 20,
            meta_solver: solver,
            initial,
        },
    )
    .unwrap()
}

fn prd() -> MetaSolver {
    MetaSolver::Prd(PrdParams::default())
}

fn rm() -> MetaSolver {
    MetaSolver::RegretMatching(RegretMatchingParams::default())
}

#[test]
fn rock_paper_scissors_reaches_the_uniform_equilibrium_in_three_iterations() {
    let g = game("assets/scenarios/rock_paper_scissors.ron");
    for solver in [prd(), rm()] {
        let r = run(&g, solver, vec![]);
        let nc: Vec<f64> = r.iterations.iter().map(|i| i.nashconv).collect();
        assert!(r.converged);
        assert_eq!(nc.len(), 3, "{nc:?}");
        // Pure rock against pure rock: each player gains 1 by playing paper.
        assert!((nc[0] - 2.0).abs() < 1e-12, "{nc:?}");
        assert!(nc[2] < 0.01, "{nc:?}");
        for s in &r.iterations[2].strategies {
            for p in s {
                assert!((p - 1.0 / 3.0).abs() < 0.01, "{s:?}");
            }
        }
    }
}

#[test]
fn matching_pennies_reaches_the_even_mix_in_three_iterations() {
    let g = game("assets/scenarios/matching_pennies.ron");
    for solver in [prd(), rm()] {
        let r = run(&g, solver, vec![]);
        let last = r.iterations.last().unwrap();
        assert_eq!(r.iterations.len(), 3);
        assert!(last.nashconv < 0.01, "{}", last.nashconv);
        assert_eq!(
            r.iterations
                .iter()
                .map(|i| i.populations.iter().map(Vec::len).collect::<Vec<_>>())
                .collect::<Vec<_>>(),
            vec![vec![1, 1], vec![1, 2], vec![2, 2]]
        );
        for s in &last.strategies {
            assert!((s[0] - 0.5).abs() < 0.01, "{s:?}");
        }
    }
}

#[test]
fn climbing_game_from_a_stays_at_the_optimum_and_from_c_settles_on_b() {
    let g = game("assets/scenarios/climbing_game.ron");
    let r = run(&g, prd(), vec![]);
    let last = r.iterations.last().unwrap();
    assert_eq!(r.iterations.len(), 1);
    assert_eq!(last.strategies, vec![vec![1.0, 0.0, 0.0]; 2]);
    assert_eq!(g.values(&last.strategies), vec![11.0, 11.0]);
    assert_eq!(last.nashconv, 0.0);
    // From (c, c) = 5 the best response climbs to b and stops at (b, b) = 7: an equilibrium
    // (NashConv near 0, best response already in the population) but not the optimum, the game's point.
    // PRD averages its whole path from uniform, so the mixtures keep a little of c.
    let r = run(&g, prd(), vec![2, 2]);
    let last = r.iterations.last().unwrap();
    assert!(
        last.strategies.iter().all(|s| s[1] > 0.98),
        "{:?}",
        last.strategies
    );
    // NashConv 0.026: what remains is the averaged c, and its best response b is already in.
    assert!(last.nashconv < 0.05, "{}", last.nashconv);
    assert!(r.converged);
    let v = g.values(&last.strategies);
    assert!((v[0] - 7.0).abs() < 0.05, "{v:?}");
}

fn random_game(players: usize, actions: usize, cells: &[i8]) -> NormalFormGame {
    let joint = actions.pow(players as u32);
    let rows = (0..joint)
        .map(|j| {
            (0..players)
                .map(|p| f64::from(cells[(j * players + p) % cells.len()]))
                .collect()
        })
        .collect();
    NormalFormGame::new(players, actions, rows).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// NashConv is never negative, and it is 0 exactly at every pure Nash equilibrium.
    #[test]
    fn nashconv_is_nonnegative_and_zero_at_pure_equilibria(
        players in 2usize..=3,
        actions in 2usize..=3,
        cells in prop::collection::vec(-5i8..=5, 54),
        mix in prop::collection::vec(0.0f64..1.0, 9),
    ) {
        let g = random_game(players, actions, &cells);
        let strategies: Vec<Vec<f64>> = (0..players).map(|p| {
            let w: Vec<f64> = (0..actions).map(|a| mix[p * 3 + a] + 1e-3).collect();
            let s: f64 = w.iter().sum();
            w.iter().map(|x| x / s).collect()
        }).collect();
        prop_assert!(g.nash_conv(&strategies) >= -1e-12);
        let joint = actions.pow(players as u32);
        for j in 0..joint {
            let profile: Vec<usize> = (0..players).map(|p| j / actions.pow((players - 1 - p) as u32) % actions).collect();
            let pure: Vec<Vec<f64>> = profile.iter().map(|&a| {
                let mut s = vec![0.0; actions];
                s[a] = 1.0;
                s
            }).collect();
            // A pure equilibrium: no unilateral deviation pays.
            let stable = (0..players).all(|p| (0..actions).all(|b| {
                let mut dev = profile.clone();
                dev[p] = b;
                let jd = dev.iter().fold(0, |acc, &a| acc * actions + a);
                g.payoffs[p][jd] <= g.payoffs[p][j]
            }));
            let nc = g.nash_conv(&pure);
            prop_assert!(nc >= 0.0);
            prop_assert_eq!(nc == 0.0, stable, "profile {:?}: NashConv {}", profile, nc);
        }
    }
}

#[test]
fn cli_prints_iterations_and_named_strategies_and_rejects_other_substrates() {
    let bin = env!("CARGO_BIN_EXE_gridarena");
    let out = Command::new(bin)
        .args([
            "psro",
            "assets/scenarios/rock_paper_scissors.ron",
            "--iterations",
            "2",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("iteration   1  population sizes 2 2  NashConv 1.97"),
        "{text}"
    );
    assert!(text.contains("stopped at the iteration limit"), "{text}");
    assert!(text.contains("player 0: rock "), "{text}");
    let out = Command::new(bin)
        .args(["psro", "assets/scenarios/coin_game.ron"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    // Gridworlds the exact analysis models run (tests/psro_gridworld.rs); the others are refused.
    assert!(
        err.contains("PSRO runs on matrix games and on the gridworlds"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let out = Command::new(bin)
        .args([
            "psro",
            "assets/scenarios/matching_pennies.ron",
            "--meta-solver",
            "nash",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let file = std::env::temp_dir().join(format!("gridarena_psro_{}.json", std::process::id()));
    let out = Command::new(bin)
        .args([
            "psro",
            "assets/scenarios/matching_pennies.ron",
            "--json",
            "--out",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(printed, written);
    assert_eq!(printed["action_names"][1], "tails");
    assert_eq!(printed["report"]["converged"], true);
    std::fs::remove_file(&file).unwrap();
}

/// Every OpenSpiel sample replays step for step: the same populations each iteration,
/// meta-strategies within 1e-6 and NashConv within 1e-6 (OpenSpiel sums its products in another
/// order, so only rounding separates the two).
#[test]
fn psro_matches_openspiel_step_for_step() {
    let mut files: Vec<_> = std::fs::read_dir("tests/data/openspiel")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("psro_")
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 8, "{files:?}");
    for file in files {
        let sample: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let rows: Vec<Vec<f64>> = serde_json::from_value(sample["payoffs"].clone()).unwrap();
        let g = NormalFormGame::new(
            sample["players"].as_u64().unwrap() as usize,
            sample["actions"].as_u64().unwrap() as usize,
            rows,
        )
        .unwrap();
        let solver = match sample["meta_solver"].as_str().unwrap() {
            "prd" => prd(),
            _ => rm(),
        };
        let ours = run(&g, solver, vec![]);
        let theirs = sample["iterations"].as_array().unwrap();
        assert_eq!(ours.iterations.len(), theirs.len(), "{}", file.display());
        for (a, b) in ours.iterations.iter().zip(theirs) {
            let pops: Vec<Vec<usize>> = serde_json::from_value(b["populations"].clone()).unwrap();
            assert_eq!(
                a.populations,
                pops,
                "{} iteration {}",
                file.display(),
                a.iteration
            );
            let metas: Vec<Vec<f64>> =
                serde_json::from_value(b["meta_strategies"].clone()).unwrap();
            for (x, y) in a
                .meta_strategies
                .iter()
                .flatten()
                .zip(metas.iter().flatten())
            {
                assert!(
                    (x - y).abs() < 1e-6,
                    "{} iteration {}: {x} vs {y}",
                    file.display(),
                    a.iteration
                );
            }
            let nc = b["nashconv"].as_f64().unwrap();
            assert!(
                (a.nashconv - nc).abs() < 1e-6,
                "{} iteration {}: NashConv {} vs OpenSpiel {nc}",
                file.display(),
                a.iteration,
                a.nashconv
            );
        }
    }
}
