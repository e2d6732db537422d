//! PSRO on gridworlds with exact best responses (`analysis::psro_grid`): on one-shot matrix
//! games modelled as gridworlds it replays matrix PSRO's NashConv sequence, on the tiny Pursuit
//! map NashConv of the meta-strategy falls far below the uniform-random profile's, a scenario too
//! large for the memory budget is refused with the plan's figures, and the command line picks the
//! gridworld path.

use std::process::Command;

use gridarena::analysis::exact::{PolicyTable, Tolerance, nashconv};
use gridarena::analysis::meta_solver::{MetaSolver, PrdParams, RegretMatchingParams};
use gridarena::analysis::psro::{NormalFormGame, PsroOptions, psro};
use gridarena::analysis::psro_grid::{
    GridPsroError, GridPsroOptions, GridPsroReport, Initial, grid_psro,
};
use gridarena::analysis::{Horizon, TransitionModel};
use gridarena::scenario::{LoadedScenario, Scenario};

fn load(path: &str) -> LoadedScenario {
    Scenario::load(path.as_ref()).unwrap()
}

fn options(iterations: usize, meta_solver: MetaSolver, initial: Initial) -> GridPsroOptions {
    GridPsroOptions {
        iterations,
        meta_solver,
        initial,
        gamma: 0.9,
        tolerance: Tolerance::default(),
        budget: 1 << 30,
    }
}

fn run(model: &TransitionModel, o: &GridPsroOptions) -> Result<GridPsroReport, GridPsroError> {
    let mut seen = 0;
    let r = grid_psro(model, o, &indicatif::ProgressBar::hidden(), &mut |it| {
        assert_eq!(it.iteration, seen);
        seen += 1;
    });
    if let Ok(r) = &r {
        assert_eq!(seen, r.iterations.len());
    }
    r
}

fn nashconvs(r: &GridPsroReport) -> Vec<f64> {
    r.iterations.iter().map(|i| i.nashconv).collect()
}

#[test]
fn one_shot_matrix_games_through_the_gridworld_path_replay_matrix_psro() {
    let prd = MetaSolver::Prd(PrdParams::default());
    let rm = MetaSolver::RegretMatching(RegretMatchingParams::default());
    let cases = [
        ("assets/scenarios/rock_paper_scissors.ron", prd, 0),
        ("assets/scenarios/rock_paper_scissors.ron", rm, 1),
        ("assets/scenarios/matching_pennies.ron", prd, 0),
        ("assets/scenarios/climbing_game.ron", prd, 2),
    ];
    for (path, solver, start) in cases {
        let loaded = load(path);
        let game = NormalFormGame::from_scenario(&loaded.scenario).unwrap();
        let matrix = psro(
            &game,
            &PsroOptions {
                iterations: 8,
                meta_solver: solver,
                initial: vec![start; game.players],
            },
        )
        .unwrap();
        // The stage game: one step, so the only reachable state is the first.
        let model = TransitionModel::new(&loaded, Some(Horizon::Finite(1))).unwrap();
        let grid = run(&model, &options(8, solver, Initial::Action(start))).unwrap();
        let (want, got): (Vec<f64>, Vec<f64>) = (
            matrix.iterations.iter().map(|i| i.nashconv).collect(),
            nashconvs(&grid),
        );
        assert_eq!(want.len(), got.len(), "{path}: {want:?} vs {got:?}");
        for (w, g) in want.iter().zip(&got) {
            assert!((w - g).abs() < 1e-9, "{path}: {want:?} vs {got:?}");
        }
        assert_eq!(grid.converged, matrix.converged, "{path}");
        for (m, g) in matrix.iterations.iter().zip(&grid.iterations) {
            let sizes: Vec<usize> = m.populations.iter().map(Vec::len).collect();
            assert_eq!(sizes, g.population_sizes, "{path}");
            for (x, y) in m
                .meta_strategies
                .iter()
                .flatten()
                .zip(g.meta_strategies.iter().flatten())
            {
                assert!((x - y).abs() < 1e-9, "{path}: {x} vs {y}");
            }
        }
    }
}

