//! Everything derived once from a scenario that every arena of a batch shares: the one named
//! place where derived quantities are computed.

pub(crate) mod core;

use bevy_ecs::prelude::*;

pub use self::core::{LayoutCore, SpawnGroup, padded_cells};
use crate::components::CELL_CHANNELS;
use crate::rng;
use crate::scenario::{Control, Grid, LoadedScenario, RoleKind, Scenario, Tile};
use crate::substrate::Derived;

pub use crate::substrate::Rules;
pub use crate::substrate::avatars::AVATAR_CELL_BYTES;

/// Static per-batch data derived from the scenario.
#[derive(Resource, Debug, Clone)]
pub struct Layout {
    /// The scenario this was derived from.
    pub scenario: Scenario,
    /// Substrate-specific derived data.
    pub rules: Rules,
    /// Everything else: what the substrates read.
    pub core: LayoutCore,
}

/// Observation bytes per learner (layouts in docs/scenarios.md).
pub fn observation_len(scenario: &Scenario) -> usize {
    scenario.observation_len()
}

impl Layout {
    /// Derives the layout from a validated scenario.
    pub fn derive(loaded: &LoadedScenario) -> Layout {
        let LoadedScenario { scenario, grid } = loaded;
        let Grid { width, height, .. } = *grid;
        let action_set = scenario.action_set();

        // Slots: learners first (in role order), then scripted agents (in role order).
        let (mut slot_kind, mut slot_control, mut slot_role) = (Vec::new(), Vec::new(), Vec::new());
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
        let agents = slot_kind.len();

        // Spawn decks: per role kind, its own spawn cells and the any-role ones.
        let mut spawn_groups = Vec::new();
        let mut deck_template = Vec::new();
        if scenario.substrate.uses_map() {
            for kind in scenario.substrate.role_kinds() {
                let slots: Vec<u16> = (0..agents)
                    .filter(|&s| slot_kind[s] == *kind)
                    .map(|s| s as u16)
                    .collect();
                if slots.is_empty() {
                    continue;
                }
                let start = deck_template.len();
                let anywhere = scenario.substrate.spawns_anywhere();
                for (i, t) in grid.tiles.iter().enumerate() {
                    if (anywhere && t.is_open()) || *t == kind.spawn_tile() || *t == Tile::SpawnAny
                    {
                        deck_template.push(i as u16);
                    }
                }
                spawn_groups.push(SpawnGroup {
                    kind: *kind,
                    deck: start..deck_template.len(),
                    slots,
                });
            }
        }

        // The substrate's part: its rules' data, padding, cell layer and counters.
        let Derived {
            rules,
            pad,
            cells_template,
            counter_names,
        } = scenario.substrate.derive(&scenario.view(), grid);
        let padded_width = width + 2 * pad;
        let deck_cells = deck_template
            .iter()
            .map(|&c| {
                let (x, y) = (c as usize % width, c as usize / width);
                (((y + pad) * padded_width + x + pad) * CELL_CHANNELS) as u32
            })
            .collect();

        let slots_of = |kind: RoleKind| -> Vec<u16> {
            (0..agents)
                .filter(|&s| slot_kind[s] == kind)
                .map(|s| s as u16)
                .collect()
        };
        Layout {
            scenario: scenario.clone(),
            rules,
            core: LayoutCore {
                pursuer_slots: slots_of(RoleKind::Pursuer),
                evader_slots: slots_of(RoleKind::Evader),
                width,
                height,
                open: grid.tiles.iter().map(|t| t.is_open()).collect(),
                pad,
                padded_width,
                cells_template,
                agents,
                learners: scenario.learners_per_arena(),
                slot_kind,
                slot_control,
                slot_role,
                spawn_groups,
                deck_template,
                deck_cells,
                obs_len: observation_len(scenario),
                state_len: scenario.global_state_len(),
                action_mask: scenario.has_action_mask(),
                action_set,
                actions: action_set.len(),
                idle_action: action_set.idle(),
                slip_threshold: rng::threshold(scenario.slip),
                max_steps: scenario.max_steps,
                counter_names,
                reward_shaping: 1.0,
            },
        }
    }
}

impl std::ops::Deref for Layout {
    type Target = LayoutCore;

    fn deref(&self) -> &LayoutCore {
        &self.core
    }
}
