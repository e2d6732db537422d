//! LOQA (Aghajohari et al., 2024, "LOQA: Learning with Opponent Q-Learning Awareness"):
//! opponent shaping through the opponents' action-values. LOQA assumes each opponent plays a
//! softmax over its Q-values, `pi_j(b | s) = softmax(Q_j(s, .) / tau)[b]`, and makes the Q-value
//! of the action the opponent took differentiable in the learner's own policy: it is the
//! opponent's return from there on, written with loaded DiCE over the learner's later
//! log-probabilities. The learner then climbs its own advantage through the opponent's
//! log-probability as well as its own: it learns to act so that the opponent's Q-values, and
//! so its policy, move toward what is good for the learner.
//!
//! Written out, the gradient of the authors' opponent loss (`agent_policy_loss` in
//! github.com/MiladInk/loqa, method `loaded-dice`, `differentiable_current_reward: false`) is a
//! policy gradient of the learner's own log-probabilities with one more term per step. Learner
//! i's advantage at step k becomes
//!
//! ```text
//! A*_i(k) = A_i(k) + w * gamma * mean_{j != i} c_ij(k) * M_j(k)
//! c_ij(k) = sum_{t<k} (gamma * delta)^(k-1-t) * A_i(t) * (1 - pi_j(b_t | s_t)) / tau
//! ```
//!
//! over the earlier steps of the same episode, with `M_j(k) = G_j(k) - V_j(s_k)` opponent j's
//! Monte Carlo advantage (its discounted return from step k, bootstrapped where the rollout or
//! a time limit cuts the episode), `w` the opponent term's weight, `delta` loaded DiCE's extra
//! discount and `tau` the softmax temperature. Step t's own advantage, weighted by how far the
//! opponent's choice then could still move (`1 - pi_j`), is credited to every later own action
//! in proportion to what that action did for the opponent. The unit tests check the rewrite
//! against finite differences of the authors' loss.
//!
//! Differences from the authors' code, all deliberate:
//! - The opponent's policy probability `pi_j(b_t | s_t)` is its policy network's (the rollout's
//!   log-probability), where LOQA computes `softmax(Q_j / tau)` from a Q-network with the taken
//!   action's Q replaced by its return. Under LOQA's own assumption the two agree; here no
//!   Q-network is trained, and `tau` only scales the term.
//! - The learner's own advantage is IPPO's GAE(lambda) (`ppo.gae_lambda`; 0 is the authors'
//!   TD(0) advantage), and the update is IPPO's clipped surrogate over epochs of minibatches
//!   rather than one REINFORCE step.
//! - The agent replay buffer and the periodic resets of the authors' coin-game runs are not
//!   part of the algorithm here.
//!
//! Every learner's networks are IPPO's stacks, so the rewrite is one pass over the rollout
//! whatever the number of learners. As Advantage Alignment's, the past sums start afresh at
//! each rollout's first step; nothing is kept across updates, so a resumed run continues bit
//! for bit.
//!
//! Configuration read here (see [`RunConfig`]): IPPO's (`arenas`, `rollout`, `ppo`, `learn`,
//! `network`) and `loqa` (`weight`, `temperature`, `discount`).

use crate::critic::Chosen;
use crate::dist::Job;
use crate::scenario::LoadedScenario;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::kit::ppo::gae;
use crate::train::kit::ppo_rollout::PpoRollout;
use crate::train::kit::returns::RolloutSteps;

use super::ippo::{AdvantageShaping, Ippo};

/// The rewrite's constants and its scratch buffers.
struct Loqa {
    /// w, gamma, delta and tau.
    terms: Terms,
    /// `[T, rows]` the rollout's Monte Carlo returns and advantages (GAE with lambda 1).
    returns: Vec<f32>,
    mc: Vec<f32>,
}

/// The constants of the rewrite.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Terms {
    /// w: the opponent term's weight (0 is IPPO).
    pub weight: f32,
    /// gamma: the discount.
    pub gamma: f32,
    /// delta: loaded DiCE's extra discount of the past sum.
    pub discount: f32,
    /// tau: the opponents' softmax temperature.
    pub temperature: f32,
}

impl AdvantageShaping for Loqa {
    fn shape(&mut self, ro: &mut PpoRollout, learners: usize) {
        let b = &ro.buf;
        self.returns.resize(ro.adv.len(), 0.0);
        self.mc.resize(ro.adv.len(), 0.0);
        let steps = RolloutSteps {
            rows: b.rows,
            rewards: &b.rewards,
            terminated: &b.terminated,
            truncated: &b.truncated,
            q_max: &b.q_max,
            final_q: &b.final_q,
        };
        gae(
            &steps,
            self.terms.gamma,
            1.0,
            &mut self.returns,
            &mut self.mc,
        );
        rewrite(
            &mut ro.adv,
            (&self.mc, &ro.logp),
            (&b.terminated, &b.truncated),
            (b.rows, learners),
            self.terms,
        );
    }
}

/// Rewrites `adv` (`[T, rows]`, row `arena * learners + slot`) into LOQA's advantages `A*`,
/// from every row's Monte Carlo advantage `mc` and the log-probability `logp` of the action it
/// took. A step whose `terminated` or `truncated` flag is set ends its arena's episode, so the
/// next step starts the past sums afresh.
pub(crate) fn rewrite(
    adv: &mut [f32],
    (mc, logp): (&[f32], &[f32]),
    (terminated, truncated): (&[f32], &[f32]),
    (rows, learners): (usize, usize),
    t: Terms,
) {
    if learners < 2 || rows == 0 || t.weight == 0.0 {
        return;
    }
    let steps = adv.len() / rows;
    let others = (learners - 1) as f32;
    let decay = t.gamma * t.discount;
    // past[i * learners + j]: c_ij, learner i's past sum against opponent j.
    let mut past = vec![0.0f32; learners * learners];
    let mut now = vec![0.0f32; learners];
    for first in (0..rows).step_by(learners) {
        past.fill(0.0);
        for k in 0..steps {
            let at = k * rows + first;
            now.copy_from_slice(&adv[at..at + learners]);
            for (i, a) in adv[at..at + learners].iter_mut().enumerate() {
                let shaped: f32 = (0..learners)
                    .filter(|&j| j != i)
                    .map(|j| past[i * learners + j] * mc[at + j])
                    .sum();
                *a = now[i] + t.weight * t.gamma * shaped / others;
            }
            for i in 0..learners {
                for j in (0..learners).filter(|&j| j != i) {
                    let open = (1.0 - logp[at + j].exp()) / t.temperature;
                    let c = &mut past[i * learners + j];
                    *c = decay * *c + now[i] * open;
                }
            }
            if terminated[at] != 0.0 || truncated[at] != 0.0 {
                past.fill(0.0);
            }
        }
    }
}

/// A LOQA learner for one rank of `job`: IPPO's, its advantages rewritten.
pub fn new(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    device: &Chosen,
    job: &Job,
) -> Result<Ippo, TrainError> {
    let terms = Terms {
        weight: cfg.loqa.weight,
        gamma: cfg.learn.gamma,
        discount: cfg.loqa.discount,
        temperature: cfg.loqa.temperature,
    };
    let shaping = Loqa {
        terms,
        returns: Vec::new(),
        mc: Vec::new(),
    };
    Ippo::shaped(cfg, loaded, (device, job), Box::new(shaping))
}

#[cfg(test)]
mod tests;
