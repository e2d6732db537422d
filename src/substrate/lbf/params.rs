//! Level-Based Foraging's parameters as written in assets, with lbforaging 2.0's defaults (the
//! values its registered `Foraging-...-v3` environments use).

use serde::{Deserialize, Serialize};

/// Level-Based Foraging parameters. The field is the scenario's map (open floor only), the
/// players are its roles and `max_episode_steps` is its `max_steps`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LbfParams {
    /// Most food items on the field; a reset places up to this many. Required.
    pub max_num_food: u8,
    /// Lowest agent level (drawn uniformly between the two at every reset).
    #[serde(default = "one")]
    pub min_player_level: u8,
    /// Highest agent level.
    #[serde(default = "two")]
    pub max_player_level: u8,
    /// Lowest food level.
    #[serde(default = "one")]
    pub min_food_level: u8,
    /// Highest food level; `None`: the sum of the three lowest agent levels of the episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_food_level: Option<u8>,
    /// How far an agent sees (a square of side `2 sight + 1`); `None`: the whole field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sight: Option<u8>,
    /// Every food gets the highest level, so that loading needs several agents.
    #[serde(default)]
    pub force_coop: bool,
    /// Subtracted from the reward of every agent of a load that fails (levels too low).
    #[serde(default)]
    pub penalty: f32,
    /// Divide a load's reward by the levels that loaded it and by the episode's total food.
    #[serde(default = "yes")]
    pub normalize_reward: bool,
}

impl Default for LbfParams {
    fn default() -> Self {
        LbfParams {
            max_num_food: 2,
            min_player_level: 1,
            max_player_level: 2,
            min_food_level: 1,
            max_food_level: None,
            sight: None,
            force_coop: false,
            penalty: 0.0,
            normalize_reward: true,
        }
    }
}

fn one() -> u8 {
    1
}
fn two() -> u8 {
    2
}
fn yes() -> bool {
    true
}
