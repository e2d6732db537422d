//! A sweep's results: each grid point's final return over its seeds, ranked, written to
//! `sweep.csv` and printed as a table; the best replica for `eval --best`.
//!
//! A replica's **final return** is the mean, over the last tenth of the run's updates (at least
//! one), of its mean learner return in the updates where it finished episodes
//! (`seeds_return_per_seed` of `metrics.jsonl`). A grid point's figure is the mean of its seeds'
//! final returns with the normal 95% interval.

use std::path::Path;

use crate::train::config::sweep::{Replica, point_label};
use crate::train::kit::stats::mean_ci;

/// One grid point's row of the ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct PointResult {
    /// Grid point index.
    pub point: usize,
    /// Its values, key to RON text.
    pub values: Vec<(String, String)>,
    /// Each seed's replica index and final return (`None`: no episode finished in the window).
    pub seeds: Vec<(usize, Option<f64>)>,
    /// Mean final return over the seeds that have one (NaN when none).
    pub mean: f64,
    /// Half-width of its 95% interval (NaN with fewer than two seeds).
    pub ci95: f64,
}

/// A sweep's grid points, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepTable {
    /// The swept keys, in grid order.
    pub keys: Vec<String>,
    /// Updates the final return averages over.
    pub window: usize,
    /// Grid points by final return, best first (points without a figure last).
    pub points: Vec<PointResult>,
}

/// Each replica's final return from the lines of `metrics.jsonl` (`None` where it finished no
/// episode in the window).
pub fn final_returns(metrics: &str, replicas: usize) -> (Vec<Option<f64>>, usize) {
    let lines: Vec<serde_json::Value> = metrics
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let window = lines.len().div_ceil(10).max(1);
    let tail = &lines[lines.len().saturating_sub(window)..];
    let finals = (0..replicas)
        .map(|k| {
            let values: Vec<f64> = tail
                .iter()
                .filter_map(|v| match v["seeds_return_per_seed"].as_array() {
                    Some(per) => per.get(k).and_then(|x| x.as_f64()),
                    // A one-replica run logs only its own return.
                    None if replicas == 1 => v["return_mean"].as_f64(),
                    None => None,
                })
                .collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        })
        .collect();
    (finals, window)
}

/// Ranks the grid points of `replicas` by the final returns in `metrics`.
pub fn rank(replicas: &[Replica], metrics: &str) -> SweepTable {
    let (finals, window) = final_returns(metrics, replicas.len());
    let points = replicas.iter().map(|r| r.point).max().map_or(0, |p| p + 1);
    let mut rows: Vec<PointResult> = (0..points)
        .map(|p| {
            let members: Vec<&Replica> = replicas.iter().filter(|r| r.point == p).collect();
            let seeds: Vec<(usize, Option<f64>)> =
                members.iter().map(|r| (r.index, finals[r.index])).collect();
            let done: Vec<f64> = seeds.iter().filter_map(|s| s.1).collect();
            let (mean, ci95) = mean_ci(&done);
            PointResult {
                point: p,
                values: members
                    .first()
                    .map(|r| r.values.clone())
                    .unwrap_or_default(),
                seeds,
                mean,
                ci95,
            }
        })
        .collect();
    // Best first; points without a figure (NaN) last, in grid order.
    rows.sort_by(|a, b| match (a.mean.is_nan(), b.mean.is_nan()) {
        (false, false) => b.mean.total_cmp(&a.mean).then(a.point.cmp(&b.point)),
        (x, y) => x.cmp(&y).then(a.point.cmp(&b.point)),
    });
    SweepTable {
        keys: replicas
            .first()
            .map(|r| r.values.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default(),
        window,
        points: rows,
    }
}

/// The ranking of the run in `run` (its `config.ron` and `metrics.jsonl`).
pub fn rank_run(run: &Path) -> Result<SweepTable, String> {
    let cfg = super::run_dir::RunDir::load_config(run).map_err(|e| e.to_string())?;
    let replicas = cfg.replicas().map_err(|e| e.to_string())?;
    let metrics =
        std::fs::read_to_string(super::run_dir::RunDir::metrics_file(run)).map_err(|e| {
            format!(
                "{}: {e}",
                super::run_dir::RunDir::metrics_file(run).display()
            )
        })?;
    Ok(rank(&replicas, &metrics))
}

/// A figure with three decimals, `-` for none.
fn figure(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "-".into()
    }
}

