//! `VecEnv`: a batch of arenas whose observation, reward and done buffers are numpy views of
//! the engine's own memory (no copy, no allocation per step), rendering one arena to an RGB
//! array, and the engine-only reference the views are tested against.

use std::sync::Mutex;

use gridarena::engine::EnvBatch;
use gridarena::render::Canvas;
use numpy::ndarray::{ArrayView, Dimension, IntoDimension};
use numpy::{Element, PyArray, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::scenarios::load;

/// A batch of `num_arenas` arenas of one scenario, stepped together (auto-reset: an arena whose
/// episode ended starts the next one in the same step; `final_obs` keeps the observation that
/// ended it).
#[pyclass(module = "gridarena._gridarena")]
pub(crate) struct VecEnv {
    batch: EnvBatch,
    pool: rayon::ThreadPool,
    actions: usize,
}

/// The observations `[T + 1, B, N, O]` of `num_arenas` arenas of `scenario` seeded `seed` and
/// stepped with `actions` `[T, B, N]`, computed by the Rust engine alone and copied out (the
/// reference `VecEnv`'s views are checked against).
#[pyfunction]
#[pyo3(signature = (scenario, num_arenas, seed, actions, **overrides))]
pub(crate) fn engine_observations<'py>(
    py: Python<'py>,
    scenario: &str,
    num_arenas: usize,
    seed: u64,
    actions: numpy::PyReadonlyArray3<'py, i64>,
    overrides: Option<&Bound<'_, PyDict>>,
) -> PyResult<Bound<'py, PyArray<u8, numpy::Ix4>>> {
    let loaded = load(scenario, overrides)?;
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

