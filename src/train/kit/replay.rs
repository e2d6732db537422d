//! What the replay learners (IQL, PR2-IQL) share: the ring index of a replay buffer, the
//! rate limiter sized for the synchronous loop, the exploration and sampling streams, and
//! their checkpointed state with its save and load (the replay's columns as tensors, checked
//! against the live buffer before use).

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::opponent::{ModelsState, OpponentNetworks, load_models, save_models};
use super::rate_limiter::{RateLimiter, RateLimiterConfig};
use crate::critic::Critic;
use crate::dist::Job;
use crate::engine::{BatchState, EnvBatch};
use crate::error::BadField;
use crate::rng::{Purpose, stream};
use crate::train::config::RunConfig;
use crate::train::error::TrainError;
use crate::train::learner::Progress;
use crate::train::run::run_dir::Resume;
use crate::train::tensors::{Column, NamedTensors, Tensor, f32s, find};

// ------------------------------------------------------------------------------------------
// Ring index
// ------------------------------------------------------------------------------------------

/// Where a ring buffer of `capacity` entries writes next and how many it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ring {
    /// Entries it can hold.
    pub capacity: usize,
    /// Entries it holds.
    pub len: usize,
    head: usize,
}

impl Ring {
    /// An empty ring.
    pub fn new(capacity: usize) -> Ring {
        Ring {
            capacity,
            len: 0,
            head: 0,
        }
    }

    /// The slot the next entry goes to.
    pub fn head(&self) -> usize {
        self.head
    }

    /// Commits an entry written at [`Ring::head`]; returns whether the oldest was overwritten.
    pub fn advance(&mut self) -> bool {
        self.head = (self.head + 1) % self.capacity;
        let evicted = self.len == self.capacity;
        self.len = (self.len + 1).min(self.capacity);
        evicted
    }

    /// The slot of the k-th newest entry (0 is the newest).
    pub fn newest(&self, k: usize) -> usize {
        (self.head + self.capacity - 1 - k % self.len.max(1)) % self.capacity
    }

    /// Checks a saved ring against this one's capacity: at most full, and the head where
    /// filling from slot 0 leaves it (`len` while not yet full).
    fn check(&self, saved: &Ring) -> Result<(), BadField> {
        BadField::check_len("replay.capacity", self.capacity, saved.capacity)?;
        if saved.len > self.capacity {
            let found = saved.len;
            return Err(BadField::range(
                "replay.len",
                format!("at most {}", self.capacity),
                found,
            ));
        }
        let head_ok = if saved.len < self.capacity {
            saved.head == saved.len
        } else {
            saved.head < self.capacity.max(1)
        };
        if !head_ok {
            let expected = format!("a slot consistent with len {}", saved.len);
            return Err(BadField::range("replay.head", expected, saved.head));
        }
        Ok(())
    }
}

/// A replay buffer as columns over one ring, so it is saved into and restored from a
/// checkpoint's tensors by [`ReplayCore::save_json`] and [`ReplayCore::load_json`].
pub(crate) trait ReplayColumns {
    /// The ring index.
    fn ring(&mut self) -> &mut Ring;

    /// Every column, `capacity x width` elements each, with its name.
    fn columns(&mut self) -> Vec<(&'static str, Column<'_>)>;

    /// Rate-limiter items per entry (1 per IQL row, `rollout` per PR2 sequence).
    fn items_per_entry(&self) -> u64;

    /// State beside the ring that every checkpoint holds whole, whatever `checkpoint_replay`
    /// says (a sequence replay's episode-start flags of the sequence being acted): saved as
    /// `<prefix>live.<name>`. None by default.
    fn live(&mut self) -> Vec<(&'static str, Column<'_>)> {
        Vec::new()
    }
}

/// Saves `replay`'s live state and the batch's hidden states (recurrent networks) into
/// `extra`, whole: `<prefix>live.<name>` and `<prefix>hidden`. Nothing for an MLP's replay.
fn save_live<R: ReplayColumns>(
    replay: &mut R,
    batch: &EnvBatch,
    extra: &mut NamedTensors,
    prefix: &str,
) {
    for (name, column) in replay.live() {
        extra.push((format!("{prefix}live.{name}"), column.prefix(column.len())));
    }
    if !batch.hidden_states().is_empty() {
        let hidden = Tensor::F32(batch.hidden_states().to_vec());
        extra.push((format!("{prefix}hidden"), hidden));
    }
}

