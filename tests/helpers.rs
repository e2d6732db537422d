//! The test helpers hold their promises. The comparisons of tests/common/checks.rs refuse to
//! compare nothing (two nulls, two missing fields, a series without a number, NaN); the skip
//! of tests/common/skip.rs fails under `CI` and is otherwise recorded for `scripts/test`'s
//! count.

#[path = "common/checks.rs"]
mod checks;
#[path = "common/skip.rs"]
mod skip;

use std::process::Command;

use checks::*;
use serde_json::{Value, json};

#[test]
fn equal_numbers_pass() {
    assert_same_numbers(&json!([1.5, null]), &json!([1.5, null]), "x");
    let (a, b) = (json!(2.0), Value::Null);
    assert_eq!(assert_series_equal([(&a, &a), (&b, &b)], 1, "x"), 1);
    assert_same_bits(&[1.0, -0.5], &[1.0, -0.5], "x");
    assert_eq!(first_and_last(&[4.0, 3.0, 2.0, 1.0], 0.5, "x"), (3.5, 1.5));
}

#[test]
#[should_panic(expected = "nothing was compared")]
fn two_nulls_are_not_equal_numbers() {
    assert_same_numbers(&Value::Null, &json!({})["missing"], "x");
}

#[test]
#[should_panic(expected = "0 of 2 pairs held numbers")]
fn a_series_of_nulls_compares_nothing() {
    let n = Value::Null;
    assert_series_equal([(&n, &n), (&n, &n)], 1, "x");
}

#[test]
#[should_panic(expected = "not a finite number")]
fn null_is_not_finite() {
    finite(&json!({ "a": null }), "a", "x");
}

#[test]
#[should_panic(expected = "element 1 is NaN")]
fn nan_bits_are_not_a_match() {
    assert_same_bits(&[1.0, f32::NAN], &[1.0, f32::NAN], "x");
}

/// Skips when `GRIDARENA_SKIP_PROBE` is set (the two tests below run it in a child process);
/// passes untouched otherwise.
#[test]
fn skip_probe() {
    if std::env::var_os("GRIDARENA_SKIP_PROBE").is_some() {
        skip::skip("probe reason");
    }
}

/// Runs `skip_probe` alone in a child process of this test binary with `ci` set or not.
fn probe(ci: bool, log: &std::path::Path) -> std::process::Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "skip_probe", "--nocapture"])
        .env("GRIDARENA_SKIP_PROBE", "1")
        .env("GRIDARENA_SKIP_LOG", log);
    if ci {
        cmd.env("CI", "true");
    } else {
        cmd.env_remove("CI");
    }
    cmd.output().unwrap()
}

#[test]
fn a_skip_outside_ci_passes_and_is_recorded_for_the_count() {
    let log = std::env::temp_dir().join(format!("gridarena-skip-log-{}", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let out = probe(false, &log);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recorded = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert_eq!(recorded, "helpers::skip_probe: probe reason\n");
}

#[test]
fn a_skip_under_ci_fails() {
    let log = std::env::temp_dir().join(format!("gridarena-skip-ci-{}", std::process::id()));
    let out = probe(true, &log);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("CI is set, so skip_probe may not skip: probe reason"),
        "{stdout}{stderr}"
    );
    assert!(!log.exists(), "a failed skip records nothing");
}
