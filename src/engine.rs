//! `EnvBatch`: one bevy World holding B arenas of one scenario, stepped by one schedule.
//!
//! This file holds the batch itself, its buffers, stepping, resets, opponent predictions and
//! hidden states. Building a batch is in `spawn`, access to one arena in `inspect`, rollouts
//! and the episode log in `record`, and the saved state in `state`.

use bevy_ecs::prelude::*;

use rand_core::Rng;

use crate::components::{
    AgentId, ArenaRng, EpisodeClock, HiddenStates, OpponentModel, ResetAll, StepBuffers,
};
use crate::error::EngineError;
use crate::layout::Layout;

mod central;
mod fixed_slots;
mod inspect;
mod record;
mod spawn;
mod state;

pub use fixed_slots::{FixedSlots, SlotActor};
pub use state::BatchState;

/// A batch of arenas of one scenario.
///
/// The caller writes every learner's action into [`EnvBatch::actions_mut`] (`[B, N]`,
/// arena-major), calls [`EnvBatch::step`], and reads observations, rewards and episode ends from
/// [`EnvBatch::buffers`]. Arenas whose episode ended reset themselves during the step; the
/// observation the reset overwrote stays in [`EnvBatch::final_obs`].
///
/// ```
/// use gridarena::engine::EnvBatch;
/// use gridarena::scenario::Scenario;
///
/// let loaded = Scenario::load("assets/scenarios/prisoners_dilemma.ron".as_ref())?;
/// let mut batch = EnvBatch::new(&loaded, 8, 42)?;
/// assert_eq!(batch.actions_mut().len(), 8 * 2); // 8 arenas x 2 players
/// // Both players cooperate (action 0) in every arena: 3 each, as the payoff table says.
/// batch.actions_mut().fill(0);
/// batch.step()?;
/// assert!(batch.buffers().rewards.iter().all(|&r| r == 3.0));
/// // Actions out of range are refused, not clamped.
/// batch.actions_mut()[0] = 7;
/// assert!(batch.step().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct EnvBatch {
    world: World,
    step: Schedule,
    reset: Schedule,
    arenas: usize,
    seed: u64,
    /// The first arena's index in the job's arenas (its random streams; [`EnvBatch::new_from`]).
    first: u64,
    /// Learner slots a fixed actor plays ([`EnvBatch::fix_slots`]).
    fixed: Option<FixedSlots>,
}

impl EnvBatch {
    /// The shared static data of this batch.
    pub fn layout(&self) -> &Layout {
        self.world.resource::<Layout>()
    }

    /// Number of arenas B.
    pub fn arenas(&self) -> usize {
        self.arenas
    }

    /// The run seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The dense step buffers.
    pub fn buffers(&self) -> &StepBuffers {
        self.world.resource::<StepBuffers>()
    }

    /// `[B, N, O]` each arena's observation of the step that ended its last episode, before the
    /// auto-reset (valid for the arenas whose `terminated` or `truncated` is set after a step).
    pub fn final_obs(&self) -> &[u8] {
        &self.buffers().final_obs
    }

    /// Desynchronises the arenas' episodes: each arena's clock jumps to an offset drawn
    /// uniformly in `[0, max_steps)` from its own spawn stream, so the first episodes end at
    /// spread-out steps. Training calls it once on fresh arenas (`desync_episodes`).
    pub fn desync_clocks(&mut self) {
        let max_steps = self.layout().max_steps.max(1);
        let mut q = self.world.query::<(&mut ArenaRng, &mut EpisodeClock)>();
        for (mut rng, mut clock) in q.iter_mut(&mut self.world) {
            clock.t = crate::rng::below(rng.spawn.next_u32(), max_steps);
        }
    }

    /// The `[B, N]` action buffer to fill before [`EnvBatch::step`].
    pub fn actions_mut(&mut self) -> &mut [u8] {
        &mut self
            .world
            .resource_mut::<StepBuffers>()
            .into_inner()
            .actions
    }