/// Restores what [`save_live`] saved, every length checked against the live buffers.
fn load_live<R: ReplayColumns>(
    replay: &mut R,
    batch: &mut EnvBatch,
    extra: &[(String, Tensor)],
    prefix: &str,
) -> Result<(), BadField> {
    for (name, mut column) in replay.live() {
        let field = format!("{prefix}live.{name}");
        let t = find(extra, &field).ok_or_else(|| BadField::range(&field, "a tensor", "none"))?;
        let n = column.len();
        column.restore(t, n, &field)?;
    }
    let hidden = batch.hidden_states_mut();
    if !hidden.is_empty() {
        let field = format!("{prefix}hidden");
        hidden.copy_from_slice(f32s(extra, &field, hidden.len())?);
    }
    Ok(())
}

/// Saves the filled prefix of every column of `replay` into `extra`
/// (`<prefix>replay.<column>`); returns the ring.
fn save_replay<R: ReplayColumns>(replay: &mut R, extra: &mut NamedTensors, prefix: &str) -> Ring {
    let ring = *replay.ring();
    for (name, column) in replay.columns() {
        let width = column.len() / ring.capacity.max(1);
        extra.push((
            format!("{prefix}replay.{name}"),
            column.prefix(ring.len * width),
        ));
    }
    ring
}

/// Restores what [`save_replay`] saved, every tensor's size checked against the live column.
fn load_replay<R: ReplayColumns>(
    replay: &mut R,
    saved: &Ring,
    extra: &[(String, Tensor)],
    prefix: &str,
) -> Result<(), BadField> {
    replay.ring().check(saved)?;
    // PR2's observation masks and final masks come together or not at all.
    let has = |name: &str| find(extra, &format!("{prefix}replay.{name}")).is_some();
    if has("mask") != has("final_mask") {
        let field = format!("{prefix}replay.final_mask");
        let (want, got) = if has("mask") {
            ("a tensor", "none")
        } else {
            ("none", "a tensor")
        };
        return Err(BadField::range(&field, want, got));
    }
    for (name, mut column) in replay.columns() {
        let field = format!("{prefix}replay.{name}");
        let width = column.len() / saved.capacity.max(1);
        if ["next_mask", "mask", "final_mask"].contains(&name) && find(extra, &field).is_none() {
            // A checkpoint from before replays kept masks: every successor action counts as
            // legal, as it did when those rows were stored.
            continue;
        }
        let t = find(extra, &field).ok_or_else(|| BadField::range(&field, "a tensor", "none"))?;
        column.restore(t, saved.len * width, &field)?;
    }
    *replay.ring() = *saved;
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Successor observations
// ------------------------------------------------------------------------------------------

/// Writes the network input rows of every learner's successor observation after a step into
/// `out` (`[B x N, input]`): the arena's `obs`, or its `final_obs` where the episode ended (the
/// observation after an auto-reset starts another episode and is no successor; a truncated
/// transition bootstraps from the final one, a terminated one does not bootstrap at all).
pub fn successor_input(
    b: &crate::components::StepBuffers,
    (learners, obs_len, input): (usize, usize, usize),
    out: &mut Vec<u8>,
) {
    let (per_obs, per_in) = (learners * obs_len, learners * input);
    out.resize(b.terminated.len() * per_in, 0);
    for (k, chunk) in out.chunks_exact_mut(per_in).enumerate() {
        let ended = b.terminated[k] != 0 || b.truncated[k] != 0;
        let src = if ended { &b.final_obs } else { &b.obs };
        let src = &src[k * per_obs..(k + 1) * per_obs];
        super::qnet::write_input(src, learners, obs_len, input, chunk);
    }
}

/// Writes every learner's action mask after a step into `out` (`[B x N, A]`): the arena's
/// mask, or the mask it ended with where the episode ended (the successor of
/// [`successor_input`]); empty when the substrate masks nothing.
pub fn successor_mask(b: &crate::components::StepBuffers, masked: bool, out: &mut Vec<u8>) {
    out.clear();
    let arenas = b.terminated.len();
    if !masked || arenas == 0 {
        return;
    }
    let per = b.action_mask.len() / arenas;
    for k in 0..arenas {
        let ended = b.terminated[k] != 0 || b.truncated[k] != 0;
        let src = if ended {
            &b.final_action_mask
        } else {
            &b.action_mask
        };
        out.extend_from_slice(&src[k * per..(k + 1) * per]);
    }
}

// ------------------------------------------------------------------------------------------
// Rate limiter
// ------------------------------------------------------------------------------------------

/// The limiter of a run that inserts `inserted` items per environment step (or rollout) and
/// samples `batch` per learner step: the smallest error buffer the synchronous loop accepts
/// when the config says 0.
pub fn limiter_config(cfg: &RunConfig, inserted: u64, batch: u64) -> RateLimiterConfig {
    let limits = RateLimiterConfig {
        samples_per_insert: cfg.iql.samples_per_insert,
        min_size_to_sample: cfg.iql.min_replay.max(batch),
        error_buffer: cfg.iql.rate_error_buffer,
    };
    if cfg.iql.rate_error_buffer > 0.0 {
        limits
    } else {
        RateLimiterConfig {
            error_buffer: limits.loop_error_buffer(inserted, batch),
            ..limits
        }
    }
}

// ------------------------------------------------------------------------------------------
// Streams, limiter and checkpointed state
// ------------------------------------------------------------------------------------------

/// The schedule state of a replay learner besides its buffer: one exploration stream per
/// arena, the minibatch sampling stream, the rate limiter, the learner steps done and whether
/// checkpoints hold the replay.
pub(crate) struct ReplayCore {
    /// Exploration streams, one per arena.
    pub explore: Vec<ChaCha8Rng>,
    /// Minibatch sampling.
    pub sampler: ChaCha8Rng,
    /// The rate limiter driving the schedule.
    pub limiter: RateLimiter,
    /// Learner steps done.
    pub learner_steps: u64,
    /// Checkpoints hold the replay (`checkpoint_replay`).
    pub checkpoint_replay: bool,
}

/// A replay learner's evolving state beyond the online parameters and Adam (checkpoints). The
/// replay's columns and the opponent models' parameters and Adam are tensors of the checkpoint
/// beside it; without the replay (`checkpoint_replay: false`) a resumed run refills it and does
/// not continue bit for bit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplayState {
    /// Updates done.
    pub update: u64,
    /// Environment steps done.
    pub env_steps: u64,
    /// Learner steps done.
    pub learner_steps: u64,
    /// Exploration streams.
    pub explore: Vec<ChaCha8Rng>,
    /// Minibatch sampling stream.
    pub sampler: ChaCha8Rng,
    /// Target parameters in checkpoints written before they became the `target` tensor
    /// (read, never written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target: Vec<f32>,
    /// The opponent models' parameters in checkpoints written before the models' state and
    /// tensors were saved (read, never written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<f32>>,
    /// The opponent models' optimiser steps and shuffle stream.
    #[serde(default)]
    pub models_state: Option<ModelsState>,
    /// The arenas.
    pub batch: BatchState,
    /// The replay's ring, when the checkpoint holds the replay (its columns are tensors).
    #[serde(default)]
    pub replay: Option<Ring>,
    /// The rate limiter's counters, saved with the replay.
    #[serde(default)]
    pub limiter: Option<RateLimiter>,
}

