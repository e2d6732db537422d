//! What learners observe, as written in scenario assets: the `observation` block
//! ([`ObservationSpec`]), Pursuit's [`Channel`]s and the facing-rotated [`Window`]; and what the
//! engine writes for them, block by block ([`ObsField`]). A leaf of the scenario format.

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

/// One named axis of an observation block's shape (`row 7`, `channel 3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// What the axis runs over.
    pub name: &'static str,
    /// Entries along it.
    pub len: usize,
}

/// One contiguous block of a learner's u8 observation, as the substrate writes it: its shape
/// (row-major, the last axis innermost), the names and largest values of the innermost axis'
/// entries, and what it means. A substrate's blocks, in order, are its whole observation
/// (`SubstrateRules::observation_layout`); `gridarena check --explain` prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObsField {
    /// Short name of the block.
    pub name: String,
    /// Named axes, outermost first.
    pub shape: Vec<Axis>,
    /// Names of the innermost axis' entries; empty where they have none.
    pub entries: Vec<String>,
    /// The largest value any byte of the block takes.
    pub max: u8,
    /// The largest value per innermost entry where they differ; empty: every byte up to `max`.
    pub entry_max: Vec<u8>,
    /// One line on what the bytes mean.
    pub meaning: String,
}

impl ObsField {
    /// A block of `shape` (name and length per axis, outermost first) whose bytes lie in
    /// `0..=max`.
    pub fn new(name: &str, shape: &[(&'static str, usize)], max: u8, meaning: &str) -> ObsField {
        ObsField {
            name: name.to_string(),
            shape: shape
                .iter()
                .map(|&(name, len)| Axis { name, len })
                .collect(),
            entries: Vec::new(),
            max,
            entry_max: Vec::new(),
            meaning: meaning.to_string(),
        }
    }

    /// Names the innermost axis' entries.
    pub fn entries<S: AsRef<str>>(mut self, names: &[S]) -> ObsField {
        self.entries = names.iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    /// Gives each innermost entry its own largest value (`max` becomes the largest of them).
    pub fn entry_max(mut self, max: Vec<u8>) -> ObsField {
        self.max = max.iter().copied().max().unwrap_or(0);
        self.entry_max = max;
        self
    }

    /// Bytes in the block: the product of the axes' lengths.
    pub fn len(&self) -> usize {
        self.shape.iter().map(|a| a.len).product()
    }

    /// True for a block of no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest value byte `i` of the block takes.
    pub fn max_at(&self, i: usize) -> u8 {
        let inner = self.shape.last().map_or(1, |a| a.len.max(1));
        self.entry_max.get(i % inner).copied().unwrap_or(self.max)
    }

    /// The shape as written in explanations: `[row 7, column 7, channel 3]`.
    pub fn shape_string(&self) -> String {
        let axes: Vec<String> = self
            .shape
            .iter()
            .map(|a| format!("{} {}", a.name, a.len))
            .collect();
        format!("[{}]", axes.join(", "))
    }
}
