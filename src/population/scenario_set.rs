//! Evaluation scenarios in Melting Pot's sense: the population under test fills the focal
//! slots of a substrate, a held-out background population the rest, and the focal players'
//! per-capita return is reported raw and normalised between two named baselines that take the
//! focal slots in their place (0 = the `zero` baseline, 1 = the `one` baseline), with the
//! social metrics of the whole arena. A scenario set is a RON file:
//!
//! ```ron
//! ScenarioSet(
//!     name: "coin_game",
//!     scenarios: [
//!         (
//!             name: "coin_vs_nearest_coin",
//!             scenario: "../scenarios/coin_game.ron",
//!             focal_slots: [0],
//!             background: Members(sampling: Uniform, members: [Scripted("nearest coin")]),
//!             zero: Random,
//!             one: Scripted("nearest coin"),
//!         ),
//!     ],
//! )
//! ```
//!
//! Focal members are spread evenly over the arenas (arena r takes member r mod F); background
//! members are drawn per arena and slot by the background's sampling rule, with the same draws
//! for the population and the baselines, which also see the same starts (the same seed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand_core::Rng;
use serde::{Deserialize, Serialize};

use super::manifest::{MemberSpec, Population, Sampling, pick};
use super::members::{Member, expand, open};
use super::mix::SlotMix;
use super::{PopulationError, learners, mean_over};
use crate::critic::Chosen;
use crate::engine::EnvBatch;
use crate::policy::Policy;
use crate::scenario::{LoadedScenario, Scenario};
use crate::train::eval::{PolicyResult, play_episodes, result};
use crate::train::{TrainError, mean_ci};

/// Where a scenario's background players come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Background {
    /// A population manifest or a run directory (relative to the set file).
    File(PathBuf),
    /// Members listed in place.
    Members {
        /// How each background slot picks its member.
        #[serde(default)]
        sampling: Sampling,
        /// The members.
        members: Vec<MemberSpec>,
    },
}

/// One evaluation scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalScenario {
    /// Its name in the report.
    pub name: String,
    /// The substrate's scenario file (relative to the set file).
    pub scenario: PathBuf,
    /// The learner slots the population under test fills.
    pub focal_slots: Vec<usize>,
    /// Who fills the other slots.
    pub background: Background,
    /// The baseline whose focal return normalises to 0.
    pub zero: MemberSpec,
    /// The baseline whose focal return normalises to 1.
    pub one: MemberSpec,
    /// Episodes (default: the command's `--episodes`).
    #[serde(default)]
    pub episodes: Option<usize>,
}

/// A scenario set file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSet {
    /// Its name.
    pub name: String,
    /// Its scenarios.
    pub scenarios: Vec<EvalScenario>,
}

impl ScenarioSet {
    /// Reads a set; its paths become relative to the working directory.
    pub fn load(path: &Path) -> Result<ScenarioSet, PopulationError> {
        let text = std::fs::read_to_string(path).map_err(|error| PopulationError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        let bad = |reason: String| PopulationError::Manifest {
            path: path.to_path_buf(),
            reason,
        };
        let mut set: ScenarioSet = ron::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if set.scenarios.is_empty() {
            return Err(bad("`scenarios` is empty".into()));
        }
        let base = path.parent().unwrap_or(Path::new("."));
        let rebase = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        for s in &mut set.scenarios {
            rebase(&mut s.scenario);
            if s.focal_slots.is_empty() {
                return Err(bad(format!(
                    "scenario `{}`: `focal_slots` is empty",
                    s.name
                )));
            }
            match &mut s.background {
                Background::File(p) => rebase(p),
                Background::Members { members, .. } => {
                    for m in members {
                        if let MemberSpec::Run { path, .. } = m {
                            rebase(path);
                        }
                    }
                }
            }
            for m in [&mut s.zero, &mut s.one] {
                if let MemberSpec::Run { path, .. } = m {
                    rebase(path);
                }
            }
        }
        Ok(set)
    }
}

/// One scenario's results.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    /// The scenario's name.
    pub name: String,
    /// The substrate scenario's name.
    pub substrate: String,
    /// Focal slots and learner slots in all.
    pub focal_slots: Vec<usize>,
    /// Learner slots.
    pub players: usize,
    /// Episodes.
    pub episodes: usize,
    /// Focal per-capita return, mean and 95% half-width.
    pub focal_return: f64,
    /// Its 95% half-width.
    pub focal_ci95: f64,
    /// Focal per-capita return per focal member.
    pub per_member: Vec<f64>,
    /// The `zero` and `one` baselines' focal per-capita returns, and their names.
    pub baselines: [(String, f64); 2],
    /// Half-widths of the baselines' 95% intervals.
    pub baseline_ci95: [f64; 2],
    /// Whether the baselines' intervals are apart: otherwise the normalised score divides by
    /// noise, and tables mark it.
    pub baselines_apart: bool,
    /// `(focal - zero) / (one - zero)`, none when the baselines tie.
    pub normalised: Option<f64>,
    /// The same for each focal member.
    pub per_member_normalised: Vec<Option<f64>>,
    /// Social metrics of the whole arena with the population in the focal slots.
    pub social: PolicyResult,
}

