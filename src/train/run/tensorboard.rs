//! TensorBoard event files: a run writes one directory per replica,
//! `tensorboard/replica_<r>/`, so TensorBoard shows every seed (or grid point) as its own run.
//!
//! The format is written here, without a protobuf code generator. A file is a sequence of
//! TFRecords, each `u64 length (LE) | u32 masked CRC-32C of the 8 length bytes | data | u32
//! masked CRC-32C of data`, where `masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8`. Each
//! record's data is an `Event` protobuf: `wall_time` (double, field 1), `step` (int64, field 2)
//! and one of `file_version` (string, field 3; the first record, [`FILE_VERSION`]), `summary`
//! (field 5: `Summary { repeated Value value = 1 }`, `Value { string tag = 1; float
//! simple_value = 2 }`) or `session_log` (field 7: `SessionLog { SessionStatus status = 1 }`,
//! `START = 1`). Every event is framed whole and written in one call: a crash leaves at most a
//! partial last record, which TensorBoard skips, never a damaged earlier one, and a record that
//! cannot be written (a full disk) is cut off again.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crc::{CRC_32_ISCSI, Crc};

use crate::metrics::{learners_only, summarize};
use crate::train::kit::opponent::OpponentScores;
use crate::train::kit::stats::{UpdateStats, mean_over_agents};

/// The `file_version` of the first event of every file.
pub const FILE_VERSION: &str = "brain.Event:2";

/// CRC-32C (Castagnoli), the checksum of TFRecords.
const CASTAGNOLI: Crc<u32> = Crc::<u32>::new(&CRC_32_ISCSI);

/// Protobuf wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

/// `Event` fields.
const WALL_TIME: u32 = 1;
const STEP: u32 = 2;
const FILE_VERSION_FIELD: u32 = 3;
const SUMMARY: u32 = 5;
const SESSION_LOG: u32 = 7;

/// `SessionLog { status: START }` (field 1, varint 1): TensorBoard drops what earlier events
/// logged at this step or later.
const SESSION_START: [u8; 2] = [1 << 3 | VARINT as u8, 1];

/// Problems writing event files.
#[derive(Debug, thiserror::Error)]
pub enum TensorBoardError {
    /// Filesystem problem.
    #[error("{path}: {error}")]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The cause.
        error: std::io::Error,
    },
    /// A record could not be appended (the disk is full, an I/O error); the file is left as it
    /// was before it.
    #[error(
        "cannot append {bytes} bytes to {}: {error}{}; the file is as it was before this \
         record: free space, then resume the run with --resume",
        path.display(),
        super::dir_error::full_hint(error)
    )]
    Append {
        /// The event file.
        path: PathBuf,
        /// The record's bytes.
        bytes: u64,
        /// The cause.
        error: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TensorBoardError + '_ {
    move |error| TensorBoardError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// A TFRecord checksum: the CRC-32C of `bytes`, rotated right by 15 bits, plus a constant.
pub(crate) fn masked_crc32c(bytes: &[u8]) -> u32 {
    let crc = CASTAGNOLI.checksum(bytes);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

// ------------------------------------------------------------------------------------------
// Protobuf encoding
// ------------------------------------------------------------------------------------------

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, u64::from(field << 3 | wire));
}

fn len_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    key(out, field, LEN);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// One `Event` into `out` (cleared first): wall time, step and the field `what` holding `body`.
fn encode_event(out: &mut Vec<u8>, step: i64, what: u32, body: &[u8]) {
    let wall_time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    out.clear();
    key(out, WALL_TIME, FIXED64);
    out.extend_from_slice(&wall_time.to_le_bytes());
    key(out, STEP, VARINT);
    // int64 is a varint of its two's complement.
    varint(out, step as u64);
    len_field(out, what, body);
}

/// One TFRecord holding `data`.
fn write_record(w: &mut impl Write, data: &[u8]) -> std::io::Result<()> {
    let len = (data.len() as u64).to_le_bytes();
    w.write_all(&len)?;
    w.write_all(&masked_crc32c(&len).to_le_bytes())?;
    w.write_all(data)?;
    w.write_all(&masked_crc32c(data).to_le_bytes())
}

// ------------------------------------------------------------------------------------------
// One event file
// ------------------------------------------------------------------------------------------

/// An open event file: scalars are gathered with [`scalar`](EventWriter::scalar) and written
/// as one event by [`write_scalars`](EventWriter::write_scalars). Its buffers are reused, so
/// logging allocates nothing once they have grown.
pub struct EventWriter {
    path: PathBuf,
    file: File,
    /// The file's length after the last whole record.
    len: u64,
    /// The record being written (framed whole, then written in one call).
    record: Vec<u8>,
    /// The pending `Summary` body (its `Value`s).
    summary: Vec<u8>,
    /// The event being framed.
    event: Vec<u8>,
    /// One `Value` being encoded.
    value: Vec<u8>,
}

