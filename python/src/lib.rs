//! The native half of the `gridarena` Python package: scenarios by name or path, and `VecEnv`,
//! a batch of arenas whose observation, reward and done buffers are numpy views of the engine's
//! own memory (no copy, no allocation per step). `gridarena/__init__.py` builds the PettingZoo
//! `ParallelEnv` on top.

use std::path::Path;

use gridarena::engine::EnvBatch;
use gridarena::scenario::{LoadedScenario, Scenario};
use numpy::ndarray::{ArrayView, Dimension, IntoDimension};
use numpy::{Element, PyArray, PyReadonlyArray2, PyReadonlyArray3, PyUntypedArrayMethods};
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

/// The observations `[T + 1, B, N, O]` of `num_arenas` arenas of `scenario` seeded `seed` and
/// stepped with `actions` `[T, B, N]`, computed by the Rust engine alone and copied out (the
/// reference `VecEnv`'s views are checked against).
#[pyfunction]
fn engine_observations<'py>(
    py: Python<'py>,
    scenario: &str,
    num_arenas: usize,
    seed: u64,
    actions: numpy::PyReadonlyArray3<'py, i64>,
) -> PyResult<Bound<'py, PyArray<u8, numpy::Ix4>>> {
    let loaded = load(scenario)?;
    let mut batch = EnvBatch::new(&loaded, num_arenas, seed)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let (n, o) = (batch.layout().learners, batch.layout().obs_len);
    let shape = actions.shape().to_vec();
    if shape.len() != 3 || shape[1] != num_arenas || shape[2] != n {
        return Err(PyValueError::new_err(format!(
            "actions of shape {shape:?}; need [T, {num_arenas}, {n}]"
        )));
    }
    let t = shape[0];
    let flat = actions
        .as_slice()
        .map_err(|_| PyValueError::new_err("actions must be contiguous"))?;
    let mut out = Vec::with_capacity((t + 1) * num_arenas * n * o);
    out.extend_from_slice(&batch.buffers().obs);
    for step in flat.chunks(num_arenas * n) {
        for (d, &a) in batch.actions_mut().iter_mut().zip(step) {
            *d = u8::try_from(a).map_err(|_| PyValueError::new_err(format!("action {a}")))?;
        }
        batch
            .step()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        out.extend_from_slice(&batch.buffers().obs);
    }
    let arr = numpy::ndarray::Array4::from_shape_vec((t + 1, num_arenas, n, o), out)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyArray::from_owned_array(py, arr))
}

/// Finished episodes a `VecEnv` keeps until `episodes()` takes them.
const EPISODE_LOG: usize = 1 << 16;

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
        let mut batch = EnvBatch::new(&loaded, num_arenas, seed)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        // Finished episodes are kept (at most EPISODE_LOG, the oldest dropped) until
        // `episodes()` takes them.
        batch.start_episode_log(EPISODE_LOG);
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

    /// The names of the scenario's episode counters (e.g. `catches`), in `episodes()` order.
    #[getter]
    fn counter_names(&self) -> Vec<String> {
        self.batch.layout().counter_names.clone()
    }

    /// The episodes that finished since the last call (at most the newest 65,536), as a list
    /// of dicts: `arena`, `length`, `terminated`, `returns` (per agent slot, learners first),
    /// `counters` (name to count).
    fn episodes<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let names = self.batch.layout().counter_names.clone();
        let mut out = Vec::new();
        for e in self.batch.take_episodes() {
            let d = PyDict::new(py);
            d.set_item("arena", e.arena)?;
            d.set_item("length", e.length)?;
            d.set_item("terminated", e.terminated)?;
            d.set_item("returns", e.returns)?;
            let counters = PyDict::new(py);
            for (n, c) in names.iter().zip(&e.counters) {
                counters.set_item(n, c)?;
            }
            d.set_item("counters", counters)?;
            out.push(d);
        }
        Ok(out)
    }
}

/// A Python value as RON text for `RunConfig::set` (str, bool, int, float).
fn ron_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = v.extract::<bool>() {
        return Ok(b.to_string());
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(i.to_string());
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(format!("{f:?}"));
    }
    if let Ok(s) = v.extract::<String>() {
        return Ok(format!("{s:?}"));
    }
    Err(PyValueError::new_err(format!(
        "override value {v}: use a str, bool, int or float"
    )))
}

