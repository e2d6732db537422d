//! Overcooked (Carroll et al. 2019) as JaxMARL's `overcooked`: two cooks in a kitchen carry
//! onions to pots, three onions cook a soup for 20 steps, a plate takes the soup, and serving
//! it pays both cooks. Shaped rewards (onion into a pot, useful plate pickup, soup pickup) are
//! scaled by the batch's `reward_shaping` so training can anneal them.
//!
//! Cell layer: `[object per cell, pot status per cell]` ([`rules`]); rollout frames record it
//! as their items. Counters: `deliveries`, `onions_in_pot`, `plate_pickups`, `soup_pickups`.

mod obs;
mod params;
pub mod rules;

pub use obs::{CHANNEL_NAMES, CHANNELS};
pub use params::OvercookedParams;

use crate::components::GridPos;
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
use rules::{COUNTER, DISH, FLOOR, GOAL, ONION, ONION_PILE, PLATE, PLATE_PILE, POT, POT_EMPTY};

/// The kitchen's map symbols beyond `#` (counter) and `.` (floor), in `Tile::Compound` order:
/// onion pile, plate pile, serving cell, pot, player 0's start, player 1's start.
pub const SYMBOLS: [char; 6] = ['O', 'B', 'X', 'U', '0', '1'];
const MEANINGS: [&str; 6] = [
    "onion pile (a counter that hands out onions)",
    "plate pile (a counter that hands out plates)",
    "serving cell (deliver a soup here)",
    "pot",
    "open floor, agent_0's start",
    "open floor, agent_1's start",
];
const OBJECT_OF_SYMBOL: [u8; 6] = [ONION_PILE, PLATE_PILE, GOAL, POT, FLOOR, FLOOR];

/// Overcooked's derived data.
#[derive(Debug, Clone)]
pub struct Overcooked {
    /// The parameters.
    pub params: OvercookedParams,
    /// Map columns.
    pub width: usize,
    /// Map rows.
    pub height: usize,
    /// Per cell: the players cannot enter (counters, piles, pots, serving cells).
    pub solid: Vec<bool>,
    /// Counter cells (where items may lie), row-major.
    pub counters: Vec<u16>,
    /// Pot cells, row-major.
    pub pots: Vec<u16>,
    /// The two players' start cells (JaxMARL's `agent_idx`).
    pub spawn: [GridPos; 2],
    /// The static observation layers ([`obs::static_template`]).
    pub obs_template: Vec<u8>,
}

impl SubstrateRules for Overcooked {
    type Params = OvercookedParams;
    const NAME: &'static str = "overcooked";
    const TEMPLATE: &'static str = include_str!("template.ron");
    const HAS_AVATARS: bool = true;

    fn default_actions(_: &OvercookedParams) -> ActionSet {
        ActionSet::Choose(6)
    }

