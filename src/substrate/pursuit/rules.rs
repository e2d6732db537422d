//! Pursuit rules (PettingZoo SISL Pursuit v5, simultaneous moves), written once over one arena's
//! state. The ECS systems call these for every arena in parallel; exact analysis calls them on a
//! single decoded state. Given (state, applied actions) everything here is deterministic: all
//! randomness was drawn before, by `chance`.
//!
//! Two move orders (`MoveOrder`). `simultaneous`: every agent (pursuers and evaders) moves at
//! once, then tag rewards, catches and removal are evaluated on the post-move state
//! ([`apply_moves`], [`resolve_interactions`]). `pettingzoo`: PettingZoo's sequential agent
//! cycle ([`cycle_pursuers`], [`catch_then_move_evaders`]): pursuers move one at a time with
//! tag rewards after each move, divided by the number of pursuers; catches are checked after
//! the last pursuer moved; then the evaders move.

use super::{Pursuit, PursuitParams};
use crate::components::{
    Alive, AppliedAction, CELL_EVADERS, CELL_OBSTACLE, CELL_PURSUERS, GridPos, StepReward,
};
use crate::layout::core::LayoutCore;
use crate::scenario::role::{Control, RoleKind};

/// Move deltas per action: left, right, up (row - 1), down, stay.
pub const MOVES: [(i16, i16); 5] = [(-1, 0), (1, 0), (0, -1), (0, 1), (0, 0)];

/// The four orthogonal neighbours.
const NEIGHBOURS: [(i16, i16); 4] = [(-1, 0), (1, 0), (0, -1), (0, 1)];

/// Moves every live agent by its applied action; a move into an obstacle or off the map leaves
/// the agent in place. Any number of agents may share a cell. `moves_open` is
/// [`Pursuit::moves_open`]: one look-up per agent and no branch on the move, which random
/// actions would make unpredictable.
pub fn apply_moves(
    layout: &LayoutCore,
    moves_open: &[u8],
    pos: &mut [GridPos],
    alive: &[Alive],
    act: &[AppliedAction],
) {
    for ((p, a), act) in pos.iter_mut().zip(alive).zip(act) {
        if !a.0 {
            continue;
        }
        let k = act.0 as usize % MOVES.len();
        let cell = (p.y as usize)
            .wrapping_mul(layout.width)
            .wrapping_add(p.x as usize);
        // A live agent stands on the map; anything else stays put.
        let ok = (moves_open.get(cell).copied().unwrap_or(0) >> k) as i16 & 1;
        let (dx, dy) = MOVES[k];
        p.x += dx * ok;
        p.y += dy * ok;
    }
}

/// For each map cell (row-major), bit `k` set when move `MOVES[k]` from it ends on an open
/// cell, read from the padded cell layer's obstacle flags (the padding counts as obstacle).
pub(crate) fn moves_open(width: usize, height: usize, pad: usize, template: &[u8]) -> Vec<u8> {
    let channels = crate::components::CELL_CHANNELS;
    let padded_width = width + 2 * pad;
    let mut out = vec![0u8; width * height];
    for y in 0..height {
        for x in 0..width {
            let mut mask = 0u8;
            for (k, &(dx, dy)) in MOVES.iter().enumerate() {
                // Padded coordinates: a move off the map lands in the padding (pad >= 1).
                let nx = (x + pad).wrapping_add_signed(dx as isize);
                let ny = (y + pad).wrapping_add_signed(dy as isize);
                let i = (ny * padded_width + nx) * channels + CELL_OBSTACLE;
                mask |= u8::from(template[i] == 0) << k;
            }
            out[y * width + x] = mask;
        }
    }
    out
}

/// Moves one agent; a move into an obstacle or off the map leaves it in place.
fn move_one(layout: &LayoutCore, p: &mut GridPos, act: AppliedAction) {
    let (dx, dy) = MOVES[act.0 as usize % MOVES.len()];
    let (nx, ny) = (p.x + dx, p.y + dy);
    if layout.is_open(nx as i32, ny as i32) {
        *p = GridPos { x: nx, y: ny };
    }
}

/// The cell-layer channel that counts agents of `kind`.
#[inline(always)]
fn cell_channel(kind: RoleKind) -> usize {
    match kind {
        RoleKind::Pursuer => CELL_PURSUERS,
        RoleKind::Evader | RoleKind::Player => CELL_EVADERS,
    }
}

