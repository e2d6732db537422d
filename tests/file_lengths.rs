//! No library source file grows past 600 lines: a module that long owns more than one concern.

use std::path::{Path, PathBuf};

#[path = "common/source_files.rs"]
mod source_files;
use source_files::rust_files;

const LIMIT: usize = 600;

/// The files over `limit` lines among `files`, with their lengths.
fn over(files: &[PathBuf], limit: usize) -> Vec<(PathBuf, usize)> {
    files
        .iter()
        .map(|f| {
            (
                f.clone(),
                std::fs::read_to_string(f).unwrap().lines().count(),
            )
        })
        .filter(|(_, n)| *n > limit)
        .collect()
}

#[test]
fn no_library_source_file_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("python/src"), &mut files);
    assert!(files.len() > 100, "found only {} files", files.len());
    let long = over(&files, LIMIT);
    assert!(long.is_empty(), "over {LIMIT} lines: {long:?}");
}

#[test]
fn the_check_finds_a_long_file() {
    // The check itself can fail: at a limit of 400 lines some of today's files are over it.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(!over(&files, 400).is_empty());
}
