//! Scripted baselines: one simple heuristic per substrate ([`heuristics_for`]), reported by
//! `gridarena eval` beside the trained and the random policy. Every heuristic reads only the
//! learners' observations (the layouts of docs/scenarios.md), so it acts wherever a [`Policy`]
//! does: evaluation, the viewer, the Python API; cue_memory's also remembers the cue its
//! learners saw earlier in the episode (no memoryless rule beats chance there). Ties and "nothing visible" draw from one seeded
//! stream per arena, as [`RandomPolicy`](super::RandomPolicy) does: a heuristic is deterministic
//! given its seed.

mod chemistry;
mod cleanup;
mod coin;
mod cue;
mod gift;
mod goal;
mod harvest;
mod lbf;
mod matrix;
mod overcooked;
mod pursuit;

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use rayon::prelude::*;

use super::{Policy, PolicyError};
use crate::rng::{Purpose, below, stream};
use crate::scenario::{ActionSet, LoadedScenario, Substrate};

/// The scripted baselines of `loaded`'s substrate, each with its display name: one entry per
/// pure action for a matrix game, one for the other substrates, none where the scenario's
/// action set is not the one the heuristic steers with.
pub fn heuristics_for(
    loaded: &LoadedScenario,
    seed: u64,
    arenas: usize,
) -> Vec<(String, Box<dyn Policy + Send>)> {
    let scenario = &loaded.scenario;
    let obs_len = scenario.observation_len();
    let actions = scenario.action_set();
    let one = |name: &str, decide: Box<dyn Decide>| -> Vec<(String, Box<dyn Policy + Send>)> {
        let policy = PerLearner::new(decide, seed, arenas, obs_len);
        vec![(name.to_string(), Box::new(policy) as Box<dyn Policy + Send>)]
    };
    match (&scenario.substrate, actions) {
        (Substrate::Pursuit(p), ActionSet::Move5) => one(
            pursuit::NAME,
            Box::new(pursuit::NearestEvader::new(scenario, p.surround)),
        ),
        (Substrate::CoinGame(p), ActionSet::Move5) => one(
            coin::NAME,
            Box::new(coin::NearestCoin::new(&loaded.grid, p.torus)),
        ),
        (Substrate::GiftRefinements(_), ActionSet::Gift9) => {
            one(gift::NAME, Box::new(gift::ConsumeOrCollect::new(scenario)))
        }
        (Substrate::WalkToGoal(_), ActionSet::Move5) => one(goal::NAME, Box::new(goal::WalkToGoal)),
        (Substrate::MatrixGame(p), ActionSet::Choose(k)) => (0..k)
            .map(|a| {
                let policy = PerLearner::new(Box::new(matrix::Always(a)), seed, arenas, obs_len);
                (
                    matrix::name(p, a),
                    Box::new(policy) as Box<dyn Policy + Send>,
                )
            })
            .collect(),
        (Substrate::CueMemory(p), ActionSet::Choose(_)) => vec![(
            cue::NAME.to_string(),
            Box::new(cue::RememberCue::new(p.cues)) as Box<dyn Policy + Send>,
        )],
        (Substrate::Chemistry(_), ActionSet::Chemistry8) => vec![(
            chemistry::NAME.to_string(),
            chemistry::policy(loaded, seed, arenas),
        )],
        (Substrate::CommonsHarvest(_), ActionSet::Chemistry8) => one(
            harvest::NAME,
            Box::new(harvest::SparePatches::new(scenario)),
        ),
        (Substrate::CleanUp(_), ActionSet::Gift9) => one(
            cleanup::NAME,
            Box::new(cleanup::CleanWhenScarce::new(scenario)),
        ),
        (Substrate::LevelBasedForaging(p), ActionSet::Choose(6)) => one(
            lbf::NAME,
            Box::new(lbf::ClosestFood {
                foods: p.max_num_food as usize,
            }),
        ),
        (Substrate::Overcooked(_), ActionSet::Choose(6)) => one(
            overcooked::NAME,
            Box::new(overcooked::GreedyCook::new(&loaded.grid)),
        ),
        _ => Vec::new(),
    }
}

