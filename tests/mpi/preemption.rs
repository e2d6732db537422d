//! A 2-rank job interrupted at random moments and restarted each time by the same
//! `mpirun -np 2 gridarena train --resume-if-exists` command ends bit for bit as the
//! uninterrupted job: SIGTERM to one rank and SIGUSR1 to the other stop both after the same
//! update with a checkpoint, and the job exits 75; SIGKILL to a rank ends the job, which
//! resumes from its newest complete checkpoint.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{BIN, mpirun, pqn_args, show};

/// Interruptions of the job: 3 in the suite; `GRIDARENA_MPI_SOAK=N` (scripts/soak.sh --mpi)
/// sets the full-size count.
fn rounds() -> usize {
    std::env::var("GRIDARENA_MPI_SOAK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// Updates of the job: long enough for every interruption and its restart (60 for three).
fn updates() -> u64 {
    (20 * rounds() as u64).max(60)
}

fn job(out: &Path) -> Command {
    let mut c = mpirun(2, &[]);
    c.arg(BIN)
        .args(pqn_args(out, updates()))
        .arg("--resume-if-exists")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The process of rank `rank` of the job training into `out`, once it has started.
fn rank_pid(out: &Path, rank: usize, mpirun: &mut Child) -> u32 {
    let want_rank = format!("OMPI_COMM_WORLD_RANK={rank}");
    let want_out = out.to_str().unwrap();
    let start = Instant::now();
    loop {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let read = |f: &str| std::fs::read(entry.path().join(f)).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&read("cmdline")).into_owned();
            let mut args = cmdline.split('\0');
            if args.next() != Some(BIN) || !args.any(|a| a == want_out) {
                continue;
            }
            let environ = read("environ");
            if environ
                .split(|&b| b == 0)
                .any(|v| v == want_rank.as_bytes())
            {
                return pid;
            }
        }
        if let Some(status) = mpirun.try_wait().unwrap() {
            panic!("the job ended ({status}) before rank {rank} was found");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no rank {rank} in 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Metrics without the wall-clock and traffic fields (a resumed job's first update also
/// counts the setup's collectives).
fn learning_metrics(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut()
                .unwrap()
                .retain(|k, _| k != "sps" && !k.contains("seconds") && !k.starts_with("allreduce"));
            v
        })
        .collect()
}

fn lines(run: &Path) -> usize {
    std::fs::read_to_string(run.join("metrics.jsonl")).map_or(0, |t| t.lines().count())
}

fn final_tensors(run: &Path) -> Vec<u8> {
    let ckpt = run
        .join("checkpoints")
        .join(format!("update_{:08}", updates()));
    std::fs::read(ckpt.join("params.safetensors")).unwrap()
}

pub(super) fn interrupted_job(dir: &Path) {
    let run: PathBuf = dir.join("run");
    let reference = dir.join("reference");
    let mut seed = 7u64;
    // (signal, rank it goes to)
    let kinds = [("TERM", 1), ("KILL", 1), ("USR1", 0)];
    for (round, (signal, rank)) in kinds.into_iter().cycle().take(rounds()).enumerate() {
        let before = lines(&run);
        let mut child = job(&run).spawn().unwrap();
        let pid = rank_pid(&run, rank, &mut child);
        if signal != "KILL" {
            // A rank takes signals once training has started: wait for this job's updates.
            let start = Instant::now();
            while lines(&run) <= before && child.try_wait().unwrap().is_none() {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "no update in 60 s"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis((seed >> 33) % 400));
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .unwrap();
        let o = child.wait_with_output().unwrap();
        println!(
            "\n  round {round}: SIG{signal} to rank {rank}: job {}",
            o.status
        );
        if !sent.success() {
            // The rank had already ended: the job must have finished.
            assert!(o.status.success(), "{}", show(&o));
            continue;
        }
        if o.status.success() {
            // Exit 0 only for a finished job.
            assert_eq!(lines(&run) as u64, updates(), "{}", show(&o));
        } else if signal != "KILL" {
            // Both ranks stopped after the same update (their checkpoint shards agree) and
            // exited 75.
            assert_eq!(o.status.code(), Some(75), "{}", show(&o));
        }
    }
    for out in [&run, &reference] {
        let o = job(out).output().unwrap();
        assert!(o.status.success(), "{}", show(&o));
    }
    assert_eq!(learning_metrics(&run), learning_metrics(&reference));
    assert!(final_tensors(&run) == final_tensors(&reference));
}
