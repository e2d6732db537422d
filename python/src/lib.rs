//! The native half of the `gridarena` Python package: [`scenarios`] (shipped by name, files by
//! path, keyword overrides), [`vecenv`] (`VecEnv`, the engine's buffers as numpy views, and
//! rendering), [`runs`] (train, load a policy, evaluate) and [`populations`] (cross-play,
//! scenario sets, Schelling diagrams). `gridarena/parallel.py` builds the
//! PettingZoo `ParallelEnv` on top.

mod populations;
mod runs;
mod scenarios;
mod vecenv;

use pyo3::prelude::*;

/// The native module.
#[pymodule]
fn _gridarena(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<vecenv::VecEnv>()?;
    m.add_class::<runs::Policy>()?;
    m.add_function(wrap_pyfunction!(scenarios::scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(runs::train, m)?)?;
    m.add_function(wrap_pyfunction!(runs::load_policy, m)?)?;
    m.add_function(wrap_pyfunction!(runs::eval, m)?)?;
    m.add_function(wrap_pyfunction!(populations::crossplay, m)?)?;
    m.add_function(wrap_pyfunction!(populations::evaluate_scenario_set, m)?)?;
    m.add_function(wrap_pyfunction!(populations::schelling, m)?)?;
    m.add_function(wrap_pyfunction!(vecenv::engine_observations, m)?)?;
    m.add_function(wrap_pyfunction!(vecenv::render_backend, m)?)?;
    Ok(())
}
