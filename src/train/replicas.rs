//! What the replay learners (IQL, PR2-IQL) share when one network stack holds several replicas
//! (seeds x sweep grid points, see `train::sweep`): each replica's per-step values, the
//! optimiser step and target update with each network's replica's values (masked to the
//! replicas that learn this time), the checkpoint of several replicas (each replica's
//! streams, limiter, arenas and replay under `replica.<r>.`), and each update's values and
//! report per replica.

use serde::{Deserialize, Serialize};

use super::config::RunConfig;
use super::error::TrainError;
use super::learner::Progress;
use super::opponent::{ModelsState, OpponentNetworks, OpponentScores, load_models, save_models};
use super::replay::{ReplayColumns, ReplayCore, ReplayState, restore_target};
use super::run_dir::Resume;
use super::schedule::{epsilon_by_steps, optimiser};
use super::stats::UpdateStats;
use super::sweep::Replica;
use super::tensors::{NamedTensors, Tensor, f32s};
use crate::critic::{AdamConfig, Chosen, Critic, NetOptim, StackSpec};
use crate::dist::Job;
use crate::engine::EnvBatch;
use crate::error::BadField;
use crate::metrics::EpisodeSummary;

// ------------------------------------------------------------------------------------------
// The stack
// ------------------------------------------------------------------------------------------

/// The critic stack of every replica in `reps`, replica r's networks the r-th block of
/// `single`'s, initialised with its own seed as a single run's are (its targets copies of
/// them); one replica's is a single run's critic, seeded with `seed`. Returns the stack and
/// its shape.
pub(crate) fn replicas_critic(
    single: StackSpec,
    (seed, reps): (u64, &[Replica]),
    (device, job): (&Chosen, &Job),
) -> Result<(Critic, StackSpec), TrainError> {
    let spec = StackSpec {
        nets: single.nets * reps.len(),
        ..single
    };
    // One replica: its own seed (a rank's one-replica share of a split run may be replica k > 0).
    let seed = reps.first().map_or(seed, |r| r.cfg.seed);
    let mut critic = Critic::new(spec, seed, device)?.data_parallel(job);
    if reps.len() > 1 {
        let params: Vec<f32> = reps
            .iter()
            .flat_map(|r| crate::critic::init_params(&single, r.cfg.seed))
            .collect();
        critic.set_params(&params)?;
        // The targets start as copies of the online networks, as a single run's do.
        critic.polyak(1.0)?;
    }
    Ok((critic, spec))
}

// ------------------------------------------------------------------------------------------
// Per-replica values of a learner step
// ------------------------------------------------------------------------------------------

/// One replica's values a learner step reads: its discount, Polyak factor and optimiser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StepValues {
    /// Discount of the TD targets.
    pub gamma: f32,
    /// Polyak factor of the target networks.
    pub tau: f32,
    /// Learning rate and gradient clip (the rest is shared by the stack).
    pub adam: AdamConfig,
}

impl StepValues {
    /// A replica's values at an update whose optimiser is `adam`.
    pub(crate) fn of(cfg: &RunConfig, adam: AdamConfig) -> StepValues {
        StepValues {
            gamma: cfg.learn.gamma,
            tau: cfg.iql.target_tau,
            adam,
        }
    }
}

/// The optimiser step: one setting for the whole stack unless the replicas' differ, then each
/// network (replica r's are the r-th block of `nets_per_replica`) with its replica's learning
/// rate and clip.
pub(crate) fn optimiser_step(
    critic: &mut Critic,
    values: &[StepValues],
    nets_per_replica: usize,
) -> Result<(), TrainError> {
    let first = values[0];
    if values.iter().all(|v| v.adam == first.adam) {
        critic.step(&first.adam)?;
    } else {
        let nets: Vec<NetOptim> = values
            .iter()
            .flat_map(|v| std::iter::repeat_n(NetOptim::from(&v.adam), nets_per_replica))
            .collect();
        critic.step_nets(&first.adam, &nets)?;
    }
    Ok(())
}

