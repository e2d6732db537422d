//! gridarena's aggregates against rliable 1.2.0's own outputs on the same score matrices
//! (tests/data/rliable, written by python/scripts/rliable_sample.py): point estimates equal to
//! rounding, stratified bootstrap intervals within bootstrap error, performance profiles and
//! the probability of improvement; then the report command on those scores.

use std::path::PathBuf;

use gridarena::aggregate::estimators::{Metric, Scores, score_distribution};
use gridarena::aggregate::{Bootstrap, probability_of_improvement};
use proptest::prelude::*;

fn cases() -> Vec<(String, serde_json::Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/rliable");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (p.file_name().unwrap().to_string_lossy().to_string(), v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(out.len(), 3, "the committed rliable samples");
    out
}

fn scores(v: &serde_json::Value) -> Scores {
    let rows: Vec<Vec<f64>> = serde_json::from_value(v.clone()).unwrap();
    Scores::from_rows(&rows).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + b.abs())
}

/// An interval end agrees when the two lie within `tol` of the interval's width (both are
/// percentiles of 20,000 bootstrap samples: their own error is well under 1% of the width).
fn near(ours: f64, theirs: f64, width: f64, tol: f64, what: &str) {
    assert!(
        (ours - theirs).abs() <= tol * width + 1e-9,
        "{what}: ours {ours}, rliable's {theirs} (width {width})"
    );
}

#[test]
fn point_estimates_equal_rliables() {
    for (case, v) in cases() {
        for (alg, s) in v["scores"].as_object().unwrap() {
            let s = scores(s);
            let want = &v["aggregates"][alg];
            for (m, key) in [
                (Metric::Iqm, "iqm"),
                (Metric::Median, "median"),
                (Metric::Mean, "mean"),
                (Metric::OptimalityGap, "optimality_gap"),
            ] {
                let theirs = want[key]["point"].as_f64().unwrap();
                assert!(
                    close(m.of(&s), theirs),
                    "{case} {alg} {key}: {} vs {theirs}",
                    m.of(&s)
                );
            }
            let taus: Vec<f64> = serde_json::from_value(v["taus"].clone()).unwrap();
            let profile = &v["profiles"][alg]["point"];
            for (k, &tau) in taus.iter().enumerate() {
                let theirs = profile[k].as_f64().unwrap();
                assert!(
                    close(score_distribution(&s, tau), theirs),
                    "{case} {alg} profile at {tau}"
                );
            }
        }
        for p in v["improvement"].as_array().unwrap() {
            let (x, y) = (p["x"].as_str().unwrap(), p["y"].as_str().unwrap());
            let ours =
                probability_of_improvement(&scores(&v["scores"][x]), &scores(&v["scores"][y]))
                    .unwrap();
            let theirs = p["point"].as_f64().unwrap();
            assert!(
                close(ours, theirs),
                "{case} P({x} > {y}): {ours} vs {theirs}"
            );
        }
    }
}

#[test]
fn bootstrap_intervals_agree_with_rliables_within_bootstrap_error() {
    let boot = Bootstrap {
        reps: 20_000,
        size: 0.95,
        seed: 11,
    };
    for (case, v) in cases() {
        assert_eq!(v["reps"], 20_000);
        for (alg, s) in v["scores"].as_object().unwrap() {
            let s = scores(s);
            for (m, key) in [
                (Metric::Iqm, "iqm"),
                (Metric::Median, "median"),
                (Metric::Mean, "mean"),
                (Metric::OptimalityGap, "optimality_gap"),
            ] {
                let want = &v["aggregates"][alg][key];
                let (lo, hi) = (want["lo"].as_f64().unwrap(), want["hi"].as_f64().unwrap());
                let e = boot.estimate(&s, |x| m.of(x));
                let what = format!("{case} {alg} {key}");
                near(e.lo, lo, hi - lo, 0.03, &what);
                near(e.hi, hi, hi - lo, 0.03, &what);
            }
        }
        // 4,000 samples there: looser, and a profile's ends move in steps of 1 / (runs x tasks).
        let boot = Bootstrap {
            reps: 4_000,
            ..boot
        };
        let taus: Vec<f64> = serde_json::from_value(v["taus"].clone()).unwrap();
        for (alg, s) in v["scores"].as_object().unwrap() {
            let s = scores(s);
            let step = 1.0 / s.all().len() as f64;
            let t = taus.clone();
            let ours = boot.estimate_many(&s, move |x| {
                t.iter().map(|&tau| score_distribution(x, tau)).collect()
            });
            let want = &v["profiles"][alg];
            for (k, e) in ours.iter().enumerate() {
                let (lo, hi) = (
                    want["lo"][k].as_f64().unwrap(),
                    want["hi"][k].as_f64().unwrap(),
                );
                assert!(
                    (e.lo - lo).abs() <= step + 1e-9 && (e.hi - hi).abs() <= step + 1e-9,
                    "{case} {alg} profile {k}: ours [{}, {}], rliable's [{lo}, {hi}]",
                    e.lo,
                    e.hi
                );
            }
        }
        for p in v["improvement"].as_array().unwrap() {
            let (x, y) = (p["x"].as_str().unwrap(), p["y"].as_str().unwrap());
            let (a, b) = (scores(&v["scores"][x]), scores(&v["scores"][y]));
            let e = boot.estimate_pair(&a, &b, |p, q| probability_of_improvement(p, q).unwrap());
            let (lo, hi) = (p["lo"].as_f64().unwrap(), p["hi"].as_f64().unwrap());
            let what = format!("{case} P({x} > {y})");
            near(e.lo, lo, hi - lo, 0.06, &what);
            near(e.hi, hi, hi - lo, 0.06, &what);
        }
    }
}

