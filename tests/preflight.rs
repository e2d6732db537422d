//! The memory preflight's estimate against the bytes a run really holds at its peak, measured
//! by a counting global allocator (live bytes high-water mark), and its refusals.

use gridarena::critic::{Device, choose_device};
use gridarena::train::config::RunConfig;
use gridarena::train::run_dir::RunDir;
use gridarena::train::{load_scenario, new_learner, plan};
use peak_alloc::PeakAlloc;

#[global_allocator]
static GLOBAL: PeakAlloc = PeakAlloc;

/// Peak live bytes above the level before `f`, while `f` runs (what it holds at its peak).
fn peak_during(f: impl FnOnce()) -> u64 {
    let base = GLOBAL.current_usage();
    GLOBAL.reset_peak_usage();
    f();
    GLOBAL.peak_usage().saturating_sub(base) as u64
}

/// Peak bytes of `updates` updates of a fresh learner against the plan without its checkpoint
/// line, and peak bytes of saving a checkpoint afterwards against that line (a run writes its
/// checkpoints between updates, from memory).
fn measured_vs_planned(cfg: &RunConfig, updates: usize) -> [(u64, u64); 2] {
    let loaded = load_scenario(cfg).unwrap();
    let device = choose_device(Device::Cpu).unwrap();
    let p = plan::plan(cfg, &loaded, &device, u64::MAX);
    eprintln!("{}", p.table());
    let checkpoint_line = p
        .tensors
        .iter()
        .find(|t| t.name.starts_with("checkpoint"))
        .map_or(0, |t| t.bytes);
    let planned = p.total_bytes - checkpoint_line;
    let built = peak_during(|| {
        let _ = new_learner(cfg, &loaded, &device).unwrap();
    });
    eprintln!("construction alone: {built} B");
    let mut learner = None;
    let measured = peak_during(|| {
        let mut l = new_learner(cfg, &loaded, &device).unwrap();
        for _ in 0..updates {
            l.update().unwrap();
        }
        learner = Some(l);
    });
    let mut learner = learner.unwrap();
    let run = std::env::temp_dir().join(format!("gridarena-preflight-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&run);
    let dir = RunDir::create(&run).unwrap();
    let saving = peak_during(|| {
        let c = learner.checkpoint().unwrap();
        dir.save_checkpoint(&c, 1).unwrap();
    });
    let _ = std::fs::remove_dir_all(&run);
    [(measured, planned), (saving, checkpoint_line)]
}

#[test]
fn the_preflight_estimate_matches_the_bytes_allocated_within_five_percent() {
    // The replays are far from full after two updates, so the checkpoints measured here leave
    // the replay out; tests/exact_resume.rs checks the replay's share of the checkpoint line
    // against the file a full replay writes.
    let gift = RunConfig {
        total_steps: 4 * 256 * 2,
        checkpoint_replay: false,
        ..RunConfig::load(std::path::Path::new("assets/runs/gift_pr2.ron")).unwrap()
    };
    let pqn = RunConfig {
        total_steps: 256 * 32 * 2,
        checkpoint_replay: false,
        ..RunConfig::default()
    };
    let iql = RunConfig {
        algo: gridarena::train::config::Algo::Iql,
        scenario: Some("assets/scenarios/pursuit_3.ron".into()),
        opponent_models: true,
        arenas: 64,
        rollout: 64,
        min_replay: 512,
        replay_capacity: 200_000,
        total_steps: 64 * 64 * 2,
        checkpoint_replay: false,
        ..RunConfig::default()
    };
    for (name, cfg, updates) in [
        ("gift_pr2", gift, 2),
        ("pqn_pursuit", pqn, 2),
        ("iql_opponents", iql, 2),
    ] {
        let [training, saving] = measured_vs_planned(&cfg, updates);
        // The checkpoint's JSON text varies with the arenas' values: a wider band.
        let bands = [
            ("training", training, 0.95, 1.05),
            ("checkpoint", saving, 0.8, 1.25),
        ];
        for (what, (measured, planned), low, high) in bands {
            let ratio = measured as f64 / planned as f64;
            eprintln!(
                "{name} {what}: measured {measured} B, planned {planned} B, ratio {ratio:.4}"
            );
            assert!(
                (low..=high).contains(&ratio),
                "{name} {what}: measured {measured} B vs planned {planned} B (ratio {ratio:.4})"
            );
        }
    }
}
