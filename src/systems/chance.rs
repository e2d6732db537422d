//! Act and slip: turn the learners' chosen actions and the arena's random streams into the
//! actions applied this step. First in the step, so every rule after it is deterministic.

use bevy_ecs::prelude::*;
use rayon::prelude::*;

use super::{ARENAS_PER_TASK, ONE_TABLE};
use crate::components::{Alive, AppliedAction, ArenaRng, StepBuffers};
use crate::layout::Layout;

/// Draws slip and scripted-move outcomes for every agent of every arena.
pub fn draw_chance(
    layout: Res<Layout>,
    buffers: Res<StepBuffers>,
    mut arenas: Query<&mut ArenaRng>,
    mut agents: Query<(&Alive, &mut AppliedAction)>,
) {
    let (m, n) = (layout.agents, layout.learners);
    let mut rngs = arenas.contiguous_iter_mut().expect(ONE_TABLE);
    let mut agent_cols = agents.contiguous_iter_mut().expect(ONE_TABLE);
    let (Some(mut rngs), Some((alive, mut applied))) = (rngs.next(), agent_cols.next()) else {
        return;
    };
    (
        rngs.bypass_change_detection().par_iter_mut(),
        alive.par_chunks(m),
        applied.bypass_change_detection().par_chunks_mut(m),
        buffers.actions.par_chunks(n.max(1)),
    )
        .into_par_iter()
        .with_min_len(ARENAS_PER_TASK)
        .for_each(|(rng, alive, applied, actions)| {
            crate::substrate::draw_chance(&layout, rng, alive, actions, applied)
        });
}
