//! Learning-curve PNG of a run: the mean episode return and the substrate's main counter
//! (catches, coins, gifts, metabolised molecules) side by side, the loss below, against
//! environment steps labelled in k / M. With several seeds the return and the counter are the
//! across-seed mean with a shaded 95% band. A sweep also gets `sweep.png`: one return curve per
//! grid point with its seeds' band.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::run_dir::RunDir;
use crate::train::kit::stats::mean_ci;

/// Fonts tried for labels; without one the plot is drawn without text.
const FONTS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Width and height of the PNG in pixels.
pub const PLOT_SIZE: (u32, u32) = (1200, 800);

/// Updates in the trailing mean that smooths the return and the counter.
const SMOOTHING: usize = 10;

/// The substrate's main counter: a counter-name prefix and its label. The first prefix any
/// counter of the run has wins; its counters are summed (coins: own + other; gifts: every level;
/// chemistry: every rewarded `Metabolize` reaction).
const MAIN_COUNTERS: [(&str, &str); 5] = [
    ("catches", "catches"),
    ("coins_", "coins collected"),
    ("gifts_level", "gifts"),
    ("goals", "goals"),
    ("reaction_Metabolize", "metabolised molecules"),
];

/// Registers the labels' font (once per process); false when none is installed.
pub fn font_ready() -> bool {
    register_font()
}

