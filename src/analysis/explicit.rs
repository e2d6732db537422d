//! The explicit stochastic transition graph: every (state, intended joint action) with its merged
//! successors, probabilities and rewards, materialised. Only for tiny scenarios and as the
//! brute-force reference the exact solvers are tested against; the preflight refuses it when
//! it does not fit (for pursuit_3 it is about 400 million edges).

use super::exact::PolicyTable;
use super::model::TransitionModel;

/// The materialised graph; edges of pair `p = s * A^N + joint` are `offsets[p]..offsets[p+1]`.
pub struct ExplicitGraph {
    joint: u64,
    offsets: Vec<u64>,
    next: Vec<u32>,
    prob: Vec<f64>,
    rewards: Vec<f32>,
    learners: usize,
}

/// Bytes per stored edge for `learners` learners (next index, probability, rewards).
pub fn edge_bytes(learners: usize) -> u64 {
    4 + 8 + 4 * learners as u64
}

impl ExplicitGraph {
    /// Enumerates every (state, intended joint action) through
    /// [`TransitionModel::successors`].
    pub fn build(model: &TransitionModel) -> ExplicitGraph {
        let (n, a) = (model.learners(), model.actions());
        let joint = (a as u64).pow(n as u32);
        let mut g = ExplicitGraph {
            joint,
            offsets: vec![0],
            next: Vec::new(),
            prob: Vec::new(),
            rewards: Vec::new(),
            learners: n,
        };
        let mut intended = vec![0u8; n];
        for s in 0..model.states() {
            for code in 0..joint {
                let mut c = code;
                for i in (0..n).rev() {
                    intended[i] = (c % a as u64) as u8;
                    c /= a as u64;
                }
                for (next, p, r) in model.successors(s, &intended) {
                    g.next.push(next.map_or(u32::MAX, |t| t as u32));
                    g.prob.push(p);
                    g.rewards.extend_from_slice(&r);
                }
                g.offsets.push(g.next.len() as u64);
            }
        }
        g
    }

    /// Edges stored.
    pub fn edges(&self) -> usize {
        self.next.len()
    }

    /// `sum_edges p (r_k + gamma V(s'))` of one pair for learner k with values `v` `[S]`.
    fn backup(&self, pair: usize, k: usize, gamma: f64, v: &[f64]) -> f64 {
        let (lo, hi) = (self.offsets[pair] as usize, self.offsets[pair + 1] as usize);
        (lo..hi)
            .map(|e| {
                let cont = if self.next[e] == u32::MAX {
                    0.0
                } else {
                    v[self.next[e] as usize]
                };
                self.prob[e] * (self.rewards[e * self.learners + k] as f64 + gamma * cont)
            })
            .sum()
    }

    /// Probability of intended joint action `code` under `policy` at `s`, skipping `skip`.
    fn joint_prob(&self, policy: &PolicyTable, s: u64, code: u64, skip: Option<usize>) -> f64 {
        let a = policy.actions as u64;
        let mut c = code;
        let mut p = 1.0;
        for i in (0..self.learners).rev() {
            let x = (c % a) as usize;
            c /= a;
            if Some(i) != skip {
                p *= policy.dist(s, i)[x] as f64;
            }
        }
        p
    }

    /// Learner i's best-response values by value iteration over the explicit graph.
    pub fn best_response(
        &self,
        model: &TransitionModel,
        policy: &PolicyTable,
        i: usize,
        gamma: f64,
        sweeps: usize,
    ) -> Vec<f64> {
        let a = policy.actions as u64;
        let n = self.learners;
        let mut v = vec![0.0f64; model.states() as usize];
        for _ in 0..sweeps {
            let mut next = vec![0.0f64; v.len()];
            for (s, out) in next.iter_mut().enumerate() {
                let mut q = vec![0.0f64; a as usize];
                for code in 0..self.joint {
                    let own = ((code / a.pow((n - 1 - i) as u32)) % a) as usize;
                    let p = self.joint_prob(policy, s as u64, code, Some(i));
                    if p > 0.0 {
                        q[own] +=
                            p * self.backup(s * self.joint as usize + code as usize, i, gamma, &v);
                    }
                }
                *out = q.into_iter().fold(f64::NEG_INFINITY, f64::max);
            }
            v = next;
        }
        v
    }

    /// Every learner's values `[S, N]` under the joint policy.
    pub fn evaluate(
        &self,
        model: &TransitionModel,
        policy: &PolicyTable,
        gamma: f64,
        sweeps: usize,
    ) -> Vec<f64> {
        let n = self.learners;
        let states = model.states() as usize;
        let mut v = vec![0.0f64; states * n];
        for _ in 0..sweeps {
            let mut next = vec![0.0f64; v.len()];
            for k in 0..n {
                let vk: Vec<f64> = (0..states).map(|s| v[s * n + k]).collect();
                for s in 0..states {
                    next[s * n + k] = (0..self.joint)
                        .map(|code| {
                            let p = self.joint_prob(policy, s as u64, code, None);
                            if p == 0.0 {
                                0.0
                            } else {
                                p * self.backup(
                                    s * self.joint as usize + code as usize,
                                    k,
                                    gamma,
                                    &vk,
                                )
                            }
                        })
                        .sum();
                }
            }
            v = next;
        }
        v
    }
}
