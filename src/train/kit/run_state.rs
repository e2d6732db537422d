//! The checkpointed state of a learner whose own evolving state is its progress, one random
//! stream per arena (acting), a shuffling stream and its arenas (IPPO, MAPPO, PQN-VDN).

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::engine::{BatchState, EnvBatch};
use crate::error::BadField;
use crate::train::error::TrainError;
use crate::train::learner::Progress;
use crate::train::run::run_dir::Resume;

/// What such a learner saves beyond parameters and Adam.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamsState {
    /// Updates done.
    pub update: u64,
    /// Environment steps done.
    pub env_steps: u64,
    /// The acting streams, one per arena.
    pub streams: Vec<ChaCha8Rng>,
    /// The shuffling stream.
    pub shuffle: ChaCha8Rng,
    /// The arenas.
    pub batch: BatchState,
}

impl StreamsState {
    /// The state as JSON.
    pub(crate) fn save(
        progress: &Progress,
        (streams, shuffle): (&[ChaCha8Rng], &ChaCha8Rng),
        batch: &mut EnvBatch,
    ) -> Result<String, TrainError> {
        Ok(serde_json::to_string(&StreamsState {
            update: progress.update,
            env_steps: progress.env_steps,
            streams: streams.to_vec(),
            shuffle: shuffle.clone(),
            batch: batch.save_state(),
        })?)
    }

    /// Restores what [`StreamsState::save`] wrote, after checking the streams' count and the
    /// arenas (nothing changes when either is refused).
    pub(crate) fn load(
        json: &str,
        progress: &mut Progress,
        (streams, shuffle): (&mut Vec<ChaCha8Rng>, &mut ChaCha8Rng),
        batch: &mut EnvBatch,
    ) -> Result<Resume, TrainError> {
        let s: StreamsState = serde_json::from_str(json)?;
        BadField::check_len("streams", streams.len(), s.streams.len())?;
        batch.load_state(&s.batch)?;
        progress.update = s.update;
        progress.env_steps = s.env_steps;
        *streams = s.streams;
        *shuffle = s.shuffle;
        Ok(Resume::Exact)
    }
}
