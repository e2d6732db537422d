//! The run directory a researcher trusts: `config.ron` and `scenario.ron` (resolved),
//! `metrics.jsonl` (one JSON object per update), `tensorboard/replica_<r>/` (event files,
//! written by `train::tensorboard`), `checkpoints/update_NNNNNNNN/` (parameters, Adam state and
//! the extra tensors such as the replay as safetensors, the learner's and arenas' state as
//! JSON), `learning_curve.png`.
//! The logs are appended and flushed per update; every other file is published atomically; a
//! checkpoint directory appears whole or not at all.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use safetensors::tensor::{Dtype, TensorView};

pub(crate) use super::dir_error::io;
pub use super::dir_error::{Damage, RunDirError};
use super::{integrity, retention};
use crate::train::tensors::{NamedTensors, Tensor};

/// An open run directory.
pub struct RunDir {
    /// Its path.
    pub path: PathBuf,
}

/// What a checkpoint holds.
pub struct Checkpoint {
    /// Update it was taken after.
    pub update: u64,
    /// Parameters.
    pub params: Vec<f32>,
    /// Adam's first moments.
    pub adam_m: Vec<f32>,
    /// Adam's second moments.
    pub adam_v: Vec<f32>,
    /// Adam's step count.
    pub adam_steps: u64,
    /// The learner's state as JSON.
    pub state: String,
    /// Named extra tensors (the replay, the opponent models' parameters and Adam); empty in
    /// checkpoints written before they existed.
    pub extra: NamedTensors,
}

/// How exactly a restored learner continues the run its checkpoint was taken from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// Bit for bit as if the run had not stopped.
    Exact,
    /// Approximately, and why (e.g. the replay was not saved, so the resumed run refills it).
    Approximate(String),
}

impl Resume {
    /// The first approximate reason of two.
    pub fn and(self, other: Resume) -> Resume {
        match self {
            Resume::Exact => other,
            approximate => approximate,
        }
    }
}

/// Where a run goes without `--out`, CleanRL's way: a new directory under `root` named from
/// the scenario file, the algorithm, the seed and the start time in seconds since the Unix
/// epoch, `<scenario>__<algo>__<seed>__<start>`, with `_2`, `_3`, ... appended when that is
/// taken (two runs started in the same second). `taken` says whether a name is in use.
pub fn fresh_run_name(
    cfg: &crate::train::config::RunConfig,
    start: u64,
    taken: impl Fn(&str) -> bool,
) -> String {
    let scenario = cfg
        .scenario
        .as_deref()
        .and_then(Path::file_stem)
        .map_or("pursuit".to_string(), |s| s.to_string_lossy().into_owned());
    let algo = serde_json::to_value(cfg.algo)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_else(|| format!("{:?}", cfg.algo));
    let base = format!("{scenario}__{algo}__{}__{start}", cfg.seed);
    (1..)
        .map(|k| match k {
            1 => base.clone(),
            k => format!("{base}_{k}"),
        })
        .find(|name| !taken(name))
        .unwrap_or(base)
}

/// Points the symlink `root/latest` at `run` (a directory in `root`), replacing an older
/// link atomically, so that commands after a run without `--out` can name it; anything else
/// called `latest` is left alone. A no-op where symlinks are not available.
pub fn point_latest(root: &Path, run: &Path) -> Result<(), RunDirError> {
    let latest = root.join("latest");
    if fs::symlink_metadata(&latest).is_ok_and(|m| !m.file_type().is_symlink()) {
        return Ok(());
    }
    #[cfg(unix)]
    {
        let target = run
            .file_name()
            .map_or_else(|| run.to_path_buf(), PathBuf::from);
        let tmp = root.join(".latest.tmp");
        let _ = fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&target, &tmp).map_err(io(&tmp))?;
        fs::rename(&tmp, &latest).map_err(io(&latest))?;
    }
    #[cfg(not(unix))]
    let _ = run;
    Ok(())
}

/// The names of a run directory's files and folders: the one place they are spelled. Code
/// elsewhere reaches them through [`RunDir`]'s path functions.
const CONFIG: &str = "config.ron";
const SCENARIO: &str = "scenario.ron";
const METRICS: &str = "metrics.jsonl";
const CHECKPOINTS: &str = "checkpoints";
const CURVE: &str = "learning_curve.png";
const SWEEP_PLOT: &str = "sweep.png";
const SWEEP_TABLE: &str = "sweep.csv";
const TENSORBOARD: &str = "tensorboard";
/// A checkpoint directory's files.
const PARAMS: &str = "params.safetensors";
const STATE: &str = "state.json";

