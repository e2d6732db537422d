//! Helpers shared by the integration tests: tiny inline scenarios, the GPU adapter or a loud
//! skip.
#![allow(dead_code, missing_docs)]

pub mod checks;
pub mod flat;
pub mod skip;

use gridarena::components::GridPos;
use gridarena::engine::EnvBatch;
use gridarena::scenario::{LoadedScenario, Scenario};

/// A Pursuit scenario from a map, a substrate parameter list and a role list (RON fragments).
pub fn pursuit(map: &[&str], params: &str, roles: &str, extra: &str) -> LoadedScenario {
    let rows: Vec<String> = map.iter().map(|r| format!("\"{r}\"")).collect();
    let src = format!(
        "Scenario(name: \"test\", substrate: Pursuit(({params})), map: [{}], roles: [{roles}], \
         max_steps: 100, observation: (radius: 1, channels: [obstacle, pursuers, evaders]), {extra})",
        rows.join(", ")
    );
    Scenario::parse(&src, "<test>").unwrap_or_else(|e| panic!("test scenario invalid: {e}\n{src}"))
}

pub fn at(x: i16, y: i16) -> (GridPos, bool) {
    (GridPos { x, y }, true)
}

/// One arena, agents placed by hand.
pub fn batch_with(loaded: &LoadedScenario, agents: &[(GridPos, bool)]) -> EnvBatch {
    let mut b = EnvBatch::new(loaded, 1, 7).unwrap();
    b.set_agents(0, agents).unwrap();
    b
}

/// Sets every learner's action in every arena and steps once.
pub fn step(b: &mut EnvBatch, actions: &[u8]) {
    let n = actions.len();
    for chunk in b.actions_mut().chunks_mut(n) {
        chunk.copy_from_slice(actions);
    }
    b.step().unwrap();
}

pub const LEFT: u8 = 0;
pub const RIGHT: u8 = 1;
pub const UP: u8 = 2;
pub const DOWN: u8 = 3;
pub const STAY: u8 = 4;

/// Deterministic uniform values in `[-scale, scale)` (an LCG, so the critic tests need no RNG).
pub fn random(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(7);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// Labels for the synthetic classification task over `[rows, 6]` inputs: two groups of three
/// classes each, a fixed function of the input, two labels per row.
pub fn classification_labels(x: &[f32], rows: usize) -> Vec<u32> {
    (0..rows)
        .flat_map(|r| {
            let xr = &x[r * 6..(r + 1) * 6];
            let a = if xr[0] > 0.3 {
                0
            } else if xr[1] > 0.0 {
                1
            } else {
                2
            };
            let b = if xr[2] + xr[3] > 0.0 {
                0
            } else if xr[4] > 0.5 {
                1
            } else {
                2
            };
            [a, b]
        })
        .collect()
}

/// The GPU device, or `None` after a recorded skip when no adapter exists ([`skip::skip`]:
/// with `CI` set that fails). With an adapter present, an error choosing it fails the test.
pub fn gpu_or_skip() -> Option<gridarena::critic::Chosen> {
    if !skip::gpu_adapter_present() {
        return None;
    }
    match gridarena::critic::choose_device(gridarena::critic::Device::Gpu) {
        Ok(d) => Some(d),
        Err(e) => panic!("a GPU adapter exists but choosing it failed: {e}"),
    }
}

/// Asserts every GPU value is within `tol` of the CPU's, relative, with an absolute floor for
/// values near zero (the CPU/GPU parity tests' comparison).
pub fn assert_close(what: &str, gpu: &[f32], cpu: &[f32], tol: f32) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: lengths");
    let scale = cpu.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1e-3);
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        let err = (g - c).abs() / c.abs().max(scale * 1e-2);
        assert!(
            err < tol,
            "{what}[{i}]: gpu {g} vs cpu {c} (relative {err})"
        );
    }
}

/// `gridarena train` of a tiny run on `device` for `steps` env steps into `out`: the chase test
/// scenario, 8 arenas x 4 steps per update, one 16-wide hidden layer. Callers add their own
/// `--set`s after these.
pub fn tiny_train(device: &str, steps: u64, out: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gridarena"));
    cmd.args([
        "train",
        "--scenario",
        "tests/data/chase.ron",
        "--device",
        device,
    ])
    .args(["--steps", &steps.to_string(), "--out"])
    .arg(out);
    for s in [
        "arenas=8",
        "rollout=4",
        "minibatches=2",
        "hidden=16",
        "layers=1",
    ] {
        cmd.args(["--set", s]);
    }
    cmd
}
