//! Observations: every learner's egocentric window, copied from its arena's cell layer into the
//! dense `[B, N, O]` buffer.

use bevy_ecs::prelude::*;
use rayon::prelude::*;

use super::{ARENAS_PER_TASK, ONE_TABLE};
use crate::components::{Alive, Cells, GridPos, StepBuffers};
use crate::layout::Layout;
use crate::substrate::pursuit;

/// Writes `StepBuffers::obs` from the cells updated by `resolve_interactions`.
pub fn write_observations(
    layout: Res<Layout>,
    mut buffers: ResMut<StepBuffers>,
    arenas: Query<&Cells>,
    agents: Query<(&GridPos, &Alive)>,
) {
    let m = layout.agents;
    let per_arena = layout.learners * layout.obs_len;
    let mut arena_cols = arenas.contiguous_iter().expect(ONE_TABLE);
    let mut agent_cols = agents.contiguous_iter().expect(ONE_TABLE);
    let (Some(cells), Some((pos, alive))) = (arena_cols.next(), agent_cols.next()) else {
        return;
    };
    (
        cells.par_iter(),
        pos.par_chunks(m),
        alive.par_chunks(m),
        buffers.obs.par_chunks_mut(per_arena),
    )
        .into_par_iter()
        .with_min_len(ARENAS_PER_TASK)
        .for_each(|(cells, pos, alive, obs)| {
            pursuit::write_observations(&layout, pos, alive, &cells.0, obs)
        });
}
