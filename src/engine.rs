//! `EnvBatch`: one bevy World holding B arenas of one scenario, stepped by one schedule.

use bevy_ecs::prelude::*;

use bevy_ecs::system::RunSystemOnce;
use rand_core::Rng;

use crate::components::{
    AgentId, Alive, AppliedAction, ArenaId, ArenaRng, BatchSize, Carry, Cells, Cooldown, Counters,
    EpisodeClock, EpisodeEnds, EpisodeReturn, Facing, GridPos, HiddenStates, OpponentModel,
    ResetAll, RulesEnded, SpawnDeck, StepBuffers, StepReward,
};
use crate::error::EngineError;
use crate::layout::Layout;
use crate::metrics::{EpisodeLog, EpisodeSummary};
use crate::rollout::{AgentInfo, Frame, ROLLOUT_FORMAT, ROLLOUT_VERSION, Rollout};
use crate::scenario::LoadedScenario;
use crate::schedule;
use crate::substrate::{self, ArenaMut};
use crate::systems::record::{Recorder, frame};
use crate::systems::{Arenas, ONE_TABLE};

mod validate;

/// A batch of arenas of one scenario.
///
/// The caller writes every learner's action into [`EnvBatch::actions_mut`] (`[B, N]`,
/// arena-major), calls [`EnvBatch::step`], and reads observations, rewards and episode ends from
/// [`EnvBatch::buffers`]. Arenas whose episode ended reset themselves during the step; the
/// observation the reset overwrote stays in [`EnvBatch::final_obs`].
///
/// ```
/// use gridarena::engine::EnvBatch;
/// use gridarena::scenario::Scenario;
///
/// let loaded = Scenario::load("assets/scenarios/prisoners_dilemma.ron".as_ref())?;
/// let mut batch = EnvBatch::new(&loaded, 8, 42)?;
/// assert_eq!(batch.actions_mut().len(), 8 * 2); // 8 arenas x 2 players
/// // Both players cooperate (action 0) in every arena: 3 each, as the payoff table says.
/// batch.actions_mut().fill(0);
/// batch.step()?;
/// assert!(batch.buffers().rewards.iter().all(|&r| r == 3.0));
/// // Actions out of range are refused, not clamped.
/// batch.actions_mut()[0] = 7;
/// assert!(batch.step().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct EnvBatch {
    world: World,
    step: Schedule,
    reset: Schedule,
    arenas: usize,
    seed: u64,
}

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
        };
        batch.check_dense_order();
        batch.reset.run(&mut batch.world);
        Ok(batch)
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

    /// `[B, N, O]` each arena's observation of the step that ended its last episode, before the
    /// auto-reset (valid for the arenas whose `terminated` or `truncated` is set after a step).
    pub fn final_obs(&self) -> &[u8] {
        &self.buffers().final_obs
    }

    /// Desynchronises the arenas' episodes: each arena's clock jumps to an offset drawn
    /// uniformly in `[0, max_steps)` from its own spawn stream, so the first episodes end at
    /// spread-out steps. Training calls it once on fresh arenas (`desync_episodes`).
    pub fn desync_clocks(&mut self) {
        let max_steps = self.layout().max_steps.max(1);
        let mut q = self.world.query::<(&mut ArenaRng, &mut EpisodeClock)>();
        for (mut rng, mut clock) in q.iter_mut(&mut self.world) {
            clock.t = crate::rng::below(rng.spawn.next_u32(), max_steps);
        }
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

    /// Writes the opponent models' predictions `[B x N, N-1, A]` into the learners'
    /// [`OpponentModel`] components.
    pub fn set_opponent_predictions(&mut self, p: &[f32]) -> Result<(), EngineError> {
        let (n, b) = (self.layout().learners, self.arenas);
        let per = p.len() / (b * n).max(1);
        if n < 2 || per * b * n != p.len() || per == 0 {
            return Err(EngineError::Shape {
                what: "opponent predictions",
                expected: b * n,
                got: p.len(),
            });
        }
        let mut q = self.world.query::<(&AgentId, &mut OpponentModel)>();
        for (id, mut m) in q.iter_mut(&mut self.world) {
            if (id.slot as usize) < n {
                let r = id.arena as usize * n + id.slot as usize;
                m.predicted.clear();
                m.predicted.extend_from_slice(&p[r * per..(r + 1) * per]);
            }
        }
        Ok(())
    }

    /// The opponent models' latest predictions in `arena`, per learner slot (`[N-1, A]`
    /// each, empty when never written).
    pub fn opponent_predictions(&mut self, arena: usize) -> Vec<Vec<f32>> {
        let n = self.layout().learners;
        let mut out = vec![Vec::new(); n];
        let mut q = self.world.query::<(&AgentId, &OpponentModel)>();
        for (id, m) in q.iter(&self.world) {
            if id.arena as usize == arena && (id.slot as usize) < n {
                out[id.slot as usize] = m.predicted.clone();
            }
        }
        out
    }

    /// Respawns every arena (episode counters are kept).
    pub fn reset(&mut self) {
        self.world.resource_mut::<ResetAll>().0 = true;
        self.reset.run(&mut self.world);
    }

    /// Gives every learner a recurrent hidden state of `width` floats, zero (the dense buffer
    /// `[B, N, width]`, zeroed for an arena whenever its episode starts); 0 removes it.
    pub fn set_hidden_width(&mut self, width: usize) {
        if width == 0 {
            self.world.remove_resource::<HiddenStates>();
            return;
        }
        let n = self.layout().learners;
        self.world.insert_resource(HiddenStates {
            width,
            state: vec![0.0; self.arenas * n * width],
        });
    }

    /// `[B, N, g]` the learners' hidden states (empty without [`EnvBatch::set_hidden_width`]).
    pub fn hidden_states(&self) -> &[f32] {
        self.world
            .get_resource::<HiddenStates>()
            .map_or(&[], |h| &h.state)
    }

    /// The hidden states to read and replace by an acting pass (empty without
    /// [`EnvBatch::set_hidden_width`]).
    pub fn hidden_states_mut(&mut self) -> &mut [f32] {
        match self.world.get_resource_mut::<HiddenStates>() {
            Some(h) => &mut h.into_inner().state,
            None => &mut [],
        }
    }

    /// Runs `f` on one arena's state outside the step (inspection and hand edits).
    pub fn with_arena<T: Send + Sync + 'static>(
        &mut self,
        arena: usize,
        f: impl FnOnce(&Layout, &mut ArenaMut) -> T + Send + Sync + 'static,
    ) -> T {
        assert!(
            arena < self.arenas,
            "arena {arena} of a batch of {}",
            self.arenas
        );
        let mut f = Some(f);
        let system = move |mut arenas: Arenas| {
            let f = f.take().expect("a one-shot system runs once");
            arenas.with_arena(arena, f)
        };
        self.world
            .run_system_once(system)
            .expect("the batch's own components are present")
            .expect("the batch has agent and arena columns")
    }

    /// One arena's current state as a rollout frame (positions, alive flags, facings, carried
    /// items, substrate items, and the last step's applied actions and rewards).
    pub fn snapshot(&mut self, arena: usize) -> Frame {
        self.with_arena(arena, |layout, a| frame(layout, a, true))
    }

    /// Positions and alive flags of one arena's agents, by slot.
    pub fn agents(&mut self, arena: usize) -> Vec<(GridPos, bool)> {
        let f = self.snapshot(arena);
        f.positions
            .iter()
            .zip(&f.alive)
            .map(|(&(x, y), &a)| (GridPos { x, y }, a))
            .collect()
    }

    /// Step rewards of one arena's agents by slot, from the last step.
    pub fn agent_rewards(&mut self, arena: usize) -> Vec<f32> {
        self.snapshot(arena).rewards
    }

    /// Actions applied in the last step (after slip) for one arena's agents, by slot.
    pub fn applied_actions(&mut self, arena: usize) -> Vec<u8> {
        self.snapshot(arena).actions
    }

    /// The episode clock of one arena.
    pub fn clock(&mut self, arena: usize) -> EpisodeClock {
        self.with_arena(arena, |_, a| *a.clock)
    }

    /// The substrate counters of one arena's current episode (names in
    /// `Layout::counter_names`).
    pub fn counters(&mut self, arena: usize) -> Vec<u32> {
        self.with_arena(arena, |_, a| a.counters.to_vec())
    }

    /// Edits one arena by hand (tests, exact analysis), then recomputes its cell layer and
    /// observations. Every live agent must end on an open cell, and avatars on distinct cells.
    pub fn edit_arena(
        &mut self,
        arena: usize,
        f: impl FnOnce(&Layout, &mut ArenaMut) + Send + Sync + 'static,
    ) -> Result<(), EngineError> {
        self.with_arena(arena, move |layout, a| {
            f(layout, a);
            let mut seen = std::collections::HashSet::new();
            for slot in 0..layout.agents {
                let p = a.pos[slot];
                let clash = layout.rules.has_avatars() && a.alive[slot].0 && !seen.insert(p);
                if a.alive[slot].0 && (!layout.is_open(p.x as i32, p.y as i32) || clash) {
                    return Err(EngineError::BadPosition {
                        slot,
                        x: p.x as i32,
                        y: p.y as i32,
                    });
                }
            }
            substrate::rebuild_cells(layout, a);
            substrate::write_observations(layout, a);
            Ok(())
        })
    }

    /// Turns the render system on for `arena` (with `selected` marked): from now on every step
    /// and reset extracts its instances into the scene [`EnvBatch::render_scene`] returns.
    pub fn watch_render(&mut self, arena: usize, selected: Option<usize>) {
        use crate::systems::render::{RenderScene, RenderWatch, extract_render};
        self.world.insert_resource(RenderWatch {
            arena: arena.min(self.arenas - 1),
            selected,
        });
        if !self.world.contains_resource::<RenderScene>() {
            self.world.insert_resource(RenderScene::default());
        }
        // Extract the current state at once.
        let _ = self.world.run_system_once(extract_render);
    }

    /// Turns the render system off.
    pub fn stop_render(&mut self) {
        self.world
            .remove_resource::<crate::systems::render::RenderWatch>();
    }

    /// The watched arena's scene after the last step (None unless watched).
    pub fn render_scene(&self) -> Option<&crate::render::Scene> {
        self.world
            .get_resource::<crate::systems::render::RenderScene>()
            .map(|s| &s.0)
    }

    /// Places one arena's agents by hand; see [`EnvBatch::edit_arena`].
    pub fn set_agents(
        &mut self,
        arena: usize,
        agents: &[(GridPos, bool)],
    ) -> Result<(), EngineError> {
        let m = self.layout().agents;
        assert_eq!(agents.len(), m, "one entry per agent slot");
        let agents = agents.to_vec();
        self.edit_arena(arena, move |_, a| {
            for (slot, (p, alive)) in agents.iter().enumerate() {
                a.pos[slot] = *p;
                a.alive[slot] = Alive(*alive);
            }
        })
    }

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

    /// A hash of every arena's agent state, clocks and the step buffers (determinism checks).
    pub fn state_hash(&mut self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let mut q = self.world.query::<(&GridPos, &Alive, &AppliedAction)>();
        for (pos, alive, act) in q.contiguous_iter(&self.world).expect(ONE_TABLE) {
            pos.hash(&mut h);
            alive.hash(&mut h);
            act.hash(&mut h);
        }
        let mut q = self.world.query::<&EpisodeClock>();
        for clocks in q.contiguous_iter(&self.world).expect(ONE_TABLE) {
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

/// Everything that evolves in a batch: every column and the step buffers. Saved in checkpoints
/// so a resumed run continues exactly where it stopped.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BatchState {
    /// Arenas.
    pub arenas: usize,
    /// Agents per arena.
    pub agents: usize,
    pos: Vec<(i16, i16)>,
    facing: Vec<u8>,
    alive: Vec<bool>,
    applied: Vec<u8>,
    reward: Vec<f32>,
    ret: Vec<f32>,
    carry: Vec<[u8; 3]>,
    cooldown: Vec<u8>,
    rng: Vec<crate::components::ArenaRng>,
    cells: Vec<Vec<u8>>,
    counters: Vec<Vec<u32>>,
    clock: Vec<(u32, u32)>,
    deck: Vec<Vec<u16>>,
    ended: Vec<bool>,
    obs: Vec<u8>,
    actions: Vec<u8>,
    rewards: Vec<f32>,
    terminated: Vec<u8>,
    truncated: Vec<u8>,
}

impl EnvBatch {
    /// The batch's whole evolving state.
    pub fn save_state(&mut self) -> BatchState {
        use crate::components::*;
        let mut q = self.world.query::<(
            &GridPos,
            &Facing,
            &Alive,
            &AppliedAction,
            &StepReward,
            &EpisodeReturn,
            &Carry,
            &Cooldown,
        )>();
        let mut qa = self.world.query::<(
            &ArenaRng,
            &Cells,
            &Counters,
            &EpisodeClock,
            &SpawnDeck,
            &RulesEnded,
        )>();
        let (pos, facing, alive, applied, reward, ret, carry, cooldown) = q
            .contiguous_iter(&self.world)
            .expect(ONE_TABLE)
            .next()
            .expect(ONE_TABLE);
        let (rng, cells, counters, clock, deck, ended) = qa
            .contiguous_iter(&self.world)
            .expect(ONE_TABLE)
            .next()
            .expect(ONE_TABLE);
        let b = self.world.resource::<StepBuffers>();
        BatchState {
            arenas: self.arenas,
            agents: self.layout().agents,
            pos: pos.iter().map(|p| (p.x, p.y)).collect(),
            facing: facing.iter().map(|f| f.0).collect(),
            alive: alive.iter().map(|a| a.0).collect(),
            applied: applied.iter().map(|a| a.0).collect(),
            reward: reward.iter().map(|r| r.0).collect(),
            ret: ret.iter().map(|r| r.0).collect(),
            carry: carry.iter().map(|c| c.0).collect(),
            cooldown: cooldown.iter().map(|c| c.0).collect(),
            rng: rng.to_vec(),
            cells: cells.iter().map(|c| c.0.clone()).collect(),
            counters: counters.iter().map(|c| c.0.clone()).collect(),
            clock: clock.iter().map(|c| (c.t, c.episode)).collect(),
            deck: deck.iter().map(|d| d.0.clone()).collect(),
            ended: ended.iter().map(|e| e.0).collect(),
            obs: b.obs.clone(),
            actions: b.actions.clone(),
            rewards: b.rewards.clone(),
            terminated: b.terminated.clone(),
            truncated: b.truncated.clone(),
        }
    }

    /// Restores a state saved from a batch of the same scenario and size, after checking every
    /// vector's length and range against this batch (a bad state changes nothing).
    pub fn load_state(&mut self, s: &BatchState) -> Result<(), EngineError> {
        use crate::components::*;
        let m = self.layout().agents;
        if s.arenas != self.arenas || s.agents != m {
            return Err(EngineError::StateMismatch(format!(
                "saved state has {} arenas x {} agents, this batch {} x {}",
                s.arenas, s.agents, self.arenas, m
            )));
        }
        let fresh = self.save_state();
        s.validate(&fresh, self.layout())?;
        let mut q = self.world.query::<(
            &mut GridPos,
            &mut Facing,
            &mut Alive,
            &mut AppliedAction,
            &mut StepReward,
            &mut EpisodeReturn,
            &mut Carry,
            &mut Cooldown,
        )>();
        let (
            mut pos,
            mut facing,
            mut alive,
            mut applied,
            mut reward,
            mut ret,
            mut carry,
            mut cooldown,
        ) = q
            .contiguous_iter_mut(&mut self.world)
            .expect(ONE_TABLE)
            .next()
            .expect(ONE_TABLE);
        for i in 0..s.pos.len() {
            pos.bypass_change_detection()[i] = GridPos {
                x: s.pos[i].0,
                y: s.pos[i].1,
            };
            facing.bypass_change_detection()[i] = Facing(s.facing[i]);
            alive.bypass_change_detection()[i] = Alive(s.alive[i]);
            applied.bypass_change_detection()[i] = AppliedAction(s.applied[i]);
            reward.bypass_change_detection()[i] = StepReward(s.reward[i]);
            ret.bypass_change_detection()[i] = EpisodeReturn(s.ret[i]);
            carry.bypass_change_detection()[i] = Carry(s.carry[i]);
            cooldown.bypass_change_detection()[i] = Cooldown(s.cooldown[i]);
        }
        let mut qa = self.world.query::<(
            &mut ArenaRng,
            &mut Cells,
            &mut Counters,
            &mut EpisodeClock,
            &mut SpawnDeck,
            &mut RulesEnded,
        )>();
        let (mut rng, mut cells, mut counters, mut clock, mut deck, mut ended) = qa
            .contiguous_iter_mut(&mut self.world)
            .expect(ONE_TABLE)
            .next()
            .expect(ONE_TABLE);
        for a in 0..s.arenas {
            rng.bypass_change_detection()[a] = s.rng[a].clone();
            cells.bypass_change_detection()[a]
                .0
                .copy_from_slice(&s.cells[a]);
            counters.bypass_change_detection()[a]
                .0
                .copy_from_slice(&s.counters[a]);
            clock.bypass_change_detection()[a] = EpisodeClock {
                t: s.clock[a].0,
                episode: s.clock[a].1,
            };
            deck.bypass_change_detection()[a]
                .0
                .copy_from_slice(&s.deck[a]);
            ended.bypass_change_detection()[a] = RulesEnded(s.ended[a]);
        }
        let mut b = self.world.resource_mut::<StepBuffers>();
        let b = b.bypass_change_detection();
        b.obs.copy_from_slice(&s.obs);
        b.actions.copy_from_slice(&s.actions);
        b.rewards.copy_from_slice(&s.rewards);
        b.terminated.copy_from_slice(&s.terminated);
        b.truncated.copy_from_slice(&s.truncated);
        Ok(())
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
