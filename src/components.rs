//! The data dictionary: every component and resource the step schedule shares, grouped by role.
//!
//! Layout rule: all agents of a batch are spawned arena-major with one identical bundle, so they
//! sit in one bevy table and every agent component is one contiguous column of `B * M` values
//! (M agents per arena, slot order). Arena components are likewise one column of `B` values.
//! Systems take these columns whole and split them into per-arena chunks (see `systems`).

use bevy_ecs::prelude::*;
use bytemuck::{Pod, Zeroable};
use rand_chacha::ChaCha8Rng;

// ---------------------------------------------------------------------------------------------
// Agents (one entity per agent, M per arena)
// ---------------------------------------------------------------------------------------------

/// A learning agent's opponent model: the network of the run's opponent-model stack that
/// predicts the other learners' actions from this agent's observation (`None` for scripted
/// agents), and its latest prediction `[N-1, A]` for the others in slot order. Written by
/// `Learner::predict_opponents` (never by the step systems), read by the viewer.
#[derive(Component, Debug, Clone, Default, PartialEq)]
pub struct OpponentModel {
    /// Network index in the opponent-model stack.
    pub net: Option<u32>,
    /// Predicted action distributions of the others; empty until first written.
    pub predicted: Vec<f32>,
}

/// Who an agent is: its arena, its slot in the arena (learners first) and its role.
/// Written at spawn, never changed.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentId {
    /// Arena index in the batch.
    pub arena: u32,
    /// Slot within the arena; slots `0..N` are the learners, in observation/action order.
    pub slot: u16,
    /// Index into `Scenario::roles`.
    pub role: u16,
}

/// Cell an agent stands on; x is the column, y the row (down). Written by `apply_moves` and
/// `auto_reset`.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pod, Zeroable)]
#[repr(C)]
pub struct GridPos {
    /// Column.
    pub x: i16,
    /// Row, growing downwards.
    pub y: i16,
}
const _: () = assert!(size_of::<GridPos>() == 4);

/// Whether the agent is still in the arena (caught evaders leave). Written by
/// `resolve_interactions` and `auto_reset`.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Alive(pub bool);

/// The action applied this step after slip and scripted control: a chance outcome resolved.
/// Written by `draw_chance`, read by `apply_moves` and the recorder.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AppliedAction(pub u8);

/// This step's reward. Written by `resolve_interactions` and `assign_rewards`.
#[derive(Component, Debug, Clone, Copy, PartialEq, Default)]
pub struct StepReward(pub f32);

/// Sum of this episode's rewards so far. Written by `assign_rewards`, cleared by `auto_reset`.
#[derive(Component, Debug, Clone, Copy, PartialEq, Default)]
pub struct EpisodeReturn(pub f32);

/// Facing of avatars that have one: 0 north (up), 1 east, 2 south, 3 west. Written by
/// `apply_moves` (turns) and `auto_reset`; 0 and unused in Pursuit, coin and matrix games.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Facing(pub u8);

/// What an avatar carries: gift_refinements' inventory per token level, or chemistry's vesicle
/// compound (index + 1, 0 empty) in slot 0. Written by `apply_moves` (pickups),
/// `resolve_interactions` and `auto_reset`.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Carry(pub [u8; 3]);

/// Steps until the avatar's special action (beam, io) is ready again; 0 means ready. Written by
/// `resolve_interactions` and `auto_reset`.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Cooldown(pub u8);

// ---------------------------------------------------------------------------------------------
// Arenas (one entity per arena)
// ---------------------------------------------------------------------------------------------

/// Arena index in the batch. Written at spawn.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArenaId(pub u32);

/// The arena's random streams, one per purpose, keyed by (run seed, arena, purpose) so results
/// do not depend on thread count. Advanced only by `draw_chance` and `auto_reset`.
#[derive(Component, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArenaRng {
    /// Start positions at every reset.
    pub spawn: ChaCha8Rng,
    /// Slip outcomes of learners.
    pub slip: ChaCha8Rng,
    /// Moves of random-walking agents.
    pub walk: ChaCha8Rng,
    /// The substrate's own chance: move priority, regrowth, reactions, coin placement,
    /// random episode ends.
    pub rules: ChaCha8Rng,
}

/// Step count within the current episode and episodes finished. Written by the episode-end phase of `step_arenas`
/// and `auto_reset`.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EpisodeClock {
    /// Steps taken in the current episode.
    pub t: u32,
    /// Episodes finished in this arena.
    pub episode: u32,
}

/// Per-episode substrate counters (names in `Layout::counter_names`: catches, tokens picked,
/// gifts by level, reactions by type, coins...). Written by the rules, cleared by `auto_reset`.
#[derive(Component, Debug, Clone, PartialEq, Eq, Default)]
pub struct Counters(pub Vec<u32>);

/// Whether the rules ended the episode this step (no evader left, a random gift_refinements
/// end). Written by `resolve_interactions`, read by the episode-end phase of `step_arenas`.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RulesEnded(pub bool);