/// The safetensors names of a checkpoint's own tensors (the extra ones may not use them).
const OWN: [&str; 3] = ["params", "adam_m", "adam_v"];

impl RunDir {
    /// `run`'s resolved run configuration, `config.ron`.
    pub fn config_file(run: &Path) -> PathBuf {
        run.join(CONFIG)
    }

    /// `run`'s resolved scenario, `scenario.ron`.
    pub fn scenario_file(run: &Path) -> PathBuf {
        run.join(SCENARIO)
    }

    /// `run`'s metrics, one JSON object per update, `metrics.jsonl`.
    pub fn metrics_file(run: &Path) -> PathBuf {
        run.join(METRICS)
    }

    /// `run`'s checkpoints folder.
    pub fn checkpoints_dir(run: &Path) -> PathBuf {
        run.join(CHECKPOINTS)
    }

    /// `run`'s learning-curve plot.
    pub fn curve_file(run: &Path) -> PathBuf {
        run.join(CURVE)
    }

    /// `run`'s sweep plot (a run with grid points).
    pub fn sweep_plot_file(run: &Path) -> PathBuf {
        run.join(SWEEP_PLOT)
    }

    /// `run`'s TensorBoard folder.
    pub fn tensorboard_dir(run: &Path) -> PathBuf {
        run.join(TENSORBOARD)
    }

    /// A checkpoint directory's tensors file.
    pub fn params_file(checkpoint: &Path) -> PathBuf {
        checkpoint.join(PARAMS)
    }

    /// A checkpoint directory's JSON state file.
    pub fn state_file(checkpoint: &Path) -> PathBuf {
        checkpoint.join(STATE)
    }

    /// Saves the resolved run configuration and scenario (RON text) in the run.
    pub(crate) fn save_config(&self, config: &str, scenario: &str) -> Result<(), RunDirError> {
        self.write(CONFIG, config.as_bytes())?;
        self.write(SCENARIO, scenario.as_bytes())
    }

    /// Saves a sweep's table of grid points (CSV text).
    pub(crate) fn save_sweep_table(&self, csv: &str) -> Result<(), RunDirError> {
        self.write(SWEEP_TABLE, csv.as_bytes())
    }

    /// The run configuration saved in `run`.
    pub fn load_config(
        run: &Path,
    ) -> Result<crate::train::config::RunConfig, crate::train::config::ConfigError> {
        crate::train::config::RunConfig::load(&Self::config_file(run))
    }

    /// Creates a new run directory (refusing an existing run) and proves it is writable.
    pub fn create(path: &Path) -> Result<RunDir, RunDirError> {
        if path.join(CONFIG).exists() {
            return Err(RunDirError::Exists(path.to_path_buf()));
        }
        fs::create_dir_all(path.join(CHECKPOINTS)).map_err(io(path))?;
        let dir = RunDir {
            path: path.to_path_buf(),
        };
        dir.probe()?;
        Ok(dir)
    }

    /// Opens an existing run for resuming.
    pub fn open(path: &Path) -> Result<RunDir, RunDirError> {
        if !path.join(CONFIG).exists() {
            return Err(RunDirError::NotARun(path.to_path_buf()));
        }
        let dir = RunDir {
            path: path.to_path_buf(),
        };
        dir.probe()?;
        Ok(dir)
    }

    /// An existing run opened without the write probe (a data-parallel rank other than 0,
    /// which reads it while rank 0 writes).
    pub(crate) fn open_read_only(path: &Path) -> Result<RunDir, RunDirError> {
        if !path.join(CONFIG).exists() {
            return Err(RunDirError::NotARun(path.to_path_buf()));
        }
        Ok(RunDir::at(path))
    }

    /// The run directory at `path`, unchecked (rank 0 created it).
    pub(crate) fn at(path: &Path) -> RunDir {
        RunDir {
            path: path.to_path_buf(),
        }
    }

    /// Writes and removes a 1 MiB file, so an unwritable directory or a full disk is reported
    /// before training starts.
    fn probe(&self) -> Result<(), RunDirError> {
        let probe = self.path.join(".write-probe");
        crate::atomic::write_atomic(&probe, &vec![0u8; 1 << 20]).map_err(io(&probe))?;
        fs::remove_file(&probe).map_err(io(&probe))
    }

