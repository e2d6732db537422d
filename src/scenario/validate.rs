//! `Scenario::validate`: every rule an asset must satisfy, each failure located in the source.

use crate::error::{ErrorClass, ScenarioError};

use super::locate::{PathSeg, Pos, SourceMap, path_string};
use super::map::{self, Grid, LEGEND, Tile};
use super::{Control, Scenario, Substrate};

/// The largest map side: positions are stored as i16 and cell indices as u16.
pub const MAX_MAP_SIDE: usize = 255;
/// The largest matrix-game payoff table, in joint actions.
pub const MAX_JOINT_ACTIONS: usize = 1 << 20;
/// The farthest a facing-rotated window reaches in any direction.
pub const MAX_WINDOW_REACH: usize = 32;
/// The most reactants (and products) one chemistry reaction may have.
pub const MAX_REACTANTS: usize = 8;

struct Check<'a> {
    file: &'a str,
    src: &'a SourceMap,
}

fn f(s: &str) -> PathSeg {
    PathSeg::Field(s.to_string())
}

fn i(n: usize) -> PathSeg {
    PathSeg::Index(n)
}

impl Check<'_> {
    fn at(
        &self,
        path: &[PathSeg],
        pos: Option<Pos>,
        class: ErrorClass,
        message: String,
        allowed: String,
    ) -> ScenarioError {
        let at = pos.unwrap_or_else(|| self.src.find_or_parent(path));
        ScenarioError {
            file: self.file.to_string(),
            line: at.line,
            column: at.col,
            class,
            field: path_string(path),
            message,
            allowed,
        }
    }

    fn bad(&self, path: &[PathSeg], message: String, allowed: impl Into<String>) -> ScenarioError {
        self.at(
            path,
            None,
            ErrorClass::InvalidValue,
            message,
            allowed.into(),
        )
    }

    fn probability(&self, path: &[PathSeg], p: f64) -> Result<(), ScenarioError> {
        if (0.0..=1.0).contains(&p) {
            Ok(())
        } else {
            Err(self.bad(path, format!("probability {p}"), "a probability in [0, 1]"))
        }
    }

    fn finite(&self, path: &[PathSeg], v: f32) -> Result<(), ScenarioError> {
        if v.is_finite() {
            Ok(())
        } else {
            Err(self.bad(path, format!("{v}"), "a finite number"))
        }
    }
}

impl Scenario {
    pub(super) fn validate_at(&self, file: &str, src: &SourceMap) -> Result<Grid, ScenarioError> {
        let c = Check { file, src };
        if self.name.trim().is_empty() {
            return Err(c.bad(
                &[f("name")],
                "the name is empty".into(),
                "a non-empty string",
            ));
        }
        // The substrate first: the map's legend depends on it (chemistry's compound symbols).
        self.check_substrate(&c)?;
        let grid = self.check_map(&c)?;
        self.check_roles(&c, &grid)?;
        self.check_actions_and_episode(&c)?;
        self.check_observation(&c, &grid)?;
        Ok(grid)
    }

    fn compound_symbols(&self) -> Vec<char> {
        match &self.substrate {
            Substrate::Chemistry(p) => p.compounds.iter().map(|c| c.symbol).collect(),
            _ => Vec::new(),
        }
    }

