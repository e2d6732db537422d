//! A successor cache under a byte cap: the deterministic successor (next state, learners'
//! rewards) of every applied joint action, kept for as many blocks of [`BLOCK`] states as the
//! cap allows and computed from the rules for the rest.
//!
//! Storage is direct-mapped: block `b` may only live in slot `b % slots`, each slot with an
//! atomic tag (the block it holds), an atomic coldness counter and its rows behind its own
//! mutex. The value-iteration sweep hands one block to one thread, which reads the tag: a
//! conflicting block only bumps the counter and computes on the fly without touching the
//! mutex; the resident block takes its slot's mutex with `try_lock` once for all its states. A
//! slot that another thread holds is never waited for (the block is computed on the fly
//! instead), so there is no global lock and no waiting on the hot path.
//!
//! Replacement: every sweep visits every block exactly once, in a cyclic pattern for which
//! classic policies (LRU, CLOCK, plain direct mapping) evict each block just before it is needed
//! again and hit nothing once the table is larger than the cap. Here a resident block is kept
//! and only replaced when it has gone cold: after `2 x ways` conflicting misses without a hit
//! (`ways` = blocks mapped to its slot), which a complete sweep never causes. So a cap of a
//! tenth of the table serves a tenth of the lookups from memory every sweep after the first.
//! Eviction only costs recomputation: hits and misses give the same bits.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::model::TransitionModel;

/// States per cache block (and per unit of parallel work in a sweep).
pub const BLOCK: usize = 16;

const EMPTY: u64 = u64::MAX;

/// One slot: the block it holds (EMPTY when none), read without the lock, its coldness, and
/// the rows.
#[derive(Debug)]
struct Cell {
    tag: AtomicU64,
    cold: AtomicU64,
    rows: Mutex<Slot>,
}

impl Cell {
    fn empty() -> Cell {
        Cell {
            tag: AtomicU64::new(EMPTY),
            cold: AtomicU64::new(0),
            rows: Mutex::new(Slot {
                block: EMPTY,
                next: Vec::new(),
                rewards: Vec::new(),
            }),
        }
    }
}

/// A slot's rows and the block they belong to (EMPTY when none).
#[derive(Debug)]
pub(crate) struct Slot {
    block: u64,
    /// `[states in block, A^M]`: next state, u32::MAX for terminal.
    pub(crate) next: Vec<u32>,
    /// `[states in block, A^M, N]`.
    pub(crate) rewards: Vec<f32>,
}

/// Counters of one cache's use.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CacheStats {
    /// The byte cap asked for.
    pub cap_bytes: u64,
    /// Bytes the whole table would take (every state).
    pub full_bytes: u64,
    /// Bytes allocated: filled slots' rows plus the slot headers (never above the cap).
    pub bytes_used: u64,
    /// Slots (blocks that can be resident at once).
    pub slots: u64,
    /// State lookups served from memory.
    pub hits: u64,
    /// State lookups computed from the rules (first visits, conflicts, contention).
    pub misses: u64,
    /// Resident blocks replaced by another.
    pub evictions: u64,
}

