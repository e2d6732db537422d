//! What Melting Pot's apple substrates (commons_harvest, clean_up) share on top of
//! [`avatars`](super::avatars): apples eaten by walking onto them, the zapping beam that removes
//! the avatar it hits for a while, respawning on a spawn point, and the whole-map global state.
//!
//! Cell layer (as in [`avatars`](super::avatars)): flags ([`WALL`], [`APPLE_CELL`], [`EATEN`]
//! and the substrate's own bits), the item byte (1: an apple stands there) and the avatar byte.
//! Per avatar: `Cooldown` is the zap timer (Melting Pot's `coolingTimer`), `Carry[0]` the
//! steps left before a removed avatar respawns, `Carry[1]` the cleaning timer (clean_up).
//! Both timers run through [`tick_and_fire`], both beams are cast by [`Beam::cast`].

use rand_core::Rng;

use super::ArenaMut;
use super::avatars::{AVATAR, DIRS, ITEM, WALL};
use crate::components::{Facing, GridPos, StepReward};
use crate::layout::core::LayoutCore;
use crate::rng::below;
use crate::scenario::observation::ObsField;

/// Flag: a cell where an apple grows (the map's apple symbol).
pub const APPLE_CELL: u8 = super::avatars::TOKEN_CELL;
/// Flag: the apple here was eaten this step (it cannot regrow in the same step, as in Melting
/// Pot where the eaten apple joins a regrowth group only at its next update).
pub const EATEN: u8 = super::avatars::USED;

/// Index of the respawn timer in `Carry`.
pub const RESPAWN: usize = 0;
/// Index of the cleaning-beam timer in `Carry` (clean_up).
pub const CLEAN_TIMER: usize = 1;

/// Action index of the zapping beam in both substrates (Melting Pot's `FIRE_ZAP`).
pub const FIRE_ZAP: u8 = 7;

/// A beam as Melting Pot's `hitBeam(length, radius)` casts it: one lane per lateral offset
/// `x` in `-radius..=radius`, each a ray forward along the facing. The centre lane covers the
/// `length` cells ahead of the avatar; the lane `x` to the side starts at the cell beside the
/// avatar and covers `length - |x| + 1` cells, that one included (a 3 x 3 square ahead of and
/// beside the avatar, less its own cell and the far corners, for length 3 and radius 1).
/// Each ray stops at a wall and at the first cell its `hit` accepts. Checked against
/// dm-meltingpot 2.4.1 for length 3 and radius 1 (the cells a cleaning beam cleans when the
/// pollution lies beside, diagonally ahead, two or three ahead; one polluted cell per lane and
/// shot); lanes beyond radius 1 follow the same rule by extrapolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Beam {
    /// Cells ahead of the centre ray.
    pub length: u8,
    /// Cells to either side.
    pub radius: u8,
}

impl Beam {
    /// Casts the beam of avatar `s` from its cell along its facing. `hit(a, i)` is called for
    /// every non-wall cell (byte index `i` into the cell layer) the rays reach, nearest first;
    /// returning true stops that ray.
    pub fn cast(
        self,
        layout: &LayoutCore,
        a: &mut ArenaMut,
        s: usize,
        mut hit: impl FnMut(&mut ArenaMut, usize) -> bool,
    ) {
        let f = a.facing[s].0 as usize;
        let (fx, fy) = DIRS[f];
        let (rx, ry) = DIRS[(f + 1) % 4];
        let p = a.pos[s];
        let (r, l) = (self.radius as i16, self.length as i16);
        for x in -r..=r {
            // The centre lane starts one ahead (the avatar's own cell is not hit).
            let first = i16::from(x == 0);
            for k in first..=l - x.abs() {
                let (cx, cy) = (p.x + x * rx + k * fx, p.y + x * ry + k * fy);
                let i = layout.cell_index(cx, cy);
                if a.cells[i] & WALL != 0 || hit(a, i) {
                    break;
                }
            }
        }
    }
}

/// The zapping beam's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zapper {
    /// The beam's shape.
    pub beam: Beam,
    /// Steps the zap timer waits after a shot (Melting Pot's `cooldownTime`).
    pub cooldown: u8,
    /// Steps a zapped avatar stays out before it respawns (`framesTillRespawn`).
    pub respawn_frames: u8,
}

