//! The step's systems. Each runs once per step over the whole batch: [`Arenas`] takes the agent
//! columns (`B * M` values, arena-major) and arena columns (`B` values) whole, splits them into
//! per-arena [`ArenaMut`] views and runs a substrate phase on every arena in parallel with
//! rayon. No system loops over arenas sequentially, none allocates.

pub mod record;
pub mod render;
pub mod step;

use bevy_ecs::change_detection::ContiguousMut;
use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;
use rayon::prelude::*;

use crate::components::{
    Alive, AppliedAction, ArenaRng, Carry, Cells, Cooldown, Counters, EpisodeClock, EpisodeEnds,
    EpisodeReturn, Facing, GridPos, RulesEnded, SpawnDeck, StepBuffers, StepReward,
};
use crate::layout::Layout;
use crate::substrate::ArenaMut;

/// Arenas per rayon task: a few tasks per thread (for balance), each with enough arenas to
/// amortise scheduling.
pub fn group_size(arenas: usize, threads: usize) -> usize {
    arenas.div_ceil(4 * threads.max(1)).max(1)
}

/// Above this many bytes of observations and cells per thread, an arena's data has left the
/// core's second-level cache (about 2 MiB on a current server core) by the time the next step
/// comes back to it, and [`Arenas::for_each_with_end`] asks for the next arena's map while one
/// arena steps. Below it the requests cost more than they save (Commons Harvest on one core:
/// 0.95 at 128 arenas, 1.11 at 256, 1.14 at 1024).
const PREFETCH_ABOVE: usize = 2 << 20;

/// Asks for the map rows of an arena's cell layer ([`crate::simd::prefetch`]), where the rules
/// read and write at scattered places; the padding rows only the observations read.
fn prefetch_map(layout: &Layout, cells: &Cells) {
    let row = layout.padded_width * crate::components::CELL_CHANNELS;
    if let Some(map) = cells
        .0
        .get(layout.pad * row..(layout.pad + layout.height) * row)
    {
        crate::simd::prefetch(map);
    }
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
    ends: ResMut<'w, EpisodeEnds>,
    agents: Query<'w, 's, AgentColumns>,
    arenas: Query<'w, 's, ArenaColumns>,
}

/// A column's values, bypassing change ticks (no system here reads them; writing them would
/// cost a pass over every column each step).
fn raw<T>(column: ContiguousMut<'_, T>) -> &mut [T] {
    ContiguousMut::bypass_change_detection_split(column).0
}

/// Every column of the batch (or of a group of arenas), as plain slices.
struct Columns<'a> {
    pos: &'a mut [GridPos],
    facing: &'a mut [Facing],
    alive: &'a mut [Alive],
    applied: &'a mut [AppliedAction],
    reward: &'a mut [StepReward],
    ret: &'a mut [EpisodeReturn],
    carry: &'a mut [Carry],
    cooldown: &'a mut [Cooldown],
    rng: &'a mut [ArenaRng],
    cells: &'a mut [Cells],
    counters: &'a mut [Counters],
    clock: &'a mut [EpisodeClock],
    deck: &'a mut [SpawnDeck],
    ended: &'a mut [RulesEnded],
    actions: &'a [u8],
    obs: &'a mut [u8],
    rewards: &'a mut [f32],
    terminated: &'a mut [u8],
    truncated: &'a mut [u8],
    final_obs: &'a mut [u8],
    state: &'a mut [u8],
    final_state: &'a mut [u8],
    mask: &'a mut [u8],
    final_mask: &'a mut [u8],
    end_returns: &'a mut [f32],
    end_counters: &'a mut [u32],
    end_clock: &'a mut [EpisodeClock],
}

/// Where one arena's episode end is kept for what runs after the step's pass: its final
/// observations (`[N, O]`, `StepBuffers::final_obs`) and global state, and the returns,
/// counters and clock it ended with ([`EpisodeEnds`]). A handle on the group's rows: an
/// episode ends on few steps, so the rows are found only when one does.
pub struct EpisodeEnd<'g, 'a> {
    group: &'g mut Columns<'a>,
    k: usize,
    d: Dims,
}

impl EpisodeEnd<'_, '_> {
    /// Keeps what the arena's episode ended with (call before its respawn).
    pub fn keep(&mut self, a: &ArenaMut) {
        let Dims { m, n, o, c, s, .. } = self.d;
        let (g, k) = (&mut *self.group, self.k);
        g.final_obs[k * n * o..(k + 1) * n * o].copy_from_slice(a.obs);
        g.final_state[k * s..(k + 1) * s].copy_from_slice(a.state);
        let mk = a.mask.len();
        g.final_mask[k * mk..(k + 1) * mk].copy_from_slice(a.mask);
        for (out, r) in g.end_returns[k * m..(k + 1) * m]
            .iter_mut()
            .zip(a.ret.iter())
        {
            *out = r.0;
        }
        // Rows of at least one counter.
        let row = k * c.max(1);
        g.end_counters[row..row + c].copy_from_slice(a.counters);
        g.end_clock[k] = *a.clock;
    }
}

