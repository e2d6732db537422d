//! An exact NashConv checkpoints and resumes: interrupted after any sweep (in the evaluation,
//! at a solve's last sweep, inside a best response, several times over) and resumed, it ends
//! with the bits of an uninterrupted run (NashConv, gains, values, sweep counts). A checkpoint
//! of another analysis, or a damaged one, is refused with a typed error and left as it was; and
//! the same through `gridarena eval --nashconv exact`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gridarena::analysis::TransitionModel;
use gridarena::analysis::exact::{NashConv, PolicyTable, Tolerance, nashconv};
use gridarena::analysis::partial::{PartialError, max_file_bytes, partial_path};
use gridarena::analysis::run::{AnalysisError, ExactJob, ExactOptions, exact_resumable};
use gridarena::analysis::successors::SuccessorCache;
use gridarena::scenario::{LoadedScenario, Scenario};

#[path = "common/tiny_run.rs"]
mod tiny_run;
use tiny_run::train_tiny_pursuit;

fn hidden() -> indicatif::ProgressBar {
    indicatif::ProgressBar::hidden()
}

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "gridarena-analysis-resume-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// tiny_pursuit with two learning pursuers and a learning evader, 20% slip: 512 states.
fn three_learners() -> LoadedScenario {
    let tiny = std::fs::read_to_string("tests/data/tiny_pursuit.ron").unwrap();
    let text = tiny.replace(
        "(kind: pursuer, count: 1, control: learner)",
        "(kind: pursuer, count: 2, control: learner)",
    );
    Scenario::parse(&text, "inline.ron").unwrap()
}

/// A mixed policy that differs per state and learner.
fn mixed(model: &TransitionModel, salt: usize) -> PolicyTable {
    PolicyTable::from_fn(model, |s, i, d| {
        let mut total = 0.0;
        for (a, v) in d.iter_mut().enumerate() {
            *v = 1.0 + ((s as usize * 5 + i * 7 + a * 3 + salt) % 13) as f32;
            total += *v;
        }
        d.iter_mut().for_each(|v| *v /= total);
    })
}

/// Every number of a result as bits, and the sweeps.
fn bits(r: &NashConv) -> (u64, Vec<u64>, Vec<u64>, Vec<u64>, Vec<usize>) {
    let b = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    (
        r.nashconv.to_bits(),
        b(&r.per_agent_gain),
        b(&r.policy_values),
        b(&r.best_response_values),
        r.sweeps.clone(),
    )
}

fn tol() -> Tolerance {
    Tolerance {
        delta: 1e-7,
        max_sweeps: 100_000,
    }
}

fn opts(stop_after: Option<u64>) -> ExactOptions {
    ExactOptions {
        checkpoint_every: None,
        stop_after_sweeps: stop_after,
        tol: tol(),
        ..ExactOptions::default()
    }
}

fn cache(model: &TransitionModel) -> Option<SuccessorCache> {
    Some(SuccessorCache::new(model, SuccessorCache::bytes(model) * 2))
}

/// Runs `job` to the end, stopped after each of `stops` sweeps in turn (counted per call) and
/// resumed from the checkpoint each time; returns the result and the interruptions' places.
fn interrupted(job: &ExactJob, partial: &Path, stops: &[u64]) -> (NashConv, Vec<String>) {
    let mut places = Vec::new();
    for &k in stops {
        match exact_resumable(job, cache(job.model), partial, &opts(Some(k)), &hidden()) {
            Err(AnalysisError::Interrupted { path, at }) => {
                assert_eq!(path, partial);
                assert!(partial.exists());
                places.push(at);
            }
            other => panic!("stop after {k}: {other:?}"),
        }
    }
    let r = exact_resumable(job, cache(job.model), partial, &opts(None), &hidden()).unwrap();
    assert!(!partial.exists(), "the checkpoint is removed on success");
    (r, places)
}

