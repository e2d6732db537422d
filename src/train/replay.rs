//! What the replay learners (IQL, PR2-IQL) share: the ring index of a replay buffer, the
//! rate limiter sized for the synchronous loop, the exploration and sampling streams, and
//! their checkpointed state with its save and load.

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::config::RunConfig;
use super::error::TrainError;
use super::learner::Progress;
use super::opponent::{OpponentNetworks, models_params, set_models_params};
use super::rate_limiter::{RateLimiter, RateLimiterConfig};
use crate::critic::Critic;
use crate::engine::{BatchState, EnvBatch};
use crate::rng::{Purpose, stream};

// ------------------------------------------------------------------------------------------
// Ring index
// ------------------------------------------------------------------------------------------

/// Where a ring buffer of `capacity` entries writes next and how many it holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ring {
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
}

// ------------------------------------------------------------------------------------------
// Rate limiter
// ------------------------------------------------------------------------------------------

/// The limiter of a run that inserts `inserted` items per environment step (or rollout) and
/// samples `batch` per learner step: the smallest error buffer the synchronous loop accepts
/// when the config says 0.
pub fn limiter_config(cfg: &RunConfig, inserted: u64, batch: u64) -> RateLimiterConfig {
    let limits = RateLimiterConfig {
        samples_per_insert: cfg.samples_per_insert,
        min_size_to_sample: cfg.min_replay.max(batch),
        error_buffer: cfg.rate_error_buffer,
    };
    if cfg.rate_error_buffer > 0.0 {
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
/// arena, the minibatch sampling stream, the rate limiter and the learner steps done.
pub(crate) struct ReplayCore {
    /// Exploration streams, one per arena.
    pub explore: Vec<ChaCha8Rng>,
    /// Minibatch sampling.
    pub sampler: ChaCha8Rng,
    /// The rate limiter driving the schedule.
    pub limiter: RateLimiter,
    /// Learner steps done.
    pub learner_steps: u64,
}

/// A replay learner's evolving state beyond the online parameters and Adam (checkpoints). The
/// replay buffer is not saved: a resumed run refills it, so its resumes are not bit-identical.
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
    /// Target parameters.
    pub target: Vec<f32>,
    /// The opponent models' parameters, when trained.
    #[serde(default)]
    pub models: Option<Vec<f32>>,
    /// The arenas.
    pub batch: BatchState,
}

impl ReplayCore {
    /// Streams keyed by the run's seed and a limiter for `inserted` items per insert and
    /// `sampled` per learner step, refused when the loop would deadlock.
    pub fn new(cfg: &RunConfig, inserted: u64, sampled: u64) -> Result<ReplayCore, TrainError> {
        let limits = limiter_config(cfg, inserted, sampled);
        let refuse = |e: String| TrainError::Config(format!("rate limiter: {e}"));
        limits
            .validate_for_loop(inserted, sampled)
            .map_err(|e| refuse(e.to_string()))?;
        Ok(ReplayCore {
            explore: (0..cfg.arenas)
                .map(|a| stream(cfg.seed, a as u64, Purpose::Policy))
                .collect(),
            sampler: stream(cfg.seed, u64::MAX >> 8, Purpose::Policy),
            limiter: RateLimiter::new(limits).map_err(|e| refuse(e.to_string()))?,
            learner_steps: 0,
        })
    }

    /// The checkpointed state (JSON) of a learner with this core.
    pub fn save_json<M: OpponentNetworks>(
        &self,
        progress: &Progress,
        critic: &mut Critic,
        models: &mut Option<M>,
        batch: &mut EnvBatch,
    ) -> Result<String, TrainError> {
        let state = ReplayState {
            update: progress.update,
            env_steps: progress.env_steps,
            learner_steps: self.learner_steps,
            explore: self.explore.clone(),
            sampler: self.sampler.clone(),
            target: critic.target_params()?,
            models: models_params(models)?,
            batch: batch.save_state(),
        };
        Ok(serde_json::to_string(&state)?)
    }

    /// Restores what [`ReplayCore::save_json`] saved (the replay starts empty again).
    pub fn load_json<M: OpponentNetworks>(
        &mut self,
        json: &str,
        progress: &mut Progress,
        critic: &mut Critic,
        models: &mut Option<M>,
        batch: &mut EnvBatch,
    ) -> Result<(), TrainError> {
        let s: ReplayState = serde_json::from_str(json)?;
        progress.update = s.update;
        progress.env_steps = s.env_steps;
        self.learner_steps = s.learner_steps;
        self.explore = s.explore;
        self.sampler = s.sampler;
        restore_target(critic, &s.target)?;
        if let Some(p) = &s.models {
            set_models_params(models, p)?;
        }
        batch.load_state(&s.batch)?;
        Ok(())
    }
}

/// Sets the target parameters: copies them into the online slot, averages them fully into
/// the target, then puts the online parameters back.
fn restore_target(critic: &mut Critic, target: &[f32]) -> Result<(), TrainError> {
    let online = critic.params()?;
    critic.set_params(target)?;
    critic.polyak(1.0);
    critic.set_params(&online)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reported deadlock's settings (SPI 128, batch 256, error buffer 0.1, min_replay
    /// 2,000, 2,048 rows per insert) are refused with an error buffer the run then accepts.
    #[test]
    fn a_refused_error_buffer_names_one_the_run_accepts() {
        let cfg = RunConfig {
            samples_per_insert: 128.0,
            batch_size: 256,
            rate_error_buffer: 0.1,
            min_replay: 2_000,
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
        let fixed = RunConfig {
            rate_error_buffer: 262_144.0,
            ..cfg.clone()
        };
        assert!(ReplayCore::new(&fixed, 2_048, 256).is_ok());
        let auto = RunConfig {
            rate_error_buffer: 0.0,
            ..cfg
        };
        let core = ReplayCore::new(&auto, 2_048, 256).map_err(|e| e.to_string());
        assert_eq!(core.map(|c| c.limiter.config().error_buffer), Ok(262_144.0));
    }
}

/// The [`Learner`](super::Learner) methods a replay learner (IQL, PR2-IQL) answers from its
/// fields alone: `progress`, `core` (a [`ReplayCore`]), `critic`, `models` and `batch`. Expands
/// inside the learner's `impl Learner` block.
macro_rules! replay_learner_plumbing {
    () => {
        fn save_state(&mut self) -> Result<String, TrainError> {
            let (progress, models) = (&self.progress, &mut self.models);
            self.core
                .save_json(progress, &mut self.critic, models, &mut self.batch)
        }

        fn load_state(&mut self, json: &str) -> Result<(), TrainError> {
            let (progress, models) = (&mut self.progress, &mut self.models);
            self.core
                .load_json(json, progress, &mut self.critic, models, &mut self.batch)
        }

        fn progress(&self) -> &Progress {
            &self.progress
        }

        fn progress_mut(&mut self) -> &mut Progress {
            &mut self.progress
        }

        fn batch(&mut self) -> &mut EnvBatch {
            &mut self.batch
        }

        fn critic(&mut self) -> &mut Critic {
            &mut self.critic
        }
    };
}
pub(crate) use replay_learner_plumbing;
