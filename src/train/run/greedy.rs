//! A trained run's greedy policy: a learner restored from the newest checkpoint of a run
//! directory, acting greedily through the [`Policy`] seam (evaluation, the viewer, analysis and,
//! later, Python's `load_policy` all open runs here).

use std::path::Path;

use super::run_dir::RunDir;
use super::{RunError, trained_scenario};
use crate::critic::{Chosen, Device, choose_device};
use crate::policy::{Policy, PolicyError};
use crate::scenario::LoadedScenario;
use crate::train::algos::new_learner;
use crate::train::config::RunConfig;
use crate::train::learner::{BoxedLearner, Learner};

/// The greedy policy of a learner's networks. With recurrent networks it keeps every acting
/// row's hidden state (`[R x N, g]` for the R arenas it last acted in), zeroed for the arenas
/// [`Policy::episodes_start`] names and whenever R changes.
pub struct GreedyPolicy {
    learner: BoxedLearner,
    update: u64,
    /// g (0: memoryless networks).
    width: usize,
    hidden: Vec<f32>,
    /// The observations of the last [`Policy::actions`] and their values (what
    /// [`Policy::q_values`] reports for the same observations without stepping again).
    last: Option<(Vec<u8>, Vec<f32>)>,
}

impl GreedyPolicy {
    /// Acts with `learner`'s current networks.
    pub fn new(mut learner: BoxedLearner) -> GreedyPolicy {
        let update = learner.updates_done();
        GreedyPolicy {
            width: learner.state_width(),
            learner,
            update,
            hidden: Vec::new(),
            last: None,
        }
    }

    /// `learner` with the parameters (and opponent models) of `dir`'s newest checkpoint.
    /// A multi-seed or sweep run stores every replica's networks, replica 0's first: those are
    /// taken.
    pub fn restore(learner: BoxedLearner, dir: &RunDir) -> Result<GreedyPolicy, RunError> {
        GreedyPolicy::restore_replica(learner, dir, 0)
    }

    /// [`GreedyPolicy::restore`] with replica `replica`'s networks (the replica-th block of
    /// the checkpoint's parameters).
    pub fn restore_replica(
        mut learner: BoxedLearner,
        dir: &RunDir,
        replica: usize,
    ) -> Result<GreedyPolicy, RunError> {
        let c = dir.load_latest()?;
        let bad = |reason: String| RunError::Checkpoint {
            path: dir.path.clone(),
            reason,
        };
        let n = learner.params()?.len();
        if c.params.len() < n || !c.params.len().is_multiple_of(n.max(1)) {
            return Err(bad(format!(
                "{} parameters do not fit this scenario's networks ({n} expected, or a multiple for a multi-seed run)",
                c.params.len()
            )));
        }
        let held = c.params.len() / n.max(1);
        if replica >= held {
            return Err(bad(format!(
                "replica {replica} asked; the checkpoint holds {held} replicas' networks"
            )));
        }
        let block = &c.params[replica * n..(replica + 1) * n];
        learner.set_params(block).map_err(|e| {
            bad(format!(
                "parameters do not fit this scenario's networks: {e}"
            ))
        })?;
        // Opponent models (PR2 with `rho: model` acts through them): a tensor of the
        // checkpoint, or in the state of checkpoints written before the tensors existed.
        // A run of several replicas keeps each replica's models under its `replica.<r>.`.
        let own = format!("replica.{replica}.models.params");
        let models = match crate::train::tensors::find(&c.extra, &own)
            .filter(|_| held > 1)
            .or_else(|| crate::train::tensors::find(&c.extra, "models.params"))
        {
            Some(crate::train::tensors::Tensor::F32(p)) => Some(p.clone()),
            _ => serde_json::from_str::<serde_json::Value>(&c.state)
                .ok()
                .and_then(|v| serde_json::from_value::<Vec<f32>>(v.get("models")?.clone()).ok()),
        };
        if let Some(m) = models {
            // A multi-replica checkpoint holds every replica's models: replica `replica`'s block
            // (a learner of the whole run takes them all).
            // Checkpoints of earlier versions stacked every replica's models in one tensor.
            let block = m.len() / held;
            let stacked = held > 1 && crate::train::tensors::find(&c.extra, &own).is_none();
            let m = match stacked && m.len().is_multiple_of(held) {
                true => &m[replica * block..(replica + 1) * block],
                false => &m[..],
            };
            learner
                .set_opponent_params(m)
                .map_err(|e| bad(format!("opponent models do not fit: {e}")))?;
        }
        let mut policy = GreedyPolicy::new(learner);
        policy.update = c.update;
        Ok(policy)
    }

    /// A learner for `cfg` on `loaded`, restored from the newest checkpoint of the run `run`.
    pub fn from_run(
        run: &Path,
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        device: &Chosen,
    ) -> Result<GreedyPolicy, RunError> {
        let dir = RunDir::open(run)?;
        GreedyPolicy::restore(new_learner(cfg, loaded, device)?, &dir)
    }

