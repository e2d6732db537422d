//! Runs that survive clusters: SIGTERM and SIGUSR1 stop `gridarena train` after the current
//! update with a checkpoint and exit 75; `--resume-if-exists` starts a run or resumes it by
//! the same command; a run interrupted again and again (SIGKILL, SIGTERM, SIGUSR1 at random
//! moments) and restarted each time ends bit for bit where an uninterrupted run ends; the
//! Slurm script parses.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use gridarena::train::run_dir::RunDir;

mod common;
#[path = "common/runs.rs"]
mod runs;

use runs::deterministic_metrics;

/// The exit status of a run a signal stopped after its checkpoint (EX_TEMPFAIL).
const STOPPED: i32 = 75;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gridarena-preempt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The same command every time: a tiny run of `updates` updates (8 arenas x 4 steps each)
/// into `out`, started or resumed by `--resume-if-exists`.
fn job(out: &Path, updates: u64, checkpoint_every: u64) -> Command {
    let mut cmd = common::tiny_train("cpu", updates * 32, out);
    cmd.args(["--resume-if-exists", "--threads", "1"]);
    cmd.args(["--set", &format!("checkpoint_every={checkpoint_every}")]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

fn show(o: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `cmd` to its end, which must be exit 0.
fn finish(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    o
}

/// Sends `signal` (`TERM`, `USR1`, `KILL`) to process `pid`.
fn send(signal: &str, pid: u32) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{signal} {pid}");
}

fn metric_lines(run: &Path) -> usize {
    std::fs::read_to_string(RunDir::metrics_file(run)).map_or(0, |t| t.lines().count())
}

/// The bytes of checkpoint `update`'s tensors file.
fn params_bytes(run: &Path, update: u64) -> Vec<u8> {
    let ckpt = RunDir::checkpoints_dir(run).join(format!("update_{update:08}"));
    std::fs::read(RunDir::params_file(&ckpt)).unwrap()
}

/// `run` ended exactly where `reference` did: the metrics without wall-clock fields, and the
/// final checkpoint's tensors byte for byte.
fn assert_same_run(run: &Path, reference: &Path, updates: u64) {
    let (got, want) = (deterministic_metrics(run), deterministic_metrics(reference));
    assert_eq!(got.len(), updates as usize, "one metrics line per update");
    assert_eq!(got, want, "metrics differ from the uninterrupted run");
    assert!(
        params_bytes(run, updates) == params_bytes(reference, updates),
        "the final checkpoint's params.safetensors differs from the uninterrupted run's"
    );
}

/// Updates of the signal test's run: long enough that a signal sent after its second update
/// comes well before its end.
const UPDATES: u64 = 400;

#[test]
fn sigterm_and_sigusr1_checkpoint_exit_75_and_the_same_command_finishes_the_run_exactly() {
    let dir = temp_dir("signals");
    let reference = dir.join("reference");
    finish(&mut job(&reference, UPDATES, 1000));
    for signal in ["TERM", "USR1"] {
        let run = dir.join(signal);
        let child = job(&run, UPDATES, 1000).spawn().unwrap();
        let start = Instant::now();
        while metric_lines(&run) < 2 {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no update in 60 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        send(signal, child.id());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(STOPPED), "{}", show(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains(&format!("stopped by SIG{signal} after update")),
            "{stderr}"
        );
        // checkpoint_every is larger than the run: the one checkpoint is the signal's, taken
        // after the last update the metrics show.
        let stopped_at = metric_lines(&run) as u64;
        assert!(stopped_at < UPDATES, "the run ended before the signal");
        let ckpt = RunDir::open(&run).unwrap().load_latest().unwrap();
        assert_eq!(ckpt.update, stopped_at);
        let o = finish(&mut job(&run, UPDATES, 1000));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("resuming"),
            "{}",
            show(&o)
        );
        assert_same_run(&run, &reference, UPDATES);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn resume_if_exists_starts_in_an_empty_directory_and_starts_over_without_a_checkpoint() {
    let dir = temp_dir("start");
    // Slurm or a wrapper may have created the directory: empty, it holds no run.
    let run = dir.join("empty");
    std::fs::create_dir_all(&run).unwrap();
    finish(&mut job(&run, 3, 1));
    assert_eq!(RunDir::open(&run).unwrap().load_latest().unwrap().update, 3);
    // A run stopped between writing its config and its first checkpoint starts over in place:
    // the stale metrics go, and it ends as the run that was never stopped.
    let over = dir.join("over");
    std::fs::create_dir_all(&over).unwrap();
    for file in ["config.ron", "scenario.ron"] {
        std::fs::copy(run.join(file), over.join(file)).unwrap();
    }
    std::fs::write(
        RunDir::metrics_file(&over),
        "{\"update\": 1, \"stale\": true}\n{\"upd",
    )
    .unwrap();
    finish(&mut job(&over, 3, 1));
    assert_same_run(&over, &run, 3);
    // Run again, the finished run stays finished.
    finish(&mut job(&run, 3, 1));
    assert_same_run(&run, &over, 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn resume_if_exists_refuses_another_config_and_needs_out_without_resume() {
    let dir = temp_dir("refusals");
    let run = dir.join("run");
    finish(&mut job(&run, 2, 1));
    let before = std::fs::read(RunDir::metrics_file(&run)).unwrap();
    let fails = |cmd: &mut Command, text: &str| {
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", show(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(text), "no `{text}` in:\n{stderr}");
    };
    fails(
        job(&run, 2, 1).args(["--set", "hidden=32"]),
        "network.hidden: 16 -> 32",
    );
    assert_eq!(std::fs::read(RunDir::metrics_file(&run)).unwrap(), before);
    let bin = || Command::new(env!("CARGO_BIN_EXE_gridarena"));
    fails(
        bin().args(["train", "--resume-if-exists", "--steps", "64"]),
        "--resume-if-exists needs --out DIR",
    );
    fails(
        bin()
            .args(["train", "--resume-if-exists", "--resume"])
            .arg(&run),
        "--resume-if-exists with --resume",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// How a soak round may end: the signal's own way, or exit 0 when the run was done first.
fn ended_as_expected(signal: &str, status: ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    let number = match signal {
        "KILL" => 9,
        "TERM" => 15,
        _ => 10,
    };
    // Before its handlers are installed a process dies of SIGTERM or SIGUSR1 as of SIGKILL.
    status.code() == Some(0)
        || status.signal() == Some(number)
        || (signal != "KILL" && status.code() == Some(STOPPED))
}

/// `GRIDARENA_SOAK` interruptions (6 by default; `scripts/soak.sh` runs 50) of a tiny run
/// (100 + 60 updates per interruption) that checkpoints every 4 updates, alternating SIGKILL, SIGTERM and SIGUSR1 at random
/// moments (startup included), each followed by the same `--resume-if-exists` command; then
/// it runs to its end, which must be bit for bit the uninterrupted run's.
#[test]
fn a_run_interrupted_again_and_again_ends_bit_for_bit_as_an_uninterrupted_one() {
    let rounds: u64 = std::env::var("GRIDARENA_SOAK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let mut seed: u64 = std::env::var("GRIDARENA_SOAK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2026);
    println!("soak: {rounds} interruptions, GRIDARENA_SOAK_SEED={seed}");
    // A round lasts 20-200 ms: about 1 ms an update in a debug build on an idle machine, less
    // its start (40 ms). The run is long enough for the rounds to interrupt it.
    let updates = 100 + 60 * rounds;
    let dir = temp_dir("soak");
    let (run, reference) = (dir.join("run"), dir.join("reference"));
    let (mut stopped, mut interrupted) = (0, 0);
    for round in 0..rounds {
        let signal = ["KILL", "TERM", "USR1"][round as usize % 3];
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = Duration::from_millis(20 + (seed >> 33) % 180);
        let child = job(&run, updates, 4).spawn().unwrap();
        std::thread::sleep(delay);
        send(signal, child.id());
        let o = child.wait_with_output().unwrap();
        println!(
            "round {round}: SIG{signal} after {delay:?}: {}, {} metrics lines",
            o.status,
            metric_lines(&run)
        );
        assert!(
            ended_as_expected(signal, o.status),
            "round {round}: {}",
            show(&o)
        );
        if o.status.success() {
            // Exit 0 only for a finished run.
            assert!(
                metric_lines(&run) as u64 == updates,
                "round {round}: {}",
                show(&o)
            );
        }
        stopped += usize::from(o.status.code() == Some(STOPPED));
        interrupted += usize::from(!o.status.success());
    }
    // The soak is no soak if the run mostly ended before its signals.
    assert!(
        2 * interrupted >= rounds as usize,
        "only {interrupted} of {rounds} rounds were interrupted before the run ended"
    );
    finish(&mut job(&run, updates, 4));
    finish(&mut job(&reference, updates, 4));
    assert_same_run(&run, &reference, updates);
    println!("soak: {stopped} of {rounds} rounds stopped with a checkpoint (exit 75)");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_slurm_script_parses_and_requeues_by_the_same_command() {
    let script = "scripts/slurm/train.sbatch";
    let o = Command::new("bash").args(["-n", script]).output().unwrap();
    assert!(o.status.success(), "bash -n {script}: {}", show(&o));
    let text = std::fs::read_to_string(script).unwrap();
    // The train step passes --resume-if-exists, and on 75 the job requeues itself.
    for needed in [
        "#SBATCH --requeue",
        "#SBATCH --signal=USR1@",
        "--resume-if-exists \"$@\"",
        "\"$status\" -eq 75",
        "scontrol requeue \"$SLURM_JOB_ID\"",
    ] {
        assert!(text.contains(needed), "{script} lacks `{needed}`");
    }
}
