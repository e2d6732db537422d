//! Checkpoint integrity. Every file of a checkpoint directory (a job's manifest and every
//! rank's shard included) is listed with its size and CRC-32C in the checkpoint's
//! `checksums.json`, written last, just before the directory is published, and checked before
//! the checkpoint is loaded. Whoever loads the newest checkpoint (a resume, `eval`, the viewer,
//! Python's `load_policy`) takes the newest *intact* one ([`newest_intact`]), saying on stderr
//! which newer ones are damaged and why; `gridarena check-run` reports on a whole run
//! (`check_run.rs`).
//!
//! Checkpoints written before checksums existed have no `checksums.json`: they are checked by
//! loading them (their files must be there and parse), and say nothing.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::dir_error::{Damage, RunDirError, io};

/// The checkpoint file listing every other file's size and checksum.
pub const CHECKSUMS: &str = "checksums.json";

/// The one checksum written: CRC-32C (Castagnoli), as TensorBoard's records use.
const ALGORITHM: &str = "crc32c";
const CRC32C: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

/// What `checksums.json` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checksums {
    /// The checksum used: `crc32c`.
    pub algorithm: String,
    /// Every file of the checkpoint but `checksums.json`, by its `/`-separated path inside the
    /// checkpoint directory (`params.safetensors`, `rank_1/state.json`), in name order.
    pub files: BTreeMap<String, FileSum>,
}

/// One file's size and checksum when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSum {
    /// Its length in bytes.
    pub bytes: u64,
    /// Its CRC-32C, eight lowercase hex digits.
    pub crc32c: String,
}

/// The size and CRC-32C of the file at `path`, read in blocks.
fn sum_file(path: &Path) -> io::Result<FileSum> {
    let mut f = fs::File::open(path)?;
    let mut digest = CRC32C.digest();
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        digest.update(&buf[..n]);
        bytes += n as u64;
    }
    Ok(FileSum {
        bytes,
        crc32c: format!("{:08x}", digest.finalize()),
    })
}

/// The files under `dir` (recursively), as `/`-separated paths after `prefix`.
fn list_files(dir: &Path, prefix: &str, out: &mut Vec<String>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{prefix}{name}");
        if entry.file_type()?.is_dir() {
            list_files(&entry.path(), &format!("{rel}/"), out)?;
        } else if rel != CHECKSUMS {
            out.push(rel);
        }
    }
    Ok(())
}

/// Writes `checksums.json` into the finished (unpublished) checkpoint directory `dir`, covering
/// every file in it, and syncs it.
pub(crate) fn write_checksums(dir: &Path) -> Result<(), RunDirError> {
    let mut names = Vec::new();
    list_files(dir, "", &mut names).map_err(io(dir))?;
    let mut files = BTreeMap::new();
    for name in names {
        let path = dir.join(&name);
        files.insert(name, sum_file(&path).map_err(io(&path))?);
    }
    let sums = Checksums {
        algorithm: ALGORITHM.to_string(),
        files,
    };
    let text = serde_json::to_string_pretty(&sums).unwrap_or_default();
    let file = dir.join(CHECKSUMS);
    let mut f = fs::File::create(&file).map_err(io(&file))?;
    f.write_all(text.as_bytes()).map_err(io(&file))?;
    f.sync_all().map_err(io(&file))
}

