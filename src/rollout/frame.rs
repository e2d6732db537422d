//! One recorded step of an arena ([`Frame`]): positions, flags, facings, carried and substrate
//! items, actions and rewards. A leaf: substrates convert their state to and from frames
//! without depending on the rollout file format.

use serde::{Deserialize, Serialize};

/// The arena's state after one step (or after a reset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// Step within the episode (0 right after a reset).
    pub t: u32,
    /// Episode index in this arena.
    pub episode: u32,
    /// (x, y) per slot.
    pub positions: Vec<(i16, i16)>,
    /// Whether each slot is still in the arena.
    pub alive: Vec<bool>,
    /// Facing per slot (0 north, 1 east, 2 south, 3 west); empty where agents have none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub facing: Vec<u8>,
    /// Carried items per slot (gift: tokens per level; chemistry: vesicle compound + 1 first);
    /// empty where agents carry nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carry: Vec<[u8; 3]>,
    /// Substrate items (see `SubstrateRules::frame_items` in each substrate); empty for Pursuit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<u8>,
    /// Applied actions (after slip) that led here, per slot; empty at t = 0.
    pub actions: Vec<u8>,
    /// Rewards of the step that led here, per slot; empty at t = 0.
    pub rewards: Vec<f32>,
    /// The step ended the episode by the rules.
    pub terminated: bool,
    /// The step hit the step limit.
    pub truncated: bool,
}
