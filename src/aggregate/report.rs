//! `gridarena report`: score matrices from score files (`scores.json`: `{"tasks": [...],
//! "algorithms": {"name": [[runs x tasks]]}}`, as `gridarena eval --scenario-set --out` writes)
//! or from run directories (each replica's final return, or a counter, per algorithm and
//! scenario), the aggregate estimates with their stratified bootstrap intervals, performance
//! profiles and the probability of improvement of every pair, written as `report.md` with its
//! figures beside it (and `report.json`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::bootstrap::{Bootstrap, Estimate};
use super::estimators::{Metric, Scores, probability_of_improvement, score_distribution};
use super::figures;

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read or written.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Scores that cannot be aggregated.
    #[error("{0}")]
    Invalid(String),
}

fn file_error(path: &Path, reason: impl ToString) -> ReportError {
    ReportError::File {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// A score file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScoreFile {
    /// Task names (the columns).
    pub tasks: Vec<String>,
    /// Per algorithm, its `runs x tasks` scores.
    pub algorithms: BTreeMap<String, Vec<Vec<f64>>>,
}

/// A learning curve: `(env steps, score per replica)` per update.
pub type Curve = Vec<(f64, Vec<f64>)>;

/// The score matrices of a report: the tasks, and each algorithm's scores.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Task names.
    pub tasks: Vec<String>,
    /// Algorithms and their scores, in name order.
    pub algorithms: BTreeMap<String, Scores>,
    /// Learning curves from run directories: per task, per algorithm, `(env steps, return per
    /// replica)` per update.
    pub curves: BTreeMap<String, BTreeMap<String, Curve>>,
}

impl Table {
    /// Adds a score file's algorithms (same tasks as those already there).
    pub fn add_file(&mut self, path: &Path) -> Result<(), ReportError> {
        let text = std::fs::read_to_string(path).map_err(|e| file_error(path, e))?;
        let f: ScoreFile = serde_json::from_str(&text).map_err(|e| file_error(path, e))?;
        self.merge(&f.tasks, f.algorithms.into_iter(), path)
    }

    fn merge(
        &mut self,
        tasks: &[String],
        algorithms: impl Iterator<Item = (String, Vec<Vec<f64>>)>,
        from: &Path,
    ) -> Result<(), ReportError> {
        if self.algorithms.is_empty() && self.tasks.is_empty() {
            self.tasks = tasks.to_vec();
        } else if self.tasks != tasks {
            return Err(file_error(
                from,
                format!(
                    "tasks {:?}; the scores before it have {:?}",
                    tasks, self.tasks
                ),
            ));
        }
        for (name, rows) in algorithms {
            if self.algorithms.contains_key(&name) {
                return Err(file_error(
                    from,
                    format!("algorithm `{name}` appears twice"),
                ));
            }
            let s = Scores::from_rows(&rows)
                .map_err(|e| file_error(from, format!("algorithm `{name}`: {e}")))?;
            if s.tasks() != tasks.len() {
                return Err(file_error(
                    from,
                    format!(
                        "algorithm `{name}` has {} tasks; the file names {}",
                        s.tasks(),
                        tasks.len()
                    ),
                ));
            }
            self.algorithms.insert(name, s);
        }
        Ok(())
    }

