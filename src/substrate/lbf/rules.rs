//! Level-Based Foraging rules (lbforaging 2.0.0's `ForagingEnv`), written once over one arena's
//! state. Coordinates are lbforaging's (row, column): `GridPos::y` is the row, `GridPos::x` the
//! column, NORTH is row - 1.
//!
//! A step: an action lbforaging would not offer (see [`valid`]) becomes NONE; every agent names
//! a target cell (its own for NONE and LOAD) and moves there when no other agent names the same
//! cell (so two agents may swap, and an agent may enter the cell of one whose move failed, as in
//! lbforaging); then the loads: the LOADing agents next to a food load it together when their
//! levels sum to at least its level, each earning `level * food / (sum * food_spawned)` (or
//! losing `penalty` when the sum falls short). The episode ends when no food is left.
//!
//! Cell layer ([`CellLayout`]): `[food_spawned u16 LE][agent levels, M][foods, F x (row,
//! column, level, present)]`, the foods sorted by (row, column) at reset. Nothing in it is
//! derived from the agents, so a hand-set state needs no rebuild.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use super::Lbf;
use crate::components::{AppliedAction, GridPos, StepReward};
use crate::layout::core::LayoutCore;
use crate::rng::below;
use crate::substrate::ArenaMut;

/// Action indices, lbforaging's `Action` enum.
pub const NONE: u8 = 0;
/// Row - 1.
pub const NORTH: u8 = 1;
/// Row + 1.
pub const SOUTH: u8 = 2;
/// Column - 1.
pub const WEST: u8 = 3;
/// Column + 1.
pub const EAST: u8 = 4;
/// Load an adjacent food.
pub const LOAD: u8 = 5;
/// Number of actions.
pub const ACTIONS: usize = 6;
/// Action names in index order.
pub const ACTION_NAMES: [&str; ACTIONS] = ["none", "north", "south", "west", "east", "load"];

/// (d column, d row) per action; NONE and LOAD stay.
const DELTAS: [(i16, i16); ACTIONS] = [(0, 0), (0, -1), (0, 1), (-1, 0), (1, 0), (0, 0)];

/// Most agents an arena may hold (the rules keep per-agent flags in a `u64`).
pub const MAX_AGENTS: usize = 64;
/// Reset attempts at placing food, as lbforaging.
const FOOD_ATTEMPTS: u32 = 1000;

/// Where things sit in an arena's cell layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellLayout {
    /// Agents per arena (M).
    pub agents: usize,
    /// Food slots (F = `max_num_food`).
    pub foods: usize,
}

impl CellLayout {
    /// Offset of the agent levels.
    pub const LEVELS: usize = 2;
    /// Bytes of the cell layer.
    pub fn len(&self) -> usize {
        Self::LEVELS + self.agents + 4 * self.foods
    }
    /// Always false: the layer holds at least `food_spawned`.
    pub fn is_empty(&self) -> bool {
        false
    }
    /// Offset of food `k`'s `[row, column, level, present]`.
    pub fn food(&self, k: usize) -> usize {
        Self::LEVELS + self.agents + 4 * k
    }
    /// The sum of the food levels placed at reset (lbforaging's `_food_spawned`).
    pub fn food_spawned(cells: &[u8]) -> u16 {
        u16::from_le_bytes([cells[0], cells[1]])
    }
    /// Sets `food_spawned`.
    pub fn set_food_spawned(cells: &mut [u8], v: u16) {
        cells[..2].copy_from_slice(&v.to_le_bytes());
    }
    /// Agent `slot`'s level.
    pub fn level(&self, cells: &[u8], slot: usize) -> u8 {
        cells[Self::LEVELS + slot]
    }
    /// Food `k` as `(row, column, level)` when present.
    #[inline]
    pub fn food_at(&self, cells: &[u8], k: usize) -> Option<(i16, i16, u8)> {
        let f = &cells[self.food(k)..self.food(k) + 4];
        (f[3] != 0).then_some((f[0] as i16, f[1] as i16, f[2]))
    }
    /// The present food on (row, column), if any.
    #[inline]
    pub fn food_on(&self, cells: &[u8], row: i16, col: i16) -> Option<usize> {
        (0..self.foods).find(|&k| {
            self.food_at(cells, k)
                .is_some_and(|(r, c, _)| r == row && c == col)
        })
    }
    /// Whether any food is left.
    pub fn any_food(&self, cells: &[u8]) -> bool {
        cells[self.food(0)..self.food(self.foods)]
            .chunks_exact(4)
            .any(|f| f[3] != 0)
    }
}

