//! Substrates: the games. Each one is a folder (`src/substrate/<name>/`) holding everything about
//! it: its parameters as written in assets and their validation, its derived layout and
//! observation size, its rules written once as functions over one arena's state ([`ArenaMut`]),
//! its rollout-frame items, render shapes, viewer drawing and analysis hooks. A folder
//! implements `SubstrateRules` and is listed on one line of the [`registry`], which generates
//! the scenario's `substrate` enum ([`crate::scenario::Substrate`]) and the per-batch
//! [`Rules`] enum whose methods dispatch to the folder (one `match` per arena and phase; no
//! virtual calls, nothing allocated). `docs/new_substrate.md` walks through adding one.
//!
//! What every substrate shares lives beside the folders: the arena's state as the rules see it
//! ([`arena`]) and held by itself (`state`), chance
//! and spawning and the per-phase entry points the systems call ([`step`]), rollout frames
//! ([`frame`]) and the facing avatars of gift_refinements and chemistry ([`avatars`]).

pub mod arena;
pub mod avatars;
#[macro_use]
mod dispatch;
pub mod frame;
pub mod registry;
pub(crate) mod state;
pub mod step;

pub use arena::ArenaMut;
pub use registry::*;
pub use state::{ArenaState, StepOutcome};
pub use step::{
    apply_moves, assign_rewards, draw_chance, rebuild_cells, resolve_interactions, spawn,
    transition, write_observations,
};

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

/// What a substrate derives once per batch from its parameters (its part of
/// [`Layout::derive`](crate::layout::Layout::derive)).
#[derive(Debug, Clone)]
pub struct Derived<S> {
    /// The substrate's own derived data, stored in [`Layout::rules`](crate::layout::Layout::rules).
    pub rules: S,
    /// Padding around the map in grid cells (the farthest a window, a beam or a neighbour
    /// lookup reaches); 0 for substrates without a padded grid.
    pub pad: usize,
    /// Initial content of every arena's cell layer (see [`crate::layout::padded_cells`]).
    pub cells_template: Vec<u8>,
    /// Names of the per-episode counters the rules increment (social metrics).
    pub counter_names: Vec<String>,
}

/// How exact analysis indexes a substrate's states ([`crate::analysis::TransitionModel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExactModel {
    /// The rules draw their own randomness or keep item state: no exact model.
    Unsupported,
    /// A state is every agent's free cell (and, with several evaders, their alive flags); the
    /// cell layer is rebuilt from the agents. The episode ends when
    /// `SubstrateRules::terminated` says so.
    Positions,
    /// A state is the previous joint action of `actions` choices per player, kept in the cell
    /// layer as `[a_0, .., a_{N-1}, has_previous]` (matrix games).
    PreviousJointAction {
        /// Actions per player.
        actions: usize,
    },
}

