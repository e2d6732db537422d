//! Episode: count steps, decide termination and truncation, and respawn finished arenas so the
//! batch never stops.

use bevy_ecs::prelude::*;
use rayon::prelude::*;

use super::{ARENAS_PER_TASK, ONE_TABLE};
use crate::components::{
    Alive, ArenaRng, ArenaStats, Cells, EpisodeClock, GridPos, ResetAll, SpawnDeck, StepBuffers,
};
use crate::layout::Layout;
use crate::substrate::{self, pursuit};

/// Advances every arena's clock and writes `terminated` (no evader left after
/// `resolve_interactions`) and `truncated` (`max_steps` reached otherwise).
pub fn check_episode_end(
    layout: Res<Layout>,
    mut buffers: ResMut<StepBuffers>,
    mut arenas: Query<(&mut EpisodeClock, &ArenaStats)>,
) {
    let StepBuffers {
        terminated,
        truncated,
        ..
    } = &mut *buffers;
    let mut cols = arenas.contiguous_iter_mut().expect(ONE_TABLE);
    let Some((mut clock, stats)) = cols.next() else {
        return;
    };
    // A few instructions per arena: a plain loop beats a parallel dispatch here.
    let arenas = clock.bypass_change_detection().iter_mut().zip(stats.iter());
    for ((clock, stats), (term, trunc)) in
        arenas.zip(terminated.iter_mut().zip(truncated.iter_mut()))
    {
        clock.t += 1;
        let ended = stats.evaders_left == 0;
        *term = u8::from(ended);
        *trunc = u8::from(!ended && clock.t >= layout.max_steps);
    }
}

/// Respawns every arena whose episode ended (or all of them when `ResetAll` is set), and
/// rewrites those arenas' observations; runs after the recorder saw the terminal state.
pub fn auto_reset(
    layout: Res<Layout>,
    mut reset_all: ResMut<ResetAll>,
    mut buffers: ResMut<StepBuffers>,
    mut arenas: Query<(
        &mut ArenaRng,
        &mut SpawnDeck,
        &mut EpisodeClock,
        &mut ArenaStats,
        &mut Cells,
    )>,
    mut agents: Query<(&mut GridPos, &mut Alive)>,
) {
    let force = std::mem::take(&mut reset_all.0);
    let (m, per_arena) = (layout.agents, layout.learners * layout.obs_len);
    let StepBuffers {
        obs,
        terminated,
        truncated,
        ..
    } = &mut *buffers;
    if force {
        terminated.fill(0);
        truncated.fill(0);
    }
    let mut arena_cols = arenas.contiguous_iter_mut().expect(ONE_TABLE);
    let mut agent_cols = agents.contiguous_iter_mut().expect(ONE_TABLE);
    let (Some((mut rng, mut deck, mut clock, mut stats, mut cells)), Some((mut pos, mut alive))) =
        (arena_cols.next(), agent_cols.next())
    else {
        return;
    };
    (
        (
            rng.bypass_change_detection().par_iter_mut(),
            deck.bypass_change_detection().par_iter_mut(),
        ),
        clock.bypass_change_detection().par_iter_mut(),
        stats.bypass_change_detection().par_iter_mut(),
        cells.bypass_change_detection().par_iter_mut(),
        pos.bypass_change_detection().par_chunks_mut(m),
        alive.bypass_change_detection().par_chunks_mut(m),
        (
            obs.par_chunks_mut(per_arena),
            terminated.par_iter(),
            truncated.par_iter(),
        ),
    )
        .into_par_iter()
        .with_min_len(ARENAS_PER_TASK)
        .for_each(
            |((rng, deck), clock, stats, cells, pos, alive, (obs, term, trunc))| {
                if !force && *term == 0 && *trunc == 0 {
                    return;
                }
                let evaders = substrate::spawn(&layout, &mut rng.spawn, &mut deck.0, pos, alive);
                *stats = ArenaStats {
                    evaders_left: evaders,
                    caught: 0,
                };
                if !force {
                    clock.episode += 1;
                }
                clock.t = 0;
                pursuit::tally_cells(&layout, pos, alive, &mut cells.0);
                pursuit::write_observations(&layout, pos, alive, &cells.0, obs);
            },
        );
}
