//! gift_refinements (Melting Pot 2.4): collect raw tokens, refine them by gifting, consume.
//!
//! An avatar substrate (see [`super::avatars`]): facings, blocking moves, a facing-rotated
//! window. Cell layer item byte: a token (0/1) on token cells. Counters: `tokens_picked`,
//! `gifts_level1..3`, `consumptions`, `tokens_consumed`.

mod params;
pub mod rules;

pub use params::GiftParams;
pub use rules::{CONSUME, GIFT, geometric_gap, give, interact};

use crate::error::ScenarioError;
use crate::layout::core::LayoutCore;
use crate::render::draw::Instance;
use crate::rng;
use crate::rollout::frame::Frame;
use crate::scenario::actions::ActionSet;
use crate::scenario::check::{Check, f, i};
use crate::scenario::map::{Grid, Tile};
use crate::scenario::observation::ObsField;
use crate::scenario::view::ScenarioView;
use crate::substrate::avatars::{self, AvatarLayout};
use crate::substrate::{ArenaMut, Derived, SubstrateRules};

/// Gift tokens' colour (sRGB).
pub const TOKEN: [u8; 3] = [242, 190, 26];

/// Observation bytes after the window: inventory levels 1-3 and a ready-to-gift flag. The viewer's
/// guard on the observation's length; `observation_layout` describes these bytes.
#[cfg(feature = "viewer")]
const EXTRAS: usize = 4;

/// gift_refinements' derived data.
#[derive(Debug, Clone)]
pub struct Gift {
    /// The parameters.
    pub params: GiftParams,
    /// The facing-rotated window.
    pub avatar: AvatarLayout,
    /// Map cells (`y * width + x`) that grow tokens: the regrowth candidates.
    pub token_cells: Vec<u16>,
    /// ln(1 - regrow_prob), for geometric gaps between regrowth events.
    pub regrow_log: f64,
    /// The random end's threshold scaled to 2^32.
    pub end_threshold: u64,
}

impl SubstrateRules for Gift {
    type Params = GiftParams;
    const NAME: &'static str = "gift_refinements";
    const TEMPLATE: &'static str = include_str!("template.ron");
    avatars::avatar_hooks!(GiftParams);

    fn default_actions(_: &GiftParams) -> ActionSet {
        ActionSet::Gift9
    }

    fn allows_tile(tile: Tile) -> bool {
        !matches!(tile, Tile::SpawnPursuer | Tile::SpawnEvader)
    }

    fn check_params(p: &GiftParams, _: &ScenarioView, c: &Check) -> Result<(), ScenarioError> {
        let sub = |field: &str| vec![f("substrate"), f(field)];
        c.probability(&sub("regrow_prob"), p.regrow_prob)?;
        c.probability(&sub("end_prob"), p.end_prob)?;
        for (name, v) in [
            ("capacity", p.capacity),
            ("gift_multiplier", p.gift_multiplier),
            ("beam_length", p.beam_length),
        ] {
            if v == 0 {
                return Err(c.bad(&sub(name), format!("{name} is 0"), "at least 1"));
            }
        }
        if p.end_every == 0 {
            return Err(c.bad(
                &sub("end_every"),
                "end_every is 0".into(),
                "at least 1 step",
            ));
        }
        for (k, v) in p.consume_value.iter().enumerate() {
            c.finite(&[f("substrate"), f("consume_value"), i(k)], *v)?;
        }
        Ok(())
    }

    /// The window (item byte: a token, 0/1), then the inventory and the ready flag.
    fn observation_layout(p: &GiftParams, scenario: &ScenarioView) -> Vec<ObsField> {
        vec![
            avatars::window_field(scenario, "token", 1),
            ObsField::new(
                "inventory",
                &[("level", 3)],
                p.capacity,
                "tokens held per refinement level (at most `capacity`)",
            )
            .entries(&["level 1", "level 2", "level 3"]),
            ObsField::new(
                "ready to gift",
                &[("flag", 1)],
                1,
                "1 when the refine-and-gift beam can fire next step",
            ),
        ]
    }

    fn describe(g: &GiftParams) -> String {
        format!("regrow {}, gift x{}", g.regrow_prob, g.gift_multiplier)
    }

    fn derive(params: &GiftParams, scenario: &ScenarioView, grid: &Grid) -> Derived<Self> {
        let pad = avatars::window_pad(avatars::window(scenario), params.beam_length);
        let names = [
            "tokens_picked",
            "gifts_level1",
            "gifts_level2",
            "gifts_level3",
            "consumptions",
            "tokens_consumed",
        ];
        Derived {
            rules: Gift {
                params: params.clone(),
                avatar: AvatarLayout::new(scenario),
                token_cells: (0..grid.tiles.len())
                    .filter(|&i| grid.tiles[i] == Tile::Token)
                    .map(|i| i as u16)
                    .collect(),
                regrow_log: (1.0 - params.regrow_prob).ln(),
                end_threshold: rng::threshold(params.end_prob),
            },
            pad,
            cells_template: avatars::cells_template(grid, pad),
            counter_names: names.map(String::from).to_vec(),
        }
    }

    fn apply_moves(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        let capacity = self.params.capacity;
        // Stepping onto a token picks it up.
        avatars::apply_moves(layout, a, avatars::TOKEN_CELL, |a, s, j| {
            a.cells[j + avatars::ITEM] = 0;
            let raw = &mut a.carry[s].0[0];
            *raw = (*raw + 1).min(capacity);
            a.counters[0] += 1;
        });
    }

    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        interact(layout, self, a);
    }

    /// The whole map, as the windows show it but with absolute facings.
    fn global_state_layout(_: &GiftParams, scenario: &ScenarioView) -> Vec<ObsField> {
        avatars::global_state_layout(scenario, "token", 1)
    }

    fn write_global_state(&self, layout: &LayoutCore, a: &ArenaMut, state: &mut [u8]) {
        avatars::write_global_state(layout, a, state);
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        avatars::write_observations(layout, &self.avatar, a, |carry, cooldown, extras| {
            extras[..3].copy_from_slice(&carry.0);
            extras[3] = u8::from(cooldown.0 <= 1);
        });
    }

    fn draw_items(&self, layout: &LayoutCore, frame: &Frame, out: &mut Vec<Instance>) {
        avatars::draw_items(layout, frame, 0.22, |_| TOKEN, out);
    }

    #[cfg(feature = "viewer")]
    fn observation_image(
        &self,
        _layout: &LayoutCore,
        _slot: usize,
        obs: &[u8],
    ) -> Option<crate::viewer::obs_image::ObsImage> {
        use crate::viewer::obs_image::c;
        avatars::window_image(
            &self.avatar,
            obs,
            EXTRAS,
            (c(TOKEN), "token"),
            |_| c(TOKEN),
            |e| {
                format!(
                    "inventory (levels 1-3): {} {} {}; ready to gift: {}",
                    e[0], e[1], e[2], e[3]
                )
            },
        )
    }
}
