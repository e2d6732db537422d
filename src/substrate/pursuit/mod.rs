//! Pursuit (PettingZoo SISL Pursuit v5, simultaneous moves): pursuers hunt evaders on the map.
//!
//! Cell layer: a padded grid of `CELL_CHANNELS` bytes per cell (obstacle, pursuers, evaders
//! standing there), rebuilt from the agents after every move; observations are square windows
//! copied out of it. Counters: `catches`.

mod params;
pub mod rules;
#[cfg(feature = "viewer")]
mod viewer;

pub use params::{MoveOrder, PursuitParams};
pub use rules::{
    Interactions, MOVES, apply_moves, assign_rewards, catch_then_move_evaders, cycle_pursuers,
    resolve_interactions, tally_cells, terminated, write_observations,
};

use crate::components::{Alive, CELL_EVADERS, CELL_OBSTACLE, CELL_PURSUERS};
use crate::error::{ErrorClass, ScenarioError};
use crate::layout::core::{LayoutCore, padded_cells};
use crate::scenario::actions::ActionSet;
use crate::scenario::check::{Check, f, i};
use crate::scenario::map::{Grid, Tile};
use crate::scenario::observation::{Channel, ObsField, ObservationSpec};
use crate::scenario::role::RoleKind;
use crate::scenario::view::ScenarioView;
use crate::substrate::{ArenaMut, Derived, ExactModel, SubstrateRules};

/// Pursuit's derived data.
#[derive(Debug, Clone)]
pub struct Pursuit {
    /// The parameters.
    pub params: PursuitParams,
    /// Window side in cells.
    pub side: usize,
    /// For each observation channel, its offset in a `Cells` cell.
    pub channel_offsets: Vec<usize>,
    /// True when the observation channels are exactly the cell layer's, so a window row is one
    /// copy.
    pub obs_is_cell_layout: bool,
    /// For each map cell (row-major), bit `k` set when move `k` from it ends on an open cell.
    pub moves_open: Vec<u8>,
}

/// The observation channels of a scenario, defaults resolved.
fn channels(scenario: &ScenarioView) -> Vec<Channel> {
    if scenario.observation.channels.is_empty() {
        <Pursuit as SubstrateRules>::channels().to_vec()
    } else {
        scenario.observation.channels.clone()
    }
}

impl SubstrateRules for Pursuit {
    type Params = PursuitParams;
    const NAME: &'static str = "pursuit";
    const TEMPLATE: &'static str = include_str!("template.ron");

