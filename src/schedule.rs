//! The step, on one screen. Every system runs once per step over the whole batch of arenas
//! (in parallel inside the system), in this order; the first runs every per-arena phase on
//! each chunk of arenas in turn (`systems::step::step_arenas` lists them):

use bevy_ecs::prelude::*;
use bevy_ecs::schedule::SingleThreadedExecutor;
use bevy_ecs::schedule::{LogLevel, ScheduleBuildSettings, ScheduleLabel};

use crate::components::HiddenStates;
use crate::metrics::EpisodeLog;
use crate::systems::record::{Recorder, log_episodes, record_reset, record_step};
use crate::systems::render::{RenderWatch, extract_render};
use crate::systems::step::{
    auto_reset, needs_reset_pass, reset_hidden_states, step_arenas, step_arenas_filled,
};

/// Label of the per-step schedule.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct Step;

/// Label of the schedule that respawns every arena.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reset;

/// The step schedule with `$arenas` as its first system.
macro_rules! steps {
    ($arenas:expr) => {{
        let mut schedule = new_schedule(Step);
        schedule.add_systems(
            (
                // Every arena's phases, fused per chunk of arenas (one pass, one dispatch):
                // act + slip (chance first; every rule below is deterministic), move, substrate
                // rules (catches, gifts, reactions, coins, payoffs), rewards, episode end, observe,
                // final observations, and the respawn of finished arenas when nothing below must
                // see their terminal state (see `step_arenas`).
                $arenas,
                // record: the terminal state must be seen before it is respawned.
                record_step.run_if(resource_exists::<Recorder>),
                // log: every finished episode, from what step_arenas kept of it.
                log_episodes.run_if(resource_exists::<EpisodeLog>),
                // recurrent state: zero the hidden state of the learners whose episode starts.
                reset_hidden_states.run_if(resource_exists::<HiddenStates>),
                // auto-reset, when step_arenas left it for after the recorder.
                auto_reset.run_if(needs_reset_pass),
                record_reset.run_if(resource_exists::<Recorder>),
                // render: the watched arena's instances for the viewer (only while watched).
                extract_render.run_if(resource_exists::<RenderWatch>),
            )
                .chain(),
        );
        schedule
    }};
}

/// Builds the step schedule.
pub fn step_schedule() -> Schedule {
    steps!(step_arenas)
}

/// The step schedule of a benchmark's ceiling run (`bench env --observations filled`): the
/// same, with every arena's observations filled with one byte instead of computed.
pub(crate) fn filled_step_schedule() -> Schedule {
    steps!(step_arenas_filled)
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
