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

/// An on-policy rollout's storage, reused every update (CleanRL's rollout buffer): `[T, rows,
/// input]` network inputs, `[T, rows]` actions played, rewards, ends, the final observations'
/// values and the returns, `[T + 1, rows]` the values of the observations acted on.
pub(crate) struct RolloutBuffer {
    /// Steps T.
    pub steps: usize,
    /// Rows per step (arenas x learners).
    pub rows: usize,
    /// Bytes per input row.
    pub input: usize,
    pub obs: Vec<u8>,
    pub taken: Vec<u32>,
    pub rewards: Vec<f32>,
    pub terminated: Vec<f32>,
    pub truncated: Vec<f32>,
    /// Max value of the final observation where the step truncated (0 elsewhere).
    pub final_q: Vec<f32>,
    pub q_max: Vec<f32>,
    pub returns: Vec<f32>,
}

impl RolloutBuffer {
    /// Storage for `steps` steps of `rows` rows of `input` bytes.
    pub(crate) fn new(steps: usize, rows: usize, input: usize) -> RolloutBuffer {
        let n = steps * rows;
        RolloutBuffer {
            steps,
            rows,
            input,
            obs: vec![0; n * input],
            taken: vec![0; n],
            rewards: vec![0.0; n],
            terminated: vec![0.0; n],
            truncated: vec![0.0; n],
            final_q: vec![0.0; n],
            q_max: vec![0.0; n + rows],
            returns: vec![0.0; n],
        }
    }

    /// Records step `t` of a batch whose arenas hold `learners` rows each: the actions played,
    /// the rewards, and each arena's ends (its final value reset to 0 until scored).
    pub(crate) fn record(&mut self, t: usize, b: &crate::components::StepBuffers, learners: usize) {
        let at = t * self.rows;
        for row in 0..self.rows {
            let arena = row / learners;
            self.taken[at + row] = b.actions[row] as u32;
            self.rewards[at + row] = b.rewards[row];
            self.terminated[at + row] = f32::from(b.terminated[arena] != 0);
            self.truncated[at + row] = f32::from(b.truncated[arena] != 0);
            self.final_q[at + row] = 0.0;
        }
    }

    /// Gathers the rows `picks` of the rollout (`t * rows + row`) into `m`, each through its
    /// network (`nets[row]`), with its return as the target.
    pub(crate) fn gather(&self, picks: &[u32], nets: &[u32], m: &mut Minibatch) {
        let d = self.input;
        m.obs.clear();
        m.nets.clear();
        m.actions.clear();
        m.targets.clear();
        for &i in picks {
            let g = i as usize;
            m.obs.extend_from_slice(&self.obs[g * d..(g + 1) * d]);
            m.nets.push(nets[g % self.rows]);
            m.actions.push(self.taken[g]);
            m.targets.push(self.returns[g]);
        }
    }

    /// The lambda-returns of the stored rollout (see [`lambda_returns`]) into `returns`.
    pub(crate) fn lambda_returns(&mut self, gamma: f32, lambda: f32) {
        let steps = RolloutSteps {
            rows: self.rows,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated: &self.truncated,
            q_max: &self.q_max,
            final_q: &self.final_q,
        };
        lambda_returns(&steps, gamma, lambda, &mut self.returns);
    }
}

/// A minibatch's rows gathered out of a [`RolloutBuffer`], reused.
#[derive(Default)]
pub(crate) struct Minibatch {
    pub obs: Vec<u8>,
    pub nets: Vec<u32>,
    pub actions: Vec<u32>,
    pub targets: Vec<f32>,
}
