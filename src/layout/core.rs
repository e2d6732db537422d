//! The substrate-independent part of a [`Layout`](super::Layout) ([`LayoutCore`]): the map,
//! the slots, the spawn decks, the observation and action sizes. What the substrates' rules
//! read; a leaf, so substrates depend on it and not on the registry's `Rules` enum that
//! [`Layout`](super::Layout) holds beside it.

use crate::components::CELL_CHANNELS;
use crate::scenario::actions::ActionSet;
use crate::scenario::map::{Grid, Tile};
use crate::scenario::role::{Control, RoleKind};

/// One role kind's spawn cells and the slots that spawn on them.
#[derive(Debug, Clone)]
pub struct SpawnGroup {
    /// The role kind.
    pub kind: RoleKind,
    /// Range of this group's segment in the arena's `SpawnDeck`.
    pub deck: std::ops::Range<usize>,
    /// Agent slots that draw from this segment (each gets a distinct cell).
    pub slots: Vec<u16>,
}

/// Static per-batch data derived from the scenario, without the substrate's own data.
#[derive(Debug, Clone)]
pub struct LayoutCore {
    /// Map columns (1 for matrix games).
    pub width: usize,
    /// Map rows (1 for matrix games).
    pub height: usize,
    /// `width * height`, true where agents may stand.
    pub open: Vec<bool>,
    /// Padding around the map in grid `Cells` (the farthest a window reaches).
    pub pad: usize,
    /// Columns of the padded cell grid.
    pub padded_width: usize,
    /// Initial content of every arena's `Cells`.
    pub cells_template: Vec<u8>,
    /// M: agents per arena.
    pub agents: usize,
    /// N: learners per arena (slots `0..N`).
    pub learners: usize,
    /// Role kind per slot.
    pub slot_kind: Vec<RoleKind>,
    /// Control per slot.
    pub slot_control: Vec<Control>,
    /// Role index (into `scenario.roles`) per slot.
    pub slot_role: Vec<u16>,
    /// Slots of pursuers, ascending.
    pub pursuer_slots: Vec<u16>,
    /// Slots of evaders, ascending.
    pub evader_slots: Vec<u16>,
    /// Spawn groups, one per role kind present (none for matrix games).
    pub spawn_groups: Vec<SpawnGroup>,
    /// Initial content of every arena's `SpawnDeck`.
    pub deck_template: Vec<u16>,
    /// The cell layer's byte offset of each `deck_template` cell (same order).
    pub deck_cells: Vec<u32>,
    /// Observation bytes per learner.
    pub obs_len: usize,
    /// Global-state bytes per arena (written only while the batch keeps the global state).
    pub state_len: usize,
    /// Whether the substrate keeps an action mask `[N, A]` per arena.
    pub action_mask: bool,
    /// The action set.
    pub action_set: ActionSet,
    /// Number of actions.
    pub actions: usize,
    /// The action of an agent that left the arena.
    pub idle_action: u8,
    /// Slip probability scaled to 2^32 (see `rng::threshold`).
    pub slip_threshold: u64,
    /// Episode step limit.
    pub max_steps: u32,
    /// Names of the per-episode substrate counters.
    pub counter_names: Vec<String>,
    /// Scale of the substrates' shaped reward terms (overcooked's): 1.0 unless a run anneals
    /// it (`EnvBatch::set_reward_shaping`, the run config's `reward_shaping`).
    pub reward_shaping: f32,
}

/// A padded cell layer over `grid` (`pad` cells of border, [`CELL_CHANNELS`] bytes per cell),
/// each cell's bytes written by `fill` from its tile (`None` outside the map).
pub fn padded_cells(
    grid: &Grid,
    pad: usize,
    mut fill: impl FnMut(Option<Tile>, &mut [u8]),
) -> Vec<u8> {
    let (padded_width, padded_height) = (grid.width + 2 * pad, grid.height + 2 * pad);
    let mut cells = vec![0u8; padded_width * padded_height * CELL_CHANNELS];
    for (k, cell) in cells.chunks_exact_mut(CELL_CHANNELS).enumerate() {
        let (px, py) = (k % padded_width, k / padded_width);
        fill(
            grid.tile(px as i32 - pad as i32, py as i32 - pad as i32),
            cell,
        );
    }
    cells
}

impl LayoutCore {
    /// Whether (x, y) is on the map and open.
    #[inline]
    pub fn is_open(&self, x: i32, y: i32) -> bool {
        x >= 0
            && y >= 0
            && (x as usize) < self.width
            && (y as usize) < self.height
            && self.open[y as usize * self.width + x as usize]
    }

    /// Bytes per arena of the action mask buffer (`[N, A]`, or 0 without masks).
    #[inline]
    pub fn mask_len(&self) -> usize {
        if self.action_mask {
            self.learners * self.actions
        } else {
            0
        }
    }

    /// Index of cell (x, y)'s first byte in a padded grid `Cells` layer; (x, y) may lie in the
    /// padding (up to `pad` cells outside the map).
    #[inline]
    pub fn cell_index(&self, x: i16, y: i16) -> usize {
        let pad = self.pad as isize;
        let i = (y as isize + pad) * self.padded_width as isize + x as isize + pad;
        i as usize * CELL_CHANNELS
    }

    /// Bytes one arena needs across components and step buffers (for the memory preflight).
    pub fn bytes_per_arena(&self) -> usize {
        use crate::components::*;
        let agent = size_of::<AgentId>()
            + size_of::<GridPos>()
            + size_of::<Alive>()
            + size_of::<AppliedAction>()
            + size_of::<StepReward>()
            + size_of::<EpisodeReturn>()
            + size_of::<Facing>()
            + size_of::<Carry>()
            + size_of::<Cooldown>()
            + 96; // entity bookkeeping and change ticks
        let arena = size_of::<ArenaRng>()
            + self.cells_template.len()
            + self.deck_template.len() * 2
            + self.counter_names.len() * 4
            + 512;
        // obs and final_obs, actions, rewards, the two flags, the action mask; what an
        // episode ended with. The global state (opt-in) is counted by its caller.
        let mask = if self.action_mask { self.actions } else { 0 };
        let buffers = self.learners * (2 * self.obs_len + 1 + 4 + mask) + 2;
        let ends = self.agents * 4 + self.counter_names.len() * 4 + size_of::<EpisodeClock>();
        let buffers = buffers + ends;
        self.agents * agent + arena + buffers
    }
}
