//! Matrix games: a repeated normal-form game as a degenerate scenario. Every step each player
//! picks one of K actions and gets `payoffs[joint][i]`, joint = sum of a_i K^(N-1-i) (player 0
//! most significant). The observation is the previous joint action, one-hot per player, plus a
//! flag that is 1 on the first step of an episode.
//!
//! Cell layer: `[a_0, .., a_{N-1}, has_previous]`.

use super::MatrixParams;
use crate::layout::core::LayoutCore;
use crate::substrate::ArenaMut;

/// The joint-action row of the payoff table.
pub fn joint_index(k: usize, actions: impl Iterator<Item = u8>) -> usize {
    actions.fold(0, |j, a| j * k + a as usize)
}

/// Pays every player from the table and remembers the joint action.
pub fn interact(layout: &LayoutCore, params: &MatrixParams, a: &mut ArenaMut) {
    let k = params.actions as usize;
    let n = layout.agents;
    let joint = joint_index(k, a.applied.iter().map(|x| x.0));
    for (s, r) in a.reward.iter_mut().enumerate() {
        r.0 = params.payoffs[joint][s];
    }
    for s in 0..n {
        a.cells[s] = a.applied[s].0;
        a.counters[a.applied[s].0 as usize] += 1;
    }
    a.cells[n] = 1;
}

/// `[N * K]` one-hot previous joint action, then the first-step flag.
pub fn write_observations(layout: &LayoutCore, params: &MatrixParams, a: &mut ArenaMut) {
    let k = params.actions as usize;
    let n = layout.agents;
    let has_previous = a.cells[n] != 0;
    for s in 0..layout.learners {
        let out = &mut a.obs[s * layout.obs_len..(s + 1) * layout.obs_len];
        out.fill(0);
        if has_previous {
            for j in 0..n {
                out[j * k + a.cells[j] as usize] = 1;
            }
        }
        out[n * k] = u8::from(!has_previous);
    }
}
