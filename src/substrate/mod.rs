//! Substrates: the rules of each game, written once as functions over one arena's state
//! ([`ArenaMut`]), plus what every substrate shares: chance outcomes (slip, scripted moves),
//! spawning and the per-phase dispatch the systems call. The ECS systems run these for every
//! arena in parallel; exact analysis runs them on a single [`ArenaState`].

pub mod avatars;
pub mod chemistry;
pub mod coin;
pub mod gift;
pub mod matrix;
pub mod pursuit;

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use crate::components::{
    Alive, AppliedAction, ArenaRng, Carry, Cooldown, EpisodeClock, EpisodeReturn, Facing, GridPos,
    StepReward,
};
use crate::layout::{Layout, Rules};
use crate::rng::below;
use crate::scenario::Control;

/// One arena's state and step buffers, borrowed from the batch columns (or from an
/// [`ArenaState`]). Agent slices have M entries in slot order.
pub struct ArenaMut<'a> {
    /// Positions.
    pub pos: &'a mut [GridPos],
    /// Facings (avatar substrates).
    pub facing: &'a mut [Facing],
    /// Alive flags.
    pub alive: &'a mut [Alive],
    /// Actions applied this step (after chance).
    pub applied: &'a mut [AppliedAction],
    /// This step's rewards.
    pub reward: &'a mut [StepReward],
    /// Episode returns so far.
    pub ret: &'a mut [EpisodeReturn],
    /// Inventories or vesicles.
    pub carry: &'a mut [Carry],
    /// Cooldowns.
    pub cooldown: &'a mut [Cooldown],
    /// Random streams.
    pub rng: &'a mut ArenaRng,
    /// The cell layer.
    pub cells: &'a mut [u8],
    /// Per-episode counters.
    pub counters: &'a mut [u32],
    /// Episode clock.
    pub clock: &'a mut EpisodeClock,
    /// Spawn permutation scratch.
    pub deck: &'a mut [u16],
    /// Set by the rules when they end the episode this step.
    pub ended: &'a mut bool,
    /// `[N]` learners' chosen actions.
    pub actions: &'a [u8],
    /// `[N, O]` learners' observations.
    pub obs: &'a mut [u8],
    /// `[N]` learners' rewards.
    pub rewards: &'a mut [f32],
    /// Terminated flag.
    pub terminated: &'a mut u8,
    /// Truncated flag.
    pub truncated: &'a mut u8,
}

/// One arena held by itself, outside any World: what exact analysis decodes a state index into.
/// [`ArenaState::view`] lends it as an [`ArenaMut`] so the same rule functions run on it.
#[derive(Debug, Clone)]
pub struct ArenaState {
    /// Position per slot.
    pub pos: Vec<GridPos>,
    /// Facing per slot.
    pub facing: Vec<Facing>,
    /// Alive flag per slot.
    pub alive: Vec<Alive>,
    /// Carried items per slot.
    pub carry: Vec<Carry>,
    /// Cooldown per slot.
    pub cooldown: Vec<Cooldown>,
    /// The cell layer.
    pub cells: Vec<u8>,
    /// Counters.
    pub counters: Vec<u32>,
    /// Clock.
    pub clock: EpisodeClock,
    applied: Vec<AppliedAction>,
    reward: Vec<StepReward>,
    ret: Vec<EpisodeReturn>,
    deck: Vec<u16>,
    obs: Vec<u8>,
    rewards: Vec<f32>,
    rng: ArenaRng,
    actions: Vec<u8>,
    ended: bool,
    terminated: u8,
    truncated: u8,
}

/// What one step did to an arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepOutcome {
    /// The rules ended the episode.
    pub terminated: bool,
}

impl ArenaState {
    /// A state with the given agents (facing north, nothing carried); cells are rebuilt.
    pub fn new(layout: &Layout, pos: Vec<GridPos>, alive: Vec<Alive>) -> ArenaState {
        let m = layout.agents;
        let mut state = ArenaState {
            pos,
            facing: vec![Facing(0); m],
            alive,
            carry: vec![Carry::default(); m],
            cooldown: vec![Cooldown(0); m],
            cells: layout.cells_template.clone(),
            counters: vec![0; layout.counter_names.len()],
            clock: EpisodeClock::default(),
            applied: vec![AppliedAction(layout.idle_action); m],
            reward: vec![StepReward(0.0); m],
            ret: vec![EpisodeReturn(0.0); m],
            deck: layout.deck_template.clone(),
            obs: vec![0; layout.learners * layout.obs_len],
            rewards: vec![0.0; layout.learners],
            rng: crate::rng::arena_streams(0, 0),
            actions: vec![layout.idle_action; layout.learners],
            ended: false,
            terminated: 0,
            truncated: 0,
        };
        let mut a = state.view();
        rebuild_cells(layout, &mut a);
        state
    }

