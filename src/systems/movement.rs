//! Movement: apply the step's actions to positions and rebuild each arena's cell layer from the
//! new positions (the rules and observations that follow read the layer). Both happen in one
//! pass per arena so the arena's cells are rebuilt while its positions are in cache.

use bevy_ecs::prelude::*;
use rayon::prelude::*;

use super::{ARENAS_PER_TASK, ONE_TABLE};
use crate::components::{Alive, AppliedAction, Cells, GridPos};
use crate::layout::Layout;
use crate::substrate::pursuit;

/// Moves every live agent (reads `AppliedAction` written by `draw_chance`), then rebuilds its
/// arena's `Cells`.
pub fn apply_moves(
    layout: Res<Layout>,
    mut arenas: Query<&mut Cells>,
    mut agents: Query<(&mut GridPos, &Alive, &AppliedAction)>,
) {
    let m = layout.agents;
    let mut arena_cols = arenas.contiguous_iter_mut().expect(ONE_TABLE);
    let mut agent_cols = agents.contiguous_iter_mut().expect(ONE_TABLE);
    let (Some(mut cells), Some((mut pos, alive, act))) = (arena_cols.next(), agent_cols.next())
    else {
        return;
    };
    (
        cells.bypass_change_detection().par_iter_mut(),
        pos.bypass_change_detection().par_chunks_mut(m),
        alive.par_chunks(m),
        act.par_chunks(m),
    )
        .into_par_iter()
        .with_min_len(ARENAS_PER_TASK)
        .for_each(|(cells, pos, alive, act)| {
            pursuit::apply_moves(&layout, pos, alive, act);
            pursuit::tally_cells(&layout, pos, alive, &mut cells.0);
        });
}

/// Rebuilds every arena's `Cells` from positions (after positions were set by hand).
pub fn tally_cells(
    layout: Res<Layout>,
    mut arenas: Query<&mut Cells>,
    agents: Query<(&GridPos, &Alive)>,
) {
    let m = layout.agents;
    let mut arena_cols = arenas.contiguous_iter_mut().expect(ONE_TABLE);
    let mut agent_cols = agents.contiguous_iter().expect(ONE_TABLE);
    let (Some(mut cells), Some((pos, alive))) = (arena_cols.next(), agent_cols.next()) else {
        return;
    };
    (
        cells.bypass_change_detection().par_iter_mut(),
        pos.par_chunks(m),
        alive.par_chunks(m),
    )
        .into_par_iter()
        .with_min_len(ARENAS_PER_TASK)
        .for_each(|(cells, pos, alive)| pursuit::tally_cells(&layout, pos, alive, &mut cells.0));
}
