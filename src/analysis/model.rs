//! The procedural transition model of a scenario: a compact state index with encode/decode,
//! and successors computed on the fly by the same rule functions the simulation runs
//! ([`crate::substrate::transition`] on a decoded [`ArenaState`]). Nothing is materialised.
//!
//! Chance in a step is drawn before the rules run (`substrate::draw_chance`): each live
//! learner's action slips to a random one with the scenario's probability, random walkers pick
//! uniformly. Given the applied actions the rules are deterministic for the substrates modelled
//! here (Pursuit and matrix games; the others draw from a rules stream and are refused). So a
//! successor is one deterministic rule call per applied joint action, weighted by the product of
//! the per-agent chance probabilities, computed exactly from the same 32-bit thresholds the
//! simulation compares against.
//!
//! State index (mixed radix, slot order): Pursuit: each agent's free cell (`F` values); with more
//! than one evader, evaders get `F + 1` values (0: removed). The episode's end (no evader left) is
//! the terminal state outside the index. Matrix games: the previous joint action (`A^N + 1`
//! values, 0 on the first step). With a finite horizon the step count is the most significant
//! digit and reaching the limit is terminal; with a discounted horizon truncation is ignored
//! (an infinite-horizon discounted game).

use crate::components::{Alive, AppliedAction, GridPos, StepReward};
use crate::layout::Layout;
use crate::scenario::{Control, LoadedScenario, RoleKind};
use crate::substrate::{ArenaState, ExactModel, transition};

/// How episode length enters the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Horizon {
    /// Infinite horizon with discounting; the step limit is ignored (the state has no clock).
    Discounted,
    /// The step limit is part of the state; reaching it ends the episode.
    Finite(u32),
}

impl Horizon {
    /// The default for a scenario: finite for episodes of at most 16 steps (where the limit
    /// shapes play, e.g. one-shot matrix games), discounted otherwise.
    pub fn auto(layout: &Layout) -> Horizon {
        if layout.max_steps <= 16 {
            Horizon::Finite(layout.max_steps)
        } else {
            Horizon::Discounted
        }
    }
}

/// Errors building or using a model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A substrate whose rules draw their own randomness or whose state is too rich.
    #[error(
        "{scenario}: exact analysis models Pursuit and matrix games (rules deterministic given the applied actions); {substrate} draws its own randomness or keeps item state. Use --nashconv learned"
    )]
    Unsupported {
        /// Scenario name.
        scenario: String,
        /// Substrate name.
        substrate: &'static str,
    },
    /// The index does not fit in 64 bits.
    #[error(
        "{scenario}: the state space overflows a 64-bit index ({detail}); use --nashconv learned"
    )]
    TooLarge {
        /// Scenario name.
        scenario: String,
        /// The radices.
        detail: String,
    },
}

/// The outcome of one deterministic rule call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Next {
    /// The next state, `None` when the episode ended.
    pub state: Option<u64>,
}

/// The procedural model of one scenario.
#[derive(Debug, Clone)]
pub struct TransitionModel {
    layout: Layout,
    horizon: Horizon,
    /// Free cell k's map coordinates.
    free: Vec<GridPos>,
    /// Map cell (y * width + x) to free cell index (u32::MAX for walls).
    free_of: Vec<u32>,
    /// Radix per state digit (slot order), least significant first.
    radix: Vec<u64>,
    /// States without the clock.
    base: u64,
    /// Evaders have an alive digit value.
    evader_alive_digit: bool,
    /// Matrix game: actions per player.
    matrix_actions: Option<usize>,
    /// P(applied b | intended a) for a live learner, `[A, A]`.
    slip: Vec<f64>,
    /// P(b) for a random walker, `[A]`.
    walk: Vec<f64>,
}

/// `193^8 x 194^30`: the radices as powers, in slot order.
fn radix_formula(radix: &[u64]) -> String {
    let mut parts: Vec<(u64, usize)> = Vec::new();
    for &r in radix {
        match parts.last_mut() {
            Some((v, k)) if *v == r => *k += 1,
            _ => parts.push((r, 1)),
        }
    }
    parts
        .iter()
        .map(|(v, k)| {
            if *k == 1 {
                v.to_string()
            } else {
                format!("{v}^{k}")
            }
        })
        .collect::<Vec<_>>()
        .join(" x ")
}