/// The arena's cell layer, laid out by the substrate (see `substrate::*`): Pursuit keeps a
/// padded `[H + 2r, W + 2r, 3]` grid of (obstacle, pursuers, evaders) counts so an observation
/// row is one slice; avatar substrates a padded `[.., 3]` grid of (flags, item, avatar slot + 1);
/// the coin game the coin; matrix games the previous joint action. Written by `apply_moves`,
/// `resolve_interactions` and `auto_reset`; read by observations.
#[derive(Component, Debug, Clone)]
pub struct Cells(pub Vec<u8>);

/// Scratch permutation of spawn cells, one segment per role kind (partial Fisher-Yates at every
/// reset, so resets allocate nothing). Written by `auto_reset`.
#[derive(Component, Debug, Clone)]
pub struct SpawnDeck(pub Vec<u16>);

/// Bytes per cell of a grid [`Cells`] layer (Pursuit and the avatar substrates).
pub const CELL_CHANNELS: usize = 3;
/// Pursuit: offset of the obstacle flag in a [`Cells`] cell.
pub const CELL_OBSTACLE: usize = 0;
/// Pursuit: offset of the pursuer count in a [`Cells`] cell.
pub const CELL_PURSUERS: usize = 1;
/// Pursuit: offset of the evader count in a [`Cells`] cell.
pub const CELL_EVADERS: usize = 2;

// ---------------------------------------------------------------------------------------------
// Batch-wide resources
// ---------------------------------------------------------------------------------------------

/// The dense step buffers learners and benchmarks read without copies. Shapes use B arenas,
/// N learners per arena, O = observation bytes per learner.
#[derive(Resource, Debug, Clone, Default)]
pub struct StepBuffers {
    /// `[B, N, O]` u8 observation channels; written by `write_observations` and `auto_reset`.
    pub obs: Vec<u8>,
    /// `[B, N]` action indices; written by the caller before each step.
    pub actions: Vec<u8>,
    /// `[B, N]` rewards of the last step; written by `assign_rewards`.
    pub rewards: Vec<f32>,
    /// `[B]` 1 when the last step ended the episode by the rules; written by the episode-end phase of `step_arenas`.
    pub terminated: Vec<u8>,
    /// `[B]` 1 when the last step hit `max_steps`; written by the episode-end phase of `step_arenas`.
    pub truncated: Vec<u8>,
    /// `[B, N, O]` the observation of the step that ended each arena's episode, before the
    /// auto-reset overwrote `obs` (what a truncated episode bootstraps from); written by
    /// `step_arenas` for the arenas whose `terminated` or `truncated` is set, stale
    /// elsewhere.
    pub final_obs: Vec<u8>,
    /// S: global-state bytes per arena while the batch keeps the global state
    /// (`EnvBatch::set_global_state`), 0 otherwise.
    pub state_width: usize,
    /// `[B, S]` every arena's global state, written with the observations; `[B]` unused bytes
    /// while `state_width` is 0 (rows of at least one byte, as `EpisodeEnds::counters`).
    pub state: Vec<u8>,
    /// `[B, S]` the global state of the step that ended each arena's episode (as `final_obs`).
    pub final_state: Vec<u8>,
    /// `[B, N, A]` 1 where a learner's action is legal, written with the observations when the
    /// substrate keeps masks (`Layout::action_mask`); `[B]` unused bytes otherwise.
    pub action_mask: Vec<u8>,
    /// `[B, N, A]` the action mask of the step that ended each arena's episode (as
    /// `final_obs`): what a truncated episode's bootstrap may choose from.
    pub final_action_mask: Vec<u8>,
}

/// What each arena's last finished episode ended with: `[B, M]` its agents' returns, `[B, C]`
/// its counters (C = `Layout::counter_names`, rows of at least one) and `[B]` its clock. Staged by `step_arenas` for
/// every arena whose episode ended this step, before the respawn clears them, so the episode
/// log reads them without a second pass over the batch; stale elsewhere.
#[derive(Resource, Debug, Clone, Default)]
pub struct EpisodeEnds {
    /// `[B, M]` each agent's return over the episode.
    pub returns: Vec<f32>,
    /// `[B, C]` the episode's counters.
    pub counters: Vec<u32>,
    /// `[B]` the clock at the episode's last step (`t` its length).
    pub clock: Vec<EpisodeClock>,
}

/// `[B, N, g]` every learner's recurrent hidden state (g floats each): the dense buffer of the
/// agents' recurrent-state component, present while a recurrent policy acts in the batch
/// (`EnvBatch::set_hidden_width`). `reset_hidden_states` zeroes an arena's rows when its
/// episode starts; the acting pass reads and replaces them, one pass for the whole batch.
#[derive(Resource, Debug, Clone, Default)]
pub struct HiddenStates {
    /// g: floats per learner.
    pub width: usize,
    /// `[B, N, g]`.
    pub state: Vec<f32>,
}

/// When set, the next run of the reset schedule respawns every arena.
#[derive(Resource, Debug, Clone, Copy, Default)]
pub struct ResetAll(pub bool);

/// Number of arenas B in the batch. Written at spawn.
#[derive(Resource, Debug, Clone, Copy)]
pub struct BatchSize(pub usize);
