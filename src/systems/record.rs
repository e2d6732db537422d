//! Recording: when a `Recorder` resource is present, one arena's state is appended after every
//! step (terminal state included) and after every respawn. Off the hot path otherwise.

use bevy_ecs::prelude::*;

use super::ONE_TABLE;
use crate::components::{Alive, AppliedAction, EpisodeClock, GridPos, StepBuffers, StepReward};
use crate::layout::Layout;
use crate::rollout::Frame;

/// Frames of one arena, collected while present.
#[derive(Resource, Debug, Clone, Default)]
pub struct Recorder {
    /// The arena recorded.
    pub arena: usize,
    /// Frames so far.
    pub frames: Vec<Frame>,
}

/// Builds a frame of `arena` from the columns.
pub(crate) fn frame(
    layout: &Layout,
    arena: usize,
    clock: EpisodeClock,
    pos: &[GridPos],
    alive: &[Alive],
    step: Option<(&[AppliedAction], &[StepReward], bool, bool)>,
) -> Frame {
    let agents = arena * layout.agents..(arena + 1) * layout.agents;
    let (actions, rewards, terminated, truncated) = match step {
        Some((act, rew, term, trunc)) => (
            act[agents.clone()].iter().map(|a| a.0).collect(),
            rew[agents.clone()].iter().map(|r| r.0).collect(),
            term,
            trunc,
        ),
        None => (Vec::new(), Vec::new(), false, false),
    };
    Frame {
        t: clock.t,
        episode: clock.episode,
        positions: pos[agents.clone()].iter().map(|p| (p.x, p.y)).collect(),
        alive: alive[agents].iter().map(|a| a.0).collect(),
        actions,
        rewards,
        terminated,
        truncated,
    }
}

/// Appends the state after this step's rules and observations, before any respawn.
pub fn record_step(
    layout: Res<Layout>,
    buffers: Res<StepBuffers>,
    mut recorder: ResMut<Recorder>,
    arenas: Query<&EpisodeClock>,
    agents: Query<(&GridPos, &Alive, &AppliedAction, &StepReward)>,
) {
    let a = recorder.arena;
    let (Some(clock), Some((pos, alive, act, rew))) = (
        arenas.contiguous_iter().expect(ONE_TABLE).next(),
        agents.contiguous_iter().expect(ONE_TABLE).next(),
    ) else {
        return;
    };
    let step = (
        act,
        rew,
        buffers.terminated[a] != 0,
        buffers.truncated[a] != 0,
    );
    let f = frame(&layout, a, clock[a], pos, alive, Some(step));
    recorder.frames.push(f);
}

/// Appends the respawned state of the recorded arena when `auto_reset` respawned it.
pub fn record_reset(
    layout: Res<Layout>,
    buffers: Res<StepBuffers>,
    mut recorder: ResMut<Recorder>,
    arenas: Query<&EpisodeClock>,
    agents: Query<(&GridPos, &Alive)>,
) {
    let a = recorder.arena;
    if buffers.terminated[a] == 0 && buffers.truncated[a] == 0 {
        return;
    }
    let (Some(clock), Some((pos, alive))) = (
        arenas.contiguous_iter().expect(ONE_TABLE).next(),
        agents.contiguous_iter().expect(ONE_TABLE).next(),
    ) else {
        return;
    };
    let f = frame(&layout, a, clock[a], pos, alive, None);
    recorder.frames.push(f);
}
