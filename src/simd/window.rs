//! The window rows of Melting Pot's 11-cell-wide window with AVX-512 (VBMI).
//!
//! A row's 11 cells of the cell layer are brought into one vector (facing north or south the
//! run's first 32 bytes, one load, hold every flags and item byte; facing east or west each
//! cell's flags and item bytes are read and packed into three words), then one byte permute
//! per half of the row places every cell's wall and item bytes where the observation wants
//! them (in order, or reversed facing south or west), and a mask keeps the wall bit and zeroes
//! the five avatar bytes. The row's 77 bytes are stored as 64 and an overlapping 16.
//!
//! Audit: the only `unsafe` is [`rows`]'s call of the `#[target_feature]` kernel, made after
//! [`available`] found those features on this CPU. Every memory access is a bounds-checked
//! slice; loads and stores go through `bytemuck` arrays, never pointers. The kernel is tested
//! against the cell-by-cell window for every facing, window depth and placement
//! (`row_copies_are_the_cell_by_cell_window` in `substrate::avatars::window`).

use std::arch::x86_64::{
    __m128i, __m256i, __m512i, _mm512_and_si512, _mm512_castsi256_si512, _mm512_castsi512_si128,
    _mm512_permutexvar_epi8, _mm512_set_epi64,
};

use super::available;
use crate::components::CELL_CHANNELS;
use crate::substrate::avatars::{AVATAR_CELL_BYTES, ITEM, WALL};

/// The window width this kernel serves (Melting Pot's).
pub(crate) const WIDTH: usize = 11;
/// Bytes of one window row in the observation.
const ROW_BYTES: usize = WIDTH * AVATAR_CELL_BYTES;
/// Where the row's second (16-byte) store starts.
const TAIL: usize = ROW_BYTES - 16;

/// Where one window's rows lie in the cell layer: row `r` starts at byte
/// `first + (ahead - r) * forward` (its left edge), its cells `step` bytes apart, read in
/// ascending (`ascending`) or descending memory order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Runs {
    pub(crate) first: isize,
    pub(crate) forward: isize,
    pub(crate) ahead: usize,
    pub(crate) step: usize,
    pub(crate) ascending: bool,
}

/// One window's rows, as the scalar `Rows::copy` writes them, into `out` (whole rows).
///
/// # Panics
/// When [`available`] is false (callers check it), or a row's run is outside `cells`.
pub(crate) fn rows(cells: &[u8], runs: Runs, out: &mut [u8]) {
    #[expect(
        unsafe_code,
        reason = "calling the target_feature kernel; see the audit above"
    )]
    {
        assert!(
            available(),
            "the AVX-512 window rows need avx512f, avx512bw and avx512vbmi"
        );
        // SAFETY: the kernel's only requirement beyond Rust's usual ones is that the CPU has the
        // features it is compiled for, which `available` has just confirmed.
        unsafe { kernel(cells, runs, out) }
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
fn kernel(cells: &[u8], runs: Runs, out: &mut [u8]) {
    let Runs {
        first,
        forward,
        ahead,
        step,
        ascending,
    } = runs;
    let span = (WIDTH - 1) * step;
    let adjacent = step == CELL_CHANNELS;
    let table = match (adjacent, ascending) {
        (true, true) => &TABLES[0],
        (true, false) => &TABLES[1],
        (false, true) => &TABLES[2],
        (false, false) => &TABLES[3],
    };
    let head = vector(&table.head);
    let tail = vector(&table.tail);
    let (keep_head, keep_tail) = (vector(&KEEP.head), vector(&KEEP.tail));
    for (r, row_out) in out.chunks_exact_mut(ROW_BYTES).enumerate() {
        let start = first + (ahead as isize - r as isize) * forward;
        let lo = if ascending {
            start
        } else {
            start - span as isize
        } as usize;
        let run = if adjacent {
            // The last cell's item is the run's 32nd byte.
            let run: [u8; 32] = cells[lo..lo + 32].try_into().expect("32 bytes");
            _mm512_castsi256_si512(bytemuck::cast::<_, __m256i>(run))
        } else {
            let run = &cells[lo..lo + span + ITEM + 1];
            let pair = |c: usize| {
                let j = c * step;
                u64::from(u16::from_le_bytes(
                    run[j..j + 2].try_into().expect("2 bytes"),
                ))
            };
            let word = |c: usize, n: usize| (0..n).fold(0, |w, k| w | pair(c + k) << (16 * k));
            _mm512_set_epi64(
                0,
                0,
                0,
                0,
                0,
                word(8, 3) as i64,
                word(4, 4) as i64,
                word(0, 4) as i64,
            )
        };
        let head_bytes = _mm512_and_si512(_mm512_permutexvar_epi8(head, run), keep_head);
        let tail_bytes = _mm512_and_si512(_mm512_permutexvar_epi8(tail, run), keep_tail);
        row_out[..64].copy_from_slice(&bytemuck::cast::<_, [u8; 64]>(head_bytes));
        let tail_bytes = bytemuck::cast::<_, [u8; 16]>(_mm512_castsi512_si128(tail_bytes));
        row_out[TAIL..].copy_from_slice(&tail_bytes);
    }
}

fn vector(bytes: &[u8; 64]) -> __m512i {
    bytemuck::cast(*bytes)
}

/// Byte indices (or masks) for a row's first 64 output bytes and for its last 16 (the rest of
/// that vector unused).
struct Halves {
    head: [u8; 64],
    tail: [u8; 64],
}

/// Each output byte's source in the row vector, for: adjacent cells ascending, descending;
/// cells a layer row apart ascending, descending. The five avatar bytes read byte 0, which
/// [`KEEP`] zeroes.
const TABLES: [Halves; 4] = [
    halves(true, true),
    halves(true, false),
    halves(false, true),
    halves(false, false),
];

/// What each output byte keeps of its source: the wall bit of the flags, the whole item.
const KEEP: Halves = Halves {
    head: keep(0),
    tail: keep(TAIL),
};

const fn halves(adjacent: bool, ascending: bool) -> Halves {
    Halves {
        head: sources(adjacent, ascending, 0),
        tail: sources(adjacent, ascending, TAIL),
    }
}

/// The sources of output bytes `from..from + 64` (those past the row read byte 0).
const fn sources(adjacent: bool, ascending: bool, from: usize) -> [u8; 64] {
    let mut out = [0u8; 64];
    let mut k = 0;
    while k < 64 && from + k < ROW_BYTES {
        let (cell, channel) = (
            (from + k) / AVATAR_CELL_BYTES,
            (from + k) % AVATAR_CELL_BYTES,
        );
        let source = if ascending { cell } else { WIDTH - 1 - cell };
        if channel <= ITEM {
            out[k] = if adjacent {
                (source * CELL_CHANNELS + channel) as u8
            } else {
                (source * 2 + channel) as u8
            };
        }
        k += 1;
    }
    out
}

const fn keep(from: usize) -> [u8; 64] {
    let mut out = [0u8; 64];
    let mut k = 0;
    while k < 64 && from + k < ROW_BYTES {
        out[k] = match (from + k) % AVATAR_CELL_BYTES {
            0 => WALL,
            ITEM => 0xff,
            _ => 0,
        };
        k += 1;
    }
    out
}

// 16-byte tail as a 128-bit lane (compile-time check of the cast's size).
const _: () = assert!(size_of::<__m128i>() == 16 && TAIL + 16 == ROW_BYTES);
