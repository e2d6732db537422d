//! TensorBoard event files (issue 16): read back with a decoder written here from the documented
//! record format (TFRecord framing with masked CRC-32C, the `Event` protobuf), not with the
//! writer's own code.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use gridarena::train::tensorboard::{EventWriter, FILE_VERSION};

#[path = "common/runs.rs"]
mod runs;
use runs::deterministic_metrics;

// ------------------------------------------------------------------------------------------
// The decoder
// ------------------------------------------------------------------------------------------

/// CRC-32C bit by bit: reflected Castagnoli polynomial 0x82f63b78, initial and final xor !0.
fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The TFRecord checksum of `bytes`.
fn masked(bytes: &[u8]) -> u32 {
    let c = crc32c(bytes);
    c.rotate_right(15).wrapping_add(0xa282_ead8)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Every record's data, both checksums checked; the file must end on a record boundary.
fn records(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        assert!(at + 12 <= bytes.len(), "partial record header at byte {at}");
        let len_bytes = &bytes[at..at + 8];
        let len = u64::from_le_bytes(len_bytes.try_into().unwrap()) as usize;
        assert_eq!(
            u32_at(bytes, at + 8),
            masked(len_bytes),
            "length CRC at {at}"
        );
        let data = &bytes[at + 12..at + 12 + len];
        assert_eq!(
            u32_at(bytes, at + 12 + len),
            masked(data),
            "data CRC at {at}"
        );
        out.push(data);
        at += 12 + len + 4;
    }
    out
}

/// A protobuf field's value.
enum Value<'a> {
    Varint(u64),
    Fixed64([u8; 8]),
    Fixed32([u8; 4]),
    Bytes(&'a [u8]),
}

fn read_varint(b: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// A message's fields in order, `(number, value)`.
fn fields(b: &[u8]) -> Vec<(u64, Value<'_>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let key = read_varint(b, &mut at);
        let value = match key & 7 {
            0 => Value::Varint(read_varint(b, &mut at)),
            1 => {
                at += 8;
                Value::Fixed64(b[at - 8..at].try_into().unwrap())
            }
            2 => {
                let len = read_varint(b, &mut at) as usize;
                at += len;
                Value::Bytes(&b[at - len..at])
            }
            5 => {
                at += 4;
                Value::Fixed32(b[at - 4..at].try_into().unwrap())
            }
            w => panic!("wire type {w}"),
        };
        out.push((key >> 3, value));
    }
    out
}

/// One decoded `Event`.
#[derive(Debug, Default)]
struct Event {
    wall_time: f64,
    step: i64,
    file_version: Option<String>,
    /// `summary.value[*]` as (tag, simple_value).
    scalars: Vec<(String, f32)>,
    /// `session_log.status`.
    session_status: Option<u64>,
}

fn event(data: &[u8]) -> Event {
    let mut e = Event::default();
    for (field, value) in fields(data) {
        match (field, value) {
            (1, Value::Fixed64(b)) => e.wall_time = f64::from_le_bytes(b),
            (2, Value::Varint(v)) => e.step = v as i64,
            (3, Value::Bytes(b)) => e.file_version = Some(String::from_utf8(b.to_vec()).unwrap()),
            (5, Value::Bytes(summary)) => {
                for (f, v) in fields(summary) {
                    let (1, Value::Bytes(value)) = (f, v) else {
                        panic!("Summary field {f}")
                    };
                    let (mut tag, mut x) = (None, None);
                    for (f, v) in fields(value) {
                        match (f, v) {
                            (1, Value::Bytes(t)) => {
                                tag = Some(String::from_utf8(t.to_vec()).unwrap())
                            }
                            (2, Value::Fixed32(b)) => x = Some(f32::from_le_bytes(b)),
                            (f, _) => panic!("Value field {f}"),
                        }
                    }
                    e.scalars.push((tag.unwrap(), x.unwrap()));
                }
            }
            (7, Value::Bytes(log)) => {
                for (f, v) in fields(log) {
                    if let (1, Value::Varint(s)) = (f, v) {
                        e.session_status = Some(s);
                    }
                }
            }
            (f, _) => panic!("Event field {f} with an unexpected wire type"),
        }
    }
    e
}

/// The events of one file, the first one checked to be the file version.
fn events(path: &Path) -> Vec<Event> {
    let bytes = std::fs::read(path).unwrap();
    let all: Vec<Event> = records(&bytes).into_iter().map(event).collect();
    assert_eq!(
        all[0].file_version.as_deref(),
        Some("brain.Event:2"),
        "{}",
        path.display()
    );
    all
}

/// The event files of a directory, in name order (TensorBoard's reading order).
fn event_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy();
        assert!(name.starts_with("events.out.tfevents."), "{name}");
    }
    files
}

