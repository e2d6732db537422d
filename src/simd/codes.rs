//! Melting Pot's 11 x 11 facing-rotated window, with its avatars, from one byte per cell
//! (AVX-512 VBMI).
//!
//! Once per arena step, [`build`] packs the 3-byte cell layer into one code byte per cell:
//! the item in bits 0-1, the wall flag in bit 2 and, where an avatar stands, the bit of its
//! facing (bits 4-7), looked up from the cell's avatar byte in the arena's [`AvatarBits`].
//! Whatever the observer's facing, its window is then
//! eleven runs of eleven adjacent codes along map rows: window rows facing north or south,
//! window columns facing east or west. [`windows`] loads the eleven runs (16 bytes each) into
//! three vectors and gathers the 121 codes into the window's own order (rows from the farthest,
//! each from the observer's left) with two byte permutes per 64 cells: the permute table does
//! the rotation. Each 64 bytes of the observation are then one permute (every byte gets its
//! cell's code), an AND with the code bits that byte shows (per facing: wall, item, avatar, the
//! avatar's facing relative to the observer's; nothing of the observer's own avatar) and an
//! unsigned MIN that caps every byte at 1 but the item's. No avatar is placed afterwards and no
//! window cell is visited one by one.
//!
//! Audit: see [`super`]. [`windows`] is tested against the cell-by-cell window for every
//! facing and placement (`row_copies_are_the_cell_by_cell_window` in
//! `substrate::avatars::window`), [`build`] against [`build_scalar`] below.

use std::arch::x86_64::{
    __m128i, __m512i, _mm512_and_si512, _mm512_castsi128_si512, _mm512_inserti32x4,
    _mm512_mask_blend_epi8, _mm512_min_epu8, _mm512_movepi8_mask, _mm512_or_si512,
    _mm512_permutex2var_epi8, _mm512_permutexvar_epi8, _mm512_set1_epi8, _mm512_setzero_si512,
    _mm512_slli_epi16, _mm512_test_epi8_mask,
};

use super::available;
use crate::components::CELL_CHANNELS;
use crate::components::Facing;
use crate::scenario::observation::Window;
use crate::substrate::avatars::{AVATAR, AVATAR_CELL_BYTES, ITEM, WALL};

/// The window this kernel serves: Melting Pot's.
pub(crate) const SHAPE: Window = Window::MELTING_POT;
/// Cells along either side of the window.
const SIDE: usize = 11;
/// Bytes of one window in the observation.
pub(crate) const WINDOW_BYTES: usize = SIDE * SIDE * AVATAR_CELL_BYTES;
/// Bytes a run is loaded with (its 11 codes and 5 past them): a code layer needs this many
/// bytes after its last cell.
pub(crate) const SLACK: usize = 16;
/// Output vectors per window: 13 at 64-byte steps, then one ending at the window's last byte.
const VECTORS: usize = 14;
/// Where the last output vector starts.
const LAST: usize = WINDOW_BYTES - 64;
/// Code bits: the item (0-3), the wall flag, the first facing bit (north; then east, south,
/// west).
const ITEM_BITS: u8 = 0b11;
const WALL_BIT: u8 = 0b100;
const FACING_BIT: u8 = 0b1_0000;

/// The largest item value a code holds.
pub(crate) const MAX_ITEM: u8 = ITEM_BITS;

/// Per value of a cell's avatar byte (0: no avatar; slot + 1), the code bit of that avatar's
/// facing; 128 entries, as many as the byte's low 7 bits tell apart (the avatar bytes go up to
/// `MAX_AVATARS`, 64).
pub(crate) struct AvatarBits([u8; 128]);

impl AvatarBits {
    /// The bits of avatars facing `facing` (slot order, 0-3 each). Only the avatar bytes in the
    /// layer matter: an avatar out of play has none.
    pub(crate) fn new(facing: &[Facing]) -> AvatarBits {
        let mut bits = [0u8; 128];
        for (b, f) in bits[1..].iter_mut().zip(facing) {
            *b = FACING_BIT << (f.0 & 3);
        }
        AvatarBits(bits)
    }
}

/// The code of one cell of the layer, `None` when its item does not fit (the scalar
/// definition [`build`] must reproduce).
pub(crate) fn code(cell: &[u8], avatars: &AvatarBits) -> Option<u8> {
    let facing = avatars.0[(cell[AVATAR] & 127) as usize];
    (cell[ITEM] <= MAX_ITEM).then_some(cell[ITEM] | ((cell[0] & WALL) * WALL_BIT) | facing)
}

