//! The coin game's observation drawn for the viewer.

use eframe::egui::Color32;

use crate::layout::core::LayoutCore;
use crate::render::draw::palette;
use crate::viewer::obs_image::{ObsImage, c, mix};

/// The full grid, 4 channels per cell (me, the other, my coin, the other's coin), as mixed
/// colours.
pub(super) fn observation_image(layout: &LayoutCore, slot: usize, obs: &[u8]) -> Option<ObsImage> {
    let colors = palette(&layout.slot_kind);
    let (cols, rows) = (layout.width, layout.height);
    if obs.len() != cols * rows * 4 {
        return None;
    }
    let me = c(colors.get(slot).copied().unwrap_or([200, 60, 60]));
    let them = c(colors
        .get(1 - slot.min(1))
        .copied()
        .unwrap_or([60, 60, 200]));
    let my_coin = Color32::from_rgb(242, 190, 26);
    let their_coin = Color32::from_rgb(150, 150, 150);
    let cells = obs
        .chunks_exact(4)
        .map(|v| {
            let parts: Vec<(Color32, f32)> = [me, them, my_coin, their_coin]
                .into_iter()
                .zip(v)
                .filter(|(_, x)| **x != 0)
                .map(|(k, _)| (k, 1.0))
                .collect();
            mix(&parts)
        })
        .collect();
    let observer = obs
        .chunks_exact(4)
        .position(|v| v[0] != 0)
        .map(|i| (i % cols, i / cols));
    Some(ObsImage {
        cols,
        rows,
        cells,
        observer,
        legend: vec![
            (me, "me".into()),
            (them, "the other player".into()),
            (my_coin, "coin of my colour".into()),
            (their_coin, "coin of the other's colour".into()),
        ],
        notes: Vec::new(),
    })
}