    fn action_names(_: &OvercookedParams) -> Vec<String> {
        ["up", "down", "right", "left", "stay", "interact"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// Players are placed on the `0` and `1` cells, not on spawn symbols.
    fn spawns_anywhere() -> bool {
        true
    }

    fn allows_tile(tile: Tile) -> bool {
        matches!(tile, Tile::Wall | Tile::Floor)
    }

    fn map_symbols(_: &OvercookedParams) -> Vec<char> {
        SYMBOLS.to_vec()
    }

    fn symbol_meaning(_: &OvercookedParams, k: usize) -> String {
        MEANINGS.get(k).map_or_else(String::new, |m| m.to_string())
    }

    fn check_params(
        p: &OvercookedParams,
        scenario: &ScenarioView,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        for (name, v) in [
            ("delivery_reward", p.delivery_reward),
            ("placement_in_pot_reward", p.placement_in_pot_reward),
            ("plate_pickup_reward", p.plate_pickup_reward),
            ("soup_pickup_reward", p.soup_pickup_reward),
        ] {
            c.finite(&[f("substrate"), f(name)], v)?;
        }
        for spawn in ['0', '1'] {
            let count: usize = scenario
                .map
                .iter()
                .map(|row| row.chars().filter(|&ch| ch == spawn).count())
                .sum();
            if count != 1 {
                return Err(c.bad(
                    &[f("map")],
                    format!("{count} '{spawn}' cells"),
                    "exactly one '0' (agent_0's start) and one '1' (agent_1's start)",
                ));
            }
        }
        Ok(())
    }

    fn check_roles(
        _: &OvercookedParams,
        scenario: &ScenarioView,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        let agents = scenario.agents_per_arena();
        if agents != 2 {
            return Err(c.bad(
                &[f("roles")],
                format!("overcooked has 2 players, not {agents}"),
                "exactly one role of count 2, or two of count 1",
            ));
        }
        Ok(())
    }

    /// The whole kitchen, 26 layers per cell ([`obs`]).
    fn observation_layout(_: &OvercookedParams, scenario: &ScenarioView) -> Vec<ObsField> {
        obs::layout(
            scenario.map.len(),
            scenario.map.first().map_or(0, |r| r.chars().count()),
        )
    }

    fn describe(p: &OvercookedParams) -> String {
        format!(
            "delivery {}, shaped: onion in pot {}, plate {}, soup {}",
            p.delivery_reward,
            p.placement_in_pot_reward,
            p.plate_pickup_reward,
            p.soup_pickup_reward
        )
    }

    fn derive(params: &OvercookedParams, _: &ScenarioView, grid: &Grid) -> Derived<Self> {
        let (w, h) = (grid.width, grid.height);
        let mut spawn = [GridPos::default(); 2];
        let objects: Vec<u8> = grid
            .tiles
            .iter()
            .enumerate()
            .map(|(i, t)| match *t {
                Tile::Wall => COUNTER,
                Tile::Compound(k) => {
                    if k >= 4 {
                        spawn[k as usize - 4] = GridPos {
                            x: (i % w) as i16,
                            y: (i / w) as i16,
                        };
                    }
                    OBJECT_OF_SYMBOL[k as usize % OBJECT_OF_SYMBOL.len()]
                }
                _ => FLOOR,
            })
            .collect();
        let cells_of = |kind: u8| -> Vec<u16> {
            (0..objects.len())
                .filter(|&c| objects[c] == kind)
                .map(|c| c as u16)
                .collect()
        };
        let pots = cells_of(POT);
        let mut cells_template = objects.clone();
        cells_template.extend(
            objects
                .iter()
                .map(|&o| if o == POT { POT_EMPTY } else { 0 }),
        );
        Derived {
            rules: Overcooked {
                params: params.clone(),
                width: w,
                height: h,
                solid: objects.iter().map(|&o| o != FLOOR).collect(),
                counters: cells_of(COUNTER),
                pots,
                spawn,
                obs_template: obs::static_template(&objects),
            },
            pad: 0,
            cells_template,
            counter_names: [
                "deliveries",
                "onions_in_pot",
                "plate_pickups",
                "soup_pickups",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        }
    }

    fn apply_moves(&self, _: &LayoutCore, a: &mut ArenaMut) {
        self.move_players(a);
    }

    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        let pay = self.interact(a);
        self.pay(layout, a, pay);
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        self.observe(layout, a);
    }

    /// JaxMARL's reset with `random_reset=False`: the players on their fixed start cells, with
    /// the uniformly random facings spawning drew; empty hands, empty pots, bare counters.
    fn finish_spawn(&self, _: &LayoutCore, a: &mut ArenaMut) {
        a.pos[0] = self.spawn[0];
        a.pos[1] = self.spawn[1];
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

    /// Piles, pots (their fill and cooking), serving cells and items on counters.
    fn draw_items(&self, _: &LayoutCore, frame: &Frame, out: &mut Vec<Instance>) {
        let n = self.width * self.height;
        if frame.items.len() != 2 * n {
            return;
        }
        for c in 0..n {
            let (x, y) = ((c % self.width) as f32, (c / self.width) as f32);
            let status = frame.items[n + c];
            match frame.items[c] {
                ONION_PILE => out.push(square(x, y, 0.4, rgb([200, 170, 40]), shape::RECT, 0.0)),
                PLATE_PILE => out.push(square(x, y, 0.4, rgb([200, 200, 210]), shape::RECT, 0.0)),
                GOAL => out.push(square(x, y, 0.45, rgb([60, 170, 80]), shape::RECT, 0.0)),
                POT => {
                    out.push(square(x, y, 0.42, rgb([25, 25, 25]), shape::RECT, 0.0));
                    if status < POT_EMPTY {
                        let colour = match status {
                            0 => [230, 90, 40],
                            1..=19 => [200, 140, 60],
                            _ => [242, 210, 60],
                        };
                        let fill =
                            0.1 + 0.08 * f32::from(POT_EMPTY - status.min(POT_EMPTY)).min(3.0);
                        out.push(square(x, y, fill, rgb(colour), shape::DISC, 0.0));
                    }
                }
                ONION => out.push(square(x, y, 0.2, rgb([242, 210, 60]), shape::DISC, 0.0)),
                PLATE => out.push(square(x, y, 0.25, rgb([245, 245, 245]), shape::RING, 0.0)),
                DISH => {
                    out.push(square(x, y, 0.25, rgb([245, 245, 245]), shape::DISC, 0.0));
                    out.push(square(x, y, 0.12, rgb([230, 90, 40]), shape::DISC, 0.0));
                }
                _ => {}
            }
        }
    }
}
