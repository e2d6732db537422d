//! Training against a population (the run config's `population`): the population really acts
//! for its slots (on the stag hunt, PQN, IPPO and MAPPO learn the best response to whichever partner
//! the population holds: stag beside a stag hunter, hare beside a hare hunter), self-play keeps
//! its newest snapshots in every checkpoint and gets them back on resume, the memory preflight
//! counts self-play's copy of the learner and its snapshots, and what cannot work is refused
//! before anything runs.

use std::path::{Path, PathBuf};

use gridarena::critic::{Device, choose_device};
use gridarena::population::crossplay::crossplay;
use gridarena::population::{MemberSpec, Population, Sampling};
use gridarena::scenario::Scenario;
use gridarena::train::config::{Algo, PopulationTraining, RunConfig};
use gridarena::train::{TrainOptions, train};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-poptrain-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn stag_hunt(population: PopulationTraining, updates: u64) -> RunConfig {
    RunConfig {
        scenario: Some(root().join("assets/scenarios/stag_hunt.ron")),
        algo: Algo::Pqn,
        device: Device::Cpu,
        arenas: 16,
        rollout: 8,
        total_steps: 16 * 8 * updates,
        checkpoint_every: 5,
        population: Some(population),
        ..RunConfig::default()
    }
}

fn partner(dir: &Path, name: &str) -> PopulationTraining {
    let manifest = dir.join(format!("{name}.ron"));
    std::fs::write(
        &manifest,
        format!("Population(name: \"{name}\", members: [Scripted(\"always {name}\")])"),
    )
    .unwrap();
    PopulationTraining {
        slots: vec![1],
        opponents: Some(manifest),
        snapshot_every: 0,
        max_snapshots: 8,
        sampling: Sampling::Uniform,
    }
}

/// Per-capita return of the run's slot 0 beside `partner` in slot 1, over 16 episodes.
fn beside(run: &Path, partner: &str) -> f64 {
    let loaded = Scenario::load(&root().join("assets/scenarios/stag_hunt.ron")).unwrap();
    let cpu = choose_device(Device::Cpu).unwrap();
    let partner = Population {
        name: "partner".into(),
        sampling: Sampling::Uniform,
        members: vec![MemberSpec::Scripted(format!("always {partner}"))],
    };
    let bar = indicatif::ProgressBar::hidden();
    let m = crossplay(
        &loaded,
        &Population::of_run(run),
        &partner,
        &[0],
        16,
        3,
        &cpu,
        &bar,
    )
    .unwrap();
    m.mean[0][0]
}

#[test]
fn the_learner_best_responds_to_the_population_it_trains_beside() {
    best_responds(Algo::Pqn, "pqn");
}

#[test]
fn ippo_best_responds_to_the_population_leaving_its_slots_out_of_the_loss() {
    best_responds(Algo::Ippo, "ippo");
}

#[test]
fn mappo_best_responds_to_the_population_leaving_its_slots_out_of_the_loss() {
    best_responds(Algo::Mappo, "mappo");
}

fn best_responds(algo: Algo, label: &str) {
    let dir = temp(&format!("partner-{label}"));
    for (name, action) in [("stag", 0usize), ("hare", 1usize)] {
        let run = dir.join(format!("beside_{name}"));
        let mut cfg = RunConfig {
            algo,
            ..stag_hunt(partner(&dir, name), 300)
        };
        // One network for both slots: the population's rows, if learned, would pull it.
        cfg.network.shared = true;
        train(&cfg, &run, &TrainOptions::default()).unwrap();
        // 16 steps: stag beside stag pays 4 a step, hare beside hare 3 (the best responses:
        // 64 and 48 per episode); a learner that ignored its partner would miss one of them.
        let best = [64.0, 48.0][action];
        let got = beside(&run, name);
        assert!(
            got >= best - 3.0 && got <= best,
            "{label} beside always {name}: {got}"
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("population.json")).unwrap())
                .unwrap();
        assert_eq!(report["members"][0]["member"], format!("always {name}"));
        // Win rate of the learner side: beside a hare hunter both get 3 (ties: 0.5), beside a
        // stag hunter 4 each once it hunts the stag too.
        let rate = report["members"][0]["win_rate"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&rate), "{rate}");
    }
}