/// Every scripted policy a population member or an opponent can name on `loaded`: the
/// baselines of [`heuristics_for`], then the fixed opponents that are not baselines. The coin
/// game's "own coin" is one: it leaves the other's coins alone, so it collects fewer coins than
/// "nearest coin", but it is the fixed cooperator that opponent-shaping learners are evaluated
/// against (a matrix game's "always <action>" baselines already include its cooperator and
/// defector).
pub fn scripted_for(
    loaded: &LoadedScenario,
    seed: u64,
    arenas: usize,
) -> Vec<(String, Box<dyn Policy + Send>)> {
    let scenario = &loaded.scenario;
    let mut all = heuristics_for(loaded, seed, arenas);
    if let (Substrate::CoinGame(p), ActionSet::Move5) = (&scenario.substrate, scenario.action_set())
    {
        let own = coin::NearestCoin::new(&loaded.grid, p.torus).own_only();
        let policy = PerLearner::new(Box::new(own), seed, arenas, scenario.observation_len());
        all.push((coin::OWN_NAME.to_string(), Box::new(policy)));
    }
    all
}

/// One learner's decision from its own observation (`obs` is that learner's `O` bytes);
/// `rng` is its arena's stream, for ties and exploration.
pub(crate) trait Decide: Send + Sync {
    /// The action for observation `obs`.
    fn decide(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8;
}

/// A [`Policy`] that runs a [`Decide`] for every learner of every arena, one stream per arena.
pub(crate) struct PerLearner {
    decide: Box<dyn Decide>,
    rngs: Vec<ChaCha8Rng>,
    obs_len: usize,
}

impl PerLearner {
    /// `arenas` streams keyed by (seed, arena, Policy), observations of `obs_len` bytes.
    pub(crate) fn new(
        decide: Box<dyn Decide>,
        seed: u64,
        arenas: usize,
        obs_len: usize,
    ) -> PerLearner {
        PerLearner {
            decide,
            rngs: (0..arenas.max(1))
                .map(|a| stream(seed, a as u64, Purpose::Policy))
                .collect(),
            obs_len,
        }
    }
}

impl Policy for PerLearner {
    fn actions(&mut self, obs: &[u8], out: &mut [u8]) -> Result<(), PolicyError> {
        let arenas = self.rngs.len();
        if out.is_empty() || !out.len().is_multiple_of(arenas) {
            return Err(PolicyError::Shape {
                what: "actions",
                expected: arenas * (out.len() / arenas).max(1),
                got: out.len(),
            });
        }
        if obs.len() != out.len() * self.obs_len {
            return Err(PolicyError::Shape {
                what: "observations",
                expected: out.len() * self.obs_len,
                got: obs.len(),
            });
        }
        let n = out.len() / arenas;
        let (decide, obs_len) = (&*self.decide, self.obs_len);
        self.rngs
            .par_iter_mut()
            .zip(out.par_chunks_mut(n))
            .zip(obs.par_chunks(n * obs_len))
            .with_min_len(16)
            .for_each(|((rng, acts), obs)| {
                for (a, o) in acts.iter_mut().zip(obs.chunks_exact(obs_len.max(1))) {
                    *a = decide.decide(o, rng);
                }
            });
        Ok(())
    }
}

/// A uniform draw from `0..n` (n >= 1).
pub(crate) fn draw(rng: &mut ChaCha8Rng, n: usize) -> usize {
    below(rng.next_u32(), n.max(1) as u32) as usize
}

/// Keeps the nearest of a stream of candidates, ties broken uniformly (reservoir sampling).
pub(crate) struct Nearest<T> {
    best: Option<(u32, T)>,
    ties: usize,
}

impl<T> Nearest<T> {
    /// No candidate yet.
    pub(crate) fn new() -> Nearest<T> {
        Nearest {
            best: None,
            ties: 0,
        }
    }

