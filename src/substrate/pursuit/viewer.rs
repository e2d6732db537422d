//! Pursuit's observation window drawn for the viewer.

use eframe::egui::Color32;

use super::Pursuit;
use crate::components::{CELL_EVADERS, CELL_OBSTACLE, CELL_PURSUERS};
use crate::layout::core::LayoutCore;
use crate::render::draw::{FLOOR, WALL, palette};
use crate::scenario::role::RoleKind;
use crate::viewer::obs_image::{ObsImage, c, mix};

/// The window `[side, side, channels]` as cells: walls, pursuers and evaders mixed by count.
pub(super) fn observation_image(p: &Pursuit, layout: &LayoutCore, obs: &[u8]) -> Option<ObsImage> {
    let colors = palette(&layout.slot_kind);
    let first = |kind: RoleKind, fallback: [u8; 3]| {
        c(colors
            .iter()
            .zip(&layout.slot_kind)
            .find(|(_, k)| **k == kind)
            .map_or(fallback, |(c, _)| *c))
    };
    let pursuer = first(RoleKind::Pursuer, [230, 60, 40]);
    let evader = first(RoleKind::Evader, [40, 140, 220]);
    let (side, channels) = (p.side, p.channel_offsets.len());
    if channels == 0 || obs.len() != side * side * channels {
        return None;
    }
    let cells = obs
        .chunks_exact(channels)
        .map(|cell| {
            let mut parts = Vec::new();
            for (k, &off) in p.channel_offsets.iter().enumerate() {
                let v = cell[k];
                if v == 0 {
                    continue;
                }
                match off {
                    CELL_OBSTACLE => return c(WALL),
                    CELL_PURSUERS => parts.push((pursuer, v as f32)),
                    CELL_EVADERS => parts.push((evader, v as f32)),
                    _ => parts.push((Color32::GRAY, v as f32)),
                }
            }
            mix(&parts)
        })
        .collect();
    let mut legend = vec![(c(FLOOR), "empty".to_string())];
    for &off in &p.channel_offsets {
        legend.push(match off {
            CELL_OBSTACLE => (c(WALL), "obstacle".into()),
            CELL_PURSUERS => (pursuer, "pursuers".into()),
            CELL_EVADERS => (evader, "evaders".into()),
            _ => (Color32::GRAY, format!("channel {off}")),
        });
    }
    Some(ObsImage {
        cols: side,
        rows: side,
        cells,
        observer: Some((side / 2, side / 2)),
        legend,
        notes: Vec::new(),
    })
}
