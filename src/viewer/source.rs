//! What the viewer shows: the frames of a recorded rollout, or a run's greedy policy stepped
//! live in one arena (with a history of the frames shown so far).

use std::path::{Path, PathBuf};

use super::ViewError;
use crate::engine::EnvBatch;
use crate::layout::Layout;
use crate::policy::{Policy, RandomPolicy, heuristics_for};
use crate::render::scene::{Scene, extract};
use crate::rollout::{Frame, Rollout};
use crate::scenario::{LoadedScenario, Scenario};
use crate::substrate::ArenaState;
use crate::train::config::RunConfig;
use crate::train::run_dir::RunDir;
use crate::train::{GreedyPolicy, load_scenario, new_learner};

/// Live frames kept for stepping back; the oldest are dropped beyond this.
pub const HISTORY_LIMIT: usize = 20_000;

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

/// One frame of a live arena with what the networks said about it.
#[derive(Debug, Clone)]
struct LiveFrame {
    frame: Frame,
    details: Details,
    returns: Vec<f32>,
}

/// A recorded rollout.
pub struct Replay {
    /// The file.
    pub path: PathBuf,
    layout: Layout,
    rollout: Rollout,
    returns: Vec<Vec<f32>>,
    cache: Option<(usize, Details)>,
}

/// What acts in a live arena.
enum Actor {
    /// A run's greedy policy; its learner owns the arena.
    Run(GreedyPolicy),
    /// A scripted policy (random, or the substrate's heuristic) stepping its own arena.
    Scripted {
        batch: Box<EnvBatch>,
        policy: Box<dyn Policy>,
    },
}

impl Actor {
    fn batch(&mut self) -> &mut EnvBatch {
        match self {
            Actor::Run(p) => p.learner().batch(),
            Actor::Scripted { batch, .. } => batch,
        }
    }

    fn policy(&mut self) -> &mut dyn Policy {
        match self {
            Actor::Run(p) => p,
            Actor::Scripted { policy, .. } => policy.as_mut(),
        }
    }
}

/// Who acts in a live scenario (`gridarena view --scenario S --policy ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyChoice {
    /// Uniformly random actions.
    Random,
    /// The substrate's scripted baseline (`gridarena eval` reports the same one).
    Heuristic,
    /// A run directory: its newest checkpoint's greedy policy.
    Run(PathBuf),
}

impl std::str::FromStr for PolicyChoice {
    type Err = std::convert::Infallible;

    /// `random`, `heuristic`, or else a run directory (write `./random` for a run named so).
    fn from_str(s: &str) -> Result<PolicyChoice, Self::Err> {
        Ok(match s {
            "random" => PolicyChoice::Random,
            "heuristic" => PolicyChoice::Heuristic,
            other => PolicyChoice::Run(PathBuf::from(other)),
        })
    }
}

/// A policy acting live in one arena: a run's greedy policy, or a scripted one.
pub struct Live {
    /// The run directory, when a run's networks act (or wait for a scenario they fit).
    pub run: Option<PathBuf>,
    actor: Actor,
    /// The run's policy while the (watched) scenario does not fit its networks.
    parked: Option<GreedyPolicy>,
    /// The layout the run's networks were built for.
    run_layout: Option<Layout>,
    /// Without a run: the scripted policy asked for.
    choice: PolicyChoice,
    /// What acts now, for the panel.
    pub acting: String,
    /// Why the policy asked for is not the one acting (shown in the panel), if it is not.
    pub notice: Option<String>,
    loaded: LoadedScenario,
    layout: Layout,
    /// Seed of the current arena.
    pub seed: u64,
    /// The checkpoint's update (0 without a run).
    pub update: u64,
    /// What the Q-values are (`Q` or `E_rho[Q]`), empty when not shown.
    pub q_label: &'static str,
    /// Whether the run has opponent models.
    pub has_models: bool,
    history: Vec<LiveFrame>,
    /// Frames dropped from the front of the history so far.
    pub dropped: usize,
}

/// Either source.
pub enum Source {
    /// A recorded rollout.
    Replay(Box<Replay>),
    /// A live arena.
    Live(Box<Live>),
}

