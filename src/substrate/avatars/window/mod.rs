//! The avatar substrates' observation: each learner's facing-rotated window of the cell layer.
//!
//! A window row runs along the observer's left-right axis: facing north or south it is a run of
//! adjacent cells in one row of the cell layer, facing east or west a run down one column. The
//! terrain (wall and item bytes) is copied row by row from that run; the few other avatars are
//! then placed from their positions, so no window cell is tested for an avatar. An 11-wide
//! window takes the AVX-512 rows of [`crate::simd::window`] where the CPU has them. Melting
//! Pot's own 11 x 11 window goes, on such a CPU, through a code layer of the arena instead
//! ([`crate::simd::codes`], avatars included: a fifth of Commons Harvest's step, against the
//! rows and placed avatars' third).

#[cfg(target_arch = "x86_64")]
use crate::simd::{codes, window as avx512};

use super::{AVATAR, AVATAR_CELL_BYTES, AvatarLayout, DIRS, ITEM, MAX_AVATARS, WALL};
use crate::components::{CELL_CHANNELS, Carry, Cooldown, Facing, GridPos};
use crate::layout::core::LayoutCore;
use crate::scenario::observation::Window;
use crate::substrate::ArenaMut;

/// One window cell of an observation.
type ObsCell = [u8; AVATAR_CELL_BYTES];

/// Byte offsets in the cell layer of one cell ahead and one cell to the right, facing `f`.
fn axes(f: usize, stride: isize) -> (isize, isize) {
    let offset = |(dx, dy): (i16, i16)| dy as isize * stride + dx as isize * CELL_CHANNELS as isize;
    (offset(DIRS[f]), offset(DIRS[(f + 1) % 4]))
}

/// Writes each learner's facing-rotated window: per cell [wall, item, other avatar, its facing
/// relative to the observer one-hot (same, right, opposite, left)], then the substrate's
/// `extras` from the learner's carried items and cooldown (gift: inventory levels 1-3 and a
/// ready flag; chemistry: the vesicle compound and an io-ready flag).
pub fn write_observations(
    layout: &LayoutCore,
    avatar: &AvatarLayout,
    a: &mut ArenaMut,
    extras_of: impl Fn(Carry, Cooldown, &mut [u8]),
) {
    write_with(layout, avatar, a, extras_of, simd_available());
}

/// [`write_observations`], with the AVX-512 kernels when `simd`.
fn write_with(
    layout: &LayoutCore,
    avatar: &AvatarLayout,
    a: &mut ArenaMut,
    extras_of: impl Fn(Carry, Cooldown, &mut [u8]),
    simd: bool,
) {
    let w = avatar.window;
    let window_bytes = w.width() * w.depth() * AVATAR_CELL_BYTES;
    let stride = (layout.padded_width * CELL_CHANNELS) as isize;
    #[cfg(target_arch = "x86_64")]
    if simd && w == codes::SHAPE && coded_windows(layout, a, &extras_of) {
        return;
    }
    let (others, count) = standing(a.cells, &a.pos[..layout.agents], a.facing, |p: GridPos| {
        layout.cell_index(p.x, p.y)
    });
    for s in 0..layout.learners {
        let out = &mut a.obs[s * layout.obs_len..(s + 1) * layout.obs_len];
        if !a.alive[s].0 {
            out.fill(0);
            continue;
        }
        let f = a.facing[s].0 as usize;
        let centre = layout.cell_index(a.pos[s].x, a.pos[s].y);
        let (window, extras) = out.split_at_mut(window_bytes);
        let (cells_out, _) = window.as_chunks_mut::<AVATAR_CELL_BYTES>();
        terrain(a.cells, centre, f, w, stride, simd, cells_out);
        place_others(&others[..count], a.pos[s], s, f, w, cells_out);
        extras_of(a.carry[s], a.cooldown[s], extras);
    }
}

/// A code layer ([`codes`]) and the layout it was built for: its padding rows (walls, the
/// same in every arena of a layout) are built once, the map's rows every step.
#[cfg(target_arch = "x86_64")]
#[derive(Default)]
struct CodeLayer {
    /// The layout's template (address and length), padded width and padding.
    layout: Option<(usize, usize, usize, usize)>,
    /// The codes, then [`codes::SLACK`] zeros.
    codes: Vec<u8>,
}