/// The first `n` values of `s`, which keeps the rest.
#[inline(always)]
fn front<'a, T>(s: &mut &'a mut [T], n: usize) -> &'a mut [T] {
    let (head, tail) = std::mem::take(s).split_at_mut(n);
    *s = tail;
    head
}

/// The first value of `s`, which keeps the rest.
#[inline(always)]
fn first<'a, T>(s: &mut &'a mut [T]) -> &'a mut T {
    &mut front(s, 1)[0]
}

impl<'a> Columns<'a> {
    /// The next arena of these columns (M agents, N learners, O observation bytes, S
    /// global-state bytes and K mask bytes each); the columns keep the arenas after it (the
    /// episode-end rows stay whole, see [`EpisodeEnd`]). Splitting off the front costs a
    /// length check per column, where indexing arena `k` costs a range check and
    /// multiplications.
    #[inline(always)]
    fn next_arena(&mut self, d: Dims) -> ArenaMut<'a> {
        let Dims {
            m, n, o, s, k: mk, ..
        } = d;
        let (actions, rest) = self.actions.split_at(n);
        self.actions = rest;
        ArenaMut {
            pos: front(&mut self.pos, m),
            facing: front(&mut self.facing, m),
            alive: front(&mut self.alive, m),
            applied: front(&mut self.applied, m),
            reward: front(&mut self.reward, m),
            ret: front(&mut self.ret, m),
            carry: front(&mut self.carry, m),
            cooldown: front(&mut self.cooldown, m),
            rng: first(&mut self.rng),
            cells: &mut first(&mut self.cells).0,
            counters: &mut first(&mut self.counters).0,
            clock: first(&mut self.clock),
            deck: &mut first(&mut self.deck).0,
            ended: &mut first(&mut self.ended).0,
            actions,
            obs: front(&mut self.obs, n * o),
            state: front(&mut self.state, s),
            mask: front(&mut self.mask, mk),
            rewards: front(&mut self.rewards, n),
            terminated: first(&mut self.terminated),
            truncated: first(&mut self.truncated),
        }
    }

    /// Drops the first `k` arenas of these columns.
    fn skip_arenas(&mut self, k: usize, d: Dims) {
        for _ in 0..k {
            self.next_arena(d);
        }
    }
}

impl Arenas<'_, '_> {
    /// The layout and every column, or `None` for an empty batch.
    fn columns(&mut self) -> Option<(&Layout, Columns<'_>, Dims)> {
        let StepBuffers {
            obs,
            actions,
            rewards,
            terminated,
            truncated,
            final_obs,
            state_width,
            state,
            final_state,
            action_mask: mask,
            final_action_mask: final_mask,
        } = self.buffers.bypass_change_detection();
        let EpisodeEnds {
            returns: end_returns,
            counters: end_counters,
            clock: end_clock,
        } = self.ends.bypass_change_detection();
        let (pos, facing, alive, applied, reward, ret, carry, cooldown) =
            self.agents.contiguous_iter_mut().expect(ONE_TABLE).next()?;
        let (rng, cells, counters, clock, deck, ended) =
            self.arenas.contiguous_iter_mut().expect(ONE_TABLE).next()?;
        let dims = dims(&self.layout, *state_width);
        Some((
            &self.layout,
            Columns {
                pos: raw(pos),
                facing: raw(facing),
                alive: raw(alive),
                applied: raw(applied),
                reward: raw(reward),
                ret: raw(ret),
                carry: raw(carry),
                cooldown: raw(cooldown),
                rng: raw(rng),
                cells: raw(cells),
                counters: raw(counters),
                clock: raw(clock),
                deck: raw(deck),
                ended: raw(ended),
                actions,
                obs,
                rewards,
                terminated,
                truncated,
                final_obs,
                state,
                final_state,
                mask,
                final_mask,
                end_returns,
                end_counters,
                end_clock,
            },
            dims,
        ))
    }

    /// Runs `f` on every arena, in parallel: over groups of arenas, then plain indexing per
    /// arena inside a group (zipping ~20 iterators per arena costs more than the rules).
    pub fn for_each(&mut self, f: impl Fn(&Layout, &mut ArenaMut) + Sync + Send) {
        self.for_each_with_end(|layout, a, _| f(layout, a));
    }

