//! The coin game (Lerer & Peysakhovich; LOLA; JaxMARL): two players on a small torus, one coin
//! of one player's colour. Picking up any coin pays `pick_reward`; picking up the other player's
//! coin costs its owner `stolen_penalty`. A new coin of a random colour appears on a random free
//! cell after a pickup. Player slot 0 is red (colour 0), slot 1 blue (colour 1).
//!
//! Cell layer: `[coin cell low byte, coin cell high byte, coin colour]`.

use rand_core::Rng;

use super::CoinParams;
use crate::components::{GridPos, StepReward};
use crate::layout::core::LayoutCore;
use crate::rng::below;
use crate::substrate::ArenaMut;
use crate::substrate::pursuit::MOVES;

fn coin(a: &ArenaMut) -> (usize, usize) {
    (
        a.cells[0] as usize | (a.cells[1] as usize) << 8,
        a.cells[2] as usize,
    )
}

/// Moves both players (Move5); with `torus` the edges wrap, walls always block. Players may
/// share a cell.
pub fn apply_moves(layout: &LayoutCore, params: &CoinParams, a: &mut ArenaMut) {
    let (w, h) = (layout.width as i16, layout.height as i16);
    for s in 0..layout.agents {
        let (dx, dy) = MOVES[a.applied[s].0 as usize % MOVES.len()];
        let (mut x, mut y) = (a.pos[s].x + dx, a.pos[s].y + dy);
        if params.torus {
            x = x.rem_euclid(w);
            y = y.rem_euclid(h);
        }
        if layout.is_open(x as i32, y as i32) {
            a.pos[s] = GridPos { x, y };
        }
    }
}

/// Pickups and rewards; a picked coin is replaced at once.
pub fn interact(layout: &LayoutCore, params: &CoinParams, a: &mut ArenaMut) {
    a.reward.fill(StepReward(0.0));
    let (cell, colour) = coin(a);
    let mut picked = false;
    for s in 0..layout.agents {
        let p = a.pos[s];
        if p.y as usize * layout.width + p.x as usize == cell {
            picked = true;
            a.reward[s].0 += params.pick_reward;
            if colour == s {
                a.counters[0] += 1;
            } else {
                a.reward[colour].0 += params.stolen_penalty;
                a.counters[1] += 1;
            }
        }
    }
    if picked {
        place_coin(layout, a);
    }
}

/// Puts a coin of a random colour on a uniformly random open cell no player stands on.
pub fn place_coin(layout: &LayoutCore, a: &mut ArenaMut) {
    let occupied = |c: usize, a: &ArenaMut| {
        a.pos
            .iter()
            .any(|p| p.y as usize * layout.width + p.x as usize == c)
    };
    let free = (0..layout.open.len())
        .filter(|&c| layout.open[c] && !occupied(c, a))
        .count();
    let colour = (a.rng.rules.next_u32() & 1) as u8;
    let mut k = below(a.rng.rules.next_u32(), free.max(1) as u32) as usize;
    let mut cell = 0;
    for c in 0..layout.open.len() {
        if layout.open[c] && !occupied(c, a) {
            if k == 0 {
                cell = c;
                break;
            }
            k -= 1;
        }
    }
    a.cells[0] = (cell & 0xff) as u8;
    a.cells[1] = (cell >> 8) as u8;
    a.cells[2] = colour;
}

/// The full grid as 4 channels per cell, row-major, from each player's point of view:
/// [me, the other player, a coin of my colour, a coin of the other's colour].
pub fn write_observations(layout: &LayoutCore, a: &mut ArenaMut) {
    let (cell, colour) = coin(a);
    let cells = layout.width * layout.height;
    for s in 0..layout.learners {
        let out = &mut a.obs[s * layout.obs_len..(s + 1) * layout.obs_len];
        out.fill(0);
        for (who, p) in a.pos.iter().enumerate() {
            let c = p.y as usize * layout.width + p.x as usize;
            out[c * 4 + usize::from(who != s)] = 1;
        }
        if cell < cells {
            out[cell * 4 + 2 + usize::from(colour != s)] = 1;
        }
    }
}