impl EventWriter {
    /// Creates `dir` (and its parents) and a new event file in it,
    /// `events.out.tfevents.<unix seconds>.<host>` (`.1`, `.2`, ... appended when that name is
    /// taken), and writes the file-version event. Existing files are never touched, so a
    /// resumed run adds a file beside its earlier ones (TensorBoard reads them in name order).
    pub fn create(dir: &Path) -> Result<EventWriter, TensorBoardError> {
        fs::create_dir_all(dir).map_err(io(dir))?;
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let base = format!("events.out.tfevents.{secs}.{}", host());
        let mut n = 0;
        let (path, file) = loop {
            let name = match n {
                0 => base.clone(),
                n => format!("{base}.{n}"),
            };
            let path = dir.join(name);
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(f) => break (path, f),
                Err(e) if e.kind() == ErrorKind::AlreadyExists && n < 1000 => n += 1,
                Err(e) => return Err(io(&path)(e)),
            }
        };
        let mut w = EventWriter {
            path,
            file,
            len: 0,
            record: Vec::new(),
            summary: Vec::new(),
            event: Vec::new(),
            value: Vec::new(),
        };
        w.write_event(0, Body::FileVersion)?;
        Ok(w)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds a scalar to the pending event.
    pub fn scalar(&mut self, tag: &str, value: f32) {
        self.value.clear();
        len_field(&mut self.value, 1, tag.as_bytes());
        key(&mut self.value, 2, FIXED32);
        self.value.extend_from_slice(&value.to_le_bytes());
        len_field(&mut self.summary, 1, &self.value);
    }

    /// Writes the pending scalars as one event at `step` and flushes the file (nothing is
    /// written when none is pending).
    pub fn write_scalars(&mut self, step: i64) -> Result<(), TensorBoardError> {
        if self.summary.is_empty() {
            return Ok(());
        }
        let written = self.write_event(step, Body::Summary);
        self.summary.clear();
        written
    }

    /// Writes a session start at `step`: TensorBoard drops the events earlier files logged at
    /// `step` or later (those a resumed run does again).
    pub fn session_start(&mut self, step: i64) -> Result<(), TensorBoardError> {
        self.write_event(step, Body::SessionStart)
    }

    fn write_event(&mut self, step: i64, body: Body) -> Result<(), TensorBoardError> {
        let (what, bytes): (u32, &[u8]) = match body {
            Body::FileVersion => (FILE_VERSION_FIELD, FILE_VERSION.as_bytes()),
            Body::Summary => (SUMMARY, &self.summary),
            Body::SessionStart => (SESSION_LOG, &SESSION_START),
        };
        encode_event(&mut self.event, step, what, bytes);
        self.record.clear();
        let written = write_record(&mut self.record, &self.event)
            .and_then(|()| self.file.write_all(&self.record))
            .and_then(|()| self.file.flush());
        if let Err(error) = written {
            // No partial record: the file as it was before it.
            let _ = self.file.set_len(self.len);
            let _ = self.file.seek(SeekFrom::Start(self.len));
            return Err(TensorBoardError::Append {
                path: self.path.clone(),
                bytes: self.record.len() as u64,
                error,
            });
        }
        self.len += self.record.len() as u64;
        Ok(())
    }
}

/// What an event carries: the file version, the pending scalars or a session start.
enum Body {
    FileVersion,
    Summary,
    SessionStart,
}

/// This machine's name for event file names (letters, digits, `-`, `_`, `.`), else
/// `gridarena`.
fn host() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| fs::read_to_string(p).ok())
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "gridarena".into())
}

// ------------------------------------------------------------------------------------------
// A run's scalars, per replica
// ------------------------------------------------------------------------------------------

/// A run's TensorBoard logs: one event file per replica in `RUN/tensorboard/replica_<r>/`,
/// opened when the replica first logs. Per update, at step = environment steps: `return/mean`
/// (the replica's mean learner return, when episodes finished), `counters/<name>` (their mean
/// per episode), and `loss`, `epsilon`, `lr`, `env_steps_per_s`, `opponent/accuracy`,
/// `opponent/log_loss` (means over learner pairs of the replica's own models, when opponent
/// models run), which every replica's file gets.
pub(crate) struct RunBoard {
    root: PathBuf,
    /// Each replica's directory name under `root` (`replica_<r>`, with a sweep's grid point
    /// and seed appended).
    names: Vec<String>,
    writers: Vec<EventWriter>,
    counter_tags: Vec<String>,
    /// A resumed run's environment steps at its checkpoint: each new file starts a session
    /// just after them.
    resumed_at: Option<u64>,
}

