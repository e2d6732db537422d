//! The replica layer: a run of several replicas (sweep grid points x seeds, see
//! [`super::config::sweep`]) is one single run per replica, each built by its algorithm from the
//! replica's own configuration (its seed, its swept values) with its own arenas, random
//! streams and networks, and updated one after the other. No algorithm knows it has siblings,
//! so replica k computes exactly what a single run with its configuration computes, and a new
//! algorithm gets seeds and sweeps without code of its own.
//!
//! What the layer owns: the reports (replica 0's scalars and episodes as the run's, every
//! replica's beside them), the checkpoint (every replica's state under `replicas` in
//! `state.json`, its extra tensors under `replica.<r>.`, every replica's parameters and Adam
//! moments one after the other in the checkpoint's tensors), and acting for evaluation and the
//! viewer (replica 0).

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::error::TrainError;
use super::kit::stats::UpdateStats;
use super::learner::{BoxedLearner, Learner, Progress};
use super::run::run_dir::Resume;
use super::tensors::{NamedTensors, Tensor};
use crate::critic::Critic;
use crate::engine::EnvBatch;
use crate::error::BadField;

/// Several single runs trained together.
pub(crate) struct Replicated {
    runs: Vec<BoxedLearner>,
    /// Replica 0's counts, and the time every replica spent since it was last taken.
    progress: Progress,
}

/// `state.json` of a run of several replicas: each replica's own state, as its algorithm
/// writes it for a single run.
#[derive(Serialize, Deserialize)]
struct ReplicatedState {
    replicas: Vec<Box<RawValue>>,
    /// Each replica's networks' Adam step counts (replicas whose rate limiters let them learn
    /// at their own moments count different steps; the checkpoint's one count is the largest,
    /// which every network takes when this is empty).
    #[serde(default)]
    net_steps: Vec<Vec<u64>>,
}

/// Where replica `r`'s extra tensors go in a checkpoint of several replicas.
fn prefix(r: usize) -> String {
    format!("replica.{r}.")
}

impl Replicated {
    /// The replicas' runs, replica 0 first (at least two).
    pub(crate) fn new(runs: Vec<BoxedLearner>) -> Replicated {
        let mut r = Replicated {
            runs,
            progress: Progress::default(),
        };
        r.sync_progress();
        r
    }

    fn sync_progress(&mut self) {
        self.progress.update = self.runs[0].updates_done();
        self.progress.env_steps = self.runs[0].env_steps();
    }
}

/// One update's report of every replica: replica 0's scalars and episodes, every replica's
/// beside them; the loss is the replicas' mean.
fn merge(all: Vec<UpdateStats>) -> UpdateStats {
    let loss = all.iter().map(|s| s.loss as f64).sum::<f64>() / all.len() as f64;
    let replica_scalars = all.iter().map(|s| (s.epsilon, s.lr)).collect();
    let opponents_per_replica = match all[0].opponents.is_some() {
        true => all.iter().filter_map(|s| s.opponents.clone()).collect(),
        false => Vec::new(),
    };
    let per_replica: Vec<_> = all.iter().map(|s| s.episodes.clone()).collect();
    let first = all.into_iter().next().expect("a run of several replicas");
    UpdateStats {
        loss: loss as f32,
        replica_scalars,
        per_replica,
        opponents_per_replica,
        ..first
    }
}

impl Learner for Replicated {
    fn update(&mut self) -> Result<UpdateStats, TrainError> {
        let mut all = Vec::with_capacity(self.runs.len());
        for run in &mut self.runs {
            all.push(run.update()?);
        }
        self.sync_progress();
        Ok(merge(all))
    }

    fn q_values(&mut self, obs: &[u8]) -> Result<Vec<f32>, TrainError> {
        self.runs[0].q_values(obs)
    }

    fn q_values_recurrent(
        &mut self,
        obs: &[u8],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, TrainError> {
        self.runs[0].q_values_recurrent(obs, hidden)
    }

    fn q_label(&self) -> &'static str {
        self.runs[0].q_label()
    }

    fn opponent_predictions(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        self.runs[0].opponent_predictions()
    }

    fn set_opponent_params(&mut self, p: &[f32]) -> Result<(), TrainError> {
        self.runs[0].set_opponent_params(p)
    }

    fn save_state(&mut self, extra: &mut NamedTensors) -> Result<String, TrainError> {
        let mut replicas = Vec::with_capacity(self.runs.len());
        for (r, run) in self.runs.iter_mut().enumerate() {
            let mut own = NamedTensors::new();
            let json = run.save_state(&mut own)?;
            extra.extend(own.into_iter().map(|(n, t)| (prefix(r) + &n, t)));
            replicas.push(RawValue::from_string(json)?);
        }
        let net_steps = self
            .runs
            .iter_mut()
            .map(|run| {
                run.critics()
                    .iter()
                    .flat_map(|c| c.net_steps().to_vec())
                    .collect()
            })
            .collect();
        Ok(serde_json::to_string(&ReplicatedState {
            replicas,
            net_steps,
        })?)
    }

    fn load_state(&mut self, json: &str, extra: &[(String, Tensor)]) -> Result<Resume, TrainError> {
        let s: ReplicatedState = serde_json::from_str(json).map_err(|e| {
            BadField::range(
                "state.json",
                "one state per replica (checkpoints of several replicas written by earlier \
                 versions, one stacked state, do not resume)",
                e,
            )
        })?;
        BadField::check_len("replicas", self.runs.len(), s.replicas.len())?;
        if !s.net_steps.is_empty() {
            BadField::check_len("net_steps", self.runs.len(), s.net_steps.len())?;
        }
        for (run, steps) in self.runs.iter_mut().zip(&s.net_steps) {
            let nets = run.critics().iter().map(|c| c.spec().nets).sum();
            BadField::check_len("net_steps of a replica", nets, steps.len())?;
        }
        let mut resume = Resume::Exact;
        for (r, (run, state)) in self.runs.iter_mut().zip(&s.replicas).enumerate() {
            // One replica's tensors at a time, under their single-run names.
            let p = prefix(r);
            let own: Vec<(String, Tensor)> = extra
                .iter()
                .filter_map(|(n, t)| Some((n.strip_prefix(&p)?.to_string(), t.clone())))
                .collect();
            resume = resume.and(run.load_state(state.get(), &own)?);
            let Some(mut steps) = s.net_steps.get(r).map(|s| &s[..]) else {
                continue;
            };
            for c in run.critics() {
                let (mine, rest) = steps.split_at(c.spec().nets);
                c.set_net_steps(mine)?;
                steps = rest;
            }
        }
        self.sync_progress();
        Ok(resume)
    }

    fn progress(&self) -> &Progress {
        &self.progress
    }

    fn progress_mut(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn take_timing(&mut self) -> (f64, f64) {
        self.runs.iter_mut().fold((0.0, 0.0), |(s, l), run| {
            let (rs, rl) = run.take_timing();
            (s + rs, l + rl)
        })
    }

    fn batch(&mut self) -> &mut EnvBatch {
        self.runs[0].batch()
    }

    fn critics(&mut self) -> Vec<&mut Critic> {
        self.runs.iter_mut().flat_map(|r| r.critics()).collect()
    }
}