/// PettingZoo order, first phase: the live pursuers move one at a time in slot order. After
/// each single move every pursuer earns `tag_reward` per evader on its four neighbouring
/// cells divided by the number of pursuers, so one step pays each pursuer the sum over the N
/// intermediate states. A neighbour off the map is clamped back onto it, as PettingZoo's
/// `np.clip` does: a pursuer on the border counts the evaders on its own cell once per missing
/// neighbour. Evaders have not moved yet; the cell layer is rebuilt for [`catch_then_move_evaders`].
/// Sets every agent's reward (0 for evaders).
pub fn cycle_pursuers(
    layout: &LayoutCore,
    params: &PursuitParams,
    pos: &mut [GridPos],
    alive: &[Alive],
    act: &[AppliedAction],
    cells: &mut [u8],
    reward: &mut [StepReward],
) {
    reward.fill(StepReward(0.0));
    let n = layout.pursuer_slots.len() as f32;
    let (max_x, max_y) = (layout.width as i16 - 1, layout.height as i16 - 1);
    for &mover in &layout.pursuer_slots {
        let mover = mover as usize;
        if alive[mover].0 {
            move_one(layout, &mut pos[mover], act[mover]);
        }
        for &p in &layout.pursuer_slots {
            let p = p as usize;
            if !alive[p].0 {
                continue;
            }
            let evaders: u32 = NEIGHBOURS
                .iter()
                .map(|&(dx, dy)| {
                    let (x, y) = (
                        (pos[p].x + dx).clamp(0, max_x),
                        (pos[p].y + dy).clamp(0, max_y),
                    );
                    cells[layout.cell_index(x, y) + CELL_EVADERS] as u32
                })
                .sum();
            reward[p].0 += params.tag_reward * evaders as f32 / n;
        }
    }
    tally_cells(layout, pos, alive, cells);
}

/// PettingZoo order, second phase: catches judged on the moved pursuers and the unmoved
/// evaders (the same catching rule as [`resolve_interactions`]); each pursuer on a catching
/// cell of at least one caught evader earns `catch_reward` once (PettingZoo credits a boolean
/// per pursuer), a caught learning evader `-catch_reward`. Caught evaders leave, then the
/// remaining evaders move and the cell layer is rebuilt. Returns the number caught.
pub fn catch_then_move_evaders(
    layout: &LayoutCore,
    params: &PursuitParams,
    pos: &mut [GridPos],
    alive: &mut [Alive],
    act: &[AppliedAction],
    cells: &mut [u8],
    reward: &mut [StepReward],
) -> u16 {
    // Credit first, while the caught evaders are still alive: a judgement reads only
    // obstacles and pursuer counts, which removal does not change.
    let caught_at =
        |alive: &[Alive], e: usize| alive[e].0 && is_caught(params, cells, pos[e], layout);
    for &p in &layout.pursuer_slots {
        let p = p as usize;
        let catches_any = layout.evader_slots.iter().any(|&e| {
            on_catching_cell(params, pos[p], pos[e as usize]) && caught_at(alive, e as usize)
        });
        if catches_any {
            reward[p].0 += params.catch_reward;
        }
    }
    let mut caught = 0u16;
    for &e in &layout.evader_slots {
        let e = e as usize;
        if !caught_at(alive, e) {
            continue;
        }
        if layout.slot_control[e] == Control::Learner {
            reward[e].0 -= params.catch_reward;
        }
        alive[e] = Alive(false);
        caught += 1;
    }
    for &e in &layout.evader_slots {
        let e = e as usize;
        if alive[e].0 {
            move_one(layout, &mut pos[e], act[e]);
        }
    }
    tally_cells(layout, pos, alive, cells);
    caught
}

/// Whether the evader at `at` is caught: with `surround`, every open orthogonal neighbour
/// holds a pursuer; otherwise its own cell holds at least `n_catch` pursuers.
#[inline]
fn is_caught(params: &PursuitParams, cells: &[u8], at: GridPos, layout: &LayoutCore) -> bool {
    caught_at_cell(
        params,
        cells,
        layout.cell_index(at.x, at.y),
        &neighbour_offsets(layout),
    )
}

