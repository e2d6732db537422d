//! chemistry's parameters as written in assets: the reaction graph is data.

use serde::{Deserialize, Serialize};

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

fn two_u8() -> u8 {
    2
}
