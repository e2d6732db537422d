//! cue_memory's rules: cues drawn at spawn, the choice paid at the last step, the observation.
//! The cell layer is `[c_0, .., c_{M-1}, t low byte, t high byte]`: the rules keep their own
//! step count beside the cues so that an arena rebuilt from a rollout frame observes exactly
//! what the live one did.

use rand_core::Rng;

use super::CueParams;
use crate::layout::core::LayoutCore;
use crate::rng::below;
use crate::substrate::ArenaMut;

/// The steps taken in the current episode, from the cell layer.
fn steps(layout: &LayoutCore, cells: &[u8]) -> u16 {
    let m = layout.agents;
    u16::from_le_bytes([cells[m], cells[m + 1]])
}

/// Draws every player's cue uniformly from the arena's `rules` stream (one draw per slot, in
/// slot order) and starts the step count at 0.
pub fn draw_cues(layout: &LayoutCore, params: &CueParams, a: &mut ArenaMut) {
    let m = layout.agents;
    for cue in &mut a.cells[..m] {
        *cue = below(a.rng.rules.next_u32(), u32::from(params.cues)) as u8;
    }
    a.cells[m..m + 2].copy_from_slice(&0u16.to_le_bytes());
}

/// Counts the step; on the episode's last step pays each player for its action against its
/// cue, counts the right choices and ends the episode. Every other step pays 0.
pub fn choose(layout: &LayoutCore, params: &CueParams, a: &mut ArenaMut) {
    let m = layout.agents;
    let t = steps(layout, a.cells).saturating_add(1);
    a.cells[m..m + 2].copy_from_slice(&t.to_le_bytes());
    let last = t >= params.length;
    for (slot, r) in a.reward.iter_mut().enumerate() {
        r.0 = 0.0;
        if last {
            if a.applied[slot].0 == a.cells[slot] {
                r.0 = params.correct_reward;
                a.counters[0] += 1;
            } else {
                r.0 = params.wrong_reward;
            }
        }
    }
    if last {
        *a.ended = true;
    }
}

/// Per learner: `[K]` its cue one-hot at the episode's first step (zeros after), then 1 when
/// the next action is the choice (the episode's last step), else 0.
pub fn write_observations(layout: &LayoutCore, params: &CueParams, a: &mut ArenaMut) {
    let k = params.cues as usize;
    let t = steps(layout, a.cells);
    let choose_now = u8::from(t.saturating_add(1) == params.length);
    for (s, out) in a
        .obs
        .chunks_exact_mut(layout.obs_len)
        .enumerate()
        .take(layout.learners)
    {
        out.fill(0);
        if t == 0 {
            out[a.cells[s] as usize] = 1;
        }
        out[k] = choose_now;
    }
}
