//! `gridarena view --watch`: tells the window when the scenario file changed on disk.
//!
//! notify watches the file's folder, not the file: editors often save by writing a new file and
//! renaming it over the old one, which a watch on the file itself would lose. Only events that
//! change the file count (reading it, as every reload does, is not a change), and a burst of
//! them (truncate, write, rename) is reported once, after [`DEBOUNCE`] without events, so a
//! half-written file is not read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};

use super::ViewError;

/// Quiet time after the last file event before a change is reported.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// A running watch on one file.
pub struct Watch {
    path: PathBuf,
    events: Receiver<Instant>,
    /// The newest event not reported yet.
    last: Option<Instant>,
    _watcher: RecommendedWatcher,
}

impl Watch {
    /// Watches `path`; `wake` runs on the watcher's thread after each event (the window uses
    /// it to repaint, so a paused viewer still reloads).
    pub fn start(path: &Path, wake: impl Fn() + Send + 'static) -> Result<Watch, ViewError> {
        let name: OsString = path
            .file_name()
            .ok_or_else(|| ViewError::Usage(format!("--watch {}: not a file", path.display())))?
            .to_owned();
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let (tx, events) = channel();
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<Event>| {
            let ours = match res {
                Ok(e) => {
                    changes_content(&e.kind)
                        && e.paths
                            .iter()
                            .any(|p| p.file_name() == Some(name.as_os_str()))
                }
                // A watcher error (events may be lost): reload to be safe.
                Err(_) => true,
            };
            if ours && tx.send(Instant::now()).is_ok() {
                wake();
            }
        })
        .map_err(|e| watch_error(path, e))?;
        watcher
            .watch(&folder, RecursiveMode::NonRecursive)
            .map_err(|e| watch_error(path, e))?;
        Ok(Watch {
            path: path.to_path_buf(),
            events,
            last: None,
            _watcher: watcher,
        })
    }

    /// The watched file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file changed and has been quiet for [`DEBOUNCE`] since (several changes
    /// count once). While a change waits for quiet, [`Watch::pending`] says how long.
    pub fn changed(&mut self) -> bool {
        while let Ok(t) = self.events.try_recv() {
            self.last = Some(t);
        }
        match self.last {
            Some(t) if t.elapsed() >= DEBOUNCE => {
                self.last = None;
                true
            }
            _ => false,
        }
    }

    /// How long until a change seen but not yet reported is due, if there is one.
    pub fn pending(&self) -> Option<Duration> {
        self.last.map(|t| DEBOUNCE.saturating_sub(t.elapsed()))
    }
}

/// Whether an event kind can change what the file holds (opening, reading and closing a file
/// without writing do not).
fn changes_content(kind: &EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

fn watch_error(path: &Path, e: impl std::fmt::Display) -> ViewError {
    ViewError::Watch(format!("cannot watch {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn wait_for_change(w: &mut Watch) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if w.changed() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Writes to the file and a rename over it are changes; writes to another file in the same
    /// folder are not.
    #[test]
    fn reports_writes_and_renames_of_the_file_only() {
        let dir = std::env::temp_dir().join(format!("gridarena-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.ron");
        std::fs::write(&file, "a").unwrap();
        let mut w = Watch::start(&file, || {}).unwrap();
        assert!(!w.changed());

        std::fs::write(dir.join("other.ron"), "b").unwrap();
        std::thread::sleep(DEBOUNCE * 4);
        assert!(!w.changed(), "a write to another file was reported");

        // Reading the file, as a reload does, is not a change.
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a");
        std::thread::sleep(DEBOUNCE * 4);
        assert!(!w.changed(), "reading the file was reported as a change");

        std::fs::write(&file, "c").unwrap();
        assert!(wait_for_change(&mut w), "a write was not reported");

        let tmp = dir.join(".s.ron.swp");
        std::fs::write(&tmp, "d").unwrap();
        std::fs::rename(&tmp, &file).unwrap();
        assert!(
            wait_for_change(&mut w),
            "a rename over the file was not reported"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
