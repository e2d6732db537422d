//! What to draw, extracted from one arena's state: cells (floor, walls), substrate items, agents
//! with a colour per agent and role, facings. Backend-free: the wgpu renderer draws the
//! instances as quads shaped in the fragment shader (`shaders/render.wgsl`).

use crate::layout::Layout;
use crate::rollout::Frame;
use crate::scenario::RoleKind;

use super::draw::square;
pub use super::draw::{FLOOR, Instance, WALL, agent_color, rgb, shape};
/// Gift tokens (defined by the gift_refinements substrate).
pub use crate::substrate::gift::TOKEN;

/// Every slot's colour for a layout.
pub fn palette(layout: &Layout) -> Vec<[u8; 3]> {
    super::draw::palette(&layout.slot_kind)
}

/// A frame's instances over a `width x height` grid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scene {
    /// Map columns.
    pub width: u32,
    /// Map rows.
    pub height: u32,
    /// Back to front.
    pub instances: Vec<Instance>,
}

/// The scene of `frame` (a recorded or live arena), optionally marking agent `selected`.
pub fn extract(layout: &Layout, frame: &Frame, selected: Option<usize>) -> Scene {
    let (w, h) = (layout.width, layout.height);
    let mut out = Vec::with_capacity(w * h + 4 * layout.agents);
    for y in 0..h {
        for x in 0..w {
            let open = layout.is_open(x as i32, y as i32);
            let color = if open { FLOOR } else { WALL };
            out.push(square(
                x as f32,
                y as f32,
                0.5,
                rgb(color),
                shape::RECT,
                0.0,
            ));
        }
    }
    // Items, drawn by the substrate.
    layout.rules.draw_items(layout, frame, &mut out);
    // Agents, with facing where it exists.
    let colors = palette(layout);
    for (slot, (&(x, y), &alive)) in frame.positions.iter().zip(&frame.alive).enumerate() {
        if !alive {
            continue;
        }
        let (x, y) = (x as f32, y as f32);
        if selected == Some(slot) {
            out.push(square(x, y, 0.5, rgb([20, 20, 20]), shape::RING, 0.0));
        }
        let c = colors.get(slot).copied().unwrap_or([128, 128, 128]);
        let radius = if layout.slot_kind[slot] == RoleKind::Evader {
            0.30
        } else {
            0.38
        };
        out.push(square(x, y, radius, rgb(c), shape::DISC, 0.0));
        if let Some(&f) = frame.facing.get(slot) {
            let angle = f as f32 * std::f32::consts::FRAC_PI_2;
            let (dx, dy) = (angle.sin() * 0.26, -angle.cos() * 0.26);
            out.push(Instance {
                center: [x + 0.5 + dx, y + 0.5 + dy],
                half: [0.14, 0.14],
                color: rgb([25, 25, 25]),
                shape: shape::TRIANGLE,
                angle,
                _pad: [0.0; 2],
            });
        }
    }
    Scene {
        width: w as u32,
        height: h as u32,
        instances: out,
    }
}
