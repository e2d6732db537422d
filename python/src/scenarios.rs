//! Scenarios from Python: the shipped assets embedded by name, files by path, and keyword
//! overrides of their fields.

use std::path::Path;

use gridarena::scenario::{LoadedScenario, Scenario, overrides};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// The shipped scenarios, embedded so `scenario="coin_game"` works from any directory.
pub(crate) const SHIPPED: &[(&str, &str)] = &[
    (
        "pursuit",
        include_str!("../../assets/scenarios/pursuit.ron"),
    ),
    (
        "pursuit_pz",
        include_str!("../../assets/scenarios/pursuit_pz.ron"),
    ),
    (
        "pursuit_3",
        include_str!("../../assets/scenarios/pursuit_3.ron"),
    ),
    (
        "coin_game",
        include_str!("../../assets/scenarios/coin_game.ron"),
    ),
    (
        "gift_refinements",
        include_str!("../../assets/scenarios/gift_refinements.ron"),
    ),
    (
        "gift_refinements_refined",
        include_str!("../../assets/scenarios/gift_refinements_refined.ron"),
    ),
    (
        "chemistry_two_cycles",
        include_str!("../../assets/scenarios/chemistry_two_cycles.ron"),
    ),
    (
        "chemistry_three_cycles",
        include_str!("../../assets/scenarios/chemistry_three_cycles.ron"),
    ),
    (
        "cue_memory",
        include_str!("../../assets/scenarios/cue_memory.ron"),
    ),
    (
        "climbing_game",
        include_str!("../../assets/scenarios/climbing_game.ron"),
    ),
    (
        "matching_pennies",
        include_str!("../../assets/scenarios/matching_pennies.ron"),
    ),
    (
        "prisoners_dilemma",
        include_str!("../../assets/scenarios/prisoners_dilemma.ron"),
    ),
    (
        "stag_hunt",
        include_str!("../../assets/scenarios/stag_hunt.ron"),
    ),
    (
        "rock_paper_scissors",
        include_str!("../../assets/scenarios/rock_paper_scissors.ron"),
    ),
    (
        "commons_harvest_open",
        include_str!("../../assets/scenarios/commons_harvest_open.ron"),
    ),
    (
        "clean_up",
        include_str!("../../assets/scenarios/clean_up.ron"),
    ),
    (
        "lbf_8x8_2p_2f",
        include_str!("../../assets/scenarios/lbf_8x8_2p_2f.ron"),
    ),
    (
        "lbf_8x8_2p_2f_coop",
        include_str!("../../assets/scenarios/lbf_8x8_2p_2f_coop.ron"),
    ),
    (
        "lbf_8x8_2p_2f_2s",
        include_str!("../../assets/scenarios/lbf_8x8_2p_2f_2s.ron"),
    ),
    (
        "lbf_10x10_3p_3f",
        include_str!("../../assets/scenarios/lbf_10x10_3p_3f.ron"),
    ),
    (
        "lbf_10x10_3p_3f_coop",
        include_str!("../../assets/scenarios/lbf_10x10_3p_3f_coop.ron"),
    ),
    (
        "lbf_10x10_3p_3f_2s",
        include_str!("../../assets/scenarios/lbf_10x10_3p_3f_2s.ron"),
    ),
    (
        "lbf_15x15_4p_3f",
        include_str!("../../assets/scenarios/lbf_15x15_4p_3f.ron"),
    ),
    (
        "lbf_15x15_4p_3f_coop",
        include_str!("../../assets/scenarios/lbf_15x15_4p_3f_coop.ron"),
    ),
    (
        "overcooked_cramped_room",
        include_str!("../../assets/scenarios/overcooked_cramped_room.ron"),
    ),
    (
        "overcooked_asymm_advantages",
        include_str!("../../assets/scenarios/overcooked_asymm_advantages.ron"),
    ),
    (
        "overcooked_coord_ring",
        include_str!("../../assets/scenarios/overcooked_coord_ring.ron"),
    ),
    (
        "overcooked_forced_coord",
        include_str!("../../assets/scenarios/overcooked_forced_coord.ron"),
    ),
    (
        "overcooked_counter_circuit",
        include_str!("../../assets/scenarios/overcooked_counter_circuit.ron"),
    ),
];

/// A shipped scenario by name, else a scenario file, with `overrides` applied (keyword
/// arguments: `max_steps=100`, `surround=False`, `**{"observation.radius": 2}`); errors as
/// `ValueError` (file:line:column, field, what is allowed).
pub(crate) fn load(
    scenario: &str,
    overrides: Option<&Bound<'_, PyDict>>,
) -> PyResult<LoadedScenario> {
    let loaded = load_asset(scenario)?;
    let Some(kv) = overrides.filter(|d| !d.is_empty()) else {
        return Ok(loaded);
    };
    let mut list = Vec::with_capacity(kv.len());
    for (k, v) in kv.iter() {
        list.push((k.extract::<String>()?, json_value(&v)?));
    }
    overrides::apply(
        &loaded.scenario,
        &list,
        &format!("{scenario} with overrides"),
    )
    .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A shipped scenario by name, else a scenario file.
fn load_asset(scenario: &str) -> PyResult<LoadedScenario> {
    if let Some((name, text)) = SHIPPED.iter().find(|(n, _)| *n == scenario) {
        return Scenario::parse(text, &format!("<embedded>/{name}.ron"))
            .map_err(|e| PyValueError::new_err(e.to_string()));
    }
    let path = Path::new(scenario);
    if !path.exists() {
        let names: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
        return Err(PyValueError::new_err(format!(
            "scenario {scenario:?}: not a shipped scenario ({}) and no such file",
            names.join(", ")
        )));
    }
    Scenario::load(path).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A Python value as JSON: None, bool, int, float, str, lists, tuples and dicts of them, and
/// numpy scalars and arrays (through `tolist()`).
fn json_value(v: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    use serde_json::Value;
    if v.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = v.extract::<bool>() {
        return Ok(Value::Bool(b));
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(Value::from(i));
    }
    if let Ok(f) = v.extract::<f64>() {
        return serde_json::Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| {
                PyValueError::new_err(format!("override value {f}: not a finite number"))
            });
    }
    if let Ok(s) = v.extract::<String>() {
        return Ok(Value::String(s));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut o = serde_json::Map::new();
        for (k, x) in d.iter() {
            o.insert(k.extract::<String>()?, json_value(&x)?);
        }
        return Ok(Value::Object(o));
    }
    if v.cast::<PyList>().is_ok() || v.cast::<PyTuple>().is_ok() {
        let items: PyResult<Vec<Value>> = v.try_iter()?.map(|x| json_value(&x?)).collect();
        return Ok(Value::Array(items?));
    }
    if v.hasattr("tolist")? {
        return json_value(&v.call_method0("tolist")?);
    }
    Err(PyValueError::new_err(format!(
        "override value {v}: use None, a bool, int, float, str, or a list or dict of them"
    )))
}

/// The names of the shipped scenarios.
#[pyfunction]
pub(crate) fn scenarios() -> Vec<&'static str> {
    SHIPPED.iter().map(|(n, _)| *n).collect()
}
