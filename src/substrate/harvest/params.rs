//! commons_harvest's parameters as written in assets, with Melting Pot 2.4's defaults
//! (`commons_harvest__open.py`).

use serde::{Deserialize, Serialize};

/// commons_harvest parameters (defaults follow Melting Pot 2.4's `commons_harvest__open`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarvestParams {
    /// Radius (Euclidean, in cells) of the neighbourhood whose standing apples set an empty
    /// apple cell's regrowth probability; at most 2.
    #[serde(default = "default_radius")]
    pub regrowth_radius: f64,
    /// Regrowth probability per step with 0, 1, 2 and 3 or more apples in the neighbourhood.
    #[serde(default = "default_probabilities")]
    pub regrowth_probabilities: [f64; 4],
    /// Reward for eating an apple.
    #[serde(default = "default_reward")]
    pub apple_reward: f32,
    /// Cells the zapping beam reaches ahead.
    #[serde(default = "default_beam_length")]
    pub beam_length: u8,
    /// Cells the zapping beam reaches to either side.
    #[serde(default = "default_beam_radius")]
    pub beam_radius: u8,
    /// Steps the zap timer waits after a shot.
    #[serde(default = "default_cooldown")]
    pub zap_cooldown: u8,
    /// Steps a zapped avatar stays out of the arena before it respawns.
    #[serde(default = "default_respawn")]
    pub respawn_frames: u8,
    /// No episode ends at random before this many steps.
    #[serde(default = "default_min_steps")]
    pub min_steps: u32,
    /// After `min_steps`, every this many steps the episode may end...
    #[serde(default = "default_end_every")]
    pub end_every: u32,
    /// ...with this probability (the hard cap is the scenario's `max_steps`).
    #[serde(default = "default_end_prob")]
    pub end_prob: f64,
}

impl Default for HarvestParams {
    fn default() -> Self {
        HarvestParams {
            regrowth_radius: default_radius(),
            regrowth_probabilities: default_probabilities(),
            apple_reward: default_reward(),
            beam_length: default_beam_length(),
            beam_radius: default_beam_radius(),
            zap_cooldown: default_cooldown(),
            respawn_frames: default_respawn(),
            min_steps: default_min_steps(),
            end_every: default_end_every(),
            end_prob: default_end_prob(),
        }
    }
}

fn default_radius() -> f64 {
    2.0
}
fn default_probabilities() -> [f64; 4] {
    [0.0, 0.0025, 0.005, 0.025]
}
fn default_reward() -> f32 {
    1.0
}
fn default_beam_length() -> u8 {
    3
}
fn default_beam_radius() -> u8 {
    1
}
fn default_cooldown() -> u8 {
    2
}
fn default_respawn() -> u8 {
    4
}
fn default_min_steps() -> u32 {
    1000
}
fn default_end_every() -> u32 {
    100
}
fn default_end_prob() -> f64 {
    0.15
}
