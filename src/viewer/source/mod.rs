//! What the viewer shows: the frames of a recorded rollout, or a run's greedy policy stepped
//! live in one arena (with a history of the frames shown so far).
//!
//! [`Source`] is either one and answers the window's questions about a frame. A recorded
//! rollout is in `replay`, a live arena in `live`, and the choice of who acts there (and
//! whether a run's networks fit a scenario) in `actor`. The frame checks and the rebuilt
//! observations both kinds share are here.

use super::ViewError;
use crate::layout::Layout;
use crate::render::scene::{Scene, extract};
use crate::rollout::Frame;
use crate::scenario::LoadedScenario;
use crate::substrate::ArenaState;

mod actor;
mod live;
mod replay;

pub use actor::PolicyChoice;
pub use live::{HISTORY_LIMIT, Live};
pub use replay::Replay;

/// Everything the panel shows about one frame besides the frame itself.
#[derive(Debug, Clone, Default)]
pub struct Details {
    /// The learners' observations `[N, O]`, when known.
    pub obs: Option<Vec<u8>>,
    /// Whether `obs` is what the networks saw (live) rather than rebuilt from the frame.
    pub obs_exact: bool,
    /// Q-values per learner slot (`[A]` each), empty when not available.
    pub q: Vec<Vec<f32>>,
    /// Opponent models' predictions per learner slot (`[N-1, A]` each), empty without models.
    pub predictions: Vec<Vec<f32>>,
    /// With recurrent networks, the norm of each learner slot's hidden state at this frame
    /// (the state its next action starts from); empty otherwise.
    pub hidden_norms: Vec<f32>,
}

/// Either source.
pub enum Source {
    /// A recorded rollout.
    Replay(Box<Replay>),
    /// A live arena.
    Live(Box<Live>),
}

/// Checks a recorded frame against the layout so drawing and rebuilding observations cannot go
/// out of range.
pub fn validate_frame(layout: &Layout, k: usize, f: &Frame) -> Result<(), String> {
    crate::substrate::frame::check_frame(layout, f).map_err(|what| format!("frame {k}: {what}"))
}

/// The learners' observations `[N, O]` of a recorded frame, rebuilt by the substrate's own
/// observation code (what the cell layer holds beyond the frame, such as cooldowns, is taken
/// as fresh). `None` when the frame cannot be placed.
pub fn rebuild_observations(layout: &Layout, f: &Frame) -> Option<Vec<u8>> {
    let mut state = ArenaState::from_frame(layout, f)?;
    Some(state.observe(layout).to_vec())
}

/// Episode returns after `f`, given those before it.
fn next_returns(prev: &[f32], f: &Frame, agents: usize) -> Vec<f32> {
    if f.t == 0 {
        return vec![0.0; agents];
    }
    (0..agents)
        .map(|s| prev.get(s).copied().unwrap_or(0.0) + f.rewards.get(s).copied().unwrap_or(0.0))
        .collect()
}

impl Source {
    /// Frames available now (at least one).
    pub fn frames(&self) -> usize {
        match self {
            Source::Replay(r) => r.rollout.frames.len(),
            Source::Live(l) => l.history.len(),
        }
    }

    /// The arena's layout.
    pub fn layout(&self) -> &Layout {
        match self {
            Source::Replay(r) => &r.layout,
            Source::Live(l) => &l.layout,
        }
    }

    /// Frame `i` (clamped to the last).
    pub fn frame(&self, i: usize) -> Option<&Frame> {
        match self {
            Source::Replay(r) => r.rollout.frames.get(i.min(self.frames().saturating_sub(1))),
            Source::Live(l) => l
                .history
                .get(i.min(self.frames().saturating_sub(1)))
                .map(|f| &f.frame),
        }
    }

    /// The scene of frame `i` with `selected` marked. For the newest live frame (the batch's
    /// current state) it comes from the batch's render system; older frames are extracted from
    /// the history.
    pub fn scene(&mut self, i: usize, selected: Option<usize>) -> Option<Scene> {
        let last = self.frames().saturating_sub(1);
        if let Source::Live(l) = self
            && i >= last
        {
            let batch = l.actor.batch();
            batch.watch_render(0, selected);
            if let Some(scene) = batch.render_scene() {
                return Some(scene.clone());
            }
        }
        let frame = self.frame(i)?;
        Some(extract(self.layout(), frame, selected))
    }