impl ReplayCore {
    /// Streams keyed by the run's seed and a limiter for `inserted` items per insert and
    /// `sampled` per learner step, refused when the loop would deadlock.
    #[cfg(test)]
    pub fn new(cfg: &RunConfig, inserted: u64, sampled: u64) -> Result<ReplayCore, TrainError> {
        ReplayCore::new_in(cfg, (inserted, sampled), &Job::single())
    }

    /// [`ReplayCore::new`] for one rank of a job: its arenas' exploration streams are those of
    /// its slice of the job's arenas, its sampler its own.
    pub fn new_in(
        cfg: &RunConfig,
        (inserted, sampled): (u64, u64),
        job: &Job,
    ) -> Result<ReplayCore, TrainError> {
        let limits = limiter_config(cfg, inserted, sampled);
        let refuse = |e: String| TrainError::Config(format!("rate limiter: {e}"));
        limits
            .validate_for_loop(inserted, sampled)
            .map_err(|e| refuse(e.to_string()))?;
        Ok(ReplayCore {
            explore: (0..cfg.arenas)
                .map(|a| {
                    stream(
                        cfg.seed,
                        job.first_arena(cfg.arenas) + a as u64,
                        Purpose::Policy,
                    )
                })
                .collect(),
            sampler: stream(cfg.seed, job.rank_key(u64::MAX >> 8), Purpose::Policy),
            limiter: RateLimiter::new(limits).map_err(|e| refuse(e.to_string()))?,
            learner_steps: 0,
            checkpoint_replay: cfg.checkpoint_replay,
        })
    }