    /// The update of the checkpoint the networks come from.
    pub fn update(&self) -> u64 {
        self.update
    }

    /// The Euclidean norm of each acting row's hidden state, `[R x N]` for the R arenas it last
    /// acted in (empty for memoryless networks or before the first action): the state the
    /// next action of each row starts from.
    pub fn hidden_norms(&self) -> Vec<f32> {
        if self.width == 0 {
            return Vec::new();
        }
        self.hidden
            .chunks_exact(self.width)
            .map(|h| h.iter().map(|v| v * v).sum::<f32>().sqrt())
            .collect()
    }

    /// The learner behind the policy (its arenas, networks and opponent models).
    pub fn learner(&mut self) -> &mut dyn Learner {
        self.learner.as_mut()
    }
}

fn learner_error(e: crate::train::TrainError) -> PolicyError {
    PolicyError::Learner(Box::new(e))
}

impl GreedyPolicy {
    /// The hidden states for observation rows `obs` (zeros when the arena count changed).
    fn hidden_for(&mut self, obs: &[u8]) -> &mut Vec<f32> {
        let o = self.learner.batch().layout().obs_len;
        let len = obs.len() / o.max(1) * self.width;
        if self.hidden.len() != len {
            self.hidden.clear();
            self.hidden.resize(len, 0.0);
        }
        &mut self.hidden
    }

    /// The values of `obs`, advancing the hidden states when `step` (a copy otherwise).
    fn values(&mut self, obs: &[u8], step: bool) -> Result<Vec<f32>, PolicyError> {
        if self.width == 0 {
            return self.learner.q_values(obs).map_err(learner_error);
        }
        let mut hidden = std::mem::take(self.hidden_for(obs));
        let q = if step {
            self.learner.q_values_recurrent(obs, &mut hidden)
        } else {
            self.learner.q_values_recurrent(obs, &mut hidden.clone())
        };
        self.hidden = hidden;
        q.map_err(learner_error)
    }
}

impl Policy for GreedyPolicy {
    fn actions(&mut self, obs: &[u8], out: &mut [u8]) -> Result<(), PolicyError> {
        self.actions_within(obs, None, out)
    }

    /// The greedy action among the legal ones.
    fn actions_within(
        &mut self,
        obs: &[u8],
        mask: Option<&[u8]>,
        out: &mut [u8],
    ) -> Result<(), PolicyError> {
        let values = self.values(obs, true)?;
        let a = self.learner.batch().layout().actions;
        if mask.is_some_and(|m| m.len() != values.len()) {
            return Err(PolicyError::Shape {
                what: "action mask",
                expected: values.len(),
                got: mask.map_or(0, <[u8]>::len),
            });
        }
        let actions = crate::train::kit::explore::greedy_actions(&values, a, mask);
        if actions.len() != out.len() {
            return Err(PolicyError::Shape {
                what: "greedy actions",
                expected: out.len(),
                got: actions.len(),
            });
        }
        out.copy_from_slice(&actions);
        if self.width > 0 {
            self.last = Some((obs.to_vec(), values));
        }
        Ok(())
    }

    /// With recurrent networks, the values of the last [`Policy::actions`] when `obs` are its
    /// observations; otherwise the values the current hidden states give (not advancing them).
    fn q_values(&mut self, obs: &[u8]) -> Result<Option<Vec<f32>>, PolicyError> {
        if let Some((seen, values)) = &self.last
            && seen == obs
        {
            return Ok(Some(values.clone()));
        }
        self.values(obs, false).map(Some)
    }

    fn episodes_start(&mut self, started: &[bool]) {
        if self.width == 0 || started.is_empty() {
            return;
        }
        let per = self.hidden.len() / started.len();
        for (h, &s) in self.hidden.chunks_exact_mut(per.max(1)).zip(started) {
            if s {
                h.fill(0.0);
            }
        }
        self.last = None;
    }

    fn has_memory(&self) -> bool {
        self.width > 0
    }
}

/// The greedy policy of the run in `run` for one arena on the CPU: its configuration, the
/// scenario it trained on (`scenario.ron`, else the configured one) and its newest checkpoint.
pub fn load_policy(run: &Path) -> Result<GreedyPolicy, RunError> {
    let mut cfg = RunDir::load_config(run)?;
    cfg.arenas = 1;
    // Acting never runs the rate limiter: its error buffer (sized for the training arenas)
    // must not refuse these arenas; 0 takes the loop's default.
    cfg.iql.rate_error_buffer = 0.0;
    cfg.seeds = 1;
    cfg.sweep.clear();
    cfg.device = Device::Cpu;
    let loaded = trained_scenario(run, &cfg)?;
    GreedyPolicy::from_run(run, &cfg, &loaded, &choose_device(Device::Cpu)?)
}