/// Exact probabilities of `below(bits, n) == k` over uniform 32-bit `bits`.
fn below_probs(n: usize) -> Vec<f64> {
    let scale = 4_294_967_296u128;
    (0..n as u128)
        .map(|k| {
            // Count of x in [0, 2^32) with floor(x n / 2^32) == k.
            let lo = (k * scale).div_ceil(n as u128);
            let hi = ((k + 1) * scale).div_ceil(n as u128);
            (hi - lo) as f64 / scale as f64
        })
        .collect()
}

impl TransitionModel {
    /// The model of a scenario.
    pub fn new(loaded: &LoadedScenario, horizon: Option<Horizon>) -> Result<Self, ModelError> {
        let layout = Layout::derive(loaded);
        let horizon = horizon.unwrap_or_else(|| Horizon::auto(&layout));
        let name = loaded.scenario.name.clone();
        let a = layout.actions;
        let mut free = Vec::new();
        let mut free_of = vec![u32::MAX; layout.width * layout.height];
        for y in 0..layout.height {
            for x in 0..layout.width {
                if layout.is_open(x as i32, y as i32) {
                    free_of[y * layout.width + x] = free.len() as u32;
                    free.push(GridPos {
                        x: x as i16,
                        y: y as i16,
                    });
                }
            }
        }
        let (radix, evader_alive_digit, matrix_actions) = match layout.rules.exact_model() {
            ExactModel::Positions => {
                let f = free.len() as u64;
                let several = layout.evader_slots.len() > 1;
                let radix = (0..layout.agents)
                    .map(|s| {
                        if several && layout.slot_kind[s] == RoleKind::Evader {
                            f + 1
                        } else {
                            f
                        }
                    })
                    .collect();
                (radix, several, None)
            }
            ExactModel::PreviousJointAction { actions } => {
                let k = actions as u64;
                let joint =
                    k.checked_pow(layout.agents as u32)
                        .ok_or_else(|| ModelError::TooLarge {
                            scenario: name.clone(),
                            detail: format!("{k}^{}", layout.agents),
                        })?;
                (vec![joint + 1], false, Some(k as usize))
            }
            ExactModel::Unsupported => {
                return Err(ModelError::Unsupported {
                    scenario: name,
                    substrate: loaded.scenario.substrate.name(),
                });
            }
        };
        let base = radix
            .iter()
            .try_fold(1u64, |acc, r| acc.checked_mul(*r))
            .ok_or_else(|| ModelError::TooLarge {
                scenario: name.clone(),
                detail: radix_formula(&radix),
            })?;
        if let Horizon::Finite(t) = horizon {
            base.checked_mul(t as u64)
                .ok_or_else(|| ModelError::TooLarge {
                    scenario: name.clone(),
                    detail: format!("{} x {t} steps", radix_formula(&radix)),
                })?;
        }
        let p_slip = layout.slip_threshold as f64 / 4_294_967_296.0;
        let walk = below_probs(a);
        let mut slip = vec![0.0; a * a];
        for i in 0..a {
            for b in 0..a {
                slip[i * a + b] = p_slip * walk[b] + if i == b { 1.0 - p_slip } else { 0.0 };
            }
        }
        Ok(TransitionModel {
            layout,
            horizon,
            free,
            free_of,
            radix,
            base,
            evader_alive_digit,
            matrix_actions,
            slip,
            walk,
        })
    }

    /// The scenario's layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The horizon.
    pub fn horizon(&self) -> Horizon {
        self.horizon
    }

    /// Non-terminal states in the index.
    pub fn states(&self) -> u64 {
        match self.horizon {
            Horizon::Discounted => self.base,
            Horizon::Finite(t) => self.base * t as u64,
        }
    }

    /// Agents M (every slot, learners first).
    pub fn agents(&self) -> usize {
        self.layout.agents
    }

    /// Learners N.
    pub fn learners(&self) -> usize {
        self.layout.learners
    }

    /// Actions per agent A.
    pub fn actions(&self) -> usize {
        self.layout.actions
    }

    /// Applied joint actions per state, `A^M` (the rule calls one state's successors take).
    pub fn applied_joint(&self) -> u64 {
        (self.actions() as u64).saturating_pow(self.agents() as u32)
    }