/// [`is_caught`] for the evader on the cell at index `i`, with the neighbours' offsets from
/// [`neighbour_offsets`].
#[inline(always)]
fn caught_at_cell(params: &PursuitParams, cells: &[u8], i: usize, offsets: &[isize; 4]) -> bool {
    if params.surround {
        // Every neighbour is judged (`&`, no early exit): a branch per neighbour would be
        // mispredicted about as often as taken.
        let blocked = |d: isize| {
            let n = i.wrapping_add_signed(d);
            (cells[n + CELL_OBSTACLE] | cells[n + CELL_PURSUERS]) != 0
        };
        blocked(offsets[0]) & blocked(offsets[1]) & blocked(offsets[2]) & blocked(offsets[3])
    } else {
        cells[i + CELL_PURSUERS] as u16 >= params.n_catch
    }
}

/// The cell-layer offsets of the four orthogonal neighbours ([`NEIGHBOURS`] order) of any cell;
/// the padding keeps every neighbour of a map cell in bounds.
#[inline(always)]
fn neighbour_offsets(layout: &LayoutCore) -> [isize; 4] {
    let channels = crate::components::CELL_CHANNELS as isize;
    let stride = layout.padded_width as isize * channels;
    NEIGHBOURS.map(|(dx, dy)| dy as isize * stride + dx as isize * channels)
}

/// Whether a pursuer at `p` stands on a catching cell of an evader at `e`.
fn on_catching_cell(params: &PursuitParams, p: GridPos, e: GridPos) -> bool {
    let (dx, dy) = (p.x - e.x, p.y - e.y);
    if params.surround {
        dx.abs() + dy.abs() == 1
    } else {
        dx == 0 && dy == 0
    }
}

/// Rebuilds the cell layer from the live agents' positions.
pub fn tally_cells(layout: &LayoutCore, pos: &[GridPos], alive: &[Alive], cells: &mut [u8]) {
    cells.copy_from_slice(&layout.cells_template);
    for (slot, (p, a)) in pos.iter().zip(alive).enumerate() {
        if a.0 {
            let c = &mut cells[layout.cell_index(p.x, p.y) + cell_channel(layout.slot_kind[slot])];
            *c = c.saturating_add(1);
        }
    }
}

/// What [`resolve_interactions`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interactions {
    /// Evaders caught this step.
    pub caught: u16,
    /// Live evaders after the catches (0 ends the episode).
    pub evaders_left: u16,
}

/// Tags, catches and removal. Sets every agent's reward to its tag reward (pursuers: `tag_reward`
/// per evader on their four neighbouring cells, counted before removal), then for each caught
/// evader adds `catch_reward` to every pursuer on a catching cell and `-catch_reward` to the
/// evader. Caught evaders leave the arena and the cell layer.
///
/// Catching cells: with `surround`, the evader's open orthogonal neighbours (all of which hold a
/// pursuer); otherwise the evader's own cell (holding at least `n_catch` pursuers).
pub fn resolve_interactions(
    layout: &LayoutCore,
    params: &PursuitParams,
    pos: &[GridPos],
    alive: &mut [Alive],
    cells: &mut [u8],
    reward: &mut [StepReward],
) -> Interactions {
    let offsets = neighbour_offsets(layout);

    // Tag rewards from the post-move, pre-removal cell layer.
    reward.fill(StepReward(0.0));
    for &p in &layout.pursuer_slots {
        let slot = p as usize;
        if alive[slot].0 {
            let i = layout.cell_index(pos[slot].x, pos[slot].y) + CELL_EVADERS;
            let evaders: u32 = offsets
                .iter()
                .map(|&d| cells[i.wrapping_add_signed(d)] as u32)
                .sum();
            reward[slot] = StepReward(params.tag_reward * evaders as f32);
        }
    }

    // Catches. A judgement reads only obstacles and pursuer counts, which removing an evader
    // does not change, so evaders can leave as soon as they are judged.
    let mut found = Interactions {
        caught: 0,
        evaders_left: 0,
    };
    for &e in &layout.evader_slots {
        let slot = e as usize;
        if !alive[slot].0 {
            continue;
        }
        let i = layout.cell_index(pos[slot].x, pos[slot].y);
        if !caught_at_cell(params, cells, i, &offsets) {
            found.evaders_left += 1;
            continue;
        }
        // Credit the pursuers on the catching cells.
        for &p in &layout.pursuer_slots {
            let p = p as usize;
            if on_catching_cell(params, pos[p], pos[slot]) {
                reward[p].0 += params.catch_reward;
            }
        }
        if layout.slot_control[slot] == Control::Learner {
            reward[slot].0 -= params.catch_reward;
        }
        alive[slot] = Alive(false);
        cells[i + CELL_EVADERS] = cells[i + CELL_EVADERS].saturating_sub(1);
        found.caught += 1;
    }
    found
}

