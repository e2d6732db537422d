//! Matrix games: a repeated normal-form game as a degenerate scenario with no map. Every step
//! each player picks one of K actions and is paid from the table.
//!
//! Cell layer: `[a_0, .., a_{N-1}, has_previous]`, which rollout frames record as their items.
//! Counters: `chose_<k>` per action.

mod params;
pub mod rules;
#[cfg(feature = "viewer")]
mod viewer;

pub use params::MatrixParams;
pub use rules::{interact, joint_index, write_observations};

use crate::error::{ErrorClass, ScenarioError};
use crate::layout::core::LayoutCore;
use crate::scenario::actions::ActionSet;
use crate::scenario::check::{Check, f, i};
use crate::scenario::map::Grid;
use crate::scenario::observation::ObsField;
use crate::scenario::role::Control;
use crate::scenario::view::ScenarioView;
use crate::substrate::{ArenaMut, Derived, ExactModel, SubstrateRules};

/// The largest matrix-game payoff table, in joint actions.
pub const MAX_JOINT_ACTIONS: usize = 1 << 20;

/// A matrix game's derived data: its parameters.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// The parameters.
    pub params: MatrixParams,
}

impl SubstrateRules for Matrix {
    type Params = MatrixParams;
    const NAME: &'static str = "matrix_game";
    const TEMPLATE: &'static str = include_str!("template.ron");

    fn default_actions(p: &MatrixParams) -> ActionSet {
        ActionSet::Choose(p.actions)
    }

    fn uses_map() -> bool {
        false
    }

    /// `K^N` rows of `N` finite rewards, K >= 1, names for all actions or none.
    fn check_params(
        p: &MatrixParams,
        scenario: &ScenarioView,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        let sub = |field: &str| vec![f("substrate"), f(field)];
        let n = scenario.agents_per_arena();
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
                format!(
                    "{} rows, but {n} players with {k} actions make {k}^{n} = {rows} joint actions",
                    p.payoffs.len()
                ),
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
        Ok(())
    }

    fn check_roles(
        _: &MatrixParams,
        scenario: &ScenarioView,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        if scenario
            .roles
            .iter()
            .any(|r| r.control() != Control::Learner)
        {
            return Err(c.bad(
                &[f("roles")],
                "matrix-game players must all be learners".into(),
                "control: learner",
            ));
        }
        Ok(())
    }

    /// The previous joint action one-hot per player, then the first-step flag
    /// ([`write_observations`]).
    fn observation_layout(p: &MatrixParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let players = scenario.agents_per_arena();
        vec![
            ObsField::new(
                "previous joint action",
                &[("player", players), ("action", p.actions as usize)],
                1,
                "one-hot: each player's action last step (slot order); all zero at the first step",
            )
            .entries(&Self::action_names(p)),
            ObsField::new(
                "first step",
                &[("flag", 1)],
                1,
                "1 at an episode's first step (no previous action yet)",
            ),
        ]
    }

    /// The asset's `action_names` when it gives them.
    fn action_names(p: &MatrixParams) -> Vec<String> {
        if p.action_names.is_empty() {
            (0..p.actions).map(|a| format!("choice {a}")).collect()
        } else {
            p.action_names.clone()
        }
    }

    fn describe(m: &MatrixParams) -> String {
        format!("{} actions, {} payoff rows", m.actions, m.payoffs.len())
    }

    fn derive(params: &MatrixParams, scenario: &ScenarioView, _: &Grid) -> Derived<Self> {
        Derived {
            rules: Matrix {
                params: params.clone(),
            },
            pad: 0,
            cells_template: vec![0u8; scenario.agents_per_arena() + 1],
            counter_names: (0..params.actions).map(|a| format!("chose_{a}")).collect(),
        }
    }

    fn apply_moves(&self, _: &LayoutCore, _: &mut ArenaMut) {}

    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        interact(layout, &self.params, a);
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        write_observations(layout, &self.params, a);
    }

    fn frame_items(&self, _: &LayoutCore, cells: &[u8]) -> Vec<u8> {
        cells.to_vec()
    }

    fn frame_items_len(&self, layout: &LayoutCore) -> Option<usize> {
        Some(layout.cells_template.len())
    }

    /// The previous joint action; every recorded action must be one of the K.
    fn load_frame_items(&self, layout: &LayoutCore, items: &[u8], cells: &mut [u8]) -> Option<()> {
        if items.len() != cells.len()
            || items
                .iter()
                .take(layout.agents)
                .any(|&a| a >= self.params.actions)
        {
            return None;
        }
        cells.copy_from_slice(items);
        Some(())
    }

    #[cfg(feature = "viewer")]
    fn observation_image(
        &self,
        layout: &LayoutCore,
        _slot: usize,
        obs: &[u8],
    ) -> Option<crate::viewer::obs_image::ObsImage> {
        viewer::observation_image(&self.params, layout, obs)
    }

    fn exact_model(&self) -> ExactModel {
        ExactModel::PreviousJointAction {
            actions: self.params.actions as usize,
        }
    }
}