    /// Distinct applied actions an intended one can become (1 without slip).
    pub fn fan_out_per_agent(&self, slot: usize) -> usize {
        match self.layout.slot_control[slot] {
            Control::RandomWalk => self.actions(),
            Control::Learner if self.layout.slip_threshold == 0 => 1,
            Control::Learner => self.actions(),
        }
    }

    /// `P(applied b | intended a)` for a live learner.
    pub fn slip_prob(&self, intended: usize, applied: usize) -> f64 {
        self.slip[intended * self.actions() + applied]
    }

    /// `P(b)` for a random walker.
    pub fn walk_prob(&self, applied: usize) -> f64 {
        self.walk[applied]
    }

    /// A fresh scratch state for [`TransitionModel::load`] / [`TransitionModel::step`].
    pub fn scratch(&self) -> ArenaState {
        ArenaState::new(
            &self.layout,
            vec![GridPos::default(); self.agents()],
            vec![Alive(true); self.agents()],
        )
    }

    /// Decodes `index` into `state` (positions, alive flags, cells, clock).
    pub fn load(&self, index: u64, state: &mut ArenaState) {
        let (t, mut rest) = (index / self.base, index % self.base);
        state.clock.t = t as u32;
        if let Some(k) = self.matrix_actions {
            let n = self.agents();
            state.cells.copy_from_slice(&self.layout.cells_template);
            if rest > 0 {
                let mut joint = rest - 1;
                for s in (0..n).rev() {
                    state.cells[s] = (joint % k as u64) as u8;
                    joint /= k as u64;
                }
                state.cells[n] = 1;
            }
            return;
        }
        for slot in 0..self.agents() {
            let r = self.radix[slot];
            let mut digit = rest % r;
            rest /= r;
            let mut alive = true;
            if self.evader_alive_digit && self.layout.slot_kind[slot] == RoleKind::Evader {
                alive = digit > 0;
                digit = digit.saturating_sub(1);
            }
            state.alive[slot] = Alive(alive);
            state.pos[slot] = self.free[digit as usize];
        }
        state.rebuild(&self.layout);
    }

    /// Decodes `index` into a new state.
    pub fn decode(&self, index: u64) -> ArenaState {
        let mut s = self.scratch();
        self.load(index, &mut s);
        s
    }

    /// The index of a state, `None` when it is terminal (no evader left, or the step limit
    /// reached with a finite horizon).
    pub fn encode(&self, state: &ArenaState) -> Option<u64> {
        let t = match self.horizon {
            Horizon::Finite(limit) if state.clock.t >= limit => return None,
            Horizon::Finite(_) => state.clock.t as u64,
            Horizon::Discounted => 0,
        };
        let rest = if let Some(k) = self.matrix_actions {
            let n = self.agents();
            if state.cells[n] == 0 {
                0
            } else {
                1 + (0..n).fold(0u64, |j, s| j * k as u64 + state.cells[s] as u64)
            }
        } else {
            if self.layout.rules.terminated(&self.layout, &state.alive) {
                return None;
            }
            let mut index = 0u64;
            for slot in (0..self.agents()).rev() {
                let p = state.pos[slot];
                let cell = self.free_of[p.y as usize * self.layout.width + p.x as usize] as u64;
                let digit =
                    if self.evader_alive_digit && self.layout.slot_kind[slot] == RoleKind::Evader {
                        if state.alive[slot].0 { cell + 1 } else { 0 }
                    } else {
                        cell
                    };
                index = index * self.radix[slot] + digit;
            }
            index
        };
        Some(t * self.base + rest)
    }

    /// Whether agent `slot` is alive in the loaded state.
    pub fn alive(state: &ArenaState, slot: usize) -> bool {
        state.alive[slot].0
    }

    /// One deterministic rule call: applies `applied` (one action per slot; removed agents
    /// idle) to the state loaded in `state`, which becomes the next state. Returns the next
    /// index and leaves the step's rewards in `state.rewards()`.
    pub fn step(&self, state: &mut ArenaState, applied: &[AppliedAction]) -> Next {
        let outcome = transition(&self.layout, state, applied);
        state.clock.t += 1;
        if outcome.terminated {
            return Next { state: None };
        }
        Next {
            state: self.encode(state),
        }
    }

