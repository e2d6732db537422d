//! cue_memory's baseline: remember the cue. Not a memoryless rule like the other heuristics
//! (none can beat chance on this substrate): it keeps each learner's last cue and plays it when
//! the observation flags the choice, so it earns the optimal return and shows what a recurrent
//! agent can reach. It must see every step of an episode in order, as evaluation gives it.

use crate::policy::{Policy, PolicyError};

/// The display name.
pub(super) const NAME: &str = "remember the cue";

/// One remembered cue per learner of every arena.
pub(super) struct RememberCue {
    cues: usize,
    memory: Vec<u8>,
}

impl RememberCue {
    /// For `cues` cues (observations of `cues + 1` bytes).
    pub(super) fn new(cues: u8) -> RememberCue {
        RememberCue {
            cues: cues as usize,
            memory: Vec::new(),
        }
    }
}

impl Policy for RememberCue {
    /// Stores the cue an observation shows; plays the stored cue when the choice is flagged,
    /// action 0 otherwise.
    fn actions(&mut self, obs: &[u8], out: &mut [u8]) -> Result<(), PolicyError> {
        let len = self.cues + 1;
        if obs.len() != out.len() * len {
            return Err(PolicyError::Shape {
                what: "observations",
                expected: out.len() * len,
                got: obs.len(),
            });
        }
        self.memory.resize(out.len(), 0);
        for ((a, o), m) in out
            .iter_mut()
            .zip(obs.chunks_exact(len))
            .zip(self.memory.iter_mut())
        {
            if let Some(c) = o[..self.cues].iter().position(|&v| v != 0) {
                *m = c as u8;
            }
            *a = if o[self.cues] != 0 { *m } else { 0 };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_plays_the_cue_it_saw_when_the_choice_comes() {
        let mut p = RememberCue::new(3);
        let mut out = [9u8; 2];
        // Two learners see cues 2 and 1, then blank steps, then the choice.
        p.actions(&[0, 0, 1, 0, 0, 1, 0, 0], &mut out).unwrap();
        assert_eq!(out, [0, 0]);
        p.actions(&[0; 8], &mut out).unwrap();
        p.actions(&[0, 0, 0, 1, 0, 0, 0, 1], &mut out).unwrap();
        assert_eq!(out, [2, 1]);
        assert!(p.actions(&[0; 7], &mut out).is_err());
    }
}
