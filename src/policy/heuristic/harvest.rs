//! commons_harvest's baseline: step toward the nearest visible apple that has another apple
//! beside it, leaving every apple with no visible neighbour standing (the last apple of a
//! patch is what lets it regrow); a random move or turn when no such apple is visible. It
//! never zaps. Also the window reading clean_up's baseline shares.

use rand_chacha::ChaCha8Rng;

use super::{Decide, Nearest, draw, step_toward};
use crate::scenario::{Scenario, Window};
use crate::substrate::avatars::AVATAR_CELL_BYTES;
use crate::substrate::avatars::moves::{BACKWARD, FORWARD, STEP_LEFT, STEP_RIGHT};

/// The display name.
pub(super) const NAME: &str = "nearest apple, never the last of a patch";

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

    /// The step toward (ahead, lateral), around walls and avatars; a random move or turn
    /// when both axes are blocked.
    pub(super) fn step_to(self, obs: &[u8], target: (i32, i32), rng: &mut ChaCha8Rng) -> u8 {
        let free = |a: i32, l: i32| self.cell(obs, a, l).is_some_and(|c| c[0] == 0 && c[2] == 0);
        let blocked = |action: u8| match action {
            FORWARD => !free(1, 0),
            BACKWARD => !free(-1, 0),
            STEP_LEFT => !free(0, -1),
            _ => !free(0, 1),
        };
        let steps = [STEP_LEFT, STEP_RIGHT, FORWARD, BACKWARD];
        step_toward(target.1, -target.0, steps, rng, blocked).unwrap_or_else(|| wander(rng))
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

/// A random move or turn (actions 1-6).
pub(super) fn wander(rng: &mut ChaCha8Rng) -> u8 {
    1 + draw(rng, 6) as u8
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
        let has_neighbour = |a: i32, l: i32| {
            [(1, 0), (-1, 0), (0, 1), (0, -1)]
                .iter()
                .any(|&(da, dl)| v.item(obs, a + da, l + dl) != 0)
        };
        match v.nearest(obs, 1, rng, has_neighbour) {
            Some(target) => v.step_to(obs, target, rng),
            None => wander(rng),
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

    #[test]
    fn it_walks_to_the_nearest_apple_of_a_patch_and_spares_lone_apples() {
        let h = SparePatches {
            view: View { window: W },
        };
        let mut rng = stream(2, 0, Purpose::Policy);
        // A pair three ahead: forward.
        let pair = obs(&[(3, 0, 1), (4, 0, 1)], &[], &[1, 1]);
        assert_eq!(h.decide(&pair, &mut rng), FORWARD);
        // A lone apple beside the agent is spared for the pair two to the right.
        let lone = obs(&[(0, -1, 1), (0, 2, 1), (1, 2, 1)], &[], &[1, 1]);
        assert_eq!(h.decide(&lone, &mut rng), STEP_RIGHT);
        // Behind: backward.
        let behind = obs(&[(-1, 0, 1), (-1, 1, 1)], &[], &[1, 1]);
        assert_eq!(h.decide(&behind, &mut rng), BACKWARD);
        // A wall ahead: step right first.
        let walled = obs(&[(3, 1, 1), (3, 2, 1)], &[(1, 0)], &[1, 1]);
        assert_eq!(h.decide(&walled, &mut rng), STEP_RIGHT);
        // Only lone apples: a move or a turn, never a zap.
        for _ in 0..50 {
            let a = h.decide(&obs(&[(2, 0, 1), (0, 3, 1)], &[], &[1, 1]), &mut rng);
            assert!((1..=6).contains(&a), "{a}");
        }
    }
}
