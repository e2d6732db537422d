//! Screenshots of the window: asked for by F12, by `--screenshot` once enough frames were
//! shown, and by `--reload-shots` after each reload; written as PNG once egui delivers the
//! image.

use std::path::PathBuf;
use std::sync::Arc;

use eframe::egui;

use super::{ShotRequest, ViewerApp, lock};

/// Passes drawn after a reload before its screenshot is requested.
const SHOT_DELAY_PASSES: u32 = 3;

impl ViewerApp {
    /// With `--reload-shots`: a screenshot `NN_<what>.png` once the current state is drawn.
    pub(super) fn schedule_shot(&mut self, what: &str) {
        if let Some((dir, taken)) = &mut self.reload_shots {
            let path = dir.join(format!("{taken:02}_{what}.png"));
            *taken += 1;
            self.pending_shot = Some((path, SHOT_DELAY_PASSES));
        }
    }

    pub(super) fn request_shot(&mut self, ctx: &egui::Context, path: PathBuf, close: bool) {
        if self.in_flight.is_some() {
            self.status = "a screenshot is already being taken".into();
            return;
        }
        self.in_flight = Some(ShotRequest { path, close });
        let slot = self.image.clone();
        let again = ctx.clone();
        ctx.request_screenshot(move |img: Arc<egui::ColorImage>| {
            *lock(&slot) = Some(img);
            again.request_repaint();
        });
    }

    /// Writes a screenshot that arrived (atomically, as PNG) and prints its path.
    pub(super) fn save_screenshot(&mut self, ctx: &egui::Context) {
        let img = lock(&self.image).take();
        let Some(img) = img else {
            return;
        };
        let Some(req) = self.in_flight.take() else {
            return;
        };
        let [w, h] = img.size;
        let rgba: Vec<u8> = img
            .pixels
            .iter()
            .flat_map(|c| {
                let [r, g, b, _] = c.to_array();
                [r, g, b, 255]
            })
            .collect();
        let result = crate::render::output::png_bytes(w as u32, h as u32, &rgba)
            .and_then(|bytes| {
                crate::atomic::write_atomic(&req.path, &bytes).map_err(|e| e.to_string())
            })
            .map(|()| req.path.clone())
            .map_err(|e| format!("screenshot {}: {e}", req.path.display()));
        match &result {
            Ok(p) => {
                println!("wrote {}", p.display());
                self.status = format!("saved {}", p.display());
            }
            Err(e) => self.error = Some(e.clone()),
        }
        if req.close {
            *lock(&self.outcome) = Some(result);
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
    }

    /// After drawing: count frames shown and request the `--screenshot` when due, and a
    /// reload screenshot once its state has been drawn.
    pub(super) fn after_draw(&mut self, ctx: &egui::Context) {
        if let Some((path, passes)) = &mut self.pending_shot {
            if *passes > 0 || self.in_flight.is_some() {
                *passes = passes.saturating_sub(1);
                ctx.request_repaint();
            } else {
                let path = path.clone();
                self.pending_shot = None;
                self.request_shot(ctx, path, false);
            }
        }
        let Some(path) = self.auto_shot.clone() else {
            return;
        };
        if self.auto_requested || self.error.is_some() {
            return;
        }
        let at_end = !self.source.is_live() && self.cursor + 1 >= self.source.frames();
        if self.shown >= self.after_frames || at_end {
            self.auto_requested = true;
            self.request_shot(ctx, path, true);
        }
    }
}
