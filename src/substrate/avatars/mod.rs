//! What the avatar substrates (gift_refinements, chemistry) share: facings, moves relative to
//! the facing blocked by walls and other avatars, and the facing-rotated observation window.
//!
//! Cell layer: a padded grid (padding = the farthest the window or a beam reaches, marked as
//! wall) of 3 bytes per cell: flags ([`WALL`], [`TOKEN_CELL`], [`USED`]), the item (gift: a
//! token 0/1; chemistry: compound index + 1, 0 empty) and the avatar standing there (slot + 1,
//! 0 none).

mod window;

pub use window::write_observations;

use rand_core::Rng;

use super::ArenaMut;
use crate::components::{CELL_CHANNELS, GridPos};
use crate::error::{ErrorClass, ScenarioError};
use crate::layout::core::{LayoutCore, padded_cells};
use crate::rng::below;
use crate::scenario::check::{Check, f};
use crate::scenario::map::{Grid, Tile};
use crate::scenario::observation::{ObsField, Window};
use crate::scenario::view::ScenarioView;

/// Bytes per cell in the avatar substrates' observation window: wall, item, avatar, and the
/// other avatar's facing relative to the observer as four one-hot bytes (same, right, opposite,
/// left).
pub const AVATAR_CELL_BYTES: usize = 7;

/// The farthest a facing-rotated window reaches in any direction.
pub const MAX_WINDOW_REACH: usize = 32;

/// What the avatar substrates (gift_refinements, chemistry) derive alike: the window.
#[derive(Debug, Clone)]
pub struct AvatarLayout {
    /// The facing-rotated window.
    pub window: Window,
}

impl AvatarLayout {
    /// The window a scenario asks for.
    pub(crate) fn new(scenario: &ScenarioView) -> AvatarLayout {
        AvatarLayout {
            window: window(scenario),
        }
    }
}

/// Flag: wall or outside the map.
pub const WALL: u8 = 1;
/// Flag: a cell where tokens grow (gift_refinements).
pub const TOKEN_CELL: u8 = 2;
/// Flag: the cell took part in a reaction this step (chemistry; cleared at the end of the step).
pub const USED: u8 = 4;

/// Offset of the item byte in a cell.
pub const ITEM: usize = 1;
/// Offset of the avatar byte in a cell.
pub const AVATAR: usize = 2;

/// Unit steps per facing: north, east, south, west.
pub const DIRS: [(i16, i16); 4] = [(0, -1), (1, 0), (0, 1), (-1, 0)];

/// The most avatars an arena may hold (validated), so per-step scratch fits on the stack.
pub const MAX_AVATARS: usize = 64;

/// A random permutation of the first `m` slots, the order in which simultaneous actions are
/// resolved this step (Melting Pot updates avatars in a random order too), as the slots in
/// that order.
///
/// A Fisher-Yates shuffle drawing one word per swap. Up to 8 slots (Melting Pot's substrates
/// have 7) it shuffles the bytes of one register, so no swap waits on memory.
#[inline(always)]
pub fn priority_order(m: usize, rng: &mut impl Rng) -> PriorityOrder {
    if m <= PACKED_SLOTS {
        return PriorityOrder(Slots::Packed {
            slots: packed_order(m, rng),
            left: m as u8,
        });
    }
    let mut slots = [0u8; MAX_AVATARS];
    for (k, o) in slots.iter_mut().enumerate().take(m) {
        *o = k as u8;
    }
    for k in (1..m).rev() {
        let j = below(rng.next_u32(), k as u32 + 1) as usize;
        slots.swap(k, j);
    }
    PriorityOrder(Slots::Wide {
        slots,
        next: 0,
        len: m as u8,
    })
}

/// The slots of a [`priority_order`], first to act first.
#[derive(Debug, Clone)]
pub struct PriorityOrder(Slots);

#[derive(Debug, Clone)]
enum Slots {
    /// Up to 8 slots, one per byte from the lowest; `left` of them still to come.
    Packed { slots: u64, left: u8 },
    /// More slots: `slots[next..len]` still to come.
    Wide {
        slots: [u8; MAX_AVATARS],
        next: u8,
        len: u8,
    },
}