    /// Publishes a file inside the run atomically.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), RunDirError> {
        let path = self.path.join(name);
        crate::atomic::write_atomic(&path, bytes).map_err(io(&path))
    }

    /// Appends one line to metrics.jsonl (one write) and flushes it; a line that cannot be
    /// written whole is cut off again, so the file never ends in part of one.
    pub fn append_metrics(&self, line: &str) -> Result<(), RunDirError> {
        let path = self.path.join(METRICS);
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        let before = f.metadata().map_err(io(&path))?.len();
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if let Err(error) = f.write_all(&bytes).and_then(|()| f.flush()) {
            let _ = f.set_len(before);
            return Err(RunDirError::Append {
                path,
                bytes: bytes.len() as u64,
                error,
            });
        }
        Ok(())
    }

    /// Keeps only the metrics of updates up to `update` (after resuming from it).
    pub fn truncate_metrics(&self, update: u64) -> Result<(), RunDirError> {
        let path = self.path.join(METRICS);
        let Ok(text) = fs::read_to_string(&path) else {
            return Ok(());
        };
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| {
                serde_json::from_str::<serde_json::Value>(l)
                    .ok()
                    .and_then(|v| v.get("update").and_then(|u| u.as_u64()))
                    .is_some_and(|u| u <= update)
            })
            .collect();
        let mut out = kept.join("\n");
        if !out.is_empty() {
            out.push('\n');
        }
        self.write(METRICS, out.as_bytes())
    }

    /// Saves a checkpoint atomically (a temporary directory renamed into place) and deletes
    /// all but the newest `keep`.
    pub fn save_checkpoint(&self, c: &Checkpoint, keep: usize) -> Result<PathBuf, RunDirError> {
        let keep = retention::Retention { keep, every: 0 };
        self.save_checkpoint_after(c, keep, |_| Ok(()))
    }

    /// [`RunDir::save_checkpoint`], calling `before` on the fresh temporary directory first
    /// (the fault injection). A checkpoint that cannot be written leaves nothing behind
    /// ([`abandon`]).
    pub(crate) fn save_checkpoint_after(
        &self,
        c: &Checkpoint,
        keep: retention::Retention,
        before: impl FnOnce(&Path) -> Result<(), (PathBuf, std::io::Error)>,
    ) -> Result<PathBuf, RunDirError> {
        let name = checkpoint_name(c.update);
        let tmp = self
            .path
            .join(CHECKPOINTS)
            .join(format!(".{name}.tmp-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp)
            .map_err(io(&tmp))
            .and_then(|()| before(&tmp).map_err(|(path, error)| RunDirError::Io { path, error }))
            .and_then(|()| write_checkpoint_files(&tmp, c, true))
            .and_then(|()| self.publish(&tmp, c.update, keep))
            .map_err(|e| abandon(&tmp, c, e))
    }

    /// Renames the finished temporary directory `tmp` into place as the checkpoint of
    /// `update` (the one atomic step: before it the checkpoint is absent, after it complete)
    /// and deletes the checkpoints `keep` does not keep.
    pub(crate) fn publish(
        &self,
        tmp: &Path,
        update: u64,
        keep: retention::Retention,
    ) -> Result<PathBuf, RunDirError> {
        // The checksums, last: they cover every file (a job's manifest and shards included).
        integrity::write_checksums(tmp)?;
        fs::File::open(tmp)
            .and_then(|d| d.sync_all())
            .map_err(io(tmp))?;
        let root = self.path.join(CHECKPOINTS);
        let dest = root.join(checkpoint_name(update));
        let _ = fs::remove_dir_all(&dest);
        fs::rename(tmp, &dest).map_err(io(&dest))?;
        fs::File::open(&root)
            .and_then(|d| d.sync_all())
            .map_err(io(&root))?;
        retention::prune(&root, self.checkpoints()?, update, keep)?;
        Ok(dest)
    }

    /// Published checkpoints, oldest first (temporary directories and checkpoints being
    /// deleted are ignored). A checkpoint damaged since is listed:
    /// [`RunDir::verify_checkpoint`] tells.
    pub fn checkpoints(&self) -> Result<Vec<PathBuf>, RunDirError> {
        let root = self.path.join(CHECKPOINTS);
        let mut out: Vec<PathBuf> = match fs::read_dir(&root) {
            Ok(entries) => entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("update_"))
                })
                .filter(|p| p.is_dir())
                .collect(),
            Err(_) => Vec::new(),
        };
        out.sort();
        Ok(out)
    }

    /// Loads the newest intact checkpoint: a damaged newer one is reported on stderr (which
    /// file, why) and skipped; none intact is an error naming each checkpoint and its damage.
    pub fn load_latest(&self) -> Result<Checkpoint, RunDirError> {
        let found = integrity::newest_intact(&self.path, self.checkpoints()?, |p| {
            RunDir::verify_checkpoint(p)?;
            load_checkpoint(p)
        })?;
        found.report();
        Ok(found.value)
    }

    /// Checks the checkpoint directory `checkpoint` against its checksums (`checksums.json`):
    /// `Ok(true)` when they match, `Ok(false)` for a checkpoint written before checksums
    /// (whose files loading checks), else the first damaged file and why.
    pub fn verify_checkpoint(checkpoint: &Path) -> Result<bool, Damage> {
        integrity::verify(checkpoint, &[PARAMS, STATE])
    }
}

