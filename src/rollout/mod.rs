//! Recorded rollouts: a versioned, self-contained file the viewer and renderer read.
//!
//! Format (RON, version 1): `Rollout(format: "gridarena-rollout", version: 1, scenario: (...),
//! seed, arena, agents: [...], frames: [...])`. The scenario is embedded resolved, so a rollout
//! replays from its own file. Frame 0 of each episode has `t: 0` and no actions; every later
//! frame holds the applied actions that led to it, the step's rewards per slot, and whether the
//! step ended the episode. After a terminal frame the next frame is the respawned arena.

pub(crate) mod frame;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::ArtifactError;
use crate::scenario::{Control, RoleKind, Scenario};

pub use frame::Frame;

/// The `format` tag of rollout files.
pub const ROLLOUT_FORMAT: &str = "gridarena-rollout";
/// The rollout format version this build writes and reads.
pub const ROLLOUT_VERSION: u32 = 1;

/// One agent of the recorded arena.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// Slot in the arena.
    pub slot: u16,
    /// Index into `scenario.roles`.
    pub role: u16,
    /// The role's kind.
    pub kind: RoleKind,
    /// Learner or scripted.
    pub control: Control,
}

/// A recorded rollout of one arena.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    /// Always [`ROLLOUT_FORMAT`].
    pub format: String,
    /// Format version, [`ROLLOUT_VERSION`] when written by this build.
    pub version: u32,
    /// The resolved scenario.
    pub scenario: Scenario,
    /// Run seed.
    pub seed: u64,
    /// Which arena of the batch was recorded.
    pub arena: u32,
    /// Agents by slot.
    pub agents: Vec<AgentInfo>,
    /// Frames in time order.
    pub frames: Vec<Frame>,
    /// Names of the substrate counters in `episodes`.
    #[serde(default)]
    pub counter_names: Vec<String>,
    /// Every episode of the recorded batch that finished while recording.
    #[serde(default)]
    pub episodes: Vec<crate::metrics::EpisodeSummary>,
}

struct Header {
    format: String,
    version: u32,
}

impl Rollout {
    /// Writes the rollout atomically.
    pub fn save(&self, path: &Path) -> Result<(), ArtifactError> {
        let text =
            ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default().depth_limit(2))
                .map_err(|e| ArtifactError::Format {
                    path: path.into(),
                    reason: e.to_string(),
                })?;
        crate::atomic::write_atomic(path, text.as_bytes()).map_err(|error| ArtifactError::Io {
            path: path.into(),
            error,
        })
    }

    /// Reads a rollout, refusing other formats and versions with a clear message.
    pub fn load(path: &Path) -> Result<Rollout, ArtifactError> {
        let text = std::fs::read_to_string(path).map_err(|error| ArtifactError::Io {
            path: path.into(),
            error,
        })?;
        Rollout::parse(&text, path)
    }

    /// Parses rollout text (read from `path`, named in messages), refusing other formats and
    /// versions with a clear message.
    pub fn parse(text: &str, path: &Path) -> Result<Rollout, ArtifactError> {
        // Check the header first so an old file gets a version message, not a field error.
        let opts = crate::scenario::ron_options();
        let value: ron::Value = opts.from_str(text).map_err(|e| ArtifactError::Format {
            path: path.into(),
            reason: e.to_string(),
        })?;
        let field = |name: &str| match &value {
            ron::Value::Map(m) => m.get(&ron::Value::String(name.into())).cloned(),
            _ => None,
        };
        let header = Header {
            format: match field("format") {
                Some(ron::Value::String(s)) => s,
                _ => String::new(),
            },
            version: match field("version") {
                Some(ron::Value::Number(n)) => n.into_f64() as u32,
                _ => 0,
            },
        };
        if header.format != ROLLOUT_FORMAT {
            return Err(ArtifactError::Format {
                path: path.into(),
                reason: format!(
                    "format tag is {:?}, expected {ROLLOUT_FORMAT:?}",
                    header.format
                ),
            });
        }
        if header.version != ROLLOUT_VERSION {
            return Err(ArtifactError::Version {
                path: path.into(),
                found: header.version,
                supported: ROLLOUT_VERSION,
            });
        }
        opts.from_str(text).map_err(|e| ArtifactError::Format {
            path: path.into(),
            reason: e.to_string(),
        })
    }
}