impl Iterator for PriorityOrder {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        match &mut self.0 {
            Slots::Packed { slots, left } => {
                if *left == 0 {
                    return None;
                }
                let s = (*slots & 0xff) as usize;
                *slots >>= 8;
                *left -= 1;
                Some(s)
            }
            Slots::Wide { slots, next, len } => {
                if next == len {
                    return None;
                }
                let s = slots[*next as usize] as usize;
                *next += 1;
                Some(s)
            }
        }
    }
}

/// The most slots [`priority_order`] shuffles in a register.
const PACKED_SLOTS: usize = 8;

/// [`priority_order`] for `m <= 8` slots, byte `k` of the word holding the slot at position
/// `k`: the same draws and swaps, on the bytes of a `u64`.
#[inline(always)]
fn packed_order(m: usize, rng: &mut impl Rng) -> u64 {
    let mut packed = u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
    for k in (1..m).rev() {
        let j = below(rng.next_u32(), k as u32 + 1);
        let (sk, sj) = (8 * k as u32, 8 * j);
        let differ = ((packed >> sk) ^ (packed >> sj)) & 0xff;
        packed ^= (differ << sk) | (differ << sj);
    }
    packed
}

/// Clears and re-marks every live avatar's cell in the avatar byte.
pub fn mark_avatars(layout: &LayoutCore, a: &mut ArenaMut) {
    for cell in a.cells.chunks_exact_mut(CELL_CHANNELS) {
        cell[AVATAR] = 0;
    }
    for slot in 0..layout.agents {
        if a.alive[slot].0 {
            let i = layout.cell_index(a.pos[slot].x, a.pos[slot].y);
            a.cells[i + AVATAR] = slot as u8 + 1;
        }
    }
}

/// The movement actions every avatar substrate shares (its action set's first seven entries);
/// substrate-specific actions (io, consume, gifts) follow them.
pub(crate) mod moves {
    /// Do nothing.
    pub(crate) const NOOP: u8 = 0;
    /// One cell ahead.
    pub(crate) const FORWARD: u8 = 1;
    /// One cell behind.
    pub(crate) const BACKWARD: u8 = 2;
    /// One cell to the left.
    pub(crate) const STEP_LEFT: u8 = 3;
    /// One cell to the right.
    pub(crate) const STEP_RIGHT: u8 = 4;
    /// Turn a quarter to the left.
    pub(crate) const TURN_LEFT: u8 = 5;
    /// Turn a quarter to the right.
    pub(crate) const TURN_RIGHT: u8 = 6;
}

/// Moves and turns. Actions 1-4 step forward, backward, left, right relative to the facing,
/// 5-6 turn left, right. Avatars act in a random priority order; a step succeeds when the
/// target cell is open and holds no avatar at that moment (so two avatars never share a cell and
/// the first in priority wins a contested cell). The move happens before the turn, as in Melting
/// Pot's action order. `entered(a, s, j)` runs as soon as avatar `s` has stepped into the cell at
/// byte `j` of the cell layer, before the next avatar moves, when that cell has a flag of `takes`
/// and holds an item (gift_refinements picks a token up, the apple substrates eat an apple); 0
/// takes nothing. That test has no branch of its own, so a random move's success steers none:
/// the one branch, into `entered`, is rarely taken.
pub fn apply_moves(
    layout: &LayoutCore,
    a: &mut ArenaMut,
    takes: u8,
    mut entered: impl FnMut(&mut ArenaMut, usize, usize),
) {
    for s in priority_order(layout.agents, &mut a.rng.rules) {
        if !a.alive[s].0 {
            continue;
        }
        // Without a branch on the (random) action: a move that is not one stays in place.
        let act = (a.applied[s].0 as usize).min(moves::TURN_RIGHT as usize + 1);
        let f = a.facing[s].0 as usize;
        let moving = (1..=4).contains(&act);
        let (dx, dy) = DIRS[(f + STEP_TURNS[act]) % 4];
        let from = a.pos[s];
        let to = GridPos {
            x: from.x + dx * i16::from(moving),
            y: from.y + dy * i16::from(moving),
        };
        let (i, j) = (
            layout.cell_index(from.x, from.y),
            layout.cell_index(to.x, to.y),
        );
        let free = moving & (a.cells[j] & WALL == 0) & (a.cells[j + AVATAR] == 0);
        let (left, there) = (a.cells[i + AVATAR], a.cells[j + AVATAR]);
        a.cells[i + AVATAR] = std::hint::select_unpredictable(free, 0, left);
        a.cells[j + AVATAR] = std::hint::select_unpredictable(free, s as u8 + 1, there);
        a.pos[s] = std::hint::select_unpredictable(free, to, from);
        a.facing[s].0 = ((f + TURNS[act]) % 4) as u8;
        if free & (a.cells[j] & takes != 0) & (a.cells[j + ITEM] != 0) {
            entered(a, s, j);
        }
    }
}

