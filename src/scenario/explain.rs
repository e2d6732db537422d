//! What the engine will run for a scenario, in words ([`explain`], printed by `gridarena check
//! --explain`): the scenario with its defaults written out, the roles and their slots, a
//! learner's observation block by block, the actions, and the map's legend and counts.
//!
//! Every number comes from the same hooks the engine uses (the substrate's
//! `observation_layout`, from which the observation length is derived; the action set; the
//! decoded grid), so the explanation cannot disagree with what runs; tests/explain.rs checks it
//! against [`Layout::derive`](crate::layout::Layout::derive) and against rollouts.

use std::fmt;
use std::ops::Range;

use super::actions::ActionSet;
use super::map::{LEGEND, Tile};
use super::observation::ObsField;
use super::role::{Control, RoleKind};
use super::{LoadedScenario, Scenario};

/// A scenario explained: what `gridarena check --explain` prints (its [`fmt::Display`]).
#[derive(Debug, Clone)]
pub struct Explanation {
    /// The scenario's name.
    pub name: String,
    /// The substrate's name.
    pub substrate: &'static str,
    /// The substrate's one-line summary of its parameters.
    pub summary: String,
    /// The scenario with every default written out ([`Scenario::resolved`]).
    pub resolved: Scenario,
    /// The roles in asset order, with the agent slots they take.
    pub roles: Vec<RoleExplanation>,
    /// A learner's observation block by block, in byte order (the same for every learner).
    pub observation: Vec<PlacedField>,
    /// Observation bytes per learner (the blocks' lengths summed).
    pub observation_bytes: usize,
    /// The arena's global state block by block, in byte order (the same for every arena;
    /// what `EnvBatch::global_state` holds once kept).
    pub global_state: Vec<PlacedField>,
    /// Global-state bytes per arena.
    pub global_state_bytes: usize,
    /// Whether the substrate keeps an action mask `[N, A]` (`EnvBatch::action_mask`).
    pub action_mask: bool,
    /// The action set.
    pub action_set: ActionSet,
    /// Action names in index order.
    pub actions: Vec<String>,
    /// The map, when the substrate plays on one.
    pub map: Option<MapExplanation>,
}

/// One role: its kind, how many agents, who controls them and their slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleExplanation {
    /// The role's kind.
    pub kind: RoleKind,
    /// Agents of this role per arena.
    pub count: usize,
    /// Who controls them, defaults resolved.
    pub control: Control,
    /// Their agent slots: learners take the first slots (in role order), scripted agents the
    /// rest; a learner's slot is also its observation and action index.
    pub slots: Range<usize>,
}

/// An observation block at its byte offset in a learner's observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedField {
    /// Offset of the block's first byte.
    pub offset: usize,
    /// The block.
    pub field: ObsField,
}

/// The map: its size, the legend of the symbols it uses, and counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapExplanation {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Every symbol the map uses, in legend order (base legend, then the substrate's own),
    /// with its meaning and how many cells hold it.
    pub legend: Vec<SymbolCount>,
    /// Cells agents can stand on.
    pub open: usize,
    /// Wall cells.
    pub walls: usize,
    /// Whether agents spawn on any open cell (rather than on spawn symbols).
    pub spawns_anywhere: bool,
    /// Per role kind present, the cells its agents may spawn on (its own symbol and `*`, or
    /// every open cell).
    pub spawns: Vec<(RoleKind, usize)>,
    /// The legend entries of cells that hold an item at the start or grow one (tokens,
    /// compounds, the goal).
    pub items: Vec<SymbolCount>,
}

/// A map symbol, its meaning and its number of cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolCount {
    /// The symbol.
    pub symbol: char,
    /// What it means.
    pub meaning: String,
    /// Cells holding it.
    pub count: usize,
}

/// Explains a validated scenario.
///
/// ```
/// use gridarena::scenario::{Scenario, explain};
///
/// let loaded = Scenario::load("assets/scenarios/coin_game.ron".as_ref())?;
/// let e = explain(&loaded);
/// assert_eq!(e.observation_bytes, loaded.scenario.observation_len());
/// assert_eq!(e.actions, ["left", "right", "up", "down", "stay"]);
/// assert!(e.to_string().contains("observation per learner"));
/// # Ok::<(), gridarena::error::ScenarioError>(())
/// ```
pub fn explain(loaded: &LoadedScenario) -> Explanation {
    let s = &loaded.scenario;
    let (observation, observation_bytes) = placed(s.observation_layout());
    let (global_state, global_state_bytes) = placed(s.global_state_layout());
    Explanation {
        name: s.name.clone(),
        substrate: s.substrate.name(),
        summary: s.substrate.describe(),
        resolved: s.resolved(),
        roles: roles(s),
        observation,
        observation_bytes,
        global_state,
        global_state_bytes,
        action_mask: s.has_action_mask(),
        action_set: s.action_set(),
        actions: s.action_names(),
        map: s.substrate.uses_map().then(|| map(loaded)),
    }
}

