//! The step's phases as systems, in schedule order. Each hands every arena to the substrate's
//! function for its phase (`crate::substrate`); the doc says what it reads and writes.

use bevy_ecs::prelude::*;

use super::Arenas;
use crate::components::{HiddenStates, ResetAll, StepBuffers};
use crate::layout::Layout;
use crate::substrate;

/// Act + slip: reads the action buffer and the slip/walk streams, writes `AppliedAction`.
pub fn draw_chance(mut arenas: Arenas) {
    arenas.for_each(substrate::draw_chance);
}

/// Move: reads `AppliedAction` (from `draw_chance`), writes positions, facings, the cell layer
/// and (gift) pickups.
pub fn apply_moves(mut arenas: Arenas) {
    arenas.for_each(substrate::apply_moves);
}

/// Substrate rules on the post-move state (from `apply_moves`): writes `StepReward`, alive
/// flags, carried items, cooldowns, cells, counters and `RulesEnded`.
pub fn resolve_interactions(mut arenas: Arenas) {
    arenas.for_each(|layout, a| {
        *a.ended = false;
        substrate::resolve_interactions(layout, a);
    });
}

/// Rewards: reads the interaction rewards, adds per-step terms and sharing, accumulates
/// `EpisodeReturn` and publishes the learners' rewards to the reward buffer.
pub fn assign_rewards(mut arenas: Arenas) {
    arenas.for_each(substrate::assign_rewards);
}

/// Episode end: advances the clock; `terminated` when the rules ended the episode (from
/// `resolve_interactions`), `truncated` at `max_steps` otherwise.
pub fn check_episode_end(mut arenas: Arenas) {
    arenas.for_each(|layout, a| {
        a.clock.t += 1;
        let ended = *a.ended;
        *a.terminated = u8::from(ended);
        *a.truncated = u8::from(!ended && a.clock.t >= layout.max_steps);
    });
}

/// Observe: every learner's observation from the state after this step's rules.
pub fn write_observations(mut arenas: Arenas) {
    arenas.for_each(substrate::write_observations);
}

/// Final observations: copies the observation of every arena whose episode ended this step
/// (from `write_observations`) into `final_obs` before `auto_reset` overwrites it. Serial: a
/// few arenas end per step, and a copy is cheaper than a parallel dispatch.
pub fn keep_final_observations(layout: Res<Layout>, mut buffers: ResMut<StepBuffers>) {
    let StepBuffers {
        obs,
        terminated,
        truncated,
        final_obs,
        ..
    } = buffers.bypass_change_detection();
    let per = layout.learners * layout.obs_len;
    for (k, (&term, &trunc)) in terminated.iter().zip(truncated.iter()).enumerate() {
        if term != 0 || trunc != 0 {
            final_obs[k * per..(k + 1) * per].copy_from_slice(&obs[k * per..(k + 1) * per]);
        }
    }
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
/// and rewrites its observations; runs after the recorder saw the terminal state.
pub fn auto_reset(mut arenas: Arenas, mut reset_all: ResMut<ResetAll>) {
    let force = std::mem::take(&mut reset_all.0);
    arenas.for_each(|layout, a| {
        if force {
            *a.terminated = 0;
            *a.truncated = 0;
        } else if *a.terminated == 0 && *a.truncated == 0 {
            return;
        }
        substrate::spawn(layout, a);
        if !force {
            a.clock.episode += 1;
        }
        a.clock.t = 0;
        substrate::write_observations(layout, a);
    });
}
