//! clean_up (Melting Pot 2.4, `clean_up`): apples grow in an orchard only while the river is
//! clean enough; pollution keeps appearing in the river, and cleaning it takes a beam fired
//! from the river's bank, away from the apples. A zapping beam removes others for a while.
//!
//! An avatar substrate (see [`super::avatars`]) on the shared apple rules of [`super::zap`].
//! Map symbols: `A` an apple cell (empty at the start, as in Melting Pot), `H` a river cell
//! that can be polluted (clean at the start), `F` one polluted at the start. Cell layer: the
//! zap module's flags and [`RIVER`]; the item byte is 1 for an apple, [`DIRT`] for pollution
//! (so the observation window and rollout frames show both). Counters: `apples_eaten`,
//! `zaps_fired`, `zaps_landed`, `reward_time_sum`, `cells_cleaned`.

mod params;
pub mod rules;

pub use params::CleanUpParams;

use crate::error::ScenarioError;
use crate::layout::core::{LayoutCore, padded_cells};
use crate::render::draw::Instance;
use crate::rng;
use crate::rollout::frame::Frame;
use crate::scenario::actions::ActionSet;
use crate::scenario::check::{Check, f};
use crate::scenario::map::{Grid, Tile};
use crate::scenario::observation::ObsField;
use crate::scenario::view::ScenarioView;
use crate::substrate::avatars::{self, AvatarLayout, ITEM, WALL, avatar_hooks};
use crate::substrate::zap::{self, APPLE_CELL, Beam, CLEAN_TIMER, Zapper};
use crate::substrate::{ArenaMut, Derived, SubstrateRules};

/// Apples' colour (sRGB, Melting Pot's clean_up apple).
pub const APPLE: [u8; 3] = [212, 80, 57];
/// Pollution's colour (sRGB).
pub const POLLUTION: [u8; 3] = [110, 140, 60];

/// Flag: a river cell that can be polluted.
pub const RIVER: u8 = 8;
/// Item byte of a polluted river cell.
pub const DIRT: u8 = 2;

/// The counters: the shared apple counters, then the cells cleaned.
pub mod counters {
    /// Slot of `cells_cleaned`.
    pub const CLEANED: usize = 4;
    /// Counter names in slot order.
    pub const NAMES: [&str; 5] = [
        "apples_eaten",
        "zaps_fired",
        "zaps_landed",
        "reward_time_sum",
        "cells_cleaned",
    ];
}

/// Melting Pot's clean_up action names, in index order.
pub const ACTION_NAMES: [&str; 9] = [
    "noop",
    "forward",
    "backward",
    "step_left",
    "step_right",
    "turn_left",
    "turn_right",
    "fire_zap",
    "fire_clean",
];

/// clean_up's derived data.
#[derive(Debug, Clone)]
pub struct CleanUp {
    /// The parameters.
    pub params: CleanUpParams,
    /// The facing-rotated window.
    pub avatar: AvatarLayout,
    /// The zapping beam.
    pub zapper: Zapper,
    /// The cleaning beam.
    pub cleaner: Beam,
    /// Byte offsets into the cell layer of every apple cell.
    pub apple_cells: Vec<u32>,
    /// Byte offsets into the cell layer of every river cell that can be polluted.
    pub river_cells: Vec<u32>,
    /// The pollution probability per step scaled to 2^32.
    pub spawn_threshold: u64,
    /// The random end's threshold scaled to 2^32.
    pub end_threshold: u64,
}

fn check_beam(c: &Check, length: (&str, u8), radius: (&str, u8)) -> Result<(), ScenarioError> {
    if length.1 == 0 {
        let at = [f("substrate"), f(length.0)];
        return Err(c.bad(&at, format!("{} is 0", length.0), "at least 1"));
    }
    if radius.1 > length.1 {
        return Err(c.bad(
            &[f("substrate"), f(radius.0)],
            format!("{} {} > {} {}", radius.0, radius.1, length.0, length.1),
            "at most the beam's length",
        ));
    }
    Ok(())
}

impl SubstrateRules for CleanUp {
    type Params = CleanUpParams;
    const NAME: &'static str = "clean_up";
    const TEMPLATE: &'static str = include_str!("template.ron");

    avatar_hooks!(CleanUpParams);

    fn default_actions(_: &CleanUpParams) -> ActionSet {
        ActionSet::Gift9
    }

    fn action_names(_: &CleanUpParams) -> Vec<String> {
        ACTION_NAMES.map(String::from).to_vec()
    }

    fn map_symbols(_: &CleanUpParams) -> Vec<char> {
        vec!['A', 'H', 'F']
    }

    fn symbol_meaning(_: &CleanUpParams, k: usize) -> String {
        match k {
            0 => "apple cell (empty at the start)".into(),
            1 => "river cell that can be polluted (clean at the start)".into(),
            _ => "river cell polluted at the start".into(),
        }
    }

