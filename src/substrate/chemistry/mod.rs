//! chemistry (Melting Pot 2.4): molecules on the ground and in the avatars' vesicles react
//! following a reaction graph that is data in the scenario.
//!
//! An avatar substrate (see [`super::avatars`]). Cell layer item byte: compound index + 1 (0
//! empty); map symbols are declared by the compounds. Counters: `reaction_<name>` per reaction.

mod params;
pub mod rules;
mod validate;

pub use params::{ChemistryParams, CompoundSpec, GroupSpec, ReactionSpec};
pub use rules::{IO, interact};
pub use validate::MAX_REACTANTS;

use crate::error::ScenarioError;
use crate::layout::core::LayoutCore;
use crate::render::draw::{Instance, hsv};
use crate::rng;
use crate::rollout::frame::Frame;
use crate::scenario::actions::ActionSet;
use crate::scenario::check::Check;
use crate::scenario::map::Grid;
use crate::scenario::observation::ObsField;
use crate::scenario::view::ScenarioView;
use crate::substrate::avatars::{self, AvatarLayout};
use crate::substrate::{ArenaMut, Derived, SubstrateRules};

/// Observation bytes after the window: the vesicle's compound and an io-ready flag. The viewer's
/// guard on the observation's length; `observation_layout` describes these bytes.
#[cfg(feature = "viewer")]
const EXTRAS: usize = 2;

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

/// chemistry's derived data.
#[derive(Debug, Clone)]
pub struct Chemistry {
    /// The parameters.
    pub params: ChemistryParams,
    /// The facing-rotated window.
    pub avatar: AvatarLayout,
    /// Firing threshold (scaled to 2^32) per compound id on the ground.
    pub fire_ground: Vec<u64>,
    /// Firing threshold per compound id in a vesicle.
    pub fire_vesicle: Vec<u64>,
    /// The compiled reactions.
    pub reactions: Vec<Reaction>,
    /// For each compound id, the reactions it takes part in.
    pub reactions_of: Vec<Vec<u16>>,
    /// ln(1 - p) of empty cells initiating (0 when they never do).
    pub empty_log: f64,
}

/// A distinct colour per compound index (sRGB), as the grid and the viewer draw them.
pub fn compound_color(c: u8) -> [u8; 3] {
    hsv((c as f32 * 67.0 + 90.0) % 360.0, 0.55, 0.80)
}

impl SubstrateRules for Chemistry {
    type Params = ChemistryParams;
    const NAME: &'static str = "chemistry";
    const TEMPLATE: &'static str = include_str!("template.ron");
    avatars::avatar_hooks!(ChemistryParams);

    fn default_actions(_: &ChemistryParams) -> ActionSet {
        ActionSet::Chemistry8
    }

    /// Melting Pot's petri dish has no spawn points: every cell holds a compound or nothing.
    fn spawns_anywhere() -> bool {
        true
    }

    fn map_symbols(params: &ChemistryParams) -> Vec<char> {
        params.compounds.iter().map(|c| c.symbol).collect()
    }

    fn check_params(p: &ChemistryParams, _: &ScenarioView, c: &Check) -> Result<(), ScenarioError> {
        validate::check_params(p, c)
    }

    /// The window (item byte: compound index + 1, 0 empty), then the vesicle and the io flag.
    fn observation_layout(p: &ChemistryParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let compounds = p.compounds.len().min(u8::MAX as usize) as u8;
        vec![
            avatars::window_field(scenario, "compound", compounds),
            ObsField::new(
                "vesicle",
                &[("compound", 1)],
                compounds,
                "the compound the agent carries (index + 1, 0 empty)",
            ),
            ObsField::new(
                "io ready",
                &[("flag", 1)],
                1,
                "1 when the io action (swap vesicle and ground) is off cooldown",
            ),
        ]
    }

    fn symbol_meaning(p: &ChemistryParams, k: usize) -> String {
        p.compounds.get(k).map_or_else(String::new, |c| {
            format!(
                "open floor, starts with compound {} (group {})",
                c.name, c.group
            )
        })
    }

    fn describe(c: &ChemistryParams) -> String {
        format!(
            "{} compounds, {} reactions",
            c.compounds.len(),
            c.reactions.len()
        )
    }

    fn derive(params: &ChemistryParams, scenario: &ScenarioView, grid: &Grid) -> Derived<Self> {
        let pad = avatars::window_pad(avatars::window(scenario), 1);
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
        Derived {
            rules: Chemistry {
                params: params.clone(),
                avatar: AvatarLayout::new(scenario),
                fire_ground,
                fire_vesicle,
                reactions,
                reactions_of,
                empty_log: params
                    .empty_group
                    .as_deref()
                    .and_then(group)
                    .map_or(0.0, |g| (1.0 - g.ground).ln()),
            },
            pad,
            cells_template: avatars::cells_template(grid, pad),
            counter_names: params
                .reactions
                .iter()
                .map(|r| format!("reaction_{}", r.name))
                .collect(),
        }
    }

    fn apply_moves(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        avatars::apply_moves(layout, a, 0, |_, _, _| {});
    }

    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        interact(layout, self, a);
    }

    /// The whole map, as the windows show it but with absolute facings.
    fn global_state_layout(p: &ChemistryParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let compounds = p.compounds.len().min(u8::MAX as usize) as u8;
        avatars::global_state_layout(scenario, "compound", compounds)
    }

    fn write_global_state(&self, layout: &LayoutCore, a: &ArenaMut, state: &mut [u8]) {
        avatars::write_global_state(layout, a, state);
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        avatars::write_observations(layout, &self.avatar, a, |carry, cooldown, extras| {
            extras[0] = carry.0[0];
            extras[1] = u8::from(cooldown.0 == 0);
        });
    }

    fn draw_items(&self, layout: &LayoutCore, frame: &Frame, out: &mut Vec<Instance>) {
        avatars::draw_items(layout, frame, 0.25, |item| compound_color(item - 1), out);
    }

    #[cfg(feature = "viewer")]
    fn observation_image(
        &self,
        _layout: &LayoutCore,
        _slot: usize,
        obs: &[u8],
    ) -> Option<crate::viewer::obs_image::ObsImage> {
        use crate::viewer::obs_image::c;
        avatars::window_image(
            &self.avatar,
            obs,
            EXTRAS,
            (c(compound_color(0)), "compound (hue per kind)"),
            |v| c(compound_color(v.saturating_sub(1))),
            |e| format!("vesicle compound: {} (0 empty); io ready: {}", e[0], e[1]),
        )
    }
}
