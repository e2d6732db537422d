//! The binary end to end: rollouts are written atomically in the documented format and read
//! back; old versions are refused clearly; the benchmark runs.

use std::path::PathBuf;
use std::process::Command;

use gridarena::error::ArtifactError;
use gridarena::rollout::{ROLLOUT_VERSION, Rollout};

mod common;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gridarena"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gridarena-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn rollout_writes_a_self_contained_file_that_loads_back() {
    let dir = temp_dir("rollout");
    let out = dir.join("r.ron");
    let status = bin()
        .args([
            "rollout",
            "--scenario",
            "assets/scenarios/pursuit_3.ron",
            "--seed",
            "4",
            "--steps",
            "120",
            "--out",
        ])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let r = Rollout::load(&out).unwrap();
    assert_eq!(r.version, ROLLOUT_VERSION);
    assert_eq!(r.scenario.name, "pursuit_3");
    assert_eq!(r.agents.len(), 3);
    let steps = r.frames.iter().filter(|f| !f.actions.is_empty()).count();
    assert_eq!(steps, 120, "one frame per step plus respawn frames");
    let ends = r
        .frames
        .iter()
        .filter(|f| f.terminated || f.truncated)
        .count();
    let respawns = r.frames.iter().skip(1).filter(|f| f.t == 0).count();
    assert!(
        ends >= 2,
        "50-step episodes: at least two ended in 120 steps"
    );
    assert_eq!(
        respawns, ends,
        "every ended episode is followed by its respawn"
    );
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_rollout_of_another_version_is_refused_with_the_versions() {
    let dir = temp_dir("version");
    let out = dir.join("r.ron");
    assert!(
        bin()
            .args(["rollout", "--steps", "3", "--out"])
            .arg(&out)
            .status()
            .unwrap()
            .success()
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let old = text.replacen(&format!("version: {ROLLOUT_VERSION}"), "version: 0", 1);
    std::fs::write(&out, old).unwrap();
    match Rollout::load(&out) {
        Err(ArtifactError::Version {
            found: 0,
            supported,
            ..
        }) => assert_eq!(supported, ROLLOUT_VERSION),
        other => panic!("expected a version error, got {other:?}"),
    }
    std::fs::write(&out, "Rollout(format: \"something-else\", version: 1)").unwrap();
    assert!(matches!(
        Rollout::load(&out),
        Err(ArtifactError::Format { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rollout_into_a_missing_directory_fails_cleanly() {
    let out = bin()
        .args(["rollout", "--steps", "2", "--out", "/nonexistent-dir/r.ron"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/nonexistent-dir/r.ron") && !stderr.contains("panicked"),
        "{stderr}"
    );
}

#[test]
fn bench_env_reports_throughput_and_memory() {
    let out = bin()
        .args([
            "bench",
            "env",
            "--arenas",
            "64",
            "--steps",
            "50",
            "--repeat",
            "3",
            "--warmup",
            "5",
            "--threads",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let after = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in {stdout}"))
            .trim()
            .to_string()
    };
    let number = |s: &str| -> f64 {
        let x: f64 = s.parse().unwrap_or_else(|e| panic!("{s:?}: {e}"));
        assert!(x.is_finite() && x > 0.0, "{s}");
        x
    };
    // Three repeats, their median, and the agent rate as 8 learners x the env rate.
    let mut repeats: Vec<f64> = after("env-steps/s per repeat:")
        .trim_matches(['[', ']'])
        .split(", ")
        .map(number)
        .collect();
    assert_eq!(repeats.len(), 3, "{stdout}");
    repeats.sort_by(f64::total_cmp);
    let median = number(&after("env-steps/s (median):"));
    assert!(
        (median - repeats[1]).abs() <= 1.0,
        "{median} vs {repeats:?}"
    );
    let agent_line = after("agent-steps/s (median):");
    let agents = number(agent_line.split_whitespace().next().unwrap());
    assert!(
        (agents - 8.0 * median).abs() <= 8.0,
        "{agents} vs 8 x {median}"
    );
    assert!(stdout.contains("8 learning agents per arena"));
    assert!(stdout.contains("resident memory:"));
}

#[test]
fn an_absurd_batch_is_refused_before_allocating() {
    let out = bin()
        .args(["bench", "env", "--arenas", "4000000000", "--steps", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("budget") && stderr.contains("--arenas"),
        "{stderr}"
    );
}

#[test]
fn shipped_run_configs_parse_and_validate() {
    for entry in std::fs::read_dir("assets/runs").unwrap() {
        let path = entry.unwrap().path();
        let cfg =
            gridarena::train::config::RunConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
        cfg.validate()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    // The default command's configuration is the shipped pqn_pursuit.ron.
    let shipped = gridarena::train::config::RunConfig::load(std::path::Path::new(
        "assets/runs/pqn_pursuit.ron",
    ))
    .unwrap();
    assert_eq!(shipped, gridarena::train::config::RunConfig::default());
}

#[test]
fn a_run_survives_being_killed_at_any_moment() {
    // SIGKILL the trainer again and again while it writes a checkpoint after every update;
    // once a checkpoint exists the newest complete one must always load, no resume may fail
    // on its own before it is killed, and a final bounded resume must finish with exit 0.
    let dir = temp_dir("kill");
    let run = dir.join("run");
    let mut rng = 12345u64;
    let mut loaded = 0;
    let mut first_loaded = None;
    for round in 0..12 {
        let mut cmd = if round == 0 {
            let mut cmd = common::tiny_train("cpu", 100_000_000, &run);
            for s in ["checkpoint_every=1", "keep_checkpoints=2"] {
                cmd.args(["--set", s]);
            }
            cmd
        } else {
            let mut cmd = bin();
            cmd.args(["train", "--device", "cpu", "--resume"]).arg(&run);
            cmd
        };
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        if round == 0 {
            // On a loaded machine the first kill could come before any checkpoint, and every
            // resume would then be refused for want of one: let the first checkpoint appear.
            let start = std::time::Instant::now();
            while gridarena::train::run_dir::RunDir::open(&run)
                .and_then(|d| d.load_latest())
                .is_err()
            {
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("the first trainer exited with {status} before its first checkpoint");
                }
                assert!(
                    start.elapsed().as_secs() < 120,
                    "no checkpoint within 120 s"
                );
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(std::time::Duration::from_millis(150 + (rng >> 33) % 250));
        // A run of 100M steps cannot have finished: if it exited, it failed.
        if let Some(status) = child.try_wait().unwrap() {
            panic!("round {round}: the trainer exited on its own with {status} before the kill");
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let dir = gridarena::train::run_dir::RunDir::open(&run);
        match dir.and_then(|d| d.load_latest()) {
            Ok(c) => {
                assert!(!c.params.is_empty() && c.params.iter().all(|v| v.is_finite()));
                loaded += 1;
                first_loaded.get_or_insert(round);
            }
            Err(e) => assert!(
                first_loaded.is_none(),
                "round {round}: no loadable checkpoint after one existed: {e}"
            ),
        }
    }
    assert!(
        loaded >= 10,
        "only {loaded} of 12 kills left a loadable checkpoint"
    );
    // Resume to two updates past the newest checkpoint (8 arenas x 4 steps per update): it
    // must end by itself, exit 0 and leave exactly that update's checkpoint.
    let done = gridarena::train::run_dir::RunDir::open(&run)
        .unwrap()
        .load_latest()
        .unwrap()
        .update;
    let steps = ((done + 2) * 32).to_string();
    let out = bin()
        .args(["train", "--device", "cpu", "--steps", &steps, "--resume"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "final resume: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let last = gridarena::train::run_dir::RunDir::open(&run)
        .unwrap()
        .load_latest()
        .unwrap();
    assert_eq!(last.update, done + 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_saves_a_checkpoint_and_exits_75() {
    let dir = temp_dir("sigint");
    let run = dir.join("run");
    let child = bin()
        .args([
            "train",
            "--scenario",
            "tests/data/chase.ron",
            "--device",
            "cpu",
            "--steps",
            "100000000",
            "--out",
        ])
        .arg(&run)
        .args([
            "--set",
            "arenas=8",
            "--set",
            "rollout=4",
            "--set",
            "minibatches=2",
            "--set",
            "hidden=16",
            "--set",
            "checkpoint_every=1000000",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until training is under way (metrics are being written).
    let metrics = run.join("metrics.jsonl");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&metrics).map_or(0, |t| t.lines().count()) < 3 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "training did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 75 (EX_TEMPFAIL): stopped with a checkpoint, run again to continue.
    assert_eq!(
        out.status.code(),
        Some(75),
        "exit {:?}: {stderr}",
        out.status
    );
    assert!(stdout.contains("stopped"), "{stdout}");
    assert!(
        stderr.contains("stopped by SIGINT after update"),
        "{stderr}"
    );
    // checkpoint_every is huge: the only checkpoint is the one the interrupt saved.
    let ckpt = gridarena::train::run_dir::RunDir::open(&run)
        .unwrap()
        .load_latest()
        .unwrap();
    assert!(ckpt.update >= 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn runs_without_out_each_get_a_new_directory_and_runs_latest_names_the_newest() {
    let cwd = temp_dir("fresh-runs");
    let _ = std::fs::remove_dir_all(cwd.join("runs"));
    let scenario = std::fs::canonicalize("tests/data/chase.ron").unwrap();
    let train = |extra: &[&str]| {
        let out = bin()
            .current_dir(&cwd)
            .args([
                "train",
                "--device",
                "cpu",
                "--steps",
                "64",
                "--seed",
                "3",
                "--scenario",
            ])
            .arg(&scenario)
            .args([
                "--set",
                "arenas=8",
                "--set",
                "rollout=4",
                "--set",
                "minibatches=2",
            ])
            .args(["--set", "hidden=8", "--set", "layers=1"])
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for _ in 0..2 {
        let (code, stderr) = train(&[]);
        assert_eq!(code, Some(0), "{stderr}");
    }
    let mut runs: Vec<String> = std::fs::read_dir(cwd.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "latest")
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for name in &runs {
        // chase__pqn__3__<seconds since the epoch>[_2]
        let parts: Vec<&str> = name.split("__").collect();
        assert_eq!(parts[..3], ["chase", "pqn", "3"], "{name}");
        let start = parts[3].split('_').next().unwrap();
        assert!(start.parse::<u64>().unwrap() > 1_700_000_000, "{name}");
        assert!(
            cwd.join("runs").join(name).join("config.ron").exists(),
            "{name}"
        );
    }
    // runs/latest is the newer run (the later start, or the _2 of the same second).
    let latest = std::fs::read_link(cwd.join("runs/latest")).unwrap();
    let newest = runs
        .iter()
        .max_by_key(|n| (n.split("__").nth(3).unwrap().len(), n.to_string()))
        .unwrap();
    assert_eq!(latest, PathBuf::from(newest));
    // --out keeps refusing an existing run, and leaves runs/latest alone.
    let taken = cwd.join("runs").join(&runs[0]);
    let (code, stderr) = train(&["--out", taken.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("already holds a run"), "{stderr}");
    assert_eq!(std::fs::read_link(cwd.join("runs/latest")).unwrap(), latest);
    let _ = std::fs::remove_dir_all(cwd);
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    // `gridarena check --explain S | head -1`: the reader goes before the output is written.
    use std::process::Stdio;
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/scenarios/gift_refinements.ron"
    );
    // The read end is closed before the child starts, so its first write always meets a
    // closed pipe (closing it after the spawn raced the child, which could write everything
    // into the pipe's buffer first and exit 0 on a loaded machine).
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = bin()
        .args(["check", "--explain", scenario])
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}
