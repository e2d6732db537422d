//! Everything derived once from a scenario that every arena of a batch shares: the one named
//! place where derived quantities are computed.

use bevy_ecs::prelude::*;

use crate::components::{CELL_CHANNELS, CELL_EVADERS, CELL_OBSTACLE, CELL_PURSUERS};
use crate::rng;
use crate::scenario::{
    ActionSet, Channel, ChemistryParams, CoinParams, Control, GiftParams, Grid, LoadedScenario,
    MatrixParams, PursuitParams, RoleKind, Scenario, Substrate, Tile, Window,
};

/// One role kind's spawn cells and the slots that spawn on them.
#[derive(Debug, Clone)]
pub struct SpawnGroup {
    /// The role kind.
    pub kind: RoleKind,
    /// Range of this group's segment in the arena's `SpawnDeck`.
    pub deck: std::ops::Range<usize>,
    /// Agent slots that draw from this segment (each gets a distinct cell).
    pub slots: Vec<u16>,
}

/// Pursuit's derived data.
#[derive(Debug, Clone)]
pub struct PursuitLayout {
    /// The parameters.
    pub params: PursuitParams,
    /// Window side in cells.
    pub side: usize,
    /// For each observation channel, its offset in a `Cells` cell.
    pub channel_offsets: Vec<usize>,
    /// True when the observation channels are exactly the cell layer's, so a window row is one
    /// copy.
    pub obs_is_cell_layout: bool,
}

/// A compiled chemistry reaction: compound ids are index + 1, 0 is empty.
#[derive(Debug, Clone)]
pub struct Reaction {
    /// Reactant ids in order.
    pub reactants: Vec<u8>,
    /// Product ids paired with the reactants.
    pub products: Vec<u8>,
    /// Reward to each player whose vesicle took part.
    pub reward: f32,
}

/// The avatar substrates' (gift_refinements, chemistry) derived data.
#[derive(Debug, Clone)]
pub struct AvatarLayout {
    /// The facing-rotated window.
    pub window: Window,
    /// Map cells (`y * width + x`) that grow tokens (gift) — regrowth candidates.
    pub token_cells: Vec<u16>,
    /// Chemistry: firing threshold (scaled to 2^32) per compound id on the ground.
    pub fire_ground: Vec<u64>,
    /// Chemistry: firing threshold per compound id in a vesicle.
    pub fire_vesicle: Vec<u64>,
    /// Chemistry: reactions.
    pub reactions: Vec<Reaction>,
    /// Chemistry: for each compound id, the reactions it takes part in.
    pub reactions_of: Vec<Vec<u16>>,
    /// Window cell offsets per facing (see `avatars::window_offsets`).
    pub offsets: [Vec<isize>; 4],
    /// gift_refinements: ln(1 - regrow_prob), for geometric gaps between regrowth events.
    pub regrow_log: f64,
    /// chemistry: ln(1 - p) of empty cells initiating (0 when they never do).
    pub empty_log: f64,
    /// gift_refinements: random-end threshold scaled to 2^32.
    pub end_threshold: u64,
}

/// Substrate-specific derived data.
#[derive(Debug, Clone)]
pub enum Rules {
    /// Pursuit.
    Pursuit(PursuitLayout),
    /// gift_refinements.
    Gift(GiftParams, AvatarLayout),
    /// chemistry.
    Chemistry(ChemistryParams, AvatarLayout),
    /// The coin game.
    Coin(CoinParams),
    /// A matrix game.
    Matrix(MatrixParams),
}

impl Rules {
    /// Whether agents have facings and carry things (gift_refinements, chemistry).
    pub fn has_avatars(&self) -> bool {
        matches!(self, Rules::Gift(..) | Rules::Chemistry(..))
    }
}