    /// Offers `item` at distance `d`.
    pub(crate) fn offer(&mut self, d: u32, item: T, rng: &mut ChaCha8Rng) {
        match &self.best {
            Some((b, _)) if d > *b => {}
            Some((b, _)) if d == *b => {
                self.ties += 1;
                if draw(rng, self.ties) == 0 {
                    self.best = Some((d, item));
                }
            }
            _ => {
                self.best = Some((d, item));
                self.ties = 1;
            }
        }
    }

    /// The nearest item, if any was offered.
    pub(crate) fn get(self) -> Option<T> {
        self.best.map(|(_, t)| t)
    }
}

/// Which axis to close first toward an offset `(dx, dy)`: true for the horizontal one. The
/// longer axis first; equal non-zero lengths draw.
fn horizontal_first(dx: i32, dy: i32, rng: &mut ChaCha8Rng) -> bool {
    match dx.abs().cmp(&dy.abs()) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => draw(rng, 2) == 0,
    }
}

/// The step that closes an offset `(dx, dy)` (y grows downward), the longer axis first:
/// `steps` are the actions toward -x, +x, -y and +y; `blocked(action)` rules a step out, and
/// then the other axis is tried. None when both are blocked or the offset is zero.
pub(crate) fn step_toward(
    dx: i32,
    dy: i32,
    steps: [u8; 4],
    rng: &mut ChaCha8Rng,
    blocked: impl Fn(u8) -> bool,
) -> Option<u8> {
    let along_x = if dx < 0 { steps[0] } else { steps[1] };
    let along_y = if dy < 0 { steps[2] } else { steps[3] };
    let order = if horizontal_first(dx, dy, rng) {
        [(dx, along_x), (dy, along_y)]
    } else {
        [(dy, along_y), (dx, along_x)]
    };
    order
        .into_iter()
        .find(|&(d, a)| d != 0 && !blocked(a))
        .map(|(_, a)| a)
}

/// The `move5` action (0 left, 1 right, 2 up, 3 down, 4 stay) that closes an offset
/// `(dx, dy)` (screen directions: up is row - 1) as [`step_toward`] picks it; stay when both
/// axes are blocked or the offset is zero.
pub(crate) fn move5_toward(
    dx: i32,
    dy: i32,
    rng: &mut ChaCha8Rng,
    blocked: impl Fn(u8) -> bool,
) -> u8 {
    step_toward(dx, dy, [0, 1, 2, 3], rng, blocked).unwrap_or(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn move5_toward_closes_the_longer_axis_and_steps_around_a_block() {
        let mut rng = stream(1, 0, Purpose::Policy);
        assert_eq!(move5_toward(-3, 1, &mut rng, |_| false), 0);
        assert_eq!(move5_toward(0, 2, &mut rng, |_| false), 3);
        assert_eq!(move5_toward(-3, 1, &mut rng, |a| a == 0), 3);
        assert_eq!(move5_toward(0, 0, &mut rng, |_| false), 4);
        assert_eq!(move5_toward(2, 0, &mut rng, |a| a == 1), 4);
    }

    #[test]
    fn nearest_breaks_ties_with_the_stream_and_both_ties_occur() {
        let mut rng = stream(7, 0, Purpose::Policy);
        let mut seen = [false; 2];
        for _ in 0..64 {
            let mut n = Nearest::new();
            n.offer(3, 9, &mut rng);
            n.offer(1, 0, &mut rng);
            n.offer(1, 1, &mut rng);
            n.offer(2, 5, &mut rng);
            seen[n.get().unwrap()] = true;
        }
        assert_eq!(seen, [true, true]);
    }

    #[test]
    fn a_policy_refuses_buffers_of_the_wrong_size() {
        let mut p = PerLearner::new(Box::new(matrix::Always(1)), 0, 2, 3);
        let mut out = [0u8; 4];
        assert!(p.actions(&[0; 11], &mut out).is_err());
        assert!(p.actions(&[0; 12], &mut out[..3]).is_err());
        p.actions(&[0; 12], &mut out).unwrap();
        assert_eq!(out, [1; 4]);
    }
}