/// The Polyak update of the target networks: one factor for the whole stack unless the
/// replicas' differ, then each network with its replica's `target_tau`.
pub(crate) fn target_update(
    critic: &mut Critic,
    values: &[StepValues],
    nets_per_replica: usize,
) -> Result<(), TrainError> {
    let first = values[0];
    if values.iter().all(|v| v.tau == first.tau) {
        critic.polyak(first.tau)?;
    } else {
        let taus: Vec<f32> = values
            .iter()
            .flat_map(|v| std::iter::repeat_n(v.tau, nets_per_replica))
            .collect();
        critic.polyak_nets(&taus)?;
    }
    Ok(())
}

/// The optimiser step and the Polyak update of the replicas with `active[r]` (all: as
/// [`optimiser_step`] and [`target_update`]); when only some learn this time, their networks
/// alone move (the critic's masked step: the others' parameters, moments, step counts and
/// targets stay as they are).
pub(crate) fn step_and_average(
    critic: &mut Critic,
    (values, active): (&[StepValues], &[bool]),
    nets_per_replica: usize,
) -> Result<(), TrainError> {
    masked_step(critic, (values, active), nets_per_replica)?;
    masked_target_update(critic, (values, active), nets_per_replica)
}

/// Refuses a learner step that leaves some replicas out (`active[r]` false) when the learner
/// has opponent models (`models`): their stack has one optimiser step count, so its replicas
/// must learn at the same moments.
pub(crate) fn models_in_step(models: bool, active: &[bool]) -> Result<(), TrainError> {
    if models && active.iter().any(|a| !a) {
        return Err(TrainError::Config(
            "opponent models need every replica to learn at the same moments (their stack \
             has one optimiser step count): do not sweep samples_per_insert, min_replay or \
             rate_error_buffer with opponent_models: true"
                .into(),
        ));
    }
    Ok(())
}

/// Each of `values`' replicas' value repeated for its `nets_per_replica` networks.
fn per_net<T: Copy>(values: impl Iterator<Item = T>, nets_per_replica: usize) -> Vec<T> {
    values
        .flat_map(|v| std::iter::repeat_n(v, nets_per_replica))
        .collect()
}

/// The optimiser step of the replicas with `active[r]` (all: [`optimiser_step`]); the others'
/// parameters, moments and step counts stay as they are (the critic's masked step).
pub(crate) fn masked_step(
    critic: &mut Critic,
    (values, active): (&[StepValues], &[bool]),
    nets_per_replica: usize,
) -> Result<(), TrainError> {
    if active.iter().all(|a| *a) {
        return optimiser_step(critic, values, nets_per_replica);
    }
    if active.iter().all(|a| !a) {
        return Ok(());
    }
    let nets = per_net(
        values.iter().map(|v| NetOptim::from(&v.adam)),
        nets_per_replica,
    );
    let mask = per_net(active.iter().copied(), nets_per_replica);
    critic.step_masked(&values[0].adam, &nets, &mask)?;
    Ok(())
}

/// The Polyak update of the replicas with `active[r]` (all: [`target_update`]); the others'
/// targets stay as they are (a factor of 0 leaves a target untouched).
pub(crate) fn masked_target_update(
    critic: &mut Critic,
    (values, active): (&[StepValues], &[bool]),
    nets_per_replica: usize,
) -> Result<(), TrainError> {
    if active.iter().all(|a| *a) {
        return target_update(critic, values, nets_per_replica);
    }
    if active.iter().all(|a| !a) {
        return Ok(());
    }
    let taus = (values.iter().zip(active)).map(|(v, a)| if *a { v.tau } else { 0.0 });
    critic.polyak_nets(&per_net(taus, nets_per_replica))?;
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Checkpoints of several replicas
// ------------------------------------------------------------------------------------------

/// The checkpointed state of a run of several replicas: each replica's part (its replay
/// columns are the tensors `replica.<r>.replay.<column>`; the targets of the whole stack are
/// the `target` tensor).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplicasState {
    /// Each replica's streams, limiter, arenas and ring.
    pub replicas: Vec<ReplayState>,
    /// Every replica's opponent models' optimiser steps and shuffle streams (their parameters
    /// and Adam moments are the `models.*` tensors).
    #[serde(default)]
    pub models_state: Option<ModelsState>,
    /// Each network's Adam step count (IQL's replicas learn at their own moments); empty in
    /// checkpoints written before there was one per network, whose one count (the metadata's
    /// `adam_steps`) every network takes.
    #[serde(default)]
    pub net_steps: Vec<u64>,
}

