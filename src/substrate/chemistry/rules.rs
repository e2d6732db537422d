//! chemistry (Melting Pot 2.4): molecules on the ground and in the avatars' vesicles react
//! following a reaction graph that is data in the scenario.
//!
//! Each step, after movement: every molecule fires with its group's probability (ground or
//! vesicle), ground cells in row-major order, then vesicles in slot order. A fired molecule tries
//! the reactions it takes part in, in an order shuffled by the arena's RNG; the first whose
//! reactants are all present in its von Neumann neighbourhood (its cell and the 4 orthogonal
//! neighbours, ground first, then the vesicles of avatars on those cells) fires: reactant i's
//! location becomes product i. A location takes part in at most one reaction per step. Each
//! player whose vesicle took part gets the reaction's reward. Then io (swap vesicle and ground,
//! cooldown `io_cooldown`).
//!
//! Simplifications against Melting Pot: products appear in the same step (no "activated"
//! intermediate state), and the firing molecule itself must be one of the reactants.

use rand_core::Rng;

use super::Chemistry;
use crate::components::{CELL_CHANNELS, StepReward};
use crate::layout::core::LayoutCore;
use crate::rng::below;
use crate::substrate::ArenaMut;
use crate::substrate::avatars::{AVATAR, ITEM, USED, WALL};
use crate::substrate::gift::geometric_gap;

/// Action index of io.
pub const IO: u8 = 7;

/// Most locations in a neighbourhood: 5 ground cells and up to 5 vesicles.
const MAX_LOCATIONS: usize = 10;

#[derive(Clone, Copy)]
enum Loc {
    /// A ground cell (index of its first byte in the cell layer).
    Ground(usize),
    /// An avatar's vesicle (slot).
    Vesicle(usize),
}

/// Reactions, then io.
pub fn interact(layout: &LayoutCore, chem: &Chemistry, a: &mut ArenaMut) {
    let params = &chem.params;
    a.reward.fill(StepReward(0.0));
    let mut vesicles_used = 0u64;

    // Ground molecules in row-major order; empty cells initiate through geometric gaps.
    let mut empty_gap = next_empty_gap(chem, a);
    for y in 0..layout.height as i16 {
        for x in 0..layout.width as i16 {
            let i = layout.cell_index(x, y);
            if a.cells[i] & (WALL | USED) != 0 {
                continue;
            }
            let c = a.cells[i + ITEM];
            let fires = if c == 0 {
                if empty_gap == 0 {
                    empty_gap = next_empty_gap(chem, a);
                    true
                } else {
                    empty_gap -= 1;
                    false
                }
            } else {
                (a.rng.rules.next_u32() as u64) < chem.fire_ground[c as usize]
            };
            if fires {
                try_react(layout, chem, a, Loc::Ground(i), c, &mut vesicles_used);
            }
        }
    }
    // Vesicles in slot order.
    for s in 0..layout.agents {
        let c = a.carry[s].0[0];
        if !a.alive[s].0 || c == 0 || vesicles_used & (1 << s) != 0 {
            continue;
        }
        if (a.rng.rules.next_u32() as u64) < chem.fire_vesicle[c as usize] {
            try_react(layout, chem, a, Loc::Vesicle(s), c, &mut vesicles_used);
        }
    }

    // io: the cooldown counts down first; a swap needs it at 0 and neither side used this step.
    for s in 0..layout.agents {
        if !a.alive[s].0 {
            continue;
        }
        if a.cooldown[s].0 > 0 {
            a.cooldown[s].0 -= 1;
        } else if a.applied[s].0 == IO {
            let i = layout.cell_index(a.pos[s].x, a.pos[s].y);
            if a.cells[i] & USED == 0 && vesicles_used & (1 << s) == 0 {
                std::mem::swap(&mut a.carry[s].0[0], &mut a.cells[i + ITEM]);
                a.cooldown[s].0 = params.io_cooldown;
            }
        }
    }

    for cell in a.cells.chunks_exact_mut(CELL_CHANNELS) {
        cell[0] &= !USED;
    }
}