/// The capped cache; see the module docs.
#[derive(Debug)]
pub struct SuccessorCache {
    slots: Vec<Cell>,
    blocks: u64,
    states: u64,
    joint: usize,
    learners: usize,
    cap: u64,
    full: u64,
    used: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

/// What a sweep does with one block.
pub(crate) enum Entry<'c> {
    /// The slot holds the block: read its rows.
    Hit(std::sync::MutexGuard<'c, Slot>),
    /// The slot was given to the block: write its rows while computing them.
    Fill(std::sync::MutexGuard<'c, Slot>),
    /// Compute from the rules and keep nothing.
    Miss,
}

impl SuccessorCache {
    /// Bytes of one state's row: `A^M x (4 + 4 N)`.
    pub fn row_bytes(model: &TransitionModel) -> u64 {
        model
            .applied_joint()
            .saturating_mul(4 + 4 * model.learners() as u64)
    }

    /// Bytes the uncapped cache of `model` takes (every state's row).
    pub fn bytes(model: &TransitionModel) -> u64 {
        model.states().saturating_mul(Self::row_bytes(model))
    }

    /// Bytes one resident block costs: its rows and its slot header.
    pub fn block_bytes(model: &TransitionModel) -> u64 {
        (BLOCK as u64)
            .saturating_mul(Self::row_bytes(model))
            .saturating_add(std::mem::size_of::<Cell>() as u64)
    }

    /// Bytes a cache capped at `cap` can actually use (whole blocks, no more than every block).
    pub fn capped_bytes(model: &TransitionModel, cap: u64) -> u64 {
        let blocks = model.states().div_ceil(BLOCK as u64);
        (cap / Self::block_bytes(model)).min(blocks) * Self::block_bytes(model)
    }

    /// An empty cache of at most `cap` bytes; slots fill during the first sweep.
    pub fn new(model: &TransitionModel, cap: u64) -> SuccessorCache {
        let blocks = model.states().div_ceil(BLOCK as u64);
        let slots = (cap / Self::block_bytes(model)).min(blocks);
        let header = std::mem::size_of::<Cell>() as u64;
        SuccessorCache {
            slots: (0..slots).map(|_| Cell::empty()).collect(),
            blocks,
            states: model.states(),
            joint: model.applied_joint() as usize,
            learners: model.learners(),
            cap,
            full: Self::bytes(model),
            used: AtomicU64::new(slots * header),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            cap_bytes: self.cap,
            full_bytes: self.full,
            bytes_used: self.used.load(Ordering::Relaxed),
            slots: self.slots.len() as u64,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }

    fn states_in(&self, block: u64) -> u64 {
        (self.states - block * BLOCK as u64).min(BLOCK as u64)
    }

    /// Looks up `block` (its states `block * BLOCK ..`) for one sweep.
    pub(crate) fn entry(&self, block: u64) -> Entry<'_> {
        let n = self.states_in(block);
        if self.slots.is_empty() {
            self.misses.fetch_add(n, Ordering::Relaxed);
            return Entry::Miss;
        }
        let at = (block % self.slots.len() as u64) as usize;
        let cell = &self.slots[at];
        let tag = cell.tag.load(Ordering::Acquire);
        let miss = || {
            self.misses.fetch_add(n, Ordering::Relaxed);
            Entry::Miss
        };
        if tag != block && tag != EMPTY {
            let ways = (self.blocks - at as u64).div_ceil(self.slots.len() as u64);
            if cell.cold.fetch_add(1, Ordering::Relaxed) + 1 < 2 * ways {
                return miss();
            }
        }
        let Ok(mut slot) = cell.rows.try_lock() else {
            return miss();
        };
        if slot.block == block {
            cell.cold.store(0, Ordering::Relaxed);
            self.hits.fetch_add(n, Ordering::Relaxed);
            return Entry::Hit(slot);
        }
        if slot.block != EMPTY && tag == EMPTY {
            // Another block took the empty slot since the tag was read.
            drop(slot);
            return miss();
        }
        self.misses.fetch_add(n, Ordering::Relaxed);
        if slot.block != EMPTY {
            self.evictions.fetch_add(1, Ordering::Relaxed);
            let old = (slot.next.len() * 4 + slot.rewards.len() * 4) as u64;
            self.used.fetch_sub(old, Ordering::Relaxed);
        }
        let rows = n as usize * self.joint;
        slot.next.clear();
        slot.next.resize(rows, u32::MAX);
        slot.next.shrink_to_fit();
        slot.rewards.clear();
        slot.rewards.resize(rows * self.learners, 0.0);
        slot.rewards.shrink_to_fit();
        self.used
            .fetch_add((rows * 4 * (1 + self.learners)) as u64, Ordering::Relaxed);
        // Marked as holding the block now: the caller fills every row before it lets go.
        slot.block = block;
        cell.tag.store(block, Ordering::Release);
        cell.cold.store(0, Ordering::Relaxed);
        Entry::Fill(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(states: u64, slots: usize) -> SuccessorCache {
        SuccessorCache {
            slots: (0..slots).map(|_| Cell::empty()).collect(),
            blocks: states.div_ceil(BLOCK as u64),
            states,
            joint: 2,
            learners: 1,
            cap: 0,
            full: 0,
            used: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn kind(e: &Entry<'_>) -> char {
        match e {
            Entry::Hit(_) => 'h',
            Entry::Fill(_) => 'f',
            Entry::Miss => 'm',
        }
    }

    #[test]
    fn cyclic_sweeps_keep_the_first_blocks_and_a_cold_block_is_replaced() {
        // 4 blocks, 2 slots: blocks 0 and 2 share slot 0 (ways 2).
        let c = cache(4 * BLOCK as u64, 2);
        let sweep = |c: &SuccessorCache| -> String { (0..4).map(|b| kind(&c.entry(b))).collect() };
        assert_eq!(sweep(&c), "ffmm");
        for _ in 0..5 {
            assert_eq!(sweep(&c), "hhmm");
        }
        assert_eq!(c.stats().evictions, 0);
        // Block 2 alone, four times in a row: block 0 is cold after 2 x ways = 4 conflicts.
        let seq: String = (0..4).map(|_| kind(&c.entry(2))).collect();
        assert_eq!(seq, "mmfh");
        let s = c.stats();
        assert_eq!(s.evictions, 1);
        assert_eq!(s.hits, 11 * BLOCK as u64);
        // A held slot is never waited for.
        let held = c.entry(1);
        assert_eq!(kind(&held), 'h');
        assert_eq!(kind(&c.entry(3)), 'm');
    }
}
