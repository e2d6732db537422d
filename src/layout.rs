//! Everything derived once from a scenario that every arena of a batch shares: the one named
//! place where derived quantities are computed.

use bevy_ecs::prelude::*;

use crate::components::{CELL_CHANNELS, CELL_EVADERS, CELL_OBSTACLE, CELL_PURSUERS};
use crate::rng;
use crate::scenario::{
    Channel, Control, Grid, LoadedScenario, PursuitParams, RoleKind, Scenario, Substrate, Tile,
};

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

/// Static per-batch data derived from the scenario.
#[derive(Resource, Debug, Clone)]
pub struct Layout {
    /// The scenario this was derived from.
    pub scenario: Scenario,
    /// Pursuit's parameters.
    pub pursuit: PursuitParams,
    /// Map columns.
    pub width: usize,
    /// Map rows.
    pub height: usize,
    /// `width * height`, true where agents may stand.
    pub open: Vec<bool>,
    /// Padding around the map in `Cells` (the observation radius).
    pub pad: usize,
    /// Columns of the padded cell grid.
    pub padded_width: usize,
    /// The padded cell grid with walls and padding marked and no agents: each step starts here.
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
    /// Spawn groups, one per role kind present.
    pub spawn_groups: Vec<SpawnGroup>,
    /// Initial content of every arena's `SpawnDeck`.
    pub deck_template: Vec<u16>,
    /// Window side in cells.
    pub side: usize,
    /// Observation bytes per learner.
    pub obs_len: usize,
    /// For each observation channel, its offset in a `Cells` cell.
    pub channel_offsets: Vec<usize>,
    /// True when the observation channels are exactly the cell layer's, so a window row is one
    /// copy.
    pub obs_is_cell_layout: bool,
    /// Number of actions.
    pub actions: usize,
    /// Slip probability scaled to 2^32 (see `rng::threshold`).
    pub slip_threshold: u64,
    /// Episode step limit.
    pub max_steps: u32,
}

impl Layout {
    /// Derives the layout from a validated scenario.
    pub fn derive(loaded: &LoadedScenario) -> Layout {
        let LoadedScenario { scenario, grid } = loaded;
        let Substrate::Pursuit(pursuit) = &scenario.substrate;
        let Grid { width, height, .. } = *grid;
        let pad = scenario.observation.radius as usize;
        let padded_width = width + 2 * pad;
        let padded_height = height + 2 * pad;
        let mut cells_template = vec![0u8; padded_width * padded_height * CELL_CHANNELS];
        for py in 0..padded_height {
            for px in 0..padded_width {
                let open = grid.is_open(px as i32 - pad as i32, py as i32 - pad as i32);
                cells_template[(py * padded_width + px) * CELL_CHANNELS + CELL_OBSTACLE] =
                    u8::from(!open);
            }
        }

        // Slots: learners first (in role order), then scripted agents (in role order).
        let mut slot_kind = Vec::new();
        let mut slot_control = Vec::new();
        let mut slot_role = Vec::new();
        for learners_pass in [true, false] {
            for (r, role) in scenario.roles.iter().enumerate() {
                if (role.control() == Control::Learner) == learners_pass {
                    for _ in 0..role.count {
                        slot_kind.push(role.kind);
                        slot_control.push(role.control());
                        slot_role.push(r as u16);
                    }
                }
            }
        }

        // Spawn decks: per role kind, its own spawn cells and the any-role ones.
        let mut spawn_groups = Vec::new();
        let mut deck_template = Vec::new();
        for kind in scenario.substrate.role_kinds() {
            let slots: Vec<u16> = (0..slot_kind.len())
                .filter(|&s| slot_kind[s] == *kind)
                .map(|s| s as u16)
                .collect();
            if slots.is_empty() {
                continue;
            }
            let start = deck_template.len();
            for (i, t) in grid.tiles.iter().enumerate() {
                if *t == kind.spawn_tile() || *t == Tile::SpawnAny {
                    deck_template.push(i as u16);
                }
            }
            spawn_groups.push(SpawnGroup {
                kind: *kind,
                deck: start..deck_template.len(),
                slots,
            });
        }

        let channel_offsets: Vec<usize> = scenario
            .observation
            .channels
            .iter()
            .map(|c| match c {
                Channel::Obstacle => CELL_OBSTACLE,
                Channel::Pursuers => CELL_PURSUERS,
                Channel::Evaders => CELL_EVADERS,
            })
            .collect();
        let obs_is_cell_layout = channel_offsets == [CELL_OBSTACLE, CELL_PURSUERS, CELL_EVADERS];

        let slots_of = |kind: RoleKind| -> Vec<u16> {
            (0..slot_kind.len())
                .filter(|&s| slot_kind[s] == kind)
                .map(|s| s as u16)
                .collect()
        };
        Layout {
            pursuer_slots: slots_of(RoleKind::Pursuer),
            evader_slots: slots_of(RoleKind::Evader),
            scenario: scenario.clone(),
            pursuit: pursuit.clone(),
            width,
            height,
            open: grid.tiles.iter().map(|t| t.is_open()).collect(),
            pad,
            padded_width,
            cells_template,
            agents: slot_kind.len(),
            learners: scenario.learners_per_arena(),
            slot_kind,
            slot_control,
            slot_role,
            spawn_groups,
            deck_template,
            side: scenario.observation.side(),
            obs_len: scenario.observation.len(),
            channel_offsets,
            obs_is_cell_layout,
            actions: scenario.actions.len(),
            slip_threshold: rng::threshold(scenario.slip),
            max_steps: scenario.max_steps,
        }
    }

    /// Whether (x, y) is on the map and open.
    #[inline]
    pub fn is_open(&self, x: i32, y: i32) -> bool {
        x >= 0
            && y >= 0
            && (x as usize) < self.width
            && (y as usize) < self.height
            && self.open[y as usize * self.width + x as usize]
    }

    /// Index of map cell (x, y)'s first channel in the padded `Cells` grid.
    #[inline]
    pub fn cell_index(&self, x: i16, y: i16) -> usize {
        ((y as usize + self.pad) * self.padded_width + x as usize + self.pad) * CELL_CHANNELS
    }

    /// Bytes one arena needs across components and step buffers (for the memory preflight).
    pub fn bytes_per_arena(&self) -> usize {
        let agent = size_of::<crate::components::AgentId>()
            + size_of::<crate::components::GridPos>()
            + size_of::<crate::components::Alive>()
            + size_of::<crate::components::AppliedAction>()
            + size_of::<crate::components::StepReward>()
            + 64; // entity bookkeeping and change ticks
        let arena = size_of::<crate::components::ArenaRng>()
            + self.cells_template.len()
            + self.deck_template.len() * 2
            + 256;
        let buffers = self.learners * (self.obs_len + 1 + 4) + 2;
        self.agents * agent + arena + buffers
    }
}
