//! What the avatar substrates (gift_refinements, chemistry) share: facings, moves relative to
//! the facing blocked by walls and other avatars, and the facing-rotated observation window.
//!
//! Cell layer: a padded grid (padding = the farthest the window or a beam reaches, marked as
//! wall) of 3 bytes per cell: flags ([`WALL`], [`TOKEN_CELL`], [`USED`]), the item (gift: a
//! token 0/1; chemistry: compound index + 1, 0 empty) and the avatar standing there (slot + 1,
//! 0 none).

use rand_core::Rng;

use super::ArenaMut;
use crate::components::{CELL_CHANNELS, GridPos};
use crate::layout::{AVATAR_CELL_BYTES, AvatarLayout, Layout};
use crate::rng::below;
use crate::scenario::GiftParams;

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
/// resolved this step (Melting Pot updates avatars in a random order too).
pub fn priority_order(m: usize, rng: &mut impl Rng) -> [u8; MAX_AVATARS] {
    let mut order = [0u8; MAX_AVATARS];
    for (k, o) in order.iter_mut().enumerate().take(m) {
        *o = k as u8;
    }
    for k in (1..m).rev() {
        let j = below(rng.next_u32(), k as u32 + 1) as usize;
        order.swap(k, j);
    }
    order
}

/// Clears and re-marks every live avatar's cell in the avatar byte.
pub fn mark_avatars(layout: &Layout, a: &mut ArenaMut) {
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

/// Moves and turns. Actions 1-4 step forward, backward, left, right relative to the facing,
/// 5-6 turn left, right. Avatars act in a random priority order; a step succeeds when the
/// target cell is open and holds no avatar at that moment (so two avatars never share a cell and
/// the first in priority wins a contested cell). The move happens before the turn, as in Melting
/// Pot's action order. With `gift`, stepping onto a token picks it up.
pub fn apply_moves(layout: &Layout, a: &mut ArenaMut, gift: Option<&GiftParams>) {
    let order = priority_order(layout.agents, &mut a.rng.rules);
    for &s in &order[..layout.agents] {
        let s = s as usize;
        if !a.alive[s].0 {
            continue;
        }
        let f = a.facing[s].0 as usize;
        let dir = match a.applied[s].0 {
            1 => Some(f),
            2 => Some((f + 2) % 4),
            3 => Some((f + 3) % 4),
            4 => Some((f + 1) % 4),
            _ => None,
        };
        if let Some(d) = dir {
            let (dx, dy) = DIRS[d];
            let from = a.pos[s];
            let to = GridPos {
                x: from.x + dx,
                y: from.y + dy,
            };
            let j = layout.cell_index(to.x, to.y);
            if a.cells[j] & WALL == 0 && a.cells[j + AVATAR] == 0 {
                let i = layout.cell_index(from.x, from.y);
                a.cells[i + AVATAR] = 0;
                a.cells[j + AVATAR] = s as u8 + 1;
                a.pos[s] = to;
                if let Some(g) = gift
                    && a.cells[j] & TOKEN_CELL != 0
                    && a.cells[j + ITEM] != 0
                {
                    a.cells[j + ITEM] = 0;
                    let raw = &mut a.carry[s].0[0];
                    *raw = (*raw + 1).min(g.capacity);
                    a.counters[0] += 1;
                }
            }
        }
        match a.applied[s].0 {
            5 => a.facing[s].0 = ((f + 3) % 4) as u8,
            6 => a.facing[s].0 = ((f + 1) % 4) as u8,
            _ => {}
        }
    }
}

/// The window's cell offsets (in bytes, relative to the agent's cell) for each facing, row-major
/// from the farthest-ahead row, columns from the agent's left.
pub fn window_offsets(layout: &Layout, avatar: &AvatarLayout) -> [Vec<isize>; 4] {
    let w = avatar.window;
    let stride = (layout.padded_width * CELL_CHANNELS) as isize;
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

/// Writes each learner's facing-rotated window: per cell [wall, item, other avatar, its facing
/// relative to the observer one-hot (same, right, opposite, left)], then the extras: gift
/// inventory levels 1-3 and a ready flag; chemistry the vesicle compound and an io-ready flag.
pub fn write_observations(layout: &Layout, avatar: &AvatarLayout, a: &mut ArenaMut) {
    let cells_in_window = avatar.offsets[0].len();
    let window_bytes = cells_in_window * AVATAR_CELL_BYTES;
    let gift = matches!(layout.rules, crate::layout::Rules::Gift(..));
    for s in 0..layout.learners {
        let out = &mut a.obs[s * layout.obs_len..(s + 1) * layout.obs_len];
        if !a.alive[s].0 {
            out.fill(0);
            continue;
        }
        let f = a.facing[s].0 as usize;
        let centre = layout.cell_index(a.pos[s].x, a.pos[s].y) as isize;
        let (window, extras) = out.split_at_mut(window_bytes);
        for (o, &off) in window
            .chunks_exact_mut(AVATAR_CELL_BYTES)
            .zip(&avatar.offsets[f])
        {
            let i = (centre + off) as usize;
            let cell = &a.cells[i..i + CELL_CHANNELS];
            o.fill(0);
            o[0] = cell[0] & WALL;
            o[1] = cell[ITEM];
            let other = cell[AVATAR];
            if other != 0 && other as usize - 1 != s {
                o[2] = 1;
                let rel = (a.facing[other as usize - 1].0 as usize + 4 - f) % 4;
                o[3 + rel] = 1;
            }
        }
        let carry = a.carry[s].0;
        if gift {
            extras[..3].copy_from_slice(&carry);
            extras[3] = u8::from(a.cooldown[s].0 <= 1);
        } else {
            extras[0] = carry[0];
            extras[1] = u8::from(a.cooldown[s].0 == 0);
        }
    }
}