#[cfg(target_arch = "x86_64")]
thread_local! {
    /// The code layer [`coded_windows`] builds, one per thread, as long as the last cell layer
    /// this thread stepped (plus the kernel's slack).
    static CODES: std::cell::RefCell<CodeLayer> = std::cell::RefCell::new(CodeLayer::default());
}

/// Every learner's observation through a code layer of the arena ([`codes`]: Melting Pot's
/// window, avatars included, a few vector operations per 64 bytes); false, with nothing
/// written, when an item of the layer does not fit a code.
#[cfg(target_arch = "x86_64")]
fn coded_windows(
    layout: &LayoutCore,
    a: &mut ArenaMut,
    extras_of: &impl Fn(Carry, Cooldown, &mut [u8]),
) -> bool {
    let avatars = codes::AvatarBits::new(&a.facing[..layout.agents]);
    CODES.with_borrow_mut(|layer| {
        let width = layout.padded_width;
        let key = (
            layout.cells_template.as_ptr() as usize,
            a.cells.len(),
            width,
            layout.pad,
        );
        if layer.layout != Some(key) {
            layer.layout = None;
            layer.codes.clear();
            layer
                .codes
                .resize(a.cells.len() / CELL_CHANNELS + codes::SLACK, 0);
            if !codes::build(a.cells, &mut layer.codes, &avatars) {
                return false;
            }
            layer.layout = Some(key);
        }
        let rows = layout.pad * width..(layout.pad + layout.height) * width;
        let map = &a.cells[rows.start * CELL_CHANNELS..rows.end * CELL_CHANNELS];
        if !codes::build(map, &mut layer.codes[rows.start..], &avatars) {
            return false;
        }
        let cell_of = |p: GridPos| layout.cell_index(p.x, p.y) / CELL_CHANNELS;
        let mut views = [codes::View::NONE; MAX_AVATARS];
        for (s, view) in views.iter_mut().enumerate().take(layout.learners) {
            let out = &mut a.obs[s * layout.obs_len..(s + 1) * layout.obs_len];
            if !a.alive[s].0 {
                out.fill(0);
                continue;
            }
            extras_of(a.carry[s], a.cooldown[s], &mut out[codes::WINDOW_BYTES..]);
            *view = codes::View::new(cell_of(a.pos[s]), a.facing[s].0 as usize);
        }
        let views = &views[..layout.learners];
        codes::windows(&layer.codes, width, views, a.obs, layout.obs_len);
        true
    })
}

/// The wall and item bytes of every window cell, one window row (one run of the layer) at a
/// time, every byte of `out`. The run ascends in memory from the window's left edge (facing
/// north or east) or its right edge (south, west); its cells are adjacent facing north or south,
/// a layer row apart facing east or west. Each case, and Melting Pot's width (11), gets its own
/// copy of the loop with those known to the compiler; with `simd` ([`simd_available`]) the
/// 11-wide window's rows are the AVX-512 kernel's.
fn terrain(
    cells: &[u8],
    centre: usize,
    f: usize,
    w: Window,
    stride: isize,
    simd: bool,
    out: &mut [ObsCell],
) {
    let (forward, right) = axes(f, stride);
    let rows = Rows {
        cells,
        w,
        first: centre as isize - w.left as isize * right,
        forward,
    };
    let column = stride as usize;
    let out = out.as_flattened_mut();
    #[cfg(target_arch = "x86_64")]
    if simd && w.width() == avx512::WIDTH {
        let step = if f.is_multiple_of(2) {
            CELL_CHANNELS
        } else {
            column
        };
        let runs = avx512::Runs {
            first: rows.first,
            forward,
            ahead: w.ahead as usize,
            step,
            ascending: f <= 1,
        };
        avx512::rows(cells, runs, out);
        return;
    }
    match (w.width(), f) {
        (11, 0) => rows.copy(out, 11, CELL_CHANNELS, true),
        (11, 1) => rows.copy(out, 11, column, true),
        (11, 2) => rows.copy(out, 11, CELL_CHANNELS, false),
        (11, _) => rows.copy(out, 11, column, false),
        (width, 0) => rows.copy(out, width, CELL_CHANNELS, true),
        (width, 1) => rows.copy(out, width, column, true),
        (width, 2) => rows.copy(out, width, CELL_CHANNELS, false),
        (width, _) => rows.copy(out, width, column, false),
    }
}

