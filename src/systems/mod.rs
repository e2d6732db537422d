//! The step's systems. Each runs once per step over the whole batch: [`Arenas`] takes the agent
//! columns (`B * M` values, arena-major) and arena columns (`B` values) whole, splits them into
//! per-arena [`ArenaMut`] views and runs a substrate phase on every arena in parallel with
//! rayon. No system loops over arenas sequentially, none allocates.

pub mod record;
pub mod step;

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;
use rayon::prelude::*;

use crate::components::{
    Alive, AppliedAction, ArenaRng, Carry, Cells, Cooldown, Counters, EpisodeClock, EpisodeReturn,
    Facing, GridPos, RulesEnded, SpawnDeck, StepBuffers, StepReward,
};
use crate::layout::Layout;
use crate::substrate::ArenaMut;

/// Arenas per rayon task: a few tasks per thread (for balance), each with enough arenas to
/// amortise scheduling.
pub fn group_size(arenas: usize, threads: usize) -> usize {
    arenas.div_ceil(4 * threads.max(1)).max(1)
}

/// The message for the construction-time invariant that agents and arenas live in one table.
pub(crate) const ONE_TABLE: &str =
    "agent and arena components are table-stored in one archetype (checked in EnvBatch::new)";

/// Every agent column, in `ArenaMut` order.
pub type AgentColumns = (
    &'static mut GridPos,
    &'static mut Facing,
    &'static mut Alive,
    &'static mut AppliedAction,
    &'static mut StepReward,
    &'static mut EpisodeReturn,
    &'static mut Carry,
    &'static mut Cooldown,
);

/// Every arena column, in `ArenaMut` order.
pub type ArenaColumns = (
    &'static mut ArenaRng,
    &'static mut Cells,
    &'static mut Counters,
    &'static mut EpisodeClock,
    &'static mut SpawnDeck,
    &'static mut RulesEnded,
);

/// The whole batch as per-arena views: what every step system works through.
#[derive(SystemParam)]
pub struct Arenas<'w, 's> {
    layout: Res<'w, Layout>,
    buffers: ResMut<'w, StepBuffers>,
    agents: Query<'w, 's, AgentColumns>,
    arenas: Query<'w, 's, ArenaColumns>,
}

impl Arenas<'_, '_> {
    /// Runs `f` on every arena, in parallel.
    pub fn for_each(&mut self, f: impl Fn(&Layout, &mut ArenaMut) + Sync + Send) {
        let layout: &Layout = &self.layout;
        let (m, n, o) = (layout.agents, layout.learners, layout.obs_len);
        let g = group_size(self.buffers.terminated.len(), rayon::current_num_threads());
        let StepBuffers {
            obs,
            actions,
            rewards,
            terminated,
            truncated,
        } = self.buffers.bypass_change_detection();
        let mut agent_cols = self.agents.contiguous_iter_mut().expect(ONE_TABLE);
        let mut arena_cols = self.arenas.contiguous_iter_mut().expect(ONE_TABLE);
        let (
            Some((
                mut pos,
                mut facing,
                mut alive,
                mut applied,
                mut reward,
                mut ret,
                mut carry,
                mut cooldown,
            )),
            Some((mut rng, mut cells, mut counters, mut clock, mut deck, mut ended)),
        ) = (agent_cols.next(), arena_cols.next())
        else {
            return;
        };
        // Parallel over groups of arenas, then plain indexing per arena inside a group: zipping
        // ~20 iterators per arena costs more than the rules themselves.
        let agents = (
            pos.bypass_change_detection().par_chunks_mut(g * m),
            facing.bypass_change_detection().par_chunks_mut(g * m),
            alive.bypass_change_detection().par_chunks_mut(g * m),
            applied.bypass_change_detection().par_chunks_mut(g * m),
            reward.bypass_change_detection().par_chunks_mut(g * m),
            ret.bypass_change_detection().par_chunks_mut(g * m),
            carry.bypass_change_detection().par_chunks_mut(g * m),
            cooldown.bypass_change_detection().par_chunks_mut(g * m),
        );
        let arenas = (
            rng.bypass_change_detection().par_chunks_mut(g),
            cells.bypass_change_detection().par_chunks_mut(g),
            counters.bypass_change_detection().par_chunks_mut(g),
            clock.bypass_change_detection().par_chunks_mut(g),
            deck.bypass_change_detection().par_chunks_mut(g),
            ended.bypass_change_detection().par_chunks_mut(g),
        );
        let buffers = (
            actions.par_chunks(g * n),
            obs.par_chunks_mut(g * n * o),
            rewards.par_chunks_mut(g * n),
            terminated.par_chunks_mut(g),
            truncated.par_chunks_mut(g),
        );
        (agents, arenas, buffers).into_par_iter().for_each(
            |(
                (pos, facing, alive, applied, reward, ret, carry, cooldown),
                (rng, cells, counters, clock, deck, ended),
                (actions, obs, rewards, terminated, truncated),
            )| {
                for k in 0..rng.len() {
                    let (ag, le) = (k * m..(k + 1) * m, k * n..(k + 1) * n);
                    let mut a = ArenaMut {
                        pos: &mut pos[ag.clone()],
                        facing: &mut facing[ag.clone()],
                        alive: &mut alive[ag.clone()],
                        applied: &mut applied[ag.clone()],
                        reward: &mut reward[ag.clone()],
                        ret: &mut ret[ag.clone()],
                        carry: &mut carry[ag.clone()],
                        cooldown: &mut cooldown[ag],
                        rng: &mut rng[k],
                        cells: &mut cells[k].0,
                        counters: &mut counters[k].0,
                        clock: &mut clock[k],
                        deck: &mut deck[k].0,
                        ended: &mut ended[k].0,
                        actions: &actions[le.clone()],
                        obs: &mut obs[k * n * o..(k + 1) * n * o],
                        rewards: &mut rewards[le],
                        terminated: &mut terminated[k],
                        truncated: &mut truncated[k],
                    };
                    f(layout, &mut a);
                }
            },
        );
    }

