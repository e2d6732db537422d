//! The memory preflight's estimate against the bytes a run really holds at its peak, measured
//! by a counting global allocator (live bytes high-water mark), and its refusals.

use gridarena::critic::{Device, choose_device};
use gridarena::train::config::RunConfig;
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

fn measured_vs_planned(cfg: &RunConfig, updates: usize) -> (u64, u64) {
    let loaded = load_scenario(cfg).unwrap();
    let device = choose_device(Device::Cpu).unwrap();
    let p = plan::plan(cfg, &loaded, &device, u64::MAX);
    eprintln!("{}", p.table());
    let planned = p.total_bytes;
    let built = peak_during(|| {
        let _ = new_learner(cfg, &loaded, &device).unwrap();
    });
    eprintln!("construction alone: {built} B");
    let measured = peak_during(|| {
        let mut learner = new_learner(cfg, &loaded, &device).unwrap();
        for _ in 0..updates {
            learner.update().unwrap();
        }
    });
    (measured, planned)
}

#[test]
fn the_preflight_estimate_matches_the_bytes_allocated_within_five_percent() {
    let gift = RunConfig {
        total_steps: 4 * 256 * 2,
        ..RunConfig::load(std::path::Path::new("assets/runs/gift_pr2.ron")).unwrap()
    };
    let pqn = RunConfig {
        total_steps: 256 * 32 * 2,
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
        ..RunConfig::default()
    };
    for (name, cfg, updates) in [
        ("gift_pr2", gift, 2),
        ("pqn_pursuit", pqn, 2),
        ("iql_opponents", iql, 2),
    ] {
        let (measured, planned) = measured_vs_planned(&cfg, updates);
        let ratio = measured as f64 / planned as f64;
        eprintln!("{name}: measured {measured} B, planned {planned} B, ratio {ratio:.4}");
        assert!(
            (0.95..=1.05).contains(&ratio),
            "{name}: measured {measured} B vs planned {planned} B (ratio {ratio:.4})"
        );
    }
}
