//! The state and report of PSRO with learned best responses (`DIR/psro.json`): the members,
//! the meta-game entries, the pending meta-strategies and the finished iterations, with the
//! settings a continued run must match.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{LearnedPsroError, LearnedPsroOptions};
use crate::population::MemberSpec;
use crate::scenario::LoadedScenario;

/// The state file in the output directory.
pub const STATE_FILE: &str = "psro.json";

/// A member of a slot's population as kept in the state: run paths relative to the directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberRecord {
    /// Its name in reports (`random`, `always rock`, `iter_0/slot_1`).
    pub name: String,
    /// What it is.
    pub spec: MemberSpec,
}

/// One entry of the meta-game: a pair of members and each slot's return.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileEntry {
    /// Member index per slot.
    pub profile: Vec<usize>,
    /// Mean episode return per slot.
    pub mean: Vec<f64>,
    /// Its standard error per slot.
    pub se: Vec<f64>,
}

/// One finished iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnedPsroIteration {
    /// Iteration, from 0.
    pub iteration: usize,
    /// Members per slot the meta-strategies mix.
    pub population_sizes: Vec<usize>,
    /// Each slot's meta-strategy over its members.
    pub meta_strategies: Vec<Vec<f64>>,
    /// Each slot's return under the meta-strategies, `u_i(sigma)`.
    pub values: Vec<f64>,
    /// Each slot's return with its new best response against the other's meta-strategy.
    pub br_values: Vec<f64>,
    /// `br_values - values` per slot (negative when the learned response fell short).
    pub gains: Vec<f64>,
    /// Half-width of each gain's 95% interval.
    pub gains_ci95: Vec<f64>,
    /// `sum_i max(0, gain_i)`: a lower bound on the meta-strategies' NashConv, up to the
    /// interval.
    pub nashconv: f64,
    /// Half-width of the 95% interval of the sum of the gains.
    pub nashconv_ci95: f64,
    /// Pairs of members evaluated during the iteration.
    pub profiles_evaluated: usize,
    /// The best responses' run directories (relative to the output directory).
    pub runs: Vec<String>,
    /// Wall-clock seconds (of the invocation that finished it).
    pub seconds: f64,
}

/// The state and report of a PSRO run (`DIR/psro.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnedPsroReport {
    /// What the NashConv is.
    pub method: String,
    /// The settings a continued run must match.
    pub settings: serde_json::Value,
    /// Each slot's members in the order they were added.
    pub members: Vec<Vec<MemberRecord>>,
    /// The meta-game entries evaluated so far.
    pub payoffs: Vec<ProfileEntry>,
    /// The meta-strategies of an iteration whose best responses are being trained.
    pub pending: Option<Vec<Vec<f64>>>,
    /// Every finished iteration.
    pub iterations: Vec<LearnedPsroIteration>,
}

/// What a continued run must share with the saved one.
pub(super) fn settings(o: &LearnedPsroOptions, loaded: &LoadedScenario) -> serde_json::Value {
    serde_json::json!({
        "scenario": loaded.scenario.name,
        "scenario_file": o.scenario,
        "first": o.first,
        "episodes": o.episodes,
        "meta_solver": o.meta_solver,
        "config": o.config,
    })
}

/// The differing settings, `key: saved -> asked` (a config field by its name).
pub(super) fn changes(saved: &serde_json::Value, asked: &serde_json::Value) -> Vec<String> {
    let (Some(a), Some(b)) = (saved.as_object(), asked.as_object()) else {
        return vec!["the settings".into()];
    };
    let mut out = Vec::new();
    for (k, v) in b {
        let w = a.get(k).unwrap_or(&serde_json::Value::Null);
        if w == v {
            continue;
        }
        match (w.as_object(), v.as_object()) {
            (Some(x), Some(y)) => {
                for (f, y) in y {
                    let x = x.get(f).unwrap_or(&serde_json::Value::Null);
                    if x != y {
                        out.push(format!("{k}.{f}: {x} -> {y}"));
                    }
                }
            }
            _ => out.push(format!("{k}: {w} -> {v}")),
        }
    }
    out
}

pub(super) fn write_state(dir: &Path, report: &LearnedPsroReport) -> Result<(), LearnedPsroError> {
    let path = dir.join(STATE_FILE);
    let io = |error| LearnedPsroError::Io {
        path: path.clone(),
        error,
    };
    let text = serde_json::to_string_pretty(report).map_err(|e| io(std::io::Error::other(e)))?;
    crate::atomic::write_atomic(&path, text.as_bytes()).map_err(io)
}

/// The saved state of `dir`, checked against `asked` (`None`: nothing saved yet).
pub(super) fn load_state(
    dir: &Path,
    asked: &serde_json::Value,
) -> Result<Option<LearnedPsroReport>, LearnedPsroError> {
    let path = dir.join(STATE_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let bad = |reason: String| LearnedPsroError::State {
        path: path.clone(),
        reason,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
    let saved: LearnedPsroReport = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let diff = changes(&saved.settings, asked);
    if !diff.is_empty() {
        return Err(LearnedPsroError::Mismatch {
            path,
            changes: diff.join("; "),
        });
    }
    let k = saved.iterations.len();
    if saved.members.len() != 2 || saved.members.iter().any(|m| m.len() < k + 1) {
        return Err(bad(format!(
            "{k} finished iterations need at least {} members per slot for 2 slots",
            k + 1
        )));
    }
    // Entries the meta-game reads: a member of each slot, a finite mean and error per slot.
    let sizes: Vec<usize> = saved.members.iter().map(Vec::len).collect();
    if let Some(e) = saved.payoffs.iter().find(|e| {
        e.profile.len() != 2
            || e.profile.iter().zip(&sizes).any(|(j, n)| j >= n)
            || e.mean.len() != 2
            || e.se.len() != 2
            || e.mean.iter().chain(&e.se).any(|x| !x.is_finite())
    }) {
        return Err(bad(format!(
            "meta-game entry {:?} names no pair of members or lacks a finite return per slot",
            e.profile
        )));
    }
    Ok(Some(saved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_name_the_config_field() {
        let a = serde_json::json!({"episodes": 4, "config": {"seed": 1, "arenas": 8}});
        let b = serde_json::json!({"episodes": 4, "config": {"seed": 2, "arenas": 8}});
        assert_eq!(changes(&a, &b), vec!["config.seed: 1 -> 2".to_string()]);
        assert!(changes(&a, &a).is_empty());
    }
}
