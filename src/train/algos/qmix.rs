//! QMIX (Rashid et al., 2018) as a replay learner: the team's value mixes the learners'
//! chosen values through a monotonic network whose weights come from hypernetworks over the
//! arena's global state,
//! `Q_tot = |w2(s)|^T ELU(q^T |W1(s)| + b1(s)) + v(s)` ([`crate::critic::mixer`]),
//! trained by one-step TD on team transitions from a replay,
//! `y = r_team + gamma (1 - terminated) Q_tot^target(max_a Q_i^target(o_i', a), s')`, with
//! `r_team` the sum of the learners' rewards; a truncation bootstraps from the final
//! observations and state. Since `dQ_tot/dq_i >= 0`, each learner acting greedily on its own
//! `Q_i` acts greedily for the team.
//!
//! The hypernetworks are one stack of one network (Linear -> LayerNorm -> ReLU of
//! `qmix.hyper_hidden` units, then a head of `N x E + 2 E + 1` outputs: W1, b1, w2 and v);
//! pymarl and JaxMARL use separate towers per output without LayerNorm. Both the agents'
//! networks and the hypernetworks have target copies, Polyak-averaged by `target_tau`, and each
//! stack clips its own gradient norm (`max_grad_norm`). The replay, schedule and checkpoints
//! are the team learners' ([`crate::train::kit::team_learner`]). Configuration read here:
//! `qmix` (`embed`, `hyper_hidden`) beside what the team learners read.

use crate::critic::mixer::{Mixer, MixerShape};
use crate::critic::{Chosen, Critic, Input, StackSpec};
use crate::dist::Job;
use crate::scenario::LoadedScenario;
use crate::train::algos::iql::td_target;
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::kit::schedule::StepValues;
use crate::train::kit::team_learner::{TeamLearner, TeamValue};
use crate::train::kit::team_replay::{TeamBatch, TeamShape};

/// QMIX's team value: the hypernetworks and the mixer.
pub struct Mixing {
    /// The hypernetworks over the global state, one row per team.
    hyper: Critic,
    mixer: Mixer,
}

/// A QMIX learner with its arenas.
pub type Qmix = TeamLearner<Mixing>;

/// The hypernetworks' stack for a run of `cfg` on `loaded`.
pub(crate) fn hyper_spec(cfg: &RunConfig, loaded: &LoadedScenario) -> StackSpec {
    let shape = MixerShape {
        agents: loaded.scenario.learners_per_arena(),
        embed: cfg.qmix.embed,
    };
    StackSpec {
        nets: 1,
        input: loaded.scenario.global_state_len(),
        hidden: cfg.qmix.hyper_hidden,
        layers: 1,
        head: shape.hyper_width(),
        network: Default::default(),
    }
}

/// A fresh QMIX learner for one rank of `job` (one process: `Job::single()`).
pub fn new(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    device: &Chosen,
    job: &Job,
) -> Result<Qmix, TrainError> {
    let spec = hyper_spec(cfg, loaded);
    let seed = cfg.seed ^ 0x6879_7065_7200_0000;
    let hyper = Critic::new(spec, seed, device)?.data_parallel(job);
    let shape = MixerShape {
        agents: loaded.scenario.learners_per_arena(),
        embed: cfg.qmix.embed,
    };
    let mixing = Mixing {
        hyper,
        mixer: Mixer::new(shape, device)?,
    };
    TeamLearner::new("qmix", (cfg, loaded), (device, job), mixing)
}

impl TeamValue for Mixing {
    fn reads_state(&self) -> bool {
        true
    }

    fn learn(
        &mut self,
        agents: &mut Critic,
        (mb, nets): (&TeamBatch, &[u32]),
        shape: TeamShape,
        step: &StepValues,
    ) -> Result<f32, TrainError> {
        let (n, a, teams) = (shape.learners, shape.actions, mb.teams());
        let one_net = vec![0u32; teams];
        // Targets: the target mixer over the learners' best target values and the next state.
        let next = agents.forward_target(Input::U8(&mb.next), nets)?;
        let best = mb.best_next(&next, a);
        let hyper_next = self
            .hyper
            .forward_target(Input::U8(&mb.next_state), &one_net)?;
        let tot_next = self.mixer.mix(&best, &hyper_next)?;
        let targets: Vec<f32> = (0..teams)
            .map(|p| td_target(mb.rewards[p], mb.terminated[p], tot_next[p], step.gamma))
            .collect();
        // The online mixer over the chosen actions' values and the state.
        let out = agents.forward(Input::U8(&mb.obs), nets)?;
        let chosen: Vec<f32> = (0..teams * n)
            .map(|row| out[row * a + mb.actions[row] as usize])
            .collect();
        let hyper_out = self.hyper.forward(Input::U8(&mb.state), &one_net)?;
        let mixed = self.mixer.loss(&chosen, &hyper_out, &targets)?;
        // Gradients back into both stacks, one step each, one Polyak update each.
        let mut d_out = vec![0.0; out.len()];
        for (row, g) in mixed.d_q.iter().enumerate() {
            d_out[row * a + mb.actions[row] as usize] = *g;
        }
        agents.backward(&d_out)?;
        self.hyper.backward(&mixed.d_hyper)?;
        agents.step(&step.adam)?;
        self.hyper.step(&step.adam)?;
        agents.polyak(step.tau)?;
        self.hyper.polyak(step.tau)?;
        Ok(mixed.loss)
    }

    fn critics(&mut self) -> Vec<&mut Critic> {
        vec![&mut self.hyper]
    }
}