#[test]
fn an_interrupted_exact_nashconv_resumes_to_the_bits_of_an_uninterrupted_one() {
    let loaded = three_learners();
    let model = TransitionModel::new(&loaded, None).unwrap();
    assert_eq!((model.states(), model.learners()), (512, 3));
    let policy = mixed(&model, 0);
    let job = ExactJob {
        model: &model,
        scenario: &loaded.scenario,
        policy: &policy,
        gamma: 0.9,
        update: 0,
        agent: None,
    };
    let straight = nashconv(&model, &policy, 0.9, tol(), cache(&model), None, &hidden());
    assert!(straight.nashconv > 0.01, "{straight:?}");
    // The solves stop on the tolerance, not the sweep limit.
    assert!(
        straight.sweeps.iter().all(|&s| s > 20 && s < 1000),
        "{straight:?}"
    );
    let dir = temp("bits");
    let partial = partial_path(&dir, None);
    let plain = exact_resumable(&job, None, &partial, &opts(None), &hidden()).unwrap();
    assert_eq!(bits(&plain), bits(&straight));
    assert_eq!(plain.resumed_from, None);
    let (e, b0) = (straight.sweeps[0] as u64, straight.sweeps[1] as u64);
    let cases: Vec<(Vec<u64>, Vec<String>)> = vec![
        (vec![5], vec!["evaluation, sweep 5".into()]),
        // The evaluation's last sweep: the resume sweeps no more of it.
        (vec![e], vec![format!("evaluation, sweep {e}")]),
        (
            vec![e + 1],
            vec!["best response of learner 0, sweep 1".into()],
        ),
        // Three interruptions: the evaluation, then learner 0's last sweep, then learner 2.
        (
            vec![3, e - 3 + b0, straight.sweeps[2] as u64 + 4],
            vec![
                "evaluation, sweep 3".into(),
                format!("best response of learner 0, sweep {b0}"),
                "best response of learner 2, sweep 4".into(),
            ],
        ),
    ];
    for (stops, want) in cases {
        let (r, places) = interrupted(&job, &partial, &stops);
        assert_eq!(places, want);
        assert_eq!(bits(&r), bits(&straight), "stops {stops:?}");
        assert!(r.resumed_from.is_some());
    }
    // The file holds the values under way: [S, N] x 8 B in the evaluation, [S] in a best
    // response, and a header; never more than the preflight's figure.
    let most = max_file_bytes(512, 3);
    for (k, width) in [(2, 3), (e + 2, 1)] {
        let _ = exact_resumable(&job, cache(&model), &partial, &opts(Some(k)), &hidden());
        let len = std::fs::metadata(&partial).unwrap().len();
        assert!(
            len > 512 * width * 8 && len < 512 * width * 8 + 512 && len <= most,
            "{len}"
        );
        std::fs::remove_file(&partial).unwrap();
    }
    // One learner's analysis resumes alike (its own file name).
    let one = ExactJob {
        agent: Some(1),
        ..job
    };
    let partial1 = partial_path(&dir, Some(1));
    assert!(partial1.ends_with("nashconv_exact_agent1.partial"));
    let want = nashconv(
        &model,
        &policy,
        0.9,
        tol(),
        cache(&model),
        Some(1),
        &hidden(),
    );
    let (r, _) = interrupted(&one, &partial1, &[e + 2]);
    assert_eq!(bits(&r), bits(&want));
    let _ = std::fs::remove_dir_all(dir);
}

/// The bytes and modification time of a file.
fn snapshot(path: &Path) -> (Vec<u8>, std::time::SystemTime) {
    (
        std::fs::read(path).unwrap(),
        std::fs::metadata(path).unwrap().modified().unwrap(),
    )
}

