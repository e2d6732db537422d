//! Every Rust file of the repository is as rustfmt writes it. `cargo fmt` alone is not enough:
//! it follows `mod` items, and the substrate folders are declared through the registry's
//! `substrates!` macro, which it cannot see into. So this test hands rustfmt every file
//! itself, with the crate's edition.

use std::path::Path;
use std::process::Command;

mod common;
#[path = "common/source_files.rs"]
mod source_files;
use source_files::rust_files;

/// The folders that hold the repository's Rust sources (build outputs and virtualenvs are not
/// under them, except a nested crate's own `target/`, which is left out).
const SOURCE_DIRS: [&str; 6] = ["src", "tests", "examples", "benches", "fuzz", "python/src"];

#[test]
fn every_rust_file_is_formatted() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        let dir = root.join(dir);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    files.retain(|p| !p.components().any(|c| c.as_os_str() == "target"));
    files.sort();
    assert!(
        files.len() > 100,
        "found only {} Rust files: is the source walker looking in the right place?",
        files.len()
    );
    let out = match Command::new("rustfmt")
        .args(["--check", "--edition", "2024"])
        .args(&files)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            common::skip::skip(&format!(
                "cannot run rustfmt ({e}): rustup component add rustfmt"
            ));
            return;
        }
    };
    let diff = String::from_utf8_lossy(&out.stdout);
    let unformatted: std::collections::BTreeSet<&str> = diff
        .lines()
        .filter_map(|l| l.strip_prefix("Diff in "))
        .map(|l| l.find(".rs").map_or(l, |end| &l[..end + 3]))
        .map(|l| {
            l.strip_prefix(root.to_str().unwrap_or(""))
                .unwrap_or(l)
                .trim_start_matches('/')
        })
        .collect();
    assert!(
        out.status.success(),
        "rustfmt would change {} files (run `rustfmt --edition 2024` on them):\n{}\n{}",
        unformatted.len(),
        unformatted.into_iter().collect::<Vec<_>>().join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
}
