//! Scenario assets: the typed RON format, loading with file:line:column errors, validation.
//!
//! A scenario is data: a substrate (the rules) with its parameters, an ASCII map, agent roles,
//! the action set, slip, episode length and the observation window. `docs/scenarios.md` documents
//! every field with a full example.

pub(crate) mod actions;
pub(crate) mod check;
mod diagnose;
mod explain;
pub mod locate;
pub mod map;
pub(crate) mod observation;
pub mod overrides;
pub(crate) mod role;
pub mod template;
mod validate;
pub(crate) mod view;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorClass, ScenarioError};
pub use crate::substrate::chemistry::{ChemistryParams, CompoundSpec, GroupSpec, ReactionSpec};
pub use crate::substrate::coin::CoinParams;
pub use crate::substrate::gift::GiftParams;
pub use crate::substrate::matrix::MatrixParams;
pub use crate::substrate::pursuit::PursuitParams;
/// The `substrate` field's enum, generated from the substrate registry.
pub use crate::substrate::registry::Substrate;
pub use actions::ActionSet;
pub use explain::{
    Explanation, MapExplanation, PlacedField, RoleExplanation, SymbolCount, explain,
};
use locate::SourceMap;
pub use map::{Grid, LEGEND, Tile};
pub use observation::{Axis, Channel, ObsField, ObservationSpec, Window};
pub use role::{Control, RoleKind, RoleSpec};
pub use view::ScenarioView;

/// The default scenario (PettingZoo SISL Pursuit v5 defaults), embedded in the binary.
pub const DEFAULT_SCENARIO: &str = include_str!("../../assets/scenarios/pursuit.ron");
/// The name under which the embedded default is reported.
pub const DEFAULT_SCENARIO_NAME: &str = "<embedded>/assets/scenarios/pursuit.ron";