/// Whether lbforaging offers `action` to an agent at `p` (`_is_valid_action`): NONE always; a
/// move when the cell it leads to is on the field and holds no food (agents do not count);
/// LOAD when one of the four neighbouring cells holds food.
#[inline]
pub fn valid(layout: &LayoutCore, cl: CellLayout, cells: &[u8], p: GridPos, action: u8) -> bool {
    match action {
        NONE => true,
        NORTH | SOUTH | WEST | EAST => {
            let (dx, dy) = DELTAS[action as usize];
            let (x, y) = (p.x + dx, p.y + dy);
            x >= 0
                && y >= 0
                && (x as usize) < layout.width
                && (y as usize) < layout.height
                && cl.food_on(cells, y, x).is_none()
        }
        LOAD => adjacent_food(cl, cells, p).is_some(),
        _ => false,
    }
}

/// The food next to `p`, looked for north, south, west, east (lbforaging's
/// `adjacent_food_location`; its `row > 1` and `col > 1` guards agree with this because food
/// never lies on the field's border).
#[inline]
fn adjacent_food(cl: CellLayout, cells: &[u8], p: GridPos) -> Option<usize> {
    [NORTH, SOUTH, WEST, EAST].iter().find_map(|&m| {
        let (dx, dy) = DELTAS[m as usize];
        cl.food_on(cells, p.y + dy, p.x + dx)
    })
}

/// The move bit (`a - 1` for the move `a`) a food sets for an agent at key distance `d`
/// (keys `row << 8 | column`; index `d + 256`, clamped to the last entry, which is 0): north
/// at -256, west at -1, east at +1, south at +256.
const BESIDE: [u8; 514] = {
    let mut t = [0u8; 514];
    t[0] = 1 << (NORTH - 1);
    t[255] = 1 << (WEST - 1);
    t[257] = 1 << (EAST - 1);
    t[512] = 1 << (SOUTH - 1);
    t
};

/// A cell's key, `row << 8 | column`: the four cells next to one lie 256 and 1 away.
#[inline(always)]
fn key(row: i32, col: i32) -> i32 {
    row << 8 | col
}

/// A food slot's key; an absent food's lies below every cell's (rows and columns are below
/// 256), so its distance from any agent indexes past [`BESIDE`].
#[inline(always)]
fn food_key(f: &[u8]) -> i32 {
    key(f[0] as i32, f[1] as i32) - (i32::from(f[3] == 0) << 20)
}

/// Which of the four cells next to `p` hold a food of `keys` ([`food_key`]): bit `a - 1` for
/// the move `a` (NORTH, SOUTH, WEST, EAST) that leads there. Each food is looked up in
/// [`BESIDE`] by its distance from `p`'s key, without branches (positions under a random
/// policy make every branch here a coin flip).
#[inline(always)]
fn beside(keys: impl IntoIterator<Item = i32>, p: GridPos) -> u8 {
    // 256 below the agent's key: a food's distance plus 256 indexes `BESIDE`.
    let base = key(p.y as i32, p.x as i32) - 256;
    keys.into_iter().fold(0, |bits, k| {
        bits | BESIDE[((k - base) as u32).min(513) as usize]
    })
}

