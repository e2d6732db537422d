//! Learning-curve PNG of a run (mean episode return and loss against environment steps).

use std::path::Path;

use plotters::prelude::*;

/// Fonts tried for labels; without one the plot is drawn without text.
const FONTS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

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

/// Reads `metrics.jsonl` of a run and writes `learning_curve.png` beside it (atomically).
/// Returns the PNG's path.
pub fn plot_run(run: &Path) -> Result<std::path::PathBuf, String> {
    let text = std::fs::read_to_string(run.join("metrics.jsonl"))
        .map_err(|e| format!("{}: {e}", run.join("metrics.jsonl").display()))?;
    let mut returns = Vec::new();
    let mut band = Vec::new();
    let mut losses = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let steps = v["env_steps"].as_f64().unwrap_or(0.0);
        // Multi-seed runs: the across-seed mean, with its 95% interval as a band.
        if let Some(r) = v["seeds_return_mean"].as_f64() {
            returns.push((steps, r));
            if let Some(ci) = v["seeds_return_ci95"].as_f64() {
                band.push((steps, r - ci, r + ci));
            }
        } else if let Some(r) = v["return_mean"].as_f64() {
            returns.push((steps, r));
        }
        if let Some(l) = v["loss"].as_f64() {
            losses.push((steps, l));
        }
    }
    if returns.is_empty() && losses.is_empty() {
        return Err("no metrics to plot yet".into());
    }
    // Smooth returns with a trailing mean over 10 updates.
    let smooth: Vec<(f64, f64)> = (0..returns.len())
        .map(|i| {
            let w = &returns[i.saturating_sub(9)..=i];
            (
                returns[i].0,
                w.iter().map(|p| p.1).sum::<f64>() / w.len() as f64,
            )
        })
        .collect();
    let text_ok = register_font();
    let out = run.join("learning_curve.png");
    let tmp = run.join(".learning_curve.tmp.png");
    {
        let root = BitMapBackend::new(&tmp, (1000, 700)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (top, bottom) = root.split_vertically(450);
        let x_max = returns
            .iter()
            .chain(&losses)
            .map(|p| p.0)
            .fold(1.0, f64::max);
        let range = |pts: &[(f64, f64)]| {
            let lo = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
            let hi = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
            if lo.is_finite() && hi > lo {
                (lo, hi)
            } else {
                (lo.min(0.0) - 1.0, hi.max(0.0) + 1.0)
            }
        };
        for (area, pts, smooth, label, color) in [
            (&top, &returns, Some(&smooth), "mean episode return", BLUE),
            (&bottom, &losses, None, "loss", RED),
        ] {
            if pts.is_empty() {
                continue;
            }
            let with_band: Vec<(f64, f64)> = if smooth.is_some() {
                pts.iter()
                    .copied()
                    .chain(band.iter().flat_map(|b| [(b.0, b.1), (b.0, b.2)]))
                    .collect()
            } else {
                pts.to_vec()
            };
            let (lo, hi) = range(&with_band);
            let mut builder = ChartBuilder::on(area);
            builder
                .margin(15)
                .x_label_area_size(35)
                .y_label_area_size(60);
            if text_ok {
                builder.caption(label, ("sans-serif", 20));
            }
            let mut chart = builder
                .build_cartesian_2d(0.0..x_max, lo..hi)
                .map_err(|e| e.to_string())?;
            if text_ok {
                chart
                    .configure_mesh()
                    .x_desc("environment steps")
                    .draw()
                    .map_err(|e| e.to_string())?;
            } else {
                chart
                    .configure_mesh()
                    .disable_x_mesh()
                    .disable_y_mesh()
                    .x_labels(0)
                    .y_labels(0)
                    .draw()
                    .map_err(|e| e.to_string())?;
            }
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.mix(0.3)))
                .map_err(|e| e.to_string())?;
            if let Some(s) = smooth {
                chart
                    .draw_series(LineSeries::new(s.iter().copied(), color.stroke_width(2)))
                    .map_err(|e| e.to_string())?;
            }
        }
        root.present().map_err(|e| e.to_string())?;
    }
    std::fs::rename(&tmp, &out).map_err(|e| e.to_string())?;
    Ok(out)
}