    /// The learners' rewards of the last [`TransitionModel::step`].
    pub fn rewards<'a>(&self, state: &'a ArenaState) -> &'a [StepReward] {
        &state.rewards()[..self.learners()]
    }

    /// Every successor of `(index, joint)` with its probability and the learners' rewards,
    /// identical outcomes merged: `(next or None for terminal, probability, rewards)`.
    /// `joint` has one intended action per learner. Allocates; for tests and tools (the
    /// solvers work per applied joint action instead).
    pub fn successors(&self, index: u64, joint: &[u8]) -> Vec<(Option<u64>, f64, Vec<f32>)> {
        let (m, a) = (self.agents(), self.actions());
        let mut state = self.scratch();
        self.load(index, &mut state);
        let alive: Vec<bool> = (0..m).map(|s| state.alive[s].0).collect();
        let mut out: Vec<(Option<u64>, f64, Vec<f32>)> = Vec::new();
        let mut applied = vec![AppliedAction(0); m];
        for code in 0..self.applied_joint() {
            let mut c = code;
            let mut p = 1.0;
            for slot in (0..m).rev() {
                let b = (c % a as u64) as usize;
                c /= a as u64;
                applied[slot] = AppliedAction(b as u8);
                p *= self.applied_prob(slot, alive[slot], joint.get(slot).copied(), b);
            }
            if p == 0.0 {
                continue;
            }
            self.load(index, &mut state);
            let next = self.step(&mut state, &applied).state;
            let rewards: Vec<f32> = self.rewards(&state).iter().map(|r| r.0).collect();
            match out.iter_mut().find(|(n, _, r)| *n == next && *r == rewards) {
                Some(e) => e.1 += p,
                None => out.push((next, p, rewards)),
            }
        }
        out
    }

    /// `P(slot applies b)` given its intended action (learners) or none (walkers); a removed
    /// agent always idles.
    pub fn applied_prob(&self, slot: usize, alive: bool, intended: Option<u8>, b: usize) -> f64 {
        if !alive {
            return f64::from(u8::from(b == self.layout.idle_action as usize));
        }
        match self.layout.slot_control[slot] {
            Control::Learner => self.slip_prob(intended.unwrap_or(0) as usize, b),
            Control::RandomWalk => self.walk_prob(b),
        }
    }

    /// The start distribution: `(index, probability)` of every state a fresh episode can begin
    /// in (spawn cells drawn distinct within a role kind, uniformly).
    pub fn start_distribution(&self) -> Vec<(u64, f64)> {
        let mut state = self.scratch();
        if self.matrix_actions.is_some() {
            self.load(0, &mut state);
            return vec![(0, 1.0)];
        }
        // Ordered distinct draws per spawn group, independent across groups.
        let groups = &self.layout.spawn_groups;
        let mut out = Vec::new();
        let mut choice: Vec<Vec<usize>> = groups.iter().map(|g| vec![0; g.slots.len()]).collect();
        let deck = &self.layout.deck_template;
        let prob: f64 = groups
            .iter()
            .map(|g| {
                let d = g.deck.len();
                (0..g.slots.len())
                    .map(|k| 1.0 / (d - k) as f64)
                    .product::<f64>()
            })
            .product();
        // Odometer over every group's ordered tuple of distinct deck positions.
        'outer: loop {
            let distinct = choice
                .iter()
                .all(|c| c.iter().enumerate().all(|(i, x)| !c[..i].contains(x)));
            if distinct {
                for (g, c) in groups.iter().zip(&choice) {
                    for (k, &slot) in g.slots.iter().enumerate() {
                        let cell = deck[g.deck.start + c[k]] as usize;
                        state.pos[slot as usize] = GridPos {
                            x: (cell % self.layout.width) as i16,
                            y: (cell / self.layout.width) as i16,
                        };
                        state.alive[slot as usize] = Alive(true);
                    }
                }
                state.clock.t = 0;
                state.rebuild(&self.layout);
                if let Some(i) = self.encode(&state) {
                    out.push((i, prob));
                }
            }
            for (g, c) in groups.iter().zip(choice.iter_mut()) {
                for x in c.iter_mut() {
                    *x += 1;
                    if *x < g.deck.len() {
                        continue 'outer;
                    }
                    *x = 0;
                }
            }
            break;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_probabilities_sum_to_one_and_match_the_counting() {
        for n in [2usize, 3, 5, 9] {
            let p = below_probs(n);
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-15);
            for v in &p {
                assert!((v - 1.0 / n as f64).abs() < 1e-9);
            }
        }
    }
}
