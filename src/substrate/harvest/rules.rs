//! commons_harvest's step, in Melting Pot's updater order: moves (entering an apple's cell
//! eats it), zaps in a random priority order, respawns, apple regrowth, the random end.

use rand_core::Rng;

use super::{GROWN, Harvest, NEIGHBOUR};
use crate::components::StepReward;
use crate::layout::core::LayoutCore;
use crate::rng::below;
use crate::substrate::ArenaMut;
use crate::substrate::avatars::{self, ITEM, priority_order};
use crate::substrate::zap::{self, EATEN, FIRE_ZAP};

/// Moves and turns ([`avatars::apply_moves`]), then every avatar that entered an apple's cell
/// eats it and the apple's neighbours lose one standing neighbour.
pub fn apply_moves(layout: &LayoutCore, h: &Harvest, a: &mut ArenaMut) {
    a.reward.fill(StepReward(0.0));
    let before = zap::positions(layout, a);
    avatars::apply_moves(layout, a, None);
    zap::eat_apples(layout, a, &before, h.params.apple_reward, |a, i| {
        for &off in &h.disc {
            a.cells[(i as isize + off) as usize] -= NEIGHBOUR;
        }
    });
}

/// Zaps, respawns, regrowth and the random episode end.
pub fn interact(layout: &LayoutCore, h: &Harvest, a: &mut ArenaMut) {
    let order = priority_order(layout.agents, &mut a.rng.rules);
    for &s in &order[..layout.agents] {
        let s = s as usize;
        // An avatar zapped earlier in this step's order neither fires nor counts down.
        if !a.alive[s].0 {
            continue;
        }
        let fire = a.applied[s].0 == FIRE_ZAP;
        if zap::tick_and_fire(&mut a.cooldown[s].0, h.zapper.cooldown, fire) {
            zap::zap(layout, &h.zapper, a, s);
        }
    }
    zap::respawn(layout, a);
    regrow(h, a);
    zap::clear_eaten(a, &h.apple_cells);
    zap::maybe_end(a, h.params.min_steps, h.params.end_every, h.end_threshold);
}

/// Every empty apple cell not eaten this step regrows with the probability for its number of
/// standing neighbours (the last entry for 3 or more), even under an avatar (Melting Pot's
/// `canRegrowIfOccupied`). Counts are updated after all cells have drawn.
pub fn regrow(h: &Harvest, a: &mut ArenaMut) {
    for &i in &h.apple_cells {
        let i = i as usize;
        let flags = a.cells[i];
        if a.cells[i + ITEM] != 0 || flags & EATEN != 0 {
            continue;
        }
        let near = (flags / NEIGHBOUR) as usize;
        let threshold = h.regrowth[near.min(3)];
        if threshold > 0 && (a.rng.rules.next_u32() as u64) < threshold {
            a.cells[i + ITEM] = 1;
            a.cells[i] |= GROWN;
        }
    }
    for &i in &h.apple_cells {
        let i = i as usize;
        if a.cells[i] & GROWN != 0 {
            a.cells[i] &= !GROWN;
            for &off in &h.disc {
                a.cells[(i as isize + off) as usize] += NEIGHBOUR;
            }
        }
    }
}

/// Moves slots 0 and 1 to distinct random inside spawn points (`Q`), as Melting Pot spawns its
/// first two players; the others keep their `*` spawn points.
pub fn place_inside(layout: &LayoutCore, h: &Harvest, a: &mut ArenaMut) {
    let n = h.inside_spawns.len().min(2).min(layout.agents);
    let mut taken = [usize::MAX; 2];
    for slot in 0..n {
        let free = h.inside_spawns.len() - slot;
        let mut pick = below(a.rng.spawn.next_u32(), free as u32) as usize;
        let k = (0..h.inside_spawns.len())
            .filter(|k| !taken.contains(k))
            .find(|_| {
                let hit = pick == 0;
                pick = pick.wrapping_sub(1);
                hit
            })
            .expect("pick < free");
        taken[slot] = k;
        let c = h.inside_spawns[k] as usize;
        a.pos[slot].x = (c % layout.width) as i16;
        a.pos[slot].y = (c / layout.width) as i16;
    }
}
