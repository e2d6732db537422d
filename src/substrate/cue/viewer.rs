//! cue_memory's observation drawn for the viewer.

use eframe::egui::Color32;

use super::CueParams;
use crate::render::draw::FLOOR;
use crate::viewer::obs_image::{ObsImage, c};

/// The cue as a row of K cells (the shown cue lit), and the choose-now flag in words.
pub(super) fn observation_image(params: &CueParams, obs: &[u8]) -> Option<ObsImage> {
    let k = params.cues as usize;
    if obs.len() != k + 1 {
        return None;
    }
    let on = Color32::from_rgb(60, 170, 80);
    Some(ObsImage {
        cols: k,
        rows: 1,
        cells: obs[..k]
            .iter()
            .map(|&v| if v != 0 { on } else { c(FLOOR) })
            .collect(),
        observer: None,
        legend: vec![(on, "the cue (shown at the first step only)".into())],
        notes: vec![format!("choose now: {}", obs[k] != 0)],
    })
}
