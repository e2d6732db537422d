//! commons_harvest (Melting Pot 2.4, `commons_harvest__open`): eat apples whose regrowth
//! depends on the apples left nearby; zap others out of the arena for a while.
//!
//! An avatar substrate (see [`super::avatars`]) with the zapping beam of [`super::zap`]. Map
//! symbols: `A` an apple cell (starts with an apple), `Q` an inside spawn point (slots 0 and 1
//! start there, as Melting Pot's first two players do; `*` is every other spawn and every
//! respawn). Cell layer flags: the zap module's, [`GROWN`], and in the high nibble the number
//! of standing apples within `regrowth_radius` (maintained as apples are eaten and regrow).
//! Counters: `apples_eaten`, `zaps_fired`, `zaps_landed`, `reward_time_sum`.

mod params;
pub mod rules;

pub use params::HarvestParams;

use crate::error::ScenarioError;
use crate::layout::core::{LayoutCore, padded_cells};
use crate::render::draw::Instance;
use crate::rng;
use crate::rollout::frame::Frame;
use crate::scenario::actions::ActionSet;
use crate::scenario::check::{Check, f};
use crate::scenario::map::{Grid, Tile};
use crate::scenario::observation::{ObsField, ObservationSpec};
use crate::scenario::view::ScenarioView;
use crate::substrate::avatars::{self, AvatarLayout, ITEM, WALL};
use crate::substrate::zap::{self, APPLE_CELL, Beam, Zapper};
use crate::substrate::{ArenaMut, Derived, SubstrateRules};

/// Apples' colour (sRGB, Melting Pot's).
pub const APPLE: [u8; 3] = [214, 88, 88];

/// Flag: the apple here regrew this step (its neighbours' counts are raised after every cell
/// has drawn, so one step's draws all see the counts at the start of the regrowth phase).
pub const GROWN: u8 = 8;
/// The neighbour count sits in the flags' high nibble: one standing neighbour adds this.
pub const NEIGHBOUR: u8 = 16;

/// The largest regrowth radius (its disc holds 12 other cells: the count fits a nibble).
pub const MAX_RADIUS: f64 = 2.0;

/// Melting Pot's commons_harvest action names, in index order.
pub const ACTION_NAMES: [&str; 8] = [
    "noop",
    "forward",
    "backward",
    "step_left",
    "step_right",
    "turn_left",
    "turn_right",
    "fire_zap",
];

/// commons_harvest's derived data.
#[derive(Debug, Clone)]
pub struct Harvest {
    /// The parameters.
    pub params: HarvestParams,
    /// The facing-rotated window.
    pub avatar: AvatarLayout,
    /// The zapping beam.
    pub zapper: Zapper,
    /// Byte offsets into the cell layer of every apple cell.
    pub apple_cells: Vec<u32>,
    /// The apple cells as runs along map rows, in the same order (what regrowth scans).
    pub(crate) apple_runs: Vec<rules::AppleRun>,
    /// Map cells (`y * width + x`) of the inside spawn points.
    pub inside_spawns: Vec<u16>,
    /// Byte offsets of the other cells within `regrowth_radius` of a cell.
    pub disc: Vec<isize>,
    /// Bit `n` set: a cell with `n` standing neighbours may regrow (its probability is not 0).
    pub regrows_with: u16,
    /// Entry `k`: the chance, scaled to 2^32, that `k` cells in a row pass over the largest
    /// regrowth probability, `(1 - max)^k` (one entry per apple cell and one more):
    /// the gaps between the cells [`rules::regrow`] draws for.
    pub(crate) gaps: Vec<u64>,
    /// Per neighbour count (the last entry for 3 or more), the chance scaled to 2^32 that a cell the gaps
    /// landed on regrows: its probability over the largest.
    pub(crate) accept: [u64; 4],
    /// The random end's threshold scaled to 2^32.
    pub end_threshold: u64,
}

/// The cells `(dx, dy) != (0, 0)` with `dx^2 + dy^2 <= radius^2` (Melting Pot's `queryDisc`).
pub fn disc(radius: f64) -> Vec<(i16, i16)> {
    let r = radius.floor() as i16;
    let mut out = Vec::new();
    for dy in -r..=r {
        for dx in -r..=r {
            let d2 = (dx * dx + dy * dy) as f64;
            if (dx, dy) != (0, 0) && d2 <= radius * radius {
                out.push((dx, dy));
            }
        }
    }
    out
}