/// A scenario set's results (`scenario_set.json`).
#[derive(Debug, Clone, Serialize)]
pub struct SetResult {
    /// The set's name.
    pub set: String,
    /// The focal population's name.
    pub population: String,
    /// Its members' names.
    pub members: Vec<String>,
    /// Per scenario.
    pub scenarios: Vec<ScenarioResult>,
}

impl SetResult {
    /// The normalised scores as `gridarena report --scores` reads them: the population's
    /// members are the runs, the scenarios the tasks (a scenario whose baselines tie is left
    /// out).
    pub fn scores(&self) -> serde_json::Value {
        let kept: Vec<&ScenarioResult> = self
            .scenarios
            .iter()
            .filter(|s| s.per_member_normalised.iter().all(Option::is_some))
            .collect();
        let matrix: Vec<Vec<f64>> = (0..self.members.len())
            .map(|m| {
                kept.iter()
                    .map(|s| s.per_member_normalised[m].unwrap_or(f64::NAN))
                    .collect()
            })
            .collect();
        let mut algorithms = serde_json::Map::new();
        algorithms.insert(self.population.clone(), serde_json::json!(matrix));
        serde_json::json!({
            "tasks": kept.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            "algorithms": algorithms,
        })
    }
}

fn normalise(x: f64, zero: f64, one: f64) -> Option<f64> {
    ((one - zero).abs() > 1e-9).then(|| (x - zero) / (one - zero))
}

/// Evaluates `population` on every scenario of `set`; `progress` is told each scenario.
pub fn evaluate_set(
    set: &ScenarioSet,
    population: &Population,
    episodes: usize,
    seed: u64,
    device: &Chosen,
    progress: &indicatif::ProgressBar,
) -> Result<SetResult, PopulationError> {
    let focal = expand(population)?;
    progress.set_length(set.scenarios.len() as u64);
    let mut scenarios = Vec::new();
    for s in &set.scenarios {
        scenarios.push(evaluate_one(s, &focal, episodes, seed, device)?);
        progress.inc(1);
    }
    Ok(SetResult {
        set: set.name.clone(),
        population: population.name.clone(),
        members: focal.iter().map(Member::name).collect(),
        scenarios,
    })
}

