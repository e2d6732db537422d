//! What learners observe, as written in scenario assets: the `observation` block
//! ([`ObservationSpec`]), Pursuit's [`Channel`]s and the facing-rotated [`Window`]. A leaf of the
//! scenario format.

use serde::{Deserialize, Serialize};

/// A configurable observation channel (Pursuit; one u8 per cell of the window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// 1 on walls and outside the map.
    Obstacle,
    /// Number of live pursuers on the cell (saturating at 255).
    Pursuers,
    /// Number of live evaders on the cell (saturating at 255).
    Evaders,
}

impl Channel {
    /// Lower-case name as written in assets.
    pub fn name(self) -> &'static str {
        match self {
            Channel::Obstacle => "obstacle",
            Channel::Pursuers => "pursuers",
            Channel::Evaders => "evaders",
        }
    }
}

/// A window that turns with the agent's facing: cells to its left and right, ahead and behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// Cells to the agent's left.
    pub left: u16,
    /// Cells to the agent's right.
    pub right: u16,
    /// Cells ahead.
    pub ahead: u16,
    /// Cells behind.
    pub behind: u16,
}

impl Window {
    /// Melting Pot's default: 5 left, 5 right, 9 ahead, 1 behind (11 x 11).
    pub const MELTING_POT: Window = Window {
        left: 5,
        right: 5,
        ahead: 9,
        behind: 1,
    };

    /// Columns (left + 1 + right).
    pub fn width(self) -> usize {
        self.left as usize + 1 + self.right as usize
    }

    /// Rows (ahead + 1 + behind).
    pub fn depth(self) -> usize {
        self.ahead as usize + 1 + self.behind as usize
    }
}

/// What learners observe. Pursuit uses a square `radius` window and `channels`; gift_refinements
/// and chemistry a facing-rotated `window`; coin and matrix games need nothing here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationSpec {
    /// Square window: cells on each side of the agent (side `2 * radius + 1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radius: Option<u16>,
    /// Facing-rotated window (default [`Window::MELTING_POT`] where used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// Channels per cell, in this order (Pursuit; empty means all, canonical order). Layout is
    /// `[rows, columns, channels]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<Channel>,
}

impl ObservationSpec {
    /// The square window's side in cells (1 without a radius).
    pub fn side(&self) -> usize {
        2 * self.radius.unwrap_or(0) as usize + 1
    }
}
