//! `gridarena view`: the interactive viewer. A window (winit + egui through eframe, wgpu
//! renderer) shows the grid drawn by the same pipeline as `gridarena render` (through an
//! egui-wgpu paint callback) and a side panel with playback controls, a timeline, the
//! selected agent's observation window, Q-values and opponent-model predictions, and every
//! agent's rewards and return.
//!
//! Two sources: a recorded rollout (`gridarena view ROLLOUT`), or a policy acting in one live
//! arena, whose frames are kept so stepping back works there too: a run's newest checkpoint
//! acting greedily (`gridarena view --run RUN [--scenario S]`), or any scenario played by the
//! random policy, the substrate's heuristic or a run (`gridarena view --scenario S --policy
//! random|heuristic|RUN`). With `--watch` the scenario file is reloaded whenever it changes on
//! disk (the authoring loop of docs/authoring.md): a valid edit restarts the arena with the new
//! version, an invalid one keeps the last good version running and shows the located error.
//! `--screenshot PNG --after-frames N` writes a screenshot after N frames and closes (smoke
//! tests under Xvfb); `--reload-shots DIR` writes one after every reload.

mod app;
pub mod obs;
pub(crate) mod obs_image;
mod paint;
pub mod source;
mod watch;
mod widgets;

use std::path::PathBuf;
use std::sync::Arc;

use eframe::egui;

use crate::scenario::Scenario;
use app::{Options, Outcome, ViewerApp, lock};
use source::{Live, PolicyChoice, Replay, Source};

/// Arguments of `gridarena view`.
#[derive(clap::Args, Debug)]
pub struct ViewArgs {
    /// Rollout file to replay (omit with --run).
    pub rollout: Option<PathBuf>,
    /// Run directory: play its newest checkpoint's greedy policy live.
    #[arg(long, conflicts_with_all = ["rollout", "policy"])]
    pub run: Option<PathBuf>,
    /// Scenario to play live: alone, played by --policy; with --run, a scenario other than
    /// the run's (same observation and action sizes).
    #[arg(long, conflicts_with = "rollout")]
    pub scenario: Option<PathBuf>,
    /// With --scenario: who acts, `random` (default), `heuristic` (the substrate's scripted
    /// baseline) or a run directory (its greedy policy).
    #[arg(long, value_name = "random|heuristic|RUN", requires = "scenario")]
    pub policy: Option<PolicyChoice>,
    /// With --scenario: reload the scenario whenever its file changes; an invalid version
    /// shows its error and the last good one keeps running.
    #[arg(long, requires = "scenario")]
    pub watch: bool,
    /// With --watch: write a screenshot into this folder at start and after every reload
    /// (`NN_start.png`, `NN_reloaded.png`, `NN_error.png`, `NN_recovered.png`).
    #[arg(long, value_name = "DIR", requires = "watch")]
    pub reload_shots: Option<PathBuf>,
    /// Seed of the live arena.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Save a screenshot (PNG) after this many frames have been shown, then exit (smoke tests).
    #[arg(long, value_name = "PNG")]
    pub screenshot: Option<PathBuf>,
    /// With --screenshot: frames to show first.
    #[arg(long, default_value_t = 10)]
    pub after_frames: u64,
    /// Playback speed in frames per second (0.5 to 60).
    #[arg(long, default_value_t = 8.0)]
    pub fps: f32,
    /// Agent slot selected at start (its observation, Q-values and predictions are shown).
    #[arg(long)]
    pub agent: Option<usize>,
}

/// The message when no window can be opened.
pub const NO_DISPLAY: &str = "no display available: use `gridarena render ROLLOUT --out FILE.gif` \
     for headless output";

/// Errors of the viewer.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// Neither DISPLAY nor WAYLAND_DISPLAY is set.
    #[error("{}", NO_DISPLAY)]
    NoDisplay,
    /// The rollout file (missing, another format or version).
    #[error(transparent)]
    Rollout(#[from] crate::error::ArtifactError),
    /// A rollout whose frames do not fit its scenario.
    #[error("{0}")]
    BadRollout(String),
    /// The scenario file to play (file:line:column and what is allowed).
    #[error("{0}")]
    Scenario(String),
    /// The run directory or its configuration.
    #[error("{0}")]
    Run(String),
    /// A checkpoint that does not fit the scenario's networks.
    #[error("{0}")]
    Checkpoint(String),
    /// Building or stepping the live arena and its networks.
    #[error("live arena: {0}")]
    Live(String),
    /// The scenario file could not be watched.
    #[error("{0}")]
    Watch(String),
    /// The window could not be opened.
    #[error("could not open the viewer window: {0}")]
    Window(String),
    /// The screenshot could not be taken or written.
    #[error("{0}")]
    Screenshot(String),
    /// Bad arguments.
    #[error("{0}")]
    Usage(String),
}

/// Whether a window system is reachable (winit needs DISPLAY or WAYLAND_DISPLAY).
pub fn has_display() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// Loads what to show (so bad files and checkpoints are reported even without a display),
/// then runs the window until it is closed.
pub fn run(args: ViewArgs) -> Result<(), ViewError> {
    if !(args.fps.is_finite() && args.fps > 0.0) {
        return Err(ViewError::Usage(format!(
            "--fps {}: give a positive speed",
            args.fps
        )));
    }
    let source = match (&args.rollout, &args.run, &args.scenario) {
        (Some(path), None, None) => Source::Replay(Box::new(Replay::load(path)?)),
        (None, Some(run), scenario) => {
            Source::Live(Box::new(Live::open(run, scenario.as_deref(), args.seed)?))
        }
        (None, None, Some(path)) => {
            let loaded = Scenario::load(path).map_err(|e| ViewError::Scenario(e.to_string()))?;
            let choice = args.policy.clone().unwrap_or(PolicyChoice::Random);
            Source::Live(Box::new(Live::with_policy(
                loaded, path, choice, args.seed,
            )?))
        }
        _ => {
            return Err(ViewError::Usage(
                "give a rollout file (`gridarena view ROLLOUT`), a run (`--run RUN`) or a \
                 scenario (`--scenario S.ron [--policy random|heuristic|RUN] [--watch]`)"
                    .into(),
            ));
        }
    };
    let agents = source.layout().agents;
    if let Some(a) = args.agent
        && a >= agents
    {
        return Err(ViewError::Usage(format!(
            "--agent {a}: the arena has agents 0..{agents}"
        )));
    }
    if !has_display() {
        return Err(ViewError::NoDisplay);
    }
    let title = format!("gridarena view: {}", source.describe());
    let opts = Options {
        screenshot: args.screenshot.clone(),
        after_frames: args.after_frames,
        fps: args.fps,
        agent: args.agent,
        watch: if args.watch {
            args.scenario.clone()
        } else {
            None
        },
        reload_shots: args.reload_shots.clone(),
    };
    let outcome: Outcome = Arc::default();
    let result = outcome.clone();
    let native = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_inner_size([1180.0, 760.0])
            .with_title(title),
        renderer: eframe::Renderer::Wgpu,
        ..Default::default()
    };
    eframe::run_native(
        "gridarena view",
        native,
        Box::new(move |cc| {
            let app = ViewerApp::new(cc, source, opts, outcome)?;
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| ViewError::Window(e.to_string()))?;
    let ended = lock(&result).take();
    match (args.screenshot, ended) {
        (_, Some(Err(e))) => Err(ViewError::Screenshot(e)),
        (Some(path), None) => Err(ViewError::Screenshot(format!(
            "the window closed before the screenshot {} was taken",
            path.display()
        ))),
        _ => Ok(()),
    }
}
