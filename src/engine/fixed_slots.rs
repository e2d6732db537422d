//! Learner slots acted by a fixed policy while the others learn (a learned best response
//! trains one slot against the rest of a trained run, which stays as it was). The batch
//! overwrites those slots' actions just before it steps, so any algorithm that records the
//! actions after [`EnvBatch::step`] learns from what was played.

use super::EnvBatch;
use crate::components::StepBuffers;
use crate::error::EngineError;

/// What acts for the fixed slots.
pub trait SlotActor: Send + Sync {
    /// Actions `[B x N]` for the observations `[B, N, O]` (only the fixed slots' are used).
    fn act(&mut self, obs: &[u8], actions: &mut [u8]) -> Result<(), String>;

    /// The arenas whose episodes ended in the last step (`started[b]`), so a policy with
    /// memory can reset it.
    fn episodes_start(&mut self, _started: &[bool]) {}

    /// After every step: its rewards `[B x N]` and the arenas whose episodes it ended. By
    /// default only [`SlotActor::episodes_start`]; an actor that keeps score (a population
    /// that samples its members by win rate) reads the rewards too.
    fn stepped(&mut self, rewards: &[f32], started: &[bool]) {
        let _ = rewards;
        self.episodes_start(started);
    }
}

/// A fixed actor and the learner slots it acts for (`slots[l]`).
pub struct FixedSlots {
    /// The actor.
    pub actor: Box<dyn SlotActor>,
    /// Which learner slots it acts for.
    pub slots: Vec<bool>,
}

impl EnvBatch {
    /// Lets `fixed` act for its slots from now on (`None`: every slot's action is the
    /// caller's again); returns the previous one.
    pub fn fix_slots(&mut self, fixed: Option<FixedSlots>) -> Option<FixedSlots> {
        std::mem::replace(&mut self.fixed, fixed)
    }

    /// Which learner slots a fixed actor plays (`None`: the caller plays every slot). An
    /// on-policy learner leaves those slots out of its loss.
    pub fn fixed_slot_mask(&self) -> Option<&[bool]> {
        self.fixed.as_ref().map(|f| f.slots.as_slice())
    }

    /// Overwrites the fixed slots' actions (before a step).
    pub(super) fn act_fixed_slots(&mut self) -> Result<(), EngineError> {
        // Every step passes here: nothing to look up without a fixed actor.
        if self.fixed.is_none() {
            return Ok(());
        }
        let n = self.layout().learners;
        let Some(f) = &mut self.fixed else {
            return Ok(());
        };
        let b = self.world.resource_mut::<StepBuffers>().into_inner();
        let mut chosen = vec![0u8; b.actions.len()];
        f.actor
            .act(&b.obs, &mut chosen)
            .map_err(EngineError::FixedSlots)?;
        for (i, a) in b.actions.iter_mut().enumerate() {
            if f.slots.get(i % n).copied().unwrap_or(false) {
                *a = chosen[i];
            }
        }
        Ok(())
    }

    /// Tells the fixed actor which arenas' episodes the last step ended.
    pub(super) fn fixed_slots_stepped(&mut self) {
        let Some(f) = &mut self.fixed else {
            return;
        };
        let b = self.world.resource::<StepBuffers>();
        let started: Vec<bool> = (b.terminated.iter().zip(&b.truncated))
            .map(|(&t, &u)| t != 0 || u != 0)
            .collect();
        f.actor.stepped(&b.rewards, &started);
    }
}
