//! A matrix game's observation drawn for the viewer.

use eframe::egui::Color32;

use super::MatrixParams;
use crate::layout::core::LayoutCore;
use crate::render::draw::FLOOR;
use crate::viewer::obs_image::{ObsImage, c};

/// The previous joint action as a players x actions grid, and the first-step flag.
pub(super) fn observation_image(
    params: &MatrixParams,
    layout: &LayoutCore,
    obs: &[u8],
) -> Option<ObsImage> {
    let (k, n) = (params.actions as usize, layout.agents);
    if k == 0 || obs.len() != n * k + 1 {
        return None;
    }
    let on = Color32::from_rgb(40, 40, 40);
    let cells = obs[..n * k]
        .iter()
        .map(|&v| if v != 0 { on } else { c(FLOOR) })
        .collect();
    Some(ObsImage {
        cols: k,
        rows: n,
        cells,
        observer: None,
        legend: vec![(on, "previous action (row: player, column: action)".into())],
        notes: vec![format!("first step: {}", obs[n * k] != 0)],
    })
}