    /// The checkpointed state (JSON) of a learner with this core; the replay (when
    /// `checkpoint_replay`) and the opponent models go into `extra`.
    pub fn save_json<M: OpponentNetworks, R: ReplayColumns>(
        &self,
        progress: &Progress,
        critic: &mut Critic,
        models: &mut Option<M>,
        arenas: (&mut EnvBatch, &mut R),
        extra: &mut NamedTensors,
    ) -> Result<String, TrainError> {
        let mut state = self.save_replica(progress, arenas, extra, "");
        extra.push(("target".into(), Tensor::F32(critic.target_params()?)));
        state.models_state = save_models(models, extra)?;
        Ok(serde_json::to_string(&state)?)
    }

    /// One replica's part of a checkpoint: its streams, limiter and arenas, and its replay
    /// (when `checkpoint_replay`) as tensors named `<prefix>replay.<column>` in `extra`.
    pub fn save_replica<R: ReplayColumns>(
        &self,
        progress: &Progress,
        (batch, replay): (&mut EnvBatch, &mut R),
        extra: &mut NamedTensors,
        prefix: &str,
    ) -> ReplayState {
        let ring = self
            .checkpoint_replay
            .then(|| save_replay(replay, extra, prefix));
        save_live(replay, batch, extra, prefix);
        ReplayState {
            update: progress.update,
            env_steps: progress.env_steps,
            learner_steps: self.learner_steps,
            explore: self.explore.clone(),
            sampler: self.sampler.clone(),
            target: Vec::new(),
            models: None,
            models_state: None,
            batch: batch.save_state(),
            limiter: ring.map(|_| self.limiter.clone()),
            replay: ring,
        }
    }

    /// Restores what [`ReplayCore::save_json`] saved, every length and range checked first;
    /// without a saved replay the replay and the limiter start empty again (approximate).
    pub fn load_json<M: OpponentNetworks, R: ReplayColumns>(
        &mut self,
        json: &str,
        progress: &mut Progress,
        critic: &mut Critic,
        models: &mut Option<M>,
        arenas: (&mut EnvBatch, &mut R),
        extra: &[(String, Tensor)],
    ) -> Result<Resume, TrainError> {
        let s: ReplayState = serde_json::from_str(json)?;
        let n = critic.params()?.len();
        let target = match find(extra, "target") {
            Some(_) => f32s(extra, "target", n)?,
            None => {
                BadField::check_len("target", n, s.target.len()).map(|()| s.target.as_slice())?
            }
        };
        let models = load_models(models, s.models_state.as_ref(), s.models.as_deref(), extra)?;
        let resume = self.load_replica(&s, arenas, extra, "")?.and(models);
        restore_target(critic, target)?;
        progress.update = s.update;
        progress.env_steps = s.env_steps;
        Ok(resume)
    }

    /// Restores one replica's part saved by [`ReplayCore::save_replica`] under `prefix`:
    /// its arenas, replay and limiter (approximate without a saved replay), streams and
    /// learner steps, every length and range checked first.
    pub fn load_replica<R: ReplayColumns>(
        &mut self,
        s: &ReplayState,
        (batch, replay): (&mut EnvBatch, &mut R),
        extra: &[(String, Tensor)],
        prefix: &str,
    ) -> Result<Resume, TrainError> {
        BadField::check_len("explore", self.explore.len(), s.explore.len())?;
        batch.load_state(&s.batch)?;
        load_live(replay, batch, extra, prefix)?;
        let resume = match (&s.replay, &s.limiter) {
            (Some(ring), Some(limiter)) => {
                load_replay(replay, ring, extra, prefix)?;
                let items = ring.len as u64 * replay.items_per_entry();
                let size = limiter.inserts.checked_sub(limiter.deletes);
                if size != Some(items) {
                    let found =
                        format!("{} inserts - {} deletes", limiter.inserts, limiter.deletes);
                    return Err(BadField::range("limiter", format!("{items} items"), found).into());
                }
                self.limiter.inserts = limiter.inserts;
                self.limiter.samples = limiter.samples;
                self.limiter.deletes = limiter.deletes;
                Resume::Exact
            }
            _ => Resume::Approximate(
                "the checkpoint holds no replay (checkpoint_replay: false, or an older \
                 checkpoint), so the resumed run refills it and does not continue bit for bit"
                    .into(),
            ),
        };
        self.learner_steps = s.learner_steps;
        self.explore = s.explore.clone();
        self.sampler = s.sampler.clone();
        Ok(resume)
    }
}

/// Sets the target parameters: copies them into the online slot, averages them fully into
/// the target, then puts the online parameters back.
pub(crate) fn restore_target(critic: &mut Critic, target: &[f32]) -> Result<(), TrainError> {
    let online = critic.params()?;
    critic.set_params(target)?;
    critic.polyak(1.0)?;
    critic.set_params(&online)?;
    Ok(())
}