/// Counter slots the shared rules increment.
#[derive(Debug, Clone, Copy)]
pub struct Counters {
    /// Apples eaten.
    pub eaten: usize,
    /// Zaps fired.
    pub fired: usize,
    /// Avatars hit by a zap.
    pub landed: usize,
    /// Sum over eaten apples of the step (1-based) at which they were eaten.
    pub time_sum: usize,
}

/// The counters both substrates report, in [`Counters`] order.
pub const COUNTER_NAMES: [&str; 4] = [
    "apples_eaten",
    "zaps_fired",
    "zaps_landed",
    "reward_time_sum",
];

/// The counter slots of [`COUNTER_NAMES`].
pub const COUNTERS: Counters = Counters {
    eaten: 0,
    fired: 1,
    landed: 2,
    time_sum: 3,
};

/// Avatar `s` has just entered the cell at byte `i` of the cell layer: if an apple stands
/// there, it eats it (Melting Pot's `Edible.onEnter`): `reward` for the eater, the apple gone,
/// and `eaten(a)` runs for the substrate's bookkeeping (Harvest: neighbour counts and the
/// [`EATEN`] flag). An apple that regrew under a standing avatar is only eaten by the next
/// avatar to enter.
pub fn eat_apple(
    a: &mut ArenaMut,
    s: usize,
    i: usize,
    reward: f32,
    eaten: impl FnOnce(&mut ArenaMut),
) {
    if a.cells[i] & APPLE_CELL != 0 && a.cells[i + ITEM] != 0 {
        a.cells[i + ITEM] = 0;
        a.reward[s] = StepReward(a.reward[s].0 + reward);
        a.counters[COUNTERS.eaten] += 1;
        a.counters[COUNTERS.time_sum] += a.clock.t + 1;
        eaten(a);
    }
}

/// A beam timer for this step, as Melting Pot's `Zapper` updater: a running timer counts down
/// (and the avatar cannot fire this step); at 0 `fire` fires the beam and restarts it at
/// `cooldown`. An avatar out of play (not `alive`) neither counts down nor fires. Returns
/// whether the avatar fired. Without a branch: actions and zaps are random, so any branch on
/// them mispredicts.
pub fn tick_and_fire(alive: bool, timer: &mut u8, cooldown: u8, fire: bool) -> bool {
    use std::hint::select_unpredictable as select;
    let t = *timer;
    let running = t > 0;
    let fires = alive & !running & fire;
    let ticked = select(running, t.wrapping_sub(1), select(fires, cooldown, 0));
    *timer = select(alive, ticked, t);
    fires
}

/// Fires avatar `s`'s zapping beam: every avatar it reaches first on a ray leaves the arena for
/// `respawn_frames` steps.
pub fn zap(layout: &LayoutCore, z: &Zapper, a: &mut ArenaMut, s: usize) {
    a.counters[COUNTERS.fired] += 1;
    z.beam.cast(layout, a, s, |a, i| {
        let other = a.cells[i + AVATAR];
        if other == 0 {
            return false;
        }
        let t = other as usize - 1;
        a.cells[i + AVATAR] = 0;
        a.alive[t].0 = false;
        // +1: the respawn phase of this same step counts the first frame down.
        a.carry[t].0[RESPAWN] = z.respawn_frames.saturating_add(1);
        a.counters[COUNTERS.landed] += 1;
        true
    });
}

