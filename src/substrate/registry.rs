//! The substrate registry: one line per substrate. From these lines `substrates!` declares each
//! substrate's folder as a module, generates the scenario asset's `substrate` enum
//! ([`Substrate`], re-exported as `crate::scenario::Substrate`) and the per-batch [`Rules`]
//! enum, and writes every dispatch `match` over them, so nothing else in the crate matches on
//! a substrate kind. Adding a substrate adds a folder and a line here (docs/new_substrate.md).
//!
//! A line reads: `AssetVariant(ParamsType) => RulesVariant(RulesType) in "folder/mod.rs"`.
//! `AssetVariant` is what assets write (`substrate: Pursuit((...))`); `RulesType` implements
//! `SubstrateRules` with `Params = ParamsType`; the doc comment above the line documents the
//! asset variant.

use serde::{Deserialize, Serialize};

use super::{ArenaMut, Derived, ExactModel, SubstrateRules};
use crate::components::Alive;
use crate::error::ScenarioError;
use crate::layout::core::LayoutCore;
use crate::render::draw::Instance;
use crate::rollout::frame::Frame;
use crate::scenario::actions::ActionSet;
use crate::scenario::check::Check;
use crate::scenario::map::{Grid, Tile};
use crate::scenario::observation::{Channel, ObsField, ObservationSpec};
use crate::scenario::role::RoleKind;
use crate::scenario::view::ScenarioView;

substrates! {
    /// PettingZoo SISL Pursuit (v5) with simultaneous moves.
    Pursuit(pursuit::PursuitParams) => Pursuit(pursuit::Pursuit) in "pursuit/mod.rs",
    /// Melting Pot's gift_refinements: collect, refine by gifting, consume.
    GiftRefinements(gift::GiftParams) => Gift(gift::Gift) in "gift/mod.rs",
    /// Melting Pot's chemistry: carry molecules in vesicles, reactions from a data graph.
    Chemistry(chemistry::ChemistryParams) => Chemistry(chemistry::Chemistry) in "chemistry/mod.rs",
    /// The two-player coin game (LOLA / JaxMARL).
    CoinGame(coin::CoinParams) => Coin(coin::Coin) in "coin/mod.rs",
    /// A repeated normal-form game.
    MatrixGame(matrix::MatrixParams) => Matrix(matrix::Matrix) in "matrix/mod.rs",
    /// One-agent walk to a goal cell: the example of docs/new_substrate.md.
    WalkToGoal(goal::GoalParams) => Goal(goal::Goal) in "goal/mod.rs",
    /// A memory task: a cue at the first step decides which action pays at the last.
    CueMemory(cue::CueParams) => Cue(cue::Cue) in "cue/mod.rs",
    /// Melting Pot's commons_harvest: apples regrow by the apples left nearby; zapping beam.
    CommonsHarvest(harvest::HarvestParams) => Harvest(harvest::Harvest) in "harvest/mod.rs",
    /// Melting Pot's clean_up: apples grow only while the river is clean; cleaning beam, zap.
    CleanUp(cleanup::CleanUpParams) => CleanUp(cleanup::CleanUp) in "cleanup/mod.rs",
    /// Level-Based Foraging (lbforaging 2.0): agents load food whose level their levels reach.
    LevelBasedForaging(lbf::LbfParams) => Lbf(lbf::Lbf) in "lbf/mod.rs",
    /// JaxMARL's Overcooked: two cooks, onions, pots, plates and a serving cell.
    Overcooked(overcooked::OvercookedParams) => Overcooked(overcooked::Overcooked) in "overcooked/mod.rs",
}