/// The codes of `cells` cell by cell into the start of `out` (one byte per cell); false when
/// an item does not fit a code.
pub(crate) fn build_scalar(cells: &[u8], out: &mut [u8], avatars: &AvatarBits) -> bool {
    for (o, cell) in out.iter_mut().zip(cells.chunks_exact(CELL_CHANNELS)) {
        match code(cell, avatars) {
            Some(c) => *o = c,
            None => return false,
        }
    }
    true
}

/// [`build_scalar`] 64 cells per step.
///
/// # Panics
/// When [`available`] is false or `out` holds fewer bytes than `cells` holds cells.
pub(crate) fn build(cells: &[u8], out: &mut [u8], avatars: &AvatarBits) -> bool {
    let n = cells.len() / CELL_CHANNELS;
    if n < 64 {
        return build_scalar(cells, out, avatars);
    }
    #[expect(
        unsafe_code,
        reason = "calling the target_feature kernel; see the audit above"
    )]
    {
        assert!(
            available(),
            "the code layer needs avx512f, avx512bw and avx512vbmi"
        );
        // SAFETY: the kernel needs only the CPU features `available` has just confirmed.
        unsafe { build_kernel(cells, &mut out[..n], avatars) }
    }
}

/// One observer of [`windows`]: its cell in the code layer and its facing (0-3) in one word,
/// or none (an observer out of play, whose window is not written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct View(u32);

impl View {
    /// No window to write.
    pub(crate) const NONE: View = View(u32::MAX);

    /// The observer at `cell` (below 2^30) facing `facing`.
    pub(crate) fn new(cell: usize, facing: usize) -> View {
        debug_assert!(cell < 1 << 30);
        View(((cell as u32) << 2) | (facing as u32 & 3))
    }

    fn get(self) -> Option<(usize, usize)> {
        (self != View::NONE).then_some(((self.0 >> 2) as usize, (self.0 & 3) as usize))
    }
}

/// Every observer's window: observer `k` (`views[k]`: its cell in a code layer `width` cells
/// wide and its facing) gets `WINDOW_BYTES` observation bytes at `out[k * stride..]`; an
/// observer's own cell shows no avatar.
///
/// # Panics
/// When [`available`] is false, or a run or window lies outside `codes` or `out`.
pub(crate) fn windows(codes: &[u8], width: usize, views: &[View], out: &mut [u8], stride: usize) {
    #[expect(
        unsafe_code,
        reason = "calling the target_feature kernel; see the audit above"
    )]
    {
        assert!(
            available(),
            "the code windows need avx512f, avx512bw and avx512vbmi"
        );
        // SAFETY: the kernel needs only the CPU features `available` has just confirmed.
        unsafe { windows_kernel(codes, width, views, out, stride) }
    }
}

/// [`windows`], one call for all observers (so the feature test and the call are paid once).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
fn windows_kernel(codes: &[u8], width: usize, views: &[View], out: &mut [u8], stride: usize) {
    for (k, view) in views.iter().enumerate() {
        let Some((centre, facing)) = view.get() else {
            continue;
        };
        let f = facing & 3;
        let (dx, dy) = CORNER[f];
        let first = (centre as isize + dy * width as isize + dx) as usize;
        window_kernel(codes, first, width, &TABLES[f], &mut out[k * stride..]);
    }
}

