//! The checkpoint of an exact NashConv under way, `RUN/nashconv_exact.partial`
//! (`nashconv_exact_agent<i>.partial` for one learner): the finished solves and the values of
//! the one under way ([`ExactProgress`]), written atomically so that a crash leaves the
//! previous checkpoint or the new one, and refused with a [`PartialError`] when it was written
//! for another analysis.
//!
//! Layout, every number little-endian: the magic `GANCPART`, the format version (u32), the
//! [`Fingerprint`] (what the values depend on), the seconds spent, the evaluation when done
//! (its sweeps and each learner's value), the best responses done (learner, value, sweeps), the
//! solve under way when any (sweeps, last change, then its values as raw f64), and a CRC-64 of
//! everything before it. A truncated, damaged or foreign file is an error, never a panic, and
//! a refused file is left as it is.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::exact::{
    BestResponseDone, EvaluationDone, ExactProgress, PolicyTable, Solved, Stages, Tolerance,
};
use super::model::TransitionModel;
use crate::scenario::Scenario;

/// The file's first bytes.
const MAGIC: &[u8; 8] = b"GANCPART";
/// The format this build writes and reads.
pub const PARTIAL_VERSION: u32 = 1;
/// `u64::MAX` in the agent field: every learner.
const ALL_AGENTS: u64 = u64::MAX;

static CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_ECMA_182);

/// Where the checkpoint of an exact analysis of `run` goes (beside its result,
/// `nashconv_exact[_agent<i>].json`).
pub fn partial_path(run: &Path, agent: Option<usize>) -> PathBuf {
    run.join(match agent {
        Some(i) => format!("nashconv_exact_agent{i}.partial"),
        None => "nashconv_exact.partial".into(),
    })
}

/// Why a checkpoint could not be written or was refused.
#[derive(Debug, thiserror::Error)]
pub enum PartialError {
    /// Reading or writing the file.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        error: io::Error,
    },
    /// Not a checkpoint of an exact analysis, or one of another format version.
    #[error(
        "{path}: not a checkpoint of this build's exact analysis ({found}); remove it or run \
         with --fresh"
    )]
    Foreign {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        found: String,
    },
    /// Written for another analysis (another checkpoint, scenario, discount, tolerance, or
    /// learner).
    #[error(
        "{path} was written for another analysis: its {field} is {partial}, this one's is \
         {now}; it is left as it is (run with --fresh to start over and replace it)"
    )]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// The fingerprint field that differs.
        field: &'static str,
        /// The file's value.
        partial: String,
        /// This analysis' value.
        now: String,
    },
    /// Truncated or damaged.
    #[error(
        "{path}: damaged checkpoint ({what}); it is left as it is (run with --fresh to start over)"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
}

/// What the values of an exact analysis depend on; a checkpoint is only continued by the
/// analysis with the same fingerprint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fingerprint {
    /// The update of the checkpoint whose policy is analysed.
    pub update: u64,
    /// CRC-64 of the scenario (as JSON).
    pub scenario: u64,
    /// CRC-64 of the frozen policy table (what the checkpoint's networks do in every state).
    pub policy: u64,
    /// The discount.
    pub gamma: f64,
    /// The convergence tolerance.
    pub delta: f64,
    /// The sweep limit per solve.
    pub max_sweeps: u64,
    /// The one learner analysed (`--agent`), or none for all.
    pub agent: Option<usize>,
    /// States.
    pub states: u64,
    /// Learners.
    pub learners: u64,
    /// Actions per learner.
    pub actions: u64,
}

impl Fingerprint {
    /// The fingerprint of analysing `policy` (from the checkpoint of `update`) on `model` of
    /// `scenario`.
    pub fn new(
        model: &TransitionModel,
        scenario: &Scenario,
        policy: &PolicyTable,
        (gamma, tol): (f64, Tolerance),
        agent: Option<usize>,
        update: u64,
    ) -> Fingerprint {
        let mut digest = CRC64.digest();
        let mut buf = Vec::with_capacity(4096);
        for chunk in policy.probs.chunks(1024) {
            buf.clear();
            buf.extend(chunk.iter().flat_map(|p| p.to_le_bytes()));
            digest.update(&buf);
        }
        Fingerprint {
            update,
            scenario: CRC64.checksum(&serde_json::to_vec(scenario).unwrap_or_default()),
            policy: digest.finalize(),
            gamma,
            delta: tol.delta,
            max_sweeps: tol.max_sweeps as u64,
            agent,
            states: model.states(),
            learners: model.learners() as u64,
            actions: model.actions() as u64,
        }
    }