/// One agent's valid actions at `p` as bits, bit `a` set when action `a` is valid (the answers
/// of [`valid`] for every action), given the foods beside it ([`beside`]).
#[inline(always)]
fn valid_from(layout: &LayoutCore, p: GridPos, food: u8) -> u8 {
    let (w, h) = (layout.width as i16, layout.height as i16);
    let on_field = u8::from(p.y > 0)
        | u8::from(p.y < h - 1) << 1
        | u8::from(p.x > 0) << 2
        | u8::from(p.x < w - 1) << 3;
    1 | (on_field & !food) << 1 | u8::from(food != 0) << LOAD
}

/// [`valid_from`] with one pass over every food slot.
#[inline(always)]
fn valid_bits(layout: &LayoutCore, cl: CellLayout, cells: &[u8], p: GridPos) -> u8 {
    let foods = &cells[cl.food(0)..cl.food(cl.foods)];
    valid_from(layout, p, beside(foods.chunks_exact(4).map(food_key), p))
}

/// Every learner's valid actions `[N, 6]`, 1 = valid (lbforaging's `_valid_actions`; the same
/// answers as [`valid`]).
pub fn write_action_mask(
    layout: &LayoutCore,
    cl: CellLayout,
    pos: &[GridPos],
    cells: &[u8],
    mask: &mut [u8],
) {
    // lbforaging's registered sizes get the food keys in registers.
    match cl.foods {
        2 => action_mask::<2>(layout, cl, pos, cells, mask),
        3 => action_mask::<3>(layout, cl, pos, cells, mask),
        _ => action_mask::<0>(layout, cl, pos, cells, mask),
    }
}

/// [`write_action_mask`] with `F` food slots, their keys found once for every learner (0: any
/// number, found for each learner).
#[inline(always)]
fn action_mask<const F: usize>(
    layout: &LayoutCore,
    cl: CellLayout,
    pos: &[GridPos],
    cells: &[u8],
    mask: &mut [u8],
) {
    let mut keys = [0i32; F];
    for (k, f) in keys
        .iter_mut()
        .zip(cells[cl.food(0)..cl.food(0) + 4 * F].chunks_exact(4))
    {
        *k = food_key(f);
    }
    for (p, row) in pos
        .iter()
        .zip(mask.chunks_exact_mut(ACTIONS))
        .take(layout.learners)
    {
        let bits = if F == 0 {
            valid_bits(layout, cl, cells, *p)
        } else {
            valid_from(layout, *p, beside(keys, *p))
        };
        // Bit k of `bits` to byte k (0 or 1), all six at once.
        let bytes = ((u64::from(bits) * 0x0002_0408_1020_4081) & 0x8080_8080_8080_8080) >> 7;
        row.copy_from_slice(&bytes.to_le_bytes()[..ACTIONS]);
    }
}

/// Movement: invalid actions become NONE (in `applied` too), then every agent whose target
/// cell no other agent names moves there. A learner's valid actions come from the action mask
/// when the arena keeps one: the engine writes it after every change of state (step, reset,
/// edit), so it holds what [`valid_bits`] would compute again.
pub fn apply_moves(layout: &LayoutCore, cl: CellLayout, a: &mut ArenaMut) {
    // The targets live on the stack; few agents need few of them cleared, and lbforaging's
    // registered numbers of agents get every loop unrolled.
    match layout.agents {
        2 => moves::<2>(layout, cl, a),
        3 => moves::<3>(layout, cl, a),
        4 => moves::<4>(layout, cl, a),
        m if m <= 8 => moves::<8>(layout, cl, a),
        _ => moves::<MAX_AGENTS>(layout, cl, a),
    }
}