#[test]
fn self_play_keeps_its_newest_snapshots_across_a_resume() {
    let dir = temp("self");
    let spec = PopulationTraining {
        slots: vec![1],
        opponents: None,
        snapshot_every: 2,
        max_snapshots: 3,
        sampling: Sampling::Prioritized { exponent: 1.0 },
    };
    let cfg = stag_hunt(spec, 12);
    let run = dir.join("run");
    train(
        &cfg,
        &run,
        &TrainOptions {
            until_update: Some(6),
            ..TrainOptions::default()
        },
    )
    .unwrap();
    let members = |run: &Path| -> Vec<String> {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("population.json")).unwrap())
                .unwrap();
        v["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["member"].as_str().unwrap().to_string())
            .collect()
    };
    // Update 0's networks, then snapshots at 2, 4, 6: the newest three.
    assert_eq!(
        members(&run),
        [
            "snapshot of update 2",
            "snapshot of update 4",
            "snapshot of update 6"
        ]
    );
    let resumed = TrainOptions {
        resume: true,
        ..TrainOptions::default()
    };
    train(&cfg, &run, &resumed).unwrap();
    assert_eq!(
        members(&run),
        [
            "snapshot of update 8",
            "snapshot of update 10",
            "snapshot of update 12"
        ]
    );
    // A resume that changes the population is refused.
    let mut changed = cfg.clone();
    changed.population.as_mut().unwrap().max_snapshots = 4;
    changed.total_steps *= 2;
    let e = train(&changed, &run, &resumed).unwrap_err().to_string();
    assert!(e.contains("population"), "{e}");
}

#[test]
fn what_cannot_work_is_refused_before_anything_runs() {
    let dir = temp("refused");
    let ok = partner(&dir, "stag");
    let cases: Vec<(RunConfig, &str)> = vec![
        (
            RunConfig {
                algo: Algo::Vdn,
                ..stag_hunt(ok.clone(), 2)
            },
            "beside the independent learners only",
        ),
        (
            RunConfig {
                algo: Algo::Ippo,
                ..stag_hunt(
                    PopulationTraining {
                        snapshot_every: 2,
                        ..ok.clone()
                    },
                    2,
                )
            },
            "needs network.shared: true",
        ),
        (
            stag_hunt(
                PopulationTraining {
                    slots: vec![],
                    ..ok.clone()
                },
                2,
            ),
            "slots is empty",
        ),
        (
            stag_hunt(
                PopulationTraining {
                    slots: vec![0, 1],
                    ..ok.clone()
                },
                2,
            ),
            "at least one must stay with the learner",
        ),
        (
            stag_hunt(
                PopulationTraining {
                    slots: vec![2],
                    ..ok.clone()
                },
                2,
            ),
            "learner slots 0..2",
        ),
        (
            stag_hunt(
                PopulationTraining {
                    opponents: None,
                    ..ok.clone()
                },
                2,
            ),
            "no members",
        ),
        (
            stag_hunt(
                PopulationTraining {
                    opponents: Some(dir.join("missing.ron")),
                    ..ok.clone()
                },
                2,
            ),
            "missing.ron",
        ),
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

#[test]
fn the_memory_preflight_counts_self_play() {
    let dir = temp("plan");
    let loaded = Scenario::load(&root().join("assets/scenarios/stag_hunt.ron")).unwrap();
    let cpu = choose_device(Device::Cpu).unwrap();
    for algo in [Algo::Pqn, Algo::Ippo] {
        let mut cfg = RunConfig {
            algo,
            ..stag_hunt(partner(&dir, "stag"), 4)
        };
        cfg.network.shared = true;
        let frozen = gridarena::train::plan::plan(&cfg, &loaded, &cpu, u64::MAX);
        assert!(
            !frozen
                .tensors
                .iter()
                .any(|t| t.name.starts_with("self-play")),
            "{algo:?}: a frozen population takes no snapshots"
        );
        cfg.population.as_mut().unwrap().snapshot_every = 2;
        cfg.population.as_mut().unwrap().max_snapshots = 5;
        let plan = gridarena::train::plan::plan(&cfg, &loaded, &cpu, u64::MAX);
        let line = |prefix: &str| {
            plan.tensors
                .iter()
                .find(|t| t.name.starts_with(prefix))
                .unwrap_or_else(|| panic!("{algo:?}: no line `{prefix}`"))
                .bytes
        };
        // Five snapshots of every network's parameters (IPPO: the policy's and the value's),
        // kept and copied into each checkpoint.
        let params = gridarena::train::new_learner(&cfg, &loaded, &cpu)
            .unwrap()
            .params()
            .unwrap()
            .len() as u64;
        assert_eq!(line("self-play snapshots"), 5 * params * 4 * 2, "{algo:?}");
        // The player is the learner again, less its checkpoint.
        let checkpoint = line("checkpoint");
        assert_eq!(
            line("self-play player"),
            frozen.total_bytes - checkpoint,
            "{algo:?}"
        );
        assert_eq!(
            plan.total_bytes,
            frozen.total_bytes + line("self-play player") + line("self-play snapshots")
        );
        // Each checkpoint on disk holds the five snapshots too.
        let disk = |p: &gridarena::train::plan::Plan| p.disk.as_ref().unwrap().per_checkpoint_bytes;
        assert_eq!(disk(&plan), disk(&frozen) + 5 * params * 4, "{algo:?}");
    }
}
