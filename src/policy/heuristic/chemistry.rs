//! The chemistry heuristic: fetch food. A compound is food when a rewarded reaction has it as
//! its only reactant (`MetabolizeFood1: food1 -> empty`): carried in the vesicle it fires and
//! pays. From the facing-rotated window only, each player
//!
//! - with food in its vesicle keeps it (never io) and roams until it has been metabolised;
//! - holding anything else, drops it (io) on an empty cell;
//! - standing on food with an empty vesicle and io ready, picks it up (io);
//! - otherwise walks toward the nearest visible food (ties broken at random), and with none in
//!   sight roams: forward, turning at walls and now and then at random, so it sweeps the map
//!   instead of diffusing like the random policy.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use super::{Decide, PerLearner};
use crate::policy::Policy;
use crate::rng::below;
use crate::scenario::observation::Window;
use crate::scenario::{LoadedScenario, Substrate};
use crate::substrate::avatars::AVATAR_CELL_BYTES;
use crate::substrate::chemistry::IO;

use crate::substrate::avatars::moves::{
    BACKWARD, FORWARD, NOOP, STEP_LEFT, STEP_RIGHT, TURN_LEFT, TURN_RIGHT,
};

/// Chance per roaming step of turning although the way ahead is free (out of 256).
const TURN_CHANCE: u32 = 20;

/// The heuristic food-fetching policy for chemistry scenarios.
pub(crate) struct ChemistryHeuristic {
    window: Window,
    /// Compound item bytes (index + 1) that are food.
    food: [bool; 256],
}

/// The name `eval` shows.
pub(crate) const NAME: &str = "fetch food";

/// The chemistry heuristic for `arenas` arenas of `loaded`, its ties and turns drawn from one
/// stream per arena keyed by (seed, arena, Policy).
pub(crate) fn policy(loaded: &LoadedScenario, seed: u64, arenas: usize) -> Box<dyn Policy + Send> {
    let heuristic = ChemistryHeuristic {
        window: loaded
            .scenario
            .observation
            .window
            .unwrap_or(Window::MELTING_POT),
        food: food_of(loaded),
    };
    let obs_len = loaded.scenario.observation_len();
    Box::new(PerLearner::new(Box::new(heuristic), seed, arenas, obs_len))
}

/// Which item bytes are food: the sole reactant of a rewarded reaction (none outside chemistry).
fn food_of(loaded: &LoadedScenario) -> [bool; 256] {
    let mut food = [false; 256];
    if let Substrate::Chemistry(params) = &loaded.scenario.substrate {
        for r in params.reactions.iter().filter(|r| r.reward > 0.0) {
            if let [only] = r.reactants.as_slice()
                && let Some(k) = params.compounds.iter().position(|c| &c.name == only)
                && k < 255
            {
                food[k + 1] = true;
            }
        }
    }
    food
}

/// A window cell in the observer's frame: `ahead` cells forward, `lateral` cells to the right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rel {
    ahead: i32,
    lateral: i32,
}

/// The cell `ahead` forward and `lateral` to the right of the observer.
const fn rel(ahead: i32, lateral: i32) -> Rel {
    Rel { ahead, lateral }
}