/// [`apply_moves`] for at most `CAP` agents.
#[inline(always)]
fn moves<const CAP: usize>(layout: &LayoutCore, cl: CellLayout, a: &mut ArenaMut) {
    let m = layout.agents.min(CAP);
    let masked = if a.mask.len() == layout.learners * ACTIONS {
        layout.learners
    } else {
        0
    };
    // Each agent's target cell packed as (column << 16 | row), compared whole.
    let mut targets = [0u32; CAP];
    for (s, target) in targets.iter_mut().enumerate().take(m) {
        let p = a.pos[s];
        let action = a.applied[s].0;
        let ok = if s < masked {
            a.mask
                .get(s * ACTIONS + action as usize)
                .is_some_and(|&v| v != 0)
                & (action < LOAD + 1)
        } else {
            // Bits above LOAD are clear, so any action past it reads as invalid.
            let bits = u32::from(valid_bits(layout, cl, a.cells, p));
            bits >> u32::from(action).min(31) & 1 == 1
        };
        let action = if ok { action } else { NONE };
        a.applied[s] = AppliedAction(action);
        let (dx, dy) = DELTAS[action as usize];
        *target = u32::from((p.x + dx) as u16) << 16 | u32::from((p.y + dy) as u16);
    }
    let targets = &targets[..m];
    for (s, &t) in targets.iter().enumerate() {
        let named = targets.iter().filter(|&&o| o == t).count();
        if named == 1 {
            a.pos[s] = GridPos {
                x: (t >> 16) as u16 as i16,
                y: t as u16 as i16,
            };
        }
    }
}

/// Whether an agent at `p` is on one of the four cells next to (row, column).
#[inline]
fn next_to(p: GridPos, row: i16, col: i16) -> bool {
    (p.y - row).abs() + (p.x - col).abs() == 1
}

/// The loads, in slot order (lbforaging pops its set of loading agents in an order of its own;
/// food never spawns on two cells next to a common cell, so every loading agent has one food
/// and the groups do not depend on the order). Sets the rewards, removes loaded food, counts
/// loads and failed loads, and ends the episode when no food is left.
pub fn resolve_interactions(lbf: &Lbf, layout: &LayoutCore, a: &mut ArenaMut) {
    let cl = lbf.cells;
    let m = layout.agents;
    // The rewards cleared and the loading agents found in one pass (a few agents: cheaper than
    // a call to clear them).
    let mut loaders = 0u64;
    for (s, (r, applied)) in a.reward.iter_mut().zip(a.applied.iter()).enumerate() {
        *r = StepReward(0.0);
        loaders |= u64::from(applied.0 == LOAD) << s;
    }
    if loaders == 0 {
        // No load: nothing to resolve.
        *a.ended = !cl.any_food(a.cells);
        return;
    }
    let loading = |a: &ArenaMut, s: usize| a.applied[s].0 == LOAD;
    let mut handled = 0u64;
    for s in 0..m {
        if !loading(a, s) || handled >> s & 1 == 1 {
            continue;
        }
        let Some(k) = adjacent_food(cl, a.cells, a.pos[s]) else {
            continue;
        };
        let Some((row, col, food)) = cl.food_at(a.cells, k) else {
            continue;
        };
        let mut group = 0u64;
        let mut sum = 0u32;
        for t in 0..m {
            if loading(a, t) && handled >> t & 1 == 0 && next_to(a.pos[t], row, col) {
                group |= 1 << t;
                sum += cl.level(a.cells, t) as u32;
            }
        }
        handled |= group;
        if sum < food as u32 {
            for t in (0..m).filter(|t| group >> t & 1 == 1) {
                a.reward[t].0 = (a.reward[t].0 as f64 - lbf.params.penalty as f64) as f32;
            }
            a.counters[1] += 1;
            continue;
        }
        let spawned = CellLayout::food_spawned(a.cells) as f64;
        for t in (0..m).filter(|t| group >> t & 1 == 1) {
            let mut r = (cl.level(a.cells, t) as u32 * food as u32) as f64;
            if lbf.params.normalize_reward {
                r /= sum as f64 * spawned;
            }
            a.reward[t].0 = r as f32;
        }
        a.cells[cl.food(k) + 3] = 0;
        a.counters[0] += 1;
    }
    *a.ended = !cl.any_food(a.cells);
}

