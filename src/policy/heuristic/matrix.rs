//! Matrix games' baselines: one per pure action, every learner always playing it (the
//! observation is ignored). Against itself, "always k" earns the payoff of the joint action
//! (k, k, ...): a trained policy is compared with each pure profile on the diagonal.

use rand_chacha::ChaCha8Rng;

use super::Decide;
use crate::scenario::MatrixParams;

/// Always plays action `.0`.
pub(super) struct Always(pub(super) u8);

impl Decide for Always {
    fn decide(&self, _obs: &[u8], _rng: &mut ChaCha8Rng) -> u8 {
        self.0
    }
}

/// The display name of "always `action`": `always <name>` with the action's name when the
/// scenario gives one, else `always action <k>`.
pub(super) fn name(params: &MatrixParams, action: u8) -> String {
    match params.action_names.get(action as usize) {
        Some(n) => format!("always {n}"),
        None => format!("always action {action}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};

    #[test]
    fn it_plays_its_action_whatever_it_sees_and_is_named_after_it() {
        let mut rng = stream(0, 0, Purpose::Policy);
        assert_eq!(Always(2).decide(&[1, 0, 0, 0, 1, 0, 1], &mut rng), 2);
        let named = MatrixParams {
            actions: 2,
            action_names: vec!["stag".into(), "hare".into()],
            payoffs: vec![],
        };
        assert_eq!(name(&named, 1), "always hare");
        let plain = MatrixParams {
            action_names: vec![],
            ..named
        };
        assert_eq!(name(&plain, 0), "always action 0");
    }
}
