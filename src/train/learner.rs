//! The seam every algorithm plugs into: a [`Learner`] owns its arenas and networks, acts,
//! updates, reports, and saves and restores its state. The algorithms are listed in
//! [`super::algos`].

use super::error::TrainError;
use super::kit::stats::UpdateStats;
use super::run::run_dir::{Checkpoint, Resume};
use super::tensors::{NamedTensors, Tensor};
use crate::critic::Critic;
use crate::engine::EnvBatch;

/// Updates and environment steps done, and where the time went since it was last taken.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Updates done.
    pub update: u64,
    /// Environment (arena) steps done.
    pub env_steps: u64,
    /// Seconds stepping arenas since the last [`Learner::take_timing`].
    pub sim_seconds: f64,
    /// Seconds in the critic (acting and learning) since then.
    pub learn_seconds: f64,
}

/// A learning algorithm with its arenas: PQN, IQL, PR2-IQL.
pub trait Learner: Send {
    /// One update: act, store what happened, learn from it; what it did.
    fn update(&mut self) -> Result<UpdateStats, TrainError>;

    /// Greedy actions `[R x N]` for raw observation rows `[R, N, O]` (R arenas' learners in
    /// slot order), e.g. states decoded by exact analysis.
    fn greedy_obs(&mut self, obs: &[u8]) -> Result<Vec<u8>, TrainError> {
        let a = self.batch().layout().actions;
        let values = self.q_values(obs)?;
        // Raw rows carry no mask: exact analysis covers substrates without one.
        Ok(super::kit::explore::greedy_actions(&values, a, None))
    }

    /// The values `[R x N, A]` the learner ranks actions by, for observation rows `[R, N, O]`.
    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError>;

    /// [`Learner::q_values`] for recurrent networks: `hidden` `[R x N, g]` holds the rows'
    /// hidden states and is replaced by the next ones (one acting step). Memoryless networks
    /// take it empty.
    fn q_values_recurrent(
        &mut self,
        obs: &[u8],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, TrainError> {
        if hidden.is_empty() {
            return self.q_values(obs);
        }
        Err(crate::critic::CriticError::Recurrent("this learner's recurrent acting").into())
    }

    /// g: the hidden-state floats each learner carries (0 for memoryless networks).
    fn state_width(&mut self) -> usize {
        self.critics()[0].spec().state_width()
    }

    /// What [`Learner::q_values`] are (`Q`, or `E_rho[Q]` for PR2).
    fn q_label(&self) -> &'static str {
        "Q"
    }

