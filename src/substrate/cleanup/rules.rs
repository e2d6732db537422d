//! clean_up's step, in Melting Pot's order: the components' updates first (apples grow at the
//! rate the river's pollution allows, then pollution may appear), then the avatars' updaters
//! (moves, entering an apple's cell eats it; zaps and cleaning beams in a random priority
//! order; respawns), then the random episode end.

use rand_core::Rng;

use super::{CleanUp, DIRT, RIVER, counters};
use crate::components::StepReward;
use crate::layout::core::LayoutCore;
use crate::rng::{self, below};
use crate::substrate::ArenaMut;
use crate::substrate::avatars::{self, ITEM, priority_order};
use crate::substrate::zap::{self, APPLE_CELL, CLEAN_TIMER, FIRE_ZAP};

/// Action index of the cleaning beam (Melting Pot's `FIRE_CLEAN`, after `FIRE_ZAP`).
pub const FIRE_CLEAN: u8 = 8;

/// Polluted river cells.
pub fn dirt_count(c: &CleanUp, a: &ArenaMut) -> usize {
    c.river_cells
        .iter()
        .filter(|&&i| a.cells[i as usize + ITEM] == DIRT)
        .count()
}

/// Growth and pollution, then moves and eating.
pub fn apply_moves(layout: &LayoutCore, c: &CleanUp, a: &mut ArenaMut) {
    a.reward.fill(StepReward(0.0));
    // Growth does not touch the river, so one count serves both.
    let dirt = dirt_count(c, a);
    grow_apples(c, a, dirt);
    spawn_dirt(c, a, dirt);
    let reward = c.params.apple_reward;
    avatars::apply_moves(layout, a, APPLE_CELL, |a, s, i| {
        zap::eat_apple(a, s, i, reward, |_| {});
    });
}

/// Every empty apple cell grows an apple with the probability the polluted fraction of the
/// river allows (`AppleGrow`), even under an avatar, which eats it only on entering again;
/// `dirt` is the number of polluted river cells ([`dirt_count`]).
pub fn grow_apples(c: &CleanUp, a: &mut ArenaMut, dirt: usize) {
    let rivers = c.river_cells.len();
    let fraction = if rivers == 0 {
        0.0
    } else {
        dirt as f64 / rivers as f64
    };
    let threshold = rng::threshold(c.params.growth_probability(fraction));
    if threshold == 0 {
        // Nothing grows (the river too polluted): the stream moves past the draws the empty
        // cells would make.
        let empty = c
            .apple_cells
            .iter()
            .map(|&i| usize::from(a.cells[i as usize + ITEM] == 0));
        rng::skip_words(&mut a.rng.rules, empty.sum());
        return;
    }
    for &i in &c.apple_cells {
        let i = i as usize;
        if a.cells[i + ITEM] == 0 && (a.rng.rules.next_u32() as u64) < threshold {
            a.cells[i + ITEM] = 1;
        }
    }
}

/// After `dirt_spawn_delay` steps, with `dirt_spawn_prob` one clean river cell chosen
/// uniformly becomes polluted (`DirtSpawner`); `dirt` is the number polluted now.
pub fn spawn_dirt(c: &CleanUp, a: &mut ArenaMut, dirt: usize) {
    if a.clock.t < c.params.dirt_spawn_delay || (a.rng.rules.next_u32() as u64) >= c.spawn_threshold
    {
        return;
    }
    let clean = c.river_cells.len() - dirt;
    if clean == 0 {
        return;
    }
    let pick = below(a.rng.rules.next_u32(), clean as u32) as usize;
    let i = c
        .river_cells
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| a.cells[i + ITEM] != DIRT)
        .nth(pick)
        .expect("pick < clean");
    a.cells[i + ITEM] = DIRT;
}

/// Zaps, then cleaning beams (both in the step's random priority order, an avatar zapped
/// earlier in it does neither), respawns and the random episode end.
pub fn interact(layout: &LayoutCore, c: &CleanUp, a: &mut ArenaMut) {
    let order = priority_order(layout.agents, &mut a.rng.rules);
    for s in order.clone() {
        let (alive, fire) = (a.alive[s].0, a.applied[s].0 == FIRE_ZAP);
        if zap::tick_and_fire(alive, &mut a.cooldown[s].0, c.zapper.cooldown, fire) {
            zap::zap(layout, &c.zapper, a, s);
        }
    }
    for s in order {
        let (alive, fire) = (a.alive[s].0, a.applied[s].0 == FIRE_CLEAN);
        let timer = &mut a.carry[s].0[CLEAN_TIMER];
        if zap::tick_and_fire(alive, timer, c.params.clean_cooldown, fire) {
            clean(layout, c, a, s);
        }
    }
    zap::respawn(layout, a);
    zap::maybe_end(a, c.params.min_steps, c.params.end_every, c.end_threshold);
}

/// Avatar `s`'s cleaning beam: each ray cleans the first polluted cell it reaches and stops
/// there (`DirtCleaning.onHit`); avatars and apples let it through, walls stop it.
pub fn clean(layout: &LayoutCore, c: &CleanUp, a: &mut ArenaMut, s: usize) {
    c.cleaner.cast(layout, a, s, |a, i| {
        if a.cells[i] & RIVER != 0 && a.cells[i + ITEM] == DIRT {
            a.cells[i + ITEM] = 0;
            a.counters[counters::CLEANED] += 1;
            true
        } else {
            false
        }
    });
}
