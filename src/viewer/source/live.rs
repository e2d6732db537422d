//! A live arena: a policy stepped one frame at a time, each frame kept in a bounded history
//! with what the networks said about it (observations, Q-values, opponent predictions,
//! hidden-state norms); opening a run's checkpoint for it, and switching policies when the
//! watched scenario is reloaded.

use std::path::{Path, PathBuf};

use super::actor::{Actor, PolicyChoice, fit_problems, run_acting, scripted};
use super::{Details, ViewError, next_returns, rebuild_observations};
use crate::engine::EnvBatch;
use crate::layout::Layout;
use crate::policy::{Policy, RandomPolicy};
use crate::rollout::Frame;
use crate::scenario::{LoadedScenario, Scenario};
use crate::train::config::RunConfig;
use crate::train::run_dir::RunDir;
use crate::train::{GreedyPolicy, new_learner, trained_scenario};

/// Live frames kept for stepping back; the oldest are dropped beyond this.
pub const HISTORY_LIMIT: usize = 20_000;

/// One frame of a live arena with what the networks said about it.
#[derive(Debug, Clone)]
pub(super) struct LiveFrame {
    pub(super) frame: Frame,
    pub(super) details: Details,
    pub(super) returns: Vec<f32>,
}

/// A policy acting live in one arena: a run's greedy policy, or a scripted one.
pub struct Live {
    /// The run directory, when a run's networks act (or wait for a scenario they fit).
    pub run: Option<PathBuf>,
    pub(super) actor: Actor,
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
    pub(super) loaded: LoadedScenario,
    pub(super) layout: Layout,
    /// Seed of the current arena.
    pub seed: u64,
    /// The checkpoint's update (0 without a run).
    pub update: u64,
    /// What the Q-values are (`Q` or `E_rho[Q]`), empty when not shown.
    pub q_label: &'static str,
    /// Whether the run has opponent models.
    pub has_models: bool,
    pub(super) history: Vec<LiveFrame>,
    /// Frames dropped from the front of the history so far.
    pub dropped: usize,
}

fn train_err(e: impl std::fmt::Display) -> ViewError {
    ViewError::Live(e.to_string())
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
        let own = trained_scenario(run, &cfg)
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
        let expected = learner.params().map_err(train_err)?.len();
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
    pub(super) fn step(&mut self) -> Result<usize, ViewError> {
        let obs = self.actor.batch().buffers().obs.clone();
        let mask = self.actor.batch().action_mask().map(<[u8]>::to_vec);
        let mut actions = vec![0u8; self.actor.batch().actions_mut().len()];
        self.actor
            .policy()
            .actions_within(&obs, mask.as_deref(), &mut actions)
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
    pub(super) fn restart(&mut self, seed: u64) -> Result<(), ViewError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::config::{Algo, IqlConfig, LearnConfig, NetworkConfig, Pr2Config, RhoForm};
    use crate::viewer::source::Source;
    use crate::viewer::source::tests::tiny_run;

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
                learn: LearnConfig {
                    opponent_models: true,
                    ..Default::default()
                },
                iql: IqlConfig {
                    min_replay: 8,
                    batch_size: 16,
                    cer: 4,
                    replay_capacity: 1024,
                    ..Default::default()
                },
                pr2: Pr2Config {
                    rho: RhoForm::Model,
                    ..Default::default()
                },
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
            network: NetworkConfig {
                kind: crate::train::config::NetworkKind::Gru,
                ..Default::default()
            },
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