/// One replica's checkpointed parts: its schedule state, arenas and replay.
pub(crate) type ReplicaParts<'a, R> = (&'a mut ReplayCore, &'a mut EnvBatch, &'a mut R);

/// Saves a replay learner's replicas: one as the single-run state (`ReplayState`, with the
/// opponent models), several as a [`ReplicasState`], each replica's replay under
/// `replica.<r>.` in `extra`; the whole stack's targets are the `target` tensor.
pub(crate) fn save_lanes<'a, M: OpponentNetworks, R: ReplayColumns + 'a>(
    progress: &Progress,
    critic: &mut Critic,
    models: &mut Option<M>,
    mut lanes: Vec<ReplicaParts<'a, R>>,
    extra: &mut NamedTensors,
) -> Result<String, TrainError> {
    if lanes.len() == 1
        && let Some((core, batch, replay)) = lanes.pop()
    {
        return core.save_json(progress, critic, models, (batch, replay), extra);
    }
    let mut replicas = Vec::with_capacity(lanes.len());
    for (r, (core, batch, replay)) in lanes.into_iter().enumerate() {
        let prefix = format!("replica.{r}.");
        replicas.push(core.save_replica(progress, (batch, replay), extra, &prefix));
    }
    extra.push(("target".into(), Tensor::F32(critic.target_params()?)));
    let models_state = save_models(models, extra)?;
    Ok(serde_json::to_string(&ReplicasState {
        replicas,
        models_state,
        net_steps: critic.net_steps().to_vec(),
    })?)
}

/// Restores what [`save_lanes`] saved into `lanes`, every length checked first.
pub(crate) fn load_lanes<'a, M: OpponentNetworks, R: ReplayColumns + 'a>(
    (json, extra): (&str, &[(String, Tensor)]),
    progress: &mut Progress,
    (critic, models): (&mut Critic, &mut Option<M>),
    mut lanes: Vec<ReplicaParts<'a, R>>,
) -> Result<Resume, TrainError> {
    if lanes.len() == 1
        && let Some((core, batch, replay)) = lanes.pop()
    {
        return core.load_json(json, progress, critic, models, (batch, replay), extra);
    }
    let s: ReplicasState = serde_json::from_str(json)?;
    BadField::check_len("replicas", lanes.len(), s.replicas.len())?;
    let target = f32s(extra, "target", critic.params()?.len())?;
    if !s.net_steps.is_empty() {
        BadField::check_len("net_steps", critic.spec().nets, s.net_steps.len())?;
    }
    // The models first: their stack's lengths are checked before any replica is touched.
    let mut resume = load_models(models, s.models_state.as_ref(), None, extra)?;
    for (r, ((core, batch, replay), state)) in lanes.into_iter().zip(&s.replicas).enumerate() {
        let prefix = format!("replica.{r}.");
        resume = resume.and(core.load_replica(state, (batch, replay), extra, &prefix)?);
    }
    restore_target(critic, target)?;
    if !s.net_steps.is_empty() {
        critic.set_net_steps(&s.net_steps)?;
    }
    progress.update = s.replicas[0].update;
    progress.env_steps = s.replicas[0].env_steps;
    Ok(resume)
}

