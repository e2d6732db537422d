//! Atomic publication of artifacts: write a temporary file beside the target, fsync it, rename
//! it over the target, fsync the directory. A reader sees the old file or the new one, never
//! half of one, whatever happens to the process.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    publish(
        path,
        |f| f.write_all(bytes),
        |tmp, path| fs::rename(tmp, path),
    )
}

/// Writes what `write` streams to `path` atomically (through a buffer: no copy of the whole
/// file in memory).
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    publish(
        path,
        |f| {
            let mut buffered = io::BufWriter::new(f);
            write(&mut buffered)?;
            buffered.flush()
        },
        |tmp, path| fs::rename(tmp, path),
    )
}

/// Writes `bytes` to `path` atomically unless something is already there: then it fails with
/// [`io::ErrorKind::AlreadyExists`] and leaves it untouched. The new file is linked in place
/// (a link never replaces an existing name), so a file created meanwhile is not overwritten
/// either; where the filesystem has no hard links, an existence check and a rename stand in.
pub fn write_atomic_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let exists = || io::Error::new(io::ErrorKind::AlreadyExists, "the file already exists");
    if path.symlink_metadata().is_ok() {
        return Err(exists());
    }
    publish(
        path,
        |f| f.write_all(bytes),
        |tmp, path| match fs::hard_link(tmp, path) {
            Ok(()) => fs::remove_file(tmp),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
            Err(_) if path.symlink_metadata().is_ok() => Err(exists()),
            Err(_) => fs::rename(tmp, path),
        },
    )
}

/// Writes a temporary file beside `path` with `fill`, fsyncs it, puts it in place with `place`
/// and fsyncs the directory; the temporary file is removed on failure.
fn publish(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
    place: impl FnOnce(&Path, &Path) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = File::create(&tmp)?;
        fill(&mut f)?;
        f.sync_all()?;
        drop(f);
        place(&tmp, path)?;
        // Persist the new name itself.
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The folder holds exactly one file (no temporary left behind); then it is removed.
    fn only_one_file(dir: &std::path::Path) {
        let names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "temporary files left behind: {names:?}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("gridarena-atomic-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("out.txt");
        write_atomic(&target, b"first").unwrap();
        write_atomic(&target, b"second").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"second");
        only_one_file(&dir);
    }

    #[test]
    fn a_new_file_is_written_once_and_never_replaced() {
        let dir = std::env::temp_dir().join(format!("gridarena-atomic-new-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("out.txt");
        write_atomic_new(&target, b"first").unwrap();
        let err = write_atomic_new(&target, b"second").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&target).unwrap(), b"first");
        only_one_file(&dir);
    }
}