/// Writes a table of blocks at their offsets.
fn blocks(f: &mut fmt::Formatter<'_>, placed: &[PlacedField]) -> fmt::Result {
    let shapes: Vec<String> = placed.iter().map(|p| p.field.shape_string()).collect();
    let vals: Vec<String> = placed.iter().map(|p| values(&p.field)).collect();
    let sw = shapes.iter().map(String::len).max().unwrap_or(0).max(5);
    let vw = vals.iter().map(String::len).max().unwrap_or(0).max(6);
    writeln!(
        f,
        "  {:>6}  {:>6}  {:<sw$}  {:<vw$}  block: meaning",
        "offset", "length", "shape", "values"
    )?;
    for ((p, shape), v) in placed.iter().zip(&shapes).zip(&vals) {
        writeln!(
            f,
            "  {:>6}  {:>6}  {shape:<sw$}  {v:<vw$}  {}: {}",
            p.offset,
            p.field.len(),
            p.field.name,
            p.field.meaning
        )?;
        if let Some(e) = entries(&p.field) {
            writeln!(f, "  {:>6}  {:>6}  {e}", "", "")?;
        }
    }
    Ok(())
}

/// Blocks at their byte offsets, and the bytes they take together.
fn placed(fields: Vec<ObsField>) -> (Vec<PlacedField>, usize) {
    let mut out = Vec::new();
    let mut offset = 0;
    for field in fields {
        let len = field.len();
        out.push(PlacedField { offset, field });
        offset += len;
    }
    (out, offset)
}

/// The roles with their slots: learners first, then scripted agents, each in role order.
fn roles(s: &Scenario) -> Vec<RoleExplanation> {
    let learners = s.learners_per_arena();
    let (mut next_learner, mut next_scripted) = (0, learners);
    s.roles
        .iter()
        .map(|r| {
            let count = r.count as usize;
            let next = if r.control() == Control::Learner {
                &mut next_learner
            } else {
                &mut next_scripted
            };
            let slots = *next..*next + count;
            *next += count;
            RoleExplanation {
                kind: r.kind,
                count,
                control: r.control(),
                slots,
            }
        })
        .collect()
}

/// The map's legend in use, its counts and its spawn cells per role kind.
fn map(loaded: &LoadedScenario) -> MapExplanation {
    let (s, grid) = (&loaded.scenario, &loaded.grid);
    let cells = |tile: Tile| grid.tiles.iter().filter(|t| **t == tile).count();
    let mut legend: Vec<(Tile, SymbolCount)> = LEGEND
        .iter()
        .map(|&(symbol, tile, meaning)| {
            let count = cells(tile);
            (
                tile,
                SymbolCount {
                    symbol,
                    meaning: meaning.to_string(),
                    count,
                },
            )
        })
        .collect();
    for (k, symbol) in s.substrate.map_symbols().into_iter().enumerate() {
        let tile = Tile::Compound(k as u8);
        legend.push((
            tile,
            SymbolCount {
                symbol,
                meaning: s.substrate.symbol_meaning(k),
                count: cells(tile),
            },
        ));
    }
    legend.retain(|(_, e)| e.count > 0);
    let items = legend
        .iter()
        .filter(|(t, _)| matches!(t, Tile::Token | Tile::Compound(_)))
        .map(|(_, e)| e.clone())
        .collect();
    let anywhere = s.substrate.spawns_anywhere();
    let mut spawns: Vec<(RoleKind, usize)> = Vec::new();
    for r in &s.roles {
        if r.count > 0 && !spawns.iter().any(|(k, _)| *k == r.kind) {
            let n = grid
                .tiles
                .iter()
                .filter(|t| {
                    (anywhere && t.is_open()) || **t == r.kind.spawn_tile() || **t == Tile::SpawnAny
                })
                .count();
            spawns.push((r.kind, n));
        }
    }
    MapExplanation {
        width: grid.width,
        height: grid.height,
        legend: legend.into_iter().map(|(_, e)| e).collect(),
        open: grid.open_cells(),
        walls: cells(Tile::Wall),
        spawns_anywhere: anywhere,
        spawns,
        items,
    }
}

