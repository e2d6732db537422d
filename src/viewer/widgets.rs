//! The side panel's small drawing helpers: labels, value bars, swatches and the observation
//! image, shared by every section of the panel.

use eframe::egui::{self, Color32, RichText, Sense, StrokeKind};

use super::obs::ObsImage;
use super::source::Details;
use crate::layout::Layout;

/// An egui colour from RGB bytes.
pub(super) fn color(c: [u8; 3]) -> Color32 {
    Color32::from_rgb(c[0], c[1], c[2])
}

/// "2: evader (learner)".
pub(super) fn slot_label(layout: &Layout, s: usize) -> String {
    let kind = layout.slot_kind.get(s).map_or("?", |k| k.name());
    let control = match layout.slot_control.get(s) {
        Some(crate::scenario::Control::Learner) => "learner",
        Some(crate::scenario::Control::RandomWalk) => "random walk",
        None => "?",
    };
    format!("{s}: {kind} ({control})")
}

pub(super) fn action_names(layout: &Layout) -> Vec<String> {
    // The substrate's names (a matrix game's own, where it has them), as `check --explain`.
    layout.scenario.action_names()
}

pub(super) fn name(names: &[String], a: usize) -> String {
    names
        .get(a)
        .cloned()
        .unwrap_or_else(|| format!("action {a}"))
}

/// A horizontal bar filled to `frac` with `text` over it.
pub(super) fn bar(ui: &mut egui::Ui, frac: f32, text: &str, fill: Color32) {
    let width = ui.available_width().clamp(120.0, 300.0);
    let (rect, _) = ui.allocate_exact_size(egui::vec2(width, 16.0), Sense::hover());
    let painter = ui.painter();
    painter.rect_filled(rect, 2.0, ui.visuals().extreme_bg_color);
    let frac = if frac.is_finite() {
        frac.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mut filled = rect;
    filled.set_width(rect.width() * frac);
    painter.rect_filled(filled, 2.0, fill);
    painter.text(
        rect.left_center() + egui::vec2(4.0, 0.0),
        egui::Align2::LEFT_CENTER,
        text,
        egui::FontId::proportional(12.0),
        ui.visuals().strong_text_color(),
    );
}

pub(super) fn q_bars(ui: &mut egui::Ui, q: &[f32], names: &[String]) {
    let finite = q.iter().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f32::INFINITY, f32::min);
    let hi = finite.fold(f32::NEG_INFINITY, f32::max);
    let best = crate::train::kit::explore::argmax(q) as usize;
    for (a, &v) in q.iter().enumerate() {
        let frac = if hi > lo { (v - lo) / (hi - lo) } else { 1.0 };
        // Keep the smallest visible.
        let frac = 0.05 + 0.95 * frac;
        let fill = if a == best {
            Color32::from_rgb(60, 150, 80)
        } else {
            Color32::from_rgb(90, 110, 140)
        };
        let mark = if a == best { "  (greedy)" } else { "" };
        bar(ui, frac, &format!("{}: {v:.3}{mark}", name(names, a)), fill);
    }
}

pub(super) fn prediction_bars(
    ui: &mut egui::Ui,
    details: &Details,
    s: usize,
    layout: &Layout,
    names: &[String],
    colors: &[[u8; 3]],
    missing: &str,
) {
    let (n, a) = (layout.learners, layout.actions);
    let Some(p) = details.predictions.get(s).filter(|p| !p.is_empty()) else {
        if !details.predictions.is_empty() || n < 2 {
            return;
        }
        ui.label(RichText::new(missing).weak());
        return;
    };
    if n < 2 || a == 0 || p.len() != (n - 1) * a {
        return;
    }
    ui.label(RichText::new("opponent model: predicted actions of the others").strong());
    let others = (0..n).filter(|&j| j != s);
    for (k, j) in others.enumerate() {
        let c = color(colors.get(j).copied().unwrap_or([128, 128, 128]));
        ui.label(RichText::new(format!("agent {j}")).color(c));
        let probs = &p[k * a..(k + 1) * a];
        let best = crate::train::kit::explore::argmax(probs) as usize;
        for (act, &v) in probs.iter().enumerate() {
            let fill = if act == best {
                c
            } else {
                c.gamma_multiply(0.55)
            };
            bar(ui, v, &format!("{}: {v:.2}", name(names, act)), fill);
        }
    }
}

/// A small square of colour `c` (the default fonts have no square glyph).
pub(super) fn swatch(ui: &mut egui::Ui, c: Color32) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(10.0, 10.0), Sense::hover());
    ui.painter().rect_filled(rect, 1.0, c);
    ui.painter().rect_stroke(
        rect,
        1.0,
        egui::Stroke::new(1.0, Color32::from_gray(90)),
        StrokeKind::Inside,
    );
}

pub(super) fn draw_obs(ui: &mut egui::Ui, img: &ObsImage) {
    let width = ui.available_width().clamp(80.0, 300.0);
    let cell = (width / img.cols.max(1) as f32).clamp(3.0, 18.0);
    let size = egui::vec2(cell * img.cols as f32, cell * img.rows as f32);
    let (rect, _) = ui.allocate_exact_size(size, Sense::hover());
    let painter = ui.painter();
    for (i, &c) in img.cells.iter().enumerate() {
        let (x, y) = ((i % img.cols.max(1)) as f32, (i / img.cols.max(1)) as f32);
        let r = egui::Rect::from_min_size(
            rect.min + egui::vec2(x * cell, y * cell),
            egui::vec2(cell, cell),
        );
        painter.rect_filled(r.shrink(0.5), 0.0, c);
    }
    if let Some((x, y)) = img.observer {
        let r = egui::Rect::from_min_size(
            rect.min + egui::vec2(x as f32 * cell, y as f32 * cell),
            egui::vec2(cell, cell),
        );
        painter.rect_stroke(
            r,
            0.0,
            egui::Stroke::new(2.0, Color32::BLACK),
            StrokeKind::Inside,
        );
    }
    ui.horizontal_wrapped(|ui| {
        for (c, what) in &img.legend {
            swatch(ui, *c);
            ui.label(RichText::new(what).small());
        }
    });
    for note in &img.notes {
        ui.label(RichText::new(note).small());
    }
}

/// A small line chart of `values` (oldest left), scaled to their maximum.
pub(super) fn sparkline(ui: &mut egui::Ui, values: &[f32]) {
    let width = ui.available_width().clamp(120.0, 300.0);
    let (rect, _) = ui.allocate_exact_size(egui::vec2(width, 40.0), Sense::hover());
    let painter = ui.painter();
    painter.rect_filled(rect, 2.0, ui.visuals().extreme_bg_color);
    let top = values
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0f32, f32::max);
    if values.len() < 2 || top <= 0.0 {
        return;
    }
    let step = rect.width() / (values.len() - 1) as f32;
    let points: Vec<egui::Pos2> = values
        .iter()
        .enumerate()
        .map(|(k, v)| {
            let y = if v.is_finite() { v / top } else { 0.0 };
            egui::pos2(
                rect.left() + k as f32 * step,
                rect.bottom() - y * (rect.height() - 4.0) - 2.0,
            )
        })
        .collect();
    painter.add(egui::Shape::line(
        points,
        egui::Stroke::new(1.5, ui.visuals().strong_text_color()),
    ));
}