/// Ends the checkpoint `c` that could not be written: its temporary directory `tmp` removed,
/// and a filesystem error told as [`RunDirError::CheckpointWrite`] (the file, the bytes).
pub(crate) fn abandon(tmp: &Path, c: &Checkpoint, e: RunDirError) -> RunDirError {
    let _ = fs::remove_dir_all(tmp);
    match e {
        RunDirError::Io { path, error } => RunDirError::CheckpointWrite {
            path,
            update: c.update,
            bytes: checkpoint_bytes(c),
            error,
        },
        e => e,
    }
}

/// About how many bytes the checkpoint `c` takes on disk: its tensors and its state (the
/// files' small headers aside).
pub(crate) fn checkpoint_bytes(c: &Checkpoint) -> u64 {
    let own = (c.params.len() + c.adam_m.len() + c.adam_v.len()) as u64 * 4;
    let extra: u64 = c.extra.iter().map(|(_, t)| t.bytes().len() as u64).sum();
    own + extra + c.state.len() as u64
}

/// The directory name of the checkpoint taken after `update`.
pub(crate) fn checkpoint_name(update: u64) -> String {
    format!("update_{update:08}")
}

/// Writes `c` into the directory `tmp` (`params.safetensors` with the parameters, Adam and
/// the extra tensors, `state.json`), each file synced. Without `own`, the parameters and Adam
/// are written empty (a data-parallel rank's shard: rank 0 holds them).
pub(crate) fn write_checkpoint_files(
    tmp: &Path,
    c: &Checkpoint,
    own: bool,
) -> Result<(), RunDirError> {
    let damaged = |e: safetensors::SafeTensorError| RunDirError::Damaged {
        path: tmp.to_path_buf(),
        reason: e.to_string(),
    };
    let keep = if own { usize::MAX } else { 0 };
    let own = [
        ("params", &c.params[..c.params.len().min(keep)]),
        ("adam_m", &c.adam_m[..c.adam_m.len().min(keep)]),
        ("adam_v", &c.adam_v[..c.adam_v.len().min(keep)]),
    ];
    let own = own.iter().map(|&(n, v)| {
        let bytes: &[u8] = bytemuck::cast_slice(v);
        (n.to_string(), Dtype::F32, v.len(), bytes)
    });
    let extra = c.extra.iter().map(|(n, t)| {
        let dtype = match t {
            Tensor::F32(_) => Dtype::F32,
            Tensor::U8(_) => Dtype::U8,
            Tensor::U32(_) => Dtype::U32,
        };
        (n.clone(), dtype, t.len(), t.bytes())
    });
    let mut views: Vec<(String, TensorView)> = Vec::new();
    for (name, dtype, len, bytes) in own.chain(extra) {
        views.push((
            name,
            TensorView::new(dtype, vec![len], bytes).map_err(damaged)?,
        ));
    }
    // One metadata entry: safetensors writes its metadata map in the map's (random) order, so
    // two entries would make two runs of the same command write different bytes.
    let mut meta = std::collections::HashMap::new();
    meta.insert(
        METADATA_KEY.to_string(),
        serde_json::json!({ "update": c.update, "adam_steps": c.adam_steps }).to_string(),
    );
    // Streamed into the file (no second copy of the tensors in memory), then synced.
    let tensors = tmp.join(PARAMS);
    safetensors::serialize_to_file(views, Some(meta), &tensors).map_err(|e| match e {
        safetensors::SafeTensorError::IoError(error) => RunDirError::Io {
            path: tensors.clone(),
            error,
        },
        e => damaged(e),
    })?;
    fs::File::open(&tensors)
        .and_then(|f| f.sync_all())
        .map_err(io(&tensors))?;
    write_synced(&tmp.join(STATE), c.state.as_bytes())
}

