//! Skips nobody can miss. A test that cannot run here (no GPU adapter, no virtual X server)
//! calls [`skip`]: with `CI` set that fails the test; otherwise it prints a loud line and, when
//! `GRIDARENA_SKIP_LOG` names a file (`scripts/test` sets it), appends the test's name and
//! reason there, so the run ends with a count of what it skipped. Only a missing adapter or
//! program is a reason to skip: an error from building a pipeline on an adapter that exists is
//! a failure.
#![allow(dead_code, missing_docs)]

use std::io::Write;

/// Skips the calling test: fails under `CI`, else prints `reason` and records it.
pub fn skip(reason: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_string();
    if std::env::var_os("CI").is_some() {
        panic!("CI is set, so {test} may not skip: {reason}");
    }
    eprintln!("\n!!! SKIPPED {test}: {reason}\n");
    if let Some(log) = std::env::var_os("GRIDARENA_SKIP_LOG") {
        // One short line per append: concurrent test processes do not interleave within it.
        let line = format!("{}::{test}: {reason}\n", crate_name());
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            panic!("cannot record the skip in {}: {e}", log.to_string_lossy());
        }
    }
}

/// The test binary's name (`critic_gpu`, not `critic_gpu-0123abcd`).
fn crate_name() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe.file_stem().unwrap_or_default().to_string_lossy();
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem.into_owned(),
    }
}

/// Whether a GPU adapter exists. Without one the test is skipped (see [`skip`]) and this
/// returns false; with one, the caller must fail on any error it meets.
pub fn gpu_adapter_present() -> bool {
    #[cfg(feature = "gpu")]
    {
        if !gridarena::critic::gpu::adapters().is_empty() {
            return true;
        }
        skip("no GPU adapter (install mesa-vulkan-drivers for lavapipe)");
    }
    #[cfg(not(feature = "gpu"))]
    skip("this build has no `gpu` feature");
    false
}
