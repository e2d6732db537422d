//! Level-Based Foraging (lbforaging 2.0.0, Papoudakis et al. 2021): agents and food items have
//! levels; adjacent agents load a food together when their levels sum to at least its level.
//!
//! Cell layer: `[food_spawned u16 LE][agent levels][foods (row, column, level, present)]`
//! ([`rules::CellLayout`]), which rollout frames record as their items. Counters: `loads`,
//! `failed_loads`.

mod params;
pub mod rules;
pub mod views;

pub use params::LbfParams;
pub use rules::CellLayout;

use crate::error::ScenarioError;
use crate::layout::core::LayoutCore;
use crate::render::draw::{Instance, rgb, shape, square};
use crate::rollout::frame::Frame;
use crate::scenario::actions::ActionSet;
use crate::scenario::check::{Check, f};
use crate::scenario::map::{Grid, Tile};
use crate::scenario::observation::ObsField;
use crate::scenario::view::ScenarioView;
use crate::substrate::{ArenaMut, Derived, SubstrateRules};

/// Level-Based Foraging's derived data.
#[derive(Debug, Clone)]
pub struct Lbf {
    /// The parameters.
    pub params: LbfParams,
    /// Where things sit in the cell layer.
    pub cells: CellLayout,
    /// The sight radius in cells (the field's larger side when the asset sets none).
    pub sight: u16,
}

/// The map's rows and columns.
fn field(scenario: &ScenarioView) -> (usize, usize) {
    let rows = scenario.map.len();
    (rows, scenario.map.first().map_or(0, |r| r.chars().count()))
}

/// The sight radius: as set, or the field's larger side (lbforaging's registered full view).
fn sight(p: &LbfParams, scenario: &ScenarioView) -> u16 {
    let (rows, cols) = field(scenario);
    p.sight.map_or(rows.max(cols) as u16, u16::from)
}

/// The highest food level an episode can have.
fn max_food_level(p: &LbfParams, agents: usize) -> u8 {
    p.max_food_level
        .unwrap_or((agents.min(3) as u32 * p.max_player_level as u32).min(255) as u8)
}

impl SubstrateRules for Lbf {
    type Params = LbfParams;
    const NAME: &'static str = "lbf";
    const TEMPLATE: &'static str = include_str!("template.ron");

    /// Whether the substrate publishes action masks: always (lbforaging's valid actions).
    fn has_action_mask(_: &LbfParams) -> bool {
        true
    }

    /// Every learner's valid actions `[N, 6]`, 1 = valid ([`rules::valid`]).
    fn write_action_mask(&self, layout: &LayoutCore, a: &ArenaMut, mask: &mut [u8]) {
        rules::write_action_mask(layout, self.cells, a.pos, a.cells, mask);
    }

    /// The whole arena without a sight limit ([`rules::write_global_state`]).
    fn global_state_layout(p: &LbfParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let (rows, cols) = field(scenario);
        let (r, c) = ((rows.max(1) - 1) as u8, (cols.max(1) - 1) as u8);
        let agents = scenario.agents_per_arena();
        vec![
            ObsField::new(
                "agents",
                &[("agent", agents), ("entry", 3)],
                0,
                "every agent in slot order: row, column, level",
            )
            .entries(&["row", "column", "level"])
            .entry_max(vec![r, c, p.max_player_level]),
            ObsField::new(
                "foods",
                &[("food", p.max_num_food as usize), ("entry", 4)],
                0,
                "every food slot (sorted by row, column at reset): row, column, level, present 0/1",
            )
            .entries(&["row", "column", "level", "present"])
            .entry_max(vec![r, c, max_food_level(p, agents), 1]),
        ]
    }

    /// Writes the global state of one arena ([`Lbf::global_state_layout`]).
    fn write_global_state(&self, layout: &LayoutCore, a: &ArenaMut, state: &mut [u8]) {
        rules::write_global_state(layout, self.cells, a.pos, a.cells, state);
    }

    fn default_actions(_: &LbfParams) -> ActionSet {
        ActionSet::Choose(rules::ACTIONS as u8)
    }

    fn action_names(_: &LbfParams) -> Vec<String> {
        rules::ACTION_NAMES.iter().map(|s| s.to_string()).collect()
    }

    fn spawns_anywhere() -> bool {
        true
    }

    fn allows_tile(tile: Tile) -> bool {
        tile == Tile::Floor
    }

