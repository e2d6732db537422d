//! gift_refinements (Melting Pot 2.4): collect raw tokens, refine them by gifting, consume.
//!
//! After movement (which picks up tokens), in one random priority order: refine-and-gift beams
//! (one cell wide, up to `beam_length` ahead, stopped by walls and by the first avatar, which
//! receives the gift) and consumption. Then empty token cells without an avatar regrow, and past
//! `min_steps` the episode may end at random.

use rand_core::Rng;

use super::{Gift, GiftParams};
use crate::components::StepReward;
use crate::layout::core::LayoutCore;
use crate::substrate::ArenaMut;
use crate::substrate::avatars::{AVATAR, DIRS, ITEM, TOKEN_CELL, WALL, priority_order};

/// Action index of refine-and-gift.
pub const GIFT: u8 = 7;
/// Action index of consume.
pub const CONSUME: u8 = 8;

/// Beams, gifts, consumption, regrowth and the random episode end.
pub fn interact(layout: &LayoutCore, g: &Gift, a: &mut ArenaMut) {
    let params = &g.params;
    a.reward.fill(StepReward(0.0));
    for s in priority_order(layout.agents, &mut a.rng.rules) {
        if !a.alive[s].0 {
            continue;
        }
        // The cooldown counts down every step; a beam fires when it has reached 0, so beams
        // are at most `beam_cooldown` steps apart.
        let cd = &mut a.cooldown[s].0;
        *cd = cd.saturating_sub(1);
        match a.applied[s].0 {
            GIFT if *cd == 0 => {
                *cd = params.beam_cooldown;
                if let Some(r) = beam_target(layout, params, a, s) {
                    give(params, a, s, r);
                }
            }
            CONSUME => {
                // Consuming an empty inventory does nothing and is not counted.
                let inv = a.carry[s].0;
                let tokens: u32 = inv.iter().map(|&n| n as u32).sum();
                if tokens > 0 {
                    let value: f32 = (0..3)
                        .map(|l| inv[l] as f32 * params.consume_value[l])
                        .sum();
                    a.reward[s].0 += value;
                    a.counters[4] += 1;
                    a.counters[5] += tokens;
                    a.carry[s].0 = [0; 3];
                }
            }
            _ => {}
        }
    }
    regrow(layout, g, a);
    let t = a.clock.t + 1;
    if t >= params.min_steps
        && t.is_multiple_of(params.end_every)
        && (a.rng.rules.next_u32() as u64) < g.end_threshold
    {
        *a.ended = true;
    }
}

/// The first avatar on the beam's path, if a wall does not stop it first.
fn beam_target(layout: &LayoutCore, params: &GiftParams, a: &ArenaMut, s: usize) -> Option<usize> {
    let (dx, dy) = DIRS[a.facing[s].0 as usize];
    let p = a.pos[s];
    for k in 1..=params.beam_length as i16 {
        let i = layout.cell_index(p.x + k * dx, p.y + k * dy);
        if a.cells[i] & WALL != 0 {
            return None;
        }
        let other = a.cells[i + AVATAR];
        if other != 0 {
            return Some(other as usize - 1);
        }
    }
    None
}

/// The gifter gives one token of its most refined non-empty level l; the recipient gains
/// `gift_multiplier` tokens of level l + 1, or one level-3 token when l is 3, capped at
/// `capacity` (the excess is lost). A gifter with nothing to give gives nothing.
pub fn give(params: &GiftParams, a: &mut ArenaMut, from: usize, to: usize) {
    let Some(level) = (0..3).rev().find(|&l| a.carry[from].0[l] > 0) else {
        return;
    };
    a.carry[from].0[level] -= 1;
    let (dst, amount) = if level == 2 {
        (2, 1)
    } else {
        (level + 1, params.gift_multiplier)
    };
    let slot = &mut a.carry[to].0[dst];
    *slot = slot.saturating_add(amount).min(params.capacity);
    a.counters[1 + level] += 1;
}

/// Each empty token cell without an avatar regrows a token with probability `regrow_prob`:
/// independent draws per cell, sampled as geometric gaps between events along the list of
/// token cells (one draw per event instead of one per cell).
fn regrow(layout: &LayoutCore, g: &Gift, a: &mut ArenaMut) {
    if g.regrow_log >= 0.0 {
        return; // probability 0
    }
    let cells = &g.token_cells;
    let mut k = geometric_gap(&mut a.rng.rules, g.regrow_log);
    while k < cells.len() {
        let c = cells[k] as usize;
        let i = layout.cell_index((c % layout.width) as i16, (c / layout.width) as i16);
        if a.cells[i] & TOKEN_CELL != 0 && a.cells[i + ITEM] == 0 && a.cells[i + AVATAR] == 0 {
            a.cells[i + ITEM] = 1;
        }
        k += 1 + geometric_gap(&mut a.rng.rules, g.regrow_log);
    }
}

/// Failures before the next success of a Bernoulli(p) sequence, given ln(1 - p) < 0.
pub fn geometric_gap(rng: &mut impl Rng, log_fail: f64) -> usize {
    if log_fail == f64::NEG_INFINITY {
        return 0; // p = 1
    }
    // u in (0, 1]: 53 random bits, never 0.
    let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let gap = (u.ln() / log_fail).floor();
    if gap >= usize::MAX as f64 {
        usize::MAX
    } else {
        gap as usize
    }
}