impl SweepTable {
    /// The best grid point's best seed: the replica `eval --best` evaluates.
    pub fn best_replica(&self) -> Option<usize> {
        let best = self.points.first().filter(|p| !p.mean.is_nan())?;
        best.seeds
            .iter()
            .filter_map(|(k, v)| v.map(|v| (*k, v)))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(k, _)| k)
    }

    /// `sweep.csv`: rank, point, one column per key, seeds, mean, ci95, the seeds' final returns
    /// (`;`-separated, empty where none).
    pub fn to_csv(&self) -> String {
        let mut out = String::from("rank,point");
        for k in &self.keys {
            out.push(',');
            out.push_str(k);
        }
        out.push_str(",seeds,final_return_mean,final_return_ci95,per_seed\n");
        for (i, p) in self.points.iter().enumerate() {
            out.push_str(&format!("{},{}", i + 1, p.point));
            for (_, v) in &p.values {
                // RON text of a number or bool has no comma or quote; quote anything else.
                if v.contains([',', '"']) {
                    out.push_str(&format!(",\"{}\"", v.replace('"', "\"\"")));
                } else {
                    out.push_str(&format!(",{v}"));
                }
            }
            let per_seed: Vec<String> = p
                .seeds
                .iter()
                .map(|(_, v)| v.map_or(String::new(), |v| format!("{v}")))
                .collect();
            let num = |x: f64| {
                if x.is_finite() {
                    format!("{x}")
                } else {
                    String::new()
                }
            };
            out.push_str(&format!(
                ",{},{},{},{}\n",
                p.seeds.len(),
                num(p.mean),
                num(p.ci95),
                per_seed.join(";")
            ));
        }
        out
    }

    /// The ranking as an aligned text table.
    pub fn render(&self) -> String {
        let mut rows = vec![vec![
            "rank".to_string(),
            "grid point".to_string(),
            "seeds".to_string(),
            format!("final return (last {} updates)", self.window),
        ]];
        for (i, p) in self.points.iter().enumerate() {
            let done = p.seeds.iter().filter(|s| s.1.is_some()).count();
            let ci = if p.ci95.is_finite() {
                format!(" ± {:.3}", p.ci95)
            } else {
                String::new()
            };
            rows.push(vec![
                (i + 1).to_string(),
                point_label(&p.values),
                format!("{done}/{}", p.seeds.len()),
                format!("{}{ci}", figure(p.mean)),
            ]);
        }
        let widths: Vec<usize> = (0..4)
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        rows.iter()
            .map(|r| {
                r.iter()
                    .zip(&widths)
                    .map(|(cell, w)| format!("{cell:<w$}"))
                    .collect::<Vec<_>>()
                    .join("  ")
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::config::RunConfig;

    fn line(per_seed: &[Option<f64>]) -> String {
        serde_json::json!({ "seeds_return_per_seed": per_seed }).to_string()
    }

    #[test]
    fn points_rank_by_the_mean_final_return_of_their_seeds() {
        let mut cfg = RunConfig {
            seeds: 2,
            ..RunConfig::default()
        };
        let (k, v) = crate::train::config::sweep::parse_axis("lr=[1e-3, 5e-4, 1e-4]").unwrap();
        cfg.sweep.insert(k, v);
        let replicas = cfg.replicas().unwrap();
        // 20 updates: the window is the last 2. Point 0 (lr 1e-3): 1.0 and 3.0; point 1: 5.0 and
        // 7.0 (with a missing update); point 2 never finishes an episode in the window.
        let mut lines: Vec<String> = (0..18).map(|_| line(&[Some(100.0); 6])).collect();
        lines.push(line(&[Some(0.0), Some(2.0), Some(5.0), None, None, None]));
        lines.push(line(&[
            Some(2.0),
            Some(4.0),
            Some(5.0),
            Some(7.0),
            None,
            None,
        ]));
        let table = rank(&replicas, &lines.join("\n"));
        assert_eq!(table.window, 2);
        let order: Vec<usize> = table.points.iter().map(|p| p.point).collect();
        assert_eq!(order, vec![1, 0, 2]);
        assert_eq!(table.points[0].mean, 6.0);
        assert_eq!(table.points[1].mean, 2.0);
        assert!((table.points[0].ci95 - 1.96).abs() < 1e-12);
        assert!((table.points[1].ci95 - 1.96).abs() < 1e-12);
        assert!(table.points[2].mean.is_nan());
        assert_eq!(table.best_replica(), Some(3));
        let csv = table.to_csv();
        assert_eq!(
            csv.lines().next().unwrap(),
            "rank,point,lr,seeds,final_return_mean,final_return_ci95,per_seed"
        );
        assert_eq!(csv.lines().nth(1).unwrap(), "1,1,0.0005,2,6,1.96,5;7");
        assert!(csv.lines().nth(3).unwrap().starts_with("3,2,0.0001,2,,,;"));
        let text = table.render();
        assert!(
            text.contains("lr=0.0005") && text.contains("6.000"),
            "{text}"
        );
    }
}
