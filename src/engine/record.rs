//! Recording a batch: one arena's steps as a rollout, and the log of every arena's finished
//! episodes.

use bevy_ecs::prelude::DetectChangesMut;

use super::EnvBatch;
use crate::metrics::{EpisodeLog, EpisodeSummary};
use crate::rollout::{AgentInfo, ROLLOUT_FORMAT, ROLLOUT_VERSION, Rollout};
use crate::systems::record::{Recorder, frame};

impl EnvBatch {
    /// Starts recording `arena`; the current state is the first frame.
    pub fn start_recording(&mut self, arena: usize) {
        let first = self.with_arena(arena, |layout, a| frame(layout, a, false));
        self.world.insert_resource(Recorder {
            arena,
            frames: vec![first],
        });
    }

    /// Starts logging every finished episode of every arena (keeping at most `capacity`).
    pub fn start_episode_log(&mut self, capacity: usize) {
        self.world.insert_resource(EpisodeLog::new(capacity));
    }

    /// Finished episodes logged so far (empty when not logging).
    pub fn episode_log(&self) -> Vec<EpisodeSummary> {
        self.world
            .get_resource::<EpisodeLog>()
            .map_or_else(Vec::new, |l| l.episodes.iter().cloned().collect())
    }

    /// Stops recording and returns the rollout (with the logged episodes, if logging).
    pub fn finish_recording(&mut self) -> Option<Rollout> {
        let recorder = self.world.remove_resource::<Recorder>()?;
        let episodes = self.episode_log();
        let layout = self.layout();
        Some(Rollout {
            format: ROLLOUT_FORMAT.into(),
            version: ROLLOUT_VERSION,
            scenario: layout.scenario.clone(),
            seed: self.seed,
            arena: recorder.arena as u32,
            agents: (0..layout.agents)
                .map(|s| AgentInfo {
                    slot: s as u16,
                    role: layout.slot_role[s],
                    kind: layout.slot_kind[s],
                    control: layout.slot_control[s],
                })
                .collect(),
            frames: recorder.frames,
            counter_names: layout.counter_names.clone(),
            episodes,
        })
    }

    /// Takes the finished episodes logged so far (see [`EnvBatch::start_episode_log`]).
    pub fn take_episodes(&mut self) -> Vec<EpisodeSummary> {
        self.world
            .get_resource_mut::<EpisodeLog>()
            .map_or_else(Vec::new, |mut l| {
                let l = l.bypass_change_detection();
                l.episodes.drain(..).collect()
            })
    }
}
