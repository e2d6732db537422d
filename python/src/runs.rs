//! Runs from Python: `train` (the command line's `gridarena train`), `load_policy` (a run's
//! greedy policy as a callable) and `eval` (the dict of `gridarena eval --json`).

use std::path::Path;

use numpy::{PyArray, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

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

/// Trains a run (the `gridarena train` of the command line) and returns its directory: `out`,
/// or without it a new `runs/<scenario>__<algo>__<seed>__<unix time>`.
/// `config` is a run configuration file (defaults when None); keyword overrides set config
/// fields as `--set` does (`lr=1e-3`, `scenario="assets/scenarios/coin_game.ron"`, dotted
/// paths through a dict: `**{"learn.lr": 1e-3}`). `resume_if_exists=True` (with `out`) starts
/// the run when `out` holds none and resumes it when it does, as `--resume-if-exists` does.
/// The GIL is released while training; Ctrl-C (KeyboardInterrupt) finishes the current update,
/// saves a checkpoint and then raises.
#[pyfunction]
#[pyo3(signature = (config=None, out=None, resume_if_exists=false, **overrides))]
pub(crate) fn train(
    py: Python<'_>,
    config: Option<std::path::PathBuf>,
    out: Option<std::path::PathBuf>,
    resume_if_exists: bool,
    overrides: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    use gridarena::train::config::RunConfig;
    if resume_if_exists && out.is_none() {
        return Err(PyValueError::new_err(
            "resume_if_exists=True needs out=DIR: without it every call would train into a new \
             directory under runs/ and never find the run to resume",
        ));
    }
    let mut cfg = match &config {
        Some(p) => RunConfig::load(p).map_err(|e| PyValueError::new_err(e.to_string()))?,
        None => RunConfig::default(),
    };
    if let Some(kv) = overrides {
        // `algo` first: a bare name several sections hold (`epochs`) resolves with the run's
        // algorithm wherever `algo=` stands among the keywords.
        let mut items: Vec<(String, Bound<'_, PyAny>)> = kv
            .iter()
            .map(|(k, v)| Ok((k.extract::<String>()?, v)))
            .collect::<PyResult<_>>()?;
        items.sort_by_key(|(k, _)| k.trim() != "algo");
        for (key, v) in items {
            if let Err(quoted) = cfg.set(&format!("{key}={}", ron_text(&v)?)) {
                // A str naming an enum variant (`network="gru"`, `algo="iql"`) is a RON
                // identifier, not a string: retried bare, and its error reported then.
                let ident = |s: &str| {
                    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                };
                match v.extract::<String>() {
                    Ok(s) if ident(&s) => cfg
                        .set(&format!("{key}={s}"))
                        .map_err(|e| PyValueError::new_err(e.to_string()))?,
                    _ => return Err(PyValueError::new_err(quoted.to_string())),
                }
            }
        }
    }
    cfg.validate()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    // Without `out`, a new directory under runs/ named as `gridarena train` names it.
    let out = out.unwrap_or_else(|| {
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let root = Path::new("runs");
        root.join(gridarena::train::run_dir::fresh_run_name(
            &cfg,
            start,
            |name| root.join(name).exists(),
        ))
    });
    let opts = gridarena::train::TrainOptions {
        resume_if_exists,
        ..Default::default()
    };
    let summary = train_interruptibly(py, &cfg, &out, &opts)?;
    Ok(summary.run.display().to_string())
}

/// How long the calling thread waits, without the GIL, between two looks at Python's signals.
const SIGNAL_SLICE: std::time::Duration = std::time::Duration::from_millis(50);

/// Trains on a thread of its own while the calling thread waits without the GIL in slices of
/// [`SIGNAL_SLICE`], running Python's signal handlers between them (Python runs them only when
/// its main thread runs Python code). An exception from a handler (KeyboardInterrupt on
/// Ctrl-C) sets the run's stop flag: the run finishes its update and saves a checkpoint, and
/// the exception is raised then.
fn train_interruptibly(
    py: Python<'_>,
    cfg: &gridarena::train::config::RunConfig,
    out: &Path,
    opts: &gridarena::train::TrainOptions,
) -> PyResult<gridarena::train::TrainSummary> {
    use std::sync::atomic::Ordering;
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let (tx, mut rx) = channel();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let _ = tx.send(gridarena::train::train(cfg, out, opts).map_err(|e| e.to_string()));
        });
        let mut raised: Option<PyErr> = None;
        loop {
            let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_SLICE), rx));
            rx = back;
            match got {
                Ok(result) => {
                    return match raised {
                        Some(e) => Err(e),
                        None => result.map_err(PyValueError::new_err),
                    };
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(raised.unwrap_or_else(|| {
                        pyo3::exceptions::PyRuntimeError::new_err("the training thread panicked")
                    }));
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            if raised.is_none()
                && let Err(e) = py.check_signals()
            {
                opts.stop.store(true, Ordering::SeqCst);
                raised = Some(e);
            }
        }
    })
}

/// A trained run's greedy policy: `policy(obs)` maps `[R, N, O]` u8 observations to `[R, N]`
/// greedy actions; `policy.q_values(obs)` gives the values it ranks actions by, `[R x N, A]`.
/// A recurrent policy (`network: gru`, `policy.recurrent`) carries each row's hidden state from
/// call to call: call it on consecutive steps of the same R arenas, and after each step call
/// `policy.episodes_start(terminated | truncated)` so that the arenas that ended start their
/// next episode from a zero state (a memoryless policy ignores it).
#[pyclass(unsendable, module = "gridarena._gridarena")]
pub(crate) struct Policy {
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

    /// Whether the policy carries hidden states from step to step (`network: gru`).
    #[getter]
    fn recurrent(&self) -> bool {
        use gridarena::policy::Policy as _;
        self.inner.has_memory()
    }

    /// Marks the arenas whose `started[r]` is true (a bool or 0/1 array `[R]`, e.g. the
    /// `terminated | truncated` of the step just taken) as starting a new episode: a recurrent
    /// policy zeroes their hidden states.
    fn episodes_start(&mut self, py: Python<'_>, started: &Bound<'_, PyAny>) -> PyResult<()> {
        use gridarena::policy::Policy as _;
        let flags = py
            .import("numpy")?
            .call_method1("asarray", (started, "bool"))?
            .call_method0("ravel")?
            .call_method0("tolist")?;
        let started: Vec<bool> = flags.extract()?;
        self.inner.episodes_start(&started);
        Ok(())
    }
}

/// The greedy policy of the run in `run_dir` (its newest checkpoint, on the CPU).
#[pyfunction]
pub(crate) fn load_policy(run_dir: std::path::PathBuf) -> PyResult<Policy> {
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
pub(crate) fn eval(
    py: Python<'_>,
    run_dir: std::path::PathBuf,
    episodes: usize,
) -> PyResult<Py<PyAny>> {
    let device = gridarena::critic::Chosen::Cpu {
        reason: "python".into(),
    };
    let report = py
        .detach(|| {
            gridarena::train::eval::evaluate(&run_dir, episodes, &device).map_err(|e| e.to_string())
        })
        .map_err(PyValueError::new_err)?;
    let text = serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let json = py.import("json")?;
    Ok(json.call_method1("loads", (text,))?.unbind())
}