    /// The fields as stored, with their names and how they read.
    fn fields(&self) -> [(&'static str, u64, String); 10] {
        let agent = self.agent.map_or(ALL_AGENTS, |i| i as u64);
        [
            ("checkpoint update", self.update, self.update.to_string()),
            (
                "scenario CRC-64",
                self.scenario,
                format!("{:016x}", self.scenario),
            ),
            (
                "policy CRC-64",
                self.policy,
                format!("{:016x}", self.policy),
            ),
            ("gamma", self.gamma.to_bits(), self.gamma.to_string()),
            (
                "tolerance",
                self.delta.to_bits(),
                format!("{:e}", self.delta),
            ),
            ("sweep limit", self.max_sweeps, self.max_sweeps.to_string()),
            (
                "agent",
                agent,
                self.agent.map_or("all".into(), |i| i.to_string()),
            ),
            ("state count", self.states, self.states.to_string()),
            ("learner count", self.learners, self.learners.to_string()),
            ("action count", self.actions, self.actions.to_string()),
        ]
    }

    /// The width of the values under way: `N` in the evaluation, 1 in a best response.
    fn width(&self, evaluation_done: bool) -> u64 {
        if evaluation_done { 1 } else { self.learners }
    }

    /// At most the bytes of this analysis' checkpoint: the evaluation's values `[S, N]` x 8 B
    /// (the largest solve under way) and a header below 1 KiB for up to 30 learners.
    pub fn max_file_bytes(&self) -> u64 {
        max_file_bytes(self.states, self.learners)
    }
}

/// At most the bytes of the checkpoint of an analysis of `states` states and `learners`
/// learners: the values `[S, N]` as f64 and the header (magic, version, fingerprint, seconds,
/// the evaluation's values, every best response, the solve's counters, the checksum).
pub fn max_file_bytes(states: u64, learners: u64) -> u64 {
    let fixed = 12 + 8 * 10 + 8 + (16 + 8 * learners) + (8 + 24 * learners) + 32 + 8;
    states
        .saturating_mul(learners)
        .saturating_mul(8)
        .saturating_add(fixed)
}

/// Bytes through a CRC-64.
struct Summed<'d, T> {
    inner: T,
    digest: crc::Digest<'d, u64>,
}

impl<W: Write> Summed<'_, W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.digest.update(bytes);
        self.inner.write_all(bytes)
    }

    fn put_u64(&mut self, v: u64) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }

    fn put_f64(&mut self, v: f64) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
}

/// Writes the checkpoint of `progress` (with `current`, the solve under way, when any) to
/// `path` atomically. Returns its bytes.
pub(crate) fn write_partial(
    path: &Path,
    fp: &Fingerprint,
    stages: &Stages,
    current: Option<&Solved>,
    seconds: f64,
) -> Result<u64, PartialError> {
    let io_err = |error| PartialError::Io {
        path: path.to_path_buf(),
        error,
    };
    crate::atomic::write_atomic_with(path, |w| {
        let mut out = Summed {
            inner: w,
            digest: CRC64.digest(),
        };
        out.put(MAGIC)?;
        out.put(&PARTIAL_VERSION.to_le_bytes())?;
        for (_, v, _) in fp.fields() {
            out.put_u64(v)?;
        }
        out.put_f64(seconds)?;
        match &stages.evaluation {
            Some(e) => {
                out.put_u64(1)?;
                out.put_u64(e.sweeps as u64)?;
                for v in &e.policy_values {
                    out.put_f64(*v)?;
                }
            }
            None => out.put_u64(0)?,
        }
        out.put_u64(stages.best_responses.len() as u64)?;
        for b in &stages.best_responses {
            out.put_u64(b.agent as u64)?;
            out.put_f64(b.value)?;
            out.put_u64(b.sweeps as u64)?;
        }
        match current {
            Some(c) => {
                out.put_u64(1)?;
                out.put_u64(c.sweeps as u64)?;
                out.put_f64(c.delta)?;
                out.put_u64(c.values.len() as u64)?;
                let mut buf = Vec::with_capacity(1 << 16);
                for chunk in c.values.chunks(1 << 13) {
                    buf.clear();
                    buf.extend(chunk.iter().flat_map(|v| v.to_le_bytes()));
                    out.put(&buf)?;
                }
            }
            None => out.put_u64(0)?,
        }
        let sum = out.digest.finalize();
        out.inner.write_all(&sum.to_le_bytes())
    })
    .map_err(io_err)?;
    Ok(std::fs::metadata(path).map_err(io_err)?.len())
}

