//! Rollout frames <-> arena state: what a frame records of an arena (`frame_of`), whether a
//! frame fits a layout ([`check_frame`]) and an arena rebuilt from a frame
//! ([`ArenaState::from_frame`]). The common parts (positions, alive flags, facings, carried
//! items) live here; each substrate converts its own items (`SubstrateRules::frame_items`,
//! `load_frame_items`).

use super::{ArenaMut, ArenaState};
use crate::components::{Alive, Carry, Facing, GridPos};
use crate::layout::Layout;
use crate::rollout::frame::Frame;

/// Builds a frame of one arena; `stepped` adds the step's actions, rewards and done flags.
pub(crate) fn frame_of(layout: &Layout, a: &ArenaMut, stepped: bool) -> Frame {
    let avatars = layout.rules.has_avatars();
    Frame {
        t: a.clock.t,
        episode: a.clock.episode,
        positions: a.pos.iter().map(|p| (p.x, p.y)).collect(),
        alive: a.alive.iter().map(|x| x.0).collect(),
        facing: if avatars {
            a.facing.iter().map(|f| f.0).collect()
        } else {
            Vec::new()
        },
        carry: if avatars {
            a.carry.iter().map(|c| c.0).collect()
        } else {
            Vec::new()
        },
        items: layout.rules.frame_items(layout, a.cells),
        actions: if stepped {
            a.applied.iter().map(|x| x.0).collect()
        } else {
            Vec::new()
        },
        rewards: if stepped {
            a.reward.iter().map(|r| r.0).collect()
        } else {
            Vec::new()
        },
        terminated: stepped && *a.terminated != 0,
        truncated: stepped && *a.truncated != 0,
    }
}

/// Checks a recorded frame against the layout so drawing and rebuilding observations cannot go
/// out of range; the error says what does not fit.
pub fn check_frame(layout: &Layout, f: &Frame) -> Result<(), String> {
    let m = layout.agents;
    if f.positions.len() != m || f.alive.len() != m {
        return Err(format!(
            "{} positions and {} alive flags for {m} agents",
            f.positions.len(),
            f.alive.len()
        ));
    }
    for (slot, (&(x, y), &alive)) in f.positions.iter().zip(&f.alive).enumerate() {
        if alive && !layout.is_open(x as i32, y as i32) {
            return Err(format!(
                "agent {slot} stands on ({x}, {y}), not an open cell of the {}x{} map",
                layout.width, layout.height
            ));
        }
    }
    if !f.facing.is_empty() && f.facing.len() != m {
        return Err(format!("{} facings for {m} agents", f.facing.len()));
    }
    if let Some(v) = f.facing.iter().find(|&&v| v > 3) {
        return Err(format!("facing {v} (0-3)"));
    }
    if !f.carry.is_empty() && f.carry.len() != m {
        return Err(format!("{} carried items for {m} agents", f.carry.len()));
    }
    if !f.rewards.is_empty() && f.rewards.len() != m {
        return Err(format!("{} rewards for {m} agents", f.rewards.len()));
    }
    if !f.actions.is_empty() && f.actions.len() != m {
        return Err(format!("{} actions for {m} agents", f.actions.len()));
    }
    if let Some(n) = layout.rules.frame_items_len(layout)
        && f.items.len() != n
    {
        return Err(format!("{} items, expected {n}", f.items.len()));
    }
    Ok(())
}

impl ArenaState {
    /// The arena a recorded frame shows, its cell layer rebuilt (what the layer holds beyond
    /// the frame, such as cooldowns, is taken as fresh). `None` when the frame cannot be placed.
    pub fn from_frame(layout: &Layout, f: &Frame) -> Option<ArenaState> {
        let m = layout.agents;
        if f.positions.len() != m || f.alive.len() != m {
            return None;
        }
        let in_map = |&(x, y): &(i16, i16)| {
            x >= 0 && y >= 0 && (x as usize) < layout.width && (y as usize) < layout.height
        };
        if !f.positions.iter().all(in_map) || f.facing.iter().any(|&v| v > 3) {
            return None;
        }
        let pos = f.positions.iter().map(|&(x, y)| GridPos { x, y }).collect();
        let alive = f.alive.iter().map(|&a| Alive(a)).collect();
        let mut state = ArenaState::new(layout, pos, alive);
        for (slot, &v) in f.facing.iter().enumerate().take(m) {
            state.facing[slot] = Facing(v);
        }
        for (slot, &c) in f.carry.iter().enumerate().take(m) {
            state.carry[slot] = Carry(c);
        }
        layout
            .rules
            .load_frame_items(layout, &f.items, &mut state.cells)?;
        state.rebuild(layout);
        Some(state)
    }
}
