//! Checkpoints of a data-parallel job: rank 0 writes the checkpoint a one-process run would
//! (parameters, Adam, its own learner state), every other rank r writes its own arenas,
//! streams and replay as the shard `rank_<r>/`, and rank 0 publishes the directory with a
//! `manifest.json` naming the ranks and shards, by one rename, once every shard is on disk.
//! A checkpoint is therefore complete or absent: a rank killed while writing leaves only a
//! temporary directory, which loading ignores, and the newest complete checkpoint stays.
//!
//! A one-rank job writes exactly a one-process checkpoint (no manifest). Evaluation, the viewer
//! and `load_policy` read rank 0's files and never need the shards.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::faults::Fault;
use super::run_dir::{
    Checkpoint, RunDir, RunDirError, checkpoint_name, io, load_checkpoint, write_checkpoint_files,
    write_synced,
};
use crate::dist::Job;

/// The file naming a multi-rank checkpoint's shards.
pub const MANIFEST: &str = "manifest.json";

/// What `manifest.json` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Ranks of the job that wrote the checkpoint.
    pub ranks: usize,
    /// The update it was taken after.
    pub update: u64,
    /// The shard directories of ranks 1.., in rank order (rank 0's state is the checkpoint's
    /// own `state.json`).
    pub shards: Vec<String>,
}

/// The shard directory of rank `r`.
fn shard_name(rank: usize) -> String {
    format!("rank_{rank}")
}

/// Ranks that wrote the checkpoint at `path`: its manifest's, 1 without one.
pub fn checkpoint_ranks(path: &Path) -> Result<usize, RunDirError> {
    let file = path.join(MANIFEST);
    if !file.exists() {
        return Ok(1);
    }
    let text = fs::read_to_string(&file).map_err(io(&file))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| RunDirError::Damaged {
        path: file.clone(),
        reason: e.to_string(),
    })?;
    Ok(m.ranks)
}

/// Saves this rank's part of the checkpoint `c` (every rank calls it, with the same update)
/// and returns the published directory. One rank: [`RunDir::save_checkpoint`].
pub(crate) fn save(
    dir: &RunDir,
    c: &Checkpoint,
    keep: usize,
    (job, fault): (&Job, &Fault),
) -> Result<PathBuf, RunDirError> {
    if job.size() == 1 {
        return dir.save_checkpoint(c, keep);
    }
    let name = checkpoint_name(c.update);
    // Every rank must agree on the temporary directory: it is named for the update, not the
    // process.
    let tmp = dir
        .path
        .join("checkpoints")
        .join(format!(".{name}.tmp-job"));
    if job.is_root() {
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp).map_err(io(&tmp))?;
    }
    job.barrier();
    if job.is_root() {
        write_checkpoint_files(&tmp, c, true)?;
    } else {
        let shard = tmp.join(shard_name(job.rank()));
        fs::create_dir_all(&shard).map_err(io(&shard))?;
        fault.in_checkpoint(job.rank(), &shard);
        // The shard holds this rank's state and extra tensors; the parameters and Adam are
        // rank 0's (every rank holds the same).
        write_checkpoint_files(&shard, c, false)?;
    }
    job.barrier();
    let dest = dir.path.join("checkpoints").join(&name);
    if job.is_root() {
        let manifest = Manifest {
            ranks: job.size(),
            update: c.update,
            shards: (1..job.size()).map(shard_name).collect(),
        };
        let text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
        write_synced(&tmp.join(MANIFEST), text.as_bytes())?;
        dir.publish(&tmp, c.update, keep)?;
    }
    // Nobody goes on (or ends) before the checkpoint is published.
    job.barrier();
    Ok(dest)
}

/// Loads this rank's part of the newest complete checkpoint: rank 0's parameters and Adam,
/// and this rank's state (its shard on ranks 1..). Refused when another number of ranks wrote
/// it.
pub(crate) fn load_latest(dir: &RunDir, job: &Job) -> Result<Checkpoint, RunDirError> {
    let path = dir
        .checkpoints()?
        .pop()
        .ok_or_else(|| RunDirError::NoCheckpoint(dir.path.clone()))?;
    let saved = checkpoint_ranks(&path)?;
    if saved != job.size() {
        return Err(RunDirError::Ranks {
            path,
            saved,
            now: job.size(),
        });
    }
    let mut c = load_checkpoint(&path)?;
    if !job.is_root() {
        let shard = load_checkpoint(&path.join(shard_name(job.rank())))?;
        c.state = shard.state;
        c.extra = shard.extra;
    }
    Ok(c)
}