    fn field_help(field: &str) -> Option<&'static str> {
        Some(match field {
            "substrate.force_coop" | "substrate.normalize_reward" => "true or false",
            "substrate.max_num_food"
            | "substrate.min_player_level"
            | "substrate.max_player_level"
            | "substrate.min_food_level" => "a whole number 1..255",
            "substrate.max_food_level" | "substrate.sight" => "None or Some(n), n 1..255",
            "substrate.penalty" => "a finite number, e.g. 0.1",
            _ => return None,
        })
    }

    fn check_params(
        p: &LbfParams,
        scenario: &ScenarioView,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        let sub = |field: &str| vec![f("substrate"), f(field)];
        c.finite(&sub("penalty"), p.penalty)?;
        let at_least_one = [
            ("max_num_food", p.max_num_food),
            ("min_player_level", p.min_player_level),
            ("min_food_level", p.min_food_level),
            ("sight", p.sight.unwrap_or(1)),
            ("max_food_level", p.max_food_level.unwrap_or(1)),
        ];
        for (name, v) in at_least_one {
            if v == 0 {
                return Err(c.bad(&sub(name), format!("{name} is 0"), "at least 1"));
            }
        }
        if p.max_player_level < p.min_player_level {
            return Err(c.bad(
                &sub("max_player_level"),
                format!(
                    "max_player_level {} is below min_player_level {}",
                    p.max_player_level, p.min_player_level
                ),
                "at least min_player_level",
            ));
        }
        if p.max_player_level > 85 {
            return Err(c.bad(
                &sub("max_player_level"),
                format!(
                    "max_player_level {} lets a food level (three agents' sum) pass 255",
                    p.max_player_level
                ),
                "at most 85",
            ));
        }
        // The lowest the highest food level can be: the three lowest agents all at the minimum.
        let agents = scenario.agents_per_arena().max(1);
        let lowest_max = p
            .max_food_level
            .unwrap_or((agents.min(3) as u32 * p.min_player_level as u32).min(255) as u8);
        if p.min_food_level > lowest_max {
            return Err(c.bad(
                &sub("min_food_level"),
                format!(
                    "min_food_level {} can exceed the highest food level {lowest_max}",
                    p.min_food_level
                ),
                format!("at most {lowest_max}"),
            ));
        }
        let (rows, cols) = field(scenario);
        if rows < 3 || cols < 3 {
            return Err(c.bad(
                &[f("map")],
                format!("the field is {rows} x {cols}"),
                "at least 3 x 3: food spawns off the border",
            ));
        }
        Ok(())
    }

    fn check_roles(_: &LbfParams, scenario: &ScenarioView, c: &Check) -> Result<(), ScenarioError> {
        let agents = scenario.agents_per_arena();
        let (rows, cols) = field(scenario);
        if agents > rules::MAX_AGENTS || agents > rows * cols {
            return Err(c.bad(
                &[f("roles")],
                format!("{agents} agents on a {rows} x {cols} field"),
                format!(
                    "at most {} agents, one per cell",
                    rules::MAX_AGENTS.min(rows * cols)
                ),
            ));
        }
        Ok(())
    }

    /// lbforaging's vector observation ([`views::write_observations`]).
    fn observation_layout(p: &LbfParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let (rows, cols) = field(scenario);
        let sight = sight(p, scenario) as usize;
        let coord = |n: usize| ((2 * sight).min(n.max(1) - 1) + 1).min(255) as u8;
        let agents = scenario.agents_per_arena();
        vec![
            ObsField::new(
                "foods",
                &[("food", p.max_num_food as usize), ("entry", 3)],
                0,
                "the visible foods in (row, column) order, then zeros: row + 1, column + 1 \
                 (relative to the view's top-left, clipped to the field), level; lbforaging's \
                 (-1, -1, 0) for an empty slot reads (0, 0, 0)",
            )
            .entries(&["row + 1", "column + 1", "level"])
            .entry_max(vec![coord(rows), coord(cols), max_food_level(p, agents)]),
            ObsField::new(
                "agents",
                &[("agent", agents), ("entry", 3)],
                0,
                "itself, then the other visible agents in slot order, then zeros: row + 1, \
                 column + 1 (same frame as the foods), level",
            )
            .entries(&["row + 1", "column + 1", "level"])
            .entry_max(vec![coord(rows), coord(cols), p.max_player_level]),
        ]
    }

    fn describe(p: &LbfParams) -> String {
        let mut s = format!(
            "up to {} food, agent levels {}..={}",
            p.max_num_food, p.min_player_level, p.max_player_level
        );
        if let Some(sight) = p.sight {
            s += &format!(", sight {sight}");
        }
        if p.force_coop {
            s += ", force_coop";
        }
        if p.penalty != 0.0 {
            s += &format!(", penalty {}", p.penalty);
        }
        s
    }

    fn derive(p: &LbfParams, scenario: &ScenarioView, _: &Grid) -> Derived<Self> {
        let cells = CellLayout {
            agents: scenario.agents_per_arena(),
            foods: p.max_num_food as usize,
        };
        Derived {
            rules: Lbf {
                params: p.clone(),
                cells,
                sight: sight(p, scenario),
            },
            pad: 0,
            cells_template: vec![0u8; cells.len()],
            counter_names: vec!["loads".into(), "failed_loads".into()],
        }
    }

    fn apply_moves(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        rules::apply_moves(layout, self.cells, a);
    }

    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        rules::resolve_interactions(self, layout, a);
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        views::write_observations(self, layout, a);
    }

    /// Agent levels and food.
    fn finish_spawn(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        rules::spawn(self, layout, a);
    }

    fn frame_items(&self, _: &LayoutCore, cells: &[u8]) -> Vec<u8> {
        cells.to_vec()
    }

    fn frame_items_len(&self, layout: &LayoutCore) -> Option<usize> {
        Some(layout.cells_template.len())
    }

    fn load_frame_items(&self, _: &LayoutCore, items: &[u8], cells: &mut [u8]) -> Option<()> {
        if items.len() != cells.len() {
            return None;
        }
        cells.copy_from_slice(items);
        Some(())
    }

    /// Each food as a disc growing with its level.
    fn draw_items(&self, _: &LayoutCore, frame: &Frame, out: &mut Vec<Instance>) {
        if frame.items.len() != self.cells.len() {
            return;
        }
        let top = max_food_level(&self.params, self.cells.agents).max(1) as f32;
        for k in 0..self.cells.foods {
            if let Some((r, c, level)) = self.cells.food_at(&frame.items, k) {
                let size = 0.15 + 0.25 * level as f32 / top;
                out.push(square(
                    c as f32,
                    r as f32,
                    size,
                    rgb([90, 170, 60]),
                    shape::DISC,
                    0.0,
                ));
            }
        }
    }
}
