//! One arena's state as the rules see it: borrowed from the batch columns or from an
//! [`ArenaState`](super::ArenaState) ([`ArenaMut`]). A leaf: every substrate's rules take
//! it, and it knows nothing of layouts or the registry.

use crate::components::{
    Alive, AppliedAction, ArenaRng, Carry, Cooldown, EpisodeClock, EpisodeReturn, Facing, GridPos,
    StepReward,
};

/// One arena's state and step buffers, borrowed from the batch columns (or from an
/// [`ArenaState`](super::ArenaState)). Agent slices have M entries in slot order.
pub struct ArenaMut<'a> {
    /// Positions.
    pub pos: &'a mut [GridPos],
    /// Facings (avatar substrates).
    pub facing: &'a mut [Facing],
    /// Alive flags.
    pub alive: &'a mut [Alive],
    /// Actions applied this step (after chance).
    pub applied: &'a mut [AppliedAction],
    /// This step's rewards.
    pub reward: &'a mut [StepReward],
    /// Episode returns so far.
    pub ret: &'a mut [EpisodeReturn],
    /// Inventories or vesicles.
    pub carry: &'a mut [Carry],
    /// Cooldowns.
    pub cooldown: &'a mut [Cooldown],
    /// Random streams.
    pub rng: &'a mut ArenaRng,
    /// The cell layer.
    pub cells: &'a mut [u8],
    /// Per-episode counters.
    pub counters: &'a mut [u32],
    /// Episode clock.
    pub clock: &'a mut EpisodeClock,
    /// Spawn permutation scratch.
    pub deck: &'a mut [u16],
    /// Set by the rules when they end the episode this step.
    pub ended: &'a mut bool,
    /// `[N]` learners' chosen actions.
    pub actions: &'a [u8],
    /// `[N, O]` learners' observations.
    pub obs: &'a mut [u8],
    /// `[S]` the arena's global state, written after the observations; empty while the batch
    /// keeps none.
    pub state: &'a mut [u8],
    /// `[N, A]` learners' legal actions (1 legal), written after the observations; empty when
    /// the substrate keeps no mask.
    pub mask: &'a mut [u8],
    /// `[N]` learners' rewards.
    pub rewards: &'a mut [f32],
    /// Terminated flag.
    pub terminated: &'a mut u8,
    /// Truncated flag.
    pub truncated: &'a mut u8,
}