    /// Adds run directories: each replica's score is the mean over the last `last` updates of
    /// its per-update `score` (`return` or a `+`-joined sum of counters); runs are grouped by
    /// `label` (default: the run's algorithm) and their scenario is the task.
    pub fn add_runs(
        &mut self,
        runs: &[(Option<String>, PathBuf)],
        score: &str,
        last: usize,
    ) -> Result<(), ReportError> {
        // label -> task -> replica scores
        let mut grouped: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
        for (label, run) in runs {
            let (algo, task, curve) = read_run(run, score)?;
            let label = label.clone().unwrap_or(algo);
            let replicas = curve.last().map_or(0, |(_, v)| v.len());
            let tail = &curve[curve.len().saturating_sub(last.max(1))..];
            for r in 0..replicas {
                let v: Vec<f64> = tail
                    .iter()
                    .map(|(_, x)| x[r])
                    .filter(|x| x.is_finite())
                    .collect();
                if v.is_empty() {
                    return Err(file_error(
                        run,
                        format!(
                            "replica {r} finished no episode in its last {} updates",
                            tail.len()
                        ),
                    ));
                }
                grouped
                    .entry(label.clone())
                    .or_default()
                    .entry(task.clone())
                    .or_default()
                    .push(v.iter().sum::<f64>() / v.len() as f64);
            }
            self.curves.entry(task).or_default().insert(label, curve);
        }
        let tasks: Vec<String> = grouped
            .values()
            .flat_map(|t| t.keys().cloned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut algorithms = Vec::new();
        for (label, per_task) in grouped {
            let missing: Vec<&String> = tasks
                .iter()
                .filter(|t| !per_task.contains_key(*t))
                .collect();
            if !missing.is_empty() {
                return Err(ReportError::Invalid(format!(
                    "`{label}` has no run on {missing:?}: every algorithm needs every task"
                )));
            }
            // A rectangular matrix: as many runs per task as the task with the fewest.
            let n = per_task.values().map(Vec::len).min().unwrap_or(0);
            let rows = (0..n)
                .map(|r| tasks.iter().map(|t| per_task[t][r]).collect())
                .collect();
            algorithms.push((label, rows));
        }
        self.merge(&tasks, algorithms.into_iter(), Path::new("run directories"))
    }
}

/// One run's algorithm name, scenario name and per-update `(env steps, score per replica)`.
fn read_run(run: &Path, score: &str) -> Result<(String, String, Curve), ReportError> {
    let cfg = crate::train::run_dir::RunDir::load_config(run).map_err(|e| file_error(run, e))?;
    let algo = crate::train::config::algo_label(cfg.algo).to_string();
    let scenario_file = crate::train::run_dir::RunDir::scenario_file(run);
    let task = crate::scenario::Scenario::load(&scenario_file)
        .map(|l| l.scenario.name.clone())
        .map_err(|e| file_error(&scenario_file, e))?;
    let metrics = crate::train::run_dir::RunDir::metrics_file(run);
    let text = std::fs::read_to_string(&metrics).map_err(|e| file_error(&metrics, e))?;
    let counters: Vec<&str> = if score == "return" {
        Vec::new()
    } else {
        score.split('+').collect()
    };
    let mut curve = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue; // a torn last line
        };
        let steps = v["env_steps"].as_f64().unwrap_or(f64::NAN);
        let per_seed: Vec<f64> = if counters.is_empty() {
            match v["seeds_return_per_seed"].as_array() {
                Some(a) if !a.is_empty() => {
                    a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect()
                }
                _ => vec![v["return_mean"].as_f64().unwrap_or(f64::NAN)],
            }
        } else {
            let sum = |c: &serde_json::Value| -> f64 {
                counters
                    .iter()
                    .map(|k| c[*k].as_f64().unwrap_or(f64::NAN))
                    .sum()
            };
            match v["seeds_counters_per_seed"].as_array() {
                Some(a) if !a.is_empty() => a.iter().map(sum).collect(),
                _ => vec![sum(&v["counters"])],
            }
        };
        curve.push((steps, per_seed));
    }
    if curve.is_empty() {
        return Err(file_error(&metrics, "no update logged yet"));
    }
    Ok((algo, task, curve))
}

/// The computed report (`report.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Bootstrap samples per interval, and their coverage.
    pub reps: usize,
    /// Coverage of the intervals.
    pub size: f64,
    /// Tasks.
    pub tasks: Vec<String>,
    /// Per algorithm: runs, and per metric its estimate.
    pub algorithms: BTreeMap<String, (usize, BTreeMap<String, Estimate>)>,
    /// Thresholds of the performance profiles.
    pub taus: Vec<f64>,
    /// Per algorithm, the fraction of scores above each threshold.
    pub profiles: BTreeMap<String, Vec<Estimate>>,
    /// Probability that the first algorithm improves on the second.
    pub improvement: Vec<(String, String, Estimate)>,
}

