//! The action sets a scenario may name ([`ActionSet`]). A leaf of the scenario format.

use serde::{Deserialize, Serialize};

/// The action set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionSet {
    /// 0 left, 1 right, 2 up, 3 down, 4 stay (screen directions; up is row - 1).
    Move5,
    /// 0 noop, 1 forward, 2 backward, 3 step left, 4 step right, 5 turn left, 6 turn right,
    /// 7 refine-and-gift, 8 consume (moves relative to the facing).
    Gift9,
    /// 0 noop, 1 forward, 2 backward, 3 step left, 4 step right, 5 turn left, 6 turn right, 7 io.
    Chemistry8,
    /// K abstract choices 0..K (matrix games).
    Choose(u8),
}

impl ActionSet {
    /// Number of actions.
    pub fn len(self) -> usize {
        match self {
            ActionSet::Move5 => 5,
            ActionSet::Gift9 => 9,
            ActionSet::Chemistry8 => 8,
            ActionSet::Choose(k) => k as usize,
        }
    }

    /// True for `Choose(0)` (never valid).
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The "do nothing" action an agent that left the arena takes.
    pub fn idle(self) -> u8 {
        match self {
            ActionSet::Move5 => 4,
            ActionSet::Gift9 | ActionSet::Chemistry8 | ActionSet::Choose(_) => 0,
        }
    }

    /// Action names in index order (empty for `Choose`).
    pub fn names(self) -> &'static [&'static str] {
        match self {
            ActionSet::Move5 => &["left", "right", "up", "down", "stay"],
            ActionSet::Gift9 => &[
                "noop",
                "forward",
                "backward",
                "step_left",
                "step_right",
                "turn_left",
                "turn_right",
                "refine_and_gift",
                "consume",
            ],
            ActionSet::Chemistry8 => &[
                "noop",
                "forward",
                "backward",
                "step_left",
                "step_right",
                "turn_left",
                "turn_right",
                "io",
            ],
            ActionSet::Choose(_) => &[],
        }
    }
}