impl Harvest {
    /// Recomputes every cell's neighbour count from the standing apples.
    fn recount(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        let _ = layout;
        for cell in a.cells.chunks_exact_mut(crate::components::CELL_CHANNELS) {
            cell[0] &= NEIGHBOUR - 1;
        }
        for &i in &self.apple_cells {
            let i = i as usize;
            if a.cells[i + ITEM] != 0 {
                for &off in &self.disc {
                    let j = (i as isize + off) as usize;
                    a.cells[j] += NEIGHBOUR;
                }
            }
        }
    }
}

impl SubstrateRules for Harvest {
    type Params = HarvestParams;
    const NAME: &'static str = "commons_harvest";
    const TEMPLATE: &'static str = include_str!("template.ron");
    const HAS_AVATARS: bool = true;

    fn default_actions(_: &HarvestParams) -> ActionSet {
        ActionSet::Chemistry8
    }

    fn action_names(_: &HarvestParams) -> Vec<String> {
        ACTION_NAMES.map(String::from).to_vec()
    }

    fn map_symbols(_: &HarvestParams) -> Vec<char> {
        vec!['A', 'Q']
    }

    fn symbol_meaning(_: &HarvestParams, k: usize) -> String {
        match k {
            0 => "apple cell (starts with an apple)".into(),
            _ => "inside spawn point (slots 0 and 1 start here)".into(),
        }
    }

    fn check_params(p: &HarvestParams, _: &ScenarioView, c: &Check) -> Result<(), ScenarioError> {
        let sub = |field: &str| vec![f("substrate"), f(field)];
        if !(0.0..=MAX_RADIUS).contains(&p.regrowth_radius) {
            return Err(c.bad(
                &sub("regrowth_radius"),
                format!("radius {}", p.regrowth_radius),
                "a radius in [0, 2]",
            ));
        }
        for (k, &v) in p.regrowth_probabilities.iter().enumerate() {
            c.probability(
                &[
                    f("substrate"),
                    f("regrowth_probabilities"),
                    crate::scenario::check::i(k),
                ],
                v,
            )?;
        }
        c.finite(&sub("apple_reward"), p.apple_reward)?;
        c.probability(&sub("end_prob"), p.end_prob)?;
        if p.beam_length == 0 {
            return Err(c.bad(&sub("beam_length"), "beam_length is 0".into(), "at least 1"));
        }
        if p.beam_radius > p.beam_length {
            return Err(c.bad(
                &sub("beam_radius"),
                format!(
                    "beam_radius {} > beam_length {}",
                    p.beam_radius, p.beam_length
                ),
                "at most beam_length",
            ));
        }
        if p.end_every == 0 {
            return Err(c.bad(
                &sub("end_every"),
                "end_every is 0".into(),
                "at least 1 step",
            ));
        }
        Ok(())
    }

    fn check_roles(
        _: &HarvestParams,
        scenario: &ScenarioView,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        avatars::check_roles(scenario, c)
    }

    fn check_observation(
        _: &HarvestParams,
        scenario: &ScenarioView,
        _: &Grid,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        avatars::check_observation(Self::NAME, scenario, c)
    }

    fn resolved_observation(_: &HarvestParams, scenario: &ScenarioView) -> ObservationSpec {
        ObservationSpec {
            window: Some(avatars::window(scenario)),
            ..scenario.observation.clone()
        }
    }

    /// The window (item byte: an apple, 0/1), then the zap flags.
    fn observation_layout(_: &HarvestParams, scenario: &ScenarioView) -> Vec<ObsField> {
        vec![
            avatars::window_field(scenario, "apple", 1),
            ObsField::new(
                "zap",
                &[("flag", 2)],
                1,
                "ready to zap: 1 when the zapping beam can fire next step; in play: 1 while \
                 the avatar is in the arena (the whole observation is 0 while it is zapped out)",
            )
            .entries(&["ready to zap", "in play"]),
        ]
    }

    fn describe(p: &HarvestParams) -> String {
        format!(
            "regrowth radius {}, probabilities {:?}, zap {}x{} cooldown {}, out {} steps",
            p.regrowth_radius,
            p.regrowth_probabilities,
            p.beam_length,
            2 * p.beam_radius + 1,
            p.zap_cooldown,
            p.respawn_frames
        )
    }

