//! The drawing vocabulary every substrate and renderer shares: the shapes the fragment shader
//! knows, the [`Instance`] a shape is drawn as, the floor and wall colours, colour conversions
//! and the agents' palette. A leaf module: it knows nothing of layouts, scenarios' substrates or
//! rollouts, so substrates draw with it without depending on the renderer.

use bytemuck::{Pod, Zeroable};

use crate::scenario::role::RoleKind;

/// Shapes the fragment shader knows.
pub mod shape {
    /// A filled square.
    pub const RECT: u32 = 0;
    /// A filled disc.
    pub const DISC: u32 = 1;
    /// A triangle pointing along the instance's angle.
    pub const TRIANGLE: u32 = 2;
    /// A ring (selection marker).
    pub const RING: u32 = 3;
    /// A diamond (items).
    pub const DIAMOND: u32 = 4;
}

/// One drawn shape, in cell units (x right, y down).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct Instance {
    /// Centre.
    pub center: [f32; 2],
    /// Half extent.
    pub half: [f32; 2],
    /// Linear RGBA.
    pub color: [f32; 4],
    /// One of [`shape`].
    pub shape: u32,
    /// Rotation of triangles, radians (0 points up / north).
    pub angle: f32,
    /// Padding to 16 bytes.
    pub _pad: [f32; 2],
}

/// The floor colour (sRGB 0-255).
pub const FLOOR: [u8; 3] = [236, 236, 230];
/// The wall colour.
pub const WALL: [u8; 3] = [52, 56, 64];
/// sRGB bytes to linear floats (the render targets are sRGB-encoded where the surface is).
pub fn rgb(c: [u8; 3]) -> [f32; 4] {
    [
        c[0] as f32 / 255.0,
        c[1] as f32 / 255.0,
        c[2] as f32 / 255.0,
        1.0,
    ]
}

/// Agent `slot`'s colour: pursuers in warm hues, evaders in cold ones, players spread over the
/// wheel, each slot its own shade.
pub fn agent_color(kind: RoleKind, slot: usize, of_kind: usize, index: usize) -> [u8; 3] {
    let t = if of_kind <= 1 {
        0.0
    } else {
        index as f32 / (of_kind - 1) as f32
    };
    let (h, s, v) = match kind {
        RoleKind::Pursuer => (0.0 + 35.0 * t, 0.85, 0.90),
        RoleKind::Evader => (200.0 + 40.0 * t, 0.85, 0.85),
        RoleKind::Player => ((slot as f32 * 137.5) % 360.0, 0.75, 0.85),
    };
    hsv(h, s, v)
}

/// A colour from hue (degrees), saturation and value, as sRGB bytes.
pub(crate) fn hsv(h: f32, s: f32, v: f32) -> [u8; 3] {
    let c = v * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let m = v - c;
    let (r, g, b) = match (h / 60.0) as u32 % 6 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    [
        ((r + m) * 255.0).round() as u8,
        ((g + m) * 255.0).round() as u8,
        ((b + m) * 255.0).round() as u8,
    ]
}

/// Every slot's colour, from the role kind of each slot (`Layout::slot_kind`).
pub fn palette(kinds: &[RoleKind]) -> Vec<[u8; 3]> {
    (0..kinds.len())
        .map(|slot| {
            let k = kinds[slot];
            let of_kind = kinds.iter().filter(|x| **x == k).count();
            let index = kinds[..slot].iter().filter(|x| **x == k).count();
            agent_color(k, slot, of_kind, index)
        })
        .collect()
}

/// A square instance of half extent `half` centred on cell (x, y).
pub(crate) fn square(
    x: f32,
    y: f32,
    half: f32,
    color: [f32; 4],
    shape: u32,
    angle: f32,
) -> Instance {
    Instance {
        center: [x + 0.5, y + 0.5],
        half: [half, half],
        color,
        shape,
        angle,
        _pad: [0.0; 2],
    }
}
