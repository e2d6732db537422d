//! A recorded rollout shown by the viewer: loaded, every frame checked against the layout,
//! and the episode returns after each frame summed up front.

use std::path::{Path, PathBuf};

use super::{Details, ViewError, next_returns, validate_frame};
use crate::layout::Layout;
use crate::rollout::Rollout;

/// A recorded rollout.
pub struct Replay {
    /// The file.
    pub path: PathBuf,
    pub(super) layout: Layout,
    pub(super) rollout: Rollout,
    pub(super) returns: Vec<Vec<f32>>,
    pub(super) cache: Option<(usize, Details)>,
}

impl Replay {
    /// Loads and checks a rollout.
    pub fn load(path: &Path) -> Result<Replay, ViewError> {
        let rollout = Rollout::load(path)?;
        Replay::from_rollout(rollout, path)
    }

    /// Checks a rollout (read from `path`, named in messages).
    pub fn from_rollout(rollout: Rollout, path: &Path) -> Result<Replay, ViewError> {
        let layout = crate::render::output::rollout_layout(&rollout).map_err(|e| {
            ViewError::BadRollout(format!("{}: its scenario is invalid: {e}", path.display()))
        })?;
        if rollout.frames.is_empty() {
            return Err(ViewError::BadRollout(format!(
                "{}: the rollout has no frames",
                path.display()
            )));
        }
        for (k, f) in rollout.frames.iter().enumerate() {
            validate_frame(&layout, k, f)
                .map_err(|e| ViewError::BadRollout(format!("{}: {e}", path.display())))?;
        }
        let mut returns: Vec<Vec<f32>> = Vec::with_capacity(rollout.frames.len());
        for f in &rollout.frames {
            let prev = returns.last().map_or(&[][..], |r| &r[..]);
            let next = next_returns(prev, f, layout.agents);
            returns.push(next);
        }
        Ok(Replay {
            path: path.to_path_buf(),
            layout,
            rollout,
            returns,
            cache: None,
        })
    }

    /// The recorded rollout.
    pub fn rollout(&self) -> &Rollout {
        &self.rollout
    }
}
