//! The step, on one screen. Every system runs once per step over the whole batch of arenas
//! (in parallel inside the system), in this order:

use bevy_ecs::prelude::*;
use bevy_ecs::schedule::SingleThreadedExecutor;
use bevy_ecs::schedule::{LogLevel, ScheduleBuildSettings, ScheduleLabel};

use crate::components::HiddenStates;
use crate::metrics::EpisodeLog;
use crate::systems::record::{Recorder, log_episodes, record_reset, record_step};
use crate::systems::render::{RenderWatch, extract_render};
use crate::systems::step::{
    apply_moves, assign_rewards, auto_reset, check_episode_end, draw_chance,
    keep_final_observations, reset_hidden_states, resolve_interactions, write_observations,
};

/// Label of the per-step schedule.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct Step;

/// Label of the schedule that respawns every arena.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reset;

/// Builds the step schedule.
pub fn step_schedule() -> Schedule {
    let mut schedule = new_schedule(Step);
    schedule.add_systems(
        (
            // act + slip: chance outcomes are drawn first; every rule below is deterministic.
            draw_chance,
            // move: positions and facings, then the cell layer the rules and observations read.
            apply_moves,
            // substrate rules: catches, gifts, reactions, coins, payoffs.
            resolve_interactions,
            // rewards: per-step terms, sharing, returns, published to the reward buffer.
            assign_rewards,
            // episode end: terminated / truncated flags.
            check_episode_end,
            // observe: every learner's observation, terminal state included.
            write_observations,
            // record and log: the terminal state must be seen before it is respawned.
            record_step.run_if(resource_exists::<Recorder>),
            log_episodes.run_if(resource_exists::<EpisodeLog>),
            // final observations: what truncated episodes bootstrap from, before the reset.
            keep_final_observations,
            // recurrent state: zero the hidden state of the learners whose episode starts.
            reset_hidden_states.run_if(resource_exists::<HiddenStates>),
            // auto-reset: respawn finished arenas and rewrite their observations.
            auto_reset,
            record_reset.run_if(resource_exists::<Recorder>),
            // render: the watched arena's instances for the viewer (only while watched).
            extract_render.run_if(resource_exists::<RenderWatch>),
        )
            .chain(),
    );
    schedule
}

/// Builds the schedule that respawns every arena (with `ResetAll` set).
pub fn reset_schedule() -> Schedule {
    let mut schedule = new_schedule(Reset);
    schedule.add_systems(
        (
            reset_hidden_states.run_if(resource_exists::<HiddenStates>),
            auto_reset,
            extract_render.run_if(resource_exists::<RenderWatch>),
        )
            .chain(),
    );
    schedule
}

/// The systems parallelise internally over arenas; between systems the order is total, so the
/// single-threaded executor is the right one, and any ambiguity is a build error.
fn new_schedule(label: impl ScheduleLabel) -> Schedule {
    let mut schedule = Schedule::new(label);
    schedule.set_executor(SingleThreadedExecutor::new());
    schedule.set_build_settings(ScheduleBuildSettings {
        ambiguity_detection: LogLevel::Error,
        ..Default::default()
    });
    schedule
}
