//! The run configuration by section: the saved form is sectioned and reads back as it was; the
//! old flat form (every shipped file before the sections, kept under tests/data/flat_runs/, and
//! the flat text a run directory saved) loads as its sectioned rewrite; a partial section fills
//! its defaults; keys name fields by dotted path or bare name, for `--set` and `--sweep` alike;
//! unknown and ambiguous keys are refused naming where the field is.

mod common;

use std::path::Path;
use std::process::Command;

use common::flat::flat_text;

use gridarena::train::config::{Algo, NetworkKind, RunConfig, ValueLoss};
use gridarena::train::sweep::parse_axis;

#[test]
fn every_shipped_config_in_the_old_flat_form_loads_as_its_sectioned_rewrite() {
    let mut seen = 0;
    for entry in std::fs::read_dir("tests/data/flat_runs").unwrap() {
        let flat_path = entry.unwrap().path();
        let name = flat_path.file_name().unwrap();
        let sectioned_path = Path::new("assets/runs").join(name);
        let (flat, moved) = RunConfig::load_with_moves(&flat_path).unwrap();
        let (sectioned, none) = RunConfig::load_with_moves(&sectioned_path).unwrap();
        assert_eq!(flat, sectioned, "{}", name.to_string_lossy());
        assert!(!moved.is_empty() && none.is_empty(), "{moved:?} {none:?}");
        // The shipped text is valid as it is (every refusal would name its line).
        let text = std::fs::read_to_string(&sectioned_path).unwrap();
        RunConfig::parse_valid(&text, &sectioned_path.display().to_string()).unwrap();
        seen += 1;
    }
    // The PPO, VDN, QMIX and shaping learners came after the sections: their configs have no
    // flat form.
    let shipped = std::fs::read_dir("assets/runs")
        .unwrap()
        .filter(|e| {
            let text = std::fs::read_to_string(e.as_ref().unwrap().path()).unwrap();
            let newer = [
                "ippo",
                "mappo",
                "pqn_vdn",
                "vdn",
                "qmix",
                "advantage_alignment",
                "loqa",
            ];
            !newer.iter().any(|a| text.contains(&format!("algo: {a},")))
        })
        .count();
    assert_eq!(
        seen, shipped,
        "every shipped config of the older algorithms has its flat copy"
    );
    // Where the flat keys went, as the CLI's warning names them.
    let (_, moved) =
        RunConfig::load_with_moves(Path::new("tests/data/flat_runs/climbing_pr2.ron")).unwrap();
    let to = |from: &str| {
        moved
            .iter()
            .find(|m| m.from == from)
            .map(|m| m.to.join(","))
            .unwrap()
    };
    assert_eq!(to("num_epochs"), "pr2.epochs");
    assert_eq!(to("target_tau"), "iql.target_tau");
    assert_eq!(to("lr"), "learn.lr");
    assert_eq!(to("hidden"), "network.hidden");
    let (gru, _) =
        RunConfig::load_with_moves(Path::new("tests/data/flat_runs/pqn_gru_pursuit.ron")).unwrap();
    assert_eq!(
        (gru.network.kind, gru.pqn.epochs, gru.pqn.minibatches),
        (NetworkKind::Gru, 4, 4)
    );
}

/// A configuration with every section away from its defaults.
fn unusual() -> RunConfig {
    let mut cfg = RunConfig {
        name: "unusual".into(),
        scenario: Some("assets/scenarios/coin_game.ron".into()),
        algo: Algo::Pr2Iql,
        seed: 7,
        arenas: 8,
        rollout: 12,
        ..RunConfig::default()
    };
    cfg.set_all(&[
        "network=(kind: gru, hidden: 48, layers: 1, gru_hidden: 24, burn_in: 3)",
        "learn=(lr: 1.5e-3, gamma: 0.9, loss: hl_gauss, bins: 21, v_min: -2.5, opponent_models: true)",
        "pqn=(epochs: 3, minibatches: 5, lambda: 0.7)",
        "iql=(replay_capacity: 4096, batch_size: 64, target_tau: 0.25, cer: 2)",
        "pr2=(critic: factorized, pair_rank: 2, rho: model, num_epochs: 6, minibatches: 3)",
        "online_dqn=(epochs: 4, minibatches: 2, target_tau: 0.125)",
    ])
    .unwrap();
    cfg.sweep
        .insert("learn.lr".into(), parse_axis("lr=[1e-3, 5e-4]").unwrap().1);
    cfg
}

#[test]
fn the_saved_form_is_sectioned_and_reads_back_as_it_was() {
    for cfg in [RunConfig::default(), unusual()] {
        let text = cfg.to_ron();
        assert_eq!(
            RunConfig::parse(&text, "config.ron").unwrap(),
            cfg,
            "{text}"
        );
        for section in ["network", "learn", "pqn", "iql", "pr2", "online_dqn"] {
            assert!(text.contains(&format!("\n    {section}: (\n")), "{text}");
        }
        // No section field at the top.
        assert!(!text.contains("\n    lr:") && text.contains("\n        lr:"));
    }
    let cfg = unusual();
    assert_eq!(
        (cfg.pr2.epochs, cfg.pqn.epochs, cfg.online_dqn.epochs),
        (6, 3, 4)
    );
    assert_eq!(cfg.learn.loss, ValueLoss::HlGauss);
    cfg.validate().unwrap();
}

