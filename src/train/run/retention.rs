//! Which checkpoints a run keeps once a new one is published, and deleting the others so that
//! a crash at any moment leaves every kept checkpoint whole: a checkpoint to delete is first
//! renamed to a hidden `.update_NNNNNNNN.deleting` name (one atomic step, after which nothing
//! lists it), then removed; a leftover from a crash is removed when the next writer starts.

use std::fs;
use std::path::{Path, PathBuf};

use super::dir_error::{RunDirError, io};

/// The suffix of a checkpoint being deleted.
const DELETING: &str = ".deleting";

/// The update a checkpoint directory's name (`update_NNNNNNNN`) says it was taken after.
pub(crate) fn update_of(checkpoint: &Path) -> Option<u64> {
    checkpoint
        .file_name()?
        .to_str()?
        .strip_prefix("update_")?
        .parse()
        .ok()
}

/// Which checkpoints a run keeps: the newest `keep` (at least one), and every one whose update
/// is a multiple of `every` (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retention {
    /// The newest this many.
    pub(crate) keep: usize,
    /// And every multiple of this update (0: none).
    pub(crate) every: u64,
}

impl Retention {
    /// Whether the checkpoint of `update` is kept whatever its age.
    fn marked(self, update: u64) -> bool {
        self.every > 0 && update.is_multiple_of(self.every)
    }
}

/// After the checkpoint of `newest` is published in `root` (`all`: the published checkpoints,
/// oldest first, it included): deletes those newer than it (a run resumed from an older
/// checkpoint, because the newer ones were damaged, writes that history again) and those
/// `keep` does not keep. Only ever after the new checkpoint is published: the newest `keep`
/// always include it.
pub(crate) fn prune(
    root: &Path,
    all: Vec<PathBuf>,
    newest: u64,
    keep: Retention,
) -> Result<(), RunDirError> {
    let (older, newer): (Vec<PathBuf>, Vec<PathBuf>) = all
        .into_iter()
        .partition(|c| update_of(c).is_some_and(|u| u <= newest));
    let surplus = older.len().saturating_sub(keep.keep.max(1));
    let unmarked = older[..surplus]
        .iter()
        .filter(|c| !update_of(c).is_some_and(|u| keep.marked(u)));
    for old in newer.iter().chain(unmarked) {
        delete(root, old)?;
    }
    Ok(())
}

/// Deletes the checkpoint directory `checkpoint` of `root`: renamed out of sight first, then
/// removed.
fn delete(root: &Path, checkpoint: &Path) -> Result<(), RunDirError> {
    let name = checkpoint
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let doomed = root.join(format!(".{name}{DELETING}"));
    let _ = fs::remove_dir_all(&doomed);
    fs::rename(checkpoint, &doomed).map_err(io(checkpoint))?;
    fs::remove_dir_all(&doomed).map_err(io(&doomed))
}

/// Removes what a writer killed in `root` left behind: checkpoints it was deleting and
/// checkpoints it had not published (`.update_NNNNNNNN.tmp-*`). Called by the run's one
/// writer, before it writes anything.
pub(crate) fn clean_leftovers(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let leftover =
            name.starts_with(".update_") && (name.ends_with(DELETING) || name.contains(".tmp-"));
        if leftover && entry.path().is_dir() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(root: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn pruning_keeps_the_newest_and_drops_a_newer_history() {
        let root = std::env::temp_dir().join(format!("gridarena-prune-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let all: Vec<PathBuf> = [1, 2, 3, 4, 6, 8]
            .iter()
            .map(|u| root.join(format!("update_{u:08}")))
            .collect();
        for c in &all {
            fs::create_dir_all(c).unwrap();
        }
        fs::create_dir_all(root.join(".update_00000009.deleting")).unwrap();
        fs::create_dir_all(root.join(".update_00000009.tmp-77")).unwrap();
        clean_leftovers(&root);
        let keep = Retention { keep: 2, every: 2 };
        prune(&root, all, 4, keep).unwrap();
        assert_eq!(
            names(&root),
            ["update_00000002", "update_00000003", "update_00000004"]
        );
        fs::remove_dir_all(&root).unwrap();
    }
}
