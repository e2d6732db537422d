//! lbforaging's vector observation of each learner ([`write_observations`]): the general
//! windowed path, a path for views that cover the whole field, and for the shipped numbers of
//! foods and agents one of each where every length is a constant (whole-field rows built on
//! the stack, windowed sections packed in a register), each stored whole.

use std::ops::{BitOr, Shl};

use super::Lbf;
use super::rules::{CellLayout, MAX_AGENTS};
use crate::layout::core::LayoutCore;
use crate::substrate::ArenaMut;

/// lbforaging's vector observation, from each learner's point of view: per food slot (row + 1,
/// column + 1, level) of the visible foods in (row, column) order, then per agent slot the same
/// for the visible agents, itself first; zeros after the last visible one. Coordinates are
/// relative to the top-left of the learner's view clipped to the field (absolute with full
/// sight). A food is visible inside the clipped view; an agent when both its relative
/// coordinates lie in `0..=2 sight` (lbforaging's test, which reaches past the clipped view
/// near the top and left edges).
pub fn write_observations(lbf: &Lbf, layout: &LayoutCore, a: &mut ArenaMut) {
    let (h, w) = (layout.height as i16, layout.width as i16);
    if lbf.sight as i16 >= h.max(w) - 1 {
        write_full_views(lbf, layout, a);
        return;
    }
    // Sized paths for lbforaging's registered `-2s` sizes (one byte holds every row + 1).
    match (lbf.cells.foods, layout.agents) {
        (2, 2) if h < 256 && w < 256 => sized_windowed_views::<2, 2, u64, u64>(lbf, layout, a),
        (3, 3) if h < 256 && w < 256 => sized_windowed_views::<3, 3, u128, u128>(lbf, layout, a),
        _ => write_windowed_views(lbf, layout, a),
    }
}

/// A register that holds one section of a sized view, 3-byte entries packed from its low end.
trait Lane: Copy + Default + From<u32> + BitOr<Output = Self> + Shl<u32, Output = Self> {
    /// Bytes it holds.
    const BYTES: usize;
    /// Stores its low `out.len()` bytes.
    fn store(self, out: &mut [u8]);
}

/// [`Lane`] for an unsigned integer type.
macro_rules! lane {
    ($t:ty) => {
        impl Lane for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn store(self, out: &mut [u8]) {
                let n = out.len();
                out.copy_from_slice(&self.to_le_bytes()[..n]);
            }
        }
    };
}
lane!(u64);
lane!(u128);

/// Appends `entry` to `section` at bit `shift` when `seen`, and moves `shift` past it; adds
/// nothing and keeps `shift` otherwise (no branch).
#[inline(always)]
fn append<L: Lane>(section: &mut L, shift: &mut u32, entry: u32, seen: bool) {
    *section = *section | L::from(std::hint::select_unpredictable(seen, entry, 0)) << *shift;
    *shift += 24 * u32::from(seen);
}

/// [`write_windowed_views`] for exactly `F` food slots and `M` agents on a field below 256
/// cells a side, with every section packed in a register (`FL` for the foods, `AL` for the
/// agents): each entry is (row + 1, column + 1, level) in the field's frame less the view's
/// top-left corner, one subtraction, appended at the next free slot when visible, so the zeros
/// after the last visible entry come for free; each section is then stored whole.
#[inline(always)]
fn sized_windowed_views<const F: usize, const M: usize, FL: Lane, AL: Lane>(
    lbf: &Lbf,
    layout: &LayoutCore,
    a: &mut ArenaMut,
) {
    const { assert!(3 * F <= FL::BYTES && 3 * M <= AL::BYTES && M >= 1) };
    let (h, w) = (layout.height as i16, layout.width as i16);
    let o = 3 * F + 3 * M;
    debug_assert_eq!(layout.obs_len, o);
    let sight = lbf.sight as i16;
    let cl = lbf.cells;
    let packed = |row: u8, col: u8, level: u8| {
        u32::from(row + 1) | u32::from(col + 1) << 8 | u32::from(level) << 16
    };
    // Per food slot: its entry in the field's frame, and (row | column << 16), an absent
    // food's row read as 0xFFFF, inside no view.
    let mut foods = [(0u32, 0u32); F];
    for (f, src) in foods
        .iter_mut()
        .zip(a.cells[cl.food(0)..cl.food(0) + 4 * F].chunks_exact(4))
    {
        let row = if src[3] != 0 {
            u32::from(src[0])
        } else {
            0xFFFF
        };
        *f = (
            packed(src[0], src[1], src[2]),
            row | u32::from(src[1]) << 16,
        );
    }
    // Per agent: the same, rows and columns on the field.
    let mut agents = [(0u32, 0u32); M];
    let levels = &a.cells[CellLayout::LEVELS..CellLayout::LEVELS + M];
    for ((e, p), &level) in agents.iter_mut().zip(&a.pos[..M]).zip(levels) {
        *e = (
            packed(p.y as u8, p.x as u8, level),
            p.y as u16 as u32 | (p.x as u16 as u32) << 16,
        );
    }
    let span = 2 * sight as u16;
    for (s, out) in a.obs.chunks_exact_mut(o).take(layout.learners).enumerate() {
        let (own, at) = agents[s];
        let (y, x) = (at as i16, (at >> 16) as i16);
        let (top, left) = ((y - sight).max(0) as u16, (x - sight).max(0) as u16);
        let (rows, cols) = (
            (y + sight).min(h - 1) as u16 - top,
            (x + sight).min(w - 1) as u16 - left,
        );
        let corner = u32::from(top) | u32::from(left) << 8;
        let (mut section, mut shift) = (FL::default(), 0);
        for &(entry, rc) in &foods {
            let (r, c) = (rc as u16, (rc >> 16) as u16);
            let seen = (r.wrapping_sub(top) <= rows) & (c.wrapping_sub(left) <= cols);
            append(&mut section, &mut shift, entry.wrapping_sub(corner), seen);
        }
        section.store(&mut out[..3 * F]);
        // Itself first (always seen), then the others in slot order: the j-th other is slot j
        // before s, j + 1 after.
        let (mut section, mut shift) = (AL::from(own - corner), 24);
        for j in 0..M - 1 {
            let (entry, rc) = agents[j + usize::from(j >= s)];
            let (r, c) = (rc as u16, (rc >> 16) as u16);
            let seen = (r.wrapping_sub(top) <= span) & (c.wrapping_sub(left) <= span);
            append(&mut section, &mut shift, entry.wrapping_sub(corner), seen);
        }
        section.store(&mut out[3 * F..o]);
    }
}

