//! `EnvBatch`: one bevy World holding B arenas of one scenario, stepped by one schedule.

use bevy_ecs::prelude::*;

use crate::components::{
    AgentId, Alive, AppliedAction, ArenaId, ArenaRng, ArenaStats, Cells, EpisodeClock, GridPos,
    ResetAll, SpawnDeck, StepBuffers, StepReward,
};
use crate::error::EngineError;
use crate::layout::Layout;
use crate::rng::{Purpose, stream};
use crate::rollout::{AgentInfo, ROLLOUT_FORMAT, ROLLOUT_VERSION, Rollout};
use crate::scenario::{LoadedScenario, RoleKind};
use crate::schedule;
use crate::systems::record::{Recorder, frame};

/// A batch of arenas of one scenario.
pub struct EnvBatch {
    world: World,
    step: Schedule,
    reset: Schedule,
    refresh: Schedule,
    arenas: usize,
    seed: u64,
}

impl EnvBatch {
    /// Spawns `arenas` arenas seeded from `seed` and resets them all.
    pub fn new(loaded: &LoadedScenario, arenas: usize, seed: u64) -> Result<EnvBatch, EngineError> {
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
                ArenaRng {
                    spawn: stream(seed, a as u64, Purpose::Spawn),
                    slip: stream(seed, a as u64, Purpose::Slip),
                    walk: stream(seed, a as u64, Purpose::Walk),
                },
                SpawnDeck(layout.deck_template.clone()),
                EpisodeClock::default(),
                ArenaStats::default(),
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
            )
        }));
        world.insert_resource(StepBuffers {
            obs: vec![0; arenas * n * layout.obs_len],
            actions: vec![(layout.actions - 1) as u8; arenas * n],
            rewards: vec![0.0; arenas * n],
            terminated: vec![0; arenas],
            truncated: vec![0; arenas],
        });
        world.insert_resource(ResetAll(true));
        world.insert_resource(layout);

        let mut batch = EnvBatch {
            world,
            step: schedule::step_schedule(),
            reset: schedule::reset_schedule(),
            refresh: schedule::refresh_schedule(),
            arenas,
            seed,
        };
        batch.check_dense_order();
        batch.reset.run(&mut batch.world);
        Ok(batch)
    }

    /// The systems rely on every agent column being one slice in (arena, slot) order.
    fn check_dense_order(&mut self) {
        let m = self.layout().agents;
        let mut q = self.world.query::<&AgentId>();
        let chunks: Vec<&[AgentId]> = q.contiguous_iter(&self.world).expect("dense").collect();
        assert_eq!(chunks.len(), 1, "agents must share one table");
        assert!(
            chunks[0]
                .iter()
                .enumerate()
                .all(|(i, id)| id.arena as usize == i / m && id.slot as usize == i % m),
            "agents must be stored arena-major"
        );
        let mut q = self.world.query::<&ArenaId>();
        let chunks: Vec<&[ArenaId]> = q.contiguous_iter(&self.world).expect("dense").collect();
        assert_eq!(chunks.len(), 1, "arenas must share one table");
        assert!(
            chunks[0]
                .iter()
                .enumerate()
                .all(|(i, id)| id.0 as usize == i)
        );
    }

    /// The shared static data of this batch.
    pub fn layout(&self) -> &Layout {
        self.world.resource::<Layout>()
    }

    /// Number of arenas B.
    pub fn arenas(&self) -> usize {
        self.arenas
    }

    /// The run seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The dense step buffers.
    pub fn buffers(&self) -> &StepBuffers {
        self.world.resource::<StepBuffers>()
    }

    /// The `[B, N]` action buffer to fill before [`EnvBatch::step`].
    pub fn actions_mut(&mut self) -> &mut [u8] {
        &mut self
            .world
            .resource_mut::<StepBuffers>()
            .into_inner()
            .actions
    }

    /// Advances every arena by one step, after checking every action is in range.
    ///
    /// Systems split their work over the current rayon pool; call this from inside
    /// `pool.install(..)` (as the CLI does): dispatching from a worker thread is much cheaper
    /// than injecting every system's work into the pool from outside.
    pub fn step(&mut self) -> Result<(), EngineError> {
        let (n, actions) = (self.layout().learners, self.layout().actions);
        let buf = &self.buffers().actions;
        if let Some(i) = buf.iter().position(|&a| a as usize >= actions) {
            return Err(EngineError::InvalidAction {
                arena: i / n,
                learner: i % n,
                action: buf[i],
                actions,
            });
        }
        self.step.run(&mut self.world);
        Ok(())
    }

    /// Respawns every arena (episode counters are kept).
    pub fn reset(&mut self) {
        self.world.resource_mut::<ResetAll>().0 = true;
        self.reset.run(&mut self.world);
    }

    /// Positions and alive flags of one arena's agents, by slot.
    pub fn agents(&mut self, arena: usize) -> Vec<(GridPos, bool)> {
        let m = self.layout().agents;
        let mut q = self.world.query::<(&GridPos, &Alive)>();
        let (pos, alive) = q
            .contiguous_iter(&self.world)
            .expect("dense")
            .next()
            .expect("agents");
        (arena * m..(arena + 1) * m)
            .map(|i| (pos[i], alive[i].0))
            .collect()
    }

    /// Step rewards of one arena's agents by slot (after sharing), from the last step.
    pub fn agent_rewards(&mut self, arena: usize) -> Vec<f32> {
        let m = self.layout().agents;
        let mut q = self.world.query::<&StepReward>();
        let r = q
            .contiguous_iter(&self.world)
            .expect("dense")
            .next()
            .expect("agents");
        r[arena * m..(arena + 1) * m].iter().map(|r| r.0).collect()
    }

    /// Actions applied in the last step (after slip) for one arena's agents, by slot.
    pub fn applied_actions(&mut self, arena: usize) -> Vec<u8> {
        let m = self.layout().agents;
        let mut q = self.world.query::<&AppliedAction>();
        let a = q
            .contiguous_iter(&self.world)
            .expect("dense")
            .next()
            .expect("agents");
        a[arena * m..(arena + 1) * m].iter().map(|a| a.0).collect()
    }

    /// The episode clock of one arena.
    pub fn clock(&mut self, arena: usize) -> EpisodeClock {
        let mut q = self.world.query::<&EpisodeClock>();
        q.contiguous_iter(&self.world)
            .expect("dense")
            .next()
            .expect("arenas")[arena]
    }

    /// The substrate counters of one arena.
    pub fn stats(&mut self, arena: usize) -> ArenaStats {
        let mut q = self.world.query::<&ArenaStats>();
        q.contiguous_iter(&self.world)
            .expect("dense")
            .next()
            .expect("arenas")[arena]
    }

    /// Places one arena's agents by hand (tests, exact analysis), then recomputes its cells,
    /// counters and observations. Every live agent must stand on an open cell.
    pub fn set_agents(
        &mut self,
        arena: usize,
        agents: &[(GridPos, bool)],
    ) -> Result<(), EngineError> {
        let layout = self.layout().clone();
        let m = layout.agents;
        assert_eq!(agents.len(), m, "one entry per agent slot");
        for (slot, (p, alive)) in agents.iter().enumerate() {
            if *alive && !layout.is_open(p.x as i32, p.y as i32) {
                return Err(EngineError::BadPosition {
                    slot,
                    x: p.x as i32,
                    y: p.y as i32,
                });
            }
        }
        let mut q = self.world.query::<(&mut GridPos, &mut Alive)>();
        let (mut pos, mut alive) = q
            .contiguous_iter_mut(&mut self.world)
            .expect("dense")
            .next()
            .expect("agents");
        let (pos, alive) = (
            pos.bypass_change_detection(),
            alive.bypass_change_detection(),
        );
        for (slot, (p, a)) in agents.iter().enumerate() {
            pos[arena * m + slot] = *p;
            alive[arena * m + slot] = Alive(*a);
        }
        let evaders = (0..m)
            .filter(|&s| agents[s].1 && layout.slot_kind[s] == RoleKind::Evader)
            .count() as u16;
        let mut q = self.world.query::<&mut ArenaStats>();
        let mut stats = q
            .contiguous_iter_mut(&mut self.world)
            .expect("dense")
            .next()
            .expect("arenas");
        stats.bypass_change_detection()[arena].evaders_left = evaders;
        self.refresh.run(&mut self.world);
        Ok(())
    }

    /// Starts recording `arena`; the current state is the first frame.
    pub fn start_recording(&mut self, arena: usize) {
        let layout = self.layout().clone();
        let clock = self.clock(arena);
        let mut q = self.world.query::<(&GridPos, &Alive)>();
        let (pos, alive) = q
            .contiguous_iter(&self.world)
            .expect("dense")
            .next()
            .expect("agents");
        let first = frame(&layout, arena, clock, pos, alive, None);
        self.world.insert_resource(Recorder {
            arena,
            frames: vec![first],
        });
    }

    /// Stops recording and returns the rollout.
    pub fn finish_recording(&mut self) -> Option<Rollout> {
        let recorder = self.world.remove_resource::<Recorder>()?;
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
        })
    }

    /// A hash of every arena's agent state, clocks and the step buffers (determinism checks).
    pub fn state_hash(&mut self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let mut q = self.world.query::<(&GridPos, &Alive, &AppliedAction)>();
        for (pos, alive, act) in q.contiguous_iter(&self.world).expect("dense") {
            pos.hash(&mut h);
            alive.hash(&mut h);
            act.hash(&mut h);
        }
        let mut q = self.world.query::<&EpisodeClock>();
        for clocks in q.contiguous_iter(&self.world).expect("dense") {
            clocks.hash(&mut h);
        }
        let b = self.buffers();
        b.obs.hash(&mut h);
        b.rewards.iter().for_each(|r| r.to_bits().hash(&mut h));
        b.terminated.hash(&mut h);
        b.truncated.hash(&mut h);
        h.finish()
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
