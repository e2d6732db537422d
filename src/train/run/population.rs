//! Training against a population (the run config's `population`): below every algorithm, the
//! population acts for its slots through the batch's fixed slots, one member per arena drawn
//! at each episode start by the sampling rule, and keeps each member's win rate (the learner
//! slots' mean episode return above the population slots') for prioritised sampling. Its
//! members are a frozen population's and, for self-play, snapshots of the learner's own
//! networks taken every `snapshot_every` updates (the newest `max_snapshots`), which one extra
//! copy of the learner plays. Snapshots are saved in every checkpoint and restored on resume;
//! the members' draws start afresh.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use super::RunError;
use super::greedy::GreedyPolicy;
use crate::critic::Chosen;
use crate::engine::{FixedSlots, SlotActor};
use crate::policy::Policy;
use crate::population::manifest::pick;
use crate::population::members::{expand, open};
use crate::population::{Population, Sampling};
use crate::scenario::LoadedScenario;
use crate::train::config::{PopulationTraining, RunConfig};
use crate::train::tensors::{NamedTensors, Tensor, find};
use crate::train::{Learner, TrainError, new_learner};

/// The checkpoint tensors of the snapshots: their parameters, concatenated, and their updates.
const SNAPSHOTS: &str = "population.snapshots";
const SNAPSHOT_UPDATES: &str = "population.snapshot_updates";

/// What acts for the population's slots.
struct Actor {
    /// The frozen population's members, then nothing: snapshots follow as indices
    /// `frozen.len()..`.
    frozen: Vec<Box<dyn Policy + Send>>,
    /// Their names.
    names: Vec<String>,
    /// Self-play: the update and parameters of each snapshot, oldest first.
    snapshots: VecDeque<(u64, Vec<f32>)>,
    /// The learner copy that plays a snapshot (its parameters swapped in per snapshot).
    player: Option<GreedyPolicy>,
    sampling: Sampling,
    /// Member of each arena.
    member: Vec<usize>,
    /// Which learner slots the population holds.
    slots: Vec<bool>,
    /// Per member: (wins, episodes) of the learner side.
    score: Vec<(f64, u64)>,
    /// Per arena: the episode's return so far of the learner side and of the population side.
    returns: Vec<(f64, f64)>,
    rng: ChaCha8Rng,
    scratch: Vec<u8>,
}

impl Actor {
    fn members(&self) -> usize {
        self.frozen.len() + self.snapshots.len()
    }

    fn draw(&mut self) -> usize {
        let m = self.members();
        let rates: Vec<Option<f64>> = (0..m)
            .map(|k| {
                self.score
                    .get(k)
                    .filter(|(_, n)| *n > 0)
                    .map(|(w, n)| w / *n as f64)
            })
            .collect();
        let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        pick(&self.sampling, m, &rates, u)
    }

    fn act_all(&mut self, obs: &[u8], actions: &mut [u8]) -> Result<(), String> {
        let m = self.members();
        let arenas = self.member.len();
        let n = actions.len() / arenas.max(1);
        let mut used = vec![false; m];
        for &k in &self.member {
            used[k.min(m - 1)] = true;
        }
        self.scratch.resize(actions.len(), 0);
        for (k, u) in used.iter().enumerate() {
            if !u {
                continue;
            }
            if k < self.frozen.len() {
                self.frozen[k]
                    .actions(obs, &mut self.scratch)
                    .map_err(|e| e.to_string())?;
            } else {
                let params = &self.snapshots[k - self.frozen.len()].1;
                let player = self.player.as_mut().ok_or("no snapshot player")?;
                player
                    .learner()
                    .set_params(params)
                    .map_err(|e| e.to_string())?;
                player
                    .actions(obs, &mut self.scratch)
                    .map_err(|e| e.to_string())?;
            }
            for (row, a) in actions.iter_mut().enumerate() {
                if self.member[row / n.max(1)].min(m - 1) == k {
                    *a = self.scratch[row];
                }
            }
        }
        Ok(())
    }
}

/// The actor behind the batch's fixed slots, shared with the run that adds snapshots.
struct Shared(Arc<Mutex<Actor>>);

impl SlotActor for Shared {
    fn act(&mut self, obs: &[u8], actions: &mut [u8]) -> Result<(), String> {
        let mut a = self.0.lock().map_err(|_| "a poisoned lock".to_string())?;
        a.act_all(obs, actions)
    }