/// `(step, value)` of every scalar tagged `tag`.
fn series(events: &[Event], tag: &str) -> Vec<(i64, f32)> {
    events
        .iter()
        .flat_map(|e| {
            e.scalars
                .iter()
                .filter(|(t, _)| t == tag)
                .map(|(_, v)| (e.step, *v))
        })
        .collect()
}

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("gridarena-tb-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

#[test]
fn the_decoder_knows_the_published_crc32c_check_value() {
    assert_eq!(crc32c(b"123456789"), 0xe306_9283);
}

// ------------------------------------------------------------------------------------------
// The writer
// ------------------------------------------------------------------------------------------

#[test]
fn written_scalars_read_back_with_their_tags_steps_and_values_after_every_flush() {
    let dir = temp("writer");
    let mut w = EventWriter::create(&dir).unwrap();
    assert_eq!(FILE_VERSION, "brain.Event:2");
    let long_tag = format!("counters/{}", "x".repeat(200)); // a two-byte length varint
    let written: Vec<(i64, Vec<(&str, f32)>)> = vec![
        (0, vec![("loss", 0.25), ("lr", 3e-3)]),
        (256, vec![("loss", 1.0 / 3.0), (&long_tag, -1.5e-7)]),
        (
            1 << 40,
            vec![("return/mean", f32::MIN_POSITIVE), ("epsilon", 1e30)],
        ),
    ];
    for (k, (step, scalars)) in written.iter().enumerate() {
        for (tag, v) in scalars {
            w.scalar(tag, *v);
        }
        w.write_scalars(*step).unwrap();
        // Read while the writer is still open: every update reaches the file whole.
        let got = events(w.path());
        assert_eq!(got.len(), k + 2, "the file version and {} updates", k + 1);
        let e = got.last().unwrap();
        assert_eq!(e.step, *step);
        let back: Vec<(&str, u32)> = e
            .scalars
            .iter()
            .map(|(t, v)| (t.as_str(), v.to_bits()))
            .collect();
        let sent: Vec<(&str, u32)> = scalars.iter().map(|(t, v)| (*t, v.to_bits())).collect();
        assert_eq!(back, sent, "step {step}");
    }
    w.write_scalars(7).unwrap();
    w.session_start(300).unwrap();
    let got = events(w.path());
    assert_eq!(got.len(), 5, "nothing pending writes nothing");
    assert_eq!((got[4].step, got[4].session_status), (300, Some(1)));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(got.iter().all(|e| (now - e.wall_time).abs() < 600.0));

    // A second writer in the same directory adds a file and leaves the first as it was.
    let first = std::fs::read(w.path()).unwrap();
    let w2 = EventWriter::create(&dir).unwrap();
    assert_ne!(w2.path(), w.path());
    assert_eq!(event_files(&dir).len(), 2);
    assert_eq!(std::fs::read(w.path()).unwrap(), first);
    assert_eq!(events(w2.path()).len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ------------------------------------------------------------------------------------------
// A training run
// ------------------------------------------------------------------------------------------

/// Runs `gridarena ARGS RUN` (its errors go to the test's output) and expects success.
fn gridarena(args: &[&str], run: &Path) {
    let status = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(args)
        .arg(run)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "gridarena {args:?} {}", run.display());
}

/// `gridarena train` on the coin game with a small network on the CPU, then `extra`, then
/// `--out` (the run directory follows). Coin game episodes last 16 steps: every update of 16
/// steps per arena finishes some.
fn small_coin_run<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "train",
        "--scenario",
        "assets/scenarios/coin_game.ron",
        "--device",
        "cpu",
    ];
    for s in [
        "arenas=4",
        "rollout=16",
        "minibatches=2",
        "hidden=16",
        "layers=1",
    ] {
        args.extend(["--set", s]);
    }
    args.extend_from_slice(extra);
    args.push("--out");
    args
}