fn evaluate_one(
    s: &EvalScenario,
    focal: &[Member],
    episodes: usize,
    seed: u64,
    device: &Chosen,
) -> Result<ScenarioResult, PopulationError> {
    let loaded: LoadedScenario =
        Scenario::load(&s.scenario).map_err(|e| PopulationError::Manifest {
            path: s.scenario.clone(),
            reason: e.to_string(),
        })?;
    let n = learners(&loaded);
    let invalid = |m: String| PopulationError::Invalid(format!("scenario `{}`: {m}", s.name));
    if s.focal_slots.iter().any(|&k| k >= n) {
        return Err(invalid(format!(
            "focal slots {:?}, but `{}` has learner slots 0..{n}",
            s.focal_slots, loaded.scenario.name
        )));
    }
    let episodes = s.episodes.unwrap_or(episodes).max(1);
    let background = match &s.background {
        Background::File(p) => Population::open(p)?,
        Background::Members { sampling, members } => Population {
            name: format!("{} background", s.name),
            sampling: sampling.clone(),
            members: members.clone(),
        },
    };
    let bg = expand(&background)?;
    let background_slots = n - s.focal_slots.len();
    if background_slots > 0 && bg.is_empty() {
        return Err(invalid("the background has no members".into()));
    }
    // Who acts where: focal member r mod F; background drawn per (arena, slot).
    let mut rng = crate::rng::stream(seed, 0, crate::rng::Purpose::Policy);
    let mut assign_focal = vec![0usize; episodes * n];
    let mut assign_bg = vec![0usize; episodes * n];
    for r in 0..episodes {
        for i in 0..n {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            assign_bg[r * n + i] = pick(&background.sampling, bg.len(), &[], u);
            assign_focal[r * n + i] = r % focal.len().max(1);
        }
    }
    let is_focal = |row: usize| s.focal_slots.contains(&(row % n));
    // The rows' member indices when the focal side has `f` members listed first.
    let assign = |f: usize, focal_of: &dyn Fn(usize) -> usize| -> Vec<usize> {
        (0..episodes * n)
            .map(|row| match is_focal(row) {
                true => focal_of(row),
                false => f + assign_bg[row],
            })
            .collect()
    };
    // The background is opened afresh for every play, so the population and the baselines
    // meet the same background actions on the same starts.
    let play =
        |front: &mut [Box<dyn Policy + Send>], rows: Vec<usize>| -> Result<_, PopulationError> {
            let mut bg_policies = bg
                .iter()
                .map(|m| open(m, &loaded, episodes, seed, device))
                .collect::<Result<Vec<_>, _>>()?;
            let members: Vec<&mut dyn Policy> = front
                .iter_mut()
                .chain(bg_policies.iter_mut())
                .map(|p| p.as_mut() as &mut dyn Policy)
                .collect();
            let mut mix = SlotMix::new(members, rows);
            Ok(play_episodes(&loaded, episodes, seed, &mut mix)?)
        };
    let focal_return = |eps: &[crate::metrics::EpisodeSummary]| -> Vec<f64> {
        eps.iter()
            .map(|e| mean_over(&e.returns, &s.focal_slots))
            .collect()
    };
    let mut fp = focal
        .iter()
        .map(|m| open(m, &loaded, episodes, seed, device))
        .collect::<Result<Vec<_>, _>>()?;
    let f = fp.len();
    let (eps, sustain) = play(&mut fp, assign(f, &|row| assign_focal[row]))?;
    let per_episode = focal_return(&eps);
    let (focal_mean, focal_ci) = mean_ci(&per_episode);
    let mut per_member = vec![(0.0, 0usize); f];
    for (e, v) in eps.iter().zip(&per_episode) {
        let m = &mut per_member[e.arena as usize % f];
        m.0 += v;
        m.1 += 1;
    }
    let per_member: Vec<f64> = per_member
        .iter()
        .map(|(s, c)| if *c == 0 { f64::NAN } else { s / *c as f64 })
        .collect();
    drop(fp);
    let baseline = |spec: &MemberSpec| -> Result<(String, f64, f64), PopulationError> {
        let pop = Population {
            name: String::new(),
            sampling: Sampling::Uniform,
            members: vec![spec.clone()],
        };
        let m = expand(&pop)?;
        let first = m
            .first()
            .ok_or_else(|| invalid("a baseline names no policy".into()))?;
        let mut p = vec![open(first, &loaded, episodes, seed, device)?];
        let (eps, _) = play(&mut p, assign(1, &|_| 0))?;
        let (m, c) = mean_ci(&focal_return(&eps));
        Ok((first.name(), m, c))
    };
    let zero = baseline(&s.zero)?;
    let one = baseline(&s.one)?;
    let names = EnvBatch::new(&loaded, 1, seed)
        .map_err(TrainError::from)
        .map_err(crate::train::RunError::from)?
        .layout()
        .counter_names
        .clone();
    let social = result(&names, &eps, &sustain);
    Ok(ScenarioResult {
        name: s.name.clone(),
        substrate: loaded.scenario.name.clone(),
        focal_slots: s.focal_slots.clone(),
        players: n,
        episodes,
        focal_return: focal_mean,
        focal_ci95: focal_ci,
        normalised: normalise(focal_mean, zero.1, one.1),
        per_member_normalised: per_member
            .iter()
            .map(|&x| normalise(x, zero.1, one.1))
            .collect(),
        per_member,
        baseline_ci95: [zero.2, one.2],
        baselines_apart: (one.1 - zero.1).abs() > zero.2 + one.2,
        baselines: [(zero.0, zero.1), (one.0, one.1)],
        social,
    })
}

/// Per scenario, the counters' names in a stable order (for tables).
pub fn counter_names(result: &SetResult) -> Vec<String> {
    let mut all: BTreeMap<String, ()> = BTreeMap::new();
    for s in &result.scenarios {
        for k in s.social.counters.keys() {
            all.insert(k.clone(), ());
        }
    }
    all.into_keys().collect()
}
