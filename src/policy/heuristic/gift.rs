//! gift_refinements' baseline: consume whenever the inventory holds a token; otherwise step
//! toward the nearest visible token (the facing-rotated window `[depth, width, 7]`, then the
//! inventory levels 1-3 and a ready flag), the longer axis first, around walls and avatars;
//! a random move or turn when no token is visible. It never gifts: the selfish baseline that
//! a learner which discovers refinement should beat.

use rand_chacha::ChaCha8Rng;

use super::{Decide, Nearest, draw, step_toward};
use crate::scenario::{Scenario, Window};
use crate::substrate::avatars::AVATAR_CELL_BYTES;
use crate::substrate::gift::CONSUME;

/// The display name.
pub(super) const NAME: &str = "consume, else nearest token";

use crate::substrate::avatars::moves::{BACKWARD, FORWARD, STEP_LEFT, STEP_RIGHT};

/// gift_refinements' heuristic for a scenario's window.
pub(super) struct ConsumeOrCollect {
    window: Window,
}

impl ConsumeOrCollect {
    /// Reads the window from `scenario`.
    pub(super) fn new(scenario: &Scenario) -> ConsumeOrCollect {
        ConsumeOrCollect {
            window: scenario.observation.window.unwrap_or(Window::MELTING_POT),
        }
    }

    /// The window cell `ahead` cells ahead and `lateral` to the right (negative: left), if
    /// inside the window.
    fn cell<'a>(&self, obs: &'a [u8], ahead: i32, lateral: i32) -> Option<&'a [u8]> {
        let w = self.window;
        let row = w.ahead as i32 - ahead;
        let col = lateral + w.left as i32;
        if !(0..w.depth() as i32).contains(&row) || !(0..w.width() as i32).contains(&col) {
            return None;
        }
        let i = (row as usize * w.width() + col as usize) * AVATAR_CELL_BYTES;
        obs.get(i..i + AVATAR_CELL_BYTES)
    }
}

impl Decide for ConsumeOrCollect {
    fn decide(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        let w = self.window;
        let window_bytes = w.width() * w.depth() * AVATAR_CELL_BYTES;
        let inventory = obs.get(window_bytes..window_bytes + 3).unwrap_or(&[]);
        if inventory.iter().any(|&n| n > 0) {
            return CONSUME;
        }
        let mut nearest = Nearest::new();
        for row in 0..w.depth() as i32 {
            for col in 0..w.width() as i32 {
                let (ahead, lateral) = (w.ahead as i32 - row, col - w.left as i32);
                let token = self.cell(obs, ahead, lateral).is_some_and(|c| c[1] != 0);
                if token && (ahead, lateral) != (0, 0) {
                    let d = (ahead.abs() + lateral.abs()) as u32;
                    nearest.offer(d, (ahead, lateral), rng);
                }
            }
        }
        let Some((ahead, lateral)) = nearest.get() else {
            // Forward, backward, step left or right, turn left or right.
            return 1 + draw(rng, 6) as u8;
        };
        // Walls and other avatars block a step; lateral is x and ahead is -y.
        let free = |a: i32, l: i32| self.cell(obs, a, l).is_some_and(|c| c[0] == 0 && c[2] == 0);
        let blocked = |action: u8| match action {
            FORWARD => !free(1, 0),
            BACKWARD => !free(-1, 0),
            STEP_LEFT => !free(0, -1),
            _ => !free(0, 1),
        };
        let steps = [STEP_LEFT, STEP_RIGHT, FORWARD, BACKWARD];
        step_toward(lateral, -ahead, steps, rng, blocked).unwrap_or_else(|| 1 + draw(rng, 6) as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};
    use crate::substrate::gift::GIFT;

    const W: Window = Window::MELTING_POT;

    /// A Melting Pot window with `tokens` at (ahead, lateral), `walls` likewise, then the
    /// inventory.
    fn obs(tokens: &[(i32, i32)], walls: &[(i32, i32)], inventory: [u8; 3]) -> Vec<u8> {
        let mut o = vec![0u8; W.width() * W.depth() * AVATAR_CELL_BYTES + 4];
        let at = |a: i32, l: i32| {
            ((W.ahead as i32 - a) as usize * W.width() + (l + W.left as i32) as usize)
                * AVATAR_CELL_BYTES
        };
        for &(a, l) in tokens {
            o[at(a, l) + 1] = 1;
        }
        for &(a, l) in walls {
            o[at(a, l)] = 1;
        }
        let n = o.len();
        o[n - 4..n - 1].copy_from_slice(&inventory);
        o
    }

    #[test]
    fn holding_tokens_it_consumes_and_otherwise_walks_to_the_nearest_token() {
        let (h, mut rng) = (
            ConsumeOrCollect {
                window: Window::MELTING_POT,
            },
            stream(2, 0, Purpose::Policy),
        );
        assert_eq!(h.decide(&obs(&[(3, 0)], &[], [0, 2, 0]), &mut rng), CONSUME);
        assert_eq!(h.decide(&obs(&[(3, 0)], &[], [0, 0, 0]), &mut rng), FORWARD);
        assert_eq!(
            h.decide(&obs(&[(0, -2), (5, 5)], &[], [0; 3]), &mut rng),
            STEP_LEFT
        );
        assert_eq!(h.decide(&obs(&[(-1, 0)], &[], [0; 3]), &mut rng), BACKWARD);
        // A wall ahead: step right first.
        assert_eq!(
            h.decide(&obs(&[(3, 1)], &[(1, 0)], [0; 3]), &mut rng),
            STEP_RIGHT
        );
        // Nothing visible: a move or a turn, never a gift or a consume.
        for _ in 0..50 {
            let a = h.decide(&obs(&[], &[], [0; 3]), &mut rng);
            assert!((1..GIFT).contains(&a), "{a}");
        }
    }
}