impl<R: Read> Summed<'_, R> {
    fn take(&mut self, out: &mut [u8]) -> io::Result<()> {
        self.inner.read_exact(out)?;
        self.digest.update(out);
        Ok(())
    }

    fn u64(&mut self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        self.take(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn f64(&mut self) -> io::Result<f64> {
        self.u64().map(f64::from_bits)
    }
}

/// The checkpoint at `path` when there is one, refused unless it was written for `fp`. The
/// file is only read.
pub(crate) fn read_partial(
    path: &Path,
    fp: &Fingerprint,
) -> Result<Option<ExactProgress>, PartialError> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(PartialError::Io {
                path: path.to_path_buf(),
                error,
            });
        }
    };
    let mut r = Summed {
        inner: io::BufReader::new(file),
        digest: CRC64.digest(),
    };
    let corrupt = |what: String| PartialError::Corrupt {
        path: path.to_path_buf(),
        what,
    };
    let short = |e: io::Error| match e.kind() {
        io::ErrorKind::UnexpectedEof => corrupt("truncated".into()),
        _ => PartialError::Io {
            path: path.to_path_buf(),
            error: e,
        },
    };
    let mut head = [0u8; 12];
    r.take(&mut head).map_err(|_| PartialError::Foreign {
        path: path.to_path_buf(),
        found: "shorter than the header".into(),
    })?;
    let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
    if &head[..8] != MAGIC || version != PARTIAL_VERSION {
        return Err(PartialError::Foreign {
            path: path.to_path_buf(),
            found: if &head[..8] == MAGIC {
                format!("format version {version}, this build reads {PARTIAL_VERSION}")
            } else {
                "no GANCPART header".into()
            },
        });
    }
    for (field, want, now) in fp.fields() {
        let got = r.u64().map_err(short)?;
        if got != want {
            let mut other = *fp;
            other.set(field, got);
            let partial = other
                .fields()
                .into_iter()
                .find(|f| f.0 == field)
                .map_or_else(|| got.to_string(), |f| f.2);
            return Err(PartialError::Mismatch {
                path: path.to_path_buf(),
                field,
                partial,
                now,
            });
        }
    }
    let seconds = r.f64().map_err(short)?;
    let count = |r: &mut Summed<_>, max: u64, what: &str| -> Result<usize, PartialError> {
        let n = r.u64().map_err(short)?;
        if n > max {
            return Err(corrupt(format!("{what} {n}, at most {max}")));
        }
        Ok(n as usize)
    };
    let mut stages = Stages::default();
    if count(&mut r, 1, "evaluation flag")? == 1 {
        let sweeps = count(&mut r, fp.max_sweeps, "evaluation sweeps")?;
        let policy_values = (0..fp.learners)
            .map(|_| r.f64())
            .collect::<io::Result<Vec<_>>>()
            .map_err(short)?;
        stages.evaluation = Some(EvaluationDone {
            policy_values,
            sweeps,
        });
    }
    let agents = super::exact::agents_of(fp.learners as usize, fp.agent);
    let done = count(&mut r, agents.len() as u64, "best responses")?;
    for &want in &agents[..done] {
        let agent = r.u64().map_err(short)?;
        if agent != want as u64 {
            return Err(corrupt(format!(
                "best response of learner {agent}, not {want}"
            )));
        }
        let value = r.f64().map_err(short)?;
        let sweeps = count(&mut r, fp.max_sweeps, "best-response sweeps")?;
        stages.best_responses.push(BestResponseDone {
            agent: want,
            value,
            sweeps,
        });
    }
    let mut current = None;
    if count(&mut r, 1, "solve flag")? == 1 {
        let sweeps = count(&mut r, fp.max_sweeps, "sweeps")?;
        let delta = r.f64().map_err(short)?;
        let want = fp
            .states
            .saturating_mul(fp.width(stages.evaluation.is_some()));
        let len = r.u64().map_err(short)?;
        if len != want {
            return Err(corrupt(format!("{len} values, expected {want}")));
        }
        let mut values = vec![0.0f64; len as usize];
        let mut buf = vec![0u8; 1 << 16];
        for chunk in values.chunks_mut(1 << 13) {
            let bytes = &mut buf[..chunk.len() * 8];
            r.take(bytes).map_err(short)?;
            for (v, b) in chunk.iter_mut().zip(bytes.chunks_exact(8)) {
                *v = f64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
            }
        }
        current = Some(Solved {
            values,
            sweeps,
            delta,
        });
    }
    let sum = r.digest.finalize();
    let mut tail = [0u8; 8];
    r.inner.read_exact(&mut tail).map_err(short)?;
    if u64::from_le_bytes(tail) != sum {
        return Err(corrupt("checksum mismatch".into()));
    }
    if r.inner.read(&mut [0u8; 1]).map_err(short)? != 0 {
        return Err(corrupt("bytes after the checksum".into()));
    }
    Ok(Some(ExactProgress {
        stages,
        current,
        seconds,
    }))
}

impl Fingerprint {
    /// Sets the field named `field` to its stored form `v` (to show a refused file's value).
    fn set(&mut self, field: &str, v: u64) {
        match field {
            "checkpoint update" => self.update = v,
            "scenario CRC-64" => self.scenario = v,
            "policy CRC-64" => self.policy = v,
            "gamma" => self.gamma = f64::from_bits(v),
            "tolerance" => self.delta = f64::from_bits(v),
            "sweep limit" => self.max_sweeps = v,
            "agent" => self.agent = (v != ALL_AGENTS).then_some(v as usize),
            "state count" => self.states = v,
            "learner count" => self.learners = v,
            _ => self.actions = v,
        }
    }
}
