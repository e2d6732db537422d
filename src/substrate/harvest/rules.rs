//! commons_harvest's step, in Melting Pot's updater order: moves (entering an apple's cell
//! eats it), zaps in a random priority order, respawns, apple regrowth, the random end.

use rand_core::Rng;

use super::{GROWN, Harvest, NEIGHBOUR};
use crate::components::{CELL_CHANNELS, StepReward};
use crate::layout::core::LayoutCore;
use crate::rng::{self, below};
use crate::simd::regrow::{RUN_CELLS, Rule, Run, candidates};
use crate::substrate::ArenaMut;
use crate::substrate::avatars::{self, ITEM, MAX_AVATARS, priority_order};
use crate::substrate::zap::{self, APPLE_CELL, EATEN, FIRE_ZAP};

/// Moves and turns ([`avatars::apply_moves`]); an avatar that enters an apple's cell eats it
/// ([`zap::eat_apple`]): the cell is flagged [`EATEN`] and the apple's neighbours lose one
/// standing neighbour.
pub fn apply_moves(layout: &LayoutCore, h: &Harvest, a: &mut ArenaMut) {
    a.reward.fill(StepReward(0.0));
    let reward = h.params.apple_reward;
    avatars::apply_moves(layout, a, APPLE_CELL, |a, s, i| {
        zap::eat_apple(a, s, i, reward, |a| {
            // Not to regrow this step (`regrow` clears it where the avatars stand).
            a.cells[i] |= EATEN;
            for &off in &h.disc {
                a.cells[(i as isize + off) as usize] -= NEIGHBOUR;
            }
        });
    });
}

/// Zaps, respawns, regrowth and the random episode end.
pub fn interact(layout: &LayoutCore, h: &Harvest, a: &mut ArenaMut) {
    // Where the avatars stand after moving: every cell flagged EATEN this step is one of them.
    let mut stood = [0u32; MAX_AVATARS];
    for (at, p) in stood.iter_mut().zip(&a.pos[..layout.agents]) {
        *at = layout.cell_index(p.x, p.y) as u32;
    }
    for s in priority_order(layout.agents, &mut a.rng.rules) {
        // An avatar zapped earlier in this step's order neither fires nor counts down.
        let (alive, fire) = (a.alive[s].0, a.applied[s].0 == FIRE_ZAP);
        if zap::tick_and_fire(alive, &mut a.cooldown[s].0, h.zapper.cooldown, fire) {
            zap::zap(layout, &h.zapper, a, s);
        }
    }
    zap::respawn(layout, a);
    regrow(h, a, &stood[..layout.agents]);
    zap::maybe_end(a, h.params.min_steps, h.params.end_every, h.end_threshold);
}