/// Counts down removed avatars and respawns those whose time is up on a random free cell of
/// the players' spawn deck, with a random facing (Melting Pot's `teleportToGroup`). With no
/// free spawn cell the avatar waits another step.
pub fn respawn(layout: &LayoutCore, a: &mut ArenaMut) {
    let Some(group) = layout.spawn_groups.first() else {
        return;
    };
    let deck = &layout.deck_template[group.deck.clone()];
    let deck_cells = &layout.deck_cells[group.deck.clone()];
    for s in 0..layout.agents {
        // Counted down without a branch (who is out is random); the one branch is the rare
        // respawn.
        let timer = &mut a.carry[s].0[RESPAWN];
        let waiting = !a.alive[s].0 & (*timer > 0);
        *timer -= u8::from(waiting);
        if !(waiting & (*timer == 0)) {
            continue;
        }
        let free_at = |a: &ArenaMut, i: u32| a.cells[i as usize + AVATAR] == 0;
        let free = deck_cells.iter().filter(|&&i| free_at(a, i)).count();
        if free == 0 {
            a.carry[s].0[RESPAWN] = 1;
            continue;
        }
        let pick = below(a.rng.rules.next_u32(), free as u32) as usize;
        let k = (0..deck.len())
            .filter(|&k| free_at(a, deck_cells[k]))
            .nth(pick)
            .expect("pick < free");
        let (c, i) = (deck[k] as usize, deck_cells[k] as usize);
        let (x, y) = ((c % layout.width) as i16, (c / layout.width) as i16);
        a.pos[s] = GridPos { x, y };
        a.facing[s] = Facing(below(a.rng.rules.next_u32(), 4) as u8);
        a.alive[s].0 = true;
        a.cells[i + AVATAR] = s as u8 + 1;
    }
}

/// The random episode end of Melting Pot's `StochasticIntervalEpisodeEnding`: from `min_steps`
/// on, every `every` steps the episode ends with probability `threshold / 2^32`.
pub fn maybe_end(a: &mut ArenaMut, min_steps: u32, every: u32, threshold: u64) {
    let t = a.clock.t + 1;
    if t >= min_steps
        && every > 0
        && t.is_multiple_of(every)
        && (a.rng.rules.next_u32() as u64) < threshold
    {
        *a.ended = true;
    }
}

/// Bytes per map cell of the global state: wall, apple, avatar, pollution.
pub const GLOBAL_CELL_BYTES: usize = 4;

/// The whole-map global state layout, the same in every arena.
pub fn global_state_layout(width: usize, height: usize, pollution: &str) -> Vec<ObsField> {
    vec![
        ObsField::new(
            "map",
            &[
                ("row", height),
                ("column", width),
                ("byte", GLOBAL_CELL_BYTES),
            ],
            1,
            "the whole map, row-major from the top-left: wall, apple, avatar present, \
             and the substrate's pollution (clean_up's dirt; 0 in commons_harvest)",
        )
        .entries(&["wall", "apple", "avatar", pollution]),
    ]
}

/// Writes the whole-map global state; `dirt(flags, item)` says whether a cell is polluted.
pub fn write_global_state(
    layout: &LayoutCore,
    a: &ArenaMut,
    state: &mut [u8],
    dirt: impl Fn(u8, u8) -> bool,
) {
    let cells = state.chunks_exact_mut(GLOBAL_CELL_BYTES);
    for (k, out) in cells.enumerate().take(layout.width * layout.height) {
        let (x, y) = ((k % layout.width) as i16, (k / layout.width) as i16);
        let i = layout.cell_index(x, y);
        let flags = a.cells[i];
        out[0] = flags & WALL;
        out[1] = u8::from(flags & APPLE_CELL != 0 && a.cells[i + ITEM] != 0);
        out[2] = u8::from(a.cells[i + AVATAR] != 0);
        out[3] = u8::from(dirt(flags, a.cells[i + ITEM]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zap_timer_fires_at_most_every_cooldown_plus_one_steps() {
        let mut timer = 0;
        let fired: Vec<bool> = (0..7)
            .map(|_| tick_and_fire(true, &mut timer, 2, true))
            .collect();
        assert_eq!(fired, [true, false, false, true, false, false, true]);
    }

    proptest::proptest! {
        /// For every timer, cooldown and action, alive or not, the timer and the shot are the
        /// updater's: out of play nothing changes; running it counts down; at 0 a shot
        /// restarts it.
        #[test]
        fn the_timer_is_the_zapper_updater(
            alive: bool,
            timer in proptest::prop_oneof![0u8..3, proptest::prelude::any::<u8>()],
            cooldown: u8,
            fire: bool,
        ) {
            let (expected_timer, expected_fired) = if !alive {
                (timer, false)
            } else if timer > 0 {
                (timer - 1, false)
            } else if fire {
                (cooldown, true)
            } else {
                (0, false)
            };
            let mut t = timer;
            proptest::prop_assert_eq!(tick_and_fire(alive, &mut t, cooldown, fire), expected_fired);
            proptest::prop_assert_eq!(t, expected_timer);
        }
    }
}
