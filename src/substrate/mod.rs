//! Substrates: the rules of each game, written once as functions over one arena's state, plus
//! what every substrate shares: chance outcomes (slip, scripted moves) and spawning.

pub mod pursuit;

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use crate::components::{Alive, AppliedAction, ArenaRng, GridPos};
use crate::layout::Layout;
use crate::rng::below;
use crate::scenario::{Control, RoleKind};

/// One arena's state held by itself, outside any World: what exact analysis decodes a state
/// index into. The same rule functions the systems call run on it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArenaState {
    /// Position per slot.
    pub pos: Vec<GridPos>,
    /// Alive flag per slot.
    pub alive: Vec<Alive>,
    /// The cell layer (see `components::Cells`).
    pub cells: Vec<u8>,
}

/// What one step did to an arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepOutcome {
    /// Evaders caught this step.
    pub caught: u16,
    /// No evader is left.
    pub terminated: bool,
}

impl ArenaState {
    /// A state with the given agents; the cell layer is computed.
    pub fn new(layout: &Layout, pos: Vec<GridPos>, alive: Vec<Alive>) -> ArenaState {
        let mut cells = layout.cells_template.clone();
        pursuit::tally_cells(layout, &pos, &alive, &mut cells);
        ArenaState { pos, alive, cells }
    }
}

/// The rules of one step on one arena, given the applied actions (chance already resolved):
/// move, cells, interactions, rewards, termination. The step schedule runs exactly these
/// functions, one system each, over every arena.
pub fn transition(
    layout: &Layout,
    state: &mut ArenaState,
    applied: &[AppliedAction],
    reward: &mut [crate::components::StepReward],
) -> StepOutcome {
    pursuit::apply_moves(layout, &mut state.pos, &state.alive, applied);
    pursuit::tally_cells(layout, &state.pos, &state.alive, &mut state.cells);
    let caught = pursuit::resolve_interactions(
        layout,
        &state.pos,
        &mut state.alive,
        &mut state.cells,
        reward,
    );
    pursuit::assign_rewards(layout, &state.alive, reward);
    StepOutcome {
        caught,
        terminated: pursuit::terminated(layout, &state.alive),
    }
}

/// Draws this step's chance outcomes into the applied actions: a learner's action is kept, or
/// with probability `slip` replaced by a uniformly random one (possibly the same); a random
/// walker's action is uniform. Removed agents draw nothing. This is the only place a step
/// consumes randomness, before any rule runs.
pub fn draw_chance(
    layout: &Layout,
    rng: &mut ArenaRng,
    alive: &[Alive],
    learner_actions: &[u8],
    applied: &mut [AppliedAction],
) {
    let n = layout.actions as u32;
    for slot in 0..layout.agents {
        if !alive[slot].0 {
            applied[slot] = AppliedAction(layout.actions as u8 - 1);
            continue;
        }
        applied[slot] = AppliedAction(match layout.slot_control[slot] {
            Control::Learner => {
                let intended = learner_actions[slot];
                if layout.slip_threshold == 0 {
                    intended
                } else {
                    let bits = rng.slip.next_u64();
                    if (bits & 0xffff_ffff) < layout.slip_threshold {
                        below((bits >> 32) as u32, n) as u8
                    } else {
                        intended
                    }
                }
            }
            Control::RandomWalk => below(rng.walk.next_u32(), n) as u8,
        });
    }
}

/// Places every agent on a fresh spawn cell (distinct within a role kind, drawn uniformly by a
/// partial Fisher-Yates over the arena's deck) and revives it. Returns the number of evaders.
pub fn spawn(
    layout: &Layout,
    rng: &mut ChaCha8Rng,
    deck: &mut [u16],
    pos: &mut [GridPos],
    alive: &mut [Alive],
) -> u16 {
    for group in &layout.spawn_groups {
        let cells = &mut deck[group.deck.clone()];
        for (k, &slot) in group.slots.iter().enumerate() {
            let j = k + below(rng.next_u32(), (cells.len() - k) as u32) as usize;
            cells.swap(k, j);
            let cell = cells[k] as usize;
            pos[slot as usize] = GridPos {
                x: (cell % layout.width) as i16,
                y: (cell / layout.width) as i16,
            };
            alive[slot as usize] = Alive(true);
        }
    }
    layout
        .slot_kind
        .iter()
        .filter(|k| **k == RoleKind::Evader)
        .count() as u16
}
