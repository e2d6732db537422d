//! PQN's targets: lambda-returns backwards over a rollout, with time limits (a truncation
//! bootstraps from the episode's final observation, a termination cuts the return).

/// A rollout's columns as the returns read them, `[T, rows]` each (`q_max` `[T + 1, rows]`).
pub struct RolloutSteps<'a> {
    /// Rows per step (arenas x learners).
    pub rows: usize,
    /// Rewards `r_t`.
    pub rewards: &'a [f32],
    /// 1 where the rules ended the episode at step t (the return stops there).
    pub terminated: &'a [f32],
    /// 1 where the time limit ended the episode at step t (it would have gone on).
    pub truncated: &'a [f32],
    /// `max_a Q(s_t, a)` of the observation acted on at step t; row T is the observation after
    /// the rollout.
    pub q_max: &'a [f32],
    /// `max_a Q` of the final observation where the step truncated (read only there).
    pub final_q: &'a [f32],
}

/// Lambda-returns backwards over a rollout (Pardo et al., 2018, "Time Limits in Reinforcement
/// Learning": a time limit is not a terminal state). With `B_t` what step t bootstraps from,
///
/// `G_t = r_t + gamma (1 - terminated_t) B_t`,
/// `B_t = final_q_t` where step t truncated (the observation after it is the reset's, from
/// another episode), else `(1 - lambda) q_max_{t+1} + lambda G_{t+1}`; `G_T = q_max_T`.
pub fn lambda_returns(s: &RolloutSteps, gamma: f32, lambda: f32, returns: &mut [f32]) {
    let (rows, t_len) = (s.rows, s.rewards.len() / s.rows.max(1));
    for r in 0..rows {
        let mut next = s.q_max[t_len * rows + r];
        for t in (0..t_len).rev() {
            let i = t * rows + r;
            let boot = if s.truncated[i] != 0.0 {
                s.final_q[i]
            } else {
                (1.0 - lambda) * s.q_max[i + rows] + lambda * next
            };
            next = s.rewards[i] + gamma * (1.0 - s.terminated[i]) * boot;
            returns[i] = next;
        }
    }
}