/// Static per-batch data derived from the scenario.
#[derive(Resource, Debug, Clone)]
pub struct Layout {
    /// The scenario this was derived from.
    pub scenario: Scenario,
    /// Substrate-specific derived data.
    pub rules: Rules,
    /// Map columns (1 for matrix games).
    pub width: usize,
    /// Map rows (1 for matrix games).
    pub height: usize,
    /// `width * height`, true where agents may stand.
    pub open: Vec<bool>,
    /// Padding around the map in grid `Cells` (the farthest a window reaches).
    pub pad: usize,
    /// Columns of the padded cell grid.
    pub padded_width: usize,
    /// Initial content of every arena's `Cells`.
    pub cells_template: Vec<u8>,
    /// M: agents per arena.
    pub agents: usize,
    /// N: learners per arena (slots `0..N`).
    pub learners: usize,
    /// Role kind per slot.
    pub slot_kind: Vec<RoleKind>,
    /// Control per slot.
    pub slot_control: Vec<Control>,
    /// Role index (into `scenario.roles`) per slot.
    pub slot_role: Vec<u16>,
    /// Slots of pursuers, ascending.
    pub pursuer_slots: Vec<u16>,
    /// Slots of evaders, ascending.
    pub evader_slots: Vec<u16>,
    /// Spawn groups, one per role kind present (none for matrix games).
    pub spawn_groups: Vec<SpawnGroup>,
    /// Initial content of every arena's `SpawnDeck`.
    pub deck_template: Vec<u16>,
    /// Observation bytes per learner.
    pub obs_len: usize,
    /// The action set.
    pub action_set: ActionSet,
    /// Number of actions.
    pub actions: usize,
    /// The action of an agent that left the arena.
    pub idle_action: u8,
    /// Slip probability scaled to 2^32 (see `rng::threshold`).
    pub slip_threshold: u64,
    /// Episode step limit.
    pub max_steps: u32,
    /// Names of the per-episode substrate counters.
    pub counter_names: Vec<String>,
}

/// Bytes per cell in the avatar substrates' observation window: wall, item, avatar, and the
/// other avatar's facing relative to the observer as four one-hot bytes (same, right, opposite,
/// left).
pub const AVATAR_CELL_BYTES: usize = 7;

/// Observation bytes per learner (layouts in docs/scenarios.md).
pub fn observation_len(scenario: &Scenario) -> usize {
    match &scenario.substrate {
        Substrate::Pursuit(_) => {
            let channels = if scenario.observation.channels.is_empty() {
                3
            } else {
                scenario.observation.channels.len()
            };
            scenario.observation.side().pow(2) * channels
        }
        Substrate::GiftRefinements(_) | Substrate::Chemistry(_) => {
            let w = scenario.observation.window.unwrap_or(Window::MELTING_POT);
            let extras = if matches!(scenario.substrate, Substrate::GiftRefinements(_)) {
                4
            } else {
                2
            };
            w.width() * w.depth() * AVATAR_CELL_BYTES + extras
        }
        Substrate::CoinGame(_) => {
            let cells = scenario.map.len() * scenario.map.first().map_or(0, |r| r.chars().count());
            cells * 4
        }
        Substrate::MatrixGame(m) => scenario.agents_per_arena() * m.actions as usize + 1,
    }
}

