//! commons_harvest's baseline: step toward the nearest visible apple with at least [`KEEP`] = 3
//! others standing within the regrowth radius (2), and never eat (or step onto) an apple with
//! fewer: the last apples of a patch are what let it regrow, fastest with 3 or more nearby. A
//! random move or turn when no such apple is visible. It never zaps. Also the window reading clean_up's baseline shares.

use rand_chacha::ChaCha8Rng;

use super::{Decide, Nearest, draw, step_toward};
use crate::scenario::{Scenario, Window};
use crate::substrate::avatars::AVATAR_CELL_BYTES;
use crate::substrate::avatars::moves::{BACKWARD, FORWARD, STEP_LEFT, STEP_RIGHT, TURN_LEFT};

/// The display name.
pub(super) const NAME: &str = "nearest apple of a dense patch, never the last ones";

/// An apple is eaten only with at least this many others within the regrowth radius.
pub(super) const KEEP: usize = 3;

/// A facing-rotated window read in (ahead, lateral) coordinates: lateral grows to the right.
#[derive(Clone, Copy)]
pub(super) struct View {
    pub(super) window: Window,
}

impl View {
    /// The scenario's window.
    pub(super) fn new(scenario: &Scenario) -> View {
        View {
            window: scenario.observation.window.unwrap_or(Window::MELTING_POT),
        }
    }

    /// Bytes of the window block.
    pub(super) fn bytes(self) -> usize {
        self.window.width() * self.window.depth() * AVATAR_CELL_BYTES
    }

    /// The cell `ahead` cells ahead and `lateral` to the right, if inside the window.
    pub(super) fn cell(self, obs: &[u8], ahead: i32, lateral: i32) -> Option<&[u8]> {
        let w = self.window;
        let row = w.ahead as i32 - ahead;
        let col = lateral + w.left as i32;
        if !(0..w.depth() as i32).contains(&row) || !(0..w.width() as i32).contains(&col) {
            return None;
        }
        let i = (row as usize * w.width() + col as usize) * AVATAR_CELL_BYTES;
        obs.get(i..i + AVATAR_CELL_BYTES)
    }

    /// The item byte at (ahead, lateral); 0 outside the window.
    pub(super) fn item(self, obs: &[u8], ahead: i32, lateral: i32) -> u8 {
        self.cell(obs, ahead, lateral).map_or(0, |c| c[1])
    }

    /// Every window cell as (ahead, lateral) but the agent's own.
    pub(super) fn cells(self) -> impl Iterator<Item = (i32, i32)> {
        let w = self.window;
        (0..w.depth() as i32)
            .flat_map(move |row| (0..w.width() as i32).map(move |col| (row, col)))
            .map(move |(row, col)| (w.ahead as i32 - row, col - w.left as i32))
            .filter(|&c| c != (0, 0))
    }

    /// The step toward (ahead, lateral), around walls, avatars and the cells `avoid` names;
    /// a random move or turn that enters none of them when both axes are blocked.
    pub(super) fn step_to(
        self,
        obs: &[u8],
        target: (i32, i32),
        rng: &mut ChaCha8Rng,
        avoid: impl Fn(i32, i32) -> bool,
    ) -> u8 {
        let steps = [STEP_LEFT, STEP_RIGHT, FORWARD, BACKWARD];
        let blocked = |action: u8| self.blocked(obs, action, &avoid);
        step_toward(target.1, -target.0, steps, rng, blocked)
            .unwrap_or_else(|| self.wander(obs, rng, &avoid))
    }

    /// Whether move `action` (forward, backward, step left or right) is blocked by a wall, an
    /// avatar or a cell `avoid` names.
    fn blocked(self, obs: &[u8], action: u8, avoid: impl Fn(i32, i32) -> bool) -> bool {
        let (a, l) = match action {
            FORWARD => (1, 0),
            BACKWARD => (-1, 0),
            STEP_LEFT => (0, -1),
            _ => (0, 1),
        };
        let open = self.cell(obs, a, l).is_some_and(|c| c[0] == 0 && c[2] == 0);
        !open || avoid(a, l)
    }

    /// A random move or turn (actions 1-6); a move into a cell `avoid` names turns instead.
    pub(super) fn wander(
        self,
        obs: &[u8],
        rng: &mut ChaCha8Rng,
        avoid: impl Fn(i32, i32) -> bool,
    ) -> u8 {
        let a = 1 + draw(rng, 6) as u8;
        if a <= STEP_RIGHT && self.blocked(obs, a, &avoid) {
            TURN_LEFT + draw(rng, 2) as u8
        } else {
            a
        }
    }