/// The safetensors metadata entry holding a checkpoint's update and Adam step count.
const METADATA_KEY: &str = "gridarena";

/// Writes `bytes` to `path` and syncs it.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), RunDirError> {
    let mut f = fs::File::create(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    f.sync_all().map_err(io(path))
}

/// Reads one checkpoint directory.
pub fn load_checkpoint(path: &Path) -> Result<Checkpoint, RunDirError> {
    let damaged = |reason: String| RunDirError::Damaged {
        path: path.to_path_buf(),
        reason,
    };
    let file = path.join(PARAMS);
    let bytes = fs::read(&file).map_err(io(&file))?;
    let (_, meta) =
        safetensors::SafeTensors::read_metadata(&bytes).map_err(|e| damaged(e.to_string()))?;
    let tensors =
        safetensors::SafeTensors::deserialize(&bytes).map_err(|e| damaged(e.to_string()))?;
    let get = |name: &str| -> Result<Vec<f32>, RunDirError> {
        let t = tensors
            .tensor(name)
            .map_err(|e| damaged(format!("{name}: {e}")))?;
        if t.dtype() != Dtype::F32 {
            return Err(damaged(format!("{name} is {:?}, not F32", t.dtype())));
        }
        Ok(le_words(t.data()).map(f32::from_le_bytes).collect())
    };
    // `{"update": U, "adam_steps": S}` under METADATA_KEY; earlier checkpoints held each
    // number under its own key.
    let fields: Option<serde_json::Value> = meta
        .metadata()
        .as_ref()
        .and_then(|m| m.get(METADATA_KEY))
        .and_then(|v| serde_json::from_str(v).ok());
    let field = |key: &str| -> Result<u64, RunDirError> {
        match &fields {
            Some(f) => f.get(key).and_then(serde_json::Value::as_u64),
            None => meta
                .metadata()
                .as_ref()
                .and_then(|m| m.get(key))
                .and_then(|v| v.parse().ok()),
        }
        .ok_or_else(|| damaged(format!("metadata `{key}` missing")))
    };
    let mut extra = NamedTensors::new();
    let mut names: Vec<String> = tensors.names().into_iter().map(String::from).collect();
    names.sort();
    for name in names.into_iter().filter(|n| !OWN.contains(&n.as_str())) {
        let t = tensors
            .tensor(&name)
            .map_err(|e| damaged(format!("{name}: {e}")))?;
        let data = t.data();
        let tensor = match t.dtype() {
            Dtype::F32 => Tensor::F32(le_words(data).map(f32::from_le_bytes).collect()),
            Dtype::U32 => Tensor::U32(le_words(data).map(u32::from_le_bytes).collect()),
            Dtype::U8 => Tensor::U8(data.to_vec()),
            other => return Err(damaged(format!("{name} is {other:?}, not F32, U32 or U8"))),
        };
        extra.push((name, tensor));
    }
    let state_file = path.join(STATE);
    let state = fs::read_to_string(&state_file).map_err(io(&state_file))?;
    check_state_syntax(&state, &state_file).map_err(damaged)?;
    Ok(Checkpoint {
        update: field("update")?,
        adam_steps: field("adam_steps")?,
        params: get("params")?,
        adam_m: get("adam_m")?,
        adam_v: get("adam_v")?,
        state,
        extra,
    })
}

/// Little-endian 4-byte words of a tensor's data.
pub(crate) fn le_words(data: &[u8]) -> impl Iterator<Item = [u8; 4]> + '_ {
    data.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]])
}

/// Checks that a checkpoint's `state.json` is one JSON value; a syntax error names
/// `file:line:column`.
pub fn check_state_syntax(text: &str, file: &Path) -> Result<(), String> {
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map(|_| ())
        .map_err(|e| state_error(file, &e))
}

/// A learner-state (JSON) error as `file:line:column: message`.
pub fn state_error(file: &Path, e: &serde_json::Error) -> String {
    // serde_json counts an error at the very start of a line as column 0.
    let (line, column) = (e.line().max(1), e.column().max(1));
    format!("{}:{line}:{column}: {e}", file.display())
}
