//! walk_to_goal: the smallest substrate, written by following docs/new_substrate.md. Players
//! walk on the map (`move5`, walls block, players may share a cell); every step costs
//! `step_reward`, and a player who reaches the goal cell `G` earns `goal_reward` and ends the
//! episode. Observation per learner: `[x, y, goal x, goal y]`. Counters: `goals`. Action
//! mask: a move into a wall or off the map does nothing, so it is masked (`stay` never is).
//!
//! Cell layer: none (the goal is fixed by the map and kept in `Goal`).

use serde::{Deserialize, Serialize};

use crate::components::{GridPos, StepReward};
use crate::error::ScenarioError;
use crate::layout::core::LayoutCore;
use crate::render::draw::{Instance, rgb, shape, square};
use crate::rollout::frame::Frame;
use crate::scenario::actions::ActionSet;
use crate::scenario::check::{Check, f};
use crate::scenario::map::{Grid, Tile};
use crate::scenario::observation::ObsField;
use crate::scenario::view::ScenarioView;
use crate::substrate::pursuit::MOVES;
use crate::substrate::{ArenaMut, Derived, SubstrateRules};

/// The map symbol of the goal cell.
pub const GOAL_SYMBOL: char = 'G';

/// walk_to_goal's parameters as written in assets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalParams {
    /// Reward for stepping onto the goal.
    #[serde(default = "one")]
    pub goal_reward: f32,
    /// Reward every player gets every step.
    #[serde(default)]
    pub step_reward: f32,
}

fn one() -> f32 {
    1.0
}

/// walk_to_goal's derived data.
#[derive(Debug, Clone)]
pub struct Goal {
    /// The parameters.
    pub params: GoalParams,
    /// The goal cell.
    pub goal: GridPos,
}

impl SubstrateRules for Goal {
    type Params = GoalParams;
    const NAME: &'static str = "walk_to_goal";
    const TEMPLATE: &'static str = include_str!("template.ron");

    fn default_actions(_: &GoalParams) -> ActionSet {
        ActionSet::Move5
    }

    fn has_action_mask(_: &GoalParams) -> bool {
        true
    }

    /// `G` reads as the extra tile `Tile::Compound(0)`: open floor.
    fn map_symbols(_: &GoalParams) -> Vec<char> {
        vec![GOAL_SYMBOL]
    }

    fn check_params(
        p: &GoalParams,
        scenario: &ScenarioView,
        c: &Check,
    ) -> Result<(), ScenarioError> {
        c.finite(&[f("substrate"), f("goal_reward")], p.goal_reward)?;
        c.finite(&[f("substrate"), f("step_reward")], p.step_reward)?;
        let goals: usize = scenario
            .map
            .iter()
            .map(|row| row.chars().filter(|&ch| ch == GOAL_SYMBOL).count())
            .sum();
        if goals != 1 {
            return Err(c.bad(
                &[f("map")],
                format!("{goals} goal cells"),
                "exactly one 'G' on the map",
            ));
        }
        Ok(())
    }

    /// The player's cell, then the goal's: `[x, y, goal x, goal y]`.
    fn observation_layout(_: &GoalParams, scenario: &ScenarioView) -> Vec<ObsField> {
        let last = |n: usize| n.saturating_sub(1).min(u8::MAX as usize) as u8;
        let (x, y) = (
            last(scenario.map.first().map_or(0, |r| r.chars().count())),
            last(scenario.map.len()),
        );
        vec![
            ObsField::new(
                "position",
                &[("coordinate", 2)],
                0,
                "the player's column and row",
            )
            .entries(&["x", "y"])
            .entry_max(vec![x, y]),
            ObsField::new(
                "goal",
                &[("coordinate", 2)],
                0,
                "the goal cell's column and row",
            )
            .entries(&["x", "y"])
            .entry_max(vec![x, y]),
        ]
    }

    fn symbol_meaning(_: &GoalParams, _: usize) -> String {
        "open floor, the goal cell".to_string()
    }

    fn describe(p: &GoalParams) -> String {
        format!("goal {}, step {}", p.goal_reward, p.step_reward)
    }

    fn derive(params: &GoalParams, _: &ScenarioView, grid: &Grid) -> Derived<Self> {
        let cell = grid
            .tiles
            .iter()
            .position(|t| *t == Tile::Compound(0))
            .unwrap_or(0);
        let goal = GridPos {
            x: (cell % grid.width) as i16,
            y: (cell / grid.width) as i16,
        };
        Derived {
            rules: Goal {
                params: params.clone(),
                goal,
            },
            pad: 0,
            cells_template: Vec::new(),
            counter_names: vec!["goals".to_string()],
        }
    }

    fn apply_moves(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        for (p, act) in a.pos.iter_mut().zip(a.applied.iter()) {
            let (dx, dy) = MOVES[act.0 as usize % MOVES.len()];
            if layout.is_open((p.x + dx) as i32, (p.y + dy) as i32) {
                *p = GridPos {
                    x: p.x + dx,
                    y: p.y + dy,
                };
            }
        }
    }

    fn resolve_interactions(&self, _: &LayoutCore, a: &mut ArenaMut) {
        for (p, r) in a.pos.iter().zip(a.reward.iter_mut()) {
            *r = StepReward(self.params.step_reward);
            if *p == self.goal {
                r.0 += self.params.goal_reward;
                a.counters[0] += 1;
                *a.ended = true;
            }
        }
    }

    fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
        for (out, p) in a.obs.chunks_exact_mut(layout.obs_len).zip(a.pos.iter()) {
            out.copy_from_slice(&[p.x as u8, p.y as u8, self.goal.x as u8, self.goal.y as u8]);
        }
    }

    fn write_action_mask(&self, layout: &LayoutCore, a: &ArenaMut, mask: &mut [u8]) {
        for (row, p) in mask.chunks_exact_mut(layout.actions).zip(a.pos.iter()) {
            for (legal, (dx, dy)) in row.iter_mut().zip(MOVES) {
                let stays = dx == 0 && dy == 0;
                *legal = u8::from(stays || layout.is_open((p.x + dx) as i32, (p.y + dy) as i32));
            }
        }
    }

    fn draw_items(&self, _: &LayoutCore, _: &Frame, out: &mut Vec<Instance>) {
        let (x, y) = (self.goal.x as f32, self.goal.y as f32);
        out.push(square(x, y, 0.3, rgb([60, 170, 80]), shape::DIAMOND, 0.0));
    }
}