    fn derive(params: &HarvestParams, scenario: &ScenarioView, grid: &Grid) -> Derived<Self> {
        let pad = avatars::window_pad(avatars::window(scenario), params.beam_length)
            .max(MAX_RADIUS as usize);
        let padded_width = grid.width + 2 * pad;
        let index = |x: usize, y: usize| ((y + pad) * padded_width + x + pad) * 3;
        let mut cells_template = padded_cells(grid, pad, |tile, cell: &mut [u8]| match tile {
            None | Some(Tile::Wall) => cell[0] = WALL,
            Some(Tile::Compound(0)) => {
                cell[0] = APPLE_CELL;
                cell[ITEM] = 1;
            }
            Some(_) => {}
        });
        let stride = padded_width as isize * 3;
        let disc: Vec<isize> = disc(params.regrowth_radius)
            .into_iter()
            .map(|(dx, dy)| dy as isize * stride + dx as isize * 3)
            .collect();
        let apples: Vec<(usize, usize)> = (0..grid.tiles.len())
            .filter(|&i| grid.tiles[i] == Tile::Compound(0))
            .map(|i| (i % grid.width, i / grid.width))
            .collect();
        let apple_cells: Vec<u32> = apples.iter().map(|&(x, y)| index(x, y) as u32).collect();
        let apple_runs = rules::runs(&apples, |x, y| index(x, y) as u32);
        for &i in &apple_cells {
            for &off in &disc {
                cells_template[(i as isize + off) as usize] += NEIGHBOUR;
            }
        }
        let regrowth = params.regrowth_probabilities.map(rng::threshold);
        let (gaps, accept) = rules::thinning(params.regrowth_probabilities, apple_cells.len());
        Derived {
            rules: Harvest {
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
                apple_cells,
                apple_runs,
                inside_spawns: (0..grid.tiles.len())
                    .filter(|&i| grid.tiles[i] == Tile::Compound(1))
                    .map(|i| i as u16)
                    .collect(),
                disc,
                regrows_with: (0..16).fold(0, |m, n| m | u16::from(regrowth[n.min(3)] > 0) << n),
                gaps,
                accept,
                end_threshold: rng::threshold(params.end_prob),
            },
            pad,
            cells_template,
            counter_names: zap::COUNTER_NAMES.map(String::from).to_vec(),
        }
    }

    fn apply_moves(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        rules::apply_moves(layout, self, a);
    }

    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        rules::interact(layout, self, a);
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        avatars::write_observations(layout, &self.avatar, a, |_, cooldown, extras| {
            extras[0] = u8::from(cooldown.0 == 0);
            extras[1] = 1;
        });
    }

    /// The whole map as layers (wall, apple, avatar, pollution 0): the global state.
    fn global_state_layout(_: &HarvestParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let width = scenario.map.first().map_or(0, |r| r.chars().count());
        zap::global_state_layout(width, scenario.map.len(), "pollution (none here)")
    }

    fn write_global_state(&self, layout: &LayoutCore, a: &ArenaMut, state: &mut [u8]) {
        zap::write_global_state(layout, a, state, |_, _| false);
    }

    fn rebuild_cells(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        avatars::mark_avatars(layout, a);
        self.recount(layout, a);
    }

    fn finish_spawn(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        rules::place_inside(layout, self, a);
        self.rebuild_cells(layout, a);
    }

    fn frame_items(&self, layout: &LayoutCore, cells: &[u8]) -> Vec<u8> {
        avatars::frame_items(layout, cells)
    }

    fn frame_items_len(&self, layout: &LayoutCore) -> Option<usize> {
        Some(layout.width * layout.height)
    }

    fn load_frame_items(&self, layout: &LayoutCore, items: &[u8], cells: &mut [u8]) -> Option<()> {
        avatars::load_frame_items(layout, items, cells)
    }

    fn draw_items(&self, layout: &LayoutCore, frame: &Frame, out: &mut Vec<Instance>) {
        avatars::draw_items(layout, frame, 0.3, |_| APPLE, out);
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
            2,
            (c(APPLE), "apple"),
            |_| c(APPLE),
            |e| format!("ready to zap: {}; in play: {}", e[0], e[1]),
        )
    }
}
