//! PR2-IQL's shapes: the critic head and stack a configuration asks for, the rows of a learner
//! step and of its largest pass, and the sequences the replay holds (the memory preflight
//! sizes its tensors from them, `preflight/pr2.rs`).

use crate::critic::StackSpec;
use crate::critic::pr2::{HeadForm, Pr2Head};
use crate::critic::pr2_loss::{Pr2Loss, Pr2ValueLoss};
use crate::scenario::LoadedScenario;
use crate::train::config::{CriticForm, RunConfig};
use crate::train::kit::q_head::QHead;

/// The critic head a configuration asks for.
pub fn head(cfg: &RunConfig, learners: usize, actions: usize) -> Pr2Head {
    Pr2Head {
        agents: learners,
        actions,
        form: match (cfg.pr2.critic, cfg.pr2.pair_rank) {
            (CriticForm::Joint, _) => HeadForm::Joint,
            (CriticForm::Factorized, 0) => HeadForm::Pairwise,
            (CriticForm::Factorized, k) => HeadForm::LowRank(k),
        },
    }
}

/// The critic's network row a configuration asks for: the head and its value loss (`loss`;
/// `default` is Huber with `huber_delta`; `hl_gauss` makes the categorical entries `bins` wide
/// and keeps Huber with `huber_delta` for the pairwise terms).
pub fn critic_row(cfg: &RunConfig, learners: usize, actions: usize) -> Pr2Loss {
    Pr2Loss {
        head: head(cfg, learners, actions),
        loss: match QHead::of(cfg) {
            QHead::Mse => Pr2ValueLoss::Mse,
            QHead::Huber(delta) => Pr2ValueLoss::Huber(delta),
            QHead::HlGauss(support) => Pr2ValueLoss::HlGauss {
                support,
                delta: cfg.learn.huber_delta,
            },
        },
    }
}

/// The critic stack: one network per learner with the PR2 head and its loss's outputs.
pub fn stack_spec(cfg: &RunConfig, loaded: &LoadedScenario) -> StackSpec {
    let learners = loaded.scenario.learners_per_arena();
    let actions = loaded.scenario.action_set().len();
    StackSpec {
        network: crate::train::kit::qnet::network(cfg),
        nets: learners,
        input: loaded.scenario.observation_len(),
        hidden: cfg.network.hidden,
        layers: cfg.network.layers,
        head: critic_row(cfg, learners, actions).width(),
    }
}

/// Rows of one learner step's passes: `(rollout + 1) x buffer_batch_size x learners`.
pub fn batch_rows(cfg: &RunConfig, learners: usize) -> usize {
    (cfg.rollout + 1) * cfg.pr2.buffer_batch_size * learners
}

/// Sequences the replay holds.
pub fn replay_sequences(cfg: &RunConfig) -> usize {
    (cfg.iql.replay_capacity / cfg.rollout.max(1)).max(cfg.pr2.buffer_batch_size)
}

/// Rows of the largest critic pass: a training minibatch, `(rollout + 1) x
/// buffer_batch_size x learners / minibatches` rows (target passes are chunked to the same).
pub fn pass_rows(cfg: &RunConfig, learners: usize) -> usize {
    batch_rows(cfg, learners)
        .div_ceil(cfg.pr2.minibatches.max(1))
        .max(1)
}
