//! The picture of one learner's observation that substrates draw for the viewer: the
//! [`ObsImage`] type and the colour helpers they draw it with. A leaf: substrates use it without
//! depending on the viewer's modules that read layouts.

use eframe::egui::Color32;

use crate::render::draw::FLOOR;

/// An observation drawn as cells.
#[derive(Debug, Clone, PartialEq)]
pub struct ObsImage {
    /// Columns.
    pub cols: usize,
    /// Rows.
    pub rows: usize,
    /// Row-major colours.
    pub cells: Vec<Color32>,
    /// The observer's own cell (column, row), outlined.
    pub observer: Option<(usize, usize)>,
    /// What each colour means.
    pub legend: Vec<(Color32, String)>,
    /// Bytes outside the grid, in words.
    pub notes: Vec<String>,
}

/// An sRGB triple as an egui colour.
pub(crate) fn c(rgb: [u8; 3]) -> Color32 {
    Color32::from_rgb(rgb[0], rgb[1], rgb[2])
}

/// Mixes colours by weight (floor when nothing weighs).
pub(crate) fn mix(parts: &[(Color32, f32)]) -> Color32 {
    let total: f32 = parts.iter().map(|p| p.1).sum();
    if total <= 0.0 {
        return c(FLOOR);
    }
    let ch = |f: fn(&Color32) -> u8| {
        (parts.iter().map(|(k, w)| f(k) as f32 * w).sum::<f32>() / total).round() as u8
    };
    Color32::from_rgb(ch(Color32::r), ch(Color32::g), ch(Color32::b))
}