#[test]
fn a_two_seed_run_writes_each_replicas_scalars_and_a_resume_adds_a_file() {
    let run = temp("train");
    gridarena(&small_coin_run(&["--seeds", "2", "--steps", "128"]), &run);
    let board = run.join("tensorboard");
    let mut dirs: Vec<_> = std::fs::read_dir(&board)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    dirs.sort();
    assert_eq!(dirs, ["replica_0", "replica_1"]);
    let metrics = deterministic_metrics(&run);
    let steps: Vec<i64> = metrics
        .iter()
        .map(|m| m["env_steps"].as_i64().unwrap())
        .collect();
    assert_eq!(steps, [64, 128]);
    let f32_of = |v: &serde_json::Value| v.as_f64().unwrap() as f32;
    for r in 0..2 {
        let files = event_files(&board.join(format!("replica_{r}")));
        assert_eq!(files.len(), 1);
        let ev = events(&files[0]);
        let loss: Vec<(i64, f32)> = metrics
            .iter()
            .map(|m| (m["env_steps"].as_i64().unwrap(), f32_of(&m["loss"])))
            .collect();
        assert_eq!(series(&ev, "loss"), loss, "replica {r}");
        let returns: Vec<(i64, f32)> = metrics
            .iter()
            .map(|m| {
                let per_seed = &m["seeds_return_per_seed"][r];
                (m["env_steps"].as_i64().unwrap(), f32_of(per_seed))
            })
            .collect();
        assert_eq!(series(&ev, "return/mean"), returns, "replica {r}");
        for tag in [
            "epsilon",
            "lr",
            "env_steps_per_s",
            "counters/coins_own",
            "counters/coins_other",
        ] {
            let s = series(&ev, tag);
            assert_eq!(
                s.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
                steps,
                "{tag}"
            );
        }
    }
    let (a, b) = (
        events(&event_files(&board.join("replica_0"))[0]),
        events(&event_files(&board.join("replica_1"))[0]),
    );
    assert_ne!(
        series(&a, "return/mean"),
        series(&b, "return/mean"),
        "two seeds, two different curves"
    );

    // Resuming adds a file per replica that starts a session after the checkpoint's steps.
    gridarena(
        &["train", "--device", "cpu", "--steps", "192", "--resume"],
        &run,
    );
    for r in 0..2 {
        let files = event_files(&board.join(format!("replica_{r}")));
        assert_eq!(files.len(), 2, "replica {r}");
        let ev = events(&files[1]);
        assert_eq!((ev[1].step, ev[1].session_status), (129, Some(1)));
        let loss = series(&ev, "loss");
        assert_eq!(loss.iter().map(|(t, _)| *t).collect::<Vec<_>>(), [192]);
    }
    std::fs::remove_dir_all(&run).unwrap();
}

#[test]
fn a_sweep_names_each_replica_by_its_values_and_logs_its_own_learning_rate() {
    let run = temp("sweep");
    let sweep = [
        "--steps",
        "128",
        "--sweep",
        "lr=[1e-3,3e-3]",
        "--sweep",
        "eps_start=[1.0,0.5]",
    ];
    gridarena(&small_coin_run(&sweep), &run);
    let board = run.join("tensorboard");
    let mut dirs: Vec<_> = std::fs::read_dir(&board)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    dirs.sort();
    assert_eq!(
        dirs,
        [
            "replica_0_eps_start=1.0_lr=0.001_seed0",
            "replica_1_eps_start=1.0_lr=0.003_seed0",
            "replica_2_eps_start=0.5_lr=0.001_seed0",
            "replica_3_eps_start=0.5_lr=0.003_seed0",
        ]
    );
    // Each replica's own lr and epsilon at the first update (no decay yet).
    for (dir, lr, eps) in [
        (&dirs[0], 1e-3f32, 1.0f32),
        (&dirs[1], 3e-3, 1.0),
        (&dirs[2], 1e-3, 0.5),
        (&dirs[3], 3e-3, 0.5),
    ] {
        let ev = events(&event_files(&board.join(dir))[0]);
        assert_eq!(series(&ev, "lr")[0], (64, lr), "{dir}");
        assert_eq!(series(&ev, "epsilon")[0], (64, eps), "{dir}");
    }
    let _ = std::fs::remove_dir_all(run);
}

/// The mean of a metrics line's `[i][k]` matrix, as the writer computes it.
fn pair_mean(m: &serde_json::Value) -> f32 {
    let all: Vec<f64> = m
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()))
        .collect();
    (all.iter().fold(0.0, |s, x| s + x) / all.len() as f64) as f32
}

#[test]
fn each_replica_logs_its_own_opponent_model_scores() {
    let run = temp("opponents");
    let args = [
        "--seeds",
        "2",
        "--steps",
        "128",
        "--set",
        "opponent_models=true",
    ];
    gridarena(&small_coin_run(&args), &run);
    let board = run.join("tensorboard");
    let metrics = deterministic_metrics(&run);
    let mut curves = Vec::new();
    for r in 0..2 {
        let files = event_files(&board.join(format!("replica_{r}")));
        let ev = events(&files[0]);
        for (tag, key) in [
            ("opponent/accuracy", "seeds_opponent_accuracy"),
            ("opponent/log_loss", "seeds_opponent_log_loss"),
        ] {
            let expected: Vec<(i64, f32)> = metrics
                .iter()
                .map(|m| (m["env_steps"].as_i64().unwrap(), pair_mean(&m[key][r])))
                .collect();
            assert_eq!(series(&ev, tag), expected, "replica {r}: {tag}");
        }
        curves.push(series(&ev, "opponent/log_loss"));
    }
    // Replica 0's scores stay where a single run's are.
    for m in &metrics {
        assert_eq!(m["opponent_log_loss"], m["seeds_opponent_log_loss"][0]);
    }
    assert_ne!(
        curves[0], curves[1],
        "two seeds' models, two different curves"
    );
    std::fs::remove_dir_all(&run).unwrap();
}