    fn role_kinds() -> &'static [RoleKind] {
        &[RoleKind::Pursuer, RoleKind::Evader]
    }

    fn channels() -> &'static [Channel] {
        &[Channel::Obstacle, Channel::Pursuers, Channel::Evaders]
    }

    fn default_actions(_: &PursuitParams) -> ActionSet {
        ActionSet::Move5
    }

    fn allows_tile(tile: Tile) -> bool {
        tile != Tile::Token
    }

    fn field_help(field: &str) -> Option<&'static str> {
        Some(match field {
            "substrate.surround" | "substrate.shared_reward" => "true or false",
            "substrate.move_order" => "simultaneous or pettingzoo",
            "substrate.n_catch" => "a whole number 1..65535",
            "substrate.tag_reward"
            | "substrate.catch_reward"
            | "substrate.urgency_reward"
            | "substrate.escape_reward" => "a finite number, e.g. 0.5",
            _ => return None,
        })
    }

    fn check_params(p: &PursuitParams, _: &ScenarioView, c: &Check) -> Result<(), ScenarioError> {
        let sub = |field: &str| vec![f("substrate"), f(field)];
        if !p.surround && p.n_catch == 0 {
            return Err(c.bad(
                &sub("n_catch"),
                "n_catch is 0".into(),
                "at least 1 pursuer on the evader's cell",
            ));
        }
        for (name, v) in [
            ("tag_reward", p.tag_reward),
            ("catch_reward", p.catch_reward),
            ("urgency_reward", p.urgency_reward),
            ("escape_reward", p.escape_reward),
        ] {
            c.finite(&sub(name), v)?;
        }
        Ok(())
    }

    fn check_observation(
        _: &PursuitParams,
        scenario: &ScenarioView,
        grid: &Grid,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        let obs = &scenario.observation;
        let name = Self::NAME;
        c.observation_unused(name, obs, &["window"])?;
        let Some(radius) = obs.radius else {
            return Err(c.at(
                &[f("observation")],
                None,
                ErrorClass::MissingField,
                "pursuit needs observation.radius".into(),
                "observation: (radius: 3)".into(),
            ));
        };
        let (width, height) = (grid.width, grid.height);
        let side = obs.side();
        if side > width || side > height {
            return Err(c.at(
                &[f("observation"), f("radius")],
                None,
                ErrorClass::WindowTooLarge,
                format!(
                    "radius {radius} gives a {side}x{side} window, larger than the {width}x{height} map"
                ),
                format!("radius at most {}", (width.min(height) - 1) / 2),
            ));
        }
        let channels = Self::channels();
        let names = || {
            channels
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (k, ch) in obs.channels.iter().enumerate() {
            let path = [f("observation"), f("channels"), i(k)];
            if obs.channels[..k].contains(ch) {
                return Err(c.bad(
                    &path,
                    format!("channel {} appears twice", ch.name()),
                    "each channel at most once",
                ));
            }
            if !channels.contains(ch) {
                return Err(c.bad(
                    &path,
                    format!("channel {} is not produced by {name}", ch.name()),
                    names(),
                ));
            }
        }
        Ok(())
    }

    fn resolved_observation(_: &PursuitParams, scenario: &ScenarioView) -> ObservationSpec {
        ObservationSpec {
            channels: channels(scenario),
            ..scenario.observation.clone()
        }
    }

    /// The square window around the agent, one byte per channel per cell: obstacle 0/1, the
    /// live pursuers and evaders standing there (at most all of them, saturating at 255).
    fn observation_layout(_: &PursuitParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let side = scenario.observation.side();
        let channels = channels(scenario);
        let count = |kind: RoleKind| -> u8 {
            let n: usize = scenario
                .roles
                .iter()
                .filter(|r| r.kind == kind)
                .map(|r| r.count as usize)
                .sum();
            n.min(u8::MAX as usize) as u8
        };
        let max = channels
            .iter()
            .map(|c| match c {
                Channel::Obstacle => 1,
                Channel::Pursuers => count(RoleKind::Pursuer),
                Channel::Evaders => count(RoleKind::Evader),
            })
            .collect();
        let names: Vec<&str> = channels.iter().map(|c| c.name()).collect();
        vec![
            ObsField::new(
                "window",
                &[("row", side), ("column", side), ("channel", channels.len())],
                0,
                "square window centred on the agent, rows top to bottom; obstacle 1 on walls and \
                 off the map, then live agents per cell; all zero once the agent left",
            )
            .entries(&names)
            .entry_max(max),
        ]
    }

    fn describe(p: &PursuitParams) -> String {
        let catches = if p.surround {
            "surround catches".to_string()
        } else {
            format!("n_catch {}", p.n_catch)
        };
        match p.move_order {
            MoveOrder::Simultaneous => catches,
            MoveOrder::Pettingzoo => format!("{catches}, PettingZoo move order"),
        }
    }

    fn derive(params: &PursuitParams, scenario: &ScenarioView, grid: &Grid) -> Derived<Self> {
        let channel_offsets: Vec<usize> = channels(scenario)
            .iter()
            .map(|c| match c {
                Channel::Obstacle => CELL_OBSTACLE,
                Channel::Pursuers => CELL_PURSUERS,
                Channel::Evaders => CELL_EVADERS,
            })
            .collect();
        let obs_is_cell_layout = channel_offsets == [CELL_OBSTACLE, CELL_PURSUERS, CELL_EVADERS];
        // At least one cell of padding: tags and surround catches read the four neighbours of
        // every agent, also with a radius-0 window.
        let pad = (scenario.observation.radius.unwrap_or(0) as usize).max(1);
        let cells_template = padded_cells(grid, pad, |tile, cell: &mut [u8]| {
            cell[CELL_OBSTACLE] = u8::from(!tile.is_some_and(Tile::is_open));
        });
        Derived {
            rules: Pursuit {
                params: params.clone(),
                side: scenario.observation.side(),
                channel_offsets,
                obs_is_cell_layout,
                moves_open: rules::moves_open(grid.width, grid.height, pad, &cells_template),
            },
            pad,
            cells_template,
            counter_names: vec!["catches".to_string()],
        }
    }

    fn apply_moves(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        match self.params.move_order {
            MoveOrder::Simultaneous => {
                apply_moves(layout, &self.moves_open, a.pos, a.alive, a.applied);
                tally_cells(layout, a.pos, a.alive, a.cells);
            }
            MoveOrder::Pettingzoo => {
                let p = &self.params;
                cycle_pursuers(layout, p, a.pos, a.alive, a.applied, a.cells, a.reward);
            }
        }
    }

    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        let p = &self.params;
        match p.move_order {
            MoveOrder::Simultaneous => {
                let found = resolve_interactions(layout, p, a.pos, a.alive, a.cells, a.reward);
                a.counters[0] += found.caught as u32;
                *a.ended = found.evaders_left == 0;
            }
            MoveOrder::Pettingzoo => {
                let caught = catch_then_move_evaders(
                    layout, p, a.pos, a.alive, a.applied, a.cells, a.reward,
                );
                a.counters[0] += caught as u32;
                *a.ended = terminated(layout, a.alive);
            }
        }
    }

    fn assign_rewards(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        assign_rewards(layout, &self.params, a.alive, a.reward);
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        write_observations(layout, self, a.pos, a.alive, a.cells, a.obs);
    }

    /// The whole map (PettingZoo's `state()`: obstacles, pursuer and evader counts per cell),
    /// where each pursuer sees only its window.
    fn global_state_layout(_: &PursuitParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let width = scenario.map.first().map_or(0, |r| r.chars().count());
        let count = |kind| {
            let agents = scenario.roles.iter().filter(|r| r.kind == kind);
            agents.map(|r| r.count as usize).sum::<usize>().min(255) as u8
        };
        let (pursuers, evaders) = (count(RoleKind::Pursuer), count(RoleKind::Evader));
        vec![
            ObsField::new(
                "map",
                &[("row", scenario.map.len()), ("column", width), ("byte", 3)],
                pursuers.max(evaders).max(1),
                "the whole map, row-major from the top-left: obstacle, pursuers and evaders \
                 standing on the cell (caught evaders leave)",
            )
            .entries(&["obstacle", "pursuers", "evaders"])
            .entry_max(vec![1, pursuers, evaders]),
        ]
    }

    fn write_global_state(&self, layout: &LayoutCore, a: &ArenaMut, state: &mut [u8]) {
        let cells = state.chunks_exact_mut(3).take(layout.width * layout.height);
        for (k, out) in cells.enumerate() {
            let (x, y) = ((k % layout.width) as i16, (k / layout.width) as i16);
            let i = layout.cell_index(x, y);
            out[0] = a.cells[i + CELL_OBSTACLE];
            out[1] = a.cells[i + CELL_PURSUERS];
            out[2] = a.cells[i + CELL_EVADERS];
        }
    }

    fn rebuild_cells(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        tally_cells(layout, a.pos, a.alive, a.cells);
    }

    #[cfg(feature = "viewer")]
    fn observation_image(
        &self,
        layout: &LayoutCore,
        _slot: usize,
        obs: &[u8],
    ) -> Option<crate::viewer::obs_image::ObsImage> {
        viewer::observation_image(self, layout, obs)
    }

    fn exact_model(&self) -> ExactModel {
        ExactModel::Positions
    }

    fn terminated(&self, layout: &LayoutCore, alive: &[Alive]) -> bool {
        terminated(layout, alive)
    }
}
