//! What centralised learners and masked policies read beside the observations: every arena's
//! global state (a whole-arena view for centralised critics and mixers, kept on request) and
//! the action mask (kept by the substrates that have illegal or idle actions).

use bevy_ecs::system::RunSystemOnce;

use super::EnvBatch;
use crate::components::StepBuffers;
use crate::substrate;
use crate::systems::Arenas;

impl EnvBatch {
    /// Keeps (or stops keeping) every arena's global state `[B, S]`, S =
    /// `Layout::state_len`, written with the observations from now on (and at once for the
    /// current states). Off by default: a batch that nobody reads the state of does not pay
    /// for writing it.
    ///
    /// ```
    /// use gridarena::engine::EnvBatch;
    /// use gridarena::scenario::Scenario;
    ///
    /// let loaded = Scenario::load("assets/scenarios/coin_game.ron".as_ref())?;
    /// let mut batch = EnvBatch::new(&loaded, 4, 7)?;
    /// assert!(batch.global_state().is_none());
    /// batch.set_global_state(true);
    /// let s = loaded.scenario.global_state_len();
    /// assert_eq!(batch.global_state().unwrap().len(), 4 * s);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_global_state(&mut self, keep: bool) {
        let width = if keep { self.layout().state_len } else { 0 };
        let rows = self.arenas * width.max(1);
        {
            let mut b = self.world.resource_mut::<StepBuffers>();
            b.state_width = width;
            b.state = vec![0; rows];
            b.final_state = vec![0; rows];
        }
        if keep {
            self.observe_all();
        }
    }

    /// `[B, S]` every arena's global state after the last step or reset (layout:
    /// `Scenario::global_state_layout`), or `None` unless [`EnvBatch::set_global_state`] keeps
    /// it.
    pub fn global_state(&self) -> Option<&[u8]> {
        let b = self.buffers();
        (b.state_width > 0).then_some(&b.state[..])
    }

    /// `[B, S]` each arena's global state at the step that ended its last episode, before the
    /// auto-reset (valid where `terminated` or `truncated` is set, as `final_obs`), or `None`
    /// unless the batch keeps the global state.
    pub fn final_state(&self) -> Option<&[u8]> {
        let b = self.buffers();
        (b.state_width > 0).then_some(&b.final_state[..])
    }

    /// `[B, N, A]` each arena's action mask at the step that ended its last episode, before the
    /// auto-reset (valid where `terminated` or `truncated` is set, as `final_obs`), or `None`
    /// when the substrate has no illegal actions.
    pub fn final_action_mask(&self) -> Option<&[u8]> {
        self.layout()
            .action_mask
            .then_some(&self.buffers().final_action_mask[..])
    }

    /// `[B, N, A]` 1 where a learner's action is legal in the current state, or `None` when
    /// the substrate has no illegal actions (every action is then legal).
    pub fn action_mask(&self) -> Option<&[u8]> {
        self.layout()
            .action_mask
            .then_some(&self.buffers().action_mask[..])
    }

    /// Rewrites every arena's observations, global state and mask from its current state.
    pub(super) fn observe_all(&mut self) {
        self.world
            .run_system_once(|mut arenas: Arenas| {
                arenas.for_each(substrate::write_observations);
            })
            .expect("the batch's own components are present");
    }

    /// The `[B, N]` action buffer to fill before [`EnvBatch::step`] beside the action mask
    /// `[B, N, A]` the choices must respect (`None` without one).
    pub fn actions_and_mask(&mut self) -> (&mut [u8], Option<&[u8]>) {
        let masked = self.layout().action_mask;
        let b = self.world.resource_mut::<StepBuffers>().into_inner();
        (&mut b.actions, masked.then_some(&b.action_mask[..]))
    }
}
