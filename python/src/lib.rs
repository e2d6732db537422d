//! The native half of the `gridarena` Python package: scenarios by name or path, and `VecEnv`,
//! a batch of arenas whose observation, reward and done buffers are numpy views of the engine's
//! own memory (no copy, no allocation per step). `gridarena/__init__.py` builds the PettingZoo
//! `ParallelEnv` on top.

use std::path::Path;

use gridarena::engine::EnvBatch;
use gridarena::scenario::{LoadedScenario, Scenario};
use numpy::ndarray::{ArrayView, Dimension, IntoDimension};
use numpy::{Element, PyArray, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The shipped scenarios, embedded so `scenario="coin_game"` works from any directory.
const SHIPPED: [(&str, &str); 11] = [
    (
        "pursuit",
        include_str!("../../assets/scenarios/pursuit.ron"),
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
];

/// A shipped scenario by name, else a scenario file; errors as `ValueError` (file:line:column).
fn load(scenario: &str) -> PyResult<LoadedScenario> {
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

/// The names of the shipped scenarios.
#[pyfunction]
fn scenarios() -> Vec<&'static str> {
    SHIPPED.iter().map(|(n, _)| *n).collect()
}

/// A batch of `num_arenas` arenas of one scenario, stepped together (auto-reset: an arena whose
/// episode ended starts the next one in the same step; `final_obs` keeps the observation that
/// ended it).
#[pyclass(module = "gridarena._gridarena")]
struct VecEnv {
    batch: EnvBatch,
    pool: rayon::ThreadPool,
    actions: usize,
}

/// A numpy view of `data` shaped `shape`, kept alive by `owner` and read-only.
fn view<'py, T: Element, D: Dimension>(
    owner: &Bound<'py, VecEnv>,
    data: &[T],
    shape: impl IntoDimension<Dim = D>,
) -> PyResult<Bound<'py, PyArray<T, D>>> {
    let arr =
        ArrayView::from_shape(shape, data).map_err(|e| PyValueError::new_err(e.to_string()))?;
    // SAFETY: `data` lives in the engine's step buffers, owned by `owner` (a `VecEnv`), which
    // the array holds as its base object, so the memory outlives the view. The buffers are
    // sized once when the batch is built and never reallocated; stepping rewrites them in
    // place, which is the documented meaning of these views (they show the current step).
    let array = unsafe { PyArray::borrow_from_array(&arr, owner.clone().into_any()) };
    let kwargs = PyDict::new(owner.py());
    kwargs.set_item("write", false)?;
    array.call_method("setflags", (), Some(&kwargs))?;
    Ok(array)
}

#[pymethods]
impl VecEnv {
    /// `scenario` is a shipped name (`gridarena.scenarios()`) or a `.ron` path; `threads`
    /// defaults to one per core.
    #[new]
    #[pyo3(signature = (scenario, num_arenas, seed=0, threads=None))]
    fn new(scenario: &str, num_arenas: usize, seed: u64, threads: Option<usize>) -> PyResult<Self> {
        let loaded = load(scenario)?;
        let batch = EnvBatch::new(&loaded, num_arenas, seed)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let mut pool = rayon::ThreadPoolBuilder::new();
        if let Some(t) = threads {
            if t == 0 {
                return Err(PyValueError::new_err("threads must be at least 1"));
            }
            pool = pool.num_threads(t);
        }
        let pool = pool
            .build()
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        let actions = loaded.scenario.action_set().len();
        Ok(VecEnv {
            batch,
            pool,
            actions,
        })
    }

    /// Arenas.
    #[getter]
    fn num_arenas(&self) -> usize {
        self.batch.arenas()
    }

    /// Learning agents per arena.
    #[getter]
    fn num_agents(&self) -> usize {
        self.batch.layout().learners
    }

    /// Observation bytes per agent.
    #[getter]
    fn obs_len(&self) -> usize {
        self.batch.layout().obs_len
    }

