//! Level-Based Foraging's baseline: lbforaging's H1 agent. Go to the closest visible food
//! (squared distance, the first in (row, column) order on ties), load it once next to it,
//! stepping north, south, east, west in that order of preference; a random move when no food
//! is in sight. The observation is lbforaging's vector (docs/scenarios.md): foods first, then
//! the agent itself.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use super::Decide;
use crate::rng::below;
use crate::substrate::lbf::rules::{EAST, LOAD, NORTH, SOUTH, WEST};

/// The display name.
pub(super) const NAME: &str = "closest food (H1)";

/// lbforaging's H1 heuristic over `foods` food slots.
pub(super) struct ClosestFood {
    /// Food slots in the observation (`max_num_food`).
    pub(super) foods: usize,
}

impl Decide for ClosestFood {
    fn decide(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        let at = |i: usize| obs.get(i).copied().unwrap_or(0) as i32;
        let me = 3 * self.foods;
        let (y, x) = (at(me), at(me + 1));
        let closest = (0..self.foods)
            .filter(|&k| at(3 * k + 2) > 0)
            .map(|k| (at(3 * k), at(3 * k + 1)))
            .min_by_key(|&(r, c)| (r - y).pow(2) + (c - x).pow(2));
        let Some((r, c)) = closest else {
            return 1 + below(rng.next_u32(), 4) as u8;
        };
        if (r - y).abs() + (c - x).abs() == 1 {
            LOAD
        } else if r < y {
            NORTH
        } else if r > y {
            SOUTH
        } else if c > x {
            EAST
        } else {
            WEST
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};

    #[test]
    fn it_walks_to_the_closest_food_and_loads_it() {
        let mut rng = stream(0, 0, Purpose::Policy);
        let h = ClosestFood { foods: 2 };
        // Foods at (2, 2) and (6, 6) (+1 encoded), the agent at (4, 6): the second is closer.
        let obs = [3, 3, 1, 7, 7, 2, 5, 7, 1, 1, 1, 1];
        assert_eq!(h.decide(&obs, &mut rng), SOUTH);
        let obs = [3, 3, 1, 7, 7, 2, 7, 6, 1, 1, 1, 1];
        assert_eq!(h.decide(&obs, &mut rng), LOAD);
        let obs = [3, 3, 1, 0, 0, 0, 3, 6, 1, 1, 1, 1];
        assert_eq!(h.decide(&obs, &mut rng), WEST);
    }
}