    /// The opponent models' predicted distributions `[B x N, N-1, A]` for the current
    /// observations, or `None` without models (the default: a learner without models).
    fn opponent_predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        Ok(None)
    }

    /// Restores the opponent models' parameters (when the run has models); a learner without
    /// models (the default) takes only none.
    fn set_opponent_params(&mut self, p: &[f32]) -> Result<(), TrainError> {
        crate::error::BadField::check_len("opponent model parameters (none here)", 0, p.len())?;
        Ok(())
    }

    /// The learner's own evolving state beyond parameters and Adam, as JSON; its large arrays
    /// (the replay, the opponent models) go into `extra` instead.
    fn save_state(&mut self, extra: &mut NamedTensors) -> Result<String, TrainError>;

    /// Restores what [`Learner::save_state`] saved, after checking every length and range
    /// against this learner; says whether the run continues exactly.
    fn load_state(&mut self, json: &str, extra: &[(String, Tensor)]) -> Result<Resume, TrainError>;

    /// Updates and steps done and the time spent.
    fn progress(&self) -> &Progress;

    /// The same, to change.
    fn progress_mut(&mut self) -> &mut Progress;

    /// The arenas (replica 0's with several seeds: those evaluation and the viewer look at).
    fn batch(&mut self) -> &mut EnvBatch;

    /// The networks: one stack for a single run, one per replica for a run of several
    /// (replica order). Parameters and Adam's state are these stacks' concatenated.
    fn critics(&mut self) -> Vec<&mut Critic>;

    /// Every network's parameters, the stacks' one after the other.
    fn params(&mut self) -> Result<Vec<f32>, TrainError> {
        let mut out = Vec::new();
        for c in self.critics() {
            out.extend(c.params()?);
        }
        Ok(out)
    }

    /// Replaces every network's parameters (the layout of [`Learner::params`]); refused,
    /// changing nothing, unless the length is theirs.
    fn set_params(&mut self, params: &[f32]) -> Result<(), TrainError> {
        let mut critics = self.critics();
        let lens: Vec<usize> = critics.iter().map(|c| c.spec().params()).collect();
        crate::critic::check_len("parameters", lens.iter().sum(), params.len())?;
        let mut at = 0;
        for (c, n) in critics.iter_mut().zip(lens) {
            c.set_params(&params[at..at + n])?;
            at += n;
        }
        Ok(())
    }

    /// Adam's moments of every network (the layout of [`Learner::params`]) and the largest
    /// step count.
    fn adam_state(&mut self) -> Result<(Vec<f32>, Vec<f32>, u64), TrainError> {
        let (mut m, mut v, mut steps) = (Vec::new(), Vec::new(), 0);
        for c in self.critics() {
            let (cm, cv, cs) = c.adam_state()?;
            m.extend(cm);
            v.extend(cv);
            steps = steps.max(cs);
        }
        Ok((m, v, steps))
    }

    /// Restores Adam's moments (the layout of [`Learner::params`]) with one step count for
    /// every network; refused, changing nothing, unless the lengths are theirs.
    fn set_adam_state(&mut self, m: &[f32], v: &[f32], steps: u64) -> Result<(), TrainError> {
        let mut critics = self.critics();
        let lens: Vec<usize> = critics.iter().map(|c| c.spec().params()).collect();
        let total = lens.iter().sum();
        crate::critic::check_len("adam state (first moments)", total, m.len())?;
        crate::critic::check_len("adam state (second moments)", total, v.len())?;
        let mut at = 0;
        for (c, n) in critics.iter_mut().zip(lens) {
            c.set_adam_state(&m[at..at + n], &v[at..at + n], steps)?;
            at += n;
        }
        Ok(())
    }

    /// Updates done.
    fn updates_done(&self) -> u64 {
        self.progress().update
    }

    /// Environment steps done.
    fn env_steps(&self) -> u64 {
        self.progress().env_steps
    }

    /// Seconds in simulation and learning since the last call.
    fn take_timing(&mut self) -> (f64, f64) {
        let p = self.progress_mut();
        let t = (p.sim_seconds, p.learn_seconds);
        p.sim_seconds = 0.0;
        p.learn_seconds = 0.0;
        t
    }

    /// Runs the opponent models on the current observations and writes each learner's
    /// predicted distributions for the others into its [`crate::components::OpponentModel`]
    /// component (the viewer reads them there). PR2's conditional models predict at the
    /// learner's greedy action. Returns whether the run has opponent models.
    fn predict_opponents(&mut self) -> Result<bool, TrainError> {
        match self.opponent_predictions()? {
            Some(p) => {
                self.batch().set_opponent_predictions(&p)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Everything a checkpoint holds: parameters, Adam, the learner's state and its extra
    /// tensors.
    fn checkpoint(&mut self) -> Result<Checkpoint, TrainError> {
        let update = self.updates_done();
        let params = self.params()?;
        if let Some(v) = params.iter().find(|v| !v.is_finite()) {
            return Err(TrainError::NonFinite {
                update,
                tensor: "parameters".into(),
                value: *v,
            });
        }
        let (adam_m, adam_v, adam_steps) = self.adam_state()?;
        let mut extra = NamedTensors::new();
        let state = self.save_state(&mut extra)?;
        Ok(Checkpoint {
            update,
            params,
            adam_m,
            adam_v,
            adam_steps,
            state,
            extra,
        })
    }
}

/// A learner of any algorithm.
pub type BoxedLearner = Box<dyn Learner>;
