//! Bad input from the command line, a run config or a rollout file is refused with exit status
//! 1 and a message naming what is wrong, never a panic (exit status 101); and a run that works
//! prints no `error:` lines, even without a usable XDG_RUNTIME_DIR.

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gridarena"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gridarena-bad-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A tiny training run on `device` with the given overrides.
fn train(name: &str, device: &str, sets: &[&str]) -> Command {
    let mut cmd = common::tiny_train(device, 64, &temp_dir(name).join("run"));
    for s in sets {
        cmd.args(["--set", s]);
    }
    cmd
}

/// Runs `cmd` and checks it was refused (exit 1, not a panic) with a message naming `what`.
fn refused(mut cmd: Command, what: &[&str]) {
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "expected a refusal, got:\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    for w in what {
        assert!(err.contains(w), "the message should name {w:?}:\n{err}");
    }
}

#[test]
fn sizes_out_of_range_are_refused_naming_field_value_and_range() {
    // (case, overrides, what the message must name); total_steps keeps one rollout affordable.
    let cases: [(&str, &[&str], &[&str]); 3] = [
        (
            "overflow",
            &["arenas=1099511627776", "rollout=1099511627776"],
            &["arenas", "1099511627776", "between 1 and"],
        ),
        (
            "layers",
            &["layers=1000000"],
            &["layers", "1000000", "between 1 and"],
        ),
        (
            "hidden",
            &["hidden=5000000000"],
            &["hidden", "5000000000", "between 1 and"],
        ),
    ];
    for (name, sets, what) in cases {
        let mut cmd = train(name, "cpu", sets);
        cmd.args(["--set", "total_steps=100000000"]);
        refused(cmd, what);
    }
}

#[test]
fn zero_sizes_are_refused() {
    refused(train("hidden0", "cpu", &["hidden=0"]), &["hidden", "0"]);
    refused(train("arenas0", "cpu", &["arenas=0"]), &["arenas", "0"]);
}

#[test]
fn a_gpu_stack_deeper_than_the_dispatch_budget_is_refused() {
    // Today's GPU critic would panic on its 257th dispatch of one operation; the layer bound
    // refuses the config before anything is built, whichever device is asked for.
    refused(
        train(
            "gpu-layers",
            "gpu",
            &["layers=100", "total_steps=100000000"],
        ),
        &["layers", "100", "between 1 and"],
    );
}

#[cfg(feature = "gpu")]
#[test]
fn render_refuses_a_damaged_frame_with_its_index() {
    use gridarena::rollout::Rollout;
    let dir = temp_dir("render");
    let file = dir.join("r.ron");
    let status = bin()
        .args([
            "rollout",
            "--scenario",
            "assets/scenarios/pursuit_3.ron",
            "--steps",
            "5",
            "--out",
        ])
        .arg(&file)
        .status()
        .unwrap();
    assert!(status.success());
    let mut r = Rollout::load(&file).unwrap();
    r.frames[2].positions[0] = (30000, 30000);
    r.save(&file).unwrap();
    let mut cmd = bin();
    cmd.arg("render")
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out.gif"));
    refused(cmd, &["frame 2", "agent 0", "r.ron"]);
    let mut r = Rollout::load(&file).unwrap();
    r.frames[3].positions.pop();
    r.frames[2].positions[0] = r.frames[1].positions[0];
    r.save(&file).unwrap();
    let mut cmd = bin();
    cmd.arg("render")
        .arg(&file)
        .arg("--out")
        .arg(dir.join("frames"));
    refused(cmd, &["frame 3", "positions"]);
}

/// True when a line of `err` starts with `error:`.
fn has_error_line(err: &str) -> bool {
    err.lines().any(|l| l.trim_start().starts_with("error:"))
}

/// A tiny run on `device` without XDG_RUNTIME_DIR succeeds and prints no `error:` line.
fn quiet_without_runtime_dir(device: &str) {
    let out = train(&format!("quiet-{device}"), device, &[])
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        !has_error_line(&err),
        "a run that works printed errors:\n{err}"
    );
}

#[test]
fn a_cpu_run_without_a_runtime_dir_prints_no_errors() {
    quiet_without_runtime_dir("cpu");
}

#[test]
fn an_auto_run_without_a_runtime_dir_prints_no_errors() {
    quiet_without_runtime_dir("auto");
}