fn train_err(e: impl std::fmt::Display) -> ViewError {
    ViewError::Live(e.to_string())
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

/// The policy's values `[R, A]` of observation rows `[R, O]` (`None` when the rows do not fit
/// the layout).
fn q_rows(
    policy: &mut dyn Policy,
    layout: &Layout,
    obs: &[u8],
) -> Result<Option<Vec<f32>>, ViewError> {
    let (n, o) = (layout.learners, layout.obs_len);
    if o == 0 || n == 0 || !obs.len().is_multiple_of(o) {
        return Ok(None);
    }
    policy.q_values(obs).map_err(train_err)
}

fn split_rows(values: Vec<f32>, width: usize) -> Vec<Vec<f32>> {
    if width == 0 {
        return Vec::new();
    }
    values.chunks_exact(width).map(<[f32]>::to_vec).collect()
}

impl Live {
    /// Builds the run's learner for one arena, restores the newest checkpoint's parameters and
    /// captures the first frame.
    pub fn open(run: &Path, scenario: Option<&Path>, seed: u64) -> Result<Live, ViewError> {
        let config = crate::train::run_dir::RunDir::config_file(run);
        if !config.is_file() {
            return Err(ViewError::Run(format!(
                "{}: not a run directory (no config.ron)",
                run.display()
            )));
        }
        let mut cfg = RunConfig::load(&config).map_err(|e| ViewError::Run(e.to_string()))?;
        let run_seeds = cfg.replica_count();
        cfg.arenas = 1;
        cfg.seeds = 1;
        cfg.sweep.clear();
        cfg.seed = seed;
        // The run's own scenario, as it trained on it (scenario.ron), else as configured.
        let own = if crate::train::run_dir::RunDir::scenario_file(run).is_file() {
            Scenario::load(&crate::train::run_dir::RunDir::scenario_file(run))
        } else {
            load_scenario(&cfg)
        }
        .map_err(|e| ViewError::Run(format!("{}: its scenario: {e}", run.display())))?;
        let run_layout = Layout::derive(&own);
        let loaded = match scenario {
            Some(p) => {
                cfg.scenario = Some(p.to_path_buf());
                let other = Scenario::load(p).map_err(|e| ViewError::Run(e.to_string()))?;
                let problems = fit_problems(&run_layout, &Layout::derive(&other));
                if !problems.is_empty() {
                    return Err(ViewError::Checkpoint(format!(
                        "{} does not fit the run's checkpoint: {}",
                        p.display(),
                        problems.join("; ")
                    )));
                }
                other
            }
            None => own,
        };
        // Networks on the CPU: one arena needs no GPU, and the window owns the adapter.
        cfg.device = crate::critic::Device::Cpu;
        let device = crate::critic::choose_device(crate::critic::Device::Cpu).map_err(train_err)?;
        let mut learner = new_learner(&cfg, &loaded, &device).map_err(train_err)?;
        let dir = RunDir::open(run).map_err(|e| ViewError::Run(e.to_string()))?;
        // The networks' size must match exactly (a multi-seed run stores every replica's,
        // replica 0 first): a smaller network must not take a prefix of a larger one.
        let expected = learner.critic().params().map_err(train_err)?.len();
        let found = dir
            .load_latest()
            .map_err(|e| ViewError::Checkpoint(e.to_string()))?
            .params
            .len();
        if found != expected && found != expected * run_seeds {
            return Err(ViewError::Checkpoint(format!(
                "checkpoint of {}: {found} parameters, but the networks of its configuration \
                 on this scenario have {expected}; the checkpoint does not fit",
                run.display()
            )));
        }
        let mut policy = GreedyPolicy::restore(learner, &dir)
            .map_err(|e| ViewError::Checkpoint(e.to_string()))?;
        let update = policy.update();
        let q_label = policy.learner().q_label();
        let layout = policy.learner().batch().layout().clone();
        let mut live = Live {
            run: Some(run.to_path_buf()),
            actor: Actor::Run(policy),
            parked: None,
            run_layout: Some(run_layout),
            choice: PolicyChoice::Run(run.to_path_buf()),
            acting: run_acting(run, update),
            notice: None,
            loaded,
            layout,
            seed,
            update,
            q_label,
            has_models: false,
            history: Vec::new(),
            dropped: 0,
        };
        // A fresh arena: training desynchronised the learner's episode clocks, but the viewer
        // shows an episode from its first step.
        live.play(live.loaded.clone(), seed)?;
        Ok(live)
    }

    /// `loaded` played live by `choice`: a scripted policy, or a run's greedy policy (which
    /// must fit the scenario, as [`Live::open`] checks).
    pub fn with_policy(
        loaded: LoadedScenario,
        path: &Path,
        choice: PolicyChoice,
        seed: u64,
    ) -> Result<Live, ViewError> {
        if let PolicyChoice::Run(run) = &choice {
            return Live::open(run, Some(path), seed);
        }
        let batch = EnvBatch::new(&loaded, 1, seed).map_err(train_err)?;
        let (policy, acting, notice) = scripted(&loaded, &choice, seed);
        let layout = batch.layout().clone();
        let mut live = Live {
            run: None,
            actor: Actor::Scripted {
                batch: Box::new(batch),
                policy,
            },
            parked: None,
            run_layout: None,
            choice,
            acting,
            notice,
            loaded,
            layout,
            seed,
            update: 0,
            q_label: "",
            has_models: false,
            history: Vec::new(),
            dropped: 0,
        };
        live.start()?;
        Ok(live)
    }

    /// Captures the arena's current state as the first frame of a fresh history.
    fn start(&mut self) -> Result<(), ViewError> {
        let frame = self.actor.batch().with_arena(0, |layout, a| {
            crate::systems::record::frame(layout, a, false)
        });
        let agents = frame.positions.len();
        let f = self.capture(frame, true, &vec![0.0; agents])?;
        self.history = vec![f];
        self.dropped = 0;
        Ok(())
    }

    /// What the networks say about `frame`: the batch's current state when `current`, else a
    /// terminal state (observations rebuilt from the frame).
    fn capture(
        &mut self,
        frame: Frame,
        current: bool,
        prev: &[f32],
    ) -> Result<LiveFrame, ViewError> {
        let (a, agents) = (self.layout.actions, self.layout.agents);
        let returns = next_returns(prev, &frame, agents);
        let details = if current {
            let obs = self.actor.batch().buffers().obs.clone();
            let q = q_rows(self.actor.policy(), &self.layout, &obs)?;
            let (predictions, hidden_norms) = match &mut self.actor {
                Actor::Run(policy) => {
                    let learner = policy.learner();
                    self.has_models = learner.predict_opponents().map_err(train_err)?;
                    let predictions = if self.has_models {
                        learner.batch().opponent_predictions(0)
                    } else {
                        Vec::new()
                    };
                    let mut hidden_norms = policy.hidden_norms();
                    hidden_norms.truncate(self.layout.learners);
                    (predictions, hidden_norms)
                }
                Actor::Scripted { .. } => {
                    self.has_models = false;
                    (Vec::new(), Vec::new())
                }
            };
            Details {
                obs: Some(obs),
                obs_exact: true,
                q: q.map(|q| split_rows(q, a)).unwrap_or_default(),
                predictions,
                hidden_norms,
            }
        } else {
            let obs = rebuild_observations(&self.layout, &frame);
            // A policy with memory answers for the states it acts on, not for rebuilt ones.
            let q = match &obs {
                Some(o) if !self.actor.policy().has_memory() => {
                    q_rows(self.actor.policy(), &self.layout, o)?
                }
                _ => None,
            };
            Details {
                obs,
                obs_exact: false,
                q: q.map(|q| split_rows(q, a)).unwrap_or_default(),
                predictions: Vec::new(),
                hidden_norms: Vec::new(),
            }
        };
        Ok(LiveFrame {
            frame,
            details,
            returns,
        })
    }

    /// One step of the acting policy; returns how many frames were dropped from the front of
    /// the history.
    fn step(&mut self) -> Result<usize, ViewError> {
        let obs = self.actor.batch().buffers().obs.clone();
        let mut actions = vec![0u8; self.actor.batch().actions_mut().len()];
        self.actor
            .policy()
            .actions(&obs, &mut actions)
            .map_err(train_err)?;
        let batch = self.actor.batch();
        batch.start_recording(0);
        batch.actions_mut().copy_from_slice(&actions);
        let stepped = batch.step();
        // Always stop recording, even when the step failed.
        let frames = batch
            .finish_recording()
            .map(|r| r.frames)
            .unwrap_or_default();
        stepped.map_err(train_err)?;
        let starts = crate::train::eval::episode_starts(self.actor.batch());
        self.actor.policy().episodes_start(&starts);
        // frames[0] is the state before the step; then the stepped state and, when the
        // episode ended, the respawned one (the batch's current state is the last).
        let new: Vec<Frame> = frames.into_iter().skip(1).collect();
        let new = if new.is_empty() {
            vec![self.actor.batch().snapshot(0)]
        } else {
            new
        };
        let count = new.len();
        for (j, frame) in new.into_iter().enumerate() {
            let prev = self
                .history
                .last()
                .map(|f| f.returns.clone())
                .unwrap_or_default();
            let f = self.capture(frame, j + 1 == count, &prev)?;
            self.history.push(f);
        }
        let over = self.history.len().saturating_sub(HISTORY_LIMIT);
        if over > 0 {
            self.history.drain(..over);
            self.dropped += over;
        }
        Ok(over)
    }

    /// A fresh arena with `seed` (the networks are kept); the history starts over.
    fn restart(&mut self, seed: u64) -> Result<(), ViewError> {
        self.play(self.loaded.clone(), seed)
    }

    /// Plays `loaded` from now on (a new version of the watched scenario): a fresh arena with
    /// the current seed and a fresh history. A run's networks act when the scenario fits them;
    /// otherwise the random policy acts and [`Live::notice`] names what does not fit, until
    /// a version that fits comes.
    pub fn reload(&mut self, loaded: LoadedScenario) -> Result<(), ViewError> {
        self.play(loaded, self.seed)
    }

    fn play(&mut self, loaded: LoadedScenario, seed: u64) -> Result<(), ViewError> {
        let batch = EnvBatch::new(&loaded, 1, seed).map_err(train_err)?;
        let layout = batch.layout().clone();
        let mut notice = None;
        let acting;
        if let Some(run_layout) = &self.run_layout {
            let problems = fit_problems(run_layout, &layout);
            if problems.is_empty() {
                if let Some(policy) = self.parked.take() {
                    self.actor = Actor::Run(policy);
                }
                let Actor::Run(policy) = &mut self.actor else {
                    return Err(ViewError::Live("the run's policy was lost".into()));
                };
                *policy.learner().batch() = batch;
                policy.episodes_start(&[true]);
                acting = self
                    .run
                    .as_deref()
                    .map_or_else(String::new, |r| run_acting(r, self.update));
            } else {
                let random = Box::new(RandomPolicy::new(seed, 1, layout.actions));
                let old = std::mem::replace(
                    &mut self.actor,
                    Actor::Scripted {
                        batch: Box::new(batch),
                        policy: random,
                    },
                );
                if let Actor::Run(policy) = old {
                    self.parked = Some(policy);
                }
                notice = Some(format!(
                    "{} does not fit the run's networks ({}): the random policy acts until \
                     it fits again",
                    loaded.scenario.name,
                    problems.join("; ")
                ));
                acting = "random policy".to_string();
            }
        } else {
            let (policy, name, why) = scripted(&loaded, &self.choice, seed);
            self.actor = Actor::Scripted {
                batch: Box::new(batch),
                policy,
            };
            acting = name;
            notice = why;
        }
        self.acting = acting;
        self.notice = notice;
        self.layout = layout;
        self.loaded = loaded;
        self.seed = seed;
        self.start()
    }

    /// The scenario being played.
    pub fn scenario(&self) -> &LoadedScenario {
        &self.loaded
    }
}

fn run_acting(run: &Path, update: u64) -> String {
    format!("greedy policy of run {} (update {update})", run.display())
}

/// A scripted policy for `loaded` as `choice` asks, its name, and why it is not the one asked
/// for (a substrate without a heuristic for its action set gets the random policy).
fn scripted(
    loaded: &LoadedScenario,
    choice: &PolicyChoice,
    seed: u64,
) -> (Box<dyn Policy>, String, Option<String>) {
    let actions = loaded.scenario.action_set().len();
    let random = || Box::new(RandomPolicy::new(seed, 1, actions)) as Box<dyn Policy>;
    match choice {
        PolicyChoice::Heuristic => match heuristics_for(loaded, seed, 1).into_iter().next() {
            Some((name, policy)) => (policy, format!("heuristic {name}"), None),
            None => (
                random(),
                "random policy".into(),
                Some(format!(
                    "no scripted heuristic for {} with the {:?} action set: the random policy \
                     acts",
                    loaded.scenario.substrate.name(),
                    loaded.scenario.action_set()
                )),
            ),
        },
        _ => (random(), "random policy".into(), None),
    }
}

/// What keeps a run's networks (built for `run`) from acting in `other`, empty when they fit.
fn fit_problems(run: &Layout, other: &Layout) -> Vec<String> {
    let mut problems = Vec::new();
    if run.obs_len != other.obs_len {
        problems.push(format!(
            "observations of {} bytes, the run's networks read {}",
            other.obs_len, run.obs_len
        ));
    }
    if run.actions != other.actions {
        problems.push(format!(
            "{} actions, the run's networks have {}",
            other.actions, run.actions
        ));
    }
    if run.learners != other.learners {
        problems.push(format!(
            "{} learners, the run has {}",
            other.learners, run.learners
        ));
    }
    problems
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
    use super::*;
    use crate::train::config::{Algo, RhoForm};

    /// Trains a two-update CPU run of `scenario` (with `cfg`'s other fields) into a fresh `dir`.
    pub(crate) fn tiny_run(dir: &Path, scenario: &str, cfg: RunConfig) {
        let _ = std::fs::remove_dir_all(dir);
        let cfg = RunConfig {
            scenario: Some(scenario.into()),
            device: crate::critic::Device::Cpu,
            arenas: 4,
            rollout: 4,
            minibatches: 1,
            hidden: 8,
            layers: 1,
            total_steps: 4 * 4 * 2,
            ..cfg
        };
        crate::train::train(&cfg, dir, &crate::train::TrainOptions::default()).unwrap();
    }

    /// Every learner kind shows its values and, with opponent models, each learner's predicted
    /// distributions over every other learner's actions.
    #[test]
    fn live_frames_carry_values_and_predictions_for_every_algorithm() {
        for (k, algo) in [Algo::Pqn, Algo::Iql, Algo::Pr2Iql].into_iter().enumerate() {
            let dir = std::env::temp_dir().join(format!(
                "gridarena-viewer-source-{k}-{}",
                std::process::id()
            ));
            let cfg = RunConfig {
                algo,
                opponent_models: true,
                rho: RhoForm::Model,
                min_replay: 8,
                batch_size: 16,
                cer: 4,
                replay_capacity: 1024,
                ..Default::default()
            };
            tiny_run(&dir, "assets/scenarios/pursuit_3.ron", cfg);
            let mut live = Live::open(&dir, None, 3).unwrap();
            let (n, a) = (live.layout.learners, live.layout.actions);
            for _ in 0..3 {
                live.step().unwrap();
            }
            let d = &live.history.last().unwrap().details;
            assert_eq!(d.q.len(), n, "{algo:?}");
            assert!(d.q.iter().all(|q| q.len() == a), "{algo:?}");
            assert!(live.has_models, "{algo:?}");
            assert_eq!(d.predictions.len(), n, "{algo:?}");
            for p in &d.predictions {
                assert_eq!(p.len(), (n - 1) * a, "{algo:?}");
                for dist in p.chunks_exact(a) {
                    let sum: f32 = dist.iter().sum();
                    assert!((sum - 1.0).abs() < 1e-3, "{algo:?}: {dist:?}");
                }
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// A recurrent run's live frames carry each learner's hidden-state norm: zero at the
    /// first frame and where an episode starts again, positive while it acts, and the history
    /// plots one value per frame.
    #[test]
    fn live_frames_of_a_gru_run_carry_hidden_state_norms() {
        let dir = std::env::temp_dir().join(format!("gridarena-viewer-gru-{}", std::process::id()));
        let cfg = RunConfig {
            network: crate::train::config::NetworkKind::Gru,
            ..Default::default()
        };
        tiny_run(&dir, "assets/scenarios/cue_memory.ron", cfg);
        let mut live = Live::open(&dir, None, 3).unwrap();
        assert_eq!(live.history[0].details.hidden_norms, vec![0.0]);
        // Ten steps: more than an 8-step episode, so one starts from a zero state again.
        for _ in 0..10 {
            live.step().unwrap();
        }
        // Terminal frames (rebuilt, not acted on) have none.
        assert!(
            live.history
                .iter()
                .all(|f| f.details.hidden_norms.len() <= 1)
        );
        let source = Source::Live(Box::new(live));
        let frames = source.frames();
        let history = source.hidden_norm_history(0, frames - 1);
        assert_eq!(history.len(), frames);
        assert_eq!(history[0], 0.0);
        let (zeros, positive) = (
            history[1..].iter().filter(|&&v| v == 0.0).count(),
            history.iter().filter(|&&v| v > 0.0).count(),
        );
        assert!(zeros >= 1 && positive >= 5, "{history:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A watched scenario reloaded under a run: a version whose shapes do not fit the run's
    /// networks is played by the random policy with a notice naming what does not fit; a
    /// version that fits again brings the run's policy back. Without a run, the heuristic
    /// asked for acts, the one of the version's substrate.
    #[test]
    fn reloads_switch_policies_when_the_networks_do_not_fit() {
        let dir =
            std::env::temp_dir().join(format!("gridarena-viewer-reload-{}", std::process::id()));
        let three = "assets/scenarios/pursuit_3.ron";
        tiny_run(&dir, three, RunConfig::default());
        let load = |p: &str| Scenario::load(Path::new(p)).unwrap();
        let mut live = Live::open(&dir, Some(Path::new(three)), 3).unwrap();
        assert!(matches!(live.actor, Actor::Run(_)));
        // The first frame is an episode's first step (training desynchronised its clocks).
        assert_eq!(live.history[0].frame.t, 0);
        assert!(live.notice.is_none());
        live.step().unwrap();

        // The default Pursuit: 8 pursuers with a 7x7 window, not 3 learners with 5x5.
        live.reload(load("assets/scenarios/pursuit.ron")).unwrap();
        assert!(matches!(live.actor, Actor::Scripted { .. }));
        assert_eq!(live.acting, "random policy");
        let notice = live.notice.clone().unwrap();
        assert!(
            notice.contains("observations of 147 bytes, the run's networks read 75")
                && notice.contains("8 learners, the run has 3"),
            "{notice}"
        );
        assert_eq!(live.layout.learners, 8);
        assert_eq!(live.history.len(), 1);
        for _ in 0..3 {
            live.step().unwrap();
        }
        let d = &live.history.last().unwrap().details;
        assert!(d.q.is_empty(), "the random policy has no Q-values");

        // Back to a version that fits: the run's networks act again, with Q-values.
        live.reload(load(three)).unwrap();
        assert!(matches!(live.actor, Actor::Run(_)));
        assert!(live.notice.is_none() && live.parked.is_none());
        assert!(
            live.acting.starts_with("greedy policy of run"),
            "{}",
            live.acting
        );
        live.step().unwrap();
        let d = &live.history.last().unwrap().details;
        assert_eq!(d.q.len(), 3);

        // Without a run: the heuristic asked for, rebuilt for each version's substrate.
        let path = Path::new(three);
        let mut live = Live::with_policy(load(three), path, PolicyChoice::Heuristic, 1).unwrap();
        assert!(live.acting.starts_with("heuristic "), "{}", live.acting);
        assert!(live.notice.is_none());
        live.step().unwrap();
        let before = live.acting.clone();
        live.reload(load("assets/scenarios/coin_game.ron")).unwrap();
        assert!(live.acting.starts_with("heuristic "), "{}", live.acting);
        assert_ne!(live.acting, before);
        assert_eq!(live.layout.learners, 2);
        live.step().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
