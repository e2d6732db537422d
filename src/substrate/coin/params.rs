//! The coin game's parameters as written in assets (JaxMARL's defaults).

use serde::{Deserialize, Serialize};

/// coin game parameters (LOLA's coin game as in JaxMARL).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoinParams {
    /// Moves wrap around the map edges.
    #[serde(default = "yes")]
    pub torus: bool,
    /// Reward for picking up any coin.
    #[serde(default = "one")]
    pub pick_reward: f32,
    /// Reward to the coin's owner when the other player picks it up.
    #[serde(default = "minus_two")]
    pub stolen_penalty: f32,
}

impl Default for CoinParams {
    fn default() -> Self {
        CoinParams {
            torus: true,
            pick_reward: 1.0,
            stolen_penalty: -2.0,
        }
    }
}

fn yes() -> bool {
    true
}
fn one() -> f32 {
    1.0
}
fn minus_two() -> f32 {
    -2.0
}