#[test]
fn flat_text_with_every_field_loads_as_the_sectioned_config() {
    // The config.ron of a run saved before the sections: every field at the top. Each
    // algorithm reads the values it read then, from its own section.
    for algo in [Algo::Pqn, Algo::Iql, Algo::Pr2Iql, Algo::OnlineDqn] {
        let mut cfg = RunConfig {
            algo,
            ..RunConfig::default()
        };
        cfg.set_all(&[
            "lr=2e-3",
            "hidden=40",
            "network=gru",
            "layers=1",
            "lambda=0.5",
            "samples_per_insert=2.0",
            "critic=joint",
        ])
        .unwrap();
        // The shared fields, in the section the algorithm reads.
        let (epochs, minibatches) = (5, 3);
        match algo {
            Algo::Pqn | Algo::Iql => (cfg.pqn.epochs, cfg.pqn.minibatches) = (epochs, minibatches),
            Algo::Pr2Iql => (cfg.pr2.epochs, cfg.pr2.minibatches) = (epochs, minibatches),
            Algo::OnlineDqn => {
                (cfg.online_dqn.epochs, cfg.online_dqn.minibatches) = (epochs, minibatches)
            }
            Algo::Ippo
            | Algo::Mappo
            | Algo::PqnVdn
            | Algo::Vdn
            | Algo::Qmix
            | Algo::AdvantageAlignment
            | Algo::Loqa => {
                unreachable!("the flat form predates the PPO, VDN, QMIX and shaping learners")
            }
        }
        match algo {
            Algo::OnlineDqn => cfg.online_dqn.target_tau = 0.5,
            _ => cfg.iql.target_tau = 0.5,
        }
        let flat = flat_text(&cfg);
        assert!(
            flat.contains("\n    network: gru,") && !flat.contains("learn:"),
            "{flat}"
        );
        let (loaded, moved) = RunConfig::parse_with_moves(&flat, "config.ron").unwrap();
        assert!(!moved.is_empty());
        // An algorithm that reads none of the sections holding a field (IQL and `epochs`) gets
        // the value in each of them.
        let mut expected = cfg.clone();
        if algo == Algo::Iql {
            expected.pr2.epochs = epochs;
            expected.pr2.minibatches = minibatches;
            expected.online_dqn.epochs = epochs;
            expected.online_dqn.minibatches = minibatches;
            expected.ppo.epochs = epochs;
            expected.ppo.minibatches = minibatches;
        }
        if algo == Algo::Pqn {
            expected.online_dqn.target_tau = 0.5;
        }
        assert_eq!(loaded, expected, "{algo:?}\n{flat}");
    }
}

#[test]
fn a_partial_section_fills_its_defaults() {
    let cfg = RunConfig::parse(
        "RunConfig(algo: pqn, learn: (lr: 1e-3), network: NetworkConfig(hidden: 64), pqn: ())",
        "partial.ron",
    )
    .unwrap();
    let mut expected = RunConfig::default();
    expected.learn.lr = 1e-3;
    expected.network.hidden = 64;
    assert_eq!(cfg, expected);
    // The aliases, in their new place.
    let cfg = RunConfig::parse(
        "RunConfig(num_steps: 4, pr2: (num_epochs: 3), pqn: (num_epochs: 5))",
        "aliases.ron",
    )
    .unwrap();
    assert_eq!((cfg.rollout, cfg.pr2.epochs, cfg.pqn.epochs), (4, 3, 5));
}

#[test]
fn unknown_keys_are_refused_naming_where_the_field_is() {
    let refused = |text: &str| RunConfig::parse(text, "c.ron").unwrap_err().to_string();
    // Unknown in both forms: the valid fields.
    let err = refused("RunConfig(\n    learning_rate: 1e-3,\n)");
    assert!(
        err.starts_with("c.ron:2:5: unknown field `learning_rate`; fields are: name,")
            && err.contains("the sections network, learn, pqn, iql, pr2, online_dqn"),
        "{err}"
    );
    // A known field in the wrong section: its place.
    let err = refused("RunConfig(\n    learn: (hidden: 3),\n)");
    assert!(
        err.starts_with("c.ron:2:13:") && err.contains("it is `network.hidden`"),
        "{err}"
    );
    let err = refused("RunConfig(pqn: (foo: 3))");
    assert!(
        err.contains("unknown field `foo` in `pqn`; its fields are: epochs, minibatches, lambda"),
        "{err}"
    );
    // A field given twice, flat and in its section.
    let err = refused("RunConfig(\n    network: (hidden: 3),\n    hidden: 4,\n)");
    assert!(
        err.starts_with("c.ron:3:5:") && err.contains("given twice"),
        "{err}"
    );
    // `--set`: unknown, in the wrong section, ambiguous.
    let mut cfg = RunConfig::default();
    let err = cfg.set("learning_rate=1").unwrap_err().to_string();
    assert!(
        err.contains("unknown field") && err.contains("learn.lr"),
        "{err}"
    );
    let err = cfg.set("learn.hidden=1").unwrap_err().to_string();
    assert!(err.contains("it is `network.hidden`"), "{err}");
    cfg.algo = Algo::Iql;
    let err = cfg.set("epochs=3").unwrap_err().to_string();
    assert!(
        err.contains("`pqn.epochs`, `pr2.epochs`, `online_dqn.epochs` or `ppo.epochs`"),
        "{err}"
    );
    assert_eq!(
        cfg,
        RunConfig {
            algo: Algo::Iql,
            ..RunConfig::default()
        }
    );
}

