//! `--resume` continues the run that is in the directory or nothing: a configuration or scenario
//! that would change a tensor's shape, a stream, or the learning itself is refused before
//! anything is restored or written, with a message naming every difference, and the run
//! directory is left byte for byte as it was. Run-control fields (steps, device, checkpointing)
//! may change.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gridarena::critic::Device;
use gridarena::train::config::{
    Algo, NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config, RunConfig,
};
use gridarena::train::{TrainOptions, train};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-resume-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn small(scenario: &Path) -> RunConfig {
    RunConfig {
        scenario: Some(scenario.to_path_buf()),
        device: Device::Cpu,
        arenas: 16,
        rollout: 8,
        checkpoint_every: 2,
        total_steps: 2 * 16 * 8,
        network: NetworkConfig {
            hidden: 32,
            layers: 1,
            ..Default::default()
        },
        pqn: PqnConfig {
            epochs: 1,
            minibatches: 2,
            ..Default::default()
        },
        pr2: Pr2Config {
            epochs: 1,
            minibatches: 2,
            ..Default::default()
        },
        online_dqn: OnlineDqnConfig {
            epochs: 1,
            minibatches: 2,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

fn resume() -> TrainOptions {
    TrainOptions {
        resume: true,
        ..TrainOptions::default()
    }
}

/// Every file under `dir` (relative path -> bytes).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path.strip_prefix(root).unwrap().to_path_buf(), bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Resumes `run` with `asked`; the resume must be refused with a message containing every
/// `expected` line and leave every file of the run as it was.
fn assert_refused(run: &Path, asked: &RunConfig, expected: &[&str]) {
    let before = snapshot(run);
    let err = match train(asked, run, &resume()) {
        Ok(s) => panic!(
            "resume accepted ({} updates) although it changes {expected:?}",
            s.updates
        ),
        Err(e) => e.to_string(),
    };
    for line in expected {
        assert!(err.contains(line), "`{line}` not named in: {err}");
    }
    assert!(
        err.contains("--out"),
        "the message says how to go on: {err}"
    );
    assert!(
        before == snapshot(run),
        "the refused resume changed {run:?}"
    );
}

#[test]
fn a_resume_that_changes_shapes_streams_or_learning_is_refused_and_touches_nothing() {
    let run = temp("mismatch");
    let chase = Path::new("tests/data/chase.ron");
    let cfg = small(chase);
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let longer = RunConfig {
        total_steps: 4 * 16 * 8,
        ..cfg.clone()
    };
    let cases: Vec<(RunConfig, Vec<&str>)> = vec![
        (
            {
                let mut cfg = longer.clone();
                cfg.network.hidden = 64;
                cfg
            },
            vec!["network.hidden: 32 -> 64"],
        ),
        (
            {
                let mut cfg = longer.clone();
                cfg.network.layers = 2;
                cfg
            },
            vec!["network.layers: 1 -> 2"],
        ),
        (
            RunConfig {
                rollout: 16,
                ..longer.clone()
            },
            vec!["rollout: 8 -> 16"],
        ),
        (
            RunConfig {
                arenas: 8,
                ..longer.clone()
            },
            vec!["arenas: 16 -> 8"],
        ),
        (
            RunConfig {
                seed: 5,
                ..longer.clone()
            },
            vec!["seed: 0 -> 5"],
        ),
        (
            RunConfig {
                seeds: 2,
                ..longer.clone()
            },
            vec!["seeds: 1 -> 2"],
        ),
        (
            RunConfig {
                algo: Algo::Iql,
                ..longer.clone()
            },
            vec!["algo: Pqn -> Iql"],
        ),
        (
            {
                let mut cfg = longer.clone();
                cfg.pqn.epochs = 2;
                cfg.pr2.epochs = 2;
                cfg.online_dqn.epochs = 2;
                cfg
            },
            vec![
                "pqn.epochs: 1 -> 2",
                "pr2.epochs: 1 -> 2",
                "online_dqn.epochs: 1 -> 2",
            ],
        ),
        (
            {
                let mut cfg = longer.clone();
                cfg.learn.lr = 1e-3;
                cfg
            },
            vec!["learn.lr: 0.0005 -> 0.001"],
        ),
        // Several at once: each is named.
        (
            {
                let mut cfg = longer.clone();
                cfg.rollout = 4;
                cfg.network.hidden = 16;
                cfg.learn.gamma = 0.9;
                cfg
            },
            vec![
                "network.hidden: 32 -> 16",
                "rollout: 8 -> 4",
                "learn.gamma: 0.99 -> 0.9",
            ],
        ),
        // Another scenario with the same observation and action shapes.
        (
            RunConfig {
                scenario: Some("tests/data/tiny_pursuit.ron".into()),
                ..longer.clone()
            },
            vec![r#"scenario name: "chase" -> "tiny_pursuit""#],
        ),
    ];
    for (asked, expected) in &cases {
        assert_refused(&run, asked, expected);
    }
    // Run-control fields may change, and the run continues.
    let control = RunConfig {
        checkpoint_every: 1,
        keep_checkpoints: 5,
        name: "renamed".into(),
        ..longer
    };
    assert_eq!(train(&control, &run, &resume()).unwrap().updates, 4);
    std::fs::remove_dir_all(&run).unwrap();
}

#[test]
fn a_scenario_file_edited_since_the_run_started_is_refused_naming_the_field() {
    let run = temp("edited");
    let scenario = temp("edited-scenario.ron");
    let text = std::fs::read_to_string("tests/data/chase.ron").unwrap();
    std::fs::write(&scenario, &text).unwrap();
    let cfg = small(&scenario);
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    // Same path, same shapes, other rules: the first differing field is named by its path.
    let asked = RunConfig {
        total_steps: 4 * 16 * 8,
        ..cfg.clone()
    };
    let edits = [
        (
            "max_steps: 40",
            "max_steps: 30",
            "scenario max_steps: 40 -> 30",
        ),
        (
            "catch_reward: 1.0",
            "catch_reward: 2.0",
            "scenario substrate.catch_reward: 1.0 -> 2.0",
        ),
        (
            r#""*****", "*****"]"#,
            r#""*****", "**#**"]"#,
            r#"scenario map line 19: "*****" -> "**#**""#,
        ),
    ];
    for (from, to, named) in edits {
        assert!(text.contains(from), "{from}");
        std::fs::write(&scenario, text.replace(from, to)).unwrap();
        assert_refused(&run, &asked, &[named]);
    }
    // The same content under another path is the same scenario.
    std::fs::write(&scenario, &text).unwrap();
    let copy = temp("edited-copy.ron");
    std::fs::write(&copy, &text).unwrap();
    let moved = RunConfig {
        scenario: Some(copy.clone()),
        ..asked
    };
    assert_eq!(train(&moved, &run, &resume()).unwrap().updates, 4);
    for p in [run, scenario, copy] {
        let _ = std::fs::remove_dir_all(&p);
        let _ = std::fs::remove_file(&p);
    }
}

#[test]
fn the_cli_refuses_a_resume_with_other_flags_and_resumes_with_the_saved_config() {
    use std::process::Command;
    let run = temp("cli");
    let cfg = small(Path::new("tests/data/chase.ron"));
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    let before = snapshot(&run);
    let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["train", "--device", "cpu", "--resume"])
        .arg(&run)
        .args(["--set", "hidden=64", "--steps", "512"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted: {err}");
    assert!(
        err.contains("network.hidden: 32 -> 64") && err.contains("--out"),
        "{err}"
    );
    assert!(
        before == snapshot(&run),
        "the refused resume changed the run"
    );
    // Without flags that change the run, `--resume` takes config.ron as saved.
    let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["train", "--device", "cpu", "--steps", "512", "--resume"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = RunConfig::load(&run.join("config.ron")).unwrap();
    assert_eq!((saved.network.hidden, saved.total_steps), (32, 512));
    std::fs::remove_dir_all(&run).unwrap();
}

#[test]
fn a_run_saved_in_the_old_flat_form_resumes_and_is_saved_sectioned() {
    use std::process::Command;
    let run = temp("flat");
    // PQN's passes in its section; the other sections at their defaults, as the flat form
    // leaves them.
    let mut cfg = RunConfig {
        pr2: Pr2Config::default(),
        online_dqn: OnlineDqnConfig::default(),
        ..small(Path::new("tests/data/chase.ron"))
    };
    cfg.pqn.epochs = 2;
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    // The config.ron of a run saved before the sections: every field at the top.
    let config = run.join("config.ron");
    let flat = common::flat::flat_text(&cfg);
    assert!(flat.contains("\n    hidden: 32,") && !flat.contains("network: ("));
    std::fs::write(&config, &flat).unwrap();
    assert_eq!(RunConfig::load(&config).unwrap(), cfg);
    // Resumed from the library and from the command line, which warns about nothing: the run
    // directory's configuration is not a file the user edits.
    let longer = RunConfig {
        total_steps: 3 * 16 * 8,
        ..cfg.clone()
    };
    assert_eq!(train(&longer, &run, &resume()).unwrap().updates, 3);
    std::fs::write(&config, &flat).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["train", "--steps", "512", "--resume"])
        .arg(&run)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("warning"), "{err}");
    // A change is still refused, named by its new place.
    std::fs::write(&config, &flat).unwrap();
    let changed = {
        let mut c = longer.clone();
        c.learn.lr = 1e-3;
        c
    };
    assert_refused(&run, &changed, &["learn.lr: 0.0005 -> 0.001"]);
    // The resumed run saved its configuration in the sectioned form.
    let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["train", "--steps", "640", "--resume"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success());
    let saved = std::fs::read_to_string(&config).unwrap();
    assert!(saved.contains("    network: (\n"), "{saved}");
    let saved = RunConfig::load(&config).unwrap();
    assert_eq!(
        saved,
        RunConfig {
            total_steps: 640,
            ..cfg
        }
    );
    std::fs::remove_dir_all(&run).unwrap();
}