impl Layout {
    /// Derives the layout from a validated scenario.
    pub fn derive(loaded: &LoadedScenario) -> Layout {
        let LoadedScenario { scenario, grid } = loaded;
        let Grid { width, height, .. } = *grid;
        let action_set = scenario.action_set();

        // Slots: learners first (in role order), then scripted agents (in role order).
        let (mut slot_kind, mut slot_control, mut slot_role) = (Vec::new(), Vec::new(), Vec::new());
        for learners_pass in [true, false] {
            for (r, role) in scenario.roles.iter().enumerate() {
                if (role.control() == Control::Learner) == learners_pass {
                    for _ in 0..role.count {
                        slot_kind.push(role.kind);
                        slot_control.push(role.control());
                        slot_role.push(r as u16);
                    }
                }
            }
        }
        let agents = slot_kind.len();

        // Spawn decks: per role kind, its own spawn cells and the any-role ones.
        let mut spawn_groups = Vec::new();
        let mut deck_template = Vec::new();
        if scenario.substrate.uses_map() {
            for kind in scenario.substrate.role_kinds() {
                let slots: Vec<u16> = (0..agents)
                    .filter(|&s| slot_kind[s] == *kind)
                    .map(|s| s as u16)
                    .collect();
                if slots.is_empty() {
                    continue;
                }
                let start = deck_template.len();
                let anywhere = scenario.substrate.spawns_anywhere();
                for (i, t) in grid.tiles.iter().enumerate() {
                    if (anywhere && t.is_open()) || *t == kind.spawn_tile() || *t == Tile::SpawnAny
                    {
                        deck_template.push(i as u16);
                    }
                }
                spawn_groups.push(SpawnGroup {
                    kind: *kind,
                    deck: start..deck_template.len(),
                    slots,
                });
            }
        }

        let (rules, pad, counter_names) = match &scenario.substrate {
            Substrate::Pursuit(params) => {
                let channels = if scenario.observation.channels.is_empty() {
                    scenario.substrate.channels().to_vec()
                } else {
                    scenario.observation.channels.clone()
                };
                let channel_offsets: Vec<usize> = channels
                    .iter()
                    .map(|c| match c {
                        Channel::Obstacle => CELL_OBSTACLE,
                        Channel::Pursuers => CELL_PURSUERS,
                        Channel::Evaders => CELL_EVADERS,
                    })
                    .collect();
                let obs_is_cell_layout =
                    channel_offsets == [CELL_OBSTACLE, CELL_PURSUERS, CELL_EVADERS];
                let rules = Rules::Pursuit(PursuitLayout {
                    params: params.clone(),
                    side: scenario.observation.side(),
                    channel_offsets,
                    obs_is_cell_layout,
                });
                // At least one cell of padding: tags and surround catches read the four
                // neighbours of every agent, also with a radius-0 window.
                (
                    rules,
                    (scenario.observation.radius.unwrap_or(0) as usize).max(1),
                    vec!["catches".to_string()],
                )
            }
            Substrate::GiftRefinements(params) => {
                let window = scenario.observation.window.unwrap_or(Window::MELTING_POT);
                let avatar = AvatarLayout {
                    window,
                    token_cells: (0..grid.tiles.len())
                        .filter(|&i| grid.tiles[i] == Tile::Token)
                        .map(|i| i as u16)
                        .collect(),
                    fire_ground: Vec::new(),
                    fire_vesicle: Vec::new(),
                    reactions: Vec::new(),
                    reactions_of: Vec::new(),
                    offsets: Default::default(),
                    regrow_log: (1.0 - params.regrow_prob).ln(),
                    empty_log: 0.0,
                    end_threshold: rng::threshold(params.end_prob),
                };
                let names = [
                    "tokens_picked",
                    "gifts_level1",
                    "gifts_level2",
                    "gifts_level3",
                    "consumptions",
                    "tokens_consumed",
                ];
                let pad = window_pad(window, params.beam_length);
                (
                    Rules::Gift(params.clone(), avatar),
                    pad,
                    names.map(String::from).to_vec(),
                )
            }
            Substrate::Chemistry(params) => {
                let window = scenario.observation.window.unwrap_or(Window::MELTING_POT);
                let id = |name: &str| -> u8 {
                    params
                        .compounds
                        .iter()
                        .position(|c| c.name == name)
                        .map_or(0, |k| k as u8 + 1)
                };
                let group = |name: &str| params.groups.iter().find(|g| g.name == name);
                let mut fire_ground = vec![0u64];
                let mut fire_vesicle = vec![0u64];
                for c in &params.compounds {
                    let g = group(&c.group);
                    fire_ground.push(g.map_or(0, |g| rng::threshold(g.ground)));
                    fire_vesicle.push(g.map_or(0, |g| rng::threshold(g.vesicle)));
                }
                let reactions: Vec<Reaction> = params
                    .reactions
                    .iter()
                    .map(|r| Reaction {
                        reactants: r.reactants.iter().map(|n| id(n)).collect(),
                        products: r.products.iter().map(|n| id(n)).collect(),
                        reward: r.reward,
                    })
                    .collect();
                let mut reactions_of = vec![Vec::new(); params.compounds.len() + 1];
                for (k, r) in reactions.iter().enumerate() {
                    for &c in &r.reactants {
                        if !reactions_of[c as usize].contains(&(k as u16)) {
                            reactions_of[c as usize].push(k as u16);
                        }
                    }
                }
                let avatar = AvatarLayout {
                    window,
                    token_cells: Vec::new(),
                    fire_ground,
                    fire_vesicle,
                    reactions,
                    reactions_of,
                    offsets: Default::default(),
                    regrow_log: 0.0,
                    empty_log: params
                        .empty_group
                        .as_deref()
                        .and_then(group)
                        .map_or(0.0, |g| (1.0 - g.ground).ln()),
                    end_threshold: 0,
                };
                let names = params
                    .reactions
                    .iter()
                    .map(|r| format!("reaction_{}", r.name))
                    .collect();
                (
                    Rules::Chemistry(params.clone(), avatar),
                    window_pad(window, 1),
                    names,
                )
            }
            Substrate::CoinGame(params) => (
                Rules::Coin(params.clone()),
                0,
                vec!["coins_own".into(), "coins_other".into()],
            ),
            Substrate::MatrixGame(params) => {
                let names = (0..params.actions).map(|a| format!("chose_{a}")).collect();
                (Rules::Matrix(params.clone()), 0, names)
            }
        };

        let padded_width = width + 2 * pad;
        let padded_height = height + 2 * pad;
        let cells_template = match &rules {
            Rules::Pursuit(_) => {
                let mut cells = vec![0u8; padded_width * padded_height * CELL_CHANNELS];
                for py in 0..padded_height {
                    for px in 0..padded_width {
                        let open = grid.is_open(px as i32 - pad as i32, py as i32 - pad as i32);
                        cells[(py * padded_width + px) * CELL_CHANNELS + CELL_OBSTACLE] =
                            u8::from(!open);
                    }
                }
                cells
            }
            Rules::Gift(..) | Rules::Chemistry(..) => {
                let mut cells = vec![0u8; padded_width * padded_height * CELL_CHANNELS];
                for py in 0..padded_height {
                    for px in 0..padded_width {
                        let (x, y) = (px as i32 - pad as i32, py as i32 - pad as i32);
                        let i = (py * padded_width + px) * CELL_CHANNELS;
                        match grid.tile(x, y) {
                            None | Some(Tile::Wall) => cells[i] = crate::substrate::avatars::WALL,
                            // Token cells start empty, as in Melting Pot, and regrow.
                            Some(Tile::Token) => cells[i] = crate::substrate::avatars::TOKEN_CELL,
                            Some(Tile::Compound(k)) => cells[i + 1] = k + 1,
                            Some(_) => {}
                        }
                    }
                }
                cells
            }
            Rules::Coin(_) => vec![0u8; 3],
            Rules::Matrix(_) => vec![0u8; agents + 1],
        };

        let slots_of = |kind: RoleKind| -> Vec<u16> {
            (0..agents)
                .filter(|&s| slot_kind[s] == kind)
                .map(|s| s as u16)
                .collect()
        };
        let mut layout = Layout {
            pursuer_slots: slots_of(RoleKind::Pursuer),
            evader_slots: slots_of(RoleKind::Evader),
            scenario: scenario.clone(),
            rules,
            width,
            height,
            open: grid.tiles.iter().map(|t| t.is_open()).collect(),
            pad,
            padded_width,
            cells_template,
            agents,
            learners: scenario.learners_per_arena(),
            slot_kind,
            slot_control,
            slot_role,
            spawn_groups,
            deck_template,
            obs_len: observation_len(scenario),
            action_set,
            actions: action_set.len(),
            idle_action: action_set.idle(),
            slip_threshold: rng::threshold(scenario.slip),
            max_steps: scenario.max_steps,
            counter_names,
        };
        // Window offsets depend on the padded width, known only now.
        let offsets = match &layout.rules {
            Rules::Gift(_, av) | Rules::Chemistry(_, av) => {
                Some(crate::substrate::avatars::window_offsets(&layout, av))
            }
            _ => None,
        };
        if let (Some(offsets), Rules::Gift(_, av) | Rules::Chemistry(_, av)) =
            (offsets, &mut layout.rules)
        {
            av.offsets = offsets;
        }
        layout
    }