    /// Lends the state as an [`ArenaMut`].
    pub fn view(&mut self) -> ArenaMut<'_> {
        ArenaMut {
            pos: &mut self.pos,
            facing: &mut self.facing,
            alive: &mut self.alive,
            applied: &mut self.applied,
            reward: &mut self.reward,
            ret: &mut self.ret,
            carry: &mut self.carry,
            cooldown: &mut self.cooldown,
            rng: &mut self.rng,
            cells: &mut self.cells,
            counters: &mut self.counters,
            clock: &mut self.clock,
            deck: &mut self.deck,
            ended: &mut self.ended,
            actions: &self.actions,
            obs: &mut self.obs,
            rewards: &mut self.rewards,
            terminated: &mut self.terminated,
            truncated: &mut self.truncated,
        }
    }

    /// This step's rewards by slot (after [`transition`]).
    pub fn rewards(&self) -> &[StepReward] {
        &self.reward
    }

    /// Writes and returns the learners' observations `[N, O]` of this state.
    pub fn observe(&mut self, layout: &Layout) -> &[u8] {
        let mut a = self.view();
        write_observations(layout, &mut a);
        &self.obs
    }

    /// Recomputes the cell layer's derived parts after positions or alive flags were set by
    /// hand.
    pub fn rebuild(&mut self, layout: &Layout) {
        let mut a = self.view();
        rebuild_cells(layout, &mut a);
    }
}

/// The rules of one step on one arena, given the applied actions (chance already resolved for
/// slip and scripted agents; the substrate's own chance comes from the arena's `rules` stream):
/// move, interactions, rewards. The step schedule runs exactly these functions, one system
/// each, over every arena.
pub fn transition(
    layout: &Layout,
    state: &mut ArenaState,
    applied: &[AppliedAction],
) -> StepOutcome {
    state.applied.copy_from_slice(applied);
    state.ended = false;
    let mut a = state.view();
    apply_moves(layout, &mut a);
    resolve_interactions(layout, &mut a);
    assign_rewards(layout, &mut a);
    StepOutcome {
        terminated: state.ended,
    }
}

/// Draws this step's chance outcomes into the applied actions: a learner's action is kept, or
/// with probability `slip` replaced by a uniformly random one (possibly the same); a random
/// walker's action is uniform. Removed agents idle. The only randomness a step draws before the
/// substrate runs.
pub fn draw_chance(layout: &Layout, a: &mut ArenaMut) {
    let n = layout.actions as u32;
    for slot in 0..layout.agents {
        if !a.alive[slot].0 {
            a.applied[slot] = AppliedAction(layout.idle_action);
            continue;
        }
        a.applied[slot] = AppliedAction(match layout.slot_control[slot] {
            Control::Learner => {
                let intended = a.actions[slot];
                if layout.slip_threshold == 0 {
                    intended
                } else {
                    let bits = a.rng.slip.next_u64();
                    if (bits & 0xffff_ffff) < layout.slip_threshold {
                        below((bits >> 32) as u32, n) as u8
                    } else {
                        intended
                    }
                }
            }
            Control::RandomWalk => below(a.rng.walk.next_u32(), n) as u8,
        });
    }
}

/// Movement phase.
pub fn apply_moves(layout: &Layout, a: &mut ArenaMut) {
    match &layout.rules {
        Rules::Pursuit(_) => {
            pursuit::apply_moves(layout, a.pos, a.alive, a.applied);
            pursuit::tally_cells(layout, a.pos, a.alive, a.cells);
        }
        Rules::Gift(params, _) => avatars::apply_moves(layout, a, Some(params)),
        Rules::Chemistry(..) => avatars::apply_moves(layout, a, None),
        Rules::Coin(params) => coin::apply_moves(layout, params, a),
        Rules::Matrix(_) => {}
    }
}

/// The substrate's own rules after movement (tags and catches, gifts, reactions, coins,
/// payoffs); sets `a.ended` when they end the episode.
pub fn resolve_interactions(layout: &Layout, a: &mut ArenaMut) {
    match &layout.rules {
        Rules::Pursuit(p) => {
            let caught =
                pursuit::resolve_interactions(layout, &p.params, a.pos, a.alive, a.cells, a.reward);
            a.counters[0] += caught as u32;
            *a.ended = pursuit::terminated(layout, a.alive);
        }
        Rules::Gift(params, avatar) => gift::interact(layout, params, avatar, a),
        Rules::Chemistry(params, avatar) => chemistry::interact(layout, params, avatar, a),
        Rules::Coin(params) => coin::interact(layout, params, a),
        Rules::Matrix(params) => matrix::interact(layout, params, a),
    }
}

