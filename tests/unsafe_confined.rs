//! `unsafe` and `std::arch` live in one audited module, `src/simd/` (docs/perf.md): no other
//! library or binary file uses either, and the crate's lint denies `unsafe` everywhere else.

use std::fs;
use std::path::Path;

#[path = "common/source_files.rs"]
mod source_files;
use source_files::rust_files;

/// The constructs that need the audit, as written in code (comments removed).
fn audited_constructs(text: &str) -> Vec<String> {
    const TOKENS: [&str; 6] = [
        "unsafe {",
        "unsafe fn",
        "unsafe impl",
        "std::arch",
        "core::arch",
        "#[target_feature",
    ];
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .enumerate()
        .filter(|(_, code)| TOKENS.iter().any(|t| code.contains(t)))
        .map(|(k, code)| format!("line {}: {}", k + 1, code.trim()))
        .collect()
}

#[test]
fn unsafe_and_std_arch_stay_in_the_simd_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let simd = root.join("src").join("simd");
    let mut inside = 0;
    let mut outside = Vec::new();
    for path in &files {
        let found = audited_constructs(&fs::read_to_string(path).unwrap());
        if path.starts_with(&simd) {
            inside += found.len();
        } else {
            outside.extend(
                found
                    .into_iter()
                    .map(|f| format!("{}: {f}", path.display())),
            );
        }
    }
    assert!(
        outside.is_empty(),
        "outside src/simd:\n{}",
        outside.join("\n")
    );
    // The scan sees the module's own kernels (so it would see them anywhere else).
    assert!(inside >= 3, "found {inside} audited constructs in src/simd");
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("unsafe_code = \"deny\""),
        "Cargo.toml no longer denies unsafe code"
    );
}
