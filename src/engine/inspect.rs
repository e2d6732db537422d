//! Reading and editing one arena outside the step: running code on its state, snapshots of
//! its agents, clock and counters, hand edits checked for valid positions, and the render
//! watch that extracts its scene on every step.

use bevy_ecs::system::RunSystemOnce;

use super::EnvBatch;
use crate::components::{Alive, EpisodeClock, GridPos};
use crate::error::EngineError;
use crate::layout::Layout;
use crate::rollout::Frame;
use crate::substrate::{self, ArenaMut};
use crate::systems::Arenas;
use crate::systems::record::frame;

impl EnvBatch {
    /// Runs `f` on one arena's state outside the step (inspection and hand edits).
    pub fn with_arena<T: Send + Sync + 'static>(
        &mut self,
        arena: usize,
        f: impl FnOnce(&Layout, &mut ArenaMut) -> T + Send + Sync + 'static,
    ) -> T {
        assert!(
            arena < self.arenas,
            "arena {arena} of a batch of {}",
            self.arenas
        );
        let mut f = Some(f);
        let system = move |mut arenas: Arenas| {
            let f = f.take().expect("a one-shot system runs once");
            arenas.with_arena(arena, f)
        };
        self.world
            .run_system_once(system)
            .expect("the batch's own components are present")
            .expect("the batch has agent and arena columns")
    }

    /// One arena's current state as a rollout frame (positions, alive flags, facings, carried
    /// items, substrate items, and the last step's applied actions and rewards).
    pub fn snapshot(&mut self, arena: usize) -> Frame {
        self.with_arena(arena, |layout, a| frame(layout, a, true))
    }

    /// Positions and alive flags of one arena's agents, by slot.
    pub fn agents(&mut self, arena: usize) -> Vec<(GridPos, bool)> {
        let f = self.snapshot(arena);
        f.positions
            .iter()
            .zip(&f.alive)
            .map(|(&(x, y), &a)| (GridPos { x, y }, a))
            .collect()
    }

    /// Step rewards of one arena's agents by slot, from the last step.
    pub fn agent_rewards(&mut self, arena: usize) -> Vec<f32> {
        self.snapshot(arena).rewards
    }

    /// Actions applied in the last step (after slip) for one arena's agents, by slot.
    pub fn applied_actions(&mut self, arena: usize) -> Vec<u8> {
        self.snapshot(arena).actions
    }

    /// The episode clock of one arena.
    pub fn clock(&mut self, arena: usize) -> EpisodeClock {
        self.with_arena(arena, |_, a| *a.clock)
    }

    /// The substrate counters of one arena's current episode (names in
    /// `Layout::counter_names`).
    pub fn counters(&mut self, arena: usize) -> Vec<u32> {
        self.with_arena(arena, |_, a| a.counters.to_vec())
    }

    /// Edits one arena by hand (tests, exact analysis), then recomputes its cell layer and
    /// observations. Every live agent must end on an open cell, and avatars on distinct cells.
    pub fn edit_arena(
        &mut self,
        arena: usize,
        f: impl FnOnce(&Layout, &mut ArenaMut) + Send + Sync + 'static,
    ) -> Result<(), EngineError> {
        self.with_arena(arena, move |layout, a| {
            f(layout, a);
            let mut seen = std::collections::HashSet::new();
            for slot in 0..layout.agents {
                let p = a.pos[slot];
                let clash = layout.rules.has_avatars() && a.alive[slot].0 && !seen.insert(p);
                if a.alive[slot].0 && (!layout.is_open(p.x as i32, p.y as i32) || clash) {
                    return Err(EngineError::BadPosition {
                        slot,
                        x: p.x as i32,
                        y: p.y as i32,
                    });
                }
            }
            substrate::rebuild_cells(layout, a);
            substrate::write_observations(layout, a);
            Ok(())
        })
    }

    /// Turns the render system on for `arena` (with `selected` marked): from now on every step
    /// and reset extracts its instances into the scene [`EnvBatch::render_scene`] returns.
    pub fn watch_render(&mut self, arena: usize, selected: Option<usize>) {
        use crate::systems::render::{RenderScene, RenderWatch, extract_render};
        self.world.insert_resource(RenderWatch {
            arena: arena.min(self.arenas - 1),
            selected,
        });
        if !self.world.contains_resource::<RenderScene>() {
            self.world.insert_resource(RenderScene::default());
        }
        // Extract the current state at once.
        let _ = self.world.run_system_once(extract_render);
    }

    /// Turns the render system off.
    pub fn stop_render(&mut self) {
        self.world
            .remove_resource::<crate::systems::render::RenderWatch>();
    }

    /// The watched arena's scene after the last step (None unless watched).
    pub fn render_scene(&self) -> Option<&crate::render::Scene> {
        self.world
            .get_resource::<crate::systems::render::RenderScene>()
            .map(|s| &s.0)
    }

    /// Places one arena's agents by hand; see [`EnvBatch::edit_arena`].
    pub fn set_agents(
        &mut self,
        arena: usize,
        agents: &[(GridPos, bool)],
    ) -> Result<(), EngineError> {
        let m = self.layout().agents;
        assert_eq!(agents.len(), m, "one entry per agent slot");
        let agents = agents.to_vec();
        self.edit_arena(arena, move |_, a| {
            for (slot, (p, alive)) in agents.iter().enumerate() {
                a.pos[slot] = *p;
                a.alive[slot] = Alive(*alive);
            }
        })
    }

    /// Sets the scale of the substrate's shaped reward terms from the next step on (1.0 at
    /// creation; training anneals it with the run config's `reward_shaping`). A reward is
    /// `sparse + scale * shaped`; substrates without shaped terms ignore it.
    pub fn set_reward_shaping(&mut self, scale: f32) {
        self.world.resource_mut::<Layout>().core.reward_shaping = scale;
    }

    /// The current scale of the shaped reward terms.
    pub fn reward_shaping(&self) -> f32 {
        self.layout().reward_shaping
    }
}