/// Trains a run (the `gridarena train` of the command line) and returns its directory.
/// `config` is a run configuration file (defaults when None); keyword overrides set config
/// fields (`lr=1e-3`, `scenario="assets/scenarios/coin_game.ron"`). The GIL is released while
/// training.
#[pyfunction]
#[pyo3(signature = (config=None, out=None, **overrides))]
fn train(
    py: Python<'_>,
    config: Option<std::path::PathBuf>,
    out: Option<std::path::PathBuf>,
    overrides: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    use gridarena::train::config::RunConfig;
    let mut cfg = match &config {
        Some(p) => RunConfig::load(p).map_err(|e| PyValueError::new_err(e.to_string()))?,
        None => RunConfig::default(),
    };
    if let Some(kv) = overrides {
        for (k, v) in kv.iter() {
            let key: String = k.extract()?;
            cfg.set(&format!("{key}={}", ron_text(&v)?))
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
        }
    }
    cfg.validate()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let out = out.unwrap_or_else(|| Path::new("runs").join(&cfg.name));
    let opts = gridarena::train::TrainOptions::default();
    let summary = py
        .detach(|| gridarena::train::train(&cfg, &out, &opts))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(summary.run.display().to_string())
}

/// A trained run's greedy policy: `policy(obs)` maps `[R, N, O]` u8 observations to `[R, N]`
/// greedy actions; `policy.q_values(obs)` gives the values it ranks actions by, `[R x N, A]`.
#[pyclass(unsendable, module = "gridarena._gridarena")]
struct Policy {
    inner: gridarena::train::GreedyPolicy,
    agents: usize,
    obs_len: usize,
}

impl Policy {
    fn rows<'a>(&self, obs: &'a PyReadonlyArray3<'_, u8>) -> PyResult<&'a [u8]> {
        let shape = obs.shape();
        if shape.len() != 3 || shape[1] != self.agents || shape[2] != self.obs_len {
            return Err(PyValueError::new_err(format!(
                "observations of shape {shape:?}; this policy needs [R, {}, {}]",
                self.agents, self.obs_len
            )));
        }
        obs.as_slice()
            .map_err(|_| PyValueError::new_err("observations must be C-contiguous"))
    }
}

#[pymethods]
impl Policy {
    fn __call__<'py>(
        &mut self,
        py: Python<'py>,
        obs: PyReadonlyArray3<'py, u8>,
    ) -> PyResult<Bound<'py, PyArray<u8, numpy::Ix2>>> {
        use gridarena::policy::Policy as _;
        let rows = self.rows(&obs)?;
        let r = obs.shape()[0];
        let mut out = vec![0u8; r * self.agents];
        self.inner
            .actions(rows, &mut out)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let arr = numpy::ndarray::Array2::from_shape_vec((r, self.agents), out)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyArray::from_owned_array(py, arr))
    }

    /// The values `[R x N, A]` the policy ranks actions by.
    fn q_values<'py>(
        &mut self,
        py: Python<'py>,
        obs: PyReadonlyArray3<'py, u8>,
    ) -> PyResult<Bound<'py, PyArray<f32, numpy::Ix2>>> {
        use gridarena::policy::Policy as _;
        let rows = self.rows(&obs)?.to_vec();
        let r = obs.shape()[0] * self.agents;
        let q = self
            .inner
            .q_values(&rows)
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .unwrap_or_default();
        let a = q.len() / r.max(1);
        let arr = numpy::ndarray::Array2::from_shape_vec((r, a), q)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyArray::from_owned_array(py, arr))
    }

    /// The update of the checkpoint the networks come from.
    #[getter]
    fn update(&self) -> u64 {
        self.inner.update()
    }
}

/// The greedy policy of the run in `run_dir` (its newest checkpoint, on the CPU).
#[pyfunction]
fn load_policy(run_dir: std::path::PathBuf) -> PyResult<Policy> {
    let mut inner = gridarena::train::load_policy(&run_dir)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let layout = inner.learner().batch().layout().clone();
    Ok(Policy {
        inner,
        agents: layout.learners,
        obs_len: layout.obs_len,
    })
}

/// Evaluates the run's greedy policy against a random one over `episodes` episodes: the same
/// dict as `gridarena eval --json`.
#[pyfunction]
#[pyo3(signature = (run_dir, episodes=100))]
fn eval(py: Python<'_>, run_dir: std::path::PathBuf, episodes: usize) -> PyResult<Py<PyAny>> {
    let device = gridarena::critic::Chosen::Cpu {
        reason: "python".into(),
    };
    let report = py
        .detach(|| gridarena::train::eval::evaluate(&run_dir, episodes, &device))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let text = serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let json = py.import("json")?;
    Ok(json.call_method1("loads", (text,))?.unbind())
}

/// The native module.
#[pymodule]
fn _gridarena(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<VecEnv>()?;
    m.add_class::<Policy>()?;
    m.add_function(wrap_pyfunction!(scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_function(wrap_pyfunction!(load_policy, m)?)?;
    m.add_function(wrap_pyfunction!(eval, m)?)?;
    m.add_function(wrap_pyfunction!(engine_observations, m)?)?;
    Ok(())
}
