//! Checkpoints of a data-parallel job: rank 0 writes the checkpoint a one-process run would
//! (parameters, Adam, its own learner state), every other rank r writes its own arenas,
//! streams and replay as the shard `rank_<r>/`, and rank 0 publishes the directory with a
//! `manifest.json` naming the ranks and shards, by one rename, once every shard is on disk.
//! A checkpoint is therefore complete or absent: a rank killed while writing leaves only a
//! temporary directory, which loading ignores, and the newest complete checkpoint stays.
//!
//! A job that splits its replicas (seeds, sweep grid points) over ranks holds different networks
//! on every rank: each rank, rank 0 included, writes its whole checkpoint as its shard (that is
//! what it resumes from), and rank 0 assembles the run's networks (every replica's block, in
//! order) into the top-level files.
//!
//! A one-rank job writes exactly a one-process checkpoint (no manifest). Evaluation, the viewer
//! and `load_policy` read the top-level files and never need the shards.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::faults::Fault;
use super::integrity::newest_intact;
use super::retention::Retention;
use super::run_dir::{
    Checkpoint, RunDir, RunDirError, abandon, checkpoint_name, io, le_words, load_checkpoint,
    write_checkpoint_files, write_synced,
};
use crate::dist::Job;
use crate::train::tensors::{NamedTensors, Tensor, find};

/// The file naming a multi-rank checkpoint's shards.
pub const MANIFEST: &str = "manifest.json";

/// What `manifest.json` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Ranks of the job that wrote the checkpoint.
    pub ranks: usize,
    /// The update it was taken after.
    pub update: u64,
    /// The shard directories in rank order: ranks 1.. (rank 0's state is the checkpoint's own
    /// `state.json`), or every rank's when the replicas are split over ranks.
    pub shards: Vec<String>,
    /// With the replicas split over ranks: each rank's replicas `first..end`, in rank order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_blocks: Option<Vec<(usize, usize)>>,
}

/// The shard directory of rank `r`.
fn shard_name(rank: usize) -> String {
    format!("rank_{rank}")
}

/// The manifest of the checkpoint at `path` (`None`: written by one process).
pub fn read_manifest(path: &Path) -> Result<Option<Manifest>, RunDirError> {
    let file = path.join(MANIFEST);
    if !file.exists() {
        return Ok(None);
    }
    let text = fs::read_to_string(&file).map_err(io(&file))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| RunDirError::Damaged {
        path: file.clone(),
        reason: e.to_string(),
    })?;
    Ok(Some(m))
}

/// Every rank's `values` concatenated in rank order at rank 0 (empty elsewhere).
fn gather_f32(job: &Job, values: &[f32], tmp: &Path) -> Result<Vec<f32>, RunDirError> {
    let all = job
        .gather_bytes(bytemuck::cast_slice(values))
        .map_err(|e| RunDirError::Damaged {
            path: tmp.to_path_buf(),
            reason: format!("cannot assemble every replica's networks: {e}"),
        })?;
    Ok(all
        .iter()
        .flat_map(|b| le_words(b).map(f32::from_le_bytes))
        .collect())
}

/// Saves this rank's part of the checkpoint `c` (every rank calls it, with the same update)
/// and returns the published directory. One rank: [`RunDir::save_checkpoint`]. `blocks`: the
/// ranks' replicas when a job splits them over ranks.
pub(crate) fn save(
    dir: &RunDir,
    c: &Checkpoint,
    keep: Retention,
    (job, fault): (&Job, &Fault),
    blocks: Option<&[(usize, usize)]>,
) -> Result<PathBuf, RunDirError> {
    if job.size() == 1 {
        return dir.save_checkpoint_after(c, keep, |tmp| fault.in_checkpoint(0, tmp));
    }
    let name = checkpoint_name(c.update);
    // Every rank must agree on the temporary directory: it is named for the update, not the
    // process.
    let tmp = RunDir::checkpoints_dir(&dir.path).join(format!(".{name}.tmp-job"));
    if job.is_root() {
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp).map_err(io(&tmp))?;
    }
    job.barrier();
    // A rank that cannot write its part removes the temporary directory (nothing partial is
    // left) and fails; the job ends.
    write_part(&tmp, c, (job, fault), blocks).map_err(|e| abandon(&tmp, c, e))?;
    job.barrier();
    let dest = RunDir::checkpoints_dir(&dir.path).join(&name);
    if job.is_root() {
        let first = if blocks.is_some() { 0 } else { 1 };
        let manifest = Manifest {
            ranks: job.size(),
            update: c.update,
            shards: (first..job.size()).map(shard_name).collect(),
            replica_blocks: blocks.map(<[_]>::to_vec),
        };
        let text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
        write_synced(&tmp.join(MANIFEST), text.as_bytes())
            .and_then(|()| dir.publish(&tmp, c.update, keep))
            .map_err(|e| abandon(&tmp, c, e))?;
    }
    // Nobody goes on (or ends) before the checkpoint is published.
    job.barrier();
    Ok(dest)
}

