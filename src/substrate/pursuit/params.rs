//! Pursuit's parameters as written in assets, with PettingZoo's defaults.

use serde::{Deserialize, Serialize};

/// Pursuit rules' parameters (defaults are PettingZoo's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PursuitParams {
    /// `true`: an evader is caught when every open orthogonal neighbour of its cell holds a
    /// pursuer. `false`: when at least `n_catch` pursuers stand on its cell.
    #[serde(default = "yes")]
    pub surround: bool,
    /// Pursuers on the evader's cell needed for a catch when `surround` is false.
    #[serde(default = "two")]
    pub n_catch: u16,
    /// Reward per evader on a pursuer's four neighbouring cells, per step.
    #[serde(default = "default_tag")]
    pub tag_reward: f32,
    /// Reward to every pursuer on a catching cell, per caught evader.
    #[serde(default = "default_catch")]
    pub catch_reward: f32,
    /// Reward to every pursuer, every step.
    #[serde(default = "default_urgency")]
    pub urgency_reward: f32,
    /// Reward to every live learning evader, every step.
    #[serde(default)]
    pub escape_reward: f32,
    /// Replace each pursuer's reward by the pursuers' mean.
    #[serde(default = "yes")]
    pub shared_reward: bool,
    /// Who moves when within a step: everyone at once (`simultaneous`, the default), or
    /// PettingZoo's agent cycle (`pettingzoo`). See [`MoveOrder`]. Left out of the saved
    /// form when simultaneous, so runs saved before the field existed resume unchanged.
    #[serde(default, skip_serializing_if = "MoveOrder::is_simultaneous")]
    pub move_order: MoveOrder,
}

/// The order of moves, tags and catches within one step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveOrder {
    /// Every agent moves at once; tags, catches and removal are judged on the moved state.
    #[default]
    Simultaneous,
    /// PettingZoo's `pursuit_v5` cycle: pursuers move one at a time in slot order, and after
    /// each move every pursuer earns its tag reward divided by the number of pursuers (its
    /// four neighbours clamped to the map, so a pursuer on the border counts its own cell for
    /// a missing neighbour); catches are judged after the last pursuer moved, before the
    /// evaders move, and credit each catching pursuer once per step; then the evaders move.
    Pettingzoo,
}

impl MoveOrder {
    fn is_simultaneous(&self) -> bool {
        *self == MoveOrder::Simultaneous
    }
}

impl Default for PursuitParams {
    fn default() -> Self {
        PursuitParams {
            surround: true,
            n_catch: 2,
            tag_reward: 0.01,
            catch_reward: 5.0,
            urgency_reward: -0.1,
            escape_reward: 0.0,
            shared_reward: true,
            move_order: MoveOrder::Simultaneous,
        }
    }
}

fn yes() -> bool {
    true
}
fn two() -> u16 {
    2
}
fn default_tag() -> f32 {
    0.01
}
fn default_catch() -> f32 {
    5.0
}
fn default_urgency() -> f32 {
    -0.1
}