/// The most stepping threads a `VecEnv` starts (each is an OS thread with its own stack).
const MAX_THREADS: usize = 1024;

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
    /// defaults to one per core; `global_state=True` keeps every arena's global state
    /// (`state`); keyword overrides change the scenario's fields (`max_steps=100`,
    /// `surround=False`).
    #[new]
    #[pyo3(signature = (scenario, num_arenas, seed=0, threads=None, global_state=false, **overrides))]
    fn new(
        scenario: &str,
        num_arenas: usize,
        seed: u64,
        threads: Option<usize>,
        global_state: bool,
        overrides: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let loaded = load(scenario, overrides)?;
        let mut batch = EnvBatch::new(&loaded, num_arenas, seed)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        batch.set_global_state(global_state);
        // Finished episodes are kept (at most EPISODE_LOG, the oldest dropped) until
        // `episodes()` takes them.
        batch.start_episode_log(EPISODE_LOG);
        let mut pool = rayon::ThreadPoolBuilder::new();
        if let Some(t) = threads {
            if !(1..=MAX_THREADS).contains(&t) {
                return Err(PyValueError::new_err(format!(
                    "threads {t}: 1..={MAX_THREADS} (or None: one per core)"
                )));
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

    /// Global-state bytes per arena (the length of a `state` row, kept or not).
    #[getter]
    fn state_len(&self) -> usize {
        self.batch.layout().state_len
    }

    /// `[B, S]` u8: every arena's global state now (a view), or None unless the env was made
    /// with `global_state=True`. Layout: `global_state_blocks`.
    #[getter]
    fn state<'py>(slf: &Bound<'py, Self>) -> PyResult<Option<Bound<'py, PyArray<u8, numpy::Ix2>>>> {
        let me = slf.borrow();
        let (b, s) = (me.batch.arenas(), me.batch.layout().state_len);
        me.batch
            .global_state()
            .map(|state| view(slf, state, (b, s)))
            .transpose()
    }

    /// `[B, S]` u8: for the arenas whose episode ended in the last step, the global state that
    /// ended it (before the auto-reset); None unless the env keeps the global state.
    #[getter]
    fn final_state<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<Option<Bound<'py, PyArray<u8, numpy::Ix2>>>> {
        let me = slf.borrow();
        let (b, s) = (me.batch.arenas(), me.batch.layout().state_len);
        me.batch
            .final_state()
            .map(|state| view(slf, state, (b, s)))
            .transpose()
    }

    /// `[B, N, A]` u8: 1 where an agent's action is legal now (a view), or None when the
    /// scenario's substrate has no illegal actions.
    #[getter]
    fn action_mask<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<Option<Bound<'py, PyArray<u8, numpy::Ix3>>>> {
        let me = slf.borrow();
        let (b, n, a) = (me.batch.arenas(), me.batch.layout().learners, me.actions);
        me.batch
            .action_mask()
            .map(|mask| view(slf, mask, (b, n, a)))
            .transpose()
    }

    /// An agent's observation block by block, in byte order, as `gridarena check --explain`
    /// prints it: dicts of `name`, `offset`, `shape` (list of `(axis, length)`), `entries`,
    /// `max` and `meaning`.
    #[getter]
    fn observation_blocks<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        blocks(py, self.batch.layout().scenario.observation_layout())
    }

    /// The global state's blocks, in byte order (as `observation_blocks`).
    #[getter]
    fn global_state_blocks<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        blocks(py, self.batch.layout().scenario.global_state_layout())
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

    /// Steps every arena with `actions` `[B, N]`, a numpy array of any integer dtype; the GIL is
    /// released while the engine steps. Returns the (rewards, terminated, truncated) views.
    #[allow(clippy::type_complexity)]
    fn step<'py>(
        slf: &Bound<'py, Self>,
        actions: &Bound<'py, PyAny>,
    ) -> PyResult<(
        Bound<'py, PyArray<f32, numpy::Ix2>>,
        Bound<'py, PyArray<u8, numpy::Ix1>>,
        Bound<'py, PyArray<u8, numpy::Ix1>>,
    )> {
        {
            let mut me = slf.borrow_mut();
            let (b, n, a) = (me.batch.arenas(), me.batch.layout().learners, me.actions);
            let dst = me.batch.actions_mut();
            // One branch per integer dtype: numpy hands each over without a conversion copy.
            let copied = copy_actions::<i64>(actions, dst, [b, n], a)
                .or_else(|| copy_actions::<i32>(actions, dst, [b, n], a))
                .or_else(|| copy_actions::<u8>(actions, dst, [b, n], a))
                .or_else(|| copy_actions::<i8>(actions, dst, [b, n], a))
                .or_else(|| copy_actions::<i16>(actions, dst, [b, n], a))
                .or_else(|| copy_actions::<u16>(actions, dst, [b, n], a))
                .or_else(|| copy_actions::<u32>(actions, dst, [b, n], a))
                .or_else(|| copy_actions::<u64>(actions, dst, [b, n], a));
            match copied {
                Some(result) => result?,
                None => return Err(not_integer_actions(actions)),
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

    /// Resets every arena (a new episode everywhere). With `seed`, every arena draws from that
    /// seed's streams from now on: the env then steps exactly as a new `VecEnv` made with
    /// `seed` (the buffers, and so every view, stay where they are).
    #[pyo3(signature = (seed=None))]
    fn reset(&mut self, seed: Option<u64>) {
        match seed {
            Some(seed) => self.batch.reseed(seed),
            None => self.batch.reset(),
        }
    }

    /// The seed the arenas draw from (the constructor's, or the last `reset(seed=...)`).
    #[getter]
    fn seed(&self) -> u64 {
        self.batch.seed()
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

    /// Arena `arena` now as an RGB image `[H, W, 3]` u8, `cell` pixels per map cell (the
    /// engine's renderer: on the GPU when an adapter exists, else on the CPU; see
    /// `render_backend()`). The GIL is released while drawing.
    #[pyo3(signature = (arena=0, cell=16))]
    fn render<'py>(
        &mut self,
        py: Python<'py>,
        arena: usize,
        cell: u32,
    ) -> PyResult<Bound<'py, PyArray<u8, numpy::Ix3>>> {
        if arena >= self.batch.arenas() {
            return Err(PyValueError::new_err(format!(
                "arena {arena}: this VecEnv has arenas 0..{}",
                self.batch.arenas()
            )));
        }
        if !(1..=128).contains(&cell) {
            return Err(PyValueError::new_err(format!(
                "cell {cell}: 1..=128 pixels"
            )));
        }
        let frame = self.batch.snapshot(arena);
        let scene = gridarena::render::extract(self.batch.layout(), &frame, None);
        let (w, h, rgba) = py.detach(|| with_canvas(|c| c.render(&scene, cell)));
        let rgb: Vec<u8> = rgba
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect();
        let arr = numpy::ndarray::Array3::from_shape_vec((h as usize, w as usize, 3), rgb)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyArray::from_owned_array(py, arr))
    }
}