impl RunBoard {
    /// The logs of the run in `run`, whose scenario counts `counter_names`; `resumed_at` the
    /// environment steps a resumed run continues from.
    pub(crate) fn new(
        run: &Path,
        replicas: &[crate::train::config::sweep::Replica],
        counter_names: &[String],
        resumed_at: Option<u64>,
    ) -> RunBoard {
        RunBoard {
            root: super::run_dir::RunDir::tensorboard_dir(run),
            names: replicas.iter().map(replica_dir).collect(),
            writers: Vec::new(),
            counter_tags: counter_names
                .iter()
                .map(|n| format!("counters/{n}"))
                .collect(),
            resumed_at,
        }
    }

    /// Logs one update's scalars at `env_steps` into every replica's file, `learners` agents
    /// per arena learning, at `steps_per_s` environment steps per second.
    pub(crate) fn log(
        &mut self,
        stats: &UpdateStats,
        learners: usize,
        env_steps: u64,
        steps_per_s: f64,
    ) -> Result<(), TensorBoardError> {
        let replicas = stats.per_replica.len().max(1);
        while self.writers.len() < replicas {
            let r = self.writers.len();
            let name = self
                .names
                .get(r)
                .cloned()
                .unwrap_or_else(|| format!("replica_{r}"));
            let dir = self.root.join(name);
            let mut w = EventWriter::create(&dir)?;
            if let Some(at) = self.resumed_at {
                w.session_start(at.saturating_add(1) as i64)?;
            }
            self.writers.push(w);
        }
        let opponent_means = |o: &OpponentScores| {
            let mean = |m: &[Vec<f64>]| {
                let (sum, n) = m
                    .iter()
                    .flatten()
                    .fold((0.0, 0), |(s, n), x| (s + x, n + 1));
                (n > 0).then(|| sum / n as f64)
            };
            (mean(&o.accuracy), mean(&o.log_loss))
        };
        for (r, w) in self.writers.iter_mut().enumerate().take(replicas) {
            let episodes = match stats.per_replica.get(r) {
                Some(eps) => eps,
                None => &stats.episodes,
            };
            if !episodes.is_empty() {
                // `summarize` labels the counters with the names it is given: the tags.
                let m = summarize(&self.counter_tags, &learners_only(episodes, learners));
                w.scalar("return/mean", mean_over_agents(&m.mean_return) as f32);
                for (tag, value) in &m.counters {
                    w.scalar(tag, *value as f32);
                }
            }
            w.scalar("loss", stats.loss);
            let (epsilon, lr) = stats
                .replica_scalars
                .get(r)
                .copied()
                .unwrap_or((stats.epsilon, stats.lr));
            w.scalar("epsilon", epsilon);
            w.scalar("lr", lr);
            w.scalar("env_steps_per_s", steps_per_s as f32);
            // Each replica's own scores (replica 0's where only those exist).
            let scores = match stats.opponents_per_replica.get(r) {
                Some(o) => Some(o),
                None => stats.opponents.as_ref(),
            };
            if let Some((accuracy, log_loss)) = scores.map(opponent_means) {
                if let Some(a) = accuracy {
                    w.scalar("opponent/accuracy", a as f32);
                }
                if let Some(l) = log_loss {
                    w.scalar("opponent/log_loss", l as f32);
                }
            }
            w.write_scalars(env_steps as i64)?;
        }
        Ok(())
    }
}

/// A replica's directory name: `replica_<k>`, and for a sweep `replica_<k>_<key>=<value>..._seed<s>`
/// (characters other than letters, digits, `.`, `-`, `=` and `_` become `_`), so TensorBoard
/// lists the sweep as one run per replica named by its values.
fn replica_dir(r: &crate::train::config::sweep::Replica) -> String {
    if r.values.is_empty() {
        return format!("replica_{}", r.index);
    }
    let values: Vec<String> = r.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let name = format!(
        "replica_{}_{}_seed{}",
        r.index,
        values.join("_"),
        r.seed_index
    );
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_has_its_published_check_value() {
        // The CRC catalogue's check value of CRC-32/ISCSI over "123456789".
        assert_eq!(CASTAGNOLI.checksum(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn varints_use_seven_bits_per_byte_low_first() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        out.clear();
        varint(&mut out, -1i64 as u64);
        assert_eq!(out.len(), 10, "a negative int64 takes ten bytes");
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_it() {
        let file = std::env::temp_dir().join(format!("gridarena-tb-file-{}", std::process::id()));
        fs::write(&file, b"not a directory").unwrap();
        let err = EventWriter::create(&file.join("replica_0"))
            .err()
            .expect("a file cannot hold a directory");
        let TensorBoardError::Io { path, .. } = &err else {
            panic!("not an I/O error: {err}");
        };
        assert!(path.starts_with(&file), "{err}");
        fs::remove_file(&file).unwrap();
    }
}