/// Adds the per-step terms (`urgency_reward` to every pursuer, `escape_reward` to every live
/// learning evader) and, with `shared_reward`, replaces each pursuer's reward by the pursuers'
/// mean.
pub fn assign_rewards(
    layout: &LayoutCore,
    params: &PursuitParams,
    alive: &[Alive],
    reward: &mut [StepReward],
) {
    let mut sum = 0.0f32;
    for &p in &layout.pursuer_slots {
        let r = &mut reward[p as usize].0;
        *r += params.urgency_reward;
        sum += *r;
    }
    for &e in &layout.evader_slots {
        let e = e as usize;
        if alive[e].0 && layout.slot_control[e] == Control::Learner {
            reward[e].0 += params.escape_reward;
        }
    }
    if params.shared_reward && !layout.pursuer_slots.is_empty() {
        let mean = sum / layout.pursuer_slots.len() as f32;
        for &p in &layout.pursuer_slots {
            reward[p as usize].0 = mean;
        }
    }
}

/// Whether the episode ended by the rules: no evader left.
pub fn terminated(layout: &LayoutCore, alive: &[Alive]) -> bool {
    !layout.evader_slots.iter().any(|&e| alive[e as usize].0)
}

/// Writes the learners' egocentric windows `[side, side, channels]` from the cell layer; a
/// removed learner sees zeros.
pub fn write_observations(
    layout: &LayoutCore,
    p: &Pursuit,
    pos: &[GridPos],
    alive: &[Alive],
    cells: &[u8],
    obs: &mut [u8],
) {
    let side = p.side;
    let row_bytes = side * crate::components::CELL_CHANNELS;
    let stride = layout.padded_width * crate::components::CELL_CHANNELS;
    for (slot, out) in obs.chunks_exact_mut(layout.obs_len).enumerate() {
        if !alive[slot].0 {
            out.fill(0);
            continue;
        }
        // The window's top-left in padded coordinates: the agent's map position shifted by
        // the padding beyond the window's radius.
        let shift = layout.pad - side / 2;
        let top_left =
            ((pos[slot].y as usize + shift) * layout.padded_width + pos[slot].x as usize + shift)
                * crate::components::CELL_CHANNELS;
        if p.obs_is_cell_layout {
            // The usual windows (radius 1 to 5) copy rows of a length known when compiling:
            // a few vector moves each instead of a call to memcpy per row.
            match row_bytes {
                9 => copy_window::<9>(out, cells, top_left, stride),
                15 => copy_window::<15>(out, cells, top_left, stride),
                21 => copy_window::<21>(out, cells, top_left, stride),
                27 => copy_window::<27>(out, cells, top_left, stride),
                33 => copy_window::<33>(out, cells, top_left, stride),
                _ => {
                    for (r, row) in out.chunks_exact_mut(row_bytes).enumerate() {
                        let start = top_left + r * stride;
                        row.copy_from_slice(&cells[start..start + row_bytes]);
                    }
                }
            }
        } else {
            let channels = p.channel_offsets.len();
            for r in 0..side {
                for c in 0..side {
                    let cell = top_left + r * stride + c * crate::components::CELL_CHANNELS;
                    let o = (r * side + c) * channels;
                    for (k, off) in p.channel_offsets.iter().enumerate() {
                        out[o + k] = cells[cell + off];
                    }
                }
            }
        }
    }
}

/// Copies a window of rows of `R` bytes, `stride` bytes apart in `cells` from `top_left`, into
/// `out` (whole rows).
#[inline(always)]
fn copy_window<const R: usize>(out: &mut [u8], cells: &[u8], top_left: usize, stride: usize) {
    let (rows, _) = out.as_chunks_mut::<R>();
    for (r, row) in rows.iter_mut().enumerate() {
        let start = top_left + r * stride;
        row.copy_from_slice(&cells[start..start + R]);
    }
}