/// [`write_observations`] for any sight, each learner's view clipped to the field: what the
/// whole-field paths must agree with when the sight covers the field.
pub fn write_windowed_views(lbf: &Lbf, layout: &LayoutCore, a: &mut ArenaMut) {
    let (h, w) = (layout.height as i16, layout.width as i16);
    let cl = lbf.cells;
    let sight = lbf.sight as i16;
    let levels = &a.cells[CellLayout::LEVELS..CellLayout::LEVELS + layout.agents];
    let foods = &a.cells[cl.food(0)..cl.food(cl.foods)];
    // Every entry is written at the next free slot and kept by advancing past it only when
    // visible (no branch on visibility); the slot after the last kept one is then cleared. The
    // k-th candidate is written at a slot at most k, so every write stays inside its section.
    for s in 0..layout.learners {
        let out = &mut a.obs[s * layout.obs_len..(s + 1) * layout.obs_len];
        let (food_out, agent_out) = out.split_at_mut(3 * cl.foods);
        let me = a.pos[s];
        let (top, left) = ((me.y - sight).max(0), (me.x - sight).max(0));
        let (bottom, right) = ((me.y + sight).min(h - 1), (me.x + sight).min(w - 1));
        let mut n = 0;
        for f in foods.chunks_exact(4) {
            let (r, c) = (f[0] as i16, f[1] as i16);
            let seen = (f[3] != 0) & (r >= top) & (r <= bottom) & (c >= left) & (c <= right);
            food_out[3 * n..3 * n + 3].copy_from_slice(&[
                (r - top + 1) as u8,
                (c - left + 1) as u8,
                f[2],
            ]);
            n += usize::from(seen);
        }
        food_out[3 * n..].fill(0);
        let mut n = 0;
        // Itself first, then the others in slot order.
        let mut see = |o: usize| {
            let (r, c) = (a.pos[o].y - top, a.pos[o].x - left);
            let seen = (0..=2 * sight).contains(&r) & (0..=2 * sight).contains(&c);
            agent_out[3 * n..3 * n + 3].copy_from_slice(&[(r + 1) as u8, (c + 1) as u8, levels[o]]);
            n += usize::from(seen);
        };
        see(s);
        (0..layout.agents).filter(|&o| o != s).for_each(see);
        agent_out[3 * n..].fill(0);
    }
}

/// [`write_observations`] when the sight covers the whole field (lbforaging's registered
/// environments without `-2s`): every view's top-left is the field's, every present food and
/// every agent is visible. The foods' part is the same for every learner and is written once;
/// the agents' part is each learner's own entry, then the others' in slot order.
fn write_full_views(lbf: &Lbf, layout: &LayoutCore, a: &mut ArenaMut) {
    if layout.learners == 0 {
        return;
    }
    match (lbf.cells.foods, layout.agents) {
        (2, 2) => sized_full_views::<2, 2>(lbf, layout, a),
        (3, 3) => sized_full_views::<3, 3>(lbf, layout, a),
        (3, 4) => sized_full_views::<3, 4>(lbf, layout, a),
        (_, m) if m <= 8 => full_views::<8>(lbf, layout, a),
        _ => full_views::<MAX_AGENTS>(lbf, layout, a),
    }
}