/// Whether [`terrain`] may use the AVX-512 window rows on this CPU.
fn simd_available() -> bool {
    crate::simd::available()
}

/// The window's rows in the cell layer: where the row level with the observer starts (its
/// left edge) and the offset of one row ahead.
struct Rows<'a> {
    cells: &'a [u8],
    w: Window,
    first: isize,
    forward: isize,
}

impl Rows<'_> {
    /// Writes every window cell as [wall, item, 0, 0, 0, 0, 0], reading a run of `width` cells
    /// `step` bytes apart per row.
    #[inline(always)]
    fn copy(&self, out: &mut [u8], width: usize, step: usize, ascending: bool) {
        let span = (width - 1) * step;
        for (r, row_out) in out.chunks_exact_mut(width * AVATAR_CELL_BYTES).enumerate() {
            let first = self.first + (self.w.ahead as isize - r as isize) * self.forward;
            let lo = if ascending {
                first
            } else {
                first - span as isize
            } as usize;
            let run = &self.cells[lo..lo + span + CELL_CHANNELS];
            for c in 0..width {
                let j = if ascending { c } else { width - 1 - c } * step;
                let pair = u16::from_le_bytes([run[j], run[j + ITEM]]);
                let cell = u64::from(pair & (0xff00 | WALL as u16));
                // Eight bytes at once; the eighth is the next cell's first, written next. The
                // row's last cell takes its seven.
                let bytes = cell.to_le_bytes();
                let at = c * AVATAR_CELL_BYTES;
                if c + 1 < width {
                    row_out[at..at + 8].copy_from_slice(&bytes);
                } else {
                    row_out[at..at + AVATAR_CELL_BYTES]
                        .copy_from_slice(&bytes[..AVATAR_CELL_BYTES]);
                }
            }
        }
    }
}

/// An avatar the cell layer holds where it stands: its position, facing and slot.
#[derive(Debug, Clone, Copy, Default)]
struct Standing {
    pos: GridPos,
    facing: u8,
    slot: u8,
}

/// The avatars standing in the cell layer (its avatar byte, which moves, zaps and respawns
/// keep, holds the slot at the avatar's position), found once per arena.
fn standing(
    cells: &[u8],
    pos: &[GridPos],
    facing: &[Facing],
    index: impl Fn(GridPos) -> usize,
) -> ([Standing; MAX_AVATARS], usize) {
    let mut out = [Standing::default(); MAX_AVATARS];
    let mut n = 0;
    for (slot, &p) in pos.iter().enumerate().take(MAX_AVATARS) {
        if cells
            .get(index(p) + AVATAR)
            .is_some_and(|&v| v as usize == slot + 1)
        {
            out[n] = Standing {
                pos: p,
                facing: facing[slot].0,
                slot: slot as u8,
            };
            n += 1;
        }
    }
    (out, n)
}

/// Marks every other standing avatar inside learner `s`'s window (at `me`, facing `f`): byte
/// 2, and its facing relative to the observer's one-hot. Without a branch or a read: an
/// avatar outside the window, or the learner itself, writes its ones to a scratch cell instead
/// (the window's cells hold zeros there, and one avatar each).
fn place_others(
    others: &[Standing],
    me: GridPos,
    s: usize,
    f: usize,
    w: Window,
    out: &mut [ObsCell],
) {
    match f {
        0 => place_facing::<0>(others, me, s, w, out),
        1 => place_facing::<1>(others, me, s, w, out),
        2 => place_facing::<2>(others, me, s, w, out),
        _ => place_facing::<3>(others, me, s, w, out),
    }
}

