//! Scenario assets: the typed RON format, loading with file:line:column errors, validation.
//!
//! A scenario is data: a substrate (the rules) with its parameters, an ASCII map, agent roles,
//! the action set, slip, episode length and the observation window. `docs/scenarios.md` documents
//! every field with a full example.

pub mod locate;
pub mod map;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorClass, ScenarioError};
use locate::{PathSeg, Pos, SourceMap, path_string};
pub use map::{Grid, LEGEND, Tile};

/// The default scenario (PettingZoo SISL Pursuit v5 defaults), embedded in the binary.
pub const DEFAULT_SCENARIO: &str = include_str!("../../assets/scenarios/pursuit.ron");
/// The name under which the embedded default is reported.
pub const DEFAULT_SCENARIO_NAME: &str = "<embedded>/assets/scenarios/pursuit.ron";

/// The largest map side: positions are stored as i16 and cell indices as u16.
pub const MAX_MAP_SIDE: usize = 255;

/// RON options for every gridarena asset: `Option` fields are written without `Some(..)`.
pub fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

/// Pretty-printing for files gridarena writes, readable by [`ron_options`].
pub fn ron_pretty() -> ron::ser::PrettyConfig {
    ron::ser::PrettyConfig::default().extensions(ron::extensions::Extensions::IMPLICIT_SOME)
}

/// A scenario asset, as written in `assets/scenarios/*.ron`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name, used in run directories and reports.
    pub name: String,
    /// Free text for humans.
    #[serde(default)]
    pub description: String,
    /// The rules and their parameters.
    pub substrate: Substrate,
    /// ASCII map, one string per row; legend in [`map::LEGEND`].
    pub map: Vec<String>,
    /// Agent roles in slot order; learners get observation/action slots in this order.
    pub roles: Vec<RoleSpec>,
    /// The action set every agent uses.
    #[serde(default)]
    pub actions: ActionSet,
    /// Probability in [0, 1] that a learner's action is replaced by a uniformly random one.
    #[serde(default)]
    pub slip: f64,
    /// Episode length: an arena is truncated after this many steps.
    pub max_steps: u32,
    /// The egocentric observation window.
    pub observation: ObservationSpec,
}

/// The rules an arena runs, with their parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Substrate {
    /// PettingZoo SISL Pursuit (v5) with simultaneous moves.
    Pursuit(PursuitParams),
}

impl Substrate {
    /// Lower-case name for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Substrate::Pursuit(_) => "pursuit",
        }
    }

    /// The role kinds this substrate knows.
    pub fn role_kinds(&self) -> &'static [RoleKind] {
        match self {
            Substrate::Pursuit(_) => &[RoleKind::Pursuer, RoleKind::Evader],
        }
    }

    /// The observation channels this substrate can produce, in their canonical order.
    pub fn channels(&self) -> &'static [Channel] {
        match self {
            Substrate::Pursuit(_) => &[Channel::Obstacle, Channel::Pursuers, Channel::Evaders],
        }
    }

    /// The action sets this substrate accepts.
    pub fn action_sets(&self) -> &'static [ActionSet] {
        match self {
            Substrate::Pursuit(_) => &[ActionSet::Move5],
        }
    }
}

/// Pursuit rules' parameters (defaults are PettingZoo's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PursuitParams {
    /// `true`: an evader is caught when every open orthogonal neighbour of its cell holds a
    /// pursuer. `false`: when at least `n_catch` pursuers stand on its cell.
    #[serde(default = "yes")]
    pub surround: bool,
    /// Pursuers on the evader's cell needed for a catch when `surround` is false.
    #[serde(default = "two")]
    pub n_catch: u16,
    /// Reward per evader on a pursuer's four neighbouring cells, per step.
    #[serde(default = "default_tag")]
    pub tag_reward: f32,
    /// Reward to every pursuer on a catching cell, per caught evader.
    #[serde(default = "default_catch")]
    pub catch_reward: f32,
    /// Reward to every pursuer, every step.
    #[serde(default = "default_urgency")]
    pub urgency_reward: f32,
    /// Reward to every live learning evader, every step.
    #[serde(default)]
    pub escape_reward: f32,
    /// Replace each pursuer's reward by the pursuers' mean.
    #[serde(default = "yes")]
    pub shared_reward: bool,
}