/// Every empty apple cell not eaten this step regrows with the probability for its number of
/// standing neighbours (the last entry for 3 or more), even under an avatar (Melting Pot's
/// `canRegrowIfOccupied`). Counts are updated after all cells have drawn. Then the step's
/// [`EATEN`] flags are cleared: they are all on cells in `stood`.
///
/// The cells that may regrow are found a run of apple cells at a time ([`AppleRun`]), as bit
/// masks (`crate::simd::regrow`: a run per vector where the CPU has AVX-512). They are not
/// drawn for one by one: one draw gives how many of them, in order, pass over the largest
/// probability (a geometric gap, from `Harvest::gaps`), and the cell after the gap regrows
/// with its own probability over the largest (`Harvest::accept`), then the next gap. Each
/// cell still regrows independently with its own probability, with about two draws a step
/// instead of one per cell.
pub fn regrow(h: &Harvest, a: &mut ArenaMut, stood: &[u32]) {
    let rule = regrowth_rule(h);
    let mut grown = [0u32; GROWN_KEPT];
    let mut n_grown = 0;
    for runs in h.apple_runs.chunks(RUNS_PER_PASS) {
        let mut masks = [0u64; RUNS_PER_PASS];
        let masks = &mut masks[..runs.len()];
        let mut left = candidates(a.cells, runs, rule, masks);
        let mut cursor = Cursor {
            masks,
            run: 0,
            bits: masks[0],
        };
        while left > 0 {
            let u = u64::from(a.rng.rules.next_u32());
            if u < h.gaps[left] {
                break; // every cell left passes
            }
            // The gap: how many of the cells left pass first (fewer than `left`).
            let gap = h.gaps[1..left].partition_point(|&t| u < t);
            left -= gap + 1;
            let (run, x) = cursor.after(gap);
            let i = runs[run].start as usize + x * CELL_CHANNELS;
            let accept = h.accept[((a.cells[i] / NEIGHBOUR) as usize).min(3)];
            if accept > u64::from(u32::MAX) || u64::from(a.rng.rules.next_u32()) < accept {
                a.cells[i + ITEM] = 1;
                a.cells[i] |= GROWN;
                if let Some(g) = grown.get_mut(n_grown) {
                    *g = i as u32;
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
    if n_grown <= GROWN_KEPT {
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
    for &i in stood {
        a.cells[i as usize] &= !EATEN;
    }
}

/// The cells that may regrow in one pass of [`regrow`], taken in order: the set bits of the
/// runs' masks.
struct Cursor<'m> {
    masks: &'m [u64],
    /// The run the next cell is in.
    run: usize,
    /// That run's cells not yet passed or taken.
    bits: u64,
}

impl Cursor<'_> {
    /// Passes `skip` cells and takes the next: its run and its place in the run. The caller
    /// knows that many cells are left.
    fn after(&mut self, mut skip: usize) -> (usize, usize) {
        loop {
            let here = self.bits.count_ones() as usize;
            if skip < here {
                break;
            }
            skip -= here;
            self.run += 1;
            self.bits = self.masks[self.run];
        }
        for _ in 0..skip {
            self.bits &= self.bits - 1;
        }
        let x = self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        (self.run, x)
    }
}

/// [`regrow`]'s tables for `probabilities` (by neighbour count) and `cells` apple cells: the
/// chance that `k` cells in a row pass over the largest probability, for `k` up to `cells`,
/// and per count the probability over the largest; all scaled to 2^32.
pub(crate) fn thinning(probabilities: [f64; 4], cells: usize) -> (Vec<u64>, [u64; 4]) {
    let largest = probabilities.into_iter().fold(0.0, f64::max);
    let gaps = (0..=cells)
        .map(|k| rng::threshold((1.0 - largest).powi(k as i32)))
        .collect();
    let accept = probabilities.map(|p| {
        if largest > 0.0 {
            rng::threshold(p / largest)
        } else {
            0
        }
    });
    (gaps, accept)
}

/// Apples [`regrow`] remembers regrowing in one step (beyond that it finds them by their
/// [`GROWN`] flag).
const GROWN_KEPT: usize = 32;
/// Runs [`regrow`] lists before drawing for them.
const RUNS_PER_PASS: usize = 16;

/// Apple cells along one map row, at most [`RUN_CELLS`] cells from the first to the last
/// (the cells between apples are not apple cells, and never draw).
pub(crate) type AppleRun = Run;

/// The runs covering `apples` (map `(x, y)`, row-major), each starting at an apple, in the
/// same order; `index` gives a cell's byte offset.
pub(crate) fn runs(
    apples: &[(usize, usize)],
    index: impl Fn(usize, usize) -> u32,
) -> Vec<AppleRun> {
    let mut out: Vec<((usize, usize), AppleRun)> = Vec::new();
    for &(x, y) in apples {
        match out.last_mut() {
            Some(((x0, y0), run)) if *y0 == y && x < *x0 + RUN_CELLS => {
                run.len = (x - *x0 + 1) as u8;
            }
            _ => out.push((
                (x, y),
                AppleRun {
                    start: index(x, y),
                    len: 1,
                },
            )),
        }
    }
    out.into_iter().map(|(_, run)| run).collect()
}

/// The cells that draw for regrowth: apple cells, not eaten this step, empty, whose neighbour
/// count may regrow (bit `count` of `regrows_with`).
fn regrowth_rule(h: &Harvest) -> Rule {
    Rule {
        all: APPLE_CELL,
        none: EATEN,
        counts: h.regrows_with,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::{Alive, GridPos};
    use crate::layout::{Layout, Rules};
    use crate::scenario::Scenario;
    use crate::substrate::ArenaState;

    /// A Harvest layout's rules.
    fn harvest(layout: &Layout) -> &Harvest {
        let Rules::Harvest(h) = &layout.rules else {
            panic!("a harvest layout")
        };
        h
    }

    /// Every empty apple regrows at once (probability 1), more of them (40) than [`regrow`]
    /// remembers in a step ([`GROWN_KEPT`]): each stands again, and every cell's neighbour count is
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
        let layout = Layout::derive(&Scenario::parse(text, "orchard.ron").unwrap());
        let h = harvest(&layout);
        assert!(h.apple_cells.len() > GROWN_KEPT);
        let mut state = ArenaState::new(&layout, vec![GridPos { x: 0, y: 5 }], vec![Alive(true)]);
        let mut a = state.view();
        for &i in &h.apple_cells {
            a.cells[i as usize + ITEM] = 0;
        }
        h.recount(&layout, &mut a);
        regrow(h, &mut a, &[]);
        assert!(
            h.apple_cells
                .iter()
                .all(|&i| a.cells[i as usize + ITEM] == 1)
        );
        let counts = |cells: &[u8]| -> Vec<u8> {
            cells
                .chunks_exact(CELL_CHANNELS)
                .map(|c| c[0] / NEIGHBOUR)
                .collect()
        };
        let after_regrowth = counts(a.cells);
        h.recount(&layout, &mut a);
        assert_eq!(after_regrowth, counts(a.cells));
        assert!(
            a.cells
                .iter()
                .step_by(CELL_CHANNELS)
                .all(|&f| f & GROWN == 0)
        );
    }

    /// Regrowth by gaps keeps every cell's own probability, and the cells independent: with
    /// every fourth apple standing (neighbour counts 0 to 3 and more), over 20,000 regrowth
    /// phases from the same cells, each empty apple regrows as often as its count's
    /// probability (within 4.5 standard errors), and two cells of the largest probability
    /// regrow together as often as the product of theirs.
    #[test]
    fn regrowth_by_gaps_gives_each_cell_its_own_probability() {
        let text = r#"Scenario(
    name: "orchard",
    substrate: CommonsHarvest((regrowth_probabilities: (0.0, 0.1, 0.2, 0.4))),
    map: ["AAAAAAAAA", "AAAAAAAAA", "AAAAAAAAA", "AAAAAAAAA", "*........"],
    roles: [(kind: player, count: 1)],
    max_steps: 100,
)"#;
        let layout = Layout::derive(&Scenario::parse(text, "orchard.ron").unwrap());
        let h = harvest(&layout);
        let p = [0.0, 0.1, 0.2, 0.4];
        let mut state = ArenaState::new(&layout, vec![GridPos { x: 0, y: 4 }], vec![Alive(true)]);
        let mut a = state.view();
        for (k, &i) in h.apple_cells.iter().enumerate() {
            a.cells[i as usize + ITEM] = u8::from(k % 4 == 0);
        }
        h.recount(&layout, &mut a);
        let start = a.cells.to_vec();
        let empty: Vec<usize> = (h.apple_cells.iter().map(|&i| i as usize))
            .filter(|&i| start[i + ITEM] == 0)
            .collect();
        let probability = |i: usize| p[((start[i] / NEIGHBOUR) as usize).min(3)];
        let classes: Vec<f64> = empty.iter().map(|&i| probability(i)).collect();
        assert!([0.0, 0.1, 0.2, 0.4].iter().all(|q| classes.contains(q)));
        let trials = 20_000;
        let mut grew = vec![0u32; empty.len()];
        let top: Vec<usize> = (0..empty.len()).filter(|&k| classes[k] == 0.4).collect();
        let mut both = 0u32;
        for _ in 0..trials {
            a.cells.copy_from_slice(&start);
            regrow(h, &mut a, &[]);
            for (g, &i) in grew.iter_mut().zip(&empty) {
                *g += u32::from(a.cells[i + ITEM]);
            }
            both += u32::from(a.cells[empty[top[0]] + ITEM] & a.cells[empty[top[1]] + ITEM]);
        }
        let z = |hits: u32, q: f64| {
            let n = trials as f64;
            (hits as f64 - n * q) / (n * q * (1.0 - q)).sqrt().max(1e-9)
        };
        for (k, &hits) in grew.iter().enumerate() {
            let q = classes[k];
            assert!(
                z(hits, q).abs() < 4.5,
                "cell {k} (probability {q}) regrew {hits} times in {trials}"
            );
        }
        assert!(z(both, 0.16).abs() < 4.5, "{both} joint regrowths");
    }

    /// An avatar steps onto the only apple (every regrowth probability 1): it eats it, the
    /// apple does not regrow in the same step, no cell keeps the step's EATEN flag, and the
    /// apple is back the step after.
    #[test]
    fn an_eaten_apple_regrows_from_the_next_step_on() {
        let text = r#"Scenario(
    name: "one apple",
    substrate: CommonsHarvest((regrowth_probabilities: (1.0, 1.0, 1.0, 1.0))),
    map: ["*A."],
    roles: [(kind: player, count: 1)],
    max_steps: 100,
)"#;
        let layout = Layout::derive(&Scenario::parse(text, "one_apple.ron").unwrap());
        let apple = harvest(&layout).apple_cells[0] as usize;
        let mut state = ArenaState::new(&layout, vec![GridPos { x: 0, y: 0 }], vec![Alive(true)]);
        state.facing[0] = crate::components::Facing(1);
        let step = |state: &mut ArenaState, action: u8| {
            crate::substrate::transition(
                &layout,
                state,
                &[crate::components::AppliedAction(action)],
            )
        };
        step(&mut state, avatars::moves::FORWARD);
        assert_eq!(state.pos[0], GridPos { x: 1, y: 0 });
        assert_eq!(state.counters[zap::COUNTERS.eaten], 1);
        assert_eq!(
            state.cells[apple + ITEM],
            0,
            "regrew in the step it was eaten"
        );
        assert!(
            state
                .cells
                .iter()
                .step_by(CELL_CHANNELS)
                .all(|&f| f & EATEN == 0)
        );
        step(&mut state, avatars::moves::NOOP);
        assert_eq!(
            state.cells[apple + ITEM],
            1,
            "did not regrow the step after"
        );
        assert_eq!(
            state.counters[zap::COUNTERS.eaten],
            1,
            "standing on it does not eat it"
        );
    }

    proptest::proptest! {
        /// The runs hold every apple cell once, in the apple cells' order, and nothing else
        /// that is an apple; each starts at an apple, stays in one row and spans at most
        /// RUN_CELLS cells.
        #[test]
        fn runs_cover_every_apple_in_order(
            tiles in proptest::collection::btree_set((0usize..9, 0usize..60), 1..120),
        ) {
            let apples: Vec<(usize, usize)> = tiles.iter().map(|&(y, x)| (x, y)).collect();
            let index = |x: usize, y: usize| ((y * 64 + x) * CELL_CHANNELS) as u32;
            let runs = runs(&apples, index);
            let mut covered = Vec::new();
            for run in &runs {
                proptest::prop_assert!((1..=RUN_CELLS).contains(&(run.len as usize)));
                let (start, row) = (run.start / CELL_CHANNELS as u32, run.start / 192);
                proptest::prop_assert!(apples.contains(&((start % 64) as usize, row as usize)));
                for x in 0..run.len as u32 {
                    let cell = ((start % 64 + x) as usize, row as usize);
                    proptest::prop_assert!((start % 64 + x) < 64);
                    if apples.contains(&cell) {
                        covered.push(cell);
                    }
                }
            }
            proptest::prop_assert_eq!(covered, apples);
        }
    }
}