/// The longest row [`sized_full_views`] builds: 8 foods and 8 agents.
const SIZED_ROW: usize = 3 * 8 + 3 * 8;

/// [`write_full_views`] for exactly `F` food slots and `M` agents (lbforaging's registered
/// sizes): every length below is a constant, so the loops unroll and each learner's row is
/// built on the stack and stored whole, with no call to copy or clear a few bytes.
#[inline(always)]
fn sized_full_views<const F: usize, const M: usize>(
    lbf: &Lbf,
    layout: &LayoutCore,
    a: &mut ArenaMut,
) {
    const { assert!(3 * F + 3 * M <= SIZED_ROW) };
    let o = 3 * F + 3 * M;
    debug_assert_eq!(layout.obs_len, o);
    let cl = lbf.cells;
    let mut row = [0u8; SIZED_ROW];
    // The present foods in slot order, each written at the next free slot and kept by advancing
    // past it; the slots after the last kept one are then cleared.
    let foods = &a.cells[cl.food(0)..cl.food(0) + 4 * F];
    let mut n = 0;
    for k in 0..F {
        let f = &foods[4 * k..4 * k + 4];
        row[3 * n..3 * n + 3].copy_from_slice(&[f[0] + 1, f[1] + 1, f[2]]);
        n += usize::from(f[3] != 0);
    }
    clear_from::<F>(&mut row[..3 * F], n);
    let levels = &a.cells[CellLayout::LEVELS..CellLayout::LEVELS + M];
    let mut entries = [[0u8; 3]; M];
    for (e, (p, &level)) in entries.iter_mut().zip(a.pos[..M].iter().zip(levels)) {
        *e = [(p.y + 1) as u8, (p.x + 1) as u8, level];
    }
    for (s, out) in a.obs.chunks_exact_mut(o).take(layout.learners).enumerate() {
        // Itself, then the others in slot order: the j-th other is slot j before s, j + 1 after.
        row[3 * F..3 * F + 3].copy_from_slice(&entries[s]);
        for j in 0..M - 1 {
            let other = j + usize::from(j >= s);
            row[3 * F + 3 + 3 * j..3 * F + 6 + 3 * j].copy_from_slice(&entries[other]);
        }
        out.copy_from_slice(&row[..o]);
    }
}

/// Zeroes the 3-byte entries `n..K` of `entries` (`K` entries) without a branch or a call.
#[inline(always)]
fn clear_from<const K: usize>(entries: &mut [u8], n: usize) {
    for k in 0..K {
        let keep = 0u8.wrapping_sub(u8::from(k < n));
        for b in &mut entries[3 * k..3 * k + 3] {
            *b &= keep;
        }
    }
}

/// [`write_full_views`] for at most `CAP` agents.
#[inline(always)]
fn full_views<const CAP: usize>(lbf: &Lbf, layout: &LayoutCore, a: &mut ArenaMut) {
    let cl = lbf.cells;
    let o = layout.obs_len;
    let m = layout.agents.min(CAP);
    let mut entries = [[0u8; 3]; CAP];
    for (e, (p, &level)) in entries
        .iter_mut()
        .zip(a.pos.iter().zip(&a.cells[CellLayout::LEVELS..]))
        .take(m)
    {
        *e = [(p.y + 1) as u8, (p.x + 1) as u8, level];
    }
    let entries = &entries[..m];
    let (first, rest) = a.obs.split_at_mut(o);
    let (food_out, _) = first.split_at_mut(3 * cl.foods);
    let mut n = 0;
    for f in a.cells[cl.food(0)..cl.food(cl.foods)].chunks_exact(4) {
        food_out[3 * n..3 * n + 3].copy_from_slice(&[f[0] + 1, f[1] + 1, f[2]]);
        n += usize::from(f[3] != 0);
    }
    food_out[3 * n..].fill(0);
    for out in rest
        .chunks_exact_mut(o)
        .take(layout.learners.saturating_sub(1))
    {
        out[..3 * cl.foods].copy_from_slice(&first[..3 * cl.foods]);
    }
    for (s, out) in a.obs.chunks_exact_mut(o).take(layout.learners).enumerate() {
        let agent_out = &mut out[3 * cl.foods..];
        agent_out[..3].copy_from_slice(&entries[s]);
        let others = entries[..s].iter().chain(&entries[s + 1..]);
        for (slot, e) in agent_out[3..].chunks_exact_mut(3).zip(others) {
            slot.copy_from_slice(e);
        }
    }
}
