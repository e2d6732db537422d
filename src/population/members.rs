//! A population's members opened as policies on one scenario: each run replica restored from
//! its newest checkpoint, each scripted baseline by name, random. Every member acts for the
//! same arenas; [`super::mix::SlotMix`] chooses whose action each slot takes.

use std::path::{Path, PathBuf};

use super::PopulationError;
use super::manifest::{MemberSpec, Population};
use crate::critic::Chosen;
use crate::policy::{Policy, RandomPolicy, scripted_for};
use crate::scenario::{LoadedScenario, Scenario};
use crate::train::run_dir::RunDir;
use crate::train::{GreedyPolicy, new_learner};

/// One member after expansion: a run's replicas are one member each.
#[derive(Debug, Clone, PartialEq)]
pub enum Member {
    /// Replica `replica` of the run at `path`.
    Run {
        /// Run directory.
        path: PathBuf,
        /// Replica.
        replica: usize,
    },
    /// A scripted baseline by name.
    Scripted(String),
    /// Uniformly random.
    Random,
}

impl Member {
    /// The member's name in tables: `RUN/rK`, the scripted baseline's name, `random`.
    pub fn name(&self) -> String {
        match self {
            Member::Run { path, replica } => {
                let run = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into(),
                );
                format!("{run}/r{replica}")
            }
            Member::Scripted(name) => name.clone(),
            Member::Random => "random".into(),
        }
    }

    /// A member from its command-line form: `random`, `scripted:NAME`, or a run directory
    /// (`RUN` for replica 0, `RUN#K` for replica K).
    pub fn parse(text: &str) -> Result<Member, PopulationError> {
        if text == "random" {
            return Ok(Member::Random);
        }
        if let Some(name) = text.strip_prefix("scripted:") {
            return Ok(Member::Scripted(name.to_string()));
        }
        let (path, replica) = match text.rsplit_once('#') {
            Some((p, k)) => (
                p,
                k.parse::<usize>().map_err(|_| {
                    PopulationError::Invalid(format!(
                        "`{text}`: the replica after `#` must be a number"
                    ))
                })?,
            ),
            None => (text, 0),
        };
        if !Path::new(path).is_dir() {
            return Err(PopulationError::Invalid(format!(
                "`{text}` is not `random`, `scripted:NAME` or a run directory"
            )));
        }
        Ok(Member::Run {
            path: PathBuf::from(path),
            replica,
        })
    }
}

/// The members of `population`, every run replica expanded (in manifest order).
pub fn expand(population: &Population) -> Result<Vec<Member>, PopulationError> {
    let mut out = Vec::new();
    for spec in &population.members {
        match spec {
            MemberSpec::Run { path, replica } => {
                let cfg = RunDir::load_config(path).map_err(|e| PopulationError::Run {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                let count = cfg
                    .replicas()
                    .map_err(|e| PopulationError::Run {
                        path: path.clone(),
                        reason: e.to_string(),
                    })?
                    .len();
                match replica {
                    Some(k) if *k >= count => {
                        return Err(PopulationError::Run {
                            path: path.clone(),
                            reason: format!("replica {k} asked; the run has 0..{count}"),
                        });
                    }
                    Some(k) => out.push(Member::Run {
                        path: path.clone(),
                        replica: *k,
                    }),
                    None => out.extend((0..count).map(|k| Member::Run {
                        path: path.clone(),
                        replica: k,
                    })),
                }
            }
            MemberSpec::Scripted(name) => out.push(Member::Scripted(name.clone())),
            MemberSpec::Random => out.push(Member::Random),
        }
    }
    Ok(out)
}

/// `member` as a policy acting for `arenas` arenas of `loaded`: a run must have trained on a
/// scenario with the same observation length and actions.
pub fn open(
    member: &Member,
    loaded: &LoadedScenario,
    arenas: usize,
    seed: u64,
    device: &Chosen,
) -> Result<Box<dyn Policy + Send>, PopulationError> {
    let actions = loaded.scenario.action_set().len();
    match member {
        Member::Random => Ok(Box::new(RandomPolicy::new(seed, arenas, actions))),
        Member::Scripted(name) => {
            let mut all = scripted_for(loaded, seed, arenas);
            let names: Vec<String> = all.iter().map(|(n, _)| format!("`{n}`")).collect();
            match all.iter().position(|(n, _)| n == name) {
                Some(k) => Ok(all.swap_remove(k).1),
                None => Err(PopulationError::Invalid(format!(
                    "no scripted baseline `{name}` for scenario `{}`; it has {}",
                    loaded.scenario.name,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ))),
            }
        }
        Member::Run { path, replica } => {
            let bad = |reason: String| PopulationError::Run {
                path: path.clone(),
                reason,
            };
            let saved = RunDir::load_config(path).map_err(|e| bad(e.to_string()))?;
            let replicas = saved.replicas().map_err(|e| bad(e.to_string()))?;
            let chosen = replicas.get(*replica).ok_or_else(|| {
                bad(format!(
                    "replica {replica} asked; the run has 0..{}",
                    replicas.len()
                ))
            })?;
            let own = RunDir::scenario_file(path);
            if own.is_file() {
                let trained = Scenario::load(&own).map_err(|e| bad(e.to_string()))?;
                let (o, a) = (
                    trained.scenario.observation_len(),
                    trained.scenario.action_set().len(),
                );
                let (o2, a2) = (loaded.scenario.observation_len(), actions);
                if (o, a) != (o2, a2) {
                    return Err(bad(format!(
                        "it trained on `{}` ({o} observation values, {a} actions); this scenario, `{}`, has {o2} and {a2}",
                        trained.scenario.name, loaded.scenario.name
                    )));
                }
            }
            let mut cfg = chosen.cfg.clone();
            cfg.arenas = arenas.max(1);
            cfg.iql.rate_error_buffer = 0.0;
            let dir = RunDir::open(path).map_err(|e| bad(e.to_string()))?;
            let learner = new_learner(&cfg, loaded, device).map_err(|e| bad(e.to_string()))?;
            let greedy = GreedyPolicy::restore_replica(learner, &dir, *replica)
                .map_err(|e| bad(e.to_string()))?;
            Ok(Box::new(greedy))
        }
    }
}

/// The scenario the members play by default: the first run member's own (`scenario.ron` in
/// its directory, else its configuration's), refused when no member is a run.
pub fn scenario_of(members: &[Member]) -> Result<LoadedScenario, PopulationError> {
    for m in members {
        if let Member::Run { path, .. } = m {
            let bad = |reason: String| PopulationError::Run {
                path: path.clone(),
                reason,
            };
            let cfg = RunDir::load_config(path).map_err(|e| bad(e.to_string()))?;
            return crate::train::trained_scenario(path, &cfg).map_err(|e| bad(e.to_string()));
        }
    }
    Err(PopulationError::Invalid(
        "no member is a run: name the scenario (--scenario FILE)".into(),
    ))
}