fn yes() -> bool {
    true
}
fn two() -> u16 {
    2
}
fn default_tag() -> f32 {
    0.01
}
fn default_catch() -> f32 {
    5.0
}
fn default_urgency() -> f32 {
    -0.1
}

impl Default for PursuitParams {
    fn default() -> Self {
        PursuitParams {
            surround: true,
            n_catch: 2,
            tag_reward: 0.01,
            catch_reward: 5.0,
            urgency_reward: -0.1,
            escape_reward: 0.0,
            shared_reward: true,
        }
    }
}

/// What an agent is in its substrate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleKind {
    /// Pursuit: hunts evaders.
    Pursuer,
    /// Pursuit: is hunted.
    Evader,
}

impl RoleKind {
    /// Lower-case name as written in assets.
    pub fn name(self) -> &'static str {
        match self {
            RoleKind::Pursuer => "pursuer",
            RoleKind::Evader => "evader",
        }
    }

    /// Who controls agents of this kind when the asset does not say: pursuers learn, evaders
    /// walk at random (PettingZoo's default).
    pub fn default_control(self) -> Control {
        match self {
            RoleKind::Pursuer => Control::Learner,
            RoleKind::Evader => Control::RandomWalk,
        }
    }

    /// The map symbol of this role's own spawn points.
    pub fn spawn_tile(self) -> Tile {
        match self {
            RoleKind::Pursuer => Tile::SpawnPursuer,
            RoleKind::Evader => Tile::SpawnEvader,
        }
    }
}

/// Who chooses a role's actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// A learning agent: gets an observation slot and reads its action from the action buffer.
    Learner,
    /// Moves uniformly at random every step (a chance outcome, not a learner).
    RandomWalk,
}

/// One role: a kind of agent, how many of them, and who controls them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    /// The role's kind in the substrate.
    pub kind: RoleKind,
    /// Agents of this role per arena.
    pub count: u16,
    /// Learner or scripted; when omitted, the kind's default (see [`RoleKind::default_control`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<Control>,
}

impl RoleSpec {
    /// Who controls this role, defaults resolved.
    pub fn control(&self) -> Control {
        self.control.unwrap_or(self.kind.default_control())
    }
}

/// The action set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionSet {
    /// 0 left, 1 right, 2 up, 3 down, 4 stay (screen directions; up is row - 1).
    #[default]
    Move5,
}

impl ActionSet {
    /// Number of actions.
    pub fn len(self) -> usize {
        match self {
            ActionSet::Move5 => 5,
        }
    }

    /// Never empty; here for clippy's `len_without_is_empty`.
    pub fn is_empty(self) -> bool {
        false
    }

    /// Action names in index order.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            ActionSet::Move5 => &["left", "right", "up", "down", "stay"],
        }
    }
}

/// An observation channel (one u8 per cell of the window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// 1 on walls and outside the map.
    Obstacle,
    /// Number of live pursuers on the cell (saturating at 255).
    Pursuers,
    /// Number of live evaders on the cell (saturating at 255).
    Evaders,
}

impl Channel {
    /// Lower-case name as written in assets.
    pub fn name(self) -> &'static str {
        match self {
            Channel::Obstacle => "obstacle",
            Channel::Pursuers => "pursuers",
            Channel::Evaders => "evaders",
        }
    }
}

/// The egocentric square observation window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationSpec {
    /// Cells seen on each side of the agent: the window's side is `2 * radius + 1`.
    pub radius: u16,
    /// Channels per cell, in this order; layout is `[side, side, channels]` (row, column, channel).
    pub channels: Vec<Channel>,
}

impl ObservationSpec {
    /// The window's side in cells.
    pub fn side(&self) -> usize {
        2 * self.radius as usize + 1
    }

    /// Bytes per agent observation.
    pub fn len(&self) -> usize {
        self.side() * self.side() * self.channels.len()
    }

    /// True when there are no channels (never for a valid scenario).
    pub fn is_empty(&self) -> bool {
        self.channels.is_empty()
    }
}