/// Computes the report of `table` with `boot`'s intervals.
pub fn compute(table: &Table, boot: Bootstrap) -> Result<Report, ReportError> {
    if table.algorithms.is_empty() {
        return Err(ReportError::Invalid(
            "no scores: give score files or run directories".into(),
        ));
    }
    let all = table
        .algorithms
        .values()
        .flat_map(|s| s.all().iter().copied());
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let taus: Vec<f64> = (0..=40).map(|k| lo + (hi - lo) * k as f64 / 40.0).collect();
    let mut algorithms = BTreeMap::new();
    let mut profiles = BTreeMap::new();
    for (name, s) in &table.algorithms {
        let metrics = Metric::ALL
            .iter()
            .map(|m| (m.name().to_string(), boot.estimate(s, |x| m.of(x))))
            .collect();
        algorithms.insert(name.clone(), (s.runs(), metrics));
        let t = taus.clone();
        profiles.insert(
            name.clone(),
            boot.estimate_many(s, move |x| {
                t.iter().map(|&tau| score_distribution(x, tau)).collect()
            }),
        );
    }
    let names: Vec<&String> = table.algorithms.keys().collect();
    let mut improvement = Vec::new();
    for (i, x) in names.iter().enumerate() {
        for y in &names[i + 1..] {
            let (a, b) = (&table.algorithms[*x], &table.algorithms[*y]);
            probability_of_improvement(a, b).map_err(|e| ReportError::Invalid(e.to_string()))?;
            let e = boot.estimate_pair(a, b, |p, q| {
                probability_of_improvement(p, q).unwrap_or(f64::NAN)
            });
            improvement.push(((*x).clone(), (*y).clone(), e));
        }
    }
    Ok(Report {
        reps: boot.reps,
        size: boot.size,
        tasks: table.tasks.clone(),
        algorithms,
        taus,
        profiles,
        improvement,
    })
}

