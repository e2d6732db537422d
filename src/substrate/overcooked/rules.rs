//! Overcooked's rules, one arena at a time, as JaxMARL's `overcooked` (`step_agents` and
//! `process_interact`): simultaneous moves with JaxMARL's collision rules, then the two
//! players' interactions in slot order on the shared kitchen, then the pots cook.
//!
//! Cell layer: `[object per cell (W*H), pot status per cell (W*H)]`. Objects use JaxMARL's
//! `OBJECT_TO_INDEX` codes ([`FLOOR`], [`COUNTER`], ...); a pot's status is JaxMARL's (23 empty,
//! 22/21 one/two onions, 20..1 cooking, 0 ready). A player's `Carry` byte 0 is the held
//! object's code (0 for nothing: JaxMARL's `empty`).

use super::Overcooked;
use crate::components::{Facing, GridPos, StepReward};
use crate::layout::core::LayoutCore;
use crate::substrate::ArenaMut;

/// Open floor (JaxMARL `empty`).
pub const FLOOR: u8 = 1;
/// An empty counter (JaxMARL `wall`: every wall is a counter).
pub const COUNTER: u8 = 2;
/// A loose onion (on a counter or held).
pub const ONION: u8 = 3;
/// An onion pile.
pub const ONION_PILE: u8 = 4;
/// A clean plate (on a counter or held).
pub const PLATE: u8 = 5;
/// A plate pile.
pub const PLATE_PILE: u8 = 6;
/// A serving (delivery) cell, JaxMARL's `goal`.
pub const GOAL: u8 = 7;
/// A pot.
pub const POT: u8 = 8;
/// A plated soup, JaxMARL's `dish`.
pub const DISH: u8 = 9;

/// Pot status: empty.
pub const POT_EMPTY: u8 = 23;
/// Pot status: three onions in, cooking starts (the same step it counts down to 19).
pub const POT_FULL: u8 = 20;
/// Pot status: soup ready.
pub const POT_READY: u8 = 0;

/// Actions (JaxMARL's `OvercookedActions`): 0 up, 1 down, 2 right, 3 left, 4 stay, 5 interact.
pub const UP: u8 = 0;
/// Move down.
pub const DOWN: u8 = 1;
/// Move right.
pub const RIGHT: u8 = 2;
/// Move left.
pub const LEFT: u8 = 3;
/// Stay.
pub const STAY: u8 = 4;
/// Interact with the faced cell.
pub const INTERACT: u8 = 5;

/// JaxMARL's `DIR_TO_VEC` by action / JaxMARL direction index: north, south, east, west.
pub const JAX_DIRS: [(i16, i16); 4] = [(0, -1), (0, 1), (1, 0), (-1, 0)];

/// The engine's facing (0 north, 1 east, 2 south, 3 west) for a JaxMARL direction index
/// (0 north, 1 south, 2 east, 3 west), and back: the same permutation both ways.
#[inline]
pub fn jax_dir(f: u8) -> u8 {
    [0, 2, 1, 3][f as usize & 3]
}

/// What one step's interactions paid: the sparse reward shared by both players and each
/// player's shaped reward.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepPay {
    /// Delivery reward, the same for both players.
    pub sparse: f32,
    /// Shaped reward per slot.
    pub shaped: [f32; 2],
}

/// Counter indices (`counter_names` order).
pub const C_DELIVERIES: usize = 0;
/// Onions put into pots.
pub const C_ONIONS: usize = 1;
/// Rewarded plate pickups.
pub const C_PLATES: usize = 2;
/// Soups picked up from pots.
pub const C_SOUPS: usize = 3;

impl Overcooked {
    #[inline]
    fn cell(&self, p: GridPos) -> usize {
        p.y as usize * self.width + p.x as usize
    }

    /// The cell ahead of `p` in JaxMARL direction `d`, clamped to the map as JaxMARL does.
    #[inline]
    fn ahead(&self, p: GridPos, d: u8) -> GridPos {
        let (dx, dy) = JAX_DIRS[d as usize & 3];
        GridPos {
            x: (p.x + dx).clamp(0, self.width as i16 - 1),
            y: (p.y + dy).clamp(0, self.height as i16 - 1),
        }
    }