    /// Advances every arena by one step, after checking every action is in range.
    ///
    /// Systems split their work over the current rayon pool; call this from inside
    /// `pool.install(..)` (as the CLI does): dispatching from a worker thread is much cheaper
    /// than injecting every system's work into the pool from outside.
    pub fn step(&mut self) -> Result<(), EngineError> {
        self.act_fixed_slots()?;
        let (n, actions) = (self.layout().learners, self.layout().actions);
        let buf = &self.buffers().actions;
        if let Some(i) = buf.iter().position(|&a| a as usize >= actions) {
            return Err(EngineError::InvalidAction {
                arena: i / n,
                learner: i % n,
                action: buf[i],
                actions,
            });
        }
        self.step.run(&mut self.world);
        self.fixed_slots_stepped();
        Ok(())
    }

    /// Writes the opponent models' predictions `[B x N, N-1, A]` into the learners'
    /// [`OpponentModel`] components.
    pub fn set_opponent_predictions(&mut self, p: &[f32]) -> Result<(), EngineError> {
        let (n, b) = (self.layout().learners, self.arenas);
        let per = p.len() / (b * n).max(1);
        if n < 2 || per * b * n != p.len() || per == 0 {
            return Err(EngineError::Shape {
                what: "opponent predictions",
                expected: b * n,
                got: p.len(),
            });
        }
        let mut q = self.world.query::<(&AgentId, &mut OpponentModel)>();
        for (id, mut m) in q.iter_mut(&mut self.world) {
            if (id.slot as usize) < n {
                let r = id.arena as usize * n + id.slot as usize;
                m.predicted.clear();
                m.predicted.extend_from_slice(&p[r * per..(r + 1) * per]);
            }
        }
        Ok(())
    }

    /// The opponent models' latest predictions in `arena`, per learner slot (`[N-1, A]`
    /// each, empty when never written).
    pub fn opponent_predictions(&mut self, arena: usize) -> Vec<Vec<f32>> {
        let n = self.layout().learners;
        let mut out = vec![Vec::new(); n];
        let mut q = self.world.query::<(&AgentId, &OpponentModel)>();
        for (id, m) in q.iter(&self.world) {
            if id.arena as usize == arena && (id.slot as usize) < n {
                out[id.slot as usize] = m.predicted.clone();
            }
        }
        out
    }

    /// From the next step on, fills each arena's observations with one byte instead of
    /// computing them (`bench env --observations filled`, a ceiling: what the rest of the step
    /// costs). The observations are then meaningless; nothing but that benchmark calls this.
    pub(crate) fn fill_observations(&mut self) {
        self.step = crate::schedule::filled_step_schedule();
    }

    /// Respawns every arena (episode counters are kept).
    pub fn reset(&mut self) {
        self.world.resource_mut::<ResetAll>().0 = true;
        self.reset.run(&mut self.world);
    }

    /// Gives every learner a recurrent hidden state of `width` floats, zero (the dense buffer
    /// `[B, N, width]`, zeroed for an arena whenever its episode starts); 0 removes it.
    pub fn set_hidden_width(&mut self, width: usize) {
        if width == 0 {
            self.world.remove_resource::<HiddenStates>();
            return;
        }
        let n = self.layout().learners;
        self.world.insert_resource(HiddenStates {
            width,
            state: vec![0.0; self.arenas * n * width],
        });
    }

    /// `[B, N, g]` the learners' hidden states (empty without [`EnvBatch::set_hidden_width`]).
    pub fn hidden_states(&self) -> &[f32] {
        self.world
            .get_resource::<HiddenStates>()
            .map_or(&[], |h| &h.state)
    }

    /// The hidden states to read and replace by an acting pass (empty without
    /// [`EnvBatch::set_hidden_width`]).
    pub fn hidden_states_mut(&mut self) -> &mut [f32] {
        match self.world.get_resource_mut::<HiddenStates>() {
            Some(h) => &mut h.into_inner().state,
            None => &mut [],
        }
    }
}
