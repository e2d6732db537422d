//! clean_up's baseline: while apples are scarce in view (fewer than [`SCARCE`]) and pollution
//! is visible, clean it: fire the cleaning beam when a polluted cell lies in its reach and the
//! beam is ready, turn toward pollution beside or behind, else step toward the nearest
//! polluted cell; otherwise step toward the nearest apple; a random move or turn when neither
//! is visible. It never zaps.

use rand_chacha::ChaCha8Rng;

use super::Decide;
use super::harvest::View;
use crate::scenario::Scenario;
use crate::substrate::avatars::moves::{NOOP, TURN_LEFT, TURN_RIGHT};
use crate::substrate::cleanup::DIRT;
use crate::substrate::cleanup::rules::FIRE_CLEAN;

/// The display name.
pub(super) const NAME: &str = "clean while apples are scarce, else nearest apple";

/// Fewer visible apples than this count as scarce.
pub(super) const SCARCE: usize = 3;

/// The cells (ahead, lateral) the default cleaning beam reaches (3 ahead, 1 to each side).
const REACH: [(i32, i32); 7] = [(0, -1), (0, 1), (1, 0), (2, 0), (3, 0), (1, -1), (1, 1)];

/// clean_up's heuristic for a scenario's window.
pub(super) struct CleanWhenScarce {
    view: View,
}

impl CleanWhenScarce {
    /// Reads the window from `scenario`.
    pub(super) fn new(scenario: &Scenario) -> CleanWhenScarce {
        CleanWhenScarce {
            view: View::new(scenario),
        }
    }
}

impl Decide for CleanWhenScarce {
    fn decide(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        let v = self.view;
        let apples = v.cells().filter(|&(a, l)| v.item(obs, a, l) == 1).count();
        let ready_to_clean = obs.get(v.bytes() + 1).is_some_and(|&r| r != 0);
        let dirt = v.nearest(obs, DIRT, rng, |_, _| true);
        if let (true, Some((ahead, lateral))) = (apples < SCARCE, dirt) {
            if REACH.iter().any(|&(a, l)| v.item(obs, a, l) == DIRT) {
                return if ready_to_clean { FIRE_CLEAN } else { NOOP };
            }
            if ahead <= 0 {
                return if lateral < 0 { TURN_LEFT } else { TURN_RIGHT };
            }
            return v.step_to(obs, (ahead, lateral), rng, |_, _| false);
        }
        match v.nearest(obs, 1, rng, |_, _| true) {
            Some(target) => v.step_to(obs, target, rng, |_, _| false),
            None => v.wander(obs, rng, |_, _| false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::harvest::tests::obs;
    use super::*;
    use crate::rng::{Purpose, stream};
    use crate::scenario::Window;
    use crate::substrate::avatars::moves::{FORWARD, STEP_LEFT};

    #[test]
    fn it_cleans_while_apples_are_scarce_and_harvests_otherwise() {
        let h = CleanWhenScarce {
            view: View {
                window: Window::MELTING_POT,
            },
        };
        let mut rng = stream(3, 0, Purpose::Policy);
        let ready = [1, 1, 1];
        let cooling = [1, 0, 1];
        // Pollution two ahead, no apples: clean, or wait for the beam.
        let dirt_ahead = |extras: &[u8]| obs(&[(2, 0, DIRT), (6, 4, DIRT)], &[], extras);
        assert_eq!(h.decide(&dirt_ahead(&ready), &mut rng), FIRE_CLEAN);
        assert_eq!(h.decide(&dirt_ahead(&cooling), &mut rng), NOOP);
        // Pollution out of reach ahead: walk to it; beside or behind: turn to it.
        assert_eq!(
            h.decide(&obs(&[(6, 0, DIRT)], &[], &ready), &mut rng),
            FORWARD
        );
        let left = obs(&[(0, -3, DIRT)], &[], &ready);
        assert_eq!(h.decide(&left, &mut rng), TURN_LEFT);
        let behind = obs(&[(-1, 2, DIRT)], &[], &ready);
        assert_eq!(h.decide(&behind, &mut rng), TURN_RIGHT);
        // Three apples in view: harvest the nearest, the pollution waits.
        let plenty = obs(
            &[(2, 0, DIRT), (0, -2, 1), (4, 4, 1), (5, 4, 1)],
            &[],
            &ready,
        );
        assert_eq!(h.decide(&plenty, &mut rng), STEP_LEFT);
        // Neither in view: a move or a turn.
        for _ in 0..50 {
            let a = h.decide(&obs(&[], &[], &ready), &mut rng);
            assert!((1..=6).contains(&a), "{a}");
        }
    }
}