#[test]
fn tiny_pursuit_nashconv_falls_far_below_the_uniform_profiles() {
    // One learning pursuer against one learning evader on the 3x3 map with 20% slip: 64 states.
    let model = TransitionModel::new(&load("tests/data/tiny_pursuit.ron"), None).unwrap();
    assert_eq!(model.states(), 64);
    let hidden = indicatif::ProgressBar::hidden();
    let uniform = nashconv(
        &model,
        &PolicyTable::uniform(&model),
        0.9,
        Tolerance::default(),
        None,
        None,
        &hidden,
    )
    .nashconv;
    let prd = MetaSolver::Prd(PrdParams::default());
    let r = run(&model, &options(15, prd, Initial::Uniform)).unwrap();
    let nc = nashconvs(&r);
    // Measured: 1.4538, 0.1203, 0.1914, 0.1423, 0.1116, 0.0429, 0.0323, 0.0313, 0.0192,
    // 0.0153, then no learner's best response is new (converged after 10 iterations).
    assert!((uniform - 1.453751).abs() < 1e-5, "{uniform}");
    // Iteration 0 mixes the uniform members only: the uniform profile (f64 instead of f32).
    assert!((nc[0] - uniform).abs() < 1e-5, "{nc:?}");
    assert!(r.converged && nc.len() == 10, "{nc:?}");
    let last = *nc.last().unwrap();
    assert!((last - 0.015258).abs() < 1e-4, "{nc:?}");
    assert!(last < uniform / 50.0, "{nc:?}");
    // Non-increasing-ish: never above twice the best so far, and the last is the best.
    for k in 1..nc.len() {
        let best = nc[..k].iter().copied().fold(f64::INFINITY, f64::min);
        assert!(nc[k] <= 2.0 * best, "iteration {k}: {nc:?}");
    }
    assert!(nc.iter().all(|&x| x >= last), "{nc:?}");
    for it in &r.iterations {
        assert!((it.gains.iter().sum::<f64>() - it.nashconv).abs() < 1e-12);
        assert!(it.gains.iter().all(|&g| g > -1e-9), "{:?}", it.gains);
        // Only profiles with a new member are evaluated: 1 then 2k - 1 while both grow.
        let total: usize = it.population_sizes.iter().product();
        assert!(it.profiles_evaluated <= total);
    }
    assert_eq!(r.iterations[2].profiles_evaluated, 5);
    // The first action everywhere (stay) as the start: the same fall, from 1.5658 to 0.0279
    // after 15 iterations (at the limit).
    let r = run(&model, &options(15, prd, Initial::Action(0))).unwrap();
    let nc = nashconvs(&r);
    assert!((nc[0] - 1.565845).abs() < 1e-5, "{nc:?}");
    assert!(!r.converged && nc.len() == 15, "{nc:?}");
    assert!((nc[14] - 0.027851).abs() < 1e-4, "{nc:?}");
}

#[test]
fn a_scenario_too_large_for_the_budget_is_refused_with_the_plans_figures() {
    let model = TransitionModel::new(&load("assets/scenarios/pursuit_3.ron"), None).unwrap();
    let mut o = options(20, MetaSolver::Prd(PrdParams::default()), Initial::Uniform);
    o.budget = 1 << 20;
    let err = run(&model, &o).unwrap_err();
    let GridPsroError::DoesNotFit {
        states,
        total_bytes,
        budget_bytes,
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!((*states, *budget_bytes), (85_184, 1 << 20));
    assert!(*total_bytes > *budget_bytes);
    let text = err.to_string();
    assert!(
        text.contains("85,184 states")
            && text.contains("budget 1.00 MiB")
            // The largest table is PSRO's own: 21 members per learner at most.
            && text.contains("PSRO populations 21 members x 3 learners x 85,184 states")
            && text.contains("use learned best responses (--best-response learned"),
        "{text}"
    );
    // Bad settings are typed errors too.
    o.budget = 1 << 30;
    o.initial = Initial::Action(9);
    assert!(matches!(
        run(&model, &o),
        Err(GridPsroError::BadInitial {
            action: 9,
            actions: 5
        })
    ));
    o.initial = Initial::Uniform;
    o.gamma = 1.0;
    assert!(matches!(
        run(&model, &o),
        Err(GridPsroError::BadGamma { .. })
    ));
    o.iterations = 0;
    assert!(matches!(run(&model, &o), Err(GridPsroError::NoIterations)));
    // The command line: the same refusal, exit 1, no panic.
    let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["psro", "assets/scenarios/pursuit_3.ron"])
        .args(["--memory-budget", "1MiB"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--best-response learned"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn the_command_line_runs_gridworld_psro_and_writes_its_report() {
    let bin = env!("CARGO_BIN_EXE_gridarena");
    let args = [
        "psro",
        "tests/data/tiny_pursuit.ron",
        "--iterations",
        "2",
        "--gamma",
        "0.9",
        "--initial",
        "uniform",
    ];
    let out = Command::new(bin).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("iteration   1  population sizes 2 2  NashConv 0.120296"),
        "{text}"
    );
    assert!(text.contains("learner 0: uniform "), "{text}");
    let file =
        std::env::temp_dir().join(format!("gridarena_psro_grid_{}.json", std::process::id()));
    let out = Command::new(bin)
        .args(args)
        .args(["--meta-solver", "regret-matching", "--json", "--out"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(printed, written);
    assert_eq!(printed["kind"], "gridworld");
    assert_eq!(printed["report"]["states"], 64);
    assert_eq!(printed["report"]["iterations"].as_array().unwrap().len(), 2);
    std::fs::remove_file(&file).unwrap();
    // On a matrix game `--initial` picks the starting action (the matrix path), and `uniform`
    // is refused there.
    let climbing = ["psro", "assets/scenarios/climbing_game.ron", "--initial"];
    let out = Command::new(bin).args(climbing).arg("2").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("player 0: c 0.0019, b 0.9981"), "{text}");
    let out = Command::new(bin)
        .args(climbing)
        .arg("uniform")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("`uniform` is for gridworlds"), "{err}");
}
