//! Pursuit's baseline: step toward the nearest visible evader (Manhattan distance in the square
//! window `[side, side, channels]`), the longer axis first and around an obstacle; with
//! surround catches, stay once next to it (the catch needs its neighbours held), otherwise step
//! onto it; a random move when no evader is visible (or the only one shares the pursuer's cell).
//! Every learner is steered as a pursuer (a learning evader sees no other evader: it walks at
//! random).

use rand_chacha::ChaCha8Rng;

use super::{Decide, Nearest, draw, move5_toward};
use crate::scenario::{Channel, Scenario};

/// The display name.
pub(super) const NAME: &str = "nearest evader";

/// Pursuit's heuristic, from the observation layout of a scenario.
pub(super) struct NearestEvader {
    side: usize,
    channels: usize,
    evaders: Option<usize>,
    obstacle: Option<usize>,
    surround: bool,
}

impl NearestEvader {
    /// Reads the window's side and channel order from `scenario`; `surround` as in its
    /// parameters.
    pub(super) fn new(scenario: &Scenario, surround: bool) -> NearestEvader {
        let spec = &scenario.observation;
        let channels: &[Channel] = if spec.channels.is_empty() {
            scenario.substrate.channels()
        } else {
            &spec.channels
        };
        let index = |c: Channel| channels.iter().position(|&x| x == c);
        NearestEvader {
            side: spec.side(),
            channels: channels.len(),
            evaders: index(Channel::Evaders),
            obstacle: index(Channel::Obstacle),
            surround,
        }
    }

    fn at(&self, obs: &[u8], row: i32, col: i32, channel: usize) -> u8 {
        let side = self.side as i32;
        if !(0..side).contains(&row) || !(0..side).contains(&col) {
            return 0;
        }
        obs.get((row * side + col) as usize * self.channels + channel)
            .copied()
            .unwrap_or(0)
    }
}

impl Decide for NearestEvader {
    fn decide(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        let centre = (self.side / 2) as i32;
        let mut nearest = Nearest::new();
        if let Some(e) = self.evaders {
            for row in 0..self.side as i32 {
                for col in 0..self.side as i32 {
                    let (dx, dy) = (col - centre, row - centre);
                    if (dx, dy) != (0, 0) && self.at(obs, row, col, e) > 0 {
                        nearest.offer((dx.abs() + dy.abs()) as u32, (dx, dy), rng);
                    }
                }
            }
        }
        let Some((dx, dy)) = nearest.get() else {
            return draw(rng, 4) as u8;
        };
        if self.surround && dx.abs() + dy.abs() == 1 {
            return 4;
        }
        let blocked = |a: u8| {
            let (mx, my) = crate::substrate::pursuit::MOVES[a as usize];
            self.obstacle
                .is_some_and(|o| self.at(obs, centre + my as i32, centre + mx as i32, o) != 0)
        };
        move5_toward(dx, dy, rng, blocked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};
    use crate::scenario::Scenario;

    /// A 7x7 window (radius 3) with the default channels [obstacle, pursuers, evaders].
    fn window(cells: &[((usize, usize), usize)]) -> Vec<u8> {
        let mut obs = vec![0u8; 7 * 7 * 3];
        obs[(3 * 7 + 3) * 3 + 1] = 1; // the pursuer itself
        for &((row, col), channel) in cells {
            obs[(row * 7 + col) * 3 + channel] = 1;
        }
        obs
    }

    fn heuristic() -> NearestEvader {
        NearestEvader::new(&Scenario::default_pursuit().scenario, true)
    }

    #[test]
    fn it_steps_toward_the_nearest_evader_around_obstacles() {
        let (h, mut rng) = (heuristic(), stream(3, 0, Purpose::Policy));
        // Up-left, further up than left: up. A farther evader down-right is ignored.
        let obs = window(&[((0, 2), 2), ((6, 6), 2)]);
        assert_eq!(h.decide(&obs, &mut rng), 2);
        // Left of the agent, two cells: left; with an obstacle to the left and the evader
        // also one row down: down.
        assert_eq!(h.decide(&window(&[((3, 1), 2)]), &mut rng), 0);
        assert_eq!(h.decide(&window(&[((4, 1), 2), ((3, 2), 0)]), &mut rng), 3);
        // Next to an evader: hold the cell for a surround catch, step onto it otherwise.
        assert_eq!(h.decide(&window(&[((3, 4), 2)]), &mut rng), 4);
        let onto = NearestEvader::new(&Scenario::default_pursuit().scenario, false);
        assert_eq!(onto.decide(&window(&[((3, 4), 2)]), &mut rng), 1);
    }

    #[test]
    fn with_no_evader_visible_it_moves_at_random() {
        let (h, mut rng) = (heuristic(), stream(3, 0, Purpose::Policy));
        let mut seen = [false; 5];
        for _ in 0..100 {
            seen[h.decide(&window(&[]), &mut rng) as usize] = true;
        }
        assert_eq!(seen, [true, true, true, true, false]);
    }
}
