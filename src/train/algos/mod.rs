//! The algorithms, one module each, and their registry: [`new_learner`] builds the configured
//! algorithm's [`Learner`](crate::train::Learner) and the memory preflight sizes its tensors
//! through [`algorithm`]. Adding an algorithm adds a file and one line to [`algorithm`].

pub mod advantage_alignment;
pub mod ippo;
pub mod iql;
pub mod loqa;
pub mod mappo;
pub mod online_dqn;
pub mod pqn;
pub mod pqn_vdn;
pub mod pr2;
pub mod qmix;
pub mod vdn;

use crate::critic::{Backend, Chosen};
use crate::dist::Job;
use crate::layout::Layout;
use crate::scenario::LoadedScenario;
use crate::train::config::{Algo, RunConfig};
use crate::train::error::TrainError;
use crate::train::learner::BoxedLearner;
use crate::train::preflight::sizing::{self, GpuSizing, PlanTensor};
use crate::train::replicated::Replicated;

/// How to build an algorithm's learner and size its tensors before it allocates them.
pub(crate) struct Algorithm {
    /// A fresh learner.
    pub new: fn(&RunConfig, &LoadedScenario, &Chosen, &Job) -> Result<BoxedLearner, TrainError>,
    /// The memory preflight's tensors of a run.
    pub plan: fn(&RunConfig, &LoadedScenario, &Layout, Backend) -> Vec<PlanTensor>,
    /// The stacks it keeps on a GPU, for the device half of the preflight.
    pub gpu: fn(&RunConfig, &LoadedScenario, &Layout) -> GpuSizing,
}

/// The registry: one line per algorithm.
pub(crate) fn algorithm(algo: Algo) -> Algorithm {
    match algo {
        Algo::Pqn => Algorithm {
            new: |c, l, d, j| Ok(Box::new(pqn::Pqn::new_in(c, l, d, j)?)),
            plan: sizing::pqn_plan,
            gpu: sizing::pqn_gpu,
        },
        Algo::Iql => Algorithm {
            new: iql::Iql::boxed,
            plan: sizing::iql_plan,
            gpu: sizing::iql_gpu,
        },
        Algo::OnlineDqn => Algorithm {
            new: |c, l, d, j| Ok(Box::new(online_dqn::OnlineDqn::new(c, l, d, j)?)),
            plan: sizing::pqn_plan,
            gpu: sizing::pqn_gpu,
        },
        Algo::Ippo => Algorithm {
            new: |c, l, d, j| Ok(Box::new(ippo::Ippo::new(c, l, d, j)?)),
            plan: crate::train::preflight::ppo::ippo_plan,
            gpu: crate::train::preflight::ppo::ippo_gpu,
        },
        Algo::Mappo => Algorithm {
            new: |c, l, d, j| Ok(Box::new(mappo::Mappo::new(c, l, d, j)?)),
            plan: crate::train::preflight::ppo::mappo_plan,
            gpu: crate::train::preflight::ppo::mappo_gpu,
        },
        Algo::PqnVdn => Algorithm {
            new: |c, l, d, j| Ok(Box::new(pqn_vdn::PqnVdn::new(c, l, d, j)?)),
            plan: sizing::pqn_plan,
            gpu: sizing::pqn_gpu,
        },
        Algo::Vdn => Algorithm {
            new: |c, l, d, j| Ok(Box::new(vdn::new(c, l, d, j)?)),
            plan: crate::train::preflight::team::vdn_plan,
            gpu: sizing::iql_gpu,
        },
        Algo::Qmix => Algorithm {
            new: |c, l, d, j| Ok(Box::new(qmix::new(c, l, d, j)?)),
            plan: crate::train::preflight::team::qmix_plan,
            gpu: sizing::iql_gpu,
        },
        Algo::AdvantageAlignment => Algorithm {
            new: |c, l, d, j| Ok(Box::new(advantage_alignment::new(c, l, d, j)?)),
            plan: crate::train::preflight::ppo::ippo_plan,
            gpu: crate::train::preflight::ppo::ippo_gpu,
        },
        Algo::Loqa => Algorithm {
            new: |c, l, d, j| Ok(Box::new(loqa::new(c, l, d, j)?)),
            plan: crate::train::preflight::ppo::ippo_plan,
            gpu: crate::train::preflight::ppo::ippo_gpu,
        },
        Algo::Pr2Iql => Algorithm {
            new: pr2::Pr2Iql::boxed,
            plan: crate::train::preflight::pr2::plan,
            gpu: crate::train::preflight::pr2::gpu,
        },
    }
}

/// A fresh learner for the configuration's algorithm (one process).
pub fn new_learner(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    device: &Chosen,
) -> Result<BoxedLearner, TrainError> {
    new_learner_in(cfg, loaded, device, &Job::single())
}

/// A fresh learner for rank `job.rank()` of a data-parallel job: its arenas are the job's
/// arenas `rank x arenas ..`, and its optimiser steps average the gradients over the ranks.
pub fn new_learner_in(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    device: &Chosen,
    job: &Job,
) -> Result<BoxedLearner, TrainError> {
    let new = algorithm(cfg.algo).new;
    let replicas = cfg
        .replicas()
        .map_err(|e| TrainError::Config(e.to_string()))?;
    if let [one] = &replicas[..] {
        return new(&one.cfg, loaded, device, job);
    }
    // Several replicas: one single run each, under the replica layer.
    let runs = replicas
        .iter()
        .map(|r| new(&r.cfg, loaded, device, job))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Box::new(Replicated::new(runs)))
}
