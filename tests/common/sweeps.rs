//! Helpers shared by the sweep tests: a config with a grid, and a replica's single run.
#![allow(dead_code, missing_docs)]

use gridarena::train::config::RunConfig;
use gridarena::train::sweep::{Replica, parse_axis};

/// `cfg` with one axis per `key=[v1, v2, ...]` of `axes`, as `--sweep` reads them.
pub fn with_sweep(mut cfg: RunConfig, axes: &[&str]) -> RunConfig {
    for a in axes {
        let (k, v) = parse_axis(a).unwrap();
        cfg.sweep.insert(k, v);
    }
    cfg
}

/// Replica `r`'s single run as a user would ask for it: `--seed` and one `--set` per key.
pub fn single_run_of(base: &RunConfig, r: &Replica) -> RunConfig {
    let mut cfg = RunConfig {
        seed: base.seed + r.seed_index as u64,
        ..base.clone()
    };
    for (key, value) in &r.values {
        cfg.set(&format!("{key}={value}")).unwrap();
    }
    cfg
}