/// Quarter turns from the facing to the direction of a step, by action (forward, backward,
/// left, right; 0 for the rest, which do not step).
const STEP_TURNS: [usize; 8] = [0, 0, 2, 3, 1, 0, 0, 0];
/// Quarter turns of the facing, by action (turn left, turn right; 0 for the rest).
const TURNS: [usize; 8] = [0, 0, 0, 0, 0, 3, 1, 0];

/// The window a scenario asks for (Melting Pot's by default).
pub(crate) fn window(scenario: &ScenarioView) -> Window {
    scenario.observation.window.unwrap_or(Window::MELTING_POT)
}

/// The window block of a learner's observation ([`write_observations`]); the substrate's
/// extras follow it. `item` names the item byte, which takes values up to `item_max`.
pub(crate) fn window_field(scenario: &ScenarioView, item: &str, item_max: u8) -> ObsField {
    let w = window(scenario);
    ObsField::new(
        "window",
        &[
            ("row", w.depth()),
            ("column", w.width()),
            ("byte", AVATAR_CELL_BYTES),
        ],
        0,
        "facing-rotated window, rows from the farthest ahead, columns from the agent's left; \
         another avatar's facing relative to the observer one-hot; all zero once the agent left",
    )
    .entries(&[
        "wall",
        item,
        "other avatar",
        "facing same",
        "facing right",
        "facing opposite",
        "facing left",
    ])
    .entry_max(vec![1, item_max, 1, 1, 1, 1, 1])
}

/// How far a facing-rotated window (or a beam) reaches from the agent: the cell layer's pad.
pub(crate) fn window_pad(w: Window, beam: u8) -> usize {
    [w.left, w.right, w.ahead, w.behind]
        .into_iter()
        .max()
        .unwrap_or(0)
        .max(beam as u16) as usize
}

/// The initial cell layer: walls (and the outside) flagged, token cells flagged and empty (as
/// in Melting Pot, they regrow), compound cells holding their compound.
pub(crate) fn cells_template(grid: &Grid, pad: usize) -> Vec<u8> {
    padded_cells(grid, pad, |tile, cell: &mut [u8]| match tile {
        None | Some(Tile::Wall) => cell[0] = WALL,
        Some(Tile::Token) => cell[0] = TOKEN_CELL,
        Some(Tile::Compound(k)) => cell[ITEM] = k + 1,
        Some(_) => {}
    })
}

/// The observation checks both avatar substrates share: no square window or channels, and a
/// facing-rotated window of bounded reach (it may reach past the map, whose outside reads as
/// wall; the cap bounds the observation's size).
pub(crate) fn check_observation(
    name: &str,
    scenario: &ScenarioView,
    c: &Check,
) -> Result<(), ScenarioError> {
    let obs = &scenario.observation;
    c.observation_unused(name, obs, &["radius", "channels"])?;
    let w = window(scenario);
    let reach = [
        ("left", w.left),
        ("right", w.right),
        ("ahead", w.ahead),
        ("behind", w.behind),
    ];
    for (field, v) in reach {
        if v as usize > MAX_WINDOW_REACH {
            return Err(c.at(
                &[f("observation"), f("window"), f(field)],
                None,
                ErrorClass::WindowTooLarge,
                format!("{field} {v} reaches more than {MAX_WINDOW_REACH} cells"),
                format!("at most {MAX_WINDOW_REACH}"),
            ));
        }
    }
    Ok(())
}

/// At most [`MAX_AVATARS`] avatars per arena.
pub(crate) fn check_roles(scenario: &ScenarioView, c: &Check) -> Result<(), ScenarioError> {
    let agents = scenario.agents_per_arena();
    if agents > MAX_AVATARS {
        return Err(c.bad(
            &[f("roles")],
            format!("{agents} avatars"),
            "at most 64 avatars per arena",
        ));
    }
    Ok(())
}