fn next_empty_gap(chem: &Chemistry, a: &mut ArenaMut) -> usize {
    if chem.empty_log >= 0.0 {
        usize::MAX
    } else {
        geometric_gap(&mut a.rng.rules, chem.empty_log)
    }
}

/// Tries the reactions of the molecule `c` at `origin` in a random order; fires the first one
/// whose reactants are all available around it.
fn try_react(
    layout: &LayoutCore,
    chem: &Chemistry,
    a: &mut ArenaMut,
    origin: Loc,
    c: u8,
    vesicles_used: &mut u64,
) {
    let centre = match origin {
        Loc::Ground(i) => i,
        Loc::Vesicle(s) => layout.cell_index(a.pos[s].x, a.pos[s].y),
    };
    // The neighbourhood, ground cells first, then vesicles on those cells; unusable ones left out.
    let stride = (layout.padded_width * CELL_CHANNELS) as isize;
    let mut locs = [(Loc::Ground(0), 0u8); MAX_LOCATIONS];
    let mut n = 0;
    let cells_around = [
        0isize,
        -(CELL_CHANNELS as isize),
        CELL_CHANNELS as isize,
        -stride,
        stride,
    ];
    for d in cells_around {
        let i = (centre as isize + d) as usize;
        if a.cells[i] & (WALL | USED) == 0 {
            locs[n] = (Loc::Ground(i), a.cells[i + ITEM]);
            n += 1;
        }
    }
    for d in cells_around {
        let i = (centre as isize + d) as usize;
        let who = a.cells[i + AVATAR];
        if who != 0 {
            let s = who as usize - 1;
            if *vesicles_used & (1 << s) == 0 {
                locs[n] = (Loc::Vesicle(s), a.carry[s].0[0]);
                n += 1;
            }
        }
    }
    let origin_index = locs[..n].iter().position(|(l, _)| same(*l, origin));
    let Some(origin_index) = origin_index else {
        return;
    };

    // Candidate reactions in a shuffled order.
    let candidates = &chem.reactions_of[c as usize];
    let mut order = [0u16; 256];
    let k = candidates.len().min(order.len());
    order[..k].copy_from_slice(&candidates[..k]);
    for j in (1..k).rev() {
        let r = below(a.rng.rules.next_u32(), j as u32 + 1) as usize;
        order.swap(j, r);
    }

    for &r in &order[..k] {
        let reaction = &chem.reactions[r as usize];
        // Match reactants to distinct locations; the origin takes the first reactant equal to c.
        let mut taken = [false; MAX_LOCATIONS];
        let mut chosen = [0usize; crate::substrate::chemistry::MAX_REACTANTS];
        let mut origin_placed = false;
        let mut ok = true;
        for (q, &want) in reaction.reactants.iter().enumerate() {
            let pick = if !origin_placed && want == c {
                origin_placed = true;
                Some(origin_index)
            } else {
                (0..n).find(|&j| !taken[j] && j != origin_index && locs[j].1 == want)
            };
            match pick {
                Some(j) if !taken[j] => {
                    taken[j] = true;
                    chosen[q] = j;
                }
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok || !origin_placed {
            continue;
        }
        for (q, &product) in reaction.products.iter().enumerate() {
            match locs[chosen[q]].0 {
                Loc::Ground(i) => {
                    a.cells[i + ITEM] = product;
                    a.cells[i] |= USED;
                }
                Loc::Vesicle(s) => {
                    a.carry[s].0[0] = product;
                    *vesicles_used |= 1 << s;
                    a.reward[s].0 += reaction.reward;
                }
            }
        }
        a.counters[r as usize] += 1;
        return;
    }
}

fn same(x: Loc, y: Loc) -> bool {
    match (x, y) {
        (Loc::Ground(i), Loc::Ground(j)) => i == j,
        (Loc::Vesicle(s), Loc::Vesicle(t)) => s == t,
        _ => false,
    }
}
