//! Overcooked's parameters as written in assets (JaxMARL's values by default).

use serde::{Deserialize, Serialize};

/// Overcooked parameters: the delivery reward and the three shaped rewards of JaxMARL's
/// `BASE_REW_SHAPING_PARAMS`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OvercookedParams {
    /// Reward to both players when either serves a soup (JaxMARL's `DELIVERY_REWARD`).
    #[serde(default = "twenty")]
    pub delivery_reward: f32,
    /// Shaped reward for putting an onion into a pot (`PLACEMENT_IN_POT_REW`).
    #[serde(default = "three")]
    pub placement_in_pot_reward: f32,
    /// Shaped reward for a useful plate pickup (`PLATE_PICKUP_REWARD`).
    #[serde(default = "three")]
    pub plate_pickup_reward: f32,
    /// Shaped reward for picking a ready soup up with a plate (`SOUP_PICKUP_REWARD`).
    #[serde(default = "five")]
    pub soup_pickup_reward: f32,
}

impl Default for OvercookedParams {
    fn default() -> Self {
        OvercookedParams {
            delivery_reward: 20.0,
            placement_in_pot_reward: 3.0,
            plate_pickup_reward: 3.0,
            soup_pickup_reward: 5.0,
        }
    }
}

fn twenty() -> f32 {
    20.0
}
fn three() -> f32 {
    3.0
}
fn five() -> f32 {
    5.0
}