/// Writes this rank's part of the checkpoint `c` into the job's temporary directory `tmp`.
fn write_part(
    tmp: &Path,
    c: &Checkpoint,
    (job, fault): (&Job, &Fault),
    blocks: Option<&[(usize, usize)]>,
) -> Result<(), RunDirError> {
    let injected = |(path, error)| RunDirError::Io { path, error };
    let shard = tmp.join(shard_name(job.rank()));
    // `create_dir`, not `create_dir_all`: the temporary directory is rank 0's, and a rank that
    // does not see it must fail, not write its shard elsewhere.
    if blocks.is_some() {
        fs::create_dir(&shard).map_err(io(&shard))?;
        fault.in_checkpoint(job.rank(), &shard).map_err(injected)?;
        write_checkpoint_files(&shard, c, true)?;
        let replicas = blocks.and_then(|b| b.last()).map_or(1, |&(_, end)| end);
        assemble(tmp, c, job, replicas)
    } else if job.is_root() {
        fault.in_checkpoint(job.rank(), tmp).map_err(injected)?;
        write_checkpoint_files(tmp, c, true)
    } else {
        fs::create_dir(&shard).map_err(io(&shard))?;
        fault.in_checkpoint(job.rank(), &shard).map_err(injected)?;
        // The shard holds this rank's state and extra tensors; the parameters and Adam are
        // rank 0's (every rank holds the same).
        write_checkpoint_files(&shard, c, false)
    }
}

/// Rank 0 writes the run's networks (every rank's replicas, in rank order; `replicas` in all)
/// into `tmp`'s own files, for one-process readers, with each replica's opponent models as a
/// run of several replicas names them (`replica.<r>.models.params`); every rank takes part.
fn assemble(tmp: &Path, c: &Checkpoint, job: &Job, replicas: usize) -> Result<(), RunDirError> {
    let params = gather_f32(job, &c.params, tmp)?;
    let adam_m = gather_f32(job, &c.adam_m, tmp)?;
    let adam_v = gather_f32(job, &c.adam_v, tmp)?;
    // This rank's replicas' models, replica after replica: a single run's, or each of its
    // replicas' under `replica.<k>.`.
    let own = |name: &str| match find(&c.extra, name) {
        Some(Tensor::F32(m)) => Some(m.as_slice()),
        _ => None,
    };
    let local: Vec<f32> = match own("models.params") {
        Some(m) => m.to_vec(),
        None => (0..)
            .map_while(|k| own(&format!("replica.{k}.models.params")))
            .flatten()
            .copied()
            .collect(),
    };
    let models = gather_f32(job, &local, tmp)?;
    if !job.is_root() {
        return Ok(());
    }
    let mut extra = NamedTensors::new();
    if !models.is_empty() {
        let per = models.len() / replicas.max(1);
        for (r, block) in models.chunks(per.max(1)).enumerate() {
            extra.push((
                format!("replica.{r}.models.params"),
                Tensor::F32(block.to_vec()),
            ));
        }
    }
    let whole = Checkpoint {
        update: c.update,
        params,
        adam_m,
        adam_v,
        adam_steps: c.adam_steps,
        state: c.state.clone(),
        extra,
    };
    write_checkpoint_files(tmp, &whole, true)
}

/// Loads this rank's part of the newest intact checkpoint: rank 0's parameters and Adam,
/// and this rank's state (its shard on ranks 1..). Refused when another number of ranks wrote
/// it. A damaged newer checkpoint (every rank checks every file, so all ranks agree) is skipped,
/// as [`RunDir::load_latest`] does, and reported at rank 0.
pub(crate) fn load_latest(dir: &RunDir, job: &Job) -> Result<Checkpoint, RunDirError> {
    let found = newest_intact(&dir.path, dir.checkpoints()?, |path| load_part(path, job))?;
    if job.is_root() {
        found.report();
    }
    Ok(found.value)
}

/// This rank's part of the checkpoint at `path`, once its checksums (every rank's files) are
/// verified.
fn load_part(path: &Path, job: &Job) -> Result<Checkpoint, RunDirError> {
    RunDir::verify_checkpoint(path)?;
    let path = path.to_path_buf();
    let manifest = read_manifest(&path)?;
    let saved = manifest.as_ref().map_or(1, |m| m.ranks);
    if saved != job.size() {
        return Err(RunDirError::Ranks {
            path,
            saved,
            now: job.size(),
        });
    }
    if let Some(m) = &manifest
        && let Some(missing) = m.shards.iter().find(|s| !path.join(s).is_dir())
    {
        return Err(RunDirError::Damaged {
            path: path.clone(),
            reason: format!("the manifest names shard {missing}, which is not there"),
        });
    }
    // Replicas split over ranks: each rank's whole checkpoint is its shard.
    if manifest.is_some_and(|m| m.replica_blocks.is_some()) {
        return load_checkpoint(&path.join(shard_name(job.rank())));
    }
    let mut c = load_checkpoint(&path)?;
    if !job.is_root() {
        let shard = load_checkpoint(&path.join(shard_name(job.rank())))?;
        c.state = shard.state;
        c.extra = shard.extra;
    }
    Ok(c)
}
