//! VDN (Sunehag et al., 2018) as a replay learner: the team's value is the sum of its
//! learners' values, `Q_tot = sum_i Q_i(o_i, a_i)`, trained by one-step TD on team transitions
//! from a replay, `y = r_team + gamma (1 - terminated) sum_i max_a Q_i^target(o_i', a)`, with
//! `r_team` the sum of the learners' rewards; a truncation bootstraps from the final
//! observations. Each learner acts epsilon-greedily on its own `Q_i`, and the sum's maximum is
//! the sum of the maxima.
//!
//! The replay, its schedule (IQL's rate limiter) and the checkpoints are the team learners'
//! ([`crate::train::kit::team_learner`]); the team loss is [`crate::train::kit::vdn`]'s. This
//! file is the targets and the step.

use crate::critic::{Chosen, Critic, Input};
use crate::dist::Job;
use crate::scenario::LoadedScenario;
use crate::train::algos::iql::td_target;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::kit::schedule::StepValues;
use crate::train::kit::team_learner::{TeamLearner, TeamValue};
use crate::train::kit::team_replay::{TeamBatch, TeamShape};
use crate::train::kit::vdn::team_loss;

/// VDN's team value: the sum of the learners' Q-values.
pub struct Sum;

/// A VDN learner with its arenas.
pub type Vdn = TeamLearner<Sum>;

/// A fresh VDN learner for one rank of `job` (one process: `Job::single()`).
pub fn new(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    device: &Chosen,
    job: &Job,
) -> Result<Vdn, TrainError> {
    TeamLearner::new("vdn", (cfg, loaded), (device, job), Sum)
}

impl TeamValue for Sum {
    fn reads_state(&self) -> bool {
        false
    }

    fn learn(
        &mut self,
        agents: &mut Critic,
        (mb, nets): (&TeamBatch, &[u32]),
        shape: TeamShape,
        step: &StepValues,
    ) -> Result<f32, TrainError> {
        let (n, a) = (shape.learners, shape.actions);
        // Targets: the sum of the learners' best target values after the transition.
        let next = agents.forward_target(Input::U8(&mb.next), nets)?;
        let best = mb.best_next(&next, a);
        let targets: Vec<f32> = (best.chunks_exact(n).enumerate())
            .map(|(p, team)| {
                td_target(
                    mb.rewards[p],
                    mb.terminated[p],
                    team.iter().sum(),
                    step.gamma,
                )
            })
            .collect();
        // The team loss on the chosen actions' values, one step, one Polyak update.
        let out = agents.forward(Input::U8(&mb.obs), nets)?;
        let mut d_out = vec![0.0; out.len()];
        let loss = team_loss(&out, (n, a), &mb.actions, &targets, &mut d_out);
        agents.backward(&d_out)?;
        agents.step(&step.adam)?;
        agents.polyak(step.tau)?;
        Ok(loss)
    }

    fn critics(&mut self) -> Vec<&mut Critic> {
        Vec::new()
    }
}
