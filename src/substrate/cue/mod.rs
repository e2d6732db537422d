//! cue_memory: a memory task. At the first step of every episode each player observes a cue
//! `c` in `0..K`, drawn uniformly by the arena's chance stream; the later steps show no cue;
//! at the episode's last step (step `length`, flagged in the observation) the action equal to
//! `c` pays `correct_reward` and any other `wrong_reward`, and the rules end the episode. No
//! other step pays. A policy that remembers the cue earns `correct_reward`; one that sees only
//! the current observation earns at most the mean of the two rewards weighted `1 : K - 1`
//! (docs/scenarios.md has the argument), so a memoryless network stays at chance.
//!
//! No map. Cell layer: `[c_0, .., c_{M-1}, t low byte, t high byte]` (each player's cue, the
//! steps taken in the episode), which rollout frames record as their items. Observation per
//! learner: `[K]` the cue one-hot (all zero after the first step), then a choose-now flag.
//! Counters: `correct`.

pub mod rules;
#[cfg(feature = "viewer")]
mod viewer;

use serde::{Deserialize, Serialize};

pub use rules::{choose, draw_cues, write_observations};

use crate::error::ScenarioError;
use crate::layout::core::LayoutCore;
use crate::scenario::actions::ActionSet;
use crate::scenario::check::{Check, f};
use crate::scenario::map::Grid;
use crate::scenario::observation::ObsField;
use crate::scenario::view::ScenarioView;
use crate::substrate::{ArenaMut, Derived, SubstrateRules};

/// cue_memory's parameters as written in assets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CueParams {
    /// K: the number of cues, which is also the number of actions (at least 2).
    pub cues: u8,
    /// L: steps per episode, the cue's step included; the choice is the last (at least 2, at
    /// most `max_steps`).
    pub length: u16,
    /// Paid at the last step for the action equal to the cue (default 1).
    #[serde(default = "one")]
    pub correct_reward: f32,
    /// Paid at the last step for any other action (default 0).
    #[serde(default)]
    pub wrong_reward: f32,
}

fn one() -> f32 {
    1.0
}

/// cue_memory's derived data: its parameters.
#[derive(Debug, Clone)]
pub struct Cue {
    /// The parameters.
    pub params: CueParams,
}

impl SubstrateRules for Cue {
    type Params = CueParams;
    const NAME: &'static str = "cue_memory";
    const TEMPLATE: &'static str = include_str!("template.ron");

    fn default_actions(p: &CueParams) -> ActionSet {
        ActionSet::Choose(p.cues)
    }

    fn uses_map() -> bool {
        false
    }

    /// At least two cues (one cue needs no memory), a length of at least 2 (a choice at the
    /// cue's own step needs none either) within `max_steps`, finite rewards, the cue's action
    /// paying the most.
    fn check_params(
        p: &CueParams,
        scenario: &ScenarioView,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        let sub = |field: &str| vec![f("substrate"), f(field)];
        if p.cues < 2 {
            return Err(c.bad(
                &sub("cues"),
                format!("{} cues", p.cues),
                "at least 2 cues (one needs no memory)",
            ));
        }
        if p.length < 2 {
            return Err(c.bad(
                &sub("length"),
                format!("length {}", p.length),
                "at least 2 steps (the cue's, then the choice)",
            ));
        }
        if scenario.max_steps < u32::from(p.length) {
            return Err(c.bad(
                &[f("max_steps")],
                format!(
                    "max_steps {} cuts off the choice at step {}",
                    scenario.max_steps, p.length
                ),
                format!("at least the substrate's length, {}", p.length),
            ));
        }
        c.finite(&sub("correct_reward"), p.correct_reward)?;
        c.finite(&sub("wrong_reward"), p.wrong_reward)?;
        if p.wrong_reward >= p.correct_reward {
            return Err(c.bad(
                &sub("wrong_reward"),
                format!(
                    "wrong_reward {} is not below correct_reward {}",
                    p.wrong_reward, p.correct_reward
                ),
                "less than correct_reward (the cue's action must pay the most)",
            ));
        }
        Ok(())
    }

    /// The cue one-hot at the first step, then the choose-now flag ([`write_observations`]).
    fn observation_layout(p: &CueParams, _: &ScenarioView) -> Vec<ObsField> {
        vec![
            ObsField::new(
                "cue",
                &[("cue", p.cues as usize)],
                1,
                "one-hot: this player's cue at the episode's first step, all zero after",
            ),
            ObsField::new(
                "choose now",
                &[("flag", 1)],
                1,
                "1 when the next action is the choice (the episode's last step)",
            ),
        ]
    }

    fn describe(p: &CueParams) -> String {
        format!(
            "{} cues, choice at step {}, correct {}, wrong {}",
            p.cues, p.length, p.correct_reward, p.wrong_reward
        )
    }

    fn derive(params: &CueParams, scenario: &ScenarioView, _: &Grid) -> Derived<Self> {
        Derived {
            rules: Cue {
                params: params.clone(),
            },
            pad: 0,
            cells_template: vec![0u8; scenario.agents_per_arena() + 2],
            counter_names: vec!["correct".into()],
        }
    }

    fn apply_moves(&self, _: &LayoutCore, _: &mut ArenaMut) {}

    fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        choose(layout, &self.params, a);
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        write_observations(layout, &self.params, a);
    }

    /// A new episode's cues.
    fn finish_spawn(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        draw_cues(layout, &self.params, a);
    }

    fn frame_items(&self, _: &LayoutCore, cells: &[u8]) -> Vec<u8> {
        cells.to_vec()
    }

    fn frame_items_len(&self, layout: &LayoutCore) -> Option<usize> {
        Some(layout.cells_template.len())
    }

    /// Every cue one of the K, the step count at most the length.
    fn load_frame_items(&self, layout: &LayoutCore, items: &[u8], cells: &mut [u8]) -> Option<()> {
        let m = layout.agents;
        if items.len() != cells.len()
            || items.len() != m + 2
            || items[..m].iter().any(|&c| c >= self.params.cues)
            || u16::from_le_bytes([items[m], items[m + 1]]) > self.params.length
        {
            return None;
        }
        cells.copy_from_slice(items);
        Some(())
    }

    #[cfg(feature = "viewer")]
    fn observation_image(
        &self,
        _: &LayoutCore,
        _slot: usize,
        obs: &[u8],
    ) -> Option<crate::viewer::obs_image::ObsImage> {
        viewer::observation_image(&self.params, obs)
    }
}
