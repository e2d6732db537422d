//! Substrate parameters as written in scenario assets, with their documented defaults.

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
        }
    }
}

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

/// One chemical compound: its name, map symbol and reactivity group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompoundSpec {
    /// Name used in reactions.
    pub name: String,
    /// Map symbol of a cell that starts with this compound (not one of the base legend's).
    pub symbol: char,
    /// Reactivity group name.
    pub group: String,
}

/// A reactivity group: how often its molecules try to react.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// Name used by compounds.
    pub name: String,
    /// Per-step firing probability of a molecule lying on the ground.
    pub ground: f64,
    /// Per-step firing probability of a molecule carried in a vesicle.
    pub vesicle: f64,
}

/// A reaction: reactants become products, paired in order (reactant i turns into product i in
/// place; a compound that is its own product is a catalyst).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReactionSpec {
    /// Name, used in counters.
    pub name: String,
    /// Compound names consumed, in order.
    pub reactants: Vec<String>,
    /// Compound names produced, paired with the reactants ("empty" removes the molecule).
    pub products: Vec<String>,
    /// Reward to each player whose vesicle took part.
    #[serde(default)]
    pub reward: f32,
}

/// chemistry parameters: the reaction graph is data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChemistryParams {
    /// Compounds (besides "empty", which is implicit).
    pub compounds: Vec<CompoundSpec>,
    /// Reactivity groups.
    pub groups: Vec<GroupSpec>,
    /// Reactions.
    pub reactions: Vec<ReactionSpec>,
    /// Reactivity group of empty cells, so reactions like `empty -> food` can fire (Melting
    /// Pot: "background"); none means empty cells never initiate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_group: Option<String>,
    /// Steps after an io action before the next one.
    #[serde(default = "two_u8")]
    pub io_cooldown: u8,
}

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

fn yes() -> bool {
    true
}
fn two() -> u16 {
    2
}
fn two_u8() -> u8 {
    2
}
fn one() -> f32 {
    1.0
}
fn minus_two() -> f32 {
    -2.0
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