impl ChemistryHeuristic {
    /// The cell bytes at `rel` in one learner's observation (`None` outside the window).
    fn cell<'o>(&self, obs: &'o [u8], rel: Rel) -> Option<&'o [u8]> {
        let w = self.window;
        let row = w.ahead as i32 - rel.ahead;
        let col = w.left as i32 + rel.lateral;
        let (depth, width) = (w.depth() as i32, w.width() as i32);
        if !(0..depth).contains(&row) || !(0..width).contains(&col) {
            return None;
        }
        let i = (row * width + col) as usize * AVATAR_CELL_BYTES;
        obs.get(i..i + AVATAR_CELL_BYTES)
    }

    /// One learner's action from its observation.
    fn act(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        let window_bytes = self.window.width() * self.window.depth() * AVATAR_CELL_BYTES;
        let (Some(&vesicle), Some(&io_ready)) = (obs.get(window_bytes), obs.get(window_bytes + 1))
        else {
            return NOOP;
        };
        let here = self.cell(obs, rel(0, 0)).map_or(0, |c| c[1]);
        let io_ready = io_ready != 0;
        if self.food[vesicle as usize] {
            return self.roam(obs, rng);
        }
        if vesicle != 0 {
            return if io_ready && here == 0 {
                IO
            } else {
                self.roam(obs, rng)
            };
        }
        if self.food[here as usize] {
            return if io_ready { IO } else { NOOP };
        }
        match self.nearest_food(obs, rng) {
            Some(target) => self.toward(obs, target, rng),
            None => self.roam(obs, rng),
        }
    }

    /// The nearest visible food cell no other avatar stands on (Manhattan distance, ties at
    /// random).
    fn nearest_food(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> Option<Rel> {
        let w = self.window;
        let mut best: Option<(i32, Rel)> = None;
        let mut ties = 0u32;
        for ahead in -(w.behind as i32)..=w.ahead as i32 {
            for lateral in -(w.left as i32)..=w.right as i32 {
                let here = rel(ahead, lateral);
                let Some(c) = self.cell(obs, here) else {
                    continue;
                };
                if !self.food[c[1] as usize] || c[2] != 0 {
                    continue;
                }
                let d = ahead.abs() + lateral.abs();
                match best {
                    Some((bd, _)) if d > bd => {}
                    Some((bd, _)) if d == bd => {
                        // Reservoir sampling over equally near cells.
                        ties += 1;
                        if below(rng.next_u32(), ties + 1) == 0 {
                            best = Some((d, here));
                        }
                    }
                    _ => {
                        best = Some((d, here));
                        ties = 0;
                    }
                }
            }
        }
        best.map(|(_, cell)| cell)
    }

    /// True when the neighbour `rel` can be entered (inside the window, no wall, no avatar).
    fn free(&self, obs: &[u8], rel: Rel) -> bool {
        self.cell(obs, rel).is_some_and(|c| c[0] == 0 && c[2] == 0)
    }

    /// A move that shortens the way to `target`, along the longer axis first.
    fn toward(&self, obs: &[u8], target: Rel, rng: &mut ChaCha8Rng) -> u8 {
        let forward = (
            target.ahead.signum(),
            if target.ahead > 0 { FORWARD } else { BACKWARD },
        );
        let sideways = (
            target.lateral.signum(),
            if target.lateral > 0 {
                STEP_RIGHT
            } else {
                STEP_LEFT
            },
        );
        let moves = if target.ahead.abs() >= target.lateral.abs() {
            [(forward, true), (sideways, false)]
        } else {
            [(sideways, false), (forward, true)]
        };
        for ((sign, action), along_ahead) in moves {
            if sign == 0 {
                continue;
            }
            let step = if along_ahead {
                rel(sign, 0)
            } else {
                rel(0, sign)
            };
            if self.free(obs, step) {
                return action;
            }
        }
        self.roam(obs, rng)
    }

    /// Forward while the way is free, a random turn at a wall or avatar and now and then.
    fn roam(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        let ahead_free = self.free(obs, rel(1, 0));
        if ahead_free && below(rng.next_u32(), 256) >= TURN_CHANCE {
            FORWARD
        } else if rng.next_u32() & 1 == 0 {
            TURN_LEFT
        } else {
            TURN_RIGHT
        }
    }
}

