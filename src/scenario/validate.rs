//! `Scenario::validate`: every rule an asset must satisfy, each failure located in the source.

use crate::error::{ErrorClass, ScenarioError};

use super::Scenario;
use super::check::{Check, f, i};
use super::locate::{Pos, SourceMap};
use super::map::{self, Grid, LEGEND, Tile};

/// The largest map side: positions are stored as i16 and cell indices as u16.
pub const MAX_MAP_SIDE: usize = 255;

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
        self.substrate.check_params(&self.view(), &c)?;
        let grid = self.check_map(&c)?;
        self.check_roles(&c, &grid)?;
        self.check_actions_and_episode(&c)?;
        self.substrate.check_observation(&self.view(), &grid, &c)?;
        Ok(grid)
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
        let compounds = self.substrate.map_symbols();
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
                    Some(Tile::Compound(_)) => true,
                    Some(t) => self.substrate.allows_tile(t),
                    None => false,
                };
                if !allowed_here {
                    let pos = row_pos.map(|p| Pos {
                        line: p.line,
                        col: p.col + 1 + x,
                    });
                    let mut allowed = map::legend_summary(|t| self.substrate.allows_tile(t));
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
        self.substrate.check_roles(&self.view(), c)
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
}

#[cfg(test)]
mod tests {
    use crate::scenario::{ActionSet, Control, RoleKind};

    #[test]
    fn action_sets_have_the_documented_sizes() {
        assert_eq!(ActionSet::Move5.len(), 5);
        assert_eq!(ActionSet::Gift9.len(), 9);
        assert_eq!(ActionSet::Chemistry8.len(), 8);
        assert_eq!(ActionSet::Choose(3).len(), 3);
        assert_eq!(RoleKind::Player.default_control(), Control::Learner);
    }
}