    /// Actions per agent.
    #[getter]
    fn num_actions(&self) -> usize {
        self.actions
    }

    /// `[B, N, O]` u8: every agent's observation now (a view of the engine's buffer).
    #[getter]
    fn obs<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArray<u8, numpy::Ix3>>> {
        let me = slf.borrow();
        let (b, n, o) = (
            me.batch.arenas(),
            me.batch.layout().learners,
            me.batch.layout().obs_len,
        );
        view(slf, &me.batch.buffers().obs, (b, n, o))
    }

    /// `[B, N, O]` u8: for the arenas whose episode ended in the last step, the observation that
    /// ended it (before the auto-reset); stale elsewhere.
    #[getter]
    fn final_obs<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArray<u8, numpy::Ix3>>> {
        let me = slf.borrow();
        let (b, n, o) = (
            me.batch.arenas(),
            me.batch.layout().learners,
            me.batch.layout().obs_len,
        );
        view(slf, &me.batch.buffers().final_obs, (b, n, o))
    }

    /// `[B, N]` f32 rewards of the last step.
    #[getter]
    fn rewards<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArray<f32, numpy::Ix2>>> {
        let me = slf.borrow();
        let (b, n) = (me.batch.arenas(), me.batch.layout().learners);
        view(slf, &me.batch.buffers().rewards, (b, n))
    }

    /// `[B]` u8, 1 where the last step ended the episode by the rules.
    #[getter]
    fn terminated<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArray<u8, numpy::Ix1>>> {
        let me = slf.borrow();
        view(slf, &me.batch.buffers().terminated, me.batch.arenas())
    }

    /// `[B]` u8, 1 where the last step hit the step limit.
    #[getter]
    fn truncated<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArray<u8, numpy::Ix1>>> {
        let me = slf.borrow();
        view(slf, &me.batch.buffers().truncated, me.batch.arenas())
    }

    /// Steps every arena with `actions` `[B, N]` (any integer dtype); the GIL is released while
    /// the engine steps. Returns the (rewards, terminated, truncated) views.
    #[allow(clippy::type_complexity)]
    fn step<'py>(
        slf: &Bound<'py, Self>,
        actions: PyReadonlyArray2<'py, i64>,
    ) -> PyResult<(
        Bound<'py, PyArray<f32, numpy::Ix2>>,
        Bound<'py, PyArray<u8, numpy::Ix1>>,
        Bound<'py, PyArray<u8, numpy::Ix1>>,
    )> {
        {
            let mut me = slf.borrow_mut();
            let (b, n, a) = (me.batch.arenas(), me.batch.layout().learners, me.actions);
            if actions.shape() != [b, n] {
                return Err(PyValueError::new_err(format!(
                    "actions of shape {:?}; this VecEnv needs [{b}, {n}]",
                    actions.shape()
                )));
            }
            let dst = me.batch.actions_mut();
            for (i, (&v, d)) in actions.as_array().iter().zip(dst.iter_mut()).enumerate() {
                if v < 0 || v as usize >= a {
                    return Err(PyValueError::new_err(format!(
                        "action {v} at [{}, {}]: actions are 0..{a}",
                        i / n,
                        i % n
                    )));
                }
                *d = v as u8;
            }
            let me = &mut *me;
            let (batch, pool) = (&mut me.batch, &me.pool);
            slf.py()
                .detach(|| pool.install(|| batch.step()))
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
        }
        Ok((
            Self::rewards(slf)?,
            Self::terminated(slf)?,
            Self::truncated(slf)?,
        ))
    }

    /// Resets every arena (a new episode everywhere).
    fn reset(&mut self) {
        self.batch.reset();
    }
}

/// The native module.
#[pymodule]
fn _gridarena(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<VecEnv>()?;
    m.add_function(wrap_pyfunction!(scenarios, m)?)?;
    Ok(())
}
