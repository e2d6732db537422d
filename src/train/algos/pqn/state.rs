//! PQN's checkpointed state beyond parameters and Adam: counts, random streams, the arenas,
//! the opponent models' state and PQN-RNN's memory (the format of a single run; a run of
//! several replicas holds one of these per replica).

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::Pqn;
use crate::engine::BatchState;
use crate::error::BadField;
use crate::train::error::TrainError;
use crate::train::kit::opponent::{ModelsState, load_models, save_models};
use crate::train::run::run_dir::Resume;
use crate::train::tensors::{NamedTensors, Tensor, f32s};

pub use super::sequences::SeqSaved;

/// The learner's own evolving state beyond the parameters (checkpoints).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PqnState {
    /// Updates done.
    pub update: u64,
    /// Environment steps done.
    pub env_steps: u64,
    /// Exploration streams, one per arena.
    pub explore: Vec<ChaCha8Rng>,
    /// The shuffling stream (a list of one).
    pub shuffle: Vec<ChaCha8Rng>,
    /// The arenas (a list of one batch).
    pub batches: Vec<BatchState>,
    /// The opponent models' parameters in checkpoints written before the models' state and
    /// tensors were saved (read, never written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<f32>>,
    /// The opponent models' optimiser steps and shuffle stream (their parameters and Adam
    /// moments are tensors of the checkpoint).
    #[serde(default)]
    pub models_state: Option<ModelsState>,
    /// With recurrent networks: the memory's length (its arrays, the episode-start flags and
    /// the batch's hidden states are tensors of the checkpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequences: Option<SeqSaved>,
}

/// The checkpoint tensor of the batch's hidden states.
const HIDDEN: &str = "pqn.hidden.0";

impl Pqn {
    /// The learner's state as JSON, its arrays into `extra`.
    pub(super) fn save(&mut self, extra: &mut NamedTensors) -> Result<String, TrainError> {
        let state = PqnState {
            update: self.progress.update,
            env_steps: self.progress.env_steps,
            explore: self.explore.clone(),
            shuffle: vec![self.shuffle.clone()],
            batches: vec![self.batch.save_state()],
            models: None,
            models_state: save_models(&mut self.opponents, extra)?,
            sequences: self.seq.as_ref().map(|seq| seq.save(extra)),
        };
        let h = self.batch.hidden_states();
        if !h.is_empty() {
            extra.push((HIDDEN.into(), Tensor::F32(h.to_vec())));
        }
        Ok(serde_json::to_string(&state)?)
    }

    /// Restores what [`Pqn::save`] saved, every length checked first.
    pub(super) fn load(
        &mut self,
        json: &str,
        extra: &[(String, Tensor)],
    ) -> Result<Resume, TrainError> {
        let s: PqnState = serde_json::from_str(json)?;
        BadField::check_len("batches", 1, s.batches.len())?;
        BadField::check_len("explore", self.explore.len(), s.explore.len())?;
        BadField::check_len("shuffle", 1, s.shuffle.len())?;
        self.batch.load_state(&s.batches[0])?;
        let models = s.models_state.as_ref();
        let resume = load_models(&mut self.opponents, models, s.models.as_deref(), extra)?;
        match (&mut self.seq, &s.sequences) {
            (Some(seq), Some(saved)) => seq.load(saved, extra, self.obs_len)?,
            (None, None) => {}
            (Some(_), None) | (None, Some(_)) => {
                return Err(BadField::range(
                    "sequences",
                    "the recurrent state exactly when network: gru",
                    "a checkpoint of the other network kind",
                )
                .into());
            }
        }
        let h = self.batch.hidden_states_mut();
        if !h.is_empty() {
            h.copy_from_slice(f32s(extra, HIDDEN, h.len())?);
        }
        self.progress.update = s.update;
        self.progress.env_steps = s.env_steps;
        self.explore = s.explore;
        self.shuffle = s.shuffle[0].clone();
        Ok(resume)
    }
}