#[test]
fn dotted_and_bare_sweep_keys_give_the_same_replicas_keeping_the_key_as_written() {
    let with = |axes: &[&str]| {
        let mut cfg = RunConfig {
            seeds: 2,
            ..RunConfig::default()
        };
        for a in axes {
            let (k, v) = parse_axis(a).unwrap();
            cfg.sweep.insert(k, v);
        }
        cfg.replicas()
    };
    let dotted = with(&["learn.lr=[1e-3,5e-4]", "learn.gamma=[0.9,0.99]"]).unwrap();
    let bare = with(&["lr=[1e-3,5e-4]", "gamma=[0.9,0.99]"]).unwrap();
    assert_eq!(dotted.len(), 8);
    for (d, b) in dotted.iter().zip(&bare) {
        assert_eq!(d.cfg, b.cfg);
        assert_eq!(
            (d.index, d.point, d.seed_index),
            (b.index, b.point, b.seed_index)
        );
    }
    assert_eq!(bare[2].point_label(), "gamma=0.9 lr=0.0005");
    assert_eq!(dotted[2].point_label(), "learn.gamma=0.9 learn.lr=0.0005");
    // Refusals resolve the key first and name it as written.
    let err = with(&["network.hidden=[8,16]"]).unwrap_err().to_string();
    assert!(
        err.contains("key `network.hidden` changes the networks' shapes"),
        "{err}"
    );
    let err = with(&["pr2.epochs=[1,2]"]).unwrap_err().to_string();
    assert!(
        err.contains("key `pr2.epochs` is not read by this algorithm"),
        "{err}"
    );
    let err = with(&["target_tau=[0.1,0.2]"]).unwrap_err().to_string();
    assert!(
        err.contains("key `target_tau` is not read by this algorithm"),
        "{err}"
    );
    let err = with(&["lr=[1e-3]", "learn.lr=[5e-4]"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("both name `learn.lr`"), "{err}");
    // A bare name several sections hold sweeps the one the algorithm reads.
    let mut pr2 = RunConfig {
        algo: Algo::Pr2Iql,
        ..RunConfig::default()
    };
    pr2.sweep
        .insert("target_tau".into(), parse_axis("t=[0.5,0.25]").unwrap().1);
    let reps = pr2.replicas().unwrap();
    assert_eq!(
        (
            reps[1].cfg.iql.target_tau,
            reps[1].cfg.online_dqn.target_tau
        ),
        (0.25, 0.01)
    );
}

fn gridarena(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_cli_takes_dotted_and_bare_keys_and_warns_once_about_a_flat_file() {
    // The README's forms: bare names, and the old flat `network=gru`.
    let plan = |sets: &[&str]| {
        let mut args = vec!["plan", "--json", "--memory-budget", "1T"];
        for s in sets {
            args.extend(["--set", s]);
        }
        gridarena(&args)
    };
    for sets in [
        &["network=gru", "layers=1", "device=cpu"][..],
        &["network.kind=gru", "network.layers=1", "device=cpu"],
        &[
            "loss=hl_gauss",
            "learn.bins=11",
            "epochs=3",
            "algo=online_dqn",
        ],
    ] {
        let out = plan(sets);
        assert!(
            out.status.success(),
            "{sets:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = plan(&["algo=iql", "minibatches=3"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("`pqn.minibatches`, `pr2.minibatches`, `online_dqn.minibatches` or"),
        "{err}"
    );
    // A flat file loads, with one warning naming the new places.
    let out = gridarena(&[
        "plan",
        "--config",
        "tests/data/flat_runs/climbing_iql.ron",
        "--json",
        "--memory-budget",
        "1T",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(
        err.contains("old flat form") && err.contains("lr is now learn.lr"),
        "{err}"
    );
    let out = gridarena(&[
        "plan",
        "--config",
        "assets/runs/climbing_iql.ron",
        "--json",
        "--memory-budget",
        "1T",
    ]);
    assert!(out.status.success() && !String::from_utf8_lossy(&out.stderr).contains("warning"));
}