/// The whole-map global state of an avatar substrate: per map cell, row-major from the
/// top-left, [wall, item, avatar, the avatar's facing one-hot: north, east, south, west] (the
/// window's bytes with absolute facings). `item` names the item byte, up to `item_max`.
pub(crate) fn global_state_layout(
    scenario: &ScenarioView,
    item: &str,
    item_max: u8,
) -> Vec<ObsField> {
    let width = scenario.map.first().map_or(0, |r| r.chars().count());
    vec![
        ObsField::new(
            "map",
            &[
                ("row", scenario.map.len()),
                ("column", width),
                ("byte", AVATAR_CELL_BYTES),
            ],
            item_max.max(1),
            "the whole map, row-major from the top-left: wall, item, an avatar standing there and \
             its facing one-hot",
        )
        .entries(&[
            "wall",
            item,
            "avatar",
            "facing north",
            "facing east",
            "facing south",
            "facing west",
        ])
        .entry_max(vec![1, item_max, 1, 1, 1, 1, 1]),
    ]
}

/// Writes [`global_state_layout`]'s bytes.
pub(crate) fn write_global_state(layout: &LayoutCore, a: &ArenaMut, state: &mut [u8]) {
    let (cells, _) = state.as_chunks_mut::<AVATAR_CELL_BYTES>();
    for (k, out) in cells
        .iter_mut()
        .enumerate()
        .take(layout.width * layout.height)
    {
        let (x, y) = ((k % layout.width) as i16, (k / layout.width) as i16);
        let i = layout.cell_index(x, y);
        *out = [a.cells[i] & WALL, a.cells[i + ITEM], 0, 0, 0, 0, 0];
        let slot = a.cells[i + AVATAR] as usize;
        if slot != 0 {
            out[2] = 1;
            out[3 + a.facing[slot - 1].0 as usize % 4] = 1;
        }
    }
}

/// The item byte of every map cell, row-major (a rollout frame's items).
pub(crate) fn frame_items(layout: &LayoutCore, cells: &[u8]) -> Vec<u8> {
    (0..layout.height as i16)
        .flat_map(|y| (0..layout.width as i16).map(move |x| (x, y)))
        .map(|(x, y)| cells[layout.cell_index(x, y) + ITEM])
        .collect()
}

/// Writes a frame's items back into the item bytes; `None` when the length is wrong.
pub(crate) fn load_frame_items(layout: &LayoutCore, items: &[u8], cells: &mut [u8]) -> Option<()> {
    if items.len() != layout.width * layout.height {
        return None;
    }
    for (i, &item) in items.iter().enumerate() {
        let (x, y) = ((i % layout.width) as i16, (i / layout.width) as i16);
        *cells.get_mut(layout.cell_index(x, y) + ITEM)? = item;
    }
    Some(())
}

/// A frame's non-empty items as diamonds of `half` size, coloured by `colour(item)`.
pub(crate) fn draw_items(
    layout: &LayoutCore,
    frame: &crate::rollout::frame::Frame,
    half: f32,
    colour: impl Fn(u8) -> [u8; 3],
    out: &mut Vec<crate::render::draw::Instance>,
) {
    use crate::render::draw::{rgb, shape, square};
    let w = layout.width;
    for (i, &item) in frame.items.iter().enumerate() {
        if item != 0 {
            let (x, y) = ((i % w) as f32, (i / w) as f32);
            out.push(square(x, y, half, rgb(colour(item)), shape::DIAMOND, 0.0));
        }
    }
}

