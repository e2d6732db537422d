//! The step's phases as systems, in schedule order. Each hands every arena to the substrate's
//! function for its phase (`crate::substrate`); the doc says what it reads and writes.

use bevy_ecs::prelude::*;

use super::Arenas;
use super::record::Recorder;
use crate::components::{HiddenStates, ResetAll, StepBuffers};
use crate::layout::Layout;
use crate::substrate;

/// The step's per-arena phases, fused: each rayon task runs them one after another on its chunk
/// of consecutive arenas while their data sits in cache, one dispatch for the whole batch
/// instead of one per phase. In order, per arena:
///
/// 1. act + slip (`substrate::draw_chance`): the action buffer and the slip/walk streams give
///    `AppliedAction`; chance is drawn first, every rule below is deterministic;
/// 2. move (`apply_moves`): positions, facings, the cell layer and (gift) pickups;
/// 3. substrate rules (`resolve_interactions`) on the post-move state: `StepReward`, alive
///    flags, carried items, cooldowns, cells, counters and `RulesEnded`;
/// 4. rewards (`assign_rewards`): per-step terms and sharing, `EpisodeReturn`, the reward
///    buffer;
/// 5. episode end: the clock advances; `terminated` when the rules ended the episode,
///    `truncated` at `max_steps` otherwise;
/// 6. observe (`write_observations`): every learner's observation, terminal state included;
/// 7. keep the end: an arena whose episode ended keeps its observation in `final_obs` (what a
///    truncated episode bootstraps from) and its returns, counters and clock in
///    `EpisodeEnds` (what the episode log reads);
/// 8. auto-reset: it respawns and observes again, unless a recorder must see the terminal
///    state first or every arena is to be respawned (then [`auto_reset`] does it after).
///
/// Each phase reads and writes only its own arena, so fusing changes no result.
///
/// [`step_arenas_filled`] is the same with the observations filled.
pub fn step_arenas(arenas: Arenas, recorder: Option<Res<Recorder>>, reset_all: Res<ResetAll>) {
    step_arenas_with::<false>(arenas, recorder, reset_all);
}

/// [`step_arenas`] with step 6 filling each arena's observations with one byte instead of
/// computing them: a benchmark's ceiling run (`FilledObservations`), in a step schedule of
/// its own so that the step trains with has no branch for it.
pub(crate) fn step_arenas_filled(
    arenas: Arenas,
    recorder: Option<Res<Recorder>>,
    reset_all: Res<ResetAll>,
) {
    step_arenas_with::<true>(arenas, recorder, reset_all);
}

fn step_arenas_with<const FILLED: bool>(
    mut arenas: Arenas,
    recorder: Option<Res<Recorder>>,
    reset_all: Res<ResetAll>,
) {
    let respawn = recorder.is_none() && !reset_all.0;
    arenas.for_each_with_end(|layout, a, end| {
        substrate::draw_chance(layout, a);
        substrate::apply_moves(layout, a);
        *a.ended = false;
        substrate::resolve_interactions(layout, a);
        substrate::assign_rewards(layout, a);
        a.clock.t += 1;
        let ended = *a.ended;
        *a.terminated = u8::from(ended);
        *a.truncated = u8::from(!ended && a.clock.t >= layout.max_steps);
        if FILLED {
            a.obs.fill(a.clock.t as u8);
        } else {
            substrate::write_observations(layout, a);
        }
        if *a.terminated != 0 || *a.truncated != 0 {
            end.keep(a);
            if respawn {
                respawn_arena(layout, a);
            }
        }
    });
}

/// Whether the step needs the separate [`auto_reset`] pass: a recorder reads the terminal
/// state between the step and the respawn, or every arena is to be respawned.
pub fn needs_reset_pass(recorder: Option<Res<Recorder>>, reset_all: Res<ResetAll>) -> bool {
    recorder.is_some() || reset_all.0
}

/// Respawns one arena whose episode ended and writes its first observations.
fn respawn_arena(layout: &Layout, a: &mut crate::substrate::ArenaMut) {
    substrate::spawn(layout, a);
    a.clock.episode += 1;
    a.clock.t = 0;
    substrate::write_observations(layout, a);
}

/// Recurrent state: zeroes the hidden state of every learner whose arena starts a new episode
/// (every arena when `ResetAll` is set), before `auto_reset` clears the flags it reads.
pub fn reset_hidden_states(
    buffers: Res<StepBuffers>,
    reset_all: Res<ResetAll>,
    mut hidden: ResMut<HiddenStates>,
) {
    let hidden = hidden.bypass_change_detection();
    let per = hidden.state.len() / buffers.terminated.len().max(1);
    if per == 0 {
        return;
    }
    if reset_all.0 {
        hidden.state.fill(0.0);
        return;
    }
    let ended = buffers.terminated.iter().zip(&buffers.truncated);
    for (h, (&term, &trunc)) in hidden.state.chunks_exact_mut(per).zip(ended) {
        if term != 0 || trunc != 0 {
            h.fill(0.0);
        }
    }
}

/// Auto-reset: respawns every arena whose episode ended (all of them when `ResetAll` is set)
/// and rewrites its observations. In the step it runs only when [`step_arenas`] did not
/// respawn (a recorder or episode log saw the terminal states first); it always runs in the
/// reset schedule.
pub fn auto_reset(mut arenas: Arenas, mut reset_all: ResMut<ResetAll>) {
    let force = std::mem::take(&mut reset_all.0);
    arenas.for_each(|layout, a| {
        if force {
            *a.terminated = 0;
            *a.truncated = 0;
            substrate::spawn(layout, a);
            a.clock.t = 0;
            substrate::write_observations(layout, a);
        } else if *a.terminated != 0 || *a.truncated != 0 {
            respawn_arena(layout, a);
        }
    });
}