/// One substrate: everything the engine, the scenario loader, the renderer, the viewer and
/// exact analysis need to know about one game. Implemented by the substrate's derived data (the
/// value [`Rules`] holds for it); the registry generates the dispatch. Static functions describe
/// the asset (they run before any layout exists); methods run on a derived layout.
pub(crate) trait SubstrateRules:
    Clone + std::fmt::Debug + Send + Sync + Sized + 'static
{
    /// The parameters as written in the asset: `substrate: Variant((...))`.
    type Params: Clone + std::fmt::Debug + PartialEq;

    // ---- Scenario: facts and validation (docs/scenarios.md) ------------------------------

    /// Lower-case name for messages.
    const NAME: &'static str;
    /// A commented template asset (`gridarena new NAME FILE.ron`): the folder's `template.ron`,
    /// included with `include_str!`. It lists every `Scenario` field and every parameter with
    /// its default and meaning, is valid as written, and writes its name as `name: "NAME"`
    /// (replaced by the file's stem); `tests/templates.rs` checks all of it.
    const TEMPLATE: &'static str;
    /// Whether agents have facings, carry things and block each other (rollout frames record
    /// facings and carried items; spawning draws a facing).
    const HAS_AVATARS: bool = false;

    /// The role kinds this substrate knows.
    fn role_kinds() -> &'static [RoleKind] {
        &[RoleKind::Player]
    }
    /// The configurable observation channels, in canonical order (empty: a fixed layout).
    fn channels() -> &'static [Channel] {
        &[]
    }
    /// The action set used when the asset names none (the only one it may name).
    fn default_actions(params: &Self::Params) -> ActionSet;
    /// Whether agents spawn on any open cell rather than on spawn symbols.
    fn spawns_anywhere() -> bool {
        false
    }
    /// Whether the substrate plays on the ASCII map.
    fn uses_map() -> bool {
        true
    }
    /// Whether a tile of the base legend may appear in this substrate's maps (spawn and token
    /// symbols belong to the substrates that use them).
    fn allows_tile(tile: Tile) -> bool {
        !matches!(tile, Tile::Token | Tile::SpawnPursuer | Tile::SpawnEvader)
    }
    /// Extra map symbols declared by the parameters; symbol k reads as `Tile::Compound(k)`.
    fn map_symbols(_params: &Self::Params) -> Vec<char> {
        Vec::new()
    }
    /// What a `substrate.<field>` accepts, for parse-error messages (`field` has indices
    /// normalised to `[]`).
    fn field_help(_field: &str) -> Option<&'static str> {
        None
    }
    /// Checks the parameters (runs first: the map's legend may depend on them).
    fn check_params(
        _params: &Self::Params,
        _scenario: &ScenarioView,
        _c: &Check,
    ) -> Result<(), ScenarioError> {
        Ok(())
    }
    /// Checks what this substrate requires of the roles, after the common role checks.
    fn check_roles(
        _params: &Self::Params,
        _scenario: &ScenarioView,
        _c: &Check,
    ) -> Result<(), ScenarioError> {
        Ok(())
    }
    /// Checks the `observation` block; by default the substrate uses none of its fields.
    fn check_observation(
        _params: &Self::Params,
        scenario: &ScenarioView,
        _grid: &Grid,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        c.observation_unused(
            Self::NAME,
            scenario.observation,
            &["radius", "window", "channels"],
        )
    }
    /// The `observation` block with the substrate's defaults filled in (the resolved scenario
    /// `gridarena check --explain` prints); by default the block as written.
    fn resolved_observation(_params: &Self::Params, scenario: &ScenarioView) -> ObservationSpec {
        scenario.observation.clone()
    }
    /// A learner's observation block by block, in byte order: the one description of what
    /// `write_observations` writes (layouts in docs/scenarios.md, printed by `gridarena check
    /// --explain`, checked against rollouts by tests/explain.rs).
    fn observation_layout(params: &Self::Params, scenario: &ScenarioView) -> Vec<ObsField>;
    /// Observation bytes per learner: the lengths of [`Self::observation_layout`]'s blocks.
    fn observation_len(params: &Self::Params, scenario: &ScenarioView) -> usize {
        Self::observation_layout(params, scenario)
            .iter()
            .map(ObsField::len)
            .sum()
    }
    /// The global state: a centralised observation of the whole arena for centralised critics
    /// and mixers, block by block in byte order, the same layout for every arena. By default
    /// every learner's observation in slot order; override with a whole-arena view where the
    /// learners see only part of it.
    fn global_state_layout(params: &Self::Params, scenario: &ScenarioView) -> Vec<ObsField> {
        vec![ObsField::new(
            "observations",
            &[
                ("learner", scenario.learners()),
                ("byte", Self::observation_len(params, scenario)),
            ],
            Self::observation_layout(params, scenario)
                .iter()
                .map(|f| f.max)
                .max()
                .unwrap_or(0),
            "every learner's observation (above), in slot order",
        )]
    }
    /// Whether some actions can be illegal or do nothing in some states: then the batch keeps
    /// an action mask `[B, N, A]` the learners act within.
    fn has_action_mask(_params: &Self::Params) -> bool {
        false
    }
    /// Action names in index order (by default the action set's, `choice k` where it has none).
    fn action_names(params: &Self::Params) -> Vec<String> {
        let set = Self::default_actions(params);
        let known = set.names();
        (0..set.len())
            .map(|a| {
                known
                    .get(a)
                    .map_or_else(|| format!("choice {a}"), |s| s.to_string())
            })
            .collect()
    }
    /// What extra map symbol `k` (of [`Self::map_symbols`]) means, for the explained legend.
    fn symbol_meaning(_params: &Self::Params, k: usize) -> String {
        format!("open floor, extra symbol {k}")
    }
    /// A one-line summary of the parameters (`gridarena check`).
    fn describe(params: &Self::Params) -> String;

    // ---- Layout ------------------------------------------------------------------------

    /// Derives the substrate's per-batch data from a validated scenario.
    fn derive(params: &Self::Params, scenario: &ScenarioView, grid: &Grid) -> Derived<Self>;

    // ---- Rules, one arena at a time (hot: no allocation) --------------------------------

    /// Movement phase.
    fn apply_moves(&self, layout: &LayoutCore, a: &mut ArenaMut);
    /// Interactions after movement; sets `a.ended` when the rules end the episode.
    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut);
    /// Per-step reward terms and sharing, before the common bookkeeping of returns.
    fn assign_rewards(&self, _layout: &LayoutCore, _a: &mut ArenaMut) {}
    /// Writes every learner's observation `[N, O]`.
    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut);
    /// Writes the arena's global state (`global_state_layout`'s bytes) into `state`, after
    /// `write_observations` (by default it copies the learners' observations).
    fn write_global_state(&self, _layout: &LayoutCore, a: &ArenaMut, state: &mut [u8]) {
        state.copy_from_slice(a.obs);
    }
    /// Writes every learner's legal actions `[N, A]` (1 legal, 0 not) into `mask`, after
    /// `write_observations`; called only when `has_action_mask` says so.
    fn write_action_mask(&self, _layout: &LayoutCore, _a: &ArenaMut, mask: &mut [u8]) {
        mask.fill(1);
    }
    /// Recomputes the cell layer's derived parts from the agents (after a hand-set state).
    fn rebuild_cells(&self, _layout: &LayoutCore, _a: &mut ArenaMut) {}
    /// Completes a spawn after the agents were placed (by default: rebuild the cell layer).
    fn finish_spawn(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        self.rebuild_cells(layout, a);
    }

    // ---- Rollout frames <-> state ------------------------------------------------------

    /// The items a rollout frame records from the cell layer (`Frame::items`).
    fn frame_items(&self, _layout: &LayoutCore, _cells: &[u8]) -> Vec<u8> {
        Vec::new()
    }
    /// The length `Frame::items` must have; `None` when frames record no items.
    fn frame_items_len(&self, _layout: &LayoutCore) -> Option<usize> {
        None
    }
    /// Writes a frame's items back into a fresh cell layer; `None` when they do not fit.
    fn load_frame_items(
        &self,
        _layout: &LayoutCore,
        _items: &[u8],
        _cells: &mut [u8],
    ) -> Option<()> {
        Some(())
    }

    // ---- Drawing -----------------------------------------------------------------------

    /// Pushes the frame's items (tokens, compounds, coins) as render instances.
    fn draw_items(&self, _layout: &LayoutCore, _frame: &Frame, _out: &mut Vec<Instance>) {}
    /// Learner `slot`'s observation drawn as cells with a legend; `None` falls back to
    /// grayscale bytes.
    #[cfg(feature = "viewer")]
    fn observation_image(
        &self,
        _layout: &LayoutCore,
        _slot: usize,
        _obs: &[u8],
    ) -> Option<crate::viewer::obs_image::ObsImage> {
        None
    }

    // ---- Exact analysis ----------------------------------------------------------------

    /// How exact analysis indexes this substrate's states.
    fn exact_model(&self) -> ExactModel {
        ExactModel::Unsupported
    }
    /// Whether the rules ended the episode in a state (for [`ExactModel::Positions`]).
    fn terminated(&self, _layout: &LayoutCore, _alive: &[Alive]) -> bool {
        false
    }
}
