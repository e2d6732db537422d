//! Building a batch: the memory preflight, the arena and agent entities spawned in the dense
//! order the systems rely on, the step buffers, and the first reset.

use bevy_ecs::prelude::*;

use super::EnvBatch;
use crate::components::{
    AgentId, Alive, AppliedAction, ArenaId, BatchSize, Carry, Cells, Cooldown, Counters,
    EpisodeClock, EpisodeEnds, EpisodeReturn, Facing, GridPos, OpponentModel, ResetAll, RulesEnded,
    SpawnDeck, StepBuffers, StepReward,
};
use crate::error::EngineError;
use crate::layout::Layout;
use crate::scenario::LoadedScenario;
use crate::schedule;
use crate::systems::ONE_TABLE;

impl EnvBatch {
    /// Spawns `arenas` arenas seeded from `seed` and resets them all.
    pub fn new(loaded: &LoadedScenario, arenas: usize, seed: u64) -> Result<EnvBatch, EngineError> {
        EnvBatch::new_from(loaded, arenas, seed, 0)
    }

    /// [`EnvBatch::new`] for arenas `first..first + arenas` of a larger batch: arena `a` draws
    /// from the streams of arena `first + a` (a rank of a data-parallel job steps its slice of
    /// the job's arenas).
    pub fn new_from(
        loaded: &LoadedScenario,
        arenas: usize,
        seed: u64,
        first: u64,
    ) -> Result<EnvBatch, EngineError> {
        if arenas == 0 {
            return Err(EngineError::NoArenas);
        }
        if arenas > u32::MAX as usize {
            return Err(EngineError::OverBudget {
                what: "arena count",
                arenas,
                per_arena: 0,
                needed: arenas as u64,
                budget: u32::MAX as u64,
            });
        }
        let layout = Layout::derive(loaded);
        preflight(&layout, arenas)?;
        let (m, n) = (layout.agents, layout.learners);
        let mut world = World::new();

        // Arenas first, then agents arena-major: each kind sits in one table in index order.
        world.spawn_batch((0..arenas).map(|a| {
            (
                ArenaId(a as u32),
                crate::rng::arena_streams(seed, first + a as u64),
                SpawnDeck(layout.deck_template.clone()),
                EpisodeClock::default(),
                Counters(vec![0; layout.counter_names.len()]),
                RulesEnded(false),
                Cells(layout.cells_template.clone()),
            )
        }));
        let slot_role = layout.slot_role.clone();
        world.spawn_batch((0..arenas * m).map(move |i| {
            (
                AgentId {
                    arena: (i / m) as u32,
                    slot: (i % m) as u16,
                    role: slot_role[i % m],
                },
                GridPos::default(),
                Alive(false),
                AppliedAction(0),
                StepReward(0.0),
                EpisodeReturn(0.0),
                Facing(0),
                Carry::default(),
                Cooldown(0),
                OpponentModel {
                    net: ((i % m) < n).then_some((i % m) as u32),
                    predicted: Vec::new(),
                },
            )
        }));
        world.insert_resource(StepBuffers {
            obs: vec![0; arenas * n * layout.obs_len],
            final_obs: vec![0; arenas * n * layout.obs_len],
            actions: vec![layout.idle_action; arenas * n],
            rewards: vec![0.0; arenas * n],
            terminated: vec![0; arenas],
            truncated: vec![0; arenas],
            state_width: 0,
            state: vec![0; arenas],
            final_state: vec![0; arenas],
            action_mask: vec![1; arenas * layout.mask_len().max(1)],
            final_action_mask: vec![1; arenas * layout.mask_len().max(1)],
        });
        world.insert_resource(EpisodeEnds {
            returns: vec![0.0; arenas * layout.agents],
            counters: vec![0; arenas * layout.counter_names.len().max(1)],
            clock: vec![EpisodeClock::default(); arenas],
        });
        world.insert_resource(ResetAll(true));
        world.insert_resource(BatchSize(arenas));
        world.insert_resource(layout);

        let mut batch = EnvBatch {
            world,
            step: schedule::step_schedule(),
            reset: schedule::reset_schedule(),
            arenas,
            seed,
            first,
            fixed: None,
        };
        batch.check_dense_order();
        batch.reset.run(&mut batch.world);
        Ok(batch)
    }

    /// Draws every arena's randomness from the streams of `seed` from now on and respawns every
    /// arena: the batch then steps exactly as [`EnvBatch::new`] with `seed` would (episode
    /// counters the step buffers' memory is kept: views of them stay valid).
    pub fn reseed(&mut self, seed: u64) {
        let first = self.first;
        let layout = self.layout();
        let (deck, cells) = (layout.deck_template.clone(), layout.cells_template.clone());
        let mut q = self.world.query::<(
            &ArenaId,
            &mut crate::components::ArenaRng,
            &mut SpawnDeck,
            &mut EpisodeClock,
            &mut RulesEnded,
            &mut Cells,
        )>();
        for (id, mut rng, mut d, mut clock, mut ended, mut c) in q.iter_mut(&mut self.world) {
            *rng = crate::rng::arena_streams(seed, first + id.0 as u64);
            d.0.clone_from(&deck);
            *clock = EpisodeClock::default();
            ended.0 = false;
            c.0.clone_from(&cells);
        }
        let mut q = self.world.query::<&mut AppliedAction>();
        for mut a in q.iter_mut(&mut self.world) {
            a.0 = 0;
        }
        let idle = self.layout().idle_action;
        let mut buffers = self.world.resource_mut::<StepBuffers>();
        buffers.actions.fill(idle);
        buffers.rewards.fill(0.0);
        buffers.terminated.fill(0);
        buffers.truncated.fill(0);
        self.seed = seed;
        self.reset();
    }

    /// The systems rely on every agent column being one slice in (arena, slot) order.
    fn check_dense_order(&mut self) {
        let m = self.layout().agents;
        let mut q = self.world.query::<&AgentId>();
        let chunks: Vec<&[AgentId]> = q.contiguous_iter(&self.world).expect(ONE_TABLE).collect();
        assert_eq!(chunks.len(), 1, "agents must share one table");
        assert!(
            chunks[0]
                .iter()
                .enumerate()
                .all(|(i, id)| id.arena as usize == i / m && id.slot as usize == i % m),
            "agents must be stored arena-major"
        );
        let mut q = self.world.query::<&ArenaId>();
        let chunks: Vec<&[ArenaId]> = q.contiguous_iter(&self.world).expect(ONE_TABLE).collect();
        assert_eq!(chunks.len(), 1, "arenas must share one table");
        assert!(
            chunks[0]
                .iter()
                .enumerate()
                .all(|(i, id)| id.0 as usize == i)
        );
    }
}

/// Refuses batches whose memory would exceed half of the available RAM, before allocating.
fn preflight(layout: &Layout, arenas: usize) -> Result<(), EngineError> {
    let per_arena = layout.bytes_per_arena();
    let needed = per_arena as u64 * arenas as u64;
    let budget = crate::sys::available_memory_bytes().map_or(u64::MAX, |b| b / 2);
    if needed > budget {
        return Err(EngineError::OverBudget {
            what: "env batch",
            arenas,
            per_arena,
            needed,
            budget,
        });
    }
    Ok(())
}