    fn check_params(p: &CleanUpParams, _: &ScenarioView, c: &Check) -> Result<(), ScenarioError> {
        let sub = |field: &str| vec![f("substrate"), f(field)];
        c.probability(&sub("max_growth_rate"), p.max_growth_rate)?;
        c.probability(&sub("threshold_depletion"), p.threshold_depletion)?;
        c.probability(&sub("threshold_restoration"), p.threshold_restoration)?;
        if p.threshold_restoration >= p.threshold_depletion {
            return Err(c.bad(
                &sub("threshold_restoration"),
                format!(
                    "threshold_restoration {} >= threshold_depletion {}",
                    p.threshold_restoration, p.threshold_depletion
                ),
                "below threshold_depletion",
            ));
        }
        c.probability(&sub("dirt_spawn_prob"), p.dirt_spawn_prob)?;
        c.finite(&sub("apple_reward"), p.apple_reward)?;
        c.probability(&sub("end_prob"), p.end_prob)?;
        check_beam(
            c,
            ("beam_length", p.beam_length),
            ("beam_radius", p.beam_radius),
        )?;
        check_beam(
            c,
            ("clean_beam_length", p.clean_beam_length),
            ("clean_beam_radius", p.clean_beam_radius),
        )?;
        if p.end_every == 0 {
            return Err(c.bad(
                &sub("end_every"),
                "end_every is 0".into(),
                "at least 1 step",
            ));
        }
        Ok(())
    }

    /// The window (item byte: 1 an apple, 2 pollution), then the beam flags.
    fn observation_layout(_: &CleanUpParams, scenario: &ScenarioView) -> Vec<ObsField> {
        vec![
            avatars::window_field(scenario, "apple (1) or pollution (2)", DIRT),
            ObsField::new(
                "beams",
                &[("flag", 3)],
                1,
                "ready to zap / ready to clean: 1 when that beam can fire next step; in play: \
                 1 while the avatar is in the arena (the whole observation is 0 while it is \
                 zapped out)",
            )
            .entries(&["ready to zap", "ready to clean", "in play"]),
        ]
    }

    /// The whole map as layers: wall, apple, avatar, pollution.
    fn global_state_layout(_: &CleanUpParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let width = scenario.map.first().map_or(0, |r| r.chars().count());
        zap::global_state_layout(width, scenario.map.len(), "pollution")
    }

    fn write_global_state(&self, layout: &LayoutCore, a: &ArenaMut, state: &mut [u8]) {
        zap::write_global_state(layout, a, state, |flags, item| {
            flags & RIVER != 0 && item == DIRT
        });
    }

    fn describe(p: &CleanUpParams) -> String {
        format!(
            "apples {} per step, none from {:.0}% pollution; pollution {} per step after {}; \
             clean {}x{} cooldown {}; zap {}x{} cooldown {}, out {} steps",
            p.max_growth_rate,
            100.0 * p.threshold_depletion,
            p.dirt_spawn_prob,
            p.dirt_spawn_delay,
            p.clean_beam_length,
            2 * p.clean_beam_radius + 1,
            p.clean_cooldown,
            p.beam_length,
            2 * p.beam_radius + 1,
            p.zap_cooldown,
            p.respawn_frames
        )
    }

    fn derive(params: &CleanUpParams, scenario: &ScenarioView, grid: &Grid) -> Derived<Self> {
        let beam = params.beam_length.max(params.clean_beam_length);
        let pad = avatars::window_pad(avatars::window(scenario), beam);
        let padded_width = grid.width + 2 * pad;
        let index = |i: usize| {
            let (x, y) = (i % grid.width, i / grid.width);
            (((y + pad) * padded_width + x + pad) * 3) as u32
        };
        let cells_template = padded_cells(grid, pad, |tile, cell: &mut [u8]| match tile {
            None | Some(Tile::Wall) => cell[0] = WALL,
            Some(Tile::Compound(0)) => cell[0] = APPLE_CELL,
            Some(Tile::Compound(1)) => cell[0] = RIVER,
            Some(Tile::Compound(2)) => {
                cell[0] = RIVER;
                cell[ITEM] = DIRT;
            }
            Some(_) => {}
        });
        let cells_of = |tiles: &[Tile]| -> Vec<u32> {
            (0..grid.tiles.len())
                .filter(|&i| tiles.contains(&grid.tiles[i]))
                .map(index)
                .collect()
        };
        Derived {
            rules: CleanUp {
                params: params.clone(),
                avatar: AvatarLayout::new(scenario),
                zapper: Zapper {
                    beam: Beam {
                        length: params.beam_length,
                        radius: params.beam_radius,
                    },
                    cooldown: params.zap_cooldown,
                    respawn_frames: params.respawn_frames,
                },
                cleaner: Beam {
                    length: params.clean_beam_length,
                    radius: params.clean_beam_radius,
                },
                apple_cells: cells_of(&[Tile::Compound(0)]),
                river_cells: cells_of(&[Tile::Compound(1), Tile::Compound(2)]),
                spawn_threshold: rng::threshold(params.dirt_spawn_prob),
                end_threshold: rng::threshold(params.end_prob),
            },
            pad,
            cells_template,
            counter_names: counters::NAMES.map(String::from).to_vec(),
        }
    }

    fn apply_moves(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        rules::apply_moves(layout, self, a);
    }

    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        rules::interact(layout, self, a);
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        avatars::write_observations(layout, &self.avatar, a, |carry, cooldown, extras| {
            extras[0] = u8::from(cooldown.0 == 0);
            extras[1] = u8::from(carry.0[CLEAN_TIMER] == 0);
            extras[2] = 1;
        });
    }

    fn draw_items(&self, layout: &LayoutCore, frame: &Frame, out: &mut Vec<Instance>) {
        avatars::draw_items(layout, frame, 0.3, item_colour, out);
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
            3,
            (c(APPLE), "apple (pollution darker)"),
            |item| c(item_colour(item)),
            |e| {
                format!(
                    "ready to zap: {}; ready to clean: {}; in play: {}",
                    e[0], e[1], e[2]
                )
            },
        )
    }
}

/// An item's colour: apple or pollution.
fn item_colour(item: u8) -> [u8; 3] {
    if item == DIRT { POLLUTION } else { APPLE }
}
