//! gift_refinements' parameters as written in assets, with Melting Pot 2.4's defaults.

use serde::{Deserialize, Serialize};

/// gift_refinements parameters (defaults follow Melting Pot 2.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GiftParams {
    /// Probability per step that an empty, unoccupied token cell regrows a token.
    #[serde(default = "default_regrow")]
    pub regrow_prob: f64,
    /// Tokens each inventory level holds; excess is lost.
    #[serde(default = "default_capacity")]
    pub capacity: u8,
    /// Tokens of level l+1 the recipient of a level-l gift receives (one level-3 token for l = 3).
    #[serde(default = "default_multiplier")]
    pub gift_multiplier: u8,
    /// Reward per token of each level when consumed.
    #[serde(default = "default_consume")]
    pub consume_value: [f32; 3],
    /// Cells the refine-and-gift beam reaches ahead.
    #[serde(default = "default_beam")]
    pub beam_length: u8,
    /// Steps after a beam before the next one.
    #[serde(default = "default_beam_cooldown")]
    pub beam_cooldown: u8,
    /// No episode ends before this many steps.
    #[serde(default = "default_min_steps")]
    pub min_steps: u32,
    /// After `min_steps`, every this many steps the episode may end...
    #[serde(default = "default_end_every")]
    pub end_every: u32,
    /// ...with this probability (the hard cap is the scenario's `max_steps`).
    #[serde(default = "default_end_prob")]
    pub end_prob: f64,
}

impl Default for GiftParams {
    fn default() -> Self {
        GiftParams {
            regrow_prob: default_regrow(),
            capacity: default_capacity(),
            gift_multiplier: default_multiplier(),
            consume_value: default_consume(),
            beam_length: default_beam(),
            beam_cooldown: default_beam_cooldown(),
            min_steps: default_min_steps(),
            end_every: default_end_every(),
            end_prob: default_end_prob(),
        }
    }
}

fn default_regrow() -> f64 {
    0.0002
}
fn default_capacity() -> u8 {
    15
}
fn default_multiplier() -> u8 {
    5
}
fn default_consume() -> [f32; 3] {
    [1.0, 1.0, 1.0]
}
fn default_beam() -> u8 {
    5
}
fn default_beam_cooldown() -> u8 {
    3
}
fn default_min_steps() -> u32 {
    1000
}
fn default_end_every() -> u32 {
    100
}
fn default_end_prob() -> f64 {
    0.2
}
