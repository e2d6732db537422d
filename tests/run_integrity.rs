//! Runs that survive clusters, through the binary: a damaged newest checkpoint (truncated,
//! a flipped byte, a missing file) is reported and the previous one used, and the run finishes
//! as if nothing had happened; `check-run` reports the damage; a full disk while checkpointing
//! stops the run cleanly; one writer per run directory; the checkpoints kept; a run directory
//! evaluated from any working directory, with the scenario it trained on.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gridarena::train::run_dir::RunDir;

mod common;
#[path = "common/runs.rs"]
mod runs;
use runs::{deterministic_metrics, params};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gridarena"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("gridarena-integrity-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// 32 environment steps per update (8 arenas x 4 steps).
const STEPS_PER_UPDATE: u64 = 32;

/// The tiny run of every test: `updates` updates, a checkpoint after each, with `set` added.
fn tiny(updates: u64, out: &Path, set: &[&str]) -> Command {
    let mut cmd = common::tiny_train("cpu", updates * STEPS_PER_UPDATE, out);
    for s in ["checkpoint_every=1", "keep_checkpoints=3"]
        .iter()
        .chain(set)
    {
        cmd.args(["--set", s]);
    }
    cmd
}

/// Runs `cmd`, returning its output (stdout and stderr as text, the status).
fn run(cmd: &mut Command) -> (bool, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().unwrap();
    (
        status.success(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

fn resume(run_dir: &Path) -> Command {
    let mut cmd = bin();
    cmd.args(["train", "--device", "cpu", "--resume"])
        .arg(run_dir);
    cmd
}

fn check_run(run_dir: &Path) -> (bool, String, String) {
    run(bin().arg("check-run").arg(run_dir))
}

/// Copies the directory `from` to `to` (files and folders).
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Asserts the two runs logged the same metrics and ended with the same parameters.
fn assert_same_run(straight: &Path, other: &Path) {
    let (a, b) = (
        deterministic_metrics(straight),
        deterministic_metrics(other),
    );
    assert_eq!(a.len(), b.len(), "metrics lines");
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "update {}: metrics differ", k + 1);
    }
    assert!(params(straight) == params(other), "final parameters differ");
}

/// One way of damaging a checkpoint, and the file it damages.
fn damage(how: &str, checkpoint: &Path) -> &'static str {
    let tensors = checkpoint.join("params.safetensors");
    match how {
        "truncate" => {
            let len = fs::metadata(&tensors).unwrap().len();
            fs::File::options()
                .write(true)
                .open(&tensors)
                .unwrap()
                .set_len(len / 2)
                .unwrap();
            "params.safetensors"
        }
        "flip" => {
            // Past the 8-byte header length and the JSON header: inside the first tensor.
            let mut bytes = fs::read(&tensors).unwrap();
            let header = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
            let at = 8 + header + 10;
            assert!(at < bytes.len());
            bytes[at] ^= 0x40;
            fs::write(&tensors, bytes).unwrap();
            "params.safetensors"
        }
        "delete" => {
            fs::remove_file(checkpoint.join("state.json")).unwrap();
            "state.json"
        }
        _ => unreachable!(),
    }
}