/// Per facing, the first run's offset from the observer in cells (x, y): the corner of the
/// window's rectangle on the map with the smallest x and y.
const CORNER: [(isize, isize); 4] = [(-5, -9), (-1, -5), (-5, -1), (-9, -5)];

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
fn build_kernel(cells: &[u8], out: &mut [u8], avatars: &AvatarBits) -> bool {
    let n = out.len();
    let flags_at = vector(&BUILD.flags);
    let items_at = vector(&BUILD.items);
    let avatars_at = vector(&BUILD.avatars);
    let half = |k: usize| -> __m512i {
        let bytes: [u8; 64] = avatars.0[64 * k..64 * (k + 1)]
            .try_into()
            .expect("64 bytes");
        bytemuck::cast(bytes)
    };
    let (bits_low, bits_high) = (half(0), half(1));
    let (low_ones, item_bits) = (
        _mm512_set1_epi8(WALL as i8),
        _mm512_set1_epi8(ITEM_BITS as i8),
    );
    let mut seen = _mm512_setzero_si512();
    // Chunks of 64 cells; the last one ends at the last cell (overlapping the one before).
    let mut start = 0;
    loop {
        let start_now = start.min(n - 64);
        let bytes = &cells[start_now * CELL_CHANNELS..(start_now + 64) * CELL_CHANNELS];
        let part = |k: usize| -> __m512i {
            let chunk: [u8; 64] = bytes[64 * k..64 * (k + 1)].try_into().expect("64 bytes");
            bytemuck::cast(chunk)
        };
        let (x0, x1, x2) = (part(0), part(1), part(2));
        let gather = |at: __m512i| {
            let low = _mm512_permutex2var_epi8(x0, at, x1);
            let high = _mm512_permutexvar_epi8(at, x2);
            _mm512_mask_blend_epi8(_mm512_movepi8_mask(at), low, high)
        };
        let (flags, items) = (gather(flags_at), gather(items_at));
        seen = _mm512_or_si512(seen, items);
        // Wall bits are 0 or 1 per byte: a 16-bit shift by 2 stays inside each byte.
        let wall = _mm512_slli_epi16(_mm512_and_si512(flags, low_ones), 2);
        // Each avatar byte's facing bit: the byte's low 7 bits pick one of the 128 entries.
        let facing = _mm512_permutex2var_epi8(bits_low, gather(avatars_at), bits_high);
        let codes = _mm512_or_si512(_mm512_and_si512(items, item_bits), wall);
        let codes = _mm512_or_si512(codes, facing);
        out[start_now..start_now + 64].copy_from_slice(&bytemuck::cast::<_, [u8; 64]>(codes));
        if start_now + 64 == n {
            break;
        }
        start += 64;
    }
    _mm512_test_epi8_mask(seen, _mm512_set1_epi8(!ITEM_BITS as i8)) == 0
}

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
fn window_kernel(codes: &[u8], first: usize, width: usize, t: &Tables, out: &mut [u8]) {
    let run = |j: usize| -> __m128i {
        let at = first + j * width;
        let bytes: [u8; 16] = codes[at..at + 16].try_into().expect("16 bytes");
        bytemuck::cast(bytes)
    };
    let four = |j: usize| {
        let v = _mm512_castsi128_si512(run(j));
        let v = _mm512_inserti32x4::<1>(v, run(j + 1));
        let v = _mm512_inserti32x4::<2>(v, run(j + 2));
        _mm512_inserti32x4::<3>(v, run(j + 3))
    };
    let (a, b) = (four(0), four(4));
    let c = _mm512_castsi128_si512(run(8));
    let c = _mm512_inserti32x4::<1>(c, run(9));
    let c = _mm512_inserti32x4::<2>(c, run(10));
    // The window's codes in its own order (row by row from the farthest row, each from the
    // observer's left): cells 0-63, then 64-120.
    let window = t.cells.map(|at| {
        let at = vector(&at);
        let low = _mm512_permutex2var_epi8(a, at, b);
        let high = _mm512_permutexvar_epi8(at, c);
        _mm512_mask_blend_epi8(_mm512_movepi8_mask(at), low, high)
    });
    let out = &mut out[..WINDOW_BYTES];
    for v in 0..VECTORS {
        // Output vectors 0-6 hold cells 0-63 exactly (64 cells of 7 bytes are 7 vectors).
        let codes = _mm512_permutexvar_epi8(vector(&BYTES.cell[v]), window[v / 7]);
        let kept = _mm512_and_si512(codes, vector(&t.keep[v]));
        let bytes = _mm512_min_epu8(kept, vector(&BYTES.cap[v]));
        let from = start(v);
        out[from..from + 64].copy_from_slice(&bytemuck::cast::<_, [u8; 64]>(bytes));
    }
}

fn vector(bytes: &[u8; 64]) -> __m512i {
    bytemuck::cast(*bytes)
}

/// Where a 64-cell chunk's flags, item and avatar bytes sit among its 192 bytes.
struct Build {
    flags: [u8; 64],
    items: [u8; 64],
    avatars: [u8; 64],
}

const BUILD: Build = Build {
    flags: every_third(0),
    items: every_third(ITEM),
    avatars: every_third(AVATAR),
};

const fn every_third(offset: usize) -> [u8; 64] {
    let mut out = [0u8; 64];
    let mut k = 0;
    while k < 64 {
        out[k] = (k * CELL_CHANNELS + offset) as u8;
        k += 1;
    }
    out
}

