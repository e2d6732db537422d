//! `gridarena check-run`'s checks of a whole run directory ([`check_run`]): `config.ron` and
//! `scenario.ron` parse, the lines of `metrics.jsonl` parse (a torn last line told apart), and
//! every checkpoint is intact (its checksums match, `integrity.rs`, and its files parse, every
//! shard's too).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::integrity::{CHECKSUMS, as_damage};
use super::run_dir::{Damage, RunDir, RunDirError, load_checkpoint};
use super::shards::read_manifest;

/// Checks one checkpoint as a load would: its checksums, then its files parse (every shard's
/// too in a job's checkpoint). `Ok(true)` when it had checksums to check against.
pub fn check_checkpoint(checkpoint: &Path) -> Result<bool, Damage> {
    let checksummed = RunDir::verify_checkpoint(checkpoint)?;
    let structure = || -> Result<(), RunDirError> {
        load_checkpoint(checkpoint)?;
        if let Some(m) = read_manifest(checkpoint)? {
            for shard in &m.shards {
                load_checkpoint(&checkpoint.join(shard))?;
            }
        }
        Ok(())
    };
    match structure() {
        Ok(()) => Ok(checksummed),
        Err(e) => Err(as_damage(e).unwrap_or_else(|e| Damage::new(checkpoint, e.to_string()))),
    }
}

/// What `metrics.jsonl` holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MetricsCheck {
    /// Lines that parse as JSON objects.
    pub lines: usize,
    /// The length in bytes of a last line that does not parse and has no newline (a run killed
    /// while writing it; a resume drops it).
    pub torn_last_line: Option<usize>,
    /// Other lines that do not parse, as `line N: why`.
    pub problems: Vec<String>,
}

/// One checkpoint's verdict in a [`RunCheck`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointCheck {
    /// The checkpoint directory's name (`update_00000004`).
    pub name: String,
    /// Whether it is intact.
    pub ok: bool,
    /// Whether it had checksums to check against (written by this version or a later one).
    pub checksummed: bool,
    /// The damaged file, when it is not intact.
    pub file: Option<PathBuf>,
    /// Why, when it is not intact.
    pub why: Option<String>,
}

/// Everything `gridarena check-run` reports about a run directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunCheck {
    /// The run directory.
    pub run: PathBuf,
    /// Why `config.ron` does not parse, or `None`.
    pub config: Option<String>,
    /// Why `scenario.ron` does not parse, or `None`.
    pub scenario: Option<String>,
    /// `metrics.jsonl` (`None`: there is none yet).
    pub metrics: Option<MetricsCheck>,
    /// Every checkpoint, oldest first.
    pub checkpoints: Vec<CheckpointCheck>,
}

impl RunCheck {
    /// Whether the run can resume from its newest checkpoint: its configuration and scenario
    /// parse and the newest checkpoint is intact.
    pub fn resumable(&self) -> bool {
        self.config.is_none()
            && self.scenario.is_none()
            && self.checkpoints.last().is_some_and(|c| c.ok)
    }

    /// The newest intact checkpoint's name.
    pub fn newest_intact(&self) -> Option<&str> {
        self.checkpoints
            .iter()
            .rev()
            .find(|c| c.ok)
            .map(|c| c.name.as_str())
    }
}

/// Checks the run directory `run`: `config.ron` and `scenario.ron` parse, every line of
/// `metrics.jsonl` parses (a torn last line reported as such), and every checkpoint is intact.
/// Refused only when `run` is not a run directory.
pub fn check_run(run: &Path) -> Result<RunCheck, RunDirError> {
    let config = RunDir::config_file(run);
    if !config.is_file() {
        return Err(RunDirError::NotARun(run.to_path_buf()));
    }
    let config = RunDir::load_config(run).err().map(|e| e.to_string());
    let scenario = RunDir::scenario_file(run);
    let scenario = crate::scenario::Scenario::load(&scenario)
        .err()
        .map(|e| e.to_string());
    let metrics = match fs::read(RunDir::metrics_file(run)) {
        Ok(bytes) => Some(check_metrics(&bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => Some(MetricsCheck {
            problems: vec![e.to_string()],
            ..MetricsCheck::default()
        }),
    };
    let checkpoints = RunDir::at(run)
        .checkpoints()?
        .into_iter()
        .map(|path| {
            let name = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            match check_checkpoint(&path) {
                Ok(checksummed) => CheckpointCheck {
                    name,
                    ok: true,
                    checksummed,
                    file: None,
                    why: None,
                },
                Err(d) => CheckpointCheck {
                    name,
                    ok: false,
                    checksummed: path.join(CHECKSUMS).is_file(),
                    file: Some(d.file),
                    why: Some(d.why),
                },
            }
        })
        .collect();
    Ok(RunCheck {
        run: run.to_path_buf(),
        config,
        scenario,
        metrics,
        checkpoints,
    })
}

/// Checks the lines of `metrics.jsonl`.
fn check_metrics(bytes: &[u8]) -> MetricsCheck {
    let mut out = MetricsCheck::default();
    let ends_whole = bytes.is_empty() || bytes.ends_with(b"\n");
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // `split` yields an empty piece after the final newline.
    let count = if ends_whole {
        lines.len() - 1
    } else {
        lines.len()
    };
    for (k, line) in lines.iter().take(count).enumerate() {
        match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(line) {
            Ok(_) => out.lines += 1,
            Err(_) if k + 1 == count && !ends_whole => out.torn_last_line = Some(line.len()),
            Err(e) => out.problems.push(format!("line {}: {e}", k + 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_metrics_line_is_told_from_a_bad_one() {
        let m = check_metrics(b"{\"update\":1}\n{\"update\":2}\n{\"upd");
        assert_eq!((m.lines, m.torn_last_line), (2, Some(5)));
        assert!(m.problems.is_empty());
        let m = check_metrics(b"{\"update\":1}\nnot json\n{\"update\":3}\n");
        assert_eq!((m.lines, m.torn_last_line), (2, None));
        assert_eq!(m.problems.len(), 1);
        assert!(m.problems[0].starts_with("line 2:"), "{:?}", m.problems);
        assert_eq!(check_metrics(b""), MetricsCheck::default());
    }
}