    /// The nearest cell (Manhattan distance) whose item byte is `item` and `keep` accepts.
    pub(super) fn nearest(
        self,
        obs: &[u8],
        item: u8,
        rng: &mut ChaCha8Rng,
        keep: impl Fn(i32, i32) -> bool,
    ) -> Option<(i32, i32)> {
        let mut nearest = Nearest::new();
        for (a, l) in self.cells() {
            if self.item(obs, a, l) == item && keep(a, l) {
                nearest.offer((a.abs() + l.abs()) as u32, (a, l), rng);
            }
        }
        nearest.get()
    }
}

/// commons_harvest's heuristic for a scenario's window.
pub(super) struct SparePatches {
    view: View,
}

impl SparePatches {
    /// Reads the window from `scenario`.
    pub(super) fn new(scenario: &Scenario) -> SparePatches {
        SparePatches {
            view: View::new(scenario),
        }
    }
}

impl Decide for SparePatches {
    fn decide(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        let v = self.view;
        // Enough apples left within the regrowth radius (2) keep the patch growing back.
        let has_neighbour = |a: i32, l: i32| {
            (-2..=2_i32)
                .flat_map(|da| (-2..=2_i32).map(move |dl| (da, dl)))
                .filter(|&(da, dl)| (da, dl) != (0, 0) && da * da + dl * dl <= 4)
                .filter(|&(da, dl)| v.item(obs, a + da, l + dl) != 0)
                .count()
                >= KEEP
        };
        // Never walk over a lone apple: entering its cell would eat it.
        let lone = |a: i32, l: i32| v.item(obs, a, l) != 0 && !has_neighbour(a, l);
        match v.nearest(obs, 1, rng, has_neighbour) {
            Some(target) => v.step_to(obs, target, rng, lone),
            None => v.wander(obs, rng, lone),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};

    const W: Window = Window::MELTING_POT;

    /// A Melting Pot window with `items` (ahead, lateral, item) and `walls`, then `extras`.
    pub(in crate::policy::heuristic) fn obs(
        items: &[(i32, i32, u8)],
        walls: &[(i32, i32)],
        extras: &[u8],
    ) -> Vec<u8> {
        let mut o = vec![0u8; W.width() * W.depth() * AVATAR_CELL_BYTES];
        let at = |a: i32, l: i32| {
            ((W.ahead as i32 - a) as usize * W.width() + (l + W.left as i32) as usize)
                * AVATAR_CELL_BYTES
        };
        for &(a, l, item) in items {
            o[at(a, l) + 1] = item;
        }
        for &(a, l) in walls {
            o[at(a, l)] = 1;
        }
        o.extend_from_slice(extras);
        o
    }

    /// A plus-shaped patch of five apples centred at (ahead, lateral): the centre has four
    /// neighbours, each arm three (within radius 2).
    fn patch(a: i32, l: i32) -> Vec<(i32, i32, u8)> {
        [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)]
            .iter()
            .map(|&(da, dl)| (a + da, l + dl, 1))
            .collect()
    }

    #[test]
    fn it_walks_to_the_nearest_apple_of_a_dense_patch_and_spares_the_last_ones() {
        let h = SparePatches {
            view: View { window: W },
        };
        let mut rng = stream(2, 0, Purpose::Policy);
        // A patch ahead: forward to its nearest arm, two ahead.
        assert_eq!(
            h.decide(&obs(&patch(3, 0), &[], &[1, 1]), &mut rng),
            FORWARD
        );
        // A pair beside the agent (one neighbour each) is spared for the patch to the right.
        let mut items = patch(0, 4);
        items.extend([(0, -1, 1), (1, -1, 1)]);
        assert_eq!(h.decide(&obs(&items, &[], &[1, 1]), &mut rng), STEP_RIGHT);
        // A row of five just behind: backward onto its middle.
        let row: Vec<_> = (-2..=2).map(|l| (-1, l, 1)).collect();
        assert_eq!(h.decide(&obs(&row, &[], &[1, 1]), &mut rng), BACKWARD);
        // A wall ahead: step right first.
        let walled = obs(&patch(4, 2), &[(1, 0)], &[1, 1]);
        assert_eq!(h.decide(&walled, &mut rng), STEP_RIGHT);
        // A spared apple ahead blocks the way like a wall.
        let mut items = patch(4, 2);
        items.push((1, 0, 1));
        assert_eq!(h.decide(&obs(&items, &[], &[1, 1]), &mut rng), STEP_RIGHT);
        // Only sparse apples: a move or a turn, never a zap, never onto the apple beside.
        for _ in 0..100 {
            let sparse = obs(&[(1, 0, 1), (2, 0, 1), (0, 3, 1)], &[], &[1, 1]);
            let a = h.decide(&sparse, &mut rng);
            assert!((1..=6).contains(&a) && a != FORWARD, "{a}");
        }
    }
}
