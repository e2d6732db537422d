//! Agent roles as written in scenario assets: what an agent is ([`RoleKind`]), who controls it
//! ([`Control`]) and how many of each ([`RoleSpec`]). A leaf: substrates, layouts and drawing
//! read these without depending on the scenario's substrate enum.

use serde::{Deserialize, Serialize};

use super::map::Tile;

/// What an agent is in its substrate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleKind {
    /// Pursuit: hunts evaders.
    Pursuer,
    /// Pursuit: is hunted.
    Evader,
    /// Every other substrate's avatar.
    Player,
}

impl RoleKind {
    /// Lower-case name as written in assets.
    pub fn name(self) -> &'static str {
        match self {
            RoleKind::Pursuer => "pursuer",
            RoleKind::Evader => "evader",
            RoleKind::Player => "player",
        }
    }

    /// Who controls agents of this kind when the asset does not say: evaders walk at random
    /// (PettingZoo's default), everyone else learns.
    pub fn default_control(self) -> Control {
        match self {
            RoleKind::Evader => Control::RandomWalk,
            RoleKind::Pursuer | RoleKind::Player => Control::Learner,
        }
    }

    /// The map symbol of this role's own spawn points.
    pub fn spawn_tile(self) -> Tile {
        match self {
            RoleKind::Pursuer => Tile::SpawnPursuer,
            RoleKind::Evader => Tile::SpawnEvader,
            RoleKind::Player => Tile::SpawnAny,
        }
    }
}

/// Who chooses a role's actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// A learning agent: gets an observation slot and reads its action from the action buffer.
    Learner,
    /// Acts uniformly at random every step (a chance outcome, not a learner).
    RandomWalk,
}

/// One role: a kind of agent, how many of them, and who controls them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    /// The role's kind in the substrate.
    pub kind: RoleKind,
    /// Agents of this role per arena.
    pub count: u16,
    /// Learner or scripted; when omitted, the kind's default (see [`RoleKind::default_control`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<Control>,
}

impl RoleSpec {
    /// Who controls this role, defaults resolved.
    pub fn control(&self) -> Control {
        self.control.unwrap_or(self.kind.default_control())
    }
}