    /// [`Arenas::for_each`], also handing each arena where its episode end is kept.
    pub fn for_each_with_end(
        &mut self,
        f: impl Fn(&Layout, &mut ArenaMut, &mut EpisodeEnd) + Sync + Send,
    ) {
        let threads = rayon::current_num_threads();
        let Some((layout, c, dims)) = self.columns() else {
            return;
        };
        let Dims {
            m,
            n,
            o,
            c: k,
            s,
            k: mk,
        } = dims;
        let g = group_size(c.terminated.len(), threads);
        // What a step reads and writes of each arena, mostly: its observations and cells.
        let touched = n * o + layout.cells_template.len();
        let prefetch = c.terminated.len().div_ceil(threads) * touched > PREFETCH_ABOVE;
        let agents = (
            c.pos.par_chunks_mut(g * m),
            c.facing.par_chunks_mut(g * m),
            c.alive.par_chunks_mut(g * m),
            c.applied.par_chunks_mut(g * m),
            c.reward.par_chunks_mut(g * m),
            c.ret.par_chunks_mut(g * m),
            c.carry.par_chunks_mut(g * m),
            c.cooldown.par_chunks_mut(g * m),
        );
        let arenas = (
            c.rng.par_chunks_mut(g),
            c.cells.par_chunks_mut(g),
            c.counters.par_chunks_mut(g),
            c.clock.par_chunks_mut(g),
            c.deck.par_chunks_mut(g),
            c.ended.par_chunks_mut(g),
        );
        let buffers = (
            c.actions.par_chunks(g * n),
            c.obs.par_chunks_mut(g * n * o),
            c.rewards.par_chunks_mut(g * n),
            c.terminated.par_chunks_mut(g),
            c.truncated.par_chunks_mut(g),
            c.final_obs.par_chunks_mut(g * n * o),
            // Rows of at least one byte, as the counters below.
            c.state.par_chunks_mut(g * s.max(1)),
            c.final_state.par_chunks_mut(g * s.max(1)),
            c.mask.par_chunks_mut(g * mk.max(1)),
            c.final_mask.par_chunks_mut(g * mk.max(1)),
        );
        let ends = (
            c.end_returns.par_chunks_mut(g * m),
            // A row of at least one counter: a substrate without counters still has a chunk
            // per group.
            c.end_counters.par_chunks_mut(g * k.max(1)),
            c.end_clock.par_chunks_mut(g),
        );
        (agents, arenas, buffers, ends).into_par_iter().for_each(
            |(
                (pos, facing, alive, applied, reward, ret, carry, cooldown),
                (rng, cells, counters, clock, deck, ended),
                (
                    actions,
                    obs,
                    rewards,
                    terminated,
                    truncated,
                    final_obs,
                    state,
                    final_state,
                    mask,
                    final_mask,
                ),
                (end_returns, end_counters, end_clock),
            )| {
                let mut group = Columns {
                    pos,
                    facing,
                    alive,
                    applied,
                    reward,
                    ret,
                    carry,
                    cooldown,
                    rng,
                    cells,
                    counters,
                    clock,
                    deck,
                    ended,
                    actions,
                    obs,
                    rewards,
                    terminated,
                    truncated,
                    final_obs,
                    state,
                    final_state,
                    mask,
                    final_mask,
                    end_returns,
                    end_counters,
                    end_clock,
                };
                for k in 0..group.terminated.len() {
                    let mut a = group.next_arena(dims);
                    // The rules reach the next arena's cells at scattered places.
                    if prefetch && let Some(next) = group.cells.first() {
                        prefetch_map(layout, next);
                    }
                    let mut end = EpisodeEnd {
                        group: &mut group,
                        k,
                        d: dims,
                    };
                    f(layout, &mut a, &mut end);
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
        let (layout, mut c, dims) = self.columns()?;
        if arena >= c.terminated.len() {
            return None;
        }
        c.skip_arenas(arena, dims);
        Some(f(layout, &mut c.next_arena(dims)))
    }

    /// Runs `f` on the episode ends kept this step, in arena order: `(arena, returns,
    /// counters, clock, terminated)` for every arena whose episode ended.
    pub fn for_each_episode_end(
        &mut self,
        mut f: impl FnMut(usize, &[f32], &[u32], EpisodeClock, bool),
    ) {
        let Some((_, c, Dims { m, c: k, .. })) = self.columns() else {
            return;
        };
        for (arena, (&term, &trunc)) in c.terminated.iter().zip(c.truncated.iter()).enumerate() {
            if term != 0 || trunc != 0 {
                let returns = &c.end_returns[arena * m..(arena + 1) * m];
                let counters = &c.end_counters[arena * k.max(1)..arena * k.max(1) + k];
                f(arena, returns, counters, c.end_clock[arena], term != 0);
            }
        }
    }
}

/// Per-arena sizes of the columns: M agents, N learners, O observation bytes per learner, C
/// counters (`EpisodeEnds::counters` keeps rows of `max(C, 1)`), S global-state bytes and K
/// action-mask bytes (0 when the batch keeps none; their buffers keep rows of `max(.., 1)`).
#[derive(Debug, Clone, Copy)]
struct Dims {
    m: usize,
    n: usize,
    o: usize,
    c: usize,
    s: usize,
    k: usize,
}

fn dims(layout: &Layout, state_width: usize) -> Dims {
    Dims {
        m: layout.agents,
        n: layout.learners,
        o: layout.obs_len,
        c: layout.counter_names.len(),
        s: state_width,
        k: layout.mask_len(),
    }
}