#[test]
fn a_damaged_newest_checkpoint_falls_back_and_the_run_finishes_identically() {
    let dir = temp_dir("fallback");
    let straight = dir.join("straight");
    let (ok, _, err) = run(&mut tiny(6, &straight, &[]));
    assert!(ok, "{err}");
    let checkpoints = RunDir::open(&straight).unwrap().checkpoints().unwrap();
    let names_of = |v: &[PathBuf]| -> Vec<String> {
        v.iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(
        names_of(&checkpoints),
        ["update_00000004", "update_00000005", "update_00000006"]
    );
    let (ok, out, _) = check_run(&straight);
    assert!(ok, "an intact run: {out}");
    for how in ["truncate", "flip", "delete"] {
        let copy = dir.join(how);
        copy_dir(&straight, &copy);
        let newest = RunDir::checkpoints_dir(&copy).join("update_00000006");
        let file = damage(how, &newest);

        // check-run names the damage and exits 1.
        let (ok, out, _) = check_run(&copy);
        assert!(!ok, "{how}: check-run passed a damaged run:\n{out}");
        let line = out
            .lines()
            .find(|l| l.starts_with("update_00000006"))
            .unwrap_or_else(|| panic!("{how}: no line for the newest checkpoint:\n{out}"));
        assert!(
            line.contains("damaged") && line.contains(file),
            "{how}: {line}"
        );
        assert!(out.contains("update_00000005: ok"), "{how}:\n{out}");
        let (_, json, _) = run(bin().args(["check-run", "--json"]).arg(&copy));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["resumable"], false, "{json}");
        assert_eq!(v["newest_intact"], "update_00000005", "{json}");

        // eval falls back too, and says so.
        let (ok, _, err) = run(bin()
            .args(["eval", "--device", "cpu", "--episodes", "2", "--run"])
            .arg(&copy));
        assert!(ok, "{how}: eval failed: {err}");
        assert!(
            err.contains(file) && err.contains("falling back") && err.contains("update_00000005"),
            "{how}: eval said: {err}"
        );

        // The resume falls back to update 5, names the file, and ends as the straight run did.
        let (ok, _, err) = run(&mut resume(&copy));
        assert!(ok, "{how}: the resume failed: {err}");
        assert!(
            err.contains(file) && err.contains("falling back") && err.contains("update_00000005"),
            "{how}: the resume said: {err}"
        );
        assert_same_run(&straight, &copy);
        let (ok, out, _) = check_run(&copy);
        assert!(ok, "{how}: after the resume:\n{out}");
    }

    // Every checkpoint damaged: refused, naming each one and its damage.
    let copy = dir.join("all");
    copy_dir(&straight, &copy);
    for c in RunDir::open(&copy).unwrap().checkpoints().unwrap() {
        fs::remove_file(c.join("state.json")).unwrap();
    }
    let (ok, _, err) = run(&mut resume(&copy));
    assert!(!ok);
    assert!(err.contains("no intact checkpoint"), "{err}");
    for u in 4..=6 {
        assert!(err.contains(&format!("update_{u:08}")), "{err}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_full_disk_while_checkpointing_stops_cleanly_and_the_resume_finishes_identically() {
    let dir = temp_dir("enospc");
    let straight = dir.join("straight");
    let (ok, _, err) = run(&mut tiny(6, &straight, &[]));
    assert!(ok, "{err}");

    let full = dir.join("full");
    let (ok, _, err) = run(tiny(6, &full, &[]).env("GRIDARENA_FAULT", "enospc-in-checkpoint:0:3"));
    assert!(!ok, "the run went on past a full disk");
    assert!(
        err.contains("update 3")
            && err.contains("params.safetensors")
            && err.contains("bytes")
            && err.contains("disk is full"),
        "{err}"
    );
    // The two checkpoints before are intact, and nothing partial is left.
    let root = RunDir::checkpoints_dir(&full);
    assert_eq!(names(&root), ["update_00000001", "update_00000002"]);
    assert!(!full.join("run.lock").exists(), "the lock outlived the run");
    let (ok, out, _) = check_run(&full);
    assert!(ok, "{out}");

    let (ok, _, err) = run(&mut resume(&full));
    assert!(ok, "{err}");
    assert_same_run(&straight, &full);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_second_writer_is_refused_and_a_stale_lock_is_taken_over() {
    let dir = temp_dir("lock");
    let run_dir = dir.join("run");
    let mut first = tiny(1_000_000, &run_dir, &[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while RunDir::open(&run_dir)
        .and_then(|d| d.load_latest())
        .is_err()
    {
        assert!(first.try_wait().unwrap().is_none(), "the first run ended");
        assert!(start.elapsed().as_secs() < 120, "no checkpoint in 120 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let lock: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(run_dir.join("run.lock")).unwrap()).unwrap();
    assert_eq!(lock["pid"], first.id(), "{lock}");
    let host = lock["host"].as_str().unwrap().to_string();

    let (ok, _, err) = run(&mut resume(&run_dir));
    assert!(!ok, "a second writer was let in");
    assert!(
        err.contains(&format!("process {}", first.id())) && err.contains(&host),
        "{err}"
    );
    // The refusal changed nothing: the first run still holds its lock.
    assert!(first.try_wait().unwrap().is_none());
    assert!(run_dir.join("run.lock").exists());

    // Killed, it leaves its lock behind: the next writer on this host takes it over.
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(run_dir.join("run.lock").exists());
    let done = RunDir::open(&run_dir)
        .unwrap()
        .load_latest()
        .unwrap()
        .update;
    let steps = ((done + 1) * STEPS_PER_UPDATE).to_string();
    let (ok, _, err) = run(resume(&run_dir).args(["--steps", &steps]));
    assert!(ok, "{err}");
    assert!(err.contains("taking over the lock"), "{err}");
    assert!(
        !run_dir.join("run.lock").exists(),
        "the lock outlived the run"
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn the_newest_checkpoints_and_every_multiple_of_keep_every_are_kept() {
    let dir = temp_dir("retention");
    let run_dir = dir.join("run");
    let (ok, _, err) = run(&mut tiny(
        10,
        &run_dir,
        &["keep_checkpoints=2", "keep_every=4"],
    ));
    assert!(ok, "{err}");
    let root = RunDir::checkpoints_dir(&run_dir);
    assert_eq!(
        names(&root),
        [
            "update_00000004",
            "update_00000008",
            "update_00000009",
            "update_00000010"
        ]
    );
    // `plan` counts the disk those four take: its estimate of one checkpoint times the four.
    // The estimate is an upper bound: it takes the arenas' state as JSON at 2 B of text per
    // byte, and this tiny run's mostly-zero state takes about 1 (measured 1.83x here), so the
    // tolerance is: never below what is written, at most twice it.
    let written: u64 = names(&root)
        .iter()
        .flat_map(|c| fs::read_dir(root.join(c)).unwrap())
        .map(|f| f.unwrap().metadata().unwrap().len())
        .sum();
    let mut plan = bin();
    plan.args(["plan", "--device", "cpu", "--json"]);
    for s in [
        "scenario=\"tests/data/chase.ron\"",
        "total_steps=320",
        "arenas=8",
        "rollout=4",
        "minibatches=2",
        "hidden=16",
        "layers=1",
        "checkpoint_every=1",
        "keep_checkpoints=2",
        "keep_every=4",
    ] {
        plan.args(["--set", s]);
    }
    let (_, json, err) = run(&mut plan);
    let v: serde_json::Value =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}{err}"));
    assert_eq!(v["disk"]["kept"], 4, "{json}");
    let planned = v["disk"]["bytes"].as_u64().unwrap();
    let ratio = planned as f64 / written as f64;
    eprintln!("planned {planned} B, written {written} B: {ratio:.3}");
    assert!(
        (1.0..=2.0).contains(&ratio),
        "plan says {planned} B, the kept checkpoints take {written} B"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// A metrics line that cannot be written (here onto `/dev/full`, which answers every write
/// with ENOSPC) is an error naming the file and the line's bytes.
#[cfg(target_os = "linux")]
#[test]
fn a_metrics_line_on_a_full_disk_is_refused_naming_the_file_and_its_bytes() {
    let dir = temp_dir("metrics-full");
    let run_dir = dir.join("run");
    let run = RunDir::create(&run_dir).unwrap();
    std::os::unix::fs::symlink("/dev/full", run_dir.join("metrics.jsonl")).unwrap();
    let line = r#"{"update":1}"#;
    let err = run.append_metrics(line).unwrap_err().to_string();
    assert!(
        err.contains("metrics.jsonl")
            && err.contains(&format!("{} bytes", line.len() + 1))
            && err.contains("disk is full"),
        "{err}"
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_run_directory_is_evaluated_from_anywhere_with_the_scenario_it_trained_on() {
    // The run names its scenario by a path relative to where it trained; evaluated from another
    // directory, that path leads nowhere, and the run's own copy (`scenario.ron`) is what counts.
    let dir = temp_dir("elsewhere");
    let out = dir.join("run");
    let (ok, _, err) = run(&mut tiny(2, &out, &[]));
    assert!(ok, "{err}");
    let elsewhere = dir.join("somewhere_else");
    fs::create_dir_all(&elsewhere).unwrap();
    let eval = bin()
        .current_dir(&elsewhere)
        .args(["eval", "--run"])
        .arg(&out)
        .args(["--episodes", "2", "--device", "cpu", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&eval.stderr);
    assert!(eval.status.success(), "eval from elsewhere: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&eval.stdout).unwrap();
    assert_eq!(report["episodes"], 2, "{report}");
    let _ = fs::remove_dir_all(&dir);
}