/// A slot range as `first-last` (or one slot).
fn slot_range(r: &Range<usize>) -> String {
    match r.len() {
        0 => "none".to_string(),
        1 => format!("slot {}", r.start),
        _ => format!("slots {}-{}", r.start, r.end - 1),
    }
}

fn control_name(c: Control) -> &'static str {
    match c {
        Control::Learner => "learner",
        Control::RandomWalk => "random walk (scripted)",
    }
}

/// The values a block's bytes take, as a range.
fn values(f: &ObsField) -> String {
    let low = if f.entry_max.is_empty() {
        f.max
    } else {
        f.entry_max.iter().copied().min().unwrap_or(0)
    };
    if low == f.max {
        format!("0-{}", f.max)
    } else {
        format!("0-{} per entry", f.max)
    }
}

/// The innermost axis' entries with their ranges where those differ.
fn entries(f: &ObsField) -> Option<String> {
    if f.entries.is_empty() {
        return None;
    }
    let named: Vec<String> = f
        .entries
        .iter()
        .enumerate()
        .map(|(k, name)| match f.entry_max.get(k) {
            Some(m) if !f.entry_max.iter().all(|x| x == m) => format!("{name} 0-{m}"),
            _ => name.clone(),
        })
        .collect();
    let axis = f.shape.last().map_or("entry", |a| a.name);
    Some(format!("{axis}: {}", named.join(", ")))
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scenario {}, substrate {}: {}",
            self.name, self.substrate, self.summary
        )?;

        // Nested one level less than `Scenario::to_ron`: a role or a channel list on one line,
        // as assets write them.
        let ron = ron::ser::to_string_pretty(&self.resolved, super::ron_pretty().depth_limit(2))
            .unwrap_or_else(|e| format!("/* cannot serialise the scenario: {e} */"));
        writeln!(f, "\nresolved scenario (every default written out):\n{ron}")?;

        writeln!(
            f,
            "\nroles (slots: learners first, then scripted agents, each in role order):"
        )?;
        for r in &self.roles {
            writeln!(
                f,
                "  {} x{}, {}, {}",
                r.kind.name(),
                r.count,
                control_name(r.control),
                slot_range(&r.slots)
            )?;
        }

        let mut learner_kinds: Vec<&str> = Vec::new();
        for r in &self.roles {
            if r.control == Control::Learner
                && r.count > 0
                && !learner_kinds.contains(&r.kind.name())
            {
                learner_kinds.push(r.kind.name());
            }
        }
        writeln!(
            f,
            "\nobservation per learner ({}): {} bytes (u8), blocks in order",
            if learner_kinds.is_empty() {
                "no learners".to_string()
            } else {
                learner_kinds.join(", ")
            },
            self.observation_bytes
        )?;
        blocks(f, &self.observation)?;
        writeln!(
            f,
            "\nglobal state per arena: {} bytes (u8), blocks in order",
            self.global_state_bytes
        )?;
        blocks(f, &self.global_state)?;

        let set = ron::to_string(&self.action_set).unwrap_or_else(|_| "?".into());
        writeln!(f, "\nactions ({set}, {}):", self.actions.len())?;
        if self.action_mask {
            writeln!(
                f,
                "  action mask [learner, action]: 1 where the action is legal in the state"
            )?;
        }
        for (k, name) in self.actions.iter().enumerate() {
            writeln!(f, "  {k:>3}  {name}")?;
        }

        match &self.map {
            None => writeln!(f, "\nmap: none ({} plays without one)", self.substrate)?,
            Some(m) => {
                writeln!(
                    f,
                    "\nmap: {}x{}, {} open cells, {} walls",
                    m.width, m.height, m.open, m.walls
                )?;
                writeln!(f, "  symbol  cells  meaning")?;
                for e in &m.legend {
                    writeln!(f, "  '{}'     {:>5}  {}", e.symbol, e.count, e.meaning)?;
                }
                let spawns: Vec<String> = m
                    .spawns
                    .iter()
                    .map(|(k, n)| format!("{} {n}", k.name()))
                    .collect();
                writeln!(
                    f,
                    "  spawn points: {} ({})",
                    if spawns.is_empty() {
                        "no agents".to_string()
                    } else {
                        spawns.join(", ")
                    },
                    if m.spawns_anywhere {
                        "any open cell"
                    } else {
                        "the kind's own symbol or '*'"
                    }
                )?;
                let items: Vec<String> = m
                    .items
                    .iter()
                    .map(|e| format!("'{}' {}", e.symbol, e.count))
                    .collect();
                writeln!(
                    f,
                    "  item cells: {}",
                    if items.is_empty() {
                        "none".to_string()
                    } else {
                        items.join(", ")
                    }
                )?;
            }
        }
        Ok(())
    }
}