/// The whole arena, no sight limit: per agent slot (row, column, level), then per food slot
/// (row, column, level, present); the same layout in every arena.
pub fn write_global_state(
    layout: &LayoutCore,
    cl: CellLayout,
    pos: &[GridPos],
    cells: &[u8],
    state: &mut [u8],
) {
    for (s, p) in pos.iter().enumerate().take(layout.agents) {
        state[3 * s..3 * s + 3].copy_from_slice(&[p.y as u8, p.x as u8, cl.level(cells, s)]);
    }
    let foods = 3 * layout.agents;
    state[foods..foods + 4 * cl.foods].copy_from_slice(&cells[cl.food(0)..cl.food(cl.foods)]);
}

/// lbforaging's reset after the agents were placed on distinct uniformly drawn cells: agent
/// levels uniform in `min_player_level..=max_player_level`; then up to `max_num_food` foods,
/// each on a cell drawn uniformly off the border (rows and columns `1..size - 1`), rejected
/// when a food lies within one cell (diagonals included) or two cells in a straight line, or
/// an agent stands on it, at most 1000 draws in all; levels uniform in `min_food_level..=` the
/// highest (`max_food_level`, or the sum of the three lowest agent levels), all the highest
/// with `force_coop`. Every draw comes from the arena's spawn stream.
pub fn spawn(lbf: &Lbf, layout: &LayoutCore, a: &mut ArenaMut) {
    let cl = lbf.cells;
    let p = &lbf.params;
    let rng: &mut ChaCha8Rng = &mut a.rng.spawn;
    let uniform = |rng: &mut ChaCha8Rng, lo: u8, hi: u8| {
        lo + below(rng.next_u32(), (hi - lo) as u32 + 1) as u8
    };
    let m = layout.agents;
    let mut sorted = [0u8; MAX_AGENTS];
    for (s, sorted) in sorted.iter_mut().enumerate().take(m) {
        let level = uniform(rng, p.min_player_level, p.max_player_level);
        a.cells[CellLayout::LEVELS + s] = level;
        *sorted = level;
    }
    sorted[..m].sort_unstable();
    let max = p.max_food_level.unwrap_or_else(|| {
        sorted[..m.min(3)]
            .iter()
            .map(|&l| l as u32)
            .sum::<u32>()
            .min(255) as u8
    });
    let min = if p.force_coop { max } else { p.min_food_level };
    a.cells[cl.food(0)..cl.food(cl.foods)].fill(0);
    let (h, w) = (layout.height as u32, layout.width as u32);
    let (mut placed, mut attempts) = (0, 0);
    while placed < cl.foods && attempts < FOOD_ATTEMPTS {
        attempts += 1;
        let row = 1 + below(rng.next_u32(), h - 2) as i16;
        let col = 1 + below(rng.next_u32(), w - 2) as i16;
        let crowded = (0..placed).any(|k| {
            let (r, c, _) = cl.food_at(a.cells, k).unwrap_or((-9, -9, 0));
            let (dr, dc) = ((r - row).abs(), (c - col).abs());
            (dr <= 1 && dc <= 1) || (dr == 0 && dc <= 2) || (dc == 0 && dr <= 2)
        });
        if crowded || a.pos[..m].iter().any(|q| q.y == row && q.x == col) {
            continue;
        }
        let level = if min == max {
            min
        } else {
            uniform(rng, min, max)
        };
        let f = cl.food(placed);
        a.cells[f..f + 4].copy_from_slice(&[row as u8, col as u8, level, 1]);
        placed += 1;
    }
    // Keep the foods in (row, column) order: the order observations list them in.
    for i in 1..placed {
        let mut j = i;
        while j > 0
            && a.cells[cl.food(j - 1)..cl.food(j - 1) + 2] > a.cells[cl.food(j)..cl.food(j) + 2]
        {
            for b in 0..4 {
                a.cells.swap(cl.food(j - 1) + b, cl.food(j) + b);
            }
            j -= 1;
        }
    }
    let spawned: u16 = (0..placed).map(|k| a.cells[cl.food(k) + 2] as u16).sum();
    CellLayout::set_food_spawned(a.cells, spawned);
}