#[test]
fn bad_score_matrices_are_refused() {
    assert!(Scores::from_rows(&[]).is_err());
    assert!(Scores::from_rows(&[vec![]]).is_err());
    assert!(
        Scores::from_rows(&[vec![1.0, 2.0], vec![1.0]])
            .unwrap_err()
            .to_string()
            .contains("run 1 has 1 scores")
    );
    assert!(
        Scores::from_rows(&[vec![f64::NAN]])
            .unwrap_err()
            .to_string()
            .contains("finite")
    );
    let a = Scores::from_rows(&[vec![1.0, 2.0]]).unwrap();
    let b = Scores::from_rows(&[vec![1.0]]).unwrap();
    assert!(probability_of_improvement(&a, &b).is_err());
}

proptest! {
    #[test]
    fn a_constant_matrix_has_that_constant_for_every_metric(c in -5.0f64..5.0, runs in 1usize..8, tasks in 1usize..6) {
        let s = Scores::from_rows(&vec![vec![c; tasks]; runs]).unwrap();
        for m in [Metric::Iqm, Metric::Median, Metric::Mean] {
            prop_assert!((m.of(&s) - c).abs() < 1e-12);
            let e = Bootstrap { reps: 50, ..Bootstrap::default() }.estimate(&s, |x| m.of(x));
            prop_assert!((e.lo - c).abs() < 1e-12 && (e.hi - c).abs() < 1e-12);
        }
    }

    #[test]
    fn intervals_hold_their_point_for_means(rows in proptest::collection::vec(proptest::collection::vec(-3.0f64..3.0, 3), 2..9)) {
        let s = Scores::from_rows(&rows).unwrap();
        let e = Bootstrap { reps: 400, ..Bootstrap::default() }.estimate(&s, |x| Metric::Mean.of(x));
        prop_assert!(e.lo <= e.point + 1e-12 && e.point <= e.hi + 1e-12);
        // Improvement of x over itself is a half; over a shifted copy, 1.
        let up = Scores::from_rows(&rows.iter().map(|r| r.iter().map(|v| v + 10.0).collect()).collect::<Vec<Vec<f64>>>()).unwrap();
        prop_assert_eq!(probability_of_improvement(&s, &s).unwrap(), 0.5);
        prop_assert_eq!(probability_of_improvement(&up, &s).unwrap(), 1.0);
    }
}

#[test]
fn the_report_command_writes_the_numbers_and_figures() {
    let dir = std::env::temp_dir().join(format!("gridarena-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (_, v) = cases().into_iter().next().unwrap();
    let file = dir.join("scores.json");
    let algorithms: serde_json::Map<String, serde_json::Value> =
        v["scores"].as_object().unwrap().clone();
    std::fs::write(
        &file,
        serde_json::json!({"tasks": ["t0", "t1", "t2"], "algorithms": algorithms}).to_string(),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["report", "--reps", "200", "--scores"])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("report"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    let iqm = v["aggregates"]["A"]["iqm"]["point"].as_f64().unwrap();
    assert!(md.contains(&format!("| A | 5 | {iqm:.3} [")), "{md}");
    assert!(md.contains("200 bootstrap samples"));
    for png in ["aggregates.png", "profiles.png"] {
        assert!(
            std::fs::metadata(dir.join("report").join(png))
                .unwrap()
                .len()
                > 1000,
            "{png}"
        );
    }
    // The HTML page holds the same table and every figure inline, linking no file.
    let html = std::fs::read_to_string(dir.join("report/report.html")).unwrap();
    assert!(
        html.contains(&format!("<td>A</td><td>5</td><td>{iqm:.3} [")),
        "{html}"
    );
    assert_eq!(
        html.matches("src=\"data:image/png;base64,iVBORw0KGgo")
            .count(),
        2
    );
    assert!(!html.contains(".png\""));
    // Bad input: exit 1 with the file named, no panic, nothing written.
    std::fs::write(
        &file,
        "{\"tasks\": [\"t\"], \"algorithms\": {\"A\": [[1.0, 2.0]]}}",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["report", "--scores"])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("bad"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("scores.json")
            && stderr.contains("2 tasks")
            && !stderr.contains("panicked"),
        "{stderr}"
    );
    assert!(!dir.join("bad").exists());
}
