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
/// eats it: the cell is flagged [`EATEN`] and the apple's neighbours lose one standing
/// neighbour.
pub fn apply_moves(layout: &LayoutCore, h: &Harvest, a: &mut ArenaMut) {
    a.reward.fill(StepReward(0.0));
    let before = zap::positions(layout, a);
    avatars::apply_moves(layout, a, None);
    zap::eat_apples(layout, a, &before, h.params.apple_reward, |a, i| {
        // Not to regrow this step (cleared by `regrow`).
        a.cells[i] |= EATEN;
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
    zap::maybe_end(a, h.params.min_steps, h.params.end_every, h.end_threshold);
}

/// Every empty apple cell not eaten this step regrows with the probability for its number of
/// standing neighbours (the last entry for 3 or more), even under an avatar (Melting Pot's
/// `canRegrowIfOccupied`). Counts are updated after all cells have drawn. The pass that finds
/// the cells that draw also clears the step's [`EATEN`] flags.
///
/// The cells that draw are listed without a branch, a chunk of [`CHUNK`] at a time, then draw
/// in the apple cells' order: the same random stream as a cell-by-cell test, without its
/// unpredictable branches.
pub fn regrow(h: &Harvest, a: &mut ArenaMut) {
    let mut grown = [0u32; CHUNK];
    let mut n_grown = 0;
    for chunk in h.apple_cells.chunks(CHUNK) {
        let mut draws = [0u32; CHUNK];
        let mut n = 0;
        for &i in chunk {
            let [flags, item] = [a.cells[i as usize], a.cells[i as usize + ITEM]];
            a.cells[i as usize] = flags & !EATEN;
            let chance = (h.regrows_with >> (flags / NEIGHBOUR)) & 1 != 0;
            draws[n] = i;
            n += usize::from((item == 0) & (flags & EATEN == 0) & chance);
        }
        for &i in &draws[..n] {
            let threshold = h.regrowth[((a.cells[i as usize] / NEIGHBOUR) as usize).min(3)];
            if (a.rng.rules.next_u32() as u64) < threshold {
                a.cells[i as usize + ITEM] = 1;
                a.cells[i as usize] |= GROWN;
                if let Some(g) = grown.get_mut(n_grown) {
                    *g = i;
                }
                n_grown += 1;
            }
        }
    }
    let raise = |a: &mut ArenaMut, i: u32| {
        a.cells[i as usize] &= !GROWN;
        for &off in &h.disc {
            a.cells[(i as isize + off) as usize] += NEIGHBOUR;
        }
    };
    if n_grown <= CHUNK {
        for &i in &grown[..n_grown] {
            raise(a, i);
        }
    } else {
        for &i in &h.apple_cells {
            if a.cells[i as usize] & GROWN != 0 {
                raise(a, i);
            }
        }
    }
}

/// Apple cells listed per pass of [`regrow`] (and apples it remembers regrowing in one step;
/// beyond that it finds them by their [`GROWN`] flag).
const CHUNK: usize = 32;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::{Alive, CELL_CHANNELS, GridPos};
    use crate::layout::{Layout, Rules};
    use crate::scenario::Scenario;
    use crate::substrate::ArenaState;

    /// Every empty apple regrows at once (probability 1), more of them (40) than [`regrow`]
    /// remembers in a step ([`CHUNK`]): each stands again, and every cell's neighbour count is
    /// what a recount from the standing apples gives.
    #[test]
    fn a_mass_regrowth_leaves_every_neighbour_count_right() {
        let text = r#"Scenario(
    name: "orchard",
    substrate: CommonsHarvest((regrowth_probabilities: (1.0, 1.0, 1.0, 1.0))),
    map: ["AAAAAAAA", "AAAAAAAA", "AAAAAAAA", "AAAAAAAA", "AAAAAAAA", "*......."],
    roles: [(kind: player, count: 1)],
    max_steps: 100,
)"#;
        let loaded = Scenario::parse(text, "orchard.ron").unwrap();
        let layout = Layout::derive(&loaded);
        let Rules::Harvest(h) = &layout.rules else {
            panic!("a harvest layout")
        };
        assert!(h.apple_cells.len() > CHUNK);
        let mut state = ArenaState::new(&layout, vec![GridPos { x: 0, y: 5 }], vec![Alive(true)]);
        let mut a = state.view();
        for &i in &h.apple_cells {
            a.cells[i as usize + ITEM] = 0;
        }
        h.recount(&layout, &mut a);
        regrow(h, &mut a);
        assert!(h.apple_cells.iter().all(|&i| a.cells[i as usize + ITEM] == 1));
        let counts = |cells: &[u8]| -> Vec<u8> {
            cells.chunks_exact(CELL_CHANNELS).map(|c| c[0] / NEIGHBOUR).collect()
        };
        let after_regrowth = counts(a.cells);
        h.recount(&layout, &mut a);
        assert_eq!(after_regrowth, counts(a.cells));
        assert!(a.cells.iter().step_by(CELL_CHANNELS).all(|&f| f & GROWN == 0));
    }
}
