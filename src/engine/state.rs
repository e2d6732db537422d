//! A batch's whole evolving state: [`BatchState`], saved into checkpoints and restored from
//! them, and the hash of it that determinism checks compare.

use bevy_ecs::prelude::DetectChangesMut;

use super::EnvBatch;
use crate::components::{Alive, AppliedAction, EpisodeClock, GridPos};
use crate::error::EngineError;
use crate::systems::ONE_TABLE;

mod validate;

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
        // The global state (when kept) and the action masks are not saved: they are written
        // again from the restored arenas, and the saved observations put back over the ones
        // that writes.
        if b.state_width > 0 || self.layout().action_mask {
            self.observe_all();
            let mut b = self.world.resource_mut::<StepBuffers>();
            b.bypass_change_detection().obs.copy_from_slice(&s.obs);
        }
        Ok(())
    }
}