/// An avatar substrate's observation drawn as cells: walls, items coloured by `item_colour`,
/// other avatars; `notes` words the `extras` bytes after the window. `None` when the length
/// does not match.
#[cfg(feature = "viewer")]
pub(crate) fn window_image(
    avatar: &AvatarLayout,
    obs: &[u8],
    extras: usize,
    item: (eframe::egui::Color32, &str),
    item_colour: impl Fn(u8) -> eframe::egui::Color32,
    notes: impl Fn(&[u8]) -> String,
) -> Option<crate::viewer::obs_image::ObsImage> {
    use crate::render::draw::{FLOOR, WALL};
    use crate::viewer::obs_image::{ObsImage, c};
    use eframe::egui::Color32;
    let w = avatar.window;
    let (cols, rows) = (w.width(), w.depth());
    let grid = cols * rows * AVATAR_CELL_BYTES;
    if obs.len() != grid + extras {
        return None;
    }
    let other = Color32::from_rgb(90, 70, 160);
    let cells = obs[..grid]
        .chunks_exact(AVATAR_CELL_BYTES)
        .map(|cell| {
            if cell[0] != 0 {
                c(WALL)
            } else if cell[2] != 0 {
                other
            } else if cell[1] != 0 {
                item_colour(cell[1])
            } else {
                c(FLOOR)
            }
        })
        .collect();
    Some(ObsImage {
        cols,
        rows,
        cells,
        observer: Some((w.left as usize, w.ahead as usize)),
        legend: vec![
            (c(FLOOR), "empty".into()),
            (c(WALL), "wall".into()),
            (item.0, item.1.to_string()),
            (other, "other avatar".into()),
        ],
        notes: vec![notes(&obs[grid..])],
    })
}

/// The [`SubstrateRules`](super::SubstrateRules) hooks gift_refinements and chemistry implement
/// alike, written once and expanded inside each one's `impl`: avatars face, carry and block;
/// roles and the window are checked the same way; the window defaults to Melting Pot's; the
/// cell layer's avatar byte is rebuilt from the agents; frames record the item byte
/// of every map cell.
macro_rules! avatar_hooks {
    ($params:ty) => {
        const HAS_AVATARS: bool = true;

        fn check_roles(
            _: &$params,
            scenario: &$crate::scenario::view::ScenarioView,
            c: &$crate::scenario::check::Check,
        ) -> Result<(), $crate::error::ScenarioError> {
            $crate::substrate::avatars::check_roles(scenario, c)
        }

        fn check_observation(
            _: &$params,
            scenario: &$crate::scenario::view::ScenarioView,
            _: &$crate::scenario::map::Grid,
            c: &$crate::scenario::check::Check,
        ) -> Result<(), $crate::error::ScenarioError> {
            $crate::substrate::avatars::check_observation(Self::NAME, scenario, c)
        }

        fn resolved_observation(
            _: &$params,
            scenario: &$crate::scenario::view::ScenarioView,
        ) -> $crate::scenario::observation::ObservationSpec {
            $crate::scenario::observation::ObservationSpec {
                window: Some($crate::substrate::avatars::window(scenario)),
                ..scenario.observation.clone()
            }
        }

        fn rebuild_cells(
            &self,
            layout: &$crate::layout::core::LayoutCore,
            a: &mut $crate::substrate::ArenaMut,
        ) {
            $crate::substrate::avatars::mark_avatars(layout, a);
        }

        fn frame_items(&self, layout: &$crate::layout::core::LayoutCore, cells: &[u8]) -> Vec<u8> {
            $crate::substrate::avatars::frame_items(layout, cells)
        }

        fn frame_items_len(&self, layout: &$crate::layout::core::LayoutCore) -> Option<usize> {
            Some(layout.width * layout.height)
        }

        fn load_frame_items(
            &self,
            layout: &$crate::layout::core::LayoutCore,
            items: &[u8],
            cells: &mut [u8],
        ) -> Option<()> {
            $crate::substrate::avatars::load_frame_items(layout, items, cells)
        }
    };
}
pub(crate) use avatar_hooks;

#[cfg(test)]
mod tests {
    use rand_core::SeedableRng;

    use super::*;

    proptest::proptest! {
        /// The order is a Fisher-Yates shuffle of the first `m` slots drawing one word per
        /// swap, whether it shuffles in a register (up to 8 slots) or in memory: the same
        /// permutation as swapping array entries, and the stream left at the same place.
        #[test]
        fn the_order_is_the_byte_by_byte_shuffle(m in 1usize..=MAX_AVATARS, seed: u64) {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut reference_rng = rng.clone();
            let order: Vec<u8> = priority_order(m, &mut rng).map(|s| s as u8).collect();
            let mut reference: Vec<u8> = (0..m as u8).collect();
            for k in (1..m).rev() {
                let j = below(reference_rng.next_u32(), k as u32 + 1) as usize;
                reference.swap(k, j);
            }
            proptest::prop_assert_eq!(order, reference);
            proptest::prop_assert_eq!(rng.next_u32(), reference_rng.next_u32());
        }
    }
}