    fn check_map(&self, c: &Check) -> Result<Grid, ScenarioError> {
        if !self.substrate.uses_map() {
            if !self.map.is_empty() {
                return Err(c.at(
                    &[f("map")],
                    None,
                    ErrorClass::InvalidMap,
                    format!("{} has no map", self.substrate.name()),
                    "leave `map` out".into(),
                ));
            }
            return Ok(Grid {
                width: 1,
                height: 1,
                tiles: vec![Tile::Floor],
            });
        }
        if self.map.is_empty() || self.map[0].is_empty() {
            return Err(c.at(
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
            return Err(c.at(
                &[f("map")],
                None,
                ErrorClass::InvalidMap,
                format!("the map is {width}x{height}"),
                format!("at most {MAX_MAP_SIDE} columns and {MAX_MAP_SIDE} rows"),
            ));
        }
        let compounds = self.compound_symbols();
        let mut tiles = Vec::with_capacity(width * height);
        for (y, row) in self.map.iter().enumerate() {
            let row_path = [f("map"), i(y)];
            let row_pos = c.src.find(&row_path);
            let len = row.chars().count();
            if len != width {
                return Err(c.at(
                    &row_path,
                    row_pos,
                    ErrorClass::RaggedMap,
                    format!("row {y} has {len} cells but row 0 has {width}"),
                    format!("every row exactly {width} characters"),
                ));
            }
            for (x, ch) in row.chars().enumerate() {
                let tile = Tile::from_symbol(ch).or_else(|| {
                    compounds
                        .iter()
                        .position(|s| *s == ch)
                        .map(|k| Tile::Compound(k as u8))
                });
                let allowed_here = match tile {
                    Some(Tile::Token) => matches!(self.substrate, Substrate::GiftRefinements(_)),
                    Some(Tile::SpawnPursuer | Tile::SpawnEvader) => {
                        matches!(self.substrate, Substrate::Pursuit(_))
                    }
                    Some(_) => true,
                    None => false,
                };
                if !allowed_here {
                    let pos = row_pos.map(|p| Pos {
                        line: p.line,
                        col: p.col + 1 + x,
                    });
                    let mut allowed = map::legend_summary(|t| match t {
                        Tile::Token => matches!(self.substrate, Substrate::GiftRefinements(_)),
                        Tile::SpawnPursuer | Tile::SpawnEvader => {
                            matches!(self.substrate, Substrate::Pursuit(_))
                        }
                        _ => true,
                    });
                    if !compounds.is_empty() {
                        let list: Vec<String> =
                            compounds.iter().map(|s| format!("'{s}'")).collect();
                        allowed.push_str(&format!(", compounds {}", list.join(" ")));
                    }
                    return Err(c.at(
                        &row_path,
                        pos,
                        ErrorClass::UnknownSymbol,
                        format!(
                            "map symbol {ch:?} at row {y}, column {x} is not part of {}'s legend",
                            self.substrate.name()
                        ),
                        allowed,
                    ));
                }
                tiles.push(tile.unwrap_or(Tile::Wall));
            }
        }
        Ok(Grid {
            width,
            height,
            tiles,
        })
    }

    fn check_roles(&self, c: &Check, grid: &Grid) -> Result<(), ScenarioError> {
        if self.roles.is_empty() {
            return Err(c.bad(&[f("roles")], "no roles".into(), "at least one role"));
        }
        let kinds = self.substrate.role_kinds();
        let kind_names = || {
            kinds
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let spawn_any = if self.substrate.spawns_anywhere() {
            grid.open_cells()
        } else {
            grid.tiles.iter().filter(|t| **t == Tile::SpawnAny).count()
        };
        for (r, role) in self.roles.iter().enumerate() {
            let at = |field: &str| [f("roles"), i(r), f(field)];
            if !kinds.contains(&role.kind) {
                return Err(c.bad(
                    &at("kind"),
                    format!(
                        "role kind {} is not part of {}",
                        role.kind.name(),
                        self.substrate.name()
                    ),
                    kind_names(),
                ));
            }
            if role.count == 0 {
                return Err(c.bad(
                    &at("count"),
                    "count is 0".into(),
                    "at least 1 agent per role",
                ));
            }
            if !self.substrate.uses_map() {
                continue;
            }
            let own_tile = role.kind.spawn_tile();
            let own = if own_tile == Tile::SpawnAny {
                0
            } else {
                grid.tiles.iter().filter(|t| **t == own_tile).count()
            };
            let same_kind: usize = self
                .roles
                .iter()
                .filter(|q| q.kind == role.kind)
                .map(|q| q.count as usize)
                .sum();
            if same_kind > own + spawn_any {
                let symbol = LEGEND
                    .iter()
                    .find(|(_, t, _)| *t == own_tile)
                    .map_or('?', |l| l.0);
                let detail = if own_tile == Tile::SpawnAny {
                    format!("{spawn_any} '*'")
                } else {
                    format!("{own} '{symbol}' + {spawn_any} '*'")
                };
                return Err(c.at(
                    &at("count"),
                    None,
                    ErrorClass::TooManyAgents,
                    format!(
                        "{same_kind} {}s but the map has only {} spawn cells for them ({detail})",
                        role.kind.name(),
                        own + spawn_any,
                    ),
                    format!(
                        "at most {} agents of this kind, or more spawn cells",
                        own + spawn_any
                    ),
                ));
            }
        }
        if self.learners_per_arena() == 0 {
            return Err(c.bad(
                &[f("roles")],
                "no role is a learner".into(),
                "at least one role with control: learner",
            ));
        }
        for kind in kinds {
            if !self.roles.iter().any(|r| r.kind == *kind) {
                return Err(c.bad(
                    &[f("roles")],
                    format!(
                        "{} needs at least one {}",
                        self.substrate.name(),
                        kind.name()
                    ),
                    format!("roles covering {}", kind_names()),
                ));
            }
        }
        let agents = self.agents_per_arena();
        if agents > u16::MAX as usize {
            return Err(c.bad(
                &[f("roles")],
                format!("{agents} agents per arena"),
                format!("at most {}", u16::MAX),
            ));
        }
        match &self.substrate {
            Substrate::CoinGame(_) if agents != 2 => Err(c.bad(
                &[f("roles")],
                format!("the coin game has 2 players, not {agents}"),
                "exactly one role of count 2, or two of count 1",
            )),
            Substrate::GiftRefinements(_) | Substrate::Chemistry(_) if agents > 64 => Err(c.bad(
                &[f("roles")],
                format!("{agents} avatars"),
                "at most 64 avatars per arena",
            )),
            Substrate::MatrixGame(_)
                if self.roles.iter().any(|r| r.control() != Control::Learner) =>
            {
                Err(c.bad(
                    &[f("roles")],
                    "matrix-game players must all be learners".into(),
                    "control: learner",
                ))
            }
            _ => Ok(()),
        }
    }

    fn check_actions_and_episode(&self, c: &Check) -> Result<(), ScenarioError> {
        let expected = self.substrate.default_actions();
        if let Some(actions) = self.actions
            && actions != expected
        {
            return Err(c.bad(
                &[f("actions")],
                format!(
                    "{actions:?} is not the action set of {}",
                    self.substrate.name()
                ),
                format!("{expected:?} (or leave `actions` out)"),
            ));
        }
        if !(0.0..=1.0).contains(&self.slip) {
            return Err(c.at(
                &[f("slip")],
                None,
                ErrorClass::SlipOutOfRange,
                format!("slip is {}", self.slip),
                "a probability in [0, 1]".into(),
            ));
        }
        if self.max_steps == 0 {
            return Err(c.bad(
                &[f("max_steps")],
                "max_steps is 0".into(),
                "at least 1 step",
            ));
        }
        Ok(())
    }

    fn check_observation(&self, c: &Check, grid: &Grid) -> Result<(), ScenarioError> {
        let obs = &self.observation;
        let name = self.substrate.name();
        let unused = |field: &str| {
            c.bad(
                &[f("observation"), f(field)],
                format!("{name} does not use observation.{field}"),
                format!("leave `{field}` out"),
            )
        };
        match &self.substrate {
            Substrate::Pursuit(_) => {
                if obs.window.is_some() {
                    return Err(unused("window"));
                }
                let Some(radius) = obs.radius else {
                    return Err(c.at(
                        &[f("observation")],
                        None,
                        ErrorClass::MissingField,
                        "pursuit needs observation.radius".into(),
                        "observation: (radius: 3)".into(),
                    ));
                };
                let (width, height) = (grid.width, grid.height);
                let side = obs.side();
                if side > width || side > height {
                    return Err(c.at(
                        &[f("observation"), f("radius")],
                        None,
                        ErrorClass::WindowTooLarge,
                        format!("radius {radius} gives a {side}x{side} window, larger than the {width}x{height} map"),
                        format!("radius at most {}", (width.min(height) - 1) / 2),
                    ));
                }
                let channels = self.substrate.channels();
                let names = || {
                    channels
                        .iter()
                        .map(|c| c.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                for (k, ch) in obs.channels.iter().enumerate() {
                    let path = [f("observation"), f("channels"), i(k)];
                    if obs.channels[..k].contains(ch) {
                        return Err(c.bad(
                            &path,
                            format!("channel {} appears twice", ch.name()),
                            "each channel at most once",
                        ));
                    }
                    if !channels.contains(ch) {
                        return Err(c.bad(
                            &path,
                            format!("channel {} is not produced by {name}", ch.name()),
                            names(),
                        ));
                    }
                }
            }
            Substrate::GiftRefinements(_) | Substrate::Chemistry(_) => {
                if obs.radius.is_some() {
                    return Err(unused("radius"));
                }
                if !obs.channels.is_empty() {
                    return Err(unused("channels"));
                }
                // Windows may reach past the map (the outside reads as wall); the cap bounds the
                // observation's size.
                let w = obs.window.unwrap_or(super::Window::MELTING_POT);
                let reach = [
                    ("left", w.left),
                    ("right", w.right),
                    ("ahead", w.ahead),
                    ("behind", w.behind),
                ];
                for (field, v) in reach {
                    if v as usize > MAX_WINDOW_REACH {
                        return Err(c.at(
                            &[f("observation"), f("window"), f(field)],
                            None,
                            ErrorClass::WindowTooLarge,
                            format!("{field} {v} reaches more than {MAX_WINDOW_REACH} cells"),
                            format!("at most {MAX_WINDOW_REACH}"),
                        ));
                    }
                }
            }
            Substrate::CoinGame(_) | Substrate::MatrixGame(_) => {
                if obs.radius.is_some() {
                    return Err(unused("radius"));
                }
                if obs.window.is_some() {
                    return Err(unused("window"));
                }
                if !obs.channels.is_empty() {
                    return Err(unused("channels"));
                }
            }
        }
        Ok(())
    }

    fn check_substrate(&self, c: &Check) -> Result<(), ScenarioError> {
        let sub = |field: &str| vec![f("substrate"), f(field)];
        match &self.substrate {
            Substrate::Pursuit(p) => {
                if !p.surround && p.n_catch == 0 {
                    return Err(c.bad(
                        &sub("n_catch"),
                        "n_catch is 0".into(),
                        "at least 1 pursuer on the evader's cell",
                    ));
                }
                for (name, v) in [
                    ("tag_reward", p.tag_reward),
                    ("catch_reward", p.catch_reward),
                    ("urgency_reward", p.urgency_reward),
                    ("escape_reward", p.escape_reward),
                ] {
                    c.finite(&sub(name), v)?;
                }
            }
            Substrate::GiftRefinements(p) => {
                c.probability(&sub("regrow_prob"), p.regrow_prob)?;
                c.probability(&sub("end_prob"), p.end_prob)?;
                for (name, v) in [
                    ("capacity", p.capacity),
                    ("gift_multiplier", p.gift_multiplier),
                    ("beam_length", p.beam_length),
                ] {
                    if v == 0 {
                        return Err(c.bad(&sub(name), format!("{name} is 0"), "at least 1"));
                    }
                }
                if p.end_every == 0 {
                    return Err(c.bad(
                        &sub("end_every"),
                        "end_every is 0".into(),
                        "at least 1 step",
                    ));
                }
                for (k, v) in p.consume_value.iter().enumerate() {
                    c.finite(&[f("substrate"), f("consume_value"), i(k)], *v)?;
                }
            }
            Substrate::Chemistry(p) => self.check_chemistry(c, p)?,
            Substrate::CoinGame(p) => {
                c.finite(&sub("pick_reward"), p.pick_reward)?;
                c.finite(&sub("stolen_penalty"), p.stolen_penalty)?;
            }
            Substrate::MatrixGame(p) => {
                let n = self.agents_per_arena();
                let k = p.actions as usize;
                if k < 1 {
                    return Err(c.bad(&sub("actions"), "0 actions".into(), "at least 1 action"));
                }
                if !p.action_names.is_empty() && p.action_names.len() != k {
                    return Err(c.bad(
                        &sub("action_names"),
                        format!("{} names for {k} actions", p.action_names.len()),
                        format!("{k} names or none"),
                    ));
                }
                let rows = k.checked_pow(n as u32).filter(|r| *r <= MAX_JOINT_ACTIONS);
                let Some(rows) = rows else {
                    return Err(c.bad(
                        &sub("payoffs"),
                        format!("{k}^{n} joint actions"),
                        format!("at most {MAX_JOINT_ACTIONS}"),
                    ));
                };
                if p.payoffs.len() != rows {
                    return Err(c.at(
                        &sub("payoffs"),
                        None,
                        ErrorClass::PayoffShape,
                        format!("{} rows, but {n} players with {k} actions make {k}^{n} = {rows} joint actions", p.payoffs.len()),
                        format!("{rows} rows of {n} rewards, player 0's action most significant"),
                    ));
                }
                for (r, row) in p.payoffs.iter().enumerate() {
                    let path = [f("substrate"), f("payoffs"), i(r)];
                    if row.len() != n {
                        return Err(c.at(
                            &path,
                            None,
                            ErrorClass::PayoffShape,
                            format!("row {r} has {} rewards for {n} players", row.len()),
                            format!("{n} rewards per row"),
                        ));
                    }
                    for v in row {
                        c.finite(&path, *v)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn check_chemistry(&self, c: &Check, p: &super::ChemistryParams) -> Result<(), ScenarioError> {
        let at = |list: &str, k: usize, field: &str| vec![f("substrate"), f(list), i(k), f(field)];
        if p.compounds.is_empty() || p.compounds.len() > 254 {
            return Err(c.at(
                &[f("substrate"), f("compounds")],
                None,
                ErrorClass::ReactionGraph,
                format!("{} compounds", p.compounds.len()),
                "1 to 254 compounds".into(),
            ));
        }
        for (k, g) in p.groups.iter().enumerate() {
            if p.groups[..k].iter().any(|h| h.name == g.name) {
                return Err(c.at(
                    &at("groups", k, "name"),
                    None,
                    ErrorClass::ReactionGraph,
                    format!("group {:?} is defined twice", g.name),
                    "unique group names".into(),
                ));
            }
            c.probability(&at("groups", k, "ground"), g.ground)?;
            c.probability(&at("groups", k, "vesicle"), g.vesicle)?;
        }
        let group_names = || {
            p.groups
                .iter()
                .map(|g| g.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (k, comp) in p.compounds.iter().enumerate() {
            if comp.name == "empty" || p.compounds[..k].iter().any(|d| d.name == comp.name) {
                return Err(c.at(
                    &at("compounds", k, "name"),
                    None,
                    ErrorClass::ReactionGraph,
                    format!("compound name {:?} is taken", comp.name),
                    "unique names other than \"empty\"".into(),
                ));
            }
            if Tile::from_symbol(comp.symbol).is_some()
                || p.compounds[..k].iter().any(|d| d.symbol == comp.symbol)
                || !comp.symbol.is_ascii_graphic()
                || comp.symbol == '"'
            {
                return Err(c.at(
                    &at("compounds", k, "symbol"),
                    None,
                    ErrorClass::ReactionGraph,
                    format!("symbol {:?} is already used or not printable", comp.symbol),
                    format!(
                        "a printable ASCII character not in the legend ({})",
                        map::legend_summary(|_| true)
                    ),
                ));
            }
            if !p.groups.iter().any(|g| g.name == comp.group) {
                return Err(c.at(
                    &at("compounds", k, "group"),
                    None,
                    ErrorClass::ReactionGraph,
                    format!("unknown group {:?}", comp.group),
                    group_names(),
                ));
            }
        }
        if let Some(g) = &p.empty_group
            && !p.groups.iter().any(|h| &h.name == g)
        {
            return Err(c.at(
                &[f("substrate"), f("empty_group")],
                None,
                ErrorClass::ReactionGraph,
                format!("unknown group {g:?}"),
                group_names(),
            ));
        }
        let known = |name: &str| name == "empty" || p.compounds.iter().any(|d| d.name == name);
        let compound_names = || {
            let mut v: Vec<String> = p.compounds.iter().map(|d| d.name.clone()).collect();
            v.push("empty".into());
            v.join(", ")
        };
        for (k, r) in p.reactions.iter().enumerate() {
            if r.reactants.is_empty() || r.reactants.len() > MAX_REACTANTS {
                return Err(c.at(
                    &at("reactions", k, "reactants"),
                    None,
                    ErrorClass::ReactionGraph,
                    format!("{} reactants", r.reactants.len()),
                    format!("1 to {MAX_REACTANTS}"),
                ));
            }
            if r.reactants.len() != r.products.len() {
                return Err(c.at(
                    &at("reactions", k, "products"),
                    None,
                    ErrorClass::ReactionGraph,
                    format!("reaction {:?} has {} reactants but {} products", r.name, r.reactants.len(), r.products.len()),
                    "as many products as reactants (paired in order; use \"empty\" for a molecule that disappears)".into(),
                ));
            }
            if r.reactants.iter().all(|x| x == "empty") && p.empty_group.is_none() {
                return Err(c.at(
                    &at("reactions", k, "reactants"),
                    None,
                    ErrorClass::ReactionGraph,
                    format!(
                        "reaction {:?} needs only empty cells, which never initiate",
                        r.name
                    ),
                    "a compound among the reactants, or set `empty_group`".into(),
                ));
            }
            for (list, names) in [("reactants", &r.reactants), ("products", &r.products)] {
                for (j, name) in names.iter().enumerate() {
                    if !known(name) {
                        return Err(c.at(
                            &[f("substrate"), f("reactions"), i(k), f(list), i(j)],
                            None,
                            ErrorClass::ReactionGraph,
                            format!("unknown compound {name:?} in reaction {:?}", r.name),
                            compound_names(),
                        ));
                    }
                }
            }
            c.finite(&at("reactions", k, "reward"), r.reward)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{ActionSet, RoleKind};

    #[test]
    fn action_sets_have_the_documented_sizes() {
        assert_eq!(ActionSet::Move5.len(), 5);
        assert_eq!(ActionSet::Gift9.len(), 9);
        assert_eq!(ActionSet::Chemistry8.len(), 8);
        assert_eq!(ActionSet::Choose(3).len(), 3);
        assert_eq!(RoleKind::Player.default_control(), Control::Learner);
    }
}