    /// Whether (x, y) is on the map and open.
    #[inline]
    pub fn is_open(&self, x: i32, y: i32) -> bool {
        x >= 0
            && y >= 0
            && (x as usize) < self.width
            && (y as usize) < self.height
            && self.open[y as usize * self.width + x as usize]
    }

    /// Index of cell (x, y)'s first byte in a padded grid `Cells` layer; (x, y) may lie in the
    /// padding (up to `pad` cells outside the map).
    #[inline]
    pub fn cell_index(&self, x: i16, y: i16) -> usize {
        let pad = self.pad as isize;
        let i = (y as isize + pad) * self.padded_width as isize + x as isize + pad;
        i as usize * CELL_CHANNELS
    }

    /// Bytes one arena needs across components and step buffers (for the memory preflight).
    pub fn bytes_per_arena(&self) -> usize {
        use crate::components::*;
        let agent = size_of::<AgentId>()
            + size_of::<GridPos>()
            + size_of::<Alive>()
            + size_of::<AppliedAction>()
            + size_of::<StepReward>()
            + size_of::<EpisodeReturn>()
            + size_of::<Facing>()
            + size_of::<Carry>()
            + size_of::<Cooldown>()
            + 96; // entity bookkeeping and change ticks
        let arena = size_of::<ArenaRng>()
            + self.cells_template.len()
            + self.deck_template.len() * 2
            + self.counter_names.len() * 4
            + 512;
        let buffers = self.learners * (self.obs_len + 1 + 4) + 2;
        self.agents * agent + arena + buffers
    }
}

/// How far a facing-rotated window (or a beam) reaches from the agent.
fn window_pad(w: Window, beam: u8) -> usize {
    [w.left, w.right, w.ahead, w.behind]
        .into_iter()
        .max()
        .unwrap_or(0)
        .max(beam as u16) as usize
}