/// The [`Learner`](super::Learner) methods a replay learner (IQL, PR2-IQL) answers from its
/// fields alone: `progress`, `critic`, `models` (an `Option` of [`OpponentNetworks`]), `core`
/// (a [`ReplayCore`]), `batch` and `replay` (a [`ReplayColumns`]). Expands inside the
/// learner's `impl Learner` block.
macro_rules! replay_learner_plumbing {
    () => {
        fn save_state(
            &mut self,
            extra: &mut crate::train::tensors::NamedTensors,
        ) -> Result<String, TrainError> {
            let arenas = (&mut self.batch, &mut self.replay);
            let (progress, critic) = (&self.progress, &mut self.critic);
            self.core
                .save_json(progress, critic, &mut self.models, arenas, extra)
        }

        fn load_state(
            &mut self,
            json: &str,
            extra: &[(String, crate::train::tensors::Tensor)],
        ) -> Result<crate::train::Resume, TrainError> {
            let arenas = (&mut self.batch, &mut self.replay);
            let (progress, critic) = (&mut self.progress, &mut self.critic);
            self.core
                .load_json(json, progress, critic, &mut self.models, arenas, extra)
        }

        fn progress(&self) -> &crate::train::learner::Progress {
            &self.progress
        }

        fn progress_mut(&mut self) -> &mut crate::train::learner::Progress {
            &mut self.progress
        }

        fn batch(&mut self) -> &mut crate::engine::EnvBatch {
            &mut self.batch
        }

        fn critics(&mut self) -> Vec<&mut crate::critic::Critic> {
            vec![&mut self.critic]
        }
    };
}
pub(crate) use replay_learner_plumbing;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::config::IqlConfig;

    /// Three arenas of one learner: the first terminated, the second truncated, the third goes
    /// on. The first two take their successor from `final_obs` (not the reset's `obs`), the
    /// third from `obs`; with a shared network each row gets its one-hot slot after it.
    #[test]
    fn successors_are_final_observations_where_episodes_ended() {
        let b = crate::components::StepBuffers {
            obs: vec![10, 11, 20, 21, 30, 31],
            final_obs: vec![1, 2, 3, 4, 5, 6],
            terminated: vec![1, 0, 0],
            truncated: vec![0, 1, 0],
            ..Default::default()
        };
        let mut out = Vec::new();
        successor_input(&b, (1, 2, 2), &mut out);
        assert_eq!(out, [1, 2, 3, 4, 30, 31]);
        successor_input(&b, (1, 2, 3), &mut out);
        assert_eq!(out, [1, 2, 1, 3, 4, 1, 30, 31, 1]);
    }

    /// The successor masks: an ended arena's are the ones it ended with; none without masks.
    #[test]
    fn successor_masks_are_final_where_episodes_ended() {
        let b = crate::components::StepBuffers {
            action_mask: vec![1, 0, 1, 1, 0, 1],
            final_action_mask: vec![0, 0, 1, 0, 0, 0],
            terminated: vec![0, 0, 0],
            truncated: vec![0, 1, 0],
            ..Default::default()
        };
        let mut out = vec![9];
        successor_mask(&b, true, &mut out);
        assert_eq!(out, [1, 0, 1, 0, 0, 1]);
        successor_mask(&b, false, &mut out);
        assert!(out.is_empty());
    }

    /// The reported deadlock's settings (SPI 128, batch 256, error buffer 0.1, min_replay
    /// 2,000, 2,048 rows per insert) are refused with an error buffer the run then accepts.
    #[test]
    fn a_refused_error_buffer_names_one_the_run_accepts() {
        let cfg = RunConfig {
            iql: IqlConfig {
                samples_per_insert: 128.0,
                batch_size: 256,
                rate_error_buffer: 0.1,
                min_replay: 2_000,
                ..Default::default()
            },
            ..RunConfig::default()
        };
        let Err(err) = ReplayCore::new(&cfg, 2_048, 256) else {
            panic!("error buffer 0.1 accepted");
        };
        let message = err.to_string();
        assert!(
            message.contains("raise error_buffer to at least 262144"),
            "{message}"
        );
        let mut fixed = cfg.clone();
        fixed.iql.rate_error_buffer = 262_144.0;
        assert!(ReplayCore::new(&fixed, 2_048, 256).is_ok());
        let mut auto = cfg;
        auto.iql.rate_error_buffer = 0.0;
        let core = ReplayCore::new(&auto, 2_048, 256).map_err(|e| e.to_string());
        assert_eq!(core.map(|c| c.limiter.config().error_buffer), Ok(262_144.0));
    }
}
