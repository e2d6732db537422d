//! The report's figures, as PNG files written atomically: performance profiles with their
//! bands, the aggregate metrics' intervals, learning curves with 95% bands, a cross-play
//! heat-map and a Schelling diagram.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::bootstrap::Estimate;
use crate::population::crossplay::Crossplay;
use crate::population::schelling::Schelling;

const SIZE: (u32, u32) = (900, 600);

fn color(k: usize) -> RGBColor {
    use crate::train::run::plot::PALETTE;
    PALETTE[k % PALETTE.len()]
}

/// Draws into a temporary file beside `path` and renames it over `path`.
fn atomically(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<BitMapBackend, plotters::coord::Shift>) -> Result<(), String>,
) -> Result<PathBuf, String> {
    crate::train::plot::font_ready();
    let tmp = path.with_extension("tmp.png");
    {
        let root = BitMapBackend::new(&tmp, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        draw(&root)?;
        root.present().map_err(|e| e.to_string())?;
    }
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.to_path_buf())
}

fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.08).max(1e-6);
    (lo - pad, hi + pad)
}

/// One curve per series `(name, [(x, estimate)])` with its interval as a band.
pub fn bands(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, Estimate)>)],
) -> Result<PathBuf, String> {
    let xs = span(series.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x)));
    let ys = span(
        series
            .iter()
            .flat_map(|(_, p)| p.iter().flat_map(|(_, e)| [e.lo, e.hi])),
    );
    atomically(path, SIZE, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(xs.0..xs.1, ys.0..ys.1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .draw()
            .map_err(|e| e.to_string())?;
        for (k, (name, points)) in series.iter().enumerate() {
            let c = color(k);
            let mut band: Vec<(f64, f64)> = points.iter().map(|(x, e)| (*x, e.hi)).collect();
            band.extend(points.iter().rev().map(|(x, e)| (*x, e.lo)));
            chart
                .draw_series(std::iter::once(Polygon::new(band, c.mix(0.2).filled())))
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|(x, e)| (*x, e.point)),
                    c.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())
    })
}

/// The aggregate metrics: one panel per metric, one interval per algorithm.
pub fn intervals(
    path: &Path,
    metrics: &[(String, Vec<(String, Estimate)>)],
) -> Result<PathBuf, String> {
    let algorithms = metrics.first().map_or(0, |(_, v)| v.len());
    let size = (
        300 * metrics.len().max(1) as u32,
        80 + 50 * algorithms.max(1) as u32,
    );
    atomically(path, size, |root| {
        let panels = root.split_evenly((1, metrics.len().max(1)));
        for (k, (panel, (metric, values))) in panels.iter().zip(metrics).enumerate() {
            let first = k == 0;
            let xs = span(values.iter().flat_map(|(_, e)| [e.lo, e.hi]));
            let n = values.len() as f64;
            let mut chart = ChartBuilder::on(panel)
                .caption(metric, ("sans-serif", 18))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(if first { 90 } else { 10 })
                .build_cartesian_2d(xs.0..xs.1, -0.5..n - 0.5)
                .map_err(|e| e.to_string())?;
            let names: Vec<String> = values.iter().map(|(a, _)| a.clone()).collect();
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(values.len())
                .y_label_formatter(&|y| {
                    let k = y.round();
                    if first && (y - k).abs() < 1e-6 && k >= 0.0 {
                        names.get(k as usize).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    }
                })
                .x_labels(4)
                .draw()
                .map_err(|e| e.to_string())?;
            for (k, (_, e)) in values.iter().enumerate() {
                let y = k as f64;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(e.lo, y - 0.25), (e.hi, y + 0.25)],
                        color(k).mix(0.6).filled(),
                    )))
                    .map_err(|e| e.to_string())?;
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(e.point, y - 0.3), (e.point, y + 0.3)],
                        BLACK.stroke_width(2),
                    )))
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    })
}

/// A cross-play matrix as a heat-map with each cell's value written in it.
pub fn heatmap(path: &Path, m: &Crossplay) -> Result<PathBuf, String> {
    let (rows, cols) = (m.rows.len(), m.cols.len());
    let (lo, hi) = span(m.mean.iter().flatten().copied());
    let cell = 90u32;
    let size = (220 + cell * cols as u32, 140 + cell * rows as u32);
    atomically(path, size, |root| {
        let title = format!(
            "cross-play on {}: per-capita return ({} episodes per cell)",
            m.scenario, m.episodes
        );
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(160)
            .build_cartesian_2d(-0.5..cols as f64 - 0.5, -0.5..rows as f64 - 0.5)
            .map_err(|e| e.to_string())?;
        let (rn, cn) = (m.rows.clone(), m.cols.clone());
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(cols + 1)
            .y_labels(rows + 1)
            .x_label_formatter(&|x| {
                cn.get(x.floor() as usize)
                    .filter(|_| x.fract() == 0.0)
                    .cloned()
                    .unwrap_or_default()
            })
            .y_label_formatter(&|y| {
                let r = rows as f64 - 1.0 - y.floor();
                rn.get(r as usize)
                    .filter(|_| y.fract() == 0.0 && r >= 0.0)
                    .cloned()
                    .unwrap_or_default()
            })
            .x_desc(&m.col_population)
            .y_desc(&m.row_population)
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, row) in m.mean.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
                let fill = RGBColor(
                    (255.0 - 200.0 * t) as u8,
                    (255.0 - 120.0 * t) as u8,
                    (255.0 - 40.0 * t) as u8,
                );
                let y = (rows - 1 - i) as f64;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(j as f64 - 0.5, y - 0.5), (j as f64 + 0.5, y + 0.5)],
                        fill.filled(),
                    )))
                    .map_err(|e| e.to_string())?;
                chart
                    .draw_series(std::iter::once(Text::new(
                        format!("{v:.2}"),
                        (j as f64 - 0.2, y + 0.1),
                        ("sans-serif", 15),
                    )))
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    })
}

/// A Schelling diagram: a cooperator's and a defector's return against the number of other
/// cooperators, with 95% bands.
pub fn schelling(path: &Path, s: &Schelling) -> Result<PathBuf, String> {
    let side = |coop: bool| -> Vec<(f64, Estimate)> {
        s.points
            .iter()
            .map(|p| {
                let (m, c) = match coop {
                    true => (p.cooperator_return, p.cooperator_ci95),
                    false => (p.defector_return, p.defector_ci95),
                };
                let c = if c.is_finite() { c } else { 0.0 };
                (
                    p.others_cooperating as f64,
                    Estimate {
                        point: m,
                        lo: m - c,
                        hi: m + c,
                    },
                )
            })
            .collect()
    };
    bands(
        path,
        &format!("Schelling diagram: {}", s.scenario),
        "other players cooperating",
        "return of the player",
        &[
            (format!("cooperates ({})", s.cooperator), side(true)),
            (format!("defects ({})", s.defector), side(false)),
        ],
    )
}