    /// Movement: a move action turns the player that way and steps it forward unless the
    /// cell ahead is a counter, pot, pile or serving cell. If both players would end on one
    /// cell, or would swap cells, neither moves (their facings still turn).
    pub fn move_players(&self, a: &mut ArenaMut) {
        let mut to = [GridPos::default(); 2];
        for (s, dest) in to.iter_mut().enumerate() {
            let act = a.applied[s].0;
            let p = a.pos[s];
            *dest = p;
            if act < STAY {
                let q = self.ahead(p, act);
                if !self.solid[self.cell(q)] {
                    *dest = q;
                }
                a.facing[s] = Facing(jax_dir(act));
            }
        }
        let collision = to[0] == to[1];
        let swap = to[0] == a.pos[1] && to[1] == a.pos[0];
        if !collision && !swap {
            a.pos[0] = to[0];
            a.pos[1] = to[1];
        }
    }

    /// Interactions (slot 0 first, then slot 1 on the kitchen slot 0 left), then cooking;
    /// returns the rewards. Counters count the rewarded events.
    pub fn interact(&self, a: &mut ArenaMut) -> StepPay {
        let mut pay = StepPay::default();
        for s in 0..2 {
            if a.applied[s].0 == INTERACT {
                let (sparse, shaped) = self.process_interact(a, s);
                pay.sparse += sparse;
                pay.shaped[s] = shaped;
            }
        }
        let n = self.width * self.height;
        for &pot in &self.pots {
            let st = &mut a.cells[n + pot as usize];
            if *st <= POT_FULL && *st > POT_READY {
                *st -= 1;
            }
        }
        pay
    }

    /// JaxMARL's `process_interact` for slot `s` facing the cell ahead of it.
    fn process_interact(&self, a: &mut ArenaMut, s: usize) -> (f32, f32) {
        let n = self.width * self.height;
        let fwd = self.cell(self.ahead(a.pos[s], jax_dir(a.facing[s].0)));
        let held = a.carry[s].0[0];
        let obj = a.cells[fwd];
        let p = &self.params;
        if obj == POT {
            let status = a.cells[n + fwd];
            if status > POT_FULL && held == ONION {
                a.cells[n + fwd] = status - 1;
                a.carry[s].0[0] = 0;
                a.counters[C_ONIONS] += 1;
                return (0.0, p.placement_in_pot_reward);
            }
            if status == POT_READY && held == PLATE {
                a.cells[n + fwd] = POT_EMPTY;
                a.carry[s].0[0] = DISH;
                a.counters[C_SOUPS] += 1;
                return (0.0, p.soup_pickup_reward);
            }
            return (0.0, 0.0);
        }
        if !self.solid[fwd] {
            return (0.0, 0.0);
        }
        match (obj, held) {
            (GOAL, DISH) => {
                a.carry[s].0[0] = 0;
                a.counters[C_DELIVERIES] += 1;
                (p.delivery_reward, 0.0)
            }
            (COUNTER, 1..) => {
                a.cells[fwd] = held;
                a.carry[s].0[0] = 0;
                (0.0, 0.0)
            }
            (ONION_PILE | PLATE_PILE | ONION | PLATE | DISH, 0) => {
                let item = match obj {
                    ONION_PILE => ONION,
                    PLATE_PILE => PLATE,
                    loose => {
                        a.cells[fwd] = COUNTER;
                        loose
                    }
                };
                let mut shaped = 0.0;
                if item == PLATE && self.plate_pickup_useful(a, obj) {
                    shaped = p.plate_pickup_reward;
                    a.counters[C_PLATES] += 1;
                }
                a.carry[s].0[0] = item;
                (0.0, shaped)
            }
            _ => (0.0, 0.0),
        }
    }

    /// JaxMARL's plate-pickup shaping: paid when no plate lay on any counter before the pickup
    /// (so never for a plate taken from a counter) and fewer players hold plates than pots are
    /// not empty. `obj` is what the picked cell held before the pickup.
    fn plate_pickup_useful(&self, a: &ArenaMut, obj: u8) -> bool {
        if obj == PLATE {
            return false;
        }
        let n = self.width * self.height;
        let held = a.carry.iter().filter(|c| c.0[0] == PLATE).count();
        let busy = self
            .pots
            .iter()
            .filter(|&&c| a.cells[n + c as usize] != POT_EMPTY)
            .count();
        let loose_plates = self.counters.iter().any(|&c| a.cells[c as usize] == PLATE);
        held < busy && !loose_plates
    }

    /// Rewards: the delivery reward to both players plus each one's shaped reward scaled by
    /// the batch's `reward_shaping`.
    pub fn pay(&self, layout: &LayoutCore, a: &mut ArenaMut, pay: StepPay) {
        for s in 0..2 {
            a.reward[s] = StepReward(pay.sparse + layout.reward_shaping * pay.shaped[s]);
        }
    }
}
