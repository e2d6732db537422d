//! Policies: what picks every learner's action in every arena. A [`Policy`] maps the
//! observations of R arenas to one action per learner; evaluation, the viewer's live mode,
//! exact analysis' policy tables, learned best responses (the frozen others) and the random
//! baseline all act through it, and so do the scripted baselines of [`heuristics_for`]. A
//! trained run's greedy policy is `crate::train::GreedyPolicy` (`crate::train::load_policy`
//! opens one from a run directory).

mod heuristic;
mod random;

pub use heuristic::{heuristics_for, scripted_for};
pub use random::RandomPolicy;

/// Why a policy could not act.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// Observations or an action buffer of the wrong size.
    #[error("{what}: expected {expected} values, got {got}")]
    Shape {
        /// Which buffer.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// The networks behind the policy failed.
    #[error(transparent)]
    Learner(Box<dyn std::error::Error + Send + Sync>),
}

/// Maps observations to actions.
pub trait Policy {
    /// Writes one action per learner into `out` `[R x N]` for observations `obs` `[R, N, O]`
    /// (R arenas' learners in slot order).
    fn actions(&mut self, obs: &[u8], out: &mut [u8]) -> Result<(), PolicyError>;

    /// [`Policy::actions`] within an action mask `mask` `[R x N, A]` (1 legal) when the
    /// substrate keeps one: policies that choose among actions (random, greedy) choose among
    /// the legal ones. By default the policy acts as without a mask (a scripted policy that
    /// reads the rules from its observation).
    fn actions_within(
        &mut self,
        obs: &[u8],
        mask: Option<&[u8]>,
        out: &mut [u8],
    ) -> Result<(), PolicyError> {
        let _ = mask;
        self.actions(obs, out)
    }

    /// The values `[R x N, A]` the policy ranks actions by, when it has any.
    fn q_values(&mut self, _obs: &[u8]) -> Result<Option<Vec<f32>>, PolicyError> {
        Ok(None)
    }

    /// Tells a policy with memory that the arenas whose `started[r]` is true begin a new
    /// episode at the next [`Policy::actions`] (their last step ended one): a recurrent policy
    /// zeroes their hidden state. Callers stepping arenas call it after every step with the
    /// arenas' `terminated | truncated`; memoryless policies ignore it.
    fn episodes_start(&mut self, _started: &[bool]) {}

    /// Whether [`Policy::actions`] depends on earlier observations (a recurrent network): such
    /// a policy acts on consecutive steps of the same arenas only, never on unrelated states.
    fn has_memory(&self) -> bool {
        false
    }
}

impl Policy for RandomPolicy {
    /// Uniform actions from each arena's stream; the observations only give the shape.
    fn actions(&mut self, _obs: &[u8], out: &mut [u8]) -> Result<(), PolicyError> {
        self.act(out);
        Ok(())
    }

    /// Uniform among each learner's legal actions.
    fn actions_within(
        &mut self,
        _obs: &[u8],
        mask: Option<&[u8]>,
        out: &mut [u8],
    ) -> Result<(), PolicyError> {
        match mask {
            Some(mask) => self.act_within(mask, out),
            None => self.act(out),
        }
        Ok(())
    }
}