/// Registers a font once per process (plotters keeps a `'static` reference to its bytes).
fn register_font() -> bool {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REGISTERED.get_or_init(|| {
        for path in FONTS {
            if let Ok(bytes) = std::fs::read(path) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    })
}

/// A step count with a k / M / B suffix and at most two decimals: 1_500 -> "1.5k",
/// 4_000_000 -> "4M", 2_500_000 -> "2.5M", 999 -> "999".
pub fn format_steps(x: f64) -> String {
    let (scaled, suffix) = [(1e9, "B"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(unit, _)| x.abs() >= *unit)
        .map_or((x, ""), |(unit, s)| (x / unit, s));
    let digits = format!("{scaled:.2}");
    let digits = digits.trim_end_matches('0').trim_end_matches('.');
    let digits = if digits == "-0" { "0" } else { digits };
    format!("{digits}{suffix}")
}

/// One panel's data: per update (steps, mean), and with several seeds (steps, low, high).
#[derive(Default)]
struct Curve {
    points: Vec<(f64, f64)>,
    band: Vec<(f64, f64, f64)>,
}

impl Curve {
    /// Adds a point; with `ci` a band of that half-width around it.
    fn push(&mut self, steps: f64, mean: f64, ci: Option<f64>) {
        self.points.push((steps, mean));
        if let Some(ci) = ci.filter(|c| c.is_finite()) {
            self.band.push((steps, mean - ci, mean + ci));
        }
    }

    /// The same curve, mean and band edges as a trailing mean over [`SMOOTHING`] updates.
    fn smoothed(&self) -> Curve {
        let trailing = |i: usize, value: &dyn Fn(usize) -> f64| {
            let from = i.saturating_sub(SMOOTHING - 1);
            (from..=i).map(value).sum::<f64>() / (i + 1 - from) as f64
        };
        Curve {
            points: (0..self.points.len())
                .map(|i| (self.points[i].0, trailing(i, &|j| self.points[j].1)))
                .collect(),
            band: (0..self.band.len())
                .map(|i| {
                    (
                        self.band[i].0,
                        trailing(i, &|j| self.band[j].1),
                        trailing(i, &|j| self.band[j].2),
                    )
                })
                .collect(),
        }
    }

    /// The value range over points and band (a unit range around a flat curve).
    fn range(&self) -> (f64, f64) {
        let values = self
            .points
            .iter()
            .map(|p| p.1)
            .chain(self.band.iter().flat_map(|b| [b.1, b.2]));
        let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        if !lo.is_finite() || !hi.is_finite() {
            (-1.0, 1.0)
        } else if hi > lo {
            let pad = 0.05 * (hi - lo);
            (lo - pad, hi + pad)
        } else {
            (lo - 1.0, hi + 1.0)
        }
    }
}

/// The curves of a run's `metrics.jsonl`.
struct Curves {
    returns: Curve,
    counter: Curve,
    counter_label: Option<String>,
    losses: Curve,
    seeds: usize,
}

/// The counters that make up the main counter among `names`, and its label.
fn main_counter(names: &[&str]) -> Option<(Vec<String>, String)> {
    MAIN_COUNTERS
        .iter()
        .map(|(prefix, label)| {
            let parts: Vec<String> = names
                .iter()
                .filter(|n| n.starts_with(prefix))
                .map(|n| n.to_string())
                .collect();
            (parts, label.to_string())
        })
        .find(|(parts, _)| !parts.is_empty())
        .or_else(|| {
            names
                .first()
                .map(|n| (vec![n.to_string()], n.replace('_', " ")))
        })
}

/// The sum of the `parts` counters of a counters object (`None` when it is not one).
fn counter_sum(counters: &serde_json::Value, parts: &[String]) -> Option<f64> {
    let object = counters.as_object()?;
    Some(
        parts
            .iter()
            .filter_map(|p| object.get(p).and_then(|v| v.as_f64()))
            .sum(),
    )
}

fn parse(text: &str) -> Result<Curves, String> {
    let mut curves = Curves {
        returns: Curve::default(),
        counter: Curve::default(),
        counter_label: None,
        losses: Curve::default(),
        seeds: 1,
    };
    let mut parts: Option<Vec<String>> = None;
    for (n, line) in text.lines().enumerate() {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        let steps = v["env_steps"].as_f64().unwrap_or(0.0);
        if let Some(l) = v["loss"].as_f64() {
            curves.losses.push(steps, l, None);
        }
        if parts.is_none()
            && let Some(object) = v["counters"].as_object()
        {
            let names: Vec<&str> = object.keys().map(String::as_str).collect();
            if let Some((p, label)) = main_counter(&names) {
                curves.counter_label = Some(label);
                parts = Some(p);
            }
        }
        // Multi-seed runs: the across-seed means, with their 95% intervals as bands.
        let per_seed = v["seeds_counters_per_seed"].as_array();
        if per_seed.is_some_and(|s| !s.is_empty()) {
            curves.seeds = curves.seeds.max(per_seed.map_or(1, Vec::len));
        }
        if let Some(r) = v["seeds_return_mean"].as_f64() {
            curves
                .returns
                .push(steps, r, v["seeds_return_ci95"].as_f64());
        } else if let Some(r) = v["return_mean"].as_f64() {
            curves.returns.push(steps, r, None);
        }
        let Some(parts) = &parts else { continue };
        let seed_values: Vec<f64> = per_seed
            .into_iter()
            .flatten()
            .filter_map(|c| counter_sum(c, parts))
            .collect();
        if !seed_values.is_empty() {
            let (mean, ci) = mean_ci(&seed_values);
            curves
                .counter
                .push(steps, mean, (seed_values.len() > 1).then_some(ci));
        } else if v["episodes"].as_u64().unwrap_or(0) > 0
            && let Some(c) = counter_sum(&v["counters"], parts)
        {
            curves.counter.push(steps, c, None);
        }
    }
    Ok(curves)
}

/// One panel: the raw curve faint, its smoothed mean bold over the shaded band.
fn draw_panel(
    area: &DrawingArea<BitMapBackend, Shift>,
    title: &str,
    curve: &Curve,
    smooth: bool,
    color: RGBColor,
    (x_max, text_ok): (f64, bool),
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let shown = if smooth {
        curve.smoothed()
    } else {
        Curve {
            points: curve.points.clone(),
            band: curve.band.clone(),
        }
    };
    let (lo, hi) = {
        let (a, b) = curve.range();
        let (c, d) = shown.range();
        (a.min(c), b.max(d))
    };
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65);
    if text_ok {
        builder.caption(title, ("sans-serif", 22));
    }
    let mut chart = builder
        .build_cartesian_2d(0.0..x_max, lo..hi)
        .map_err(|e| err(&e))?;
    let x_format = |x: &f64| format_steps(*x);
    let y_format = |y: &f64| {
        let s = format!("{y:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let mut mesh = chart.configure_mesh();
    mesh.light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .x_labels(6)
        .y_labels(6);
    if text_ok {
        mesh.x_desc("environment steps")
            .x_label_formatter(&x_format)
            .y_label_formatter(&y_format)
            .label_style(("sans-serif", 15));
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(|e| err(&e))?;
    if shown.band.len() > 1 {
        let outline: Vec<(f64, f64)> = shown
            .band
            .iter()
            .map(|b| (b.0, b.2))
            .chain(shown.band.iter().rev().map(|b| (b.0, b.1)))
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(
                outline,
                color.mix(0.18).filled(),
            )))
            .map_err(|e| err(&e))?;
    }
    if smooth {
        chart
            .draw_series(LineSeries::new(
                curve.points.iter().copied(),
                color.mix(0.3),
            ))
            .map_err(|e| err(&e))?;
    }
    chart
        .draw_series(LineSeries::new(
            shown.points.iter().copied(),
            color.stroke_width(2),
        ))
        .map_err(|e| err(&e))?;
    Ok(())
}

/// Reads `metrics.jsonl` of a run and writes `learning_curve.png` beside it (atomically).
/// Returns the PNG's path.
pub fn plot_run(run: &Path) -> Result<std::path::PathBuf, String> {
    let text = std::fs::read_to_string(RunDir::metrics_file(run))
        .map_err(|e| format!("{}: {e}", RunDir::metrics_file(run).display()))?;
    let curves = parse(&text)?;
    if curves.returns.points.is_empty() && curves.losses.points.is_empty() {
        return Err("no metrics to plot yet".into());
    }
    let text_ok = register_font();
    let out = RunDir::curve_file(run);
    let tmp = run.join(".learning_curve.tmp.png");
    {
        let root = BitMapBackend::new(&tmp, PLOT_SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (top, bottom) = root.split_vertically(PLOT_SIZE.1 * 5 / 9);
        let (left, right) = top.split_horizontally(PLOT_SIZE.0 / 2);
        let x_max = [&curves.returns, &curves.counter, &curves.losses]
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.0))
            .fold(1.0, f64::max);
        let of_seeds = if curves.seeds > 1 {
            format!(" ({} seeds, 95% band)", curves.seeds)
        } else {
            String::new()
        };
        let counter_title = curves
            .counter_label
            .as_deref()
            .map(|l| format!("{l} per episode{of_seeds}"));
        let panels = [
            (
                &left,
                Some(format!("mean episode return{of_seeds}")),
                &curves.returns,
                true,
                RGBColor(31, 119, 180),
            ),
            (
                &right,
                counter_title,
                &curves.counter,
                true,
                RGBColor(44, 160, 44),
            ),
            (
                &bottom,
                Some("loss".to_string()),
                &curves.losses,
                false,
                RGBColor(214, 39, 40),
            ),
        ];
        for (area, title, curve, smooth, color) in panels {
            let Some(title) = title else { continue };
            if curve.points.is_empty() {
                continue;
            }
            draw_panel(area, &title, curve, smooth, color, (x_max, text_ok))?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    std::fs::rename(&tmp, &out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// Colours of a sweep plot's grid points and of the report's series (cycled).
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// Each grid point's curve of `metrics.jsonl` text: per update, the mean return over the point's
/// seeds that finished episodes, with the 95% band when two or more did.
fn sweep_curves(text: &str, points: &[Vec<usize>]) -> Result<Vec<Curve>, String> {
    let mut curves: Vec<Curve> = points.iter().map(|_| Curve::default()).collect();
    for (n, line) in text.lines().enumerate() {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        let steps = v["env_steps"].as_f64().unwrap_or(0.0);
        let Some(per) = v["seeds_return_per_seed"].as_array() else {
            continue;
        };
        for (curve, members) in curves.iter_mut().zip(points) {
            let values: Vec<f64> = members
                .iter()
                .filter_map(|&k| per.get(k).and_then(|x| x.as_f64()))
                .collect();
            if !values.is_empty() {
                let (mean, ci) = mean_ci(&values);
                curve.push(steps, mean, (values.len() > 1).then_some(ci));
            }
        }
    }
    Ok(curves)
}

/// Writes `sweep.png` beside a sweep run's `metrics.jsonl` (atomically): one smoothed return
/// curve per grid point with its seeds' 95% band, labelled with the point's values. Returns the
/// PNG's path.
pub fn plot_sweep(run: &Path) -> Result<std::path::PathBuf, String> {
    let cfg = RunDir::load_config(run).map_err(|e| e.to_string())?;
    let replicas = cfg.replicas().map_err(|e| e.to_string())?;
    let count = replicas.iter().map(|r| r.point).max().map_or(0, |p| p + 1);
    let mut points = vec![Vec::new(); count];
    let mut labels = vec![String::new(); count];
    for r in &replicas {
        points[r.point].push(r.index);
        labels[r.point] = r.point_label();
    }
    let text = std::fs::read_to_string(RunDir::metrics_file(run))
        .map_err(|e| format!("{}: {e}", RunDir::metrics_file(run).display()))?;
    let curves: Vec<Curve> = sweep_curves(&text, &points)?
        .iter()
        .map(Curve::smoothed)
        .collect();
    if curves.iter().all(|c| c.points.is_empty()) {
        return Err("no finished episodes to plot yet".into());
    }
    let x_max = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let (lo, hi) = curves
        .iter()
        .filter(|c| !c.points.is_empty())
        .map(Curve::range)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (c, d)| {
            (a.min(c), b.max(d))
        });
    let text_ok = register_font();
    let out = RunDir::sweep_plot_file(run);
    let tmp = run.join(".sweep.tmp.png");
    let err = |e: &dyn std::fmt::Display| e.to_string();
    {
        let root = BitMapBackend::new(&tmp, PLOT_SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let seeds = cfg.seeds.max(1);
        let mut builder = ChartBuilder::on(&root);
        builder
            .margin(20)
            .x_label_area_size(45)
            .y_label_area_size(65);
        if text_ok {
            builder.caption(
                format!("mean episode return per grid point ({seeds} seeds each, 95% band)"),
                ("sans-serif", 22),
            );
        }
        let mut chart = builder
            .build_cartesian_2d(0.0..x_max, lo..hi)
            .map_err(|e| err(&e))?;
        let mut mesh = chart.configure_mesh();
        mesh.light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08));
        let x_format = |x: &f64| format_steps(*x);
        if text_ok {
            mesh.x_desc("environment steps (per replica)")
                .x_label_formatter(&x_format)
                .label_style(("sans-serif", 15));
        } else {
            mesh.x_labels(0).y_labels(0);
        }
        mesh.draw().map_err(|e| err(&e))?;
        for (i, curve) in curves.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            if curve.band.len() > 1 {
                let outline: Vec<(f64, f64)> = curve
                    .band
                    .iter()
                    .map(|b| (b.0, b.2))
                    .chain(curve.band.iter().rev().map(|b| (b.0, b.1)))
                    .collect();
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        outline,
                        color.mix(0.12).filled(),
                    )))
                    .map_err(|e| err(&e))?;
            }
            let series = chart
                .draw_series(LineSeries::new(
                    curve.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| err(&e))?;
            if text_ok {
                series.label(labels[i].clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            }
        }
        if text_ok {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .position(SeriesLabelPosition::LowerRight)
                .label_font(("sans-serif", 14))
                .draw()
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    std::fs::rename(&tmp, &out).map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_labels_use_k_and_m_suffixes() {
        assert_eq!(format_steps(0.0), "0");
        assert_eq!(format_steps(999.0), "999");
        assert_eq!(format_steps(1_000.0), "1k");
        assert_eq!(format_steps(1_500.0), "1.5k");
        assert_eq!(format_steps(250_000.0), "250k");
        assert_eq!(format_steps(2_500_000.0), "2.5M");
        assert_eq!(format_steps(4_000_000.0), "4M");
        assert_eq!(format_steps(1_234_567.0), "1.23M");
        assert_eq!(format_steps(3e9), "3B");
    }

    #[test]
    fn the_main_counter_sums_its_parts_and_falls_back_to_the_first_counter() {
        let (parts, label) = main_counter(&["coins_other", "coins_own"]).unwrap();
        assert_eq!((parts.len(), label.as_str()), (2, "coins collected"));
        let (parts, _) = main_counter(&[
            "reaction_R1x",
            "reaction_MetabolizeFood1",
            "reaction_MetabolizeXY",
        ])
        .unwrap();
        assert_eq!(parts, ["reaction_MetabolizeFood1", "reaction_MetabolizeXY"]);
        let (parts, label) = main_counter(&["chose_0", "chose_1"]).unwrap();
        assert_eq!(
            (parts, label.as_str()),
            (vec!["chose_0".to_string()], "chose 0")
        );
        assert!(main_counter(&[]).is_none());
    }

    #[test]
    fn several_seeds_give_the_counter_a_band_and_updates_without_episodes_no_point() {
        let text = [
            r#"{"env_steps":100,"loss":1.0,"episodes":0,"return_mean":null,"counters":{"catches":0.0}}"#,
            r#"{"env_steps":200,"loss":0.5,"episodes":4,"seeds_return_mean":1.0,"seeds_return_ci95":0.5,"counters":{"catches":3.0},"seeds_counters_per_seed":[{"catches":2.0},{"catches":4.0}]}"#,
        ]
        .join("\n");
        let curves = parse(&text).unwrap();
        assert_eq!(curves.seeds, 2);
        assert_eq!(curves.counter.points, [(200.0, 3.0)]);
        assert_eq!(curves.counter.band.len(), 1);
        assert!(curves.counter.band[0].1 < 3.0 && curves.counter.band[0].2 > 3.0);
        assert_eq!(curves.returns.band, [(200.0, 0.5, 1.5)]);
        assert_eq!(curves.losses.points.len(), 2);
    }
}