/// The process's one canvas, made on first use (an adapter takes a while to open).
/// `GRIDARENA_RENDER=cpu` skips the adapter.
static CANVAS: Mutex<Option<Canvas>> = Mutex::new(None);

fn with_canvas<T>(f: impl FnOnce(&mut Canvas) -> T) -> T {
    let mut guard = CANVAS.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Canvas::detect))
}

/// What `render()` draws with: the GPU adapter, in words, or `cpu`.
#[pyfunction]
pub(crate) fn render_backend(py: Python<'_>) -> String {
    py.detach(|| with_canvas(|c| c.backend()))
}

/// Copies `actions` into the engine's action buffer when it is a 2-d numpy array of `T`:
/// `None` for another type, else whether its shape and every value were valid.
fn copy_actions<T>(
    actions: &Bound<'_, PyAny>,
    dst: &mut [u8],
    shape: [usize; 2],
    num_actions: usize,
) -> Option<PyResult<()>>
where
    T: Element + Copy + Into<i128> + std::fmt::Display,
{
    let array = actions.extract::<PyReadonlyArray2<'_, T>>().ok()?;
    let [b, n] = shape;
    if array.shape() != [b, n] {
        return Some(Err(PyValueError::new_err(format!(
            "actions of shape {:?}; this VecEnv needs [{b}, {n}]",
            array.shape()
        ))));
    }
    for (i, (&v, d)) in array.as_array().iter().zip(dst.iter_mut()).enumerate() {
        let wide: i128 = v.into();
        if wide < 0 || wide >= num_actions as i128 {
            return Some(Err(PyValueError::new_err(format!(
                "action {v} for arena {}, agent {} (entry {i} of the flattened [B x N] \
                 actions): actions are 0..{num_actions}",
                i / n,
                i % n
            ))));
        }
        *d = wide as u8;
    }
    Some(Ok(()))
}

/// The error for actions that are not a 2-d numpy array of integers, naming what was given.
fn not_integer_actions(actions: &Bound<'_, PyAny>) -> PyErr {
    let Ok(dtype) = actions.getattr("dtype") else {
        let name = actions.get_type().name().map(|n| n.to_string());
        return PyTypeError::new_err(format!(
            "actions must be a numpy array of integers [B, N]; got a {}",
            name.unwrap_or_else(|_| "value of unknown type".into())
        ));
    };
    let integer = dtype
        .getattr("kind")
        .and_then(|k| k.extract::<String>())
        .is_ok_and(|k| k == "i" || k == "u");
    match actions.getattr("shape") {
        Ok(shape) if integer => PyValueError::new_err(format!(
            "actions of shape {shape}; this VecEnv needs [B, N]"
        )),
        _ => PyTypeError::new_err(format!(
            "actions must be a numpy array of integers [B, N]; got an array of dtype {dtype}"
        )),
    }
}

/// Observation or global-state blocks as Python dicts.
fn blocks(
    py: Python<'_>,
    fields: Vec<gridarena::scenario::ObsField>,
) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut offset = 0;
    let mut out = Vec::new();
    for field in fields {
        let d = PyDict::new(py);
        d.set_item("name", &field.name)?;
        d.set_item("offset", offset)?;
        let shape: Vec<(&str, usize)> = field.shape.iter().map(|a| (a.name, a.len)).collect();
        d.set_item("shape", shape)?;
        d.set_item("entries", &field.entries)?;
        d.set_item("max", field.max)?;
        d.set_item("meaning", &field.meaning)?;
        offset += field.len();
        out.push(d);
    }
    Ok(out)
}
