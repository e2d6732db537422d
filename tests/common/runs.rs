//! Helpers shared by the trainer tests: what two runs are compared by.
#![allow(dead_code, missing_docs)]

use std::path::Path;

use gridarena::train::run_dir::RunDir;

/// Metrics without the wall-clock fields.
pub fn deterministic_metrics(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("sps");
            o.remove("seconds");
            v
        })
        .collect()
}

/// The newest checkpoint's parameters.
pub fn params(run: &Path) -> Vec<f32> {
    RunDir::open(run).unwrap().load_latest().unwrap().params
}

/// Checks two runs' parameters (the CPU's and the GPU's) have the same length and differ by at
/// most 1e-4 anywhere.
pub fn assert_params_close(what: &str, cpu: &[f32], gpu: &[f32]) {
    assert_eq!(cpu.len(), gpu.len(), "{what}: parameter counts");
    let worst = cpu
        .iter()
        .zip(gpu)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(worst <= 1e-4, "{what}: parameters differ by up to {worst}");
}

/// Opponent-model scores over the last updates of a run, averaged over every (agent, opponent)
/// pair: the models' and the frequency baseline's (each opponent's own action frequencies in
/// the scored rows, which ignores the observation).
#[derive(Debug)]
pub struct OpponentSummary {
    pub accuracy: f64,
    pub log_loss: f64,
    pub marginal_accuracy: f64,
    pub marginal_log_loss: f64,
    pub uniform_log_loss: f64,
}

/// [`OpponentSummary`] over the last `k` lines of `metrics`; panics on a missing or non-finite
/// score.
pub fn opponent_summary(metrics: &[serde_json::Value], k: usize) -> OpponentSummary {
    assert!(
        metrics.len() >= k,
        "{} updates, fewer than {k}",
        metrics.len()
    );
    let mean = |key: &str| {
        let (mut sum, mut n) = (0.0, 0usize);
        for line in &metrics[metrics.len() - k..] {
            let table = line[key]
                .as_array()
                .unwrap_or_else(|| panic!("`{key}` is {} in {line}", line[key]));
            for v in table.iter().flat_map(|row| row.as_array().unwrap()) {
                let x = v.as_f64().unwrap_or_else(|| panic!("`{key}` holds {v}"));
                assert!(x.is_finite(), "`{key}` holds {x}");
                sum += x;
                n += 1;
            }
        }
        assert!(n > 0, "`{key}`: no scores");
        sum / n as f64
    };
    let uniform = metrics[metrics.len() - 1]["opponent_uniform_log_loss"]
        .as_f64()
        .expect("opponent_uniform_log_loss");
    OpponentSummary {
        accuracy: mean("opponent_accuracy"),
        log_loss: mean("opponent_log_loss"),
        marginal_accuracy: mean("opponent_marginal_accuracy"),
        marginal_log_loss: mean("opponent_marginal_log_loss"),
        uniform_log_loss: uniform,
    }
}