#[test]
fn a_checkpoint_of_another_analysis_is_refused_and_left_as_it_was() {
    let loaded = three_learners();
    let model = TransitionModel::new(&loaded, None).unwrap();
    let policy = mixed(&model, 0);
    let other_policy = mixed(&model, 1);
    let job = ExactJob {
        model: &model,
        scenario: &loaded.scenario,
        policy: &policy,
        gamma: 0.9,
        update: 7,
        agent: None,
    };
    let dir = temp("mismatch");
    let partial = partial_path(&dir, None);
    assert!(matches!(
        exact_resumable(&job, None, &partial, &opts(Some(9)), &hidden()),
        Err(AnalysisError::Interrupted { .. })
    ));
    let before = snapshot(&partial);
    std::thread::sleep(Duration::from_millis(20));
    let mut other_scenario = loaded.scenario.clone();
    other_scenario.slip = 0.1;
    let others = [
        ("gamma", ExactJob { gamma: 0.95, ..job }),
        ("checkpoint update", ExactJob { update: 8, ..job }),
        (
            "policy CRC-64",
            ExactJob {
                policy: &other_policy,
                ..job
            },
        ),
        (
            "scenario CRC-64",
            ExactJob {
                scenario: &other_scenario,
                ..job
            },
        ),
        (
            "agent",
            ExactJob {
                agent: Some(0),
                ..job
            },
        ),
    ];
    for (field, other) in &others {
        match exact_resumable(other, None, &partial, &opts(None), &hidden()) {
            Err(AnalysisError::Partial(PartialError::Mismatch { field: f, .. })) => {
                assert_eq!(f, *field)
            }
            r => panic!("{field}: {r:?}"),
        }
        assert_eq!(
            snapshot(&partial),
            before,
            "{field}: the file is left as it was"
        );
    }
    let mut looser = opts(None);
    looser.tol.delta = 1e-6;
    let err = exact_resumable(&job, None, &partial, &looser, &hidden()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("tolerance is 1e-7, this one's is 1e-6") && text.contains("--fresh"),
        "{text}"
    );
    assert_eq!(snapshot(&partial), before);
    // --fresh starts over: the result of an uninterrupted run, and the file is gone.
    let gamma = ExactJob { gamma: 0.95, ..job };
    let mut fresh = opts(None);
    fresh.fresh = true;
    let r = exact_resumable(&gamma, cache(&model), &partial, &fresh, &hidden()).unwrap();
    let want = nashconv(&model, &policy, 0.95, tol(), cache(&model), None, &hidden());
    assert_eq!(bits(&r), bits(&want));
    assert_eq!(r.resumed_from, None);
    assert!(!partial.exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_truncated_or_damaged_checkpoint_is_a_typed_error_never_a_panic() {
    let loaded = three_learners();
    let model = TransitionModel::new(&loaded, None).unwrap();
    let policy = mixed(&model, 0);
    let job = ExactJob {
        model: &model,
        scenario: &loaded.scenario,
        policy: &policy,
        gamma: 0.9,
        update: 0,
        agent: None,
    };
    let dir = temp("damaged");
    let partial = partial_path(&dir, None);
    // Interrupted inside learner 1's best response: every section of the file is there.
    let straight = nashconv(&model, &policy, 0.9, tol(), cache(&model), None, &hidden());
    let k = (straight.sweeps[0] + straight.sweeps[1] + 3) as u64;
    let _ = exact_resumable(&job, cache(&model), &partial, &opts(Some(k)), &hidden());
    let good = std::fs::read(&partial).unwrap();
    let len = good.len();
    let kind = |e: &AnalysisError| match e {
        AnalysisError::Partial(PartialError::Foreign { .. }) => "foreign",
        AnalysisError::Partial(PartialError::Corrupt { what, .. }) if what == "truncated" => {
            "truncated"
        }
        AnalysisError::Partial(PartialError::Corrupt { .. }) => "corrupt",
        AnalysisError::Partial(PartialError::Mismatch { .. }) => "mismatch",
        _ => "other",
    };
    let flipped = |at: usize| {
        let mut b = good.clone();
        b[at] ^= 0x10;
        b
    };
    let mut longer = good.clone();
    longer.push(0);
    let mut flag = good.clone();
    // The evaluation flag, after magic, version, fingerprint and seconds.
    flag[12 + 80 + 8] = 7;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "foreign"),
        ("five bytes", good[..5].to_vec(), "foreign"),
        (
            "another file",
            b"GANCPARX and more bytes".to_vec(),
            "foreign",
        ),
        ("header only", good[..12].to_vec(), "truncated"),
        ("half the fingerprint", good[..50].to_vec(), "truncated"),
        ("no checksum", good[..len - 8].to_vec(), "truncated"),
        ("one byte short", good[..len - 1].to_vec(), "truncated"),
        ("half the values", good[..len / 2].to_vec(), "truncated"),
        ("a byte after", longer, "corrupt"),
        ("a value flipped", flipped(len - 100), "corrupt"),
        ("a sweep count flipped", flipped(12 + 80 + 8 + 8), "corrupt"),
        ("the evaluation flag 7", flag, "corrupt"),
        ("the gamma flipped", flipped(12 + 24 + 3), "mismatch"),
    ];
    for (what, bytes, want) in cases {
        std::fs::write(&partial, &bytes).unwrap();
        let err = exact_resumable(&job, None, &partial, &opts(None), &hidden()).unwrap_err();
        assert_eq!(kind(&err), want, "{what}: {err}");
        assert_eq!(
            std::fs::read(&partial).unwrap(),
            bytes,
            "{what}: left as it was"
        );
    }
    // Another format version.
    let mut v2 = good.clone();
    v2[8] = 2;
    std::fs::write(&partial, &v2).unwrap();
    let err = exact_resumable(&job, None, &partial, &opts(None), &hidden()).unwrap_err();
    assert!(err.to_string().contains("format version 2"), "{err}");
    // The intact file resumes.
    std::fs::write(&partial, &good).unwrap();
    let r = exact_resumable(&job, cache(&model), &partial, &opts(None), &hidden()).unwrap();
    assert_eq!(bits(&r), bits(&straight));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn eval_nashconv_exact_resumes_refuses_and_starts_fresh_through_the_cli() {
    use std::process::Command;
    let run = temp("cli");
    train_tiny_pursuit(&run, 4);
    let eval = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_gridarena"))
            .args(["eval", "--run"])
            .arg(&run)
            .args(["--nashconv", "exact", "--json", "--device", "cpu"])
            .args(["--episodes", "2"])
            .args(extra)
            .output()
            .unwrap()
    };
    let json = |out: &std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let numbers = |v: &serde_json::Value| {
        [
            "nashconv",
            "per_agent_gain",
            "policy_values",
            "best_response_values",
            "sweeps",
        ]
        .map(|k| v[k].clone())
    };
    let straight = json(&eval(&["--checkpoint-every", "0"]));
    let partial = partial_path(&run, None);
    assert!(!partial.exists());
    let result = run.join("nashconv_exact.json");
    let device = gridarena::critic::choose_device(gridarena::critic::Device::Cpu).unwrap();
    let stop = |k: u64, tol: Tolerance| {
        let opts = ExactOptions {
            stop_after_sweeps: Some(k),
            tol,
            ..ExactOptions::default()
        };
        let r = gridarena::analysis::run::exact_with(
            &run,
            &device,
            None,
            (1 << 30, None),
            false,
            &opts,
        );
        assert!(matches!(r, Err(AnalysisError::Interrupted { .. })), "{r:?}");
        assert!(partial.exists());
    };
    // Stopped after 7 sweeps of the evaluation, then resumed by the same command.
    stop(7, Tolerance::default());
    let out = eval(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let resumed = json(&out);
    assert!(
        stderr.contains("resuming from") && stderr.contains("(evaluation, sweep 7)"),
        "{stderr}"
    );
    assert_eq!(numbers(&resumed), numbers(&straight));
    assert_eq!(resumed["resumed_from"], "evaluation, sweep 7");
    assert!(!partial.exists(), "removed on success");
    // A checkpoint of another analysis (another tolerance): refused, exit 1, every file left
    // as it was; --fresh starts over and replaces it.
    stop(
        3,
        Tolerance {
            delta: 1e-6,
            max_sweeps: 100_000,
        },
    );
    let (kept, kept_result) = (snapshot(&partial), snapshot(&result));
    let out = eval(&[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nashconv_exact.partial was written for another analysis")
            && err.contains("tolerance")
            && err.contains("--fresh"),
        "{err}"
    );
    assert_eq!(snapshot(&partial), kept);
    assert_eq!(snapshot(&result), kept_result);
    let fresh = json(&eval(&["--fresh"]));
    assert_eq!(numbers(&fresh), numbers(&straight));
    assert!(fresh.get("resumed_from").is_none());
    assert!(!partial.exists());
    // `plan --nashconv exact` lists the checkpoint's size on disk: 64 states x 2 learners.
    let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["plan", "--set", "scenario=\"tests/data/tiny_pursuit.ron\""])
        .args(["--nashconv", "exact", "--json"])
        .output()
        .unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["checkpoint_file_bytes"], max_file_bytes(64, 2));
    assert!(max_file_bytes(64, 2) >= 64 * 2 * 8 && max_file_bytes(64, 2) < 64 * 2 * 8 + 512);
    let _ = std::fs::remove_dir_all(run);
}
