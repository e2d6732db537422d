//! The population manifest: a small RON file naming a set of policies (runs' checkpoints, the
//! replicas of a multi-seed or sweep run, scripted baselines, random) and the rule a role
//! samples them by. Paths inside it are relative to the file.
//!
//! ```ron
//! Population(
//!     name: "coin_pqn",
//!     sampling: Uniform,
//!     members: [
//!         Run(path: "../runs/pqn_coin"),          // every replica of the run
//!         Run(path: "../runs/ippo_coin", replica: Some(2)),
//!         Scripted("nearest coin"),
//!         Random,
//!     ],
//! )
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::PopulationError;

/// One policy of a population, as written in a manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MemberSpec {
    /// The greedy policy of a run's newest checkpoint: replica `replica` of a multi-seed or
    /// sweep run, or every replica (one member each) when `None`.
    Run {
        /// The run directory (relative to the manifest).
        path: PathBuf,
        /// Which replica; `None`: all of them.
        #[serde(default)]
        replica: Option<usize>,
    },
    /// A scripted baseline of the substrate, by the name `gridarena eval` prints.
    Scripted(String),
    /// Uniformly random among the legal actions.
    Random,
}

/// How a role filled from a population picks its member, per arena and episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub enum Sampling {
    /// Every member equally often.
    #[default]
    Uniform,
    /// Always member `k` (in the order `gridarena eval` lists the expanded members).
    Fixed(usize),
    /// Prioritised by win rate (prioritised fictitious self-play): member k is drawn with
    /// weight `(1 - w_k)^exponent`, where `w_k` is the focal side's win rate against it, so
    /// the members it beats least come up most. Unknown win rates count as 0.5.
    Prioritized {
        /// Sharpness (1: proportional to the loss rate; larger: harder members dominate).
        exponent: f64,
    },
    /// Member k with probability `weights[k] / sum(weights)` (a mixed strategy over the
    /// members, as PSRO's meta-strategy): one weight per expanded member, each finite and
    /// non-negative, their sum above 0.
    Weights(Vec<f64>),
}

impl Sampling {
    /// Why this rule cannot draw from `members` expanded members (`None`: the count is not
    /// known yet, and only what does not depend on it is checked).
    pub fn check(&self, members: Option<usize>) -> Result<(), String> {
        match self {
            Sampling::Uniform => Ok(()),
            Sampling::Fixed(k) => match members {
                Some(m) if *k >= m => Err(format!(
                    "`sampling: Fixed({k})` names no member: the population has {m}"
                )),
                _ => Ok(()),
            },
            Sampling::Prioritized { exponent } => {
                if exponent.is_finite() && *exponent >= 0.0 {
                    Ok(())
                } else {
                    Err(format!(
                        "`Prioritized(exponent: {exponent})`: the exponent must be finite and >= 0"
                    ))
                }
            }
            Sampling::Weights(w) => {
                if let Some((k, x)) = w
                    .iter()
                    .enumerate()
                    .find(|(_, x)| !(x.is_finite() && **x >= 0.0))
                {
                    return Err(format!(
                        "`Weights`: weight {k} is {x}; every weight must be finite and >= 0"
                    ));
                }
                if w.iter().sum::<f64>() <= 0.0 {
                    return Err(format!(
                        "`Weights({w:?})`: the weights sum to 0; at least one must be positive"
                    ));
                }
                match members {
                    Some(m) if w.len() != m => Err(format!(
                        "`Weights` has {} weights for {m} members: one weight per member",
                        w.len()
                    )),
                    _ => Ok(()),
                }
            }
        }
    }
}

/// A population manifest as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Population {
    /// Its name (in reports and tables).
    pub name: String,
    /// How roles filled from it pick a member.
    #[serde(default)]
    pub sampling: Sampling,
    /// Its members.
    pub members: Vec<MemberSpec>,
}

impl Population {
    /// Reads a manifest; relative paths of its runs become relative to the working directory.
    pub fn load(path: &Path) -> Result<Population, PopulationError> {
        let text = std::fs::read_to_string(path).map_err(|error| PopulationError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        let mut p = Population::parse(&text).map_err(|reason| PopulationError::Manifest {
            path: path.to_path_buf(),
            reason,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        for m in &mut p.members {
            if let MemberSpec::Run { path: run, .. } = m
                && run.is_relative()
            {
                *run = base.join(&*run);
            }
        }
        Ok(p)
    }

    /// Parses manifest text (paths kept as written); the reason names the line and column.
    pub fn parse(text: &str) -> Result<Population, String> {
        let p: Population = ron::from_str(text).map_err(|e| e.to_string())?;
        if p.members.is_empty() {
            return Err("`members` is empty: a population needs at least one policy".into());
        }
        // A run without `replica` expands to every replica: the count is known only then.
        let expands = p
            .members
            .iter()
            .any(|m| matches!(m, MemberSpec::Run { replica: None, .. }));
        p.sampling.check((!expands).then_some(p.members.len()))?;
        Ok(p)
    }

    /// The population of one run directory: every replica, sampled uniformly, named after it.
    pub fn of_run(run: &Path) -> Population {
        let name = run
            .file_name()
            .map_or_else(|| run.display().to_string(), |n| n.to_string_lossy().into());
        Population {
            name,
            sampling: Sampling::Uniform,
            members: vec![MemberSpec::Run {
                path: run.to_path_buf(),
                replica: None,
            }],
        }
    }

    /// A manifest file, or a run directory taken as the population of its replicas.
    pub fn open(path: &Path) -> Result<Population, PopulationError> {
        if path.is_dir() {
            Ok(Population::of_run(path))
        } else {
            Population::load(path)
        }
    }
}

/// Member `k` under `sampling` for a draw `u` uniform in [0, 1), given the focal side's win
/// rate against each member (`None`: unknown).
pub fn pick(sampling: &Sampling, members: usize, win_rates: &[Option<f64>], u: f64) -> usize {
    match sampling {
        Sampling::Uniform => ((u * members as f64) as usize).min(members.saturating_sub(1)),
        Sampling::Fixed(k) => (*k).min(members.saturating_sub(1)),
        Sampling::Prioritized { exponent } => {
            let weights: Vec<f64> = (0..members)
                .map(|k| {
                    let w = win_rates.get(k).copied().flatten().unwrap_or(0.5);
                    (1.0 - w.clamp(0.0, 1.0)).powf(*exponent)
                })
                .collect();
            by_weight(&weights, members, u)
        }
        Sampling::Weights(w) => {
            // Members past the weights get none; weights past the members are ignored.
            let weights: Vec<f64> = (0..members)
                .map(|k| {
                    w.get(k)
                        .copied()
                        .filter(|x| x.is_finite() && *x > 0.0)
                        .unwrap_or(0.0)
                })
                .collect();
            by_weight(&weights, members, u)
        }
    }
}

/// Member k with probability proportional to `weights[k]` for a draw `u` in [0, 1); uniform
/// when no weight is positive.
fn by_weight(weights: &[f64], members: usize, u: f64) -> usize {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 || members == 0 {
        // The focal side beats everyone (or no weight is usable): fall back to uniform.
        return pick(&Sampling::Uniform, members, &[], u);
    }
    let mut at = u * total;
    for (k, w) in weights.iter().enumerate() {
        if at < *w {
            return k;
        }
        at -= w;
    }
    // Rounding at the top end: the last member with weight.
    weights
        .iter()
        .rposition(|w| *w > 0.0)
        .unwrap_or(members - 1)
}
