//! Which cells of runs of adjacent cells draw for regrowth (Commons Harvest's apples), a run of
//! up to 21 cells per AVX-512 load (VBMI byte permutes), or cell by cell.
//!
//! A run's cells are adjacent in one row of the cell layer, 3 bytes each, so its first 64
//! bytes hold every flags and item byte. Two permutes gather the flags bytes and the item
//! bytes into one lane per cell; a third looks up, by the count in the flags' high nibble,
//! whether that count may regrow. Byte tests give the cells that draw as a bit mask, the same
//! as [`scalar`] gives cell by cell.
//!
//! Audit: see [`super`]. The kernel is tested against [`scalar`] on random layers
//! (`the_kernel_lists_what_the_scalar_code_lists` below).

use crate::components::CELL_CHANNELS;

/// The most cells in a [`Run`]: their flags and item bytes fit one 64-byte load.
pub(crate) const RUN_CELLS: usize = 21;

/// `len` adjacent cells (1 to [`RUN_CELLS`]) from byte `start` of a cell layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    /// Byte offset of the run's first cell.
    pub(crate) start: u32,
    /// Cells in the run.
    pub(crate) len: u8,
}

/// Which cells draw: those whose flags have a bit of `all` set and no bit of `none`, whose
/// item byte is 0, and whose count (the flags' high nibble) is a set bit of `counts`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rule {
    pub(crate) all: u8,
    pub(crate) none: u8,
    pub(crate) counts: u16,
}

/// Per run (`out[k]` for `runs[k]`, as many as both hold): bit `x` set when the run's cell `x`
/// draws under `rule`; returns how many bits are set in all. With the AVX-512 kernel where
/// the CPU has it.
///
/// # Panics
/// When a run lies outside `cells`.
pub(crate) fn candidates(cells: &[u8], runs: &[Run], rule: Rule, out: &mut [u64]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if super::available() {
        #[expect(
            unsafe_code,
            reason = "calling the target_feature kernel; see the audit in simd"
        )]
        // SAFETY: the kernel's only requirement beyond Rust's usual ones is that the CPU has
        // the features it is compiled for, which `available` has just confirmed.
        return unsafe { avx512::kernel(cells, runs, rule, out) };
    }
    let mut total = 0;
    for (mask, &run) in out.iter_mut().zip(runs) {
        *mask = scalar(cells, run, rule);
        total += mask.count_ones() as usize;
    }
    total
}

/// [`candidates`] for one run, cell by cell.
pub(crate) fn scalar(cells: &[u8], run: Run, rule: Rule) -> u64 {
    let start = run.start as usize;
    let (run_cells, _) =
        cells[start..start + run.len as usize * CELL_CHANNELS].as_chunks::<CELL_CHANNELS>();
    run_cells
        .iter()
        .enumerate()
        .fold(0, |mask, (x, &[flags, item, _])| {
            let count = (rule.counts >> (flags >> 4)) & 1 != 0;
            let draws = (flags & rule.all != 0) & (flags & rule.none == 0) & (item == 0) & count;
            mask | u64::from(draws) << x
        })
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::{
        __m512i, _mm512_and_si512, _mm512_permutexvar_epi8, _mm512_set1_epi8, _mm512_srli_epi16,
        _mm512_test_epi8_mask, _mm512_testn_epi8_mask,
    };

    use super::{CELL_CHANNELS, RUN_CELLS, Rule, Run, scalar};

    /// Bytes one load brings in.
    const LOAD: usize = 64;

    /// [`super::candidates`]; a run whose load would pass the end of `cells` takes
    /// [`scalar`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,popcnt")]
    pub(super) fn kernel(cells: &[u8], runs: &[Run], rule: Rule, out: &mut [u64]) -> usize {
        let table: [u8; LOAD] =
            std::array::from_fn(|n| u8::from(n < 16 && (rule.counts >> n) & 1 != 0));
        let table: __m512i = bytemuck::cast(table);
        let flags_at: __m512i = bytemuck::cast(SOURCES[0]);
        let item_at: __m512i = bytemuck::cast(SOURCES[1]);
        let low_nibble = _mm512_set1_epi8(0x0f);
        let (all, none) = (
            _mm512_set1_epi8(rule.all as i8),
            _mm512_set1_epi8(rule.none as i8),
        );
        let mut total = 0;
        for (run, mask) in runs.iter().zip(out.iter_mut()) {
            let start = run.start as usize;
            let Some(bytes) = cells.get(start..start + LOAD) else {
                *mask = scalar(cells, *run, rule);
                total += mask.count_ones() as usize;
                continue;
            };
            let bytes: [u8; LOAD] = bytes.try_into().expect("64 bytes");
            let v: __m512i = bytemuck::cast(bytes);
            let flags = _mm512_permutexvar_epi8(flags_at, v);
            let item = _mm512_permutexvar_epi8(item_at, v);
            let count = _mm512_and_si512(_mm512_srli_epi16::<4>(flags), low_nibble);
            let may = _mm512_permutexvar_epi8(count, table);
            let draws = _mm512_test_epi8_mask(flags, all)
                & !_mm512_test_epi8_mask(flags, none)
                & _mm512_testn_epi8_mask(item, item)
                & _mm512_test_epi8_mask(may, may);
            let cells_in_run = (run.len as usize).min(RUN_CELLS);
            *mask = draws & ((1u64 << cells_in_run) - 1);
            total += mask.count_ones() as usize;
        }
        total
    }

    /// Where lane `x` of the flags (`[0]`) and item (`[1]`) vectors comes from in the load:
    /// cell `x`'s byte 0 or 1. Lanes past the run's cells read byte 0 and are masked off.
    const SOURCES: [[u8; LOAD]; 2] = [sources(0), sources(1)];

    const fn sources(channel: usize) -> [u8; LOAD] {
        let mut out = [0u8; LOAD];
        let mut x = 0;
        while x < RUN_CELLS {
            out[x] = (x * CELL_CHANNELS + channel) as u8;
            x += 1;
        }
        out
    }

    // A run's cells fit one load.
    const _: () = assert!(RUN_CELLS * CELL_CHANNELS <= LOAD && RUN_CELLS < 64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// On random cell layers (every flag, count and item byte value) and rules, every
        /// run's mask from [`candidates`] (the kernel where this CPU has it) is the scalar
        /// one, including runs whose load passes the layer's end.
        #[test]
        fn the_kernel_lists_what_the_scalar_code_lists(
            cells in proptest::collection::vec(any::<u8>(), 1..400),
            runs in proptest::collection::vec((0usize..400, 1u8..=RUN_CELLS as u8), 1..40),
            (all, none, counts) in (any::<u8>(), any::<u8>(), any::<u16>()),
        ) {
            let rule = Rule { all, none, counts };
            let runs: Vec<Run> = runs
                .into_iter()
                .map(|(start, len)| Run { start: start as u32, len })
                .filter(|r| r.start as usize + r.len as usize * CELL_CHANNELS <= cells.len())
                .collect();
            let mut out = vec![u64::MAX; runs.len()];
            let total = candidates(&cells, &runs, rule, &mut out);
            for (run, &mask) in runs.iter().zip(&out) {
                prop_assert_eq!(mask, scalar(&cells, *run, rule), "{:?}", run);
            }
            prop_assert_eq!(total, out.iter().map(|m| m.count_ones() as usize).sum::<usize>());
        }
    }
}
