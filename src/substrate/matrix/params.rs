//! A matrix game's parameters as written in assets: the payoff table.

use serde::{Deserialize, Serialize};

/// A repeated normal-form game.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixParams {
    /// Actions per player, K.
    pub actions: u8,
    /// Optional action names (K of them).
    #[serde(default)]
    pub action_names: Vec<String>,
    /// One row per joint action in row-major order (player 0's action most significant), each
    /// row holding one reward per player: `K^N` rows of `N` numbers.
    pub payoffs: Vec<Vec<f32>>,
}