/// Checks the checkpoint directory `checkpoint` against its `checksums.json`: every file listed
/// is there with its size and checksum, the `required` ones among them. `Ok(true)`: it
/// matches; `Ok(false)`: written before checksums (only the presence of the `required` files is
/// checked here; loading checks the rest).
pub(crate) fn verify(checkpoint: &Path, required: &[&str]) -> Result<bool, Damage> {
    let list = checkpoint.join(CHECKSUMS);
    let text = match fs::read(&list) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            for name in required {
                let file = checkpoint.join(name);
                if !file.is_file() {
                    return Err(Damage::new(&file, "missing"));
                }
            }
            return Ok(false);
        }
        Err(e) => return Err(Damage::new(&list, e.to_string())),
    };
    let sums: Checksums = serde_json::from_slice(&text)
        .map_err(|e| Damage::new(&list, format!("unreadable checksum list: {e}")))?;
    if sums.algorithm != ALGORITHM {
        return Err(Damage::new(
            &list,
            format!(
                "checksum algorithm {:?}, expected {ALGORITHM:?}",
                sums.algorithm
            ),
        ));
    }
    for name in required {
        if !sums.files.contains_key(*name) {
            let file = checkpoint.join(name);
            return Err(Damage::new(&file, format!("not listed in {CHECKSUMS}")));
        }
    }
    for (name, want) in &sums.files {
        // The names come from a file: none may lead out of the checkpoint.
        if name
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return Err(Damage::new(
                &list,
                format!("names {name:?}, a path outside the checkpoint"),
            ));
        }
        let file = checkpoint.join(name);
        let got = match sum_file(&file) {
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Damage::new(
                    &file,
                    format!("missing ({CHECKSUMS} lists it)"),
                ));
            }
            Err(e) => return Err(Damage::new(&file, e.to_string())),
        };
        if got.bytes != want.bytes {
            return Err(Damage::new(
                &file,
                format!(
                    "{} bytes, {} when it was written (truncated or overwritten)",
                    got.bytes, want.bytes
                ),
            ));
        }
        if got.crc32c != want.crc32c {
            return Err(Damage::new(
                &file,
                format!(
                    "CRC-32C {}, {} when it was written: its contents changed",
                    got.crc32c, want.crc32c
                ),
            ));
        }
    }
    Ok(true)
}

/// A load error that means the checkpoint is damaged (a file that is missing, unreadable or
/// does not parse), as [`Damage`]; any other error is handed back.
pub(crate) fn as_damage(e: RunDirError) -> Result<Damage, RunDirError> {
    match e {
        RunDirError::Damaged { path, reason } => Ok(Damage {
            file: path,
            why: reason,
        }),
        RunDirError::Io { path, error } => Ok(Damage {
            file: path,
            why: error.to_string(),
        }),
        other => Err(other),
    }
}

/// A checkpoint found by [`newest_intact`]: what `load` made of it, where it is, and every
/// newer checkpoint that is damaged, newest first.
pub(crate) struct Found<T> {
    /// What the load returned.
    pub(crate) value: T,
    /// The checkpoint directory.
    pub(crate) path: PathBuf,
    /// The newer, damaged checkpoints and their damage.
    pub(crate) damaged: Vec<(PathBuf, Damage)>,
}

impl<T> Found<T> {
    /// Says on stderr which newer checkpoints are damaged and why, and which one is used
    /// instead (nothing when the newest is intact).
    pub(crate) fn report(&self) {
        for (checkpoint, damage) in &self.damaged {
            eprintln!(
                "warning: checkpoint {} is damaged: {damage}",
                checkpoint.display()
            );
        }
        if !self.damaged.is_empty() {
            eprintln!(
                "warning: falling back to {}, the newest intact checkpoint",
                self.path.display()
            );
        }
    }
}

/// The newest of `checkpoints` (oldest first) that `load` accepts (it verifies the checkpoint,
/// then loads it), with the damage of every newer one. An error of `load` that is not damage
/// (a checkpoint written by another number of ranks) ends the search. None intact:
/// [`RunDirError::NoIntactCheckpoint`] naming each checkpoint and its damage; none at all:
/// [`RunDirError::NoCheckpoint`].
pub(crate) fn newest_intact<T>(
    run: &Path,
    checkpoints: Vec<PathBuf>,
    mut load: impl FnMut(&Path) -> Result<T, RunDirError>,
) -> Result<Found<T>, RunDirError> {
    let mut damaged = Vec::new();
    for path in checkpoints.into_iter().rev() {
        match load(&path) {
            Ok(value) => {
                return Ok(Found {
                    value,
                    path,
                    damaged,
                });
            }
            Err(e) => damaged.push((path, as_damage(e)?)),
        }
    }
    if damaged.is_empty() {
        return Err(RunDirError::NoCheckpoint(run.to_path_buf()));
    }
    Err(RunDirError::NoIntactCheckpoint {
        run: run.to_path_buf(),
        damaged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_of_a_file_has_the_published_check_value() {
        let dir = std::env::temp_dir().join(format!("gridarena-crc-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        fs::write(&file, b"123456789").unwrap();
        let sum = sum_file(&file).unwrap();
        assert_eq!((sum.bytes, sum.crc32c.as_str()), (9, "e3069283"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
