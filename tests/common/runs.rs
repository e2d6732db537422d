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
