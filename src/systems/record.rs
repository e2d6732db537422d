//! Recording and episode logging, both opt-in resources. When a `Recorder` is present, one
//! arena's state is appended after every step (terminal state included) and after every
//! respawn; when an `EpisodeLog` is present, every finished episode's returns and counters are
//! logged from what the step kept of them before the respawn. Off the hot path otherwise.

use bevy_ecs::prelude::*;

use super::Arenas;
use crate::metrics::{EpisodeLog, EpisodeSummary};
use crate::rollout::Frame;
pub(crate) use crate::substrate::frame::frame_of as frame;

/// Frames of one arena, collected while present.
#[derive(Resource, Debug, Clone, Default)]
pub struct Recorder {
    /// The arena recorded.
    pub arena: usize,
    /// Frames so far.
    pub frames: Vec<Frame>,
}

/// Appends the state after this step's rules and observations, before any respawn.
pub fn record_step(mut arenas: Arenas, mut recorder: ResMut<Recorder>) {
    let arena = recorder.arena;
    if let Some(f) = arenas.with_arena(arena, |layout, a| frame(layout, a, true)) {
        recorder.frames.push(f);
    }
}

/// Appends the respawned state of the recorded arena when `auto_reset` respawned it.
pub fn record_reset(mut arenas: Arenas, mut recorder: ResMut<Recorder>) {
    let arena = recorder.arena;
    let f = arenas.with_arena(arena, |layout, a| {
        (*a.terminated != 0 || *a.truncated != 0).then(|| frame(layout, a, false))
    });
    if let Some(Some(f)) = f {
        recorder.frames.push(f);
    }
}

/// Logs every episode that ended this step, from what `step_arenas` kept of it before the
/// respawn (one look at the arenas' done flags, no pass over the batch).
pub fn log_episodes(mut arenas: Arenas, mut log: ResMut<EpisodeLog>) {
    let log = log.bypass_change_detection();
    arenas.for_each_episode_end(|arena, returns, counters, clock, terminated| {
        log.push(EpisodeSummary {
            arena: arena as u32,
            episode: clock.episode,
            length: clock.t,
            terminated,
            returns: returns.to_vec(),
            counters: counters.to_vec(),
        });
    });
}