impl Decide for ChemistryHeuristic {
    /// One action per learner from its own window and vesicle.
    fn decide(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        self.act(obs, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};

    fn loaded() -> LoadedScenario {
        crate::scenario::Scenario::load("assets/scenarios/chemistry_two_cycles.ron".as_ref())
            .unwrap()
    }

    /// One learner's observation of an empty field, vesicle `vesicle`, io ready.
    fn empty_obs(h: &ChemistryHeuristic, vesicle: u8) -> Vec<u8> {
        let cells = h.window.width() * h.window.depth();
        let mut obs = vec![0u8; cells * AVATAR_CELL_BYTES + 2];
        obs[cells * AVATAR_CELL_BYTES] = vesicle;
        obs[cells * AVATAR_CELL_BYTES + 1] = 1;
        obs
    }

    fn set_item(h: &ChemistryHeuristic, obs: &mut [u8], rel: Rel, item: u8) {
        let w = h.window;
        let row = (w.ahead as i32 - rel.ahead) as usize;
        let col = (w.left as i32 + rel.lateral) as usize;
        obs[(row * w.width() + col) * AVATAR_CELL_BYTES + 1] = item;
    }

    fn heuristic() -> (ChemistryHeuristic, u8, u8) {
        let loaded = loaded();
        let Substrate::Chemistry(p) = &loaded.scenario.substrate else {
            panic!("not chemistry");
        };
        let id = |n: &str| p.compounds.iter().position(|c| c.name == n).unwrap() as u8 + 1;
        let h = ChemistryHeuristic {
            window: loaded.scenario.observation.window.unwrap(),
            food: food_of(&loaded),
        };
        (h, id("food1"), id("ax"))
    }

    #[test]
    fn food_is_the_sole_reactant_of_a_rewarded_reaction() {
        let (h, food1, ax) = heuristic();
        assert!(h.food[food1 as usize] && !h.food[ax as usize]);
        // food1 and food2; MetabolizeXY pays but has two reactants.
        assert_eq!(h.food.iter().filter(|f| **f).count(), 2);
    }

    #[test]
    fn it_walks_to_visible_food_picks_it_up_and_keeps_it() {
        let (h, food1, ax) = heuristic();
        let mut rng = stream(1, 0, Purpose::Policy);
        // Food two cells ahead and three to the right: along the longer axis first.
        let mut obs = empty_obs(&h, 0);
        set_item(&h, &mut obs, rel(2, 3), food1);
        assert_eq!(h.act(&obs, &mut rng), STEP_RIGHT);
        // Food behind: step back.
        let mut obs = empty_obs(&h, 0);
        set_item(&h, &mut obs, rel(-1, 0), food1);
        set_item(&h, &mut obs, rel(4, 0), ax);
        assert_eq!(h.act(&obs, &mut rng), BACKWARD);
        // Standing on food with an empty vesicle: io; not ready: wait.
        let mut obs = empty_obs(&h, 0);
        set_item(&h, &mut obs, rel(0, 0), food1);
        assert_eq!(h.act(&obs, &mut rng), IO);
        let last = obs.len() - 1;
        obs[last] = 0;
        assert_eq!(h.act(&obs, &mut rng), NOOP);
        // Food in the vesicle: never io, even standing on more food.
        let mut obs = empty_obs(&h, food1);
        set_item(&h, &mut obs, rel(0, 0), food1);
        for _ in 0..50 {
            assert_ne!(h.act(&obs, &mut rng), IO);
        }
        // Something else in the vesicle: drop it on an empty cell.
        let obs = empty_obs(&h, ax);
        assert_eq!(h.act(&obs, &mut rng), IO);
        // A batch of two learners in one arena.
        let mut both = empty_obs(&h, 0);
        set_item(&h, &mut both, rel(0, 0), food1);
        both.extend(empty_obs(&h, ax));
        let mut out = [9u8; 2];
        let obs_len = both.len() / 2;
        let mut policy = PerLearner::new(Box::new(h), 7, 1, obs_len);
        policy.actions(&both, &mut out).unwrap();
        assert_eq!(out, [IO, IO]);
        assert!(policy.actions(&both[1..], &mut out).is_err());
    }

    #[test]
    fn with_nothing_in_sight_it_roams_forward_and_turns_at_walls() {
        let (h, _, _) = heuristic();
        let mut rng = stream(2, 0, Purpose::Policy);
        let obs = empty_obs(&h, 0);
        let forward = (0..200)
            .filter(|_| h.act(&obs, &mut rng) == FORWARD)
            .count();
        assert!(forward > 160, "{forward} of 200 forward");
        let mut walled = empty_obs(&h, 0);
        let w = h.window;
        let row = (w.ahead - 1) as usize;
        walled[(row * w.width() + w.left as usize) * AVATAR_CELL_BYTES] = 1;
        for _ in 0..50 {
            let a = h.act(&walled, &mut rng);
            assert!(a == TURN_LEFT || a == TURN_RIGHT, "{a}");
        }
    }

    /// Mean learner return over the first episode of each of `arenas` arenas.
    fn mean_return(loaded: &LoadedScenario, policy: &mut dyn Policy, arenas: usize) -> f64 {
        let mut batch = crate::engine::EnvBatch::new(loaded, arenas, 1_000_003).unwrap();
        batch.start_episode_log(1 << 16);
        let learners = loaded.scenario.learners_per_arena();
        let mut actions = vec![0u8; batch.actions_mut().len()];
        let mut returns: Vec<Option<f64>> = vec![None; arenas];
        for _ in 0..=loaded.scenario.max_steps {
            policy.actions(&batch.buffers().obs, &mut actions).unwrap();
            batch.actions_mut().copy_from_slice(&actions);
            batch.step().unwrap();
            for e in batch.take_episodes() {
                let r = e.returns[..learners].iter().map(|r| *r as f64).sum::<f64>();
                returns[e.arena as usize].get_or_insert(r / learners as f64);
            }
        }
        returns.iter().flatten().sum::<f64>() / arenas as f64
    }

    #[test]
    fn on_two_cycles_it_earns_more_than_the_random_policy() {
        let loaded = loaded();
        let arenas = 24;
        let actions = crate::scenario::actions::ActionSet::Chemistry8.len();
        let heuristic = mean_return(&loaded, policy(&loaded, 5, arenas).as_mut(), arenas);
        let random = mean_return(
            &loaded,
            &mut crate::policy::RandomPolicy::new(5, arenas, actions),
            arenas,
        );
        eprintln!("heuristic {heuristic:.3}, random {random:.3} per player and episode");
        assert!(
            heuristic > 1.5 * random,
            "heuristic {heuristic}, random {random}"
        );
    }
}
