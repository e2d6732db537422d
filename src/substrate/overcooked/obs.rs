//! Overcooked's observation: JaxMARL's 26-channel layered view of the whole kitchen, row-major
//! `[row, column, channel]` exactly as JaxMARL's `get_obs` array (height x width x 26), the
//! observing player's own layers first.

use super::Overcooked;
use super::rules::{
    COUNTER, DISH, GOAL, ONION, ONION_PILE, PLATE, PLATE_PILE, POT, POT_FULL, jax_dir,
};
use crate::layout::core::LayoutCore;
use crate::scenario::observation::ObsField;
use crate::substrate::ArenaMut;

/// Channels per cell.
pub const CHANNELS: usize = 26;
/// Steps before the end from which the urgency layer is on (JaxMARL's `URGENCY_CUTOFF`).
pub const URGENCY_CUTOFF: u32 = 40;

/// Channel names in order (JaxMARL's `get_obs` docstring).
pub const CHANNEL_NAMES: [&str; CHANNELS] = [
    "me",
    "other player",
    "my facing north",
    "my facing south",
    "my facing east",
    "my facing west",
    "other facing north",
    "other facing south",
    "other facing east",
    "other facing west",
    "pot",
    "empty counter",
    "onion pile",
    "tomato pile (always 0)",
    "plate pile",
    "serving cell",
    "onions in pot (not cooking)",
    "tomatoes in pot (always 0)",
    "onions in soup (cooking, ready or plated)",
    "tomatoes in soup (always 0)",
    "cooking time left",
    "soup ready (pot or plated)",
    "plate",
    "onion",
    "tomato (always 0)",
    "urgency (last 40 steps)",
];

/// Largest value per channel.
pub const CHANNEL_MAX: [u8; CHANNELS] = [
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 3, 0, 3, 0, 19, 1, 1, 1, 0, 1,
];

const CH_POT: usize = 10;
const CH_COUNTER: usize = 11;
const CH_ONION_PILE: usize = 12;
const CH_PLATE_PILE: usize = 14;
const CH_GOAL: usize = 15;
const CH_ONIONS_IN_POT: usize = 16;
const CH_ONIONS_IN_SOUP: usize = 18;
const CH_COOK_TIME: usize = 20;
const CH_SOUP_READY: usize = 21;
const CH_PLATE: usize = 22;
const CH_ONION: usize = 23;
const CH_URGENCY: usize = 25;

/// The observation layout: one `[row, column, channel]` block.
pub fn layout(rows: usize, columns: usize) -> Vec<ObsField> {
    vec![
        ObsField::new(
            "kitchen",
            &[("row", rows), ("column", columns), ("channel", CHANNELS)],
            19,
            "JaxMARL overcooked's 26 layers of the whole map, row-major; the observer's own \
             position and facing layers first",
        )
        .entries(&CHANNEL_NAMES)
        .entry_max(CHANNEL_MAX.to_vec()),
    ]
}

/// The layers that never change (pots, every counter as empty, piles, serving cells), the
/// start of every observation.
pub fn static_template(objects: &[u8]) -> Vec<u8> {
    let mut t = vec![0u8; objects.len() * CHANNELS];
    for (c, &o) in objects.iter().enumerate() {
        let ch = match o {
            POT => CH_POT,
            COUNTER => CH_COUNTER,
            ONION_PILE => CH_ONION_PILE,
            PLATE_PILE => CH_PLATE_PILE,
            GOAL => CH_GOAL,
            _ => continue,
        };
        t[c * CHANNELS + ch] = 1;
    }
    t
}

impl Overcooked {
    /// Writes learner 0's observation from the static template, the items on counters, the
    /// pots, urgency and the players, then learner 1's as a copy with the player layers
    /// swapped.
    pub fn observe(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        let n = self.width * self.height;
        let len = n * CHANNELS;
        if layout.learners == 0 || a.obs.len() < len {
            return;
        }
        let (first, rest) = a.obs.split_at_mut(len);
        first.copy_from_slice(&self.obs_template);
        let (objects, status) = a.cells.split_at(n);
        for &c in &self.counters {
            let b = c as usize * CHANNELS;
            match objects[c as usize] {
                COUNTER => {}
                ONION => {
                    first[b + CH_COUNTER] = 0;
                    first[b + CH_ONION] = 1;
                }
                PLATE => {
                    first[b + CH_COUNTER] = 0;
                    first[b + CH_PLATE] = 1;
                }
                DISH => {
                    first[b + CH_COUNTER] = 0;
                    first[b + CH_ONIONS_IN_SOUP] = 3;
                    first[b + CH_SOUP_READY] = 1;
                }
                _ => first[b + CH_COUNTER] = 0,
            }
        }
        for &c in &self.pots {
            let b = c as usize * CHANNELS;
            let st = status[c as usize];
            if st >= POT_FULL {
                first[b + CH_ONIONS_IN_POT] = (23u8.saturating_sub(st)).min(3);
            } else {
                first[b + CH_ONIONS_IN_SOUP] = 3;
                first[b + CH_COOK_TIME] = st;
                first[b + CH_SOUP_READY] = u8::from(st == 0);
            }
        }
        if layout.max_steps < a.clock.t + URGENCY_CUTOFF {
            for cell in first.chunks_exact_mut(CHANNELS) {
                cell[CH_URGENCY] = 1;
            }
        }
        let mut at = [0usize; 2];
        for s in 0..2 {
            let b = (a.pos[s].y as usize * self.width + a.pos[s].x as usize) * CHANNELS;
            at[s] = b;
            first[b + s] = 1;
            first[b + 2 + 4 * s + jax_dir(a.facing[s].0) as usize] = 1;
            match a.carry[s].0[0] {
                ONION => first[b + CH_ONION] = 1,
                PLATE => first[b + CH_PLATE] = 1,
                DISH => {
                    first[b + CH_ONIONS_IN_SOUP] = 3;
                    first[b + CH_SOUP_READY] = 1;
                }
                _ => {}
            }
        }
        if layout.learners > 1 && rest.len() >= len {
            let second = &mut rest[..len];
            second.copy_from_slice(first);
            for b in at {
                second.swap(b, b + 1);
                for k in 0..4 {
                    second.swap(b + 2 + k, b + 6 + k);
                }
            }
        }
    }
}
