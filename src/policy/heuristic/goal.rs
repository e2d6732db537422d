//! walk_to_goal's baseline: step toward the goal (the observation is `[x, y, goal x, goal y]`),
//! the longer axis first. The observation shows no walls, so a wall between the player and the
//! goal can hold it up: a baseline, not a planner.

use rand_chacha::ChaCha8Rng;

use super::{Decide, move5_toward};

/// The display name.
pub(super) const NAME: &str = "walk to goal";

/// walk_to_goal's heuristic.
pub(super) struct WalkToGoal;

impl Decide for WalkToGoal {
    fn decide(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        let [x, y, gx, gy] = [0, 1, 2, 3].map(|i| obs.get(i).copied().unwrap_or(0) as i32);
        move5_toward(gx - x, gy - y, rng, |_| false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};

    #[test]
    fn it_steps_toward_the_goal() {
        let mut rng = stream(0, 0, Purpose::Policy);
        assert_eq!(WalkToGoal.decide(&[1, 1, 4, 2], &mut rng), 1);
        assert_eq!(WalkToGoal.decide(&[3, 3, 3, 0], &mut rng), 2);
        assert_eq!(WalkToGoal.decide(&[3, 3, 3, 3], &mut rng), 4);
    }
}