/// Per-step reward terms and sharing (Pursuit); every substrate then adds the step's rewards to
/// the episode returns and publishes the learners' rewards.
pub fn assign_rewards(layout: &Layout, a: &mut ArenaMut) {
    if let Rules::Pursuit(p) = &layout.rules {
        pursuit::assign_rewards(layout, &p.params, a.alive, a.reward);
    }
    for (ret, r) in a.ret.iter_mut().zip(a.reward.iter()) {
        ret.0 += r.0;
    }
    for (out, r) in a.rewards.iter_mut().zip(a.reward.iter()) {
        *out = r.0;
    }
}

/// Writes every learner's observation.
pub fn write_observations(layout: &Layout, a: &mut ArenaMut) {
    match &layout.rules {
        Rules::Pursuit(p) => pursuit::write_observations(layout, p, a.pos, a.alive, a.cells, a.obs),
        Rules::Gift(_, avatar) | Rules::Chemistry(_, avatar) => {
            avatars::write_observations(layout, avatar, a)
        }
        Rules::Coin(_) => coin::write_observations(layout, a),
        Rules::Matrix(params) => matrix::write_observations(layout, params, a),
    }
}

/// Recomputes the derived parts of the cell layer from the agents (after a hand-set state).
pub fn rebuild_cells(layout: &Layout, a: &mut ArenaMut) {
    match &layout.rules {
        Rules::Pursuit(_) => pursuit::tally_cells(layout, a.pos, a.alive, a.cells),
        Rules::Gift(..) | Rules::Chemistry(..) => avatars::mark_avatars(layout, a),
        Rules::Coin(_) | Rules::Matrix(_) => {}
    }
}

/// Starts a new episode: fresh cells, agents on spawn cells, counters and returns cleared.
pub fn spawn(layout: &Layout, a: &mut ArenaMut) {
    a.cells.copy_from_slice(&layout.cells_template);
    a.counters.fill(0);
    for r in a.ret.iter_mut() {
        *r = EpisodeReturn(0.0);
    }
    for ((c, cd), al) in a
        .carry
        .iter_mut()
        .zip(a.cooldown.iter_mut())
        .zip(a.alive.iter_mut())
    {
        *c = Carry::default();
        *cd = Cooldown(0);
        *al = Alive(true);
    }
    place_agents(layout, &mut a.rng.spawn, a.deck, a.pos, a.facing);
    match &layout.rules {
        Rules::Coin(_) => coin::place_coin(layout, a),
        _ => rebuild_cells(layout, a),
    }
}

/// Places every agent on a spawn cell (distinct within a role kind, drawn uniformly by a
/// partial Fisher-Yates over the arena's deck) with a random facing where facings matter.
fn place_agents(
    layout: &Layout,
    rng: &mut ChaCha8Rng,
    deck: &mut [u16],
    pos: &mut [GridPos],
    facing: &mut [Facing],
) {
    let turns = matches!(layout.rules, Rules::Gift(..) | Rules::Chemistry(..));
    for group in &layout.spawn_groups {
        let cells = &mut deck[group.deck.clone()];
        for (k, &slot) in group.slots.iter().enumerate() {
            let j = k + below(rng.next_u32(), (cells.len() - k) as u32) as usize;
            cells.swap(k, j);
            let cell = cells[k] as usize;
            pos[slot as usize] = GridPos {
                x: (cell % layout.width) as i16,
                y: (cell / layout.width) as i16,
            };
            if turns {
                facing[slot as usize] = Facing(below(rng.next_u32(), 4) as u8);
            }
        }
    }
}

/// The substrate's items for a rollout frame: avatar substrates the item byte of every map cell
/// (gift: token 0/1; chemistry: compound index + 1), the coin game `[cell low, cell high,
/// colour]`, matrix games the previous joint action and its flag; Pursuit nothing.
pub fn frame_items(layout: &Layout, cells: &[u8]) -> Vec<u8> {
    match &layout.rules {
        Rules::Pursuit(_) => Vec::new(),
        Rules::Gift(..) | Rules::Chemistry(..) => (0..layout.height as i16)
            .flat_map(|y| (0..layout.width as i16).map(move |x| (x, y)))
            .map(|(x, y)| cells[layout.cell_index(x, y) + avatars::ITEM])
            .collect(),
        Rules::Coin(_) | Rules::Matrix(_) => cells.to_vec(),
    }
}