    fn stepped(&mut self, rewards: &[f32], started: &[bool]) {
        let Ok(mut a) = self.0.lock() else { return };
        let arenas = a.member.len();
        let n = rewards.len() / arenas.max(1);
        let (own, theirs) = (
            a.slots.iter().filter(|s| !**s).count().max(1) as f64,
            a.slots.iter().filter(|s| **s).count().max(1) as f64,
        );
        for r in 0..arenas {
            let (mut mine, mut pop) = (0.0, 0.0);
            for i in 0..n {
                let x = rewards[r * n + i] as f64;
                if a.slots.get(i).copied().unwrap_or(false) {
                    pop += x;
                } else {
                    mine += x;
                }
            }
            a.returns[r].0 += mine / own;
            a.returns[r].1 += pop / theirs;
            if started.get(r).copied().unwrap_or(false) {
                let (x, y) = a.returns[r];
                let k = a.member[r];
                if let Some(s) = a.score.get_mut(k) {
                    s.0 += if x > y {
                        1.0
                    } else if x == y {
                        0.5
                    } else {
                        0.0
                    };
                    s.1 += 1;
                }
                a.returns[r] = (0.0, 0.0);
                a.member[r] = a.draw();
            }
        }
        for p in &mut a.frozen {
            p.episodes_start(started);
        }
        if let Some(p) = a.player.as_mut() {
            p.episodes_start(started);
        }
    }
}

/// A run's population play: the handle to its actor and when to snapshot.
pub(super) struct PopulationPlay {
    actor: Arc<Mutex<Actor>>,
    spec: PopulationTraining,
}

fn poisoned() -> RunError {
    RunError::Train(TrainError::Config(
        "the population's lock was poisoned by a failed step".into(),
    ))
}

fn invalid(m: String) -> RunError {
    RunError::Train(TrainError::Config(format!("population: {m}")))
}

impl PopulationPlay {
    /// Checks `cfg`'s population against the scenario before anything is created: its slots,
    /// and its frozen members (returned, expanded).
    pub(super) fn check(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
    ) -> Result<Vec<crate::population::Member>, RunError> {
        let Some(spec) = &cfg.population else {
            return Ok(Vec::new());
        };
        let n = loaded.scenario.learners_per_arena();
        if spec.slots.iter().any(|&s| s >= n) || spec.slots.len() >= n {
            return Err(invalid(format!(
                "slots {:?}: `{}` has learner slots 0..{n}, and at least one must stay with the learner",
                spec.slots, loaded.scenario.name
            )));
        }
        let members = match &spec.opponents {
            Some(path) => {
                let pop = Population::open(path).map_err(|e| invalid(e.to_string()))?;
                expand(&pop).map_err(|e| invalid(e.to_string()))?
            }
            None => Vec::new(),
        };
        if let Sampling::Weights(_) = spec.sampling
            && spec.snapshot_every > 0
        {
            return Err(invalid(
                "`sampling: Weights(..)` weighs a fixed list of members: it needs \
                 `snapshot_every: 0` (snapshots come and go)"
                    .into(),
            ));
        }
        // Snapshots add members as the run goes: the count is fixed only without them.
        let count = (spec.snapshot_every == 0).then_some(members.len());
        spec.sampling.check(count).map_err(invalid)?;
        Ok(members)
    }