/// A scenario that parsed and validated, with the map decoded.
#[derive(Debug, Clone)]
pub struct LoadedScenario {
    /// The scenario as written.
    pub scenario: Scenario,
    /// The decoded map.
    pub grid: Grid,
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(path: &Path) -> Result<LoadedScenario, ScenarioError> {
        let file = path.display().to_string();
        let src = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: 0,
            column: 0,
            class: ErrorClass::Io,
            field: String::new(),
            message: format!("cannot read the file: {e}"),
            allowed: "a readable UTF-8 RON file".into(),
        })?;
        Scenario::parse(&src, &file)
    }

    /// Parses and validates scenario text; `file` names it in errors.
    pub fn parse(src: &str, file: &str) -> Result<LoadedScenario, ScenarioError> {
        let map = SourceMap::scan(src);
        let scenario: Scenario = ron_options()
            .from_str(src)
            .map_err(|e| ron_error(e, src, file, &map))?;
        let grid = scenario.validate_at(file, &map)?;
        Ok(LoadedScenario { scenario, grid })
    }

    /// The embedded default scenario.
    pub fn default_pursuit() -> LoadedScenario {
        match Scenario::parse(DEFAULT_SCENARIO, DEFAULT_SCENARIO_NAME) {
            Ok(s) => s,
            // The embedded asset is checked by a test; reaching this is a build defect.
            Err(e) => panic!("embedded default scenario is invalid: {e}"),
        }
    }

    /// Validates a scenario built in code (errors point at the fields, line 0).
    pub fn validate(&self) -> Result<Grid, ScenarioError> {
        self.validate_at("<in memory>", &SourceMap::default())
    }

    /// Renders the scenario as RON (the resolved form saved next to rollouts and runs).
    pub fn to_ron(&self) -> String {
        ron::ser::to_string_pretty(self, ron_pretty().depth_limit(3))
            .unwrap_or_else(|e| format!("/* cannot serialise scenario: {e} */"))
    }

    /// Agents per arena over all roles.
    pub fn agents_per_arena(&self) -> usize {
        self.roles.iter().map(|r| r.count as usize).sum()
    }

    /// Learning agents per arena.
    pub fn learners_per_arena(&self) -> usize {
        self.roles
            .iter()
            .filter(|r| r.control() == Control::Learner)
            .map(|r| r.count as usize)
            .sum()
    }

    fn validate_at(&self, file: &str, src: &SourceMap) -> Result<Grid, ScenarioError> {
        let err = |path: &[PathSeg], pos: Option<Pos>, class, message: String, allowed: String| {
            let at = pos.unwrap_or_else(|| src.find_or_parent(path));
            ScenarioError {
                file: file.to_string(),
                line: at.line,
                column: at.col,
                class,
                field: path_string(path),
                message,
                allowed,
            }
        };
        let f = |s: &str| PathSeg::Field(s.to_string());

        if self.name.trim().is_empty() {
            return Err(err(
                &[f("name")],
                None,
                ErrorClass::InvalidValue,
                "the name is empty".into(),
                "a non-empty string".into(),
            ));
        }

        // Map: non-empty, rectangular, known symbols, bounded size.
        if self.map.is_empty() || self.map[0].is_empty() {
            return Err(err(
                &[f("map")],
                None,
                ErrorClass::InvalidMap,
                "the map is empty".into(),
                "at least one non-empty row".into(),
            ));
        }
        let width = self.map[0].chars().count();
        let height = self.map.len();
        if width > MAX_MAP_SIDE || height > MAX_MAP_SIDE {
            return Err(err(
                &[f("map")],
                None,
                ErrorClass::InvalidMap,
                format!("the map is {width}x{height}"),
                format!("at most {MAX_MAP_SIDE} columns and {MAX_MAP_SIDE} rows"),
            ));
        }
        let mut tiles = Vec::with_capacity(width * height);
        for (y, row) in self.map.iter().enumerate() {
            let row_path = [f("map"), PathSeg::Index(y)];
            let row_pos = src.find(&row_path);
            let len = row.chars().count();
            if len != width {
                return Err(err(
                    &row_path,
                    row_pos,
                    ErrorClass::RaggedMap,
                    format!("row {y} has {len} cells but row 0 has {width}"),
                    format!("every row exactly {width} characters"),
                ));
            }
            for (x, c) in row.chars().enumerate() {
                match Tile::from_symbol(c) {
                    Some(t) => tiles.push(t),
                    None => {
                        // Column of the character: after the opening quote of the row string.
                        let pos = row_pos.map(|p| Pos {
                            line: p.line,
                            col: p.col + 1 + x,
                        });
                        return Err(err(
                            &row_path,
                            pos,
                            ErrorClass::UnknownSymbol,
                            format!("unknown map symbol {c:?} at row {y}, column {x}"),
                            map::legend_summary(),
                        ));
                    }
                }
            }
        }
        let grid = Grid {
            width,
            height,
            tiles,
        };

        // Roles.
        if self.roles.is_empty() {
            return Err(err(
                &[f("roles")],
                None,
                ErrorClass::InvalidValue,
                "no roles".into(),
                "at least one role".into(),
            ));
        }
        let kinds = self.substrate.role_kinds();
        let kind_names = || {
            kinds
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let spawn_any = grid.tiles.iter().filter(|t| **t == Tile::SpawnAny).count();
        for (i, role) in self.roles.iter().enumerate() {
            let at = |field: &str| [f("roles"), PathSeg::Index(i), f(field)];
            if !kinds.contains(&role.kind) {
                return Err(err(
                    &at("kind"),
                    None,
                    ErrorClass::InvalidValue,
                    format!(
                        "role kind {} is not part of {}",
                        role.kind.name(),
                        self.substrate.name()
                    ),
                    kind_names(),
                ));
            }
            if role.count == 0 {
                return Err(err(
                    &at("count"),
                    None,
                    ErrorClass::InvalidValue,
                    "count is 0".into(),
                    "at least 1 agent per role".into(),
                ));
            }
            let own = grid
                .tiles
                .iter()
                .filter(|t| **t == role.kind.spawn_tile())
                .count();
            let same_kind: usize = self
                .roles
                .iter()
                .filter(|r| r.kind == role.kind)
                .map(|r| r.count as usize)
                .sum();
            if same_kind > own + spawn_any {
                return Err(err(
                    &at("count"),
                    None,
                    ErrorClass::TooManyAgents,
                    format!(
                        "{same_kind} {}s but the map has only {} spawn cells for them ({own} '{}' + {spawn_any} '*')",
                        role.kind.name(),
                        own + spawn_any,
                        LEGEND
                            .iter()
                            .find(|(_, t, _)| *t == role.kind.spawn_tile())
                            .map_or('?', |l| l.0),
                    ),
                    format!(
                        "at most {} agents of this kind, or more spawn cells",
                        own + spawn_any
                    ),
                ));
            }
        }
        if self.learners_per_arena() == 0 {
            return Err(err(
                &[f("roles")],
                None,
                ErrorClass::InvalidValue,
                "no role is a learner".into(),
                "at least one role with control: learner".into(),
            ));
        }
        for kind in kinds {
            if !self.roles.iter().any(|r| r.kind == *kind) {
                return Err(err(
                    &[f("roles")],
                    None,
                    ErrorClass::InvalidValue,
                    format!(
                        "{} needs at least one {}",
                        self.substrate.name(),
                        kind.name()
                    ),
                    format!("roles covering {}", kind_names()),
                ));
            }
        }
        if self.agents_per_arena() > u16::MAX as usize {
            return Err(err(
                &[f("roles")],
                None,
                ErrorClass::InvalidValue,
                format!("{} agents per arena", self.agents_per_arena()),
                format!("at most {}", u16::MAX),
            ));
        }

        // Actions, slip, episode.
        if !self.substrate.action_sets().contains(&self.actions) {
            return Err(err(
                &[f("actions")],
                None,
                ErrorClass::InvalidValue,
                format!(
                    "{:?} is not an action set of {}",
                    self.actions,
                    self.substrate.name()
                ),
                format!("{:?}", self.substrate.action_sets()),
            ));
        }
        if !(0.0..=1.0).contains(&self.slip) {
            return Err(err(
                &[f("slip")],
                None,
                ErrorClass::SlipOutOfRange,
                format!("slip is {}", self.slip),
                "a probability in [0, 1]".into(),
            ));
        }
        if self.max_steps == 0 {
            return Err(err(
                &[f("max_steps")],
                None,
                ErrorClass::InvalidValue,
                "max_steps is 0".into(),
                "at least 1 step".into(),
            ));
        }

        // Observation window.
        let side = self.observation.side();
        if side > width || side > height {
            return Err(err(
                &[f("observation"), f("radius")],
                None,
                ErrorClass::WindowTooLarge,
                format!(
                    "radius {} gives a {side}x{side} window, larger than the {width}x{height} map",
                    self.observation.radius
                ),
                format!("radius at most {}", (width.min(height) - 1) / 2),
            ));
        }
        let channels = self.substrate.channels();
        let channel_names = || {
            channels
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.observation.channels.is_empty() {
            return Err(err(
                &[f("observation"), f("channels")],
                None,
                ErrorClass::InvalidValue,
                "no channels".into(),
                channel_names(),
            ));
        }
        for (i, c) in self.observation.channels.iter().enumerate() {
            let path = [f("observation"), f("channels"), PathSeg::Index(i)];
            if !channels.contains(c) {
                return Err(err(
                    &path,
                    None,
                    ErrorClass::InvalidValue,
                    format!(
                        "channel {} is not produced by {}",
                        c.name(),
                        self.substrate.name()
                    ),
                    channel_names(),
                ));
            }
            if self.observation.channels[..i].contains(c) {
                return Err(err(
                    &path,
                    None,
                    ErrorClass::InvalidValue,
                    format!("channel {} appears twice", c.name()),
                    "each channel at most once".into(),
                ));
            }
        }

        // Substrate parameters.
        match &self.substrate {
            Substrate::Pursuit(p) => {
                let sub = |field: &str| [f("substrate"), f(field)];
                if !p.surround && p.n_catch == 0 {
                    return Err(err(
                        &sub("n_catch"),
                        None,
                        ErrorClass::InvalidValue,
                        "n_catch is 0".into(),
                        "at least 1 pursuer on the evader's cell".into(),
                    ));
                }
                for (name, v) in [
                    ("tag_reward", p.tag_reward),
                    ("catch_reward", p.catch_reward),
                    ("urgency_reward", p.urgency_reward),
                    ("escape_reward", p.escape_reward),
                ] {
                    if !v.is_finite() {
                        return Err(err(
                            &sub(name),
                            None,
                            ErrorClass::InvalidValue,
                            format!("{name} is {v}"),
                            "a finite number".into(),
                        ));
                    }
                }
            }
        }
        Ok(grid)
    }
}

/// What a field accepts, for error messages (indices normalised to `[]`).
fn field_help(path: &str) -> Option<&'static str> {
    let mut normal = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                normal.push('[');
            }
            ']' => {
                in_index = false;
                normal.push(']');
            }
            _ if in_index => {}
            _ => normal.push(c),
        }
    }
    Some(match normal.as_str() {
        "name" | "description" => "a string in double quotes",
        "substrate" => "Pursuit((...))",
        "substrate.surround" | "substrate.shared_reward" => "true or false",
        "substrate.n_catch" => "a whole number 1..65535",
        "substrate.tag_reward"
        | "substrate.catch_reward"
        | "substrate.urgency_reward"
        | "substrate.escape_reward" => "a finite number, e.g. 0.5",
        "map" => "a list of strings, one per row",
        "map[]" => "a string of legend symbols",
        "roles" => "a list of (kind: ..., count: ..., control: ...)",
        "roles[].kind" => "pursuer, evader",
        "roles[].count" => "a whole number 1..65535",
        "roles[].control" => "learner, random_walk (default: pursuers learn, evaders walk)",
        "actions" => "move5",
        "slip" => "a number in [0, 1]",
        "max_steps" => "a whole number 1..4294967295",
        "observation" => "(radius: ..., channels: [...])",
        "observation.radius" => "a whole number 0..65535",
        "observation.channels" | "observation.channels[]" => "obstacle, pursuers, evaders",
        _ => return None,
    })
}