/// One facing's tables: where each window cell's code lies among the runs (run `j`, cell `i`:
/// byte `16 j + i`, runs 8-10 from 128 on), cells 0-63 and 64-127 (121-127 unused); per
/// output vector, the code bits each byte keeps (none of the observer's own avatar).
struct Tables {
    cells: [[u8; 64]; 2],
    keep: [[u8; 64]; VECTORS],
}

const TABLES: [Tables; 4] = [tables(0), tables(1), tables(2), tables(3)];

/// Where output vector `v` starts in the window's bytes.
const fn start(v: usize) -> usize {
    if v + 1 < VECTORS { 64 * v } else { LAST }
}

/// Per output vector and byte (the same for every facing): the byte's window cell (less 64
/// from vector 7 on, whose cells are 64 and up), and the most the byte holds (the item byte
/// the item, up to 3; the others 1, for any kept bit set).
struct Bytes {
    cell: [[u8; 64]; VECTORS],
    cap: [[u8; 64]; VECTORS],
}

const BYTES: Bytes = {
    let mut out = Bytes {
        cell: [[0u8; 64]; VECTORS],
        cap: [[1u8; 64]; VECTORS],
    };
    let mut v = 0;
    while v < VECTORS {
        let mut k = 0;
        while k < 64 {
            let o = start(v) + k;
            out.cell[v][k] = (o / AVATAR_CELL_BYTES % 64) as u8;
            if o % AVATAR_CELL_BYTES == ITEM {
                out.cap[v][k] = ITEM_BITS;
            }
            k += 1;
        }
        v += 1;
    }
    out
};

const fn tables(f: usize) -> Tables {
    let mut cells = [[0u8; 64]; 2];
    let mut cell = 0;
    while cell < SIDE * SIDE {
        let (r, c) = (cell / SIDE, cell % SIDE);
        let (j, i) = match f {
            0 => (r, c),
            1 => (c, SIDE - 1 - r),
            2 => (SIDE - 1 - r, SIDE - 1 - c),
            _ => (SIDE - 1 - c, r),
        };
        cells[cell / 64][cell % 64] = (16 * j + i) as u8;
        cell += 1;
    }
    let mut keep = [[0u8; 64]; VECTORS];
    let own = SHAPE.ahead as usize * SIDE + SHAPE.left as usize;
    let mut v = 0;
    while v < VECTORS {
        let mut k = 0;
        while k < 64 {
            let o = start(v) + k;
            let (cell, channel) = (o / AVATAR_CELL_BYTES, o % AVATAR_CELL_BYTES);
            keep[v][k] = match channel {
                0 => WALL_BIT,
                1 => ITEM_BITS,
                2 if cell != own => FACING_BIT * 0b1111,
                3..=6 if cell != own => FACING_BIT << ((channel - 3 + f) % 4),
                _ => 0,
            };
            k += 1;
        }
        v += 1;
    }
    Tables { cells, keep }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// On layers of any size (fewer cells than a chunk, a chunk's multiple or not), with
        /// items that fit a code or one that does not, and avatars of any slot (up to 64) in
        /// any facing, the kernel's code layer and verdict are the scalar code's.
        #[test]
        fn the_kernel_builds_what_the_scalar_code_builds(
            cells in proptest::collection::vec((0u8..16, 0u8..4, 0u8..=64), 1..400),
            facing in proptest::collection::vec(0u8..4, 64),
            too_big in proptest::option::of((any::<prop::sample::Index>(), 4u8..=255)),
        ) {
            prop_assume!(available());
            let mut layer: Vec<u8> = cells.iter().flat_map(|&(f, i, a)| [f, i, a]).collect();
            if let Some((at, item)) = too_big {
                layer[at.index(cells.len()) * CELL_CHANNELS + ITEM] = item;
            }
            let facing: Vec<Facing> = facing.into_iter().map(Facing).collect();
            let avatars = AvatarBits::new(&facing);
            let mut expected = vec![7u8; cells.len() + 1];
            let mut got = vec![7u8; cells.len() + 1];
            let fits = build_scalar(&layer, &mut expected, &avatars);
            prop_assert_eq!(build(&layer, &mut got, &avatars), fits);
            prop_assert_eq!(fits, too_big.is_none());
            if fits {
                prop_assert_eq!(got, expected);
            }
        }
    }
}