/// Writes `report.md`, `report.json`, the figures and `report.html` (self-contained: the same
/// report with the figures embedded) into `out`, drawing also the cross-play
/// and Schelling files given; returns the Markdown.
pub fn write(
    out: &Path,
    table: &Table,
    report: &Report,
    crossplay: &[PathBuf],
    schelling: &[PathBuf],
) -> Result<String, ReportError> {
    std::fs::create_dir_all(out).map_err(|e| file_error(out, e))?;
    let fig = |r: Result<PathBuf, String>, what: &str| {
        r.map_err(|e| ReportError::Invalid(format!("{what}: {e}")))
    };
    let pct = (report.size * 100.0).round();
    let mut md = String::from("# Evaluation report\n\n");
    md += &format!(
        "{} algorithms over {} tasks ({}); {pct}% stratified bootstrap intervals (percentile method) from {} bootstrap samples.\n\n",
        report.algorithms.len(),
        report.tasks.len(),
        report.tasks.join(", "),
        report.reps
    );
    md += "| algorithm | runs |";
    for m in Metric::ALL {
        md += &format!(" {} |", m.name());
    }
    md += "\n|---|---|";
    md += &"---|".repeat(Metric::ALL.len());
    md += "\n";
    for (name, (runs, metrics)) in &report.algorithms {
        md += &format!("| {name} | {runs} |");
        for m in Metric::ALL {
            let e = metrics[m.name()];
            md += &format!(" {:.3} [{:.3}, {:.3}] |", e.point, e.lo, e.hi);
        }
        md += "\n";
    }
    let metric_panels: Vec<(String, Vec<(String, Estimate)>)> = Metric::ALL
        .iter()
        .map(|m| {
            let v = report
                .algorithms
                .iter()
                .map(|(a, (_, ms))| (a.clone(), ms[m.name()]))
                .collect();
            (m.name().to_string(), v)
        })
        .collect();
    fig(
        figures::intervals(&out.join("aggregates.png"), &metric_panels),
        "aggregates.png",
    )?;
    md += "\n![aggregate metrics with their intervals](aggregates.png)\n";
    if !report.improvement.is_empty() {
        md += "\nProbability of improvement, P(X > Y), averaged over tasks:\n\n| X | Y | P(X > Y) |\n|---|---|---|\n";
        for (x, y, e) in &report.improvement {
            md += &format!(
                "| {x} | {y} | {:.3} [{:.3}, {:.3}] |\n",
                e.point, e.lo, e.hi
            );
        }
    }
    let series: Vec<(String, Vec<(f64, Estimate)>)> = report
        .profiles
        .iter()
        .map(|(a, v)| {
            (
                a.clone(),
                report.taus.iter().copied().zip(v.iter().copied()).collect(),
            )
        })
        .collect();
    fig(
        figures::bands(
            &out.join("profiles.png"),
            "performance profiles",
            "score threshold tau",
            "fraction of runs with score > tau",
            &series,
        ),
        "profiles.png",
    )?;
    md += "\nPerformance profiles (the fraction of run x task scores above each threshold):\n\n![performance profiles](profiles.png)\n";
    for (k, (task, per_algo)) in table.curves.iter().enumerate() {
        let series: Vec<(String, Vec<(f64, Estimate)>)> = per_algo
            .iter()
            .map(|(a, curve)| {
                let pts = curve
                    .iter()
                    .filter_map(|(x, v)| {
                        let v: Vec<f64> = v.iter().copied().filter(|y| y.is_finite()).collect();
                        (!v.is_empty()).then(|| {
                            let (m, c) = crate::train::mean_ci(&v);
                            let c = if c.is_finite() { c } else { 0.0 };
                            (
                                *x,
                                Estimate {
                                    point: m,
                                    lo: m - c,
                                    hi: m + c,
                                },
                            )
                        })
                    })
                    .collect();
                (a.clone(), pts)
            })
            .collect();
        let name = format!("curves_{k}.png");
        fig(
            figures::bands(
                &out.join(&name),
                &format!("learning curves: {task}"),
                "env steps",
                "score (mean over replicas, 95% band)",
                &series,
            ),
            &name,
        )?;
        md += &format!("\nLearning curves on {task}:\n\n![learning curves on {task}]({name})\n");
    }
    for (k, path) in crossplay.iter().enumerate() {
        let text = std::fs::read_to_string(path).map_err(|e| file_error(path, e))?;
        let m: crate::population::crossplay::Crossplay =
            serde_json::from_str(&text).map_err(|e| file_error(path, e))?;
        let name = format!("crossplay_{k}.png");
        fig(figures::heatmap(&out.join(&name), &m), &name)?;
        md += &format!(
            "\nCross-play on {} ({} rows, {} columns):\n\n![cross-play heat-map]({name})\n",
            m.scenario, m.row_population, m.col_population
        );
        if let Some((d, o)) = m.self_and_cross() {
            md += &format!("\nDiagonal (self-play) {d:.3}, off-diagonal (cross-play) {o:.3}.\n");
        }
    }
    for (k, path) in schelling.iter().enumerate() {
        let text = std::fs::read_to_string(path).map_err(|e| file_error(path, e))?;
        let s: crate::population::schelling::Schelling =
            serde_json::from_str(&text).map_err(|e| file_error(path, e))?;
        let name = format!("schelling_{k}.png");
        fig(figures::schelling(&out.join(&name), &s), &name)?;
        md += &format!(
            "\nSchelling diagram on {} ({} against {}): {}.\n\n![Schelling diagram]({name})\n",
            s.scenario,
            s.cooperator,
            s.defector,
            if s.is_dilemma() {
                "a social dilemma"
            } else {
                "not a social dilemma"
            }
        );
    }
    let json =
        serde_json::to_string_pretty(report).map_err(|e| ReportError::Invalid(e.to_string()))?;
    crate::atomic::write_atomic(&out.join("report.json"), json.as_bytes())
        .map_err(|e| file_error(&out.join("report.json"), e))?;
    crate::atomic::write_atomic(&out.join("report.md"), md.as_bytes())
        .map_err(|e| file_error(&out.join("report.md"), e))?;
    let page = super::html::render(&md, out, "Evaluation report")
        .map_err(|e| file_error(&out.join("report.html"), e))?;
    crate::atomic::write_atomic(&out.join("report.html"), page.as_bytes())
        .map_err(|e| file_error(&out.join("report.html"), e))?;
    Ok(md)
}