/// Turns a RON error into a located scenario error.
fn ron_error(e: ron::error::SpannedError, src: &str, file: &str, map: &SourceMap) -> ScenarioError {
    use ron::error::Error as E;
    let pos = skip_blanks(
        src,
        Pos {
            line: e.span.start.line.max(1),
            col: e.span.start.col.max(1),
        },
    );
    let mut field = path_string(&map.path_at(pos));
    let help = |field: &str, fallback: &str| field_help(field).unwrap_or(fallback).to_string();
    let (class, message, allowed) = match &e.code {
        E::NoSuchStructField {
            expected,
            found,
            outer,
        } => {
            field = join_field(&field_parent(&field, found), found);
            (
                ErrorClass::UnknownField,
                format!(
                    "unknown field `{found}`{}",
                    outer
                        .as_ref()
                        .map(|o| format!(" in {o}"))
                        .unwrap_or_default()
                ),
                expected.join(", "),
            )
        }
        E::MissingStructField {
            field: missing,
            outer,
        } => {
            field = join_field(&field, missing);
            (
                ErrorClass::MissingField,
                format!(
                    "missing field `{missing}`{} (the struct ends here)",
                    outer
                        .as_ref()
                        .map(|o| format!(" in {o}"))
                        .unwrap_or_default()
                ),
                format!(
                    "add `{missing}: ...` ({})",
                    help(&field, "see docs/scenarios.md")
                ),
            )
        }
        E::NoSuchEnumVariant {
            expected,
            found,
            outer,
        } => (
            ErrorClass::WrongType,
            format!(
                "unknown variant `{found}`{}",
                outer
                    .as_ref()
                    .map(|o| format!(" of {o}"))
                    .unwrap_or_default()
            ),
            expected.join(", "),
        ),
        E::InvalidValueForType { expected, found } => (
            ErrorClass::WrongType,
            format!("found {found}"),
            help(&field, expected),
        ),
        E::ExpectedDifferentLength { expected, found } => (
            ErrorClass::WrongType,
            format!("found {found} elements"),
            help(&field, expected),
        ),
        E::Message(m) => (
            ErrorClass::WrongType,
            m.clone(),
            help(&field, "see docs/scenarios.md"),
        ),
        E::ExpectedInteger
        | E::ExpectedFloat
        | E::ExpectedString
        | E::ExpectedStringEnd
        | E::ExpectedBoolean
        | E::ExpectedArray
        | E::ExpectedStructLike
        | E::ExpectedNamedStructLike(_)
        | E::ExpectedUnit
        | E::ExpectedChar
        | E::ExpectedOption
        | E::IntegerOutOfBounds => (
            ErrorClass::WrongType,
            format!("{}", e.code),
            help(&field, "see docs/scenarios.md"),
        ),
        other => (
            ErrorClass::Syntax,
            other.to_string(),
            "RON syntax, see docs/scenarios.md".into(),
        ),
    };
    ScenarioError {
        file: file.to_string(),
        line: pos.line,
        column: pos.col,
        class,
        field,
        message,
        allowed,
    }
}

/// Moves a position forward over spaces on its line, so it lands on the offending token.
fn skip_blanks(src: &str, pos: Pos) -> Pos {
    let Some(line) = src.lines().nth(pos.line - 1) else {
        return pos;
    };
    let skipped = line
        .chars()
        .skip(pos.col - 1)
        .take_while(|c| *c == ' ' || *c == '\t')
        .count();
    let rest = line.chars().count().saturating_sub(pos.col - 1);
    if skipped < rest {
        Pos {
            line: pos.line,
            col: pos.col + skipped,
        }
    } else {
        pos
    }
}

/// The path of the struct holding `key`, given the path the scanner saw at the key.
fn field_parent(path: &str, key: &str) -> String {
    path.strip_suffix(key)
        .map(|p| p.trim_end_matches('.').to_string())
        .unwrap_or_default()
}

fn join_field(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}
