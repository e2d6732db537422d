//! What a substrate's scenario hooks read of a scenario ([`ScenarioView`]): every part they use
//! but the `substrate` field, so the substrates depend on the scenario format's leaves and not
//! on the asset enum the registry generates from them.

use super::observation::ObservationSpec;
use super::role::RoleSpec;

/// A scenario seen by its substrate's hooks: the map, the roles, the observation block and the
/// episode's step limit (from [`crate::scenario::Scenario::view`]).
#[derive(Debug, Clone, Copy)]
pub struct ScenarioView<'a> {
    /// ASCII map, one string per row.
    pub map: &'a [String],
    /// Agent roles in slot order.
    pub roles: &'a [RoleSpec],
    /// What learners observe.
    pub observation: &'a ObservationSpec,
    /// The episode's step limit.
    pub max_steps: u32,
}

impl ScenarioView<'_> {
    /// Agents per arena over all roles.
    pub fn agents_per_arena(&self) -> usize {
        self.roles.iter().map(|r| r.count as usize).sum()
    }

    /// Learning agents per arena.
    pub fn learners(&self) -> usize {
        self.roles
            .iter()
            .filter(|r| r.control() == super::role::Control::Learner)
            .map(|r| r.count as usize)
            .sum()
    }
}
