//! Interactions and rewards: the substrate's rules on the post-move state (tags, catches,
//! removal), then per-step reward terms, sharing, and publication to the reward buffer.

use bevy_ecs::prelude::*;
use rayon::prelude::*;

use super::{ARENAS_PER_TASK, ONE_TABLE};
use crate::components::{Alive, ArenaStats, Cells, GridPos, StepBuffers, StepReward};
use crate::layout::Layout;
use crate::substrate::pursuit;

/// Resolves tags and catches on the cell layer written by `tally_cells`.
pub fn resolve_interactions(
    layout: Res<Layout>,
    mut arenas: Query<(&mut Cells, &mut ArenaStats)>,
    mut agents: Query<(&GridPos, &mut Alive, &mut StepReward)>,
) {
    let m = layout.agents;
    let mut arena_cols = arenas.contiguous_iter_mut().expect(ONE_TABLE);
    let mut agent_cols = agents.contiguous_iter_mut().expect(ONE_TABLE);
    let (Some((mut cells, mut stats)), Some((pos, mut alive, mut reward))) =
        (arena_cols.next(), agent_cols.next())
    else {
        return;
    };
    (
        cells.bypass_change_detection().par_iter_mut(),
        stats.bypass_change_detection().par_iter_mut(),
        pos.par_chunks(m),
        alive.bypass_change_detection().par_chunks_mut(m),
        reward.bypass_change_detection().par_chunks_mut(m),
    )
        .into_par_iter()
        .with_min_len(ARENAS_PER_TASK)
        .for_each(|(cells, stats, pos, alive, reward)| {
            let caught = pursuit::resolve_interactions(&layout, pos, alive, &mut cells.0, reward);
            stats.caught += caught;
            stats.evaders_left -= caught.min(stats.evaders_left);
        });
}

/// Adds per-step reward terms to the interaction rewards of `resolve_interactions`, shares them,
/// and copies the learners' rewards into `StepBuffers::rewards`.
pub fn assign_rewards(
    layout: Res<Layout>,
    mut buffers: ResMut<StepBuffers>,
    mut agents: Query<(&Alive, &mut StepReward)>,
) {
    let (m, n) = (layout.agents, layout.learners);
    let mut cols = agents.contiguous_iter_mut().expect(ONE_TABLE);
    let Some((alive, mut reward)) = cols.next() else {
        return;
    };
    (
        alive.par_chunks(m),
        reward.bypass_change_detection().par_chunks_mut(m),
        buffers.rewards.par_chunks_mut(n),
    )
        .into_par_iter()
        .with_min_len(ARENAS_PER_TASK)
        .for_each(|(alive, reward, out)| {
            pursuit::assign_rewards(&layout, alive, reward);
            for (o, r) in out.iter_mut().zip(reward.iter()) {
                *o = r.0;
            }
        });
}
