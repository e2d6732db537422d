//! gift_refinements (Melting Pot 2.4): collect raw tokens, refine them by gifting, consume.
//!
//! An avatar substrate (see [`super::avatars`]): facings, blocking moves, a facing-rotated
//! window. Cell layer item byte: a token (0/1) on token cells. Counters: `tokens_picked`,
//! `gifts_level1..3`, `consumptions`, `tokens_consumed`.

mod params;
pub mod rules;

pub use params::GiftParams;
pub use rules::{CONSUME, GIFT, geometric_gap, give, interact};

use crate::substrate::avatars::{self, AvatarLayout};
use crate::substrate::{ArenaMut, Derived, SubstrateRules};
use crate::error::ScenarioError;
use crate::layout::Layout;
use crate::render::scene::Instance;
use crate::rng;
use crate::rollout::Frame;
use crate::scenario::check::{Check, f, i};
use crate::scenario::{ActionSet, Grid, Scenario, Tile};

/// Gift tokens' colour (sRGB).
pub const TOKEN: [u8; 3] = [242, 190, 26];

/// Observation bytes after the window: inventory levels 1-3 and a ready-to-gift flag.
const EXTRAS: usize = 4;

/// gift_refinements' derived data.
#[derive(Debug, Clone)]
pub struct Gift {
    /// The parameters.
    pub params: GiftParams,
    /// The avatar window, token cells, regrowth and random-end thresholds.
    pub avatar: AvatarLayout,
}

impl SubstrateRules for Gift {
    type Params = GiftParams;
    const NAME: &'static str = "gift_refinements";
    const HAS_AVATARS: bool = true;

    fn default_actions(_: &GiftParams) -> ActionSet {
        ActionSet::Gift9
    }

    fn allows_tile(tile: Tile) -> bool {
        !matches!(tile, Tile::SpawnPursuer | Tile::SpawnEvader)
    }

    fn check_params(p: &GiftParams, _: &Scenario, c: &Check) -> Result<(), ScenarioError> {
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

    fn check_roles(_: &GiftParams, scenario: &Scenario, c: &Check) -> Result<(), ScenarioError> {
        avatars::check_roles(scenario, c)
    }

    fn check_observation(
        _: &GiftParams,
        scenario: &Scenario,
        _: &Grid,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        avatars::check_observation(Self::NAME, scenario, c)
    }

    fn observation_len(_: &GiftParams, scenario: &Scenario) -> usize {
        avatars::observation_len(scenario, EXTRAS)
    }

    fn describe(g: &GiftParams) -> String {
        format!("regrow {}, gift x{}", g.regrow_prob, g.gift_multiplier)
    }

    fn derive(params: &GiftParams, scenario: &Scenario, grid: &Grid) -> Derived<Self> {
        let window = avatars::window(scenario);
        let pad = avatars::window_pad(window, params.beam_length);
        let avatar = AvatarLayout {
            window,
            token_cells: (0..grid.tiles.len())
                .filter(|&i| grid.tiles[i] == Tile::Token)
                .map(|i| i as u16)
                .collect(),
            fire_ground: Vec::new(),
            fire_vesicle: Vec::new(),
            reactions: Vec::new(),
            reactions_of: Vec::new(),
            offsets: avatars::window_offsets(grid.width + 2 * pad, window),
            regrow_log: (1.0 - params.regrow_prob).ln(),
            empty_log: 0.0,
            end_threshold: rng::threshold(params.end_prob),
        };
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
                avatar,
            },
            pad,
            cells_template: avatars::cells_template(grid, pad),
            counter_names: names.map(String::from).to_vec(),
        }
    }

    fn apply_moves(&self, layout: &Layout, a: &mut ArenaMut) {
        avatars::apply_moves(layout, a, Some(&self.params));
    }

    fn resolve_interactions(&self, layout: &Layout, a: &mut ArenaMut) {
        interact(layout, &self.params, &self.avatar, a);
    }

    fn write_observations(&self, layout: &Layout, a: &mut ArenaMut) {
        avatars::write_observations(layout, &self.avatar, a, |carry, cooldown, extras| {
            extras[..3].copy_from_slice(&carry.0);
            extras[3] = u8::from(cooldown.0 <= 1);
        });
    }

    fn rebuild_cells(&self, layout: &Layout, a: &mut ArenaMut) {
        avatars::mark_avatars(layout, a);
    }

    fn frame_items(&self, layout: &Layout, cells: &[u8]) -> Vec<u8> {
        avatars::frame_items(layout, cells)
    }

    fn frame_items_len(&self, layout: &Layout) -> Option<usize> {
        Some(layout.width * layout.height)
    }

    fn load_frame_items(&self, layout: &Layout, items: &[u8], cells: &mut [u8]) -> Option<()> {
        avatars::load_frame_items(layout, items, cells)
    }

    fn draw_items(&self, layout: &Layout, frame: &Frame, out: &mut Vec<Instance>) {
        avatars::draw_items(layout, frame, 0.22, |_| TOKEN, out);
    }

    #[cfg(feature = "viewer")]
    fn observation_image(
        &self,
        _layout: &Layout,
        _slot: usize,
        obs: &[u8],
    ) -> Option<crate::viewer::obs::ObsImage> {
        use crate::viewer::obs::c;
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