    /// Runs `f` on one arena.
    pub fn with_arena<T>(
        &mut self,
        arena: usize,
        f: impl FnOnce(&Layout, &mut ArenaMut) -> T,
    ) -> Option<T> {
        let layout: &Layout = &self.layout;
        let (m, n, o) = (layout.agents, layout.learners, layout.obs_len);
        let StepBuffers {
            obs,
            actions,
            rewards,
            terminated,
            truncated,
        } = self.buffers.bypass_change_detection();
        let mut agent_cols = self.agents.contiguous_iter_mut().expect(ONE_TABLE);
        let mut arena_cols = self.arenas.contiguous_iter_mut().expect(ONE_TABLE);
        let (
            Some((
                mut pos,
                mut facing,
                mut alive,
                mut applied,
                mut reward,
                mut ret,
                mut carry,
                mut cooldown,
            )),
            Some((mut rng, mut cells, mut counters, mut clock, mut deck, mut ended)),
        ) = (agent_cols.next(), arena_cols.next())
        else {
            return None;
        };
        let agents = arena * m..(arena + 1) * m;
        let mut a = ArenaMut {
            pos: &mut pos.bypass_change_detection()[agents.clone()],
            facing: &mut facing.bypass_change_detection()[agents.clone()],
            alive: &mut alive.bypass_change_detection()[agents.clone()],
            applied: &mut applied.bypass_change_detection()[agents.clone()],
            reward: &mut reward.bypass_change_detection()[agents.clone()],
            ret: &mut ret.bypass_change_detection()[agents.clone()],
            carry: &mut carry.bypass_change_detection()[agents.clone()],
            cooldown: &mut cooldown.bypass_change_detection()[agents],
            rng: &mut rng.bypass_change_detection()[arena],
            cells: &mut cells.bypass_change_detection()[arena].0,
            counters: &mut counters.bypass_change_detection()[arena].0,
            clock: &mut clock.bypass_change_detection()[arena],
            deck: &mut deck.bypass_change_detection()[arena].0,
            ended: &mut ended.bypass_change_detection()[arena].0,
            actions: &actions[arena * n..(arena + 1) * n],
            obs: &mut obs[arena * n * o..(arena + 1) * n * o],
            rewards: &mut rewards[arena * n..(arena + 1) * n],
            terminated: &mut terminated[arena],
            truncated: &mut truncated[arena],
        };
        Some(f(layout, &mut a))
    }
}