    /// Episode returns per slot after frame `i`.
    pub fn returns(&self, i: usize) -> &[f32] {
        let last = self.frames().saturating_sub(1);
        match self {
            Source::Replay(r) => r.returns.get(i.min(last)).map_or(&[][..], |v| &v[..]),
            Source::Live(l) => l
                .history
                .get(i.min(last))
                .map_or(&[][..], |f| &f.returns[..]),
        }
    }

    /// Observations, Q-values and predictions at frame `i`.
    pub fn details(&mut self, i: usize) -> Details {
        let last = self.frames().saturating_sub(1);
        let i = i.min(last);
        match self {
            Source::Replay(r) => {
                if let Some((k, d)) = &r.cache
                    && *k == i
                {
                    return d.clone();
                }
                let obs = r
                    .rollout
                    .frames
                    .get(i)
                    .and_then(|f| rebuild_observations(&r.layout, f));
                let d = Details {
                    obs,
                    ..Details::default()
                };
                r.cache = Some((i, d.clone()));
                d
            }
            Source::Live(l) => l
                .history
                .get(i)
                .map(|f| f.details.clone())
                .unwrap_or_default(),
        }
    }

    /// Learner slot `slot`'s hidden-state norm at every frame up to `i` (live frames of a
    /// recurrent run; a frame without one, such as a terminal frame, repeats the last known).
    pub fn hidden_norm_history(&self, slot: usize, i: usize) -> Vec<f32> {
        let Source::Live(l) = self else {
            return Vec::new();
        };
        let mut last = 0.0;
        let mut out = Vec::new();
        for f in l.history.iter().take(i + 1) {
            if f.details.hidden_norms.is_empty() && out.is_empty() {
                continue;
            }
            last = f.details.hidden_norms.get(slot).copied().unwrap_or(last);
            out.push(last);
        }
        out
    }

    /// Whether frames can be added (live).
    pub fn is_live(&self) -> bool {
        matches!(self, Source::Live(_))
    }

    /// Adds one live frame; returns frames dropped from the front.
    pub fn extend(&mut self) -> Result<usize, ViewError> {
        match self {
            Source::Replay(_) => Ok(0),
            Source::Live(l) => l.step(),
        }
    }

    /// A fresh live arena with `seed`.
    pub fn restart(&mut self, seed: u64) -> Result<(), ViewError> {
        match self {
            Source::Replay(_) => Ok(()),
            Source::Live(l) => l.restart(seed),
        }
    }

    /// Frames dropped from the front of the history (live), for absolute frame numbers.
    pub fn dropped(&self) -> usize {
        match self {
            Source::Replay(_) => 0,
            Source::Live(l) => l.dropped,
        }
    }

    /// One line saying what is shown.
    pub fn describe(&self) -> String {
        match self {
            Source::Replay(r) => format!(
                "rollout {} ({}, seed {}, arena {})",
                r.path.display(),
                r.rollout.scenario.name,
                r.rollout.seed,
                r.rollout.arena
            ),
            Source::Live(l) => format!(
                "{}: {}, arena seed {}",
                l.loaded.scenario.name, l.acting, l.seed
            ),
        }
    }

    /// A new version of the watched scenario (see [`Live::reload`]); a replay has none.
    pub fn reload(&mut self, loaded: LoadedScenario) -> Result<(), ViewError> {
        match self {
            Source::Replay(_) => Err(ViewError::Usage(
                "a recorded rollout cannot reload its scenario".into(),
            )),
            Source::Live(l) => l.reload(loaded),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use crate::train::config::RunConfig;

    /// Trains a two-update CPU run of `scenario` (with `cfg`'s other fields) into a fresh `dir`.
    pub(crate) fn tiny_run(dir: &Path, scenario: &str, cfg: RunConfig) {
        let _ = std::fs::remove_dir_all(dir);
        let mut cfg = RunConfig {
            scenario: Some(scenario.into()),
            device: crate::critic::Device::Cpu,
            arenas: 4,
            rollout: 4,
            total_steps: 4 * 4 * 2,
            ..cfg
        };
        (cfg.network.hidden, cfg.network.layers) = (8, 1);
        // Every section's minibatches, whichever algorithm `cfg` names.
        cfg.pqn.minibatches = 1;
        cfg.pr2.minibatches = 1;
        cfg.online_dqn.minibatches = 1;
        crate::train::train(&cfg, dir, &crate::train::TrainOptions::default()).unwrap();
    }
}
