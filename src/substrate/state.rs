//! One arena held by itself, outside any World ([`ArenaState`]): what exact analysis and the
//! viewer decode a state into, lent to the rules as an [`ArenaMut`].

use super::arena::ArenaMut;
use crate::components::{
    Alive, AppliedAction, ArenaRng, Carry, Cooldown, EpisodeClock, EpisodeReturn, Facing, GridPos,
    StepReward,
};
use crate::layout::Layout;

/// One arena held by itself, outside any World: what exact analysis decodes a state index into.
/// [`ArenaState::view`] lends it as an [`ArenaMut`] so the same rule functions run on it.
#[derive(Debug, Clone)]
pub struct ArenaState {
    /// Position per slot.
    pub pos: Vec<GridPos>,
    /// Facing per slot.
    pub facing: Vec<Facing>,
    /// Alive flag per slot.
    pub alive: Vec<Alive>,
    /// Carried items per slot.
    pub carry: Vec<Carry>,
    /// Cooldown per slot.
    pub cooldown: Vec<Cooldown>,
    /// The cell layer.
    pub cells: Vec<u8>,
    /// Counters.
    pub counters: Vec<u32>,
    /// Clock.
    pub clock: EpisodeClock,
    pub(super) applied: Vec<AppliedAction>,
    pub(super) reward: Vec<StepReward>,
    pub(super) ret: Vec<EpisodeReturn>,
    pub(super) deck: Vec<u16>,
    pub(super) obs: Vec<u8>,
    pub(super) rewards: Vec<f32>,
    pub(super) rng: ArenaRng,
    pub(super) actions: Vec<u8>,
    pub(super) ended: bool,
    pub(super) terminated: u8,
    pub(super) truncated: u8,
}

/// What one step did to an arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepOutcome {
    /// The rules ended the episode.
    pub terminated: bool,
}

impl ArenaState {
    /// A state with the given agents (facing north, nothing carried); cells are rebuilt.
    pub fn new(layout: &Layout, pos: Vec<GridPos>, alive: Vec<Alive>) -> ArenaState {
        let m = layout.agents;
        let mut state = ArenaState {
            pos,
            facing: vec![Facing(0); m],
            alive,
            carry: vec![Carry::default(); m],
            cooldown: vec![Cooldown(0); m],
            cells: layout.cells_template.clone(),
            counters: vec![0; layout.counter_names.len()],
            clock: EpisodeClock::default(),
            applied: vec![AppliedAction(layout.idle_action); m],
            reward: vec![StepReward(0.0); m],
            ret: vec![EpisodeReturn(0.0); m],
            deck: layout.deck_template.clone(),
            obs: vec![0; layout.learners * layout.obs_len],
            rewards: vec![0.0; layout.learners],
            rng: crate::rng::arena_streams(0, 0),
            actions: vec![layout.idle_action; layout.learners],
            ended: false,
            terminated: 0,
            truncated: 0,
        };
        let mut a = state.view();
        layout.rules.rebuild_cells(layout, &mut a);
        state
    }

    /// Lends the state as an [`ArenaMut`].
    pub fn view(&mut self) -> ArenaMut<'_> {
        ArenaMut {
            pos: &mut self.pos,
            facing: &mut self.facing,
            alive: &mut self.alive,
            applied: &mut self.applied,
            reward: &mut self.reward,
            ret: &mut self.ret,
            carry: &mut self.carry,
            cooldown: &mut self.cooldown,
            rng: &mut self.rng,
            cells: &mut self.cells,
            counters: &mut self.counters,
            clock: &mut self.clock,
            deck: &mut self.deck,
            ended: &mut self.ended,
            actions: &self.actions,
            obs: &mut self.obs,
            state: &mut [],
            mask: &mut [],
            rewards: &mut self.rewards,
            terminated: &mut self.terminated,
            truncated: &mut self.truncated,
        }
    }

    /// This step's rewards by slot (after [`transition`](crate::substrate::transition)).
    pub fn rewards(&self) -> &[StepReward] {
        &self.reward
    }

    /// Writes and returns the learners' observations `[N, O]` of this state.
    pub fn observe(&mut self, layout: &Layout) -> &[u8] {
        let mut a = self.view();
        layout.rules.write_observations(layout, &mut a);
        &self.obs
    }

    /// Recomputes the cell layer's derived parts after positions or alive flags were set by
    /// hand.
    pub fn rebuild(&mut self, layout: &Layout) {
        let mut a = self.view();
        layout.rules.rebuild_cells(layout, &mut a);
    }
}