/// [`place_others`] for facing `F`, its rotation known to the compiler.
#[inline(always)]
fn place_facing<const F: usize>(
    others: &[Standing],
    me: GridPos,
    s: usize,
    w: Window,
    out: &mut [ObsCell],
) {
    let (fx, fy) = DIRS[F];
    let (rx, ry) = DIRS[(F + 1) % 4];
    let (depth, width) = (w.depth(), w.width());
    let mut scratch: ObsCell = [0; AVATAR_CELL_BYTES];
    for o in others {
        let (dx, dy) = ((o.pos.x - me.x) as isize, (o.pos.y - me.y) as isize);
        let row = (w.ahead as isize - (dx * fx as isize + dy * fy as isize)) as usize;
        let col = (w.left as isize + dx * rx as isize + dy * ry as isize) as usize;
        let seen = (row < depth) & (col < width) & (o.slot as usize != s);
        let at = row.wrapping_mul(width).wrapping_add(col);
        let at = std::hint::select_unpredictable(seen, at, 0);
        let cell = std::hint::select_unpredictable(seen, &mut out[at], &mut scratch);
        cell[2] = 1;
        cell[3 + (o.facing as usize + 4 - F) % 4] = 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    /// The window's cell offsets in bytes from the agent's cell, per facing: row-major from
    /// the farthest-ahead row, columns from the agent's left, in a layer `padded_width` cells
    /// wide (how the gather defined the window, kept apart from [`axes`]).
    fn window_offsets(padded_width: usize, w: Window) -> [Vec<isize>; 4] {
        let stride = (padded_width * CELL_CHANNELS) as isize;
        std::array::from_fn(|f| {
            let (fx, fy) = DIRS[f];
            let (rx, ry) = DIRS[(f + 1) % 4];
            let mut offsets = Vec::with_capacity(w.width() * w.depth());
            for r in 0..w.depth() {
                let ahead = w.ahead as isize - r as isize;
                for c in 0..w.width() {
                    let lateral = c as isize - w.left as isize;
                    let dx = ahead * fx as isize + lateral * rx as isize;
                    let dy = ahead * fy as isize + lateral * ry as isize;
                    offsets.push(dy * stride + dx * CELL_CHANNELS as isize);
                }
            }
            offsets
        })
    }

    /// The window gathered cell by cell through [`window_offsets`], each cell's avatar byte
    /// read from the layer: the definition the row copies must reproduce.
    fn reference(
        cells: &[u8],
        centre: usize,
        f: usize,
        offsets: &[isize],
        s: usize,
        facing: &[Facing],
    ) -> Vec<ObsCell> {
        offsets
            .iter()
            .map(|&off| {
                let i = (centre as isize + off) as usize;
                let mut o = [0; AVATAR_CELL_BYTES];
                o[0] = cells[i] & WALL;
                o[1] = cells[i + ITEM];
                let other = cells[i + AVATAR] as usize;
                if other != 0 && other - 1 != s {
                    o[2] = 1;
                    o[3 + (facing[other - 1].0 as usize + 4 - f) % 4] = 1;
                }
                o
            })
            .collect()
    }

    /// Melting Pot's three avatar substrates with its window, stepped under random actions
    /// (zaps, respawns, regrowth and pollution included) from a shared thread-local code layer:
    /// every step's windows through the code layer equal the scalar rows and placed avatars.
    #[test]
    fn coded_windows_are_the_scalar_windows_over_whole_episodes() {
        use crate::components::AppliedAction;
        use crate::layout::Layout;
        use crate::scenario::Scenario;
        use crate::substrate::ArenaState;
        let scenarios = [
            include_str!("../../../../assets/scenarios/commons_harvest_open.ron"),
            include_str!("../../../../assets/scenarios/clean_up.ron"),
            include_str!("../../../../assets/scenarios/gift_refinements.ron"),
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut compared = 0;
        for (k, text) in scenarios.iter().enumerate() {
            let layout = Layout::derive(&Scenario::parse(text, "scenario.ron").unwrap());
            let avatar = AvatarLayout {
                window: Window::MELTING_POT,
            };
            let mut state = ArenaState::new(&layout, vec![GridPos::default(); layout.agents], {
                vec![crate::components::Alive(true); layout.agents]
            });
            crate::substrate::spawn(&layout, &mut state.view());
            let window_bytes = codes_shape_bytes();
            for t in 0..400 {
                if t == 200 {
                    // An item no code holds (as chemistry's compounds may be): the scalar
                    // rows must take over.
                    let centre = layout.cell_index(state.pos[0].x, state.pos[0].y);
                    state.cells[centre + ITEM] = 9;
                }
                let applied: Vec<AppliedAction> = (0..layout.agents)
                    .map(|_| AppliedAction((rng.next_u32() % layout.actions as u32) as u8))
                    .collect();
                crate::substrate::transition(&layout, &mut state, &applied);
                let mut windows = [Vec::new(), Vec::new()];
                for (simd, out) in [(true, 0), (false, 1)] {
                    let mut a = state.view();
                    write_with(
                        &layout,
                        &avatar,
                        &mut a,
                        |_, _, _| {},
                        simd && simd_available(),
                    );
                    windows[out] = a
                        .obs
                        .chunks(layout.obs_len)
                        .flat_map(|o| o[..window_bytes].to_vec())
                        .collect();
                }
                assert_eq!(windows[0], windows[1], "scenario {k}");
                compared += 1;
            }
        }
        assert_eq!(compared, 1200);
    }

    /// Bytes of Melting Pot's window.
    fn codes_shape_bytes() -> usize {
        Window::MELTING_POT.width() * Window::MELTING_POT.depth() * AVATAR_CELL_BYTES
    }

    proptest! {
        /// For every window shape (Melting Pot's 11 cells wide, which has AVX-512 rows, in
        /// half the cases), facing and placement of avatars (some standing, some out of play),
        /// the row copies and placed avatars equal the cell-by-cell gather.
        #[test]
        fn row_copies_are_the_cell_by_cell_window(
            reach in prop_oneof![
                [0u16..5, 0u16..5, 0u16..5, 0u16..5],
                Just([5u16, 5, 9, 1]),
                (0u16..11, 0u16..11).prop_map(|(ahead, behind)| [5, 5, ahead, behind]),
            ],
            size in (1usize..9, 1usize..9),
            avatars in 1usize..8,
            seed in any::<u64>(),
        ) {
            let [left, right, ahead, behind] = reach;
            let w = Window { left, right, ahead, behind };
            let pad = left.max(right).max(ahead).max(behind) as usize;
            let (width, height) = size;
            let padded_width = width + 2 * pad;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut draw = |n: usize| rng.next_u32() as usize % n;
            let mut cells = vec![0u8; padded_width * (height + 2 * pad) * CELL_CHANNELS];
            for cell in cells.chunks_exact_mut(CELL_CHANNELS) {
                cell[0] = draw(16) as u8;
                cell[ITEM] = draw(4) as u8;
            }
            let index = |p: GridPos| {
                ((p.y as usize + pad) * padded_width + p.x as usize + pad) * CELL_CHANNELS
            };
            let mut pos = vec![GridPos::default(); avatars];
            let mut facing = vec![Facing(0); avatars];
            // The watcher, any slot, is placed first and stands; the others stand where their
            // cell is free, with one in three out of play (a position the layer does not hold).
            let watcher = draw(avatars);
            for o in 0..avatars {
                let slot = (watcher + o) % avatars;
                let p = GridPos { x: draw(width) as i16, y: draw(height) as i16 };
                if o == 0 || (cells[index(p) + AVATAR] == 0 && draw(3) != 0) {
                    cells[index(p) + AVATAR] = slot as u8 + 1;
                }
                pos[slot] = p;
                facing[slot] = Facing(draw(4) as u8);
            }
            let offsets = window_offsets(padded_width, w);
            let stride = (padded_width * CELL_CHANNELS) as isize;
            for (f, offsets) in offsets.iter().enumerate() {
                facing[watcher] = Facing(f as u8);
                let centre = index(pos[watcher]);
                let expected = reference(&cells, centre, f, offsets, watcher, &facing);
                // The scalar rows, then the AVX-512 ones where this CPU has them.
                for simd in [false, simd_available()] {
                    let mut out = vec![[9u8; AVATAR_CELL_BYTES]; w.width() * w.depth()];
                    terrain(&cells, centre, f, w, stride, simd, &mut out);
                    let (others, count) = standing(&cells, &pos, &facing, index);
                    place_others(&others[..count], pos[watcher], watcher, f, w, &mut out);
                    prop_assert_eq!(&out, &expected, "facing {}, simd {}", f, simd);
                }
                // Melting Pot's window through the code layer, where this CPU has the kernel.
                #[cfg(target_arch = "x86_64")]
                if simd_available() && w == codes::SHAPE {
                    let mut layer = vec![7u8; cells.len() / CELL_CHANNELS + codes::SLACK];
                    let avatars = codes::AvatarBits::new(&facing);
                    prop_assert!(codes::build(&cells, &mut layer, &avatars));
                    let mut out = vec![9u8; codes::WINDOW_BYTES];
                    let view = [codes::View::new(centre / CELL_CHANNELS, f)];
                    codes::windows(&layer, padded_width, &view, &mut out, codes::WINDOW_BYTES);
                    prop_assert_eq!(&out, expected.as_flattened(), "facing {}, codes", f);
                }
            }
        }
    }
}