/// The [`Learner`](super::Learner) methods a replay learner of replicas (IQL, PR2-IQL) answers
/// from its fields alone: `progress`, `critic`, `models` (an `Option` of
/// [`OpponentNetworks`]) and `lanes`, each with `core` (a [`ReplayCore`]), `batch` and `replay`
/// (a [`ReplayColumns`]). Expands inside the learner's `impl Learner` block.
macro_rules! replica_learner_plumbing {
    () => {
        fn save_state(
            &mut self,
            extra: &mut crate::train::tensors::NamedTensors,
        ) -> Result<String, TrainError> {
            let lanes = self
                .lanes
                .iter_mut()
                .map(|l| (&mut l.core, &mut l.batch, &mut l.replay))
                .collect();
            let (progress, critic) = (&self.progress, &mut self.critic);
            crate::train::replicas::save_lanes(progress, critic, &mut self.models, lanes, extra)
        }

        fn load_state(
            &mut self,
            json: &str,
            extra: &[(String, crate::train::tensors::Tensor)],
        ) -> Result<crate::train::Resume, TrainError> {
            let lanes = self
                .lanes
                .iter_mut()
                .map(|l| (&mut l.core, &mut l.batch, &mut l.replay))
                .collect();
            let networks = (&mut self.critic, &mut self.models);
            crate::train::replicas::load_lanes((json, extra), &mut self.progress, networks, lanes)
        }

        fn progress(&self) -> &crate::train::learner::Progress {
            &self.progress
        }

        fn progress_mut(&mut self) -> &mut crate::train::learner::Progress {
            &mut self.progress
        }

        fn batch(&mut self) -> &mut crate::engine::EnvBatch {
            &mut self.lanes[0].batch
        }

        fn critics(&mut self) -> Vec<&mut crate::critic::Critic> {
            vec![&mut self.critic]
        }
    };
}
pub(crate) use replica_learner_plumbing;

// ------------------------------------------------------------------------------------------
// One update's values and report
// ------------------------------------------------------------------------------------------

/// Every replica's values for one update: its exploration rate (and the acting threshold of
/// it), its learning rate and the values its learner steps read.
pub(crate) struct UpdateValues {
    /// Each replica's exploration rate.
    pub epsilons: Vec<f32>,
    /// Each replica's epsilon-greedy threshold (of its exploration rate).
    pub thresholds: Vec<u64>,
    /// Each replica's learning rate.
    pub lrs: Vec<f32>,
    /// Each replica's learner-step values.
    pub steps: Vec<StepValues>,
}

impl UpdateValues {
    /// The values of the replicas with configurations `cfgs` at update `update` (0-based)
    /// after `env_steps` environment steps.
    pub(crate) fn of<'a>(
        cfgs: impl Iterator<Item = &'a RunConfig>,
        update: u64,
        env_steps: u64,
    ) -> UpdateValues {
        let mut v = UpdateValues {
            epsilons: Vec::new(),
            thresholds: Vec::new(),
            lrs: Vec::new(),
            steps: Vec::new(),
        };
        for cfg in cfgs {
            let epsilon = epsilon_by_steps(cfg, env_steps);
            let (lr, adam) = optimiser(cfg, update);
            v.epsilons.push(epsilon);
            v.thresholds.push(crate::rng::threshold(epsilon as f64));
            v.lrs.push(lr);
            v.steps.push(StepValues::of(cfg, adam));
        }
        v
    }

    /// The update's report: the mean of `steps` learner-step losses summing to `losses`,
    /// replica 0's exploration and learning rate and episodes, and with several replicas each
    /// replica's rates and episodes (`per_replica`: every replica's finished episodes).
    pub(crate) fn stats(
        &self,
        losses: (f64, u64),
        mut per_replica: Vec<Vec<EpisodeSummary>>,
        opponents: Option<OpponentScores>,
    ) -> UpdateStats {
        let episodes = if per_replica.len() > 1 {
            per_replica[0].clone()
        } else {
            per_replica.pop().unwrap_or_default()
        };
        let rates = (self.epsilons[0], self.lrs[0]);
        let mut stats = UpdateStats::replay(losses, rates, episodes, opponents);
        if per_replica.len() > 1 {
            stats.replica_scalars = self
                .epsilons
                .iter()
                .copied()
                .zip(self.lrs.clone())
                .collect();
            stats.per_replica = per_replica;
        }
        stats
    }
}