    /// Installs the population on `learner`'s batch when `cfg` asks for one (restoring the
    /// snapshots of `restored`, the checkpoint a resume loaded).
    pub(super) fn install(
        cfg: &RunConfig,
        loaded: &LoadedScenario,
        learner: &mut dyn Learner,
        device: &Chosen,
        restored: Option<&NamedTensors>,
    ) -> Result<Option<PopulationPlay>, RunError> {
        let Some(spec) = cfg.population.clone() else {
            return Ok(None);
        };
        let members = PopulationPlay::check(cfg, loaded)?;
        let n = loaded.scenario.learners_per_arena();
        let arenas = learner.batch().arenas();
        let names = members.iter().map(|m| m.name()).collect();
        let frozen = members
            .iter()
            .map(|m| open(m, loaded, arenas, cfg.seed ^ 0x5eed, device))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(e.to_string()))?;
        let player = if spec.snapshot_every > 0 {
            Some(GreedyPolicy::new(new_learner(cfg, loaded, device)?))
        } else {
            None
        };
        let mut snapshots = VecDeque::new();
        let width = learner.params()?.len();
        if let Some(extra) = restored
            && let (Some(Tensor::F32(p)), Some(Tensor::U32(u))) =
                (find(extra, SNAPSHOTS), find(extra, SNAPSHOT_UPDATES))
        {
            if p.len() != u.len() * width {
                return Err(invalid(format!(
                    "the checkpoint's snapshots hold {} values for {} snapshots of {width}",
                    p.len(),
                    u.len()
                )));
            }
            for (k, &up) in u.iter().enumerate() {
                snapshots.push_back((up as u64, p[k * width..(k + 1) * width].to_vec()));
            }
        }
        if frozen.is_empty() && snapshots.is_empty() {
            // Self-play starts against the networks as they are.
            snapshots.push_back((learner.updates_done(), learner.params()?));
        }
        let mut actor = Actor {
            frozen,
            names,
            snapshots,
            player,
            sampling: spec.sampling.clone(),
            member: vec![0; arenas],
            slots: (0..n).map(|i| spec.slots.contains(&i)).collect(),
            score: Vec::new(),
            returns: vec![(0.0, 0.0); arenas],
            rng: crate::rng::stream(cfg.seed, 0, crate::rng::Purpose::Policy),
            scratch: Vec::new(),
        };
        actor.score = vec![(0.0, 0); actor.members()];
        for r in 0..arenas {
            actor.member[r] = actor.draw();
        }
        let actor = Arc::new(Mutex::new(actor));
        learner.batch().fix_slots(Some(FixedSlots {
            actor: Box::new(Shared(actor.clone())),
            slots: (0..n).map(|i| spec.slots.contains(&i)).collect(),
        }));
        Ok(Some(PopulationPlay { actor, spec }))
    }

    /// After an update: a snapshot of `learner` when one is due.
    pub(super) fn updated(&mut self, learner: &mut dyn Learner) -> Result<(), RunError> {
        let every = self.spec.snapshot_every;
        let update = learner.updates_done();
        if every == 0 || !update.is_multiple_of(every) {
            return Ok(());
        }
        let params = learner.params()?;
        let mut a = self.actor.lock().map_err(|_| poisoned())?;
        a.snapshots.push_back((update, params));
        let frozen = a.frozen.len();
        while a.snapshots.len() > self.spec.max_snapshots {
            a.snapshots.pop_front();
            // The oldest snapshot's score goes with it; arenas playing it move to a fresh draw
            // at their next episode (until then they play the next oldest).
            if a.score.len() > frozen {
                a.score.remove(frozen);
            }
            for m in a.member.iter_mut() {
                if *m > frozen {
                    *m -= 1;
                }
            }
        }
        let members = a.members();
        a.score.resize(members, (0.0, 0));
        Ok(())
    }

    /// The snapshots as checkpoint tensors.
    pub(super) fn tensors(&self) -> Result<NamedTensors, RunError> {
        let a = self.actor.lock().map_err(|_| poisoned())?;
        let params: Vec<f32> = a
            .snapshots
            .iter()
            .flat_map(|(_, p)| p.iter().copied())
            .collect();
        let updates: Vec<u32> = a.snapshots.iter().map(|(u, _)| *u as u32).collect();
        Ok(vec![
            (SNAPSHOTS.into(), Tensor::F32(params)),
            (SNAPSHOT_UPDATES.into(), Tensor::U32(updates)),
        ])
    }

    /// Members and, per member, the learner side's win rate so far (for the log).
    pub(super) fn summary(&self) -> Vec<(String, Option<f64>)> {
        let Ok(a) = self.actor.lock() else {
            return Vec::new();
        };
        let frozen = a.frozen.len();
        (0..a.members())
            .map(|k| {
                let name = if k < frozen {
                    a.names[k].clone()
                } else {
                    format!("snapshot of update {}", a.snapshots[k - frozen].0)
                };
                let rate = a
                    .score
                    .get(k)
                    .filter(|(_, n)| *n > 0)
                    .map(|(w, n)| w / *n as f64);
                (name, rate)
            })
            .collect()
    }
}
