//! The coin game (Lerer & Peysakhovich; LOLA; JaxMARL): two players on a small torus, one coin
//! of one player's colour.
//!
//! Cell layer: `[coin cell low byte, coin cell high byte, coin colour]`, which rollout frames
//! record as their items. Counters: `coins_own`, `coins_other`.

mod params;
pub mod rules;
#[cfg(feature = "viewer")]
mod viewer;

pub use params::CoinParams;
pub use rules::{apply_moves, interact, place_coin, write_observations};

use crate::error::ScenarioError;
use crate::layout::core::LayoutCore;
use crate::render::draw::{Instance, palette, rgb, shape, square};
use crate::rollout::frame::Frame;
use crate::scenario::actions::ActionSet;
use crate::scenario::check::{Check, f};
use crate::scenario::map::Grid;
use crate::scenario::observation::ObsField;
use crate::scenario::view::ScenarioView;
use crate::substrate::{ArenaMut, Derived, SubstrateRules};

/// The coin game's derived data: its parameters.
#[derive(Debug, Clone)]
pub struct Coin {
    /// The parameters.
    pub params: CoinParams,
}

impl SubstrateRules for Coin {
    type Params = CoinParams;
    const NAME: &'static str = "coin_game";
    const TEMPLATE: &'static str = include_str!("template.ron");

    fn default_actions(_: &CoinParams) -> ActionSet {
        ActionSet::Move5
    }

    fn check_params(p: &CoinParams, _: &ScenarioView, c: &Check) -> Result<(), ScenarioError> {
        c.finite(&[f("substrate"), f("pick_reward")], p.pick_reward)?;
        c.finite(&[f("substrate"), f("stolen_penalty")], p.stolen_penalty)
    }

    fn check_roles(
        _: &CoinParams,
        scenario: &ScenarioView,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        let agents = scenario.agents_per_arena();
        if agents != 2 {
            return Err(c.bad(
                &[f("roles")],
                format!("the coin game has 2 players, not {agents}"),
                "exactly one role of count 2, or two of count 1",
            ));
        }
        Ok(())
    }

    /// The full grid, four 0/1 bytes per cell ([`write_observations`]).
    fn observation_layout(_: &CoinParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let (rows, columns) = (
            scenario.map.len(),
            scenario.map.first().map_or(0, |r| r.chars().count()),
        );
        vec![
            ObsField::new(
                "grid",
                &[("row", rows), ("column", columns), ("channel", 4)],
                1,
                "the whole map, row-major, as this player sees it: the players and the coin",
            )
            .entries(&[
                "me",
                "other player",
                "coin of my colour",
                "coin of the other's colour",
            ]),
        ]
    }

    fn describe(c: &CoinParams) -> String {
        format!("torus {}", c.torus)
    }

    fn derive(params: &CoinParams, _: &ScenarioView, _: &Grid) -> Derived<Self> {
        Derived {
            rules: Coin {
                params: params.clone(),
            },
            pad: 0,
            cells_template: vec![0u8; 3],
            counter_names: vec!["coins_own".into(), "coins_other".into()],
        }
    }

    fn apply_moves(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        apply_moves(layout, &self.params, a);
    }

    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        interact(layout, &self.params, a);
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        write_observations(layout, a);
    }

    /// A new episode's coin.
    fn finish_spawn(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        place_coin(layout, a);
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

    /// The coin as a disc of its owner's colour.
    fn draw_items(&self, layout: &LayoutCore, frame: &Frame, out: &mut Vec<Instance>) {
        if let [lo, hi, colour, ..] = frame.items[..] {
            let w = layout.width;
            let cell = lo as usize | (hi as usize) << 8;
            let colors = palette(&layout.slot_kind);
            let c = colors
                .get(colour as usize)
                .copied()
                .unwrap_or([242, 190, 26]);
            out.push(square(
                (cell % w) as f32,
                (cell / w) as f32,
                0.25,
                rgb(c),
                shape::DISC,
                0.0,
            ));
        }
    }

    #[cfg(feature = "viewer")]
    fn observation_image(
        &self,
        layout: &LayoutCore,
        slot: usize,
        obs: &[u8],
    ) -> Option<crate::viewer::obs_image::ObsImage> {
        viewer::observation_image(layout, slot, obs)
    }
}
