//! Populations from Python: cross-play, scenario sets and Schelling diagrams, each returning
//! the dict `gridarena eval --crossplay / --scenario-set / --schelling --json` prints.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use gridarena::population::crossplay::crossplay as crossplay_matrix;
use gridarena::population::members::{Member, expand, scenario_of};
use gridarena::population::scenario_set::{ScenarioSet, evaluate_set};
use gridarena::population::schelling::schelling as schelling_diagram;
use gridarena::population::{Population, PopulationError};
use gridarena::scenario::{LoadedScenario, Scenario};

fn cpu() -> gridarena::critic::Chosen {
    gridarena::critic::Chosen::Cpu {
        reason: "python".into(),
    }
}

fn to_py(py: Python<'_>, value: &impl serde::Serialize) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(value).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}

fn scenario(explicit: Option<PathBuf>, members: &[Member]) -> Result<LoadedScenario, String> {
    match explicit {
        Some(p) => Scenario::load(&p).map_err(|e| format!("{}: {e}", p.display())),
        None => scenario_of(members).map_err(|e| e.to_string()),
    }
}

/// The cross-play matrix of two populations (manifest files or run directories).
#[pyfunction]
#[pyo3(signature = (pop_a, pop_b, scenario=None, row_slots=vec![0], episodes=100, seed=0))]
pub(crate) fn crossplay(
    py: Python<'_>,
    pop_a: PathBuf,
    pop_b: PathBuf,
    scenario: Option<PathBuf>,
    row_slots: Vec<usize>,
    episodes: usize,
    seed: u64,
) -> PyResult<Py<PyAny>> {
    let m = py
        .detach(|| -> Result<_, String> {
            let (a, b) = (
                Population::open(&pop_a).map_err(|e| e.to_string())?,
                Population::open(&pop_b).map_err(|e| e.to_string())?,
            );
            let mut members = expand(&a).map_err(|e| e.to_string())?;
            members.extend(expand(&b).map_err(|e| e.to_string())?);
            let loaded = self::scenario(scenario, &members)?;
            let bar = indicatif::ProgressBar::hidden();
            crossplay_matrix(&loaded, &a, &b, &row_slots, episodes, seed, &cpu(), &bar)
                .map_err(|e| e.to_string())
        })
        .map_err(PyValueError::new_err)?;
    to_py(py, &m)
}

/// A population (manifest file or run directory) on every scenario of a scenario set; the
/// dict has `scores`, the normalised scores as `members x scenarios`.
#[pyfunction]
#[pyo3(signature = (scenario_set, population, episodes=100, seed=0))]
pub(crate) fn evaluate_scenario_set(
    py: Python<'_>,
    scenario_set: PathBuf,
    population: PathBuf,
    episodes: usize,
    seed: u64,
) -> PyResult<Py<PyAny>> {
    let (r, scores) = py
        .detach(|| -> Result<_, PopulationError> {
            let set = ScenarioSet::load(&scenario_set)?;
            let pop = Population::open(&population)?;
            let bar = indicatif::ProgressBar::hidden();
            let r = evaluate_set(&set, &pop, episodes, seed, &cpu(), &bar)?;
            let scores = r.scores();
            Ok((r, scores))
        })
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let mut value = serde_json::to_value(&r).map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(map) = value.as_object_mut() {
        map.insert("scores".into(), scores);
    }
    to_py(py, &value)
}

/// A Schelling diagram: members as `random`, `scripted:NAME`, `RUN` or `RUN#K`.
#[pyfunction]
#[pyo3(signature = (cooperator, defector, scenario=None, episodes=100, seed=0))]
pub(crate) fn schelling(
    py: Python<'_>,
    cooperator: String,
    defector: String,
    scenario: Option<PathBuf>,
    episodes: usize,
    seed: u64,
) -> PyResult<Py<PyAny>> {
    let s = py
        .detach(|| -> Result<_, String> {
            let c = Member::parse(&cooperator).map_err(|e| e.to_string())?;
            let d = Member::parse(&defector).map_err(|e| e.to_string())?;
            let loaded = self::scenario(scenario, &[c.clone(), d.clone()])?;
            schelling_diagram(&loaded, &c, &d, episodes, seed, &cpu()).map_err(|e| e.to_string())
        })
        .map_err(PyValueError::new_err)?;
    to_py(py, &s)
}