pub use crate::substrate::chemistry::MAX_REACTANTS;
pub use crate::substrate::matrix::MAX_JOINT_ACTIONS;
pub use validate::MAX_MAP_SIDE;

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
    /// ASCII map, one string per row; legend in [`map::LEGEND`]. Not used by matrix games.
    #[serde(default)]
    pub map: Vec<String>,
    /// Agent roles in slot order; learners get observation/action slots in this order.
    pub roles: Vec<RoleSpec>,
    /// The action set; when omitted, the substrate's own (see [`Substrate::default_actions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<ActionSet>,
    /// Probability in [0, 1] that a learner's action is replaced by a uniformly random one.
    #[serde(default)]
    pub slip: f64,
    /// Episode length: an arena is truncated after this many steps.
    pub max_steps: u32,
    /// What learners observe; fields a substrate does not use must be left out.
    #[serde(default)]
    pub observation: ObservationSpec,
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
    ///
    /// ```
    /// use gridarena::scenario::Scenario;
    ///
    /// let loaded = Scenario::load("assets/scenarios/pursuit_3.ron".as_ref())?;
    /// assert_eq!(loaded.scenario.name, "pursuit_3");
    /// assert_eq!(loaded.scenario.learners_per_arena(), 3);
    /// assert_eq!((loaded.grid.width, loaded.grid.height), (7, 7));
    /// # Ok::<(), gridarena::error::ScenarioError>(())
    /// ```
    pub fn load(path: &Path) -> Result<LoadedScenario, ScenarioError> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: 0,
            column: 0,
            class: ErrorClass::Io,
            field: String::new(),
            message: format!("cannot read the file: {e}"),
            allowed: "a readable UTF-8 RON file".into(),
        })?;
        let src = std::str::from_utf8(&bytes).map_err(|e| {
            let at = locate::Pos::of_utf8_error(&bytes, &e);
            ScenarioError {
                file: file.clone(),
                line: at.line,
                column: at.col,
                class: ErrorClass::Syntax,
                field: String::new(),
                message: "a byte that is not UTF-8 text".into(),
                allowed: "UTF-8 text".into(),
            }
        })?;
        Scenario::parse(src, &file)
    }

    /// Parses and validates scenario text; `file` names it in errors.
    ///
    /// ```
    /// use gridarena::scenario::Scenario;
    ///
    /// let src = r#"Scenario(
    ///     name: "stag_hunt",
    ///     substrate: MatrixGame((
    ///         actions: 2,
    ///         payoffs: [[4.0, 4.0], [0.0, 3.0], [3.0, 0.0], [3.0, 3.0]],
    ///     )),
    ///     roles: [(kind: player, count: 2)],
    ///     max_steps: 8,
    /// )"#;
    /// let loaded = Scenario::parse(src, "stag_hunt.ron")?;
    /// assert_eq!(loaded.scenario.action_set().len(), 2);
    ///
    /// // Every problem is reported with file:line:column.
    /// let err = Scenario::parse(&src.replace("count: 2", "count: 3"), "stag_hunt.ron").unwrap_err();
    /// assert!(err.to_string().starts_with("stag_hunt.ron:"), "{err}");
    /// # Ok::<(), gridarena::error::ScenarioError>(())
    /// ```
    pub fn parse(src: &str, file: &str) -> Result<LoadedScenario, ScenarioError> {
        let map = SourceMap::scan(src);
        let scenario: Scenario = ron_options()
            .from_str(src)
            .map_err(|e| diagnose::ron_error(e, src, file, &map))?;
        let grid = scenario.validate_at(file, &map)?;
        Ok(LoadedScenario { scenario, grid })
    }

    /// The embedded default scenario.
    ///
    /// ```
    /// let loaded = gridarena::scenario::Scenario::default_pursuit();
    /// assert_eq!(loaded.scenario.name, "pursuit");
    /// assert_eq!(loaded.scenario.action_set().len(), 5);
    /// ```
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

    /// The action set, defaults resolved.
    pub fn action_set(&self) -> ActionSet {
        self.actions.unwrap_or(self.substrate.default_actions())
    }

    /// Observation bytes per learner for this scenario (see docs/scenarios.md for layouts).
    pub fn observation_len(&self) -> usize {
        self.substrate.observation_len(&self.view())
    }

    /// A learner's observation block by block, in byte order (the blocks' lengths sum to
    /// [`Scenario::observation_len`]).
    ///
    /// ```
    /// let loaded = gridarena::scenario::Scenario::default_pursuit();
    /// let blocks = loaded.scenario.observation_layout();
    /// assert_eq!(blocks[0].shape_string(), "[row 7, column 7, channel 3]");
    /// assert_eq!(blocks[0].entries, ["obstacle", "pursuers", "evaders"]);
    /// assert_eq!(blocks[0].entry_max, [1, 8, 30]);
    /// ```
    pub fn observation_layout(&self) -> Vec<ObsField> {
        self.substrate.observation_layout(&self.view())
    }

    /// The arena's global state block by block, in byte order: a centralised observation of
    /// the whole arena, the same layout in every arena (what `EnvBatch::global_state` holds).
    ///
    /// ```
    /// let loaded = gridarena::scenario::Scenario::default_pursuit();
    /// let blocks = loaded.scenario.global_state_layout();
    /// let bytes: usize = blocks.iter().map(|b| b.len()).sum();
    /// assert_eq!(bytes, loaded.scenario.global_state_len());
    /// ```
    pub fn global_state_layout(&self) -> Vec<ObsField> {
        self.substrate.global_state_layout(&self.view())
    }

    /// Global-state bytes per arena.
    pub fn global_state_len(&self) -> usize {
        self.global_state_layout().iter().map(ObsField::len).sum()
    }

    /// Whether the substrate keeps an action mask (`EnvBatch::action_mask`).
    pub fn has_action_mask(&self) -> bool {
        self.substrate.has_action_mask()
    }

    /// Action names in index order.
    pub fn action_names(&self) -> Vec<String> {
        self.substrate.action_names()
    }

    /// The scenario with every default written out: the action set, each role's control and
    /// the substrate's defaults of the `observation` block (the substrate's parameters are
    /// complete once parsed). It validates and behaves exactly as `self`.
    pub fn resolved(&self) -> Scenario {
        let mut s = self.clone();
        s.actions = Some(self.action_set());
        for r in &mut s.roles {
            r.control = Some(r.control());
        }
        s.observation = self.substrate.resolved_observation(&self.view());
        s
    }

    /// What the substrate's hooks read of this scenario (everything but the substrate).
    pub fn view(&self) -> ScenarioView<'_> {
        ScenarioView {
            map: &self.map,
            roles: &self.roles,
            observation: &self.observation,
            max_steps: self.max_steps,
        }
    }

    /// Agents per arena over all roles.
    pub fn agents_per_arena(&self) -> usize {
        self.view().agents_per_arena()
    }

    /// Learning agents per arena.
    pub fn learners_per_arena(&self) -> usize {
        self.view().learners()
    }
}
