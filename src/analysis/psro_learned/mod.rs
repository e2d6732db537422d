//! PSRO with learned best responses, for scenarios the exact analysis cannot hold: two learner
//! slots, one population per slot, every member after the first a training run.
//!
//! - **Members.** Each slot's population starts from one policy (random, or a scripted
//!   baseline of the substrate) and grows by one run per iteration: the best response of
//!   iteration k for slot i is the run `DIR/iter_k/slot_i`, trained with the run configuration
//!   given against the other slot's population (`population` in the run config, sampled by
//!   `Sampling::Weights` = that slot's meta-strategy, the manifest
//!   `DIR/iter_k/opponents_slot_i.ron`). As a member it acts for its own slot only.
//! - **The meta-game** holds, for every pair of members, each slot's mean undiscounted episode
//!   return over `episodes` evaluation episodes (the first episode of fresh arenas) with its
//!   standard error; each pair gets its own evaluation seed, so entries are independent
//!   estimates. Entries are kept across iterations: an iteration evaluates only the pairs with
//!   a new member.
//! - **Approximate NashConv** of iteration k's meta-strategy `sigma`: for each slot,
//!   `gain_i = u_i(BR_i, sigma_-i) - u_i(sigma)`, both read off the meta-game (the new best
//!   response's row is evaluated at the end of the iteration anyway), and
//!   `NashConv = sum_i max(0, gain_i)`, with a 95% interval from the entries' standard errors
//!   (treated as independent). A learned best response is at most as good as the true one, so
//!   this is a **lower bound** on the meta-strategy's NashConv in the full game, up to the
//!   interval; a short training budget makes it a loose one.
//! - **Resume.** Everything is kept in `DIR/psro.json`, written after each step (meta-game
//!   entries, the meta-strategy an iteration is training against, each finished iteration).
//!   Running again with the same settings continues after the last finished iteration; a best
//!   response cut short resumes from its run directory's checkpoint. A file it cannot read, or
//!   settings that differ from the saved ones, are refused before anything is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod state;

pub use state::{LearnedPsroIteration, LearnedPsroReport, MemberRecord, ProfileEntry, STATE_FILE};
use state::{load_state, settings, write_state};

use super::meta_solver::MetaSolver;
use crate::critic::Chosen;
use crate::policy::Policy;
use crate::population::members::{Member, open};
use crate::population::mix::SlotMix;
use crate::population::{MemberSpec, PopulationError, Sampling};
use crate::scenario::LoadedScenario;
use crate::train::config::{PopulationTraining, RunConfig};
use crate::train::eval::play_episodes;
use crate::train::{RunError, TrainOptions, mean_ci, train};

/// Why PSRO with learned best responses cannot run or go on.
#[derive(Debug, thiserror::Error)]
pub enum LearnedPsroError {
    /// Not a two-slot scenario.
    #[error(
        "PSRO with learned best responses runs on scenarios with 2 learner slots; `{scenario}` \
         has {learners}"
    )]
    Learners {
        /// The scenario.
        scenario: String,
        /// Its learner slots.
        learners: usize,
    },
    /// Zero iterations asked for.
    #[error("PSRO needs at least 1 iteration")]
    NoIterations,
    /// Too few evaluation episodes for an interval.
    #[error("--episodes {0}: at least 2 evaluation episodes per pair of members, for an interval")]
    Episodes(usize),
    /// A first member that is not random or a scripted baseline.
    #[error("first member {0}: `random` or `scripted:NAME` (a scripted baseline of the scenario)")]
    First(String),
    /// The best responses' run configuration cannot train against a population.
    #[error("the best responses' run configuration: {0}")]
    Config(String),
    /// The state file cannot be read or does not parse.
    #[error("{path}: {reason} (left as it is; use another --out or repair it)")]
    State {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The directory holds a PSRO run with other settings.
    #[error(
        "{path} holds PSRO with other settings; continuing would change: {changes} (use another \
         --out, or the settings it was started with)"
    )]
    Mismatch {
        /// The state file.
        path: PathBuf,
        /// The settings that differ.
        changes: String,
    },
    /// A file could not be written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        error: std::io::Error,
    },
    /// A member could not be opened or played.
    #[error(transparent)]
    Population(#[from] PopulationError),
    /// A best response's training failed.
    #[error("best response {run}: {source}")]
    Train {
        /// Its run directory.
        run: PathBuf,
        /// The error.
        #[source]
        source: Box<RunError>,
    },
}

/// The settings of PSRO with learned best responses.
#[derive(Debug, Clone)]
pub struct LearnedPsroOptions {
    /// Iterations in all (a run continued with more goes on to this many).
    pub iterations: usize,
    /// The meta-solver.
    pub meta_solver: MetaSolver,
    /// Every slot's first member: `Random` or `Scripted(name)`.
    pub first: MemberSpec,
    /// Evaluation episodes per pair of members.
    pub episodes: usize,
    /// The best responses' run configuration (its scenario, seeds, sweep and population are
    /// set per best response).
    pub config: RunConfig,
    /// The scenario file (each best response trains on it).
    pub scenario: PathBuf,
    /// Show each best response's progress bar.
    pub progress: bool,
}

/// A recorded member as a policy member (run paths under `dir`).
fn member(dir: &Path, spec: &MemberSpec) -> Member {
    match spec {
        MemberSpec::Random => Member::Random,
        MemberSpec::Scripted(n) => Member::Scripted(n.clone()),
        MemberSpec::Run { path, replica } => Member::Run {
            path: dir.join(path),
            replica: replica.unwrap_or(0),
        },
    }
}

/// The evaluation seed of a pair of members: its own stream, whatever the population sizes.
fn profile_seed(base: u64, profile: &[usize]) -> u64 {
    profile.iter().fold(base ^ 0x5052_534f, |h, &j| {
        h.wrapping_mul(1_000_003).wrapping_add(j as u64 + 1)
    })
}

/// Evaluates every pair of the current members without an entry, saving after each.
fn evaluate_missing(ctx: &Ctx, report: &mut LearnedPsroReport) -> Result<usize, LearnedPsroError> {
    let (a, b) = (report.members[0].len(), report.members[1].len());
    let mut done = 0;
    for j0 in 0..a {
        for j1 in 0..b {
            let profile = vec![j0, j1];
            if report.payoffs.iter().any(|e| e.profile == profile) {
                continue;
            }
            let seed = profile_seed(ctx.opts.config.seed, &profile);
            let e = ctx.opts.episodes;
            let open_one =
                |slot: usize, j: usize| -> Result<Box<dyn Policy + Send>, PopulationError> {
                    let m = member(&ctx.dir, &report.members[slot][j].spec);
                    open(
                        &m,
                        ctx.loaded,
                        e,
                        seed.wrapping_add(slot as u64),
                        ctx.device,
                    )
                };
            let (mut p0, mut p1) = (open_one(0, j0)?, open_one(1, j1)?);
            let assign: Vec<usize> = (0..e * 2).map(|row| row % 2).collect();
            let mut mix = SlotMix::new(vec![p0.as_mut(), p1.as_mut()], assign);
            let (eps, _) =
                play_episodes(ctx.loaded, e, seed, &mut mix).map_err(PopulationError::from)?;
            let (mut mean, mut se) = (Vec::new(), Vec::new());
            for slot in 0..2 {
                let xs: Vec<f64> = eps.iter().map(|ep| ep.returns[slot] as f64).collect();
                let (m, ci) = mean_ci(&xs);
                mean.push(m);
                se.push(if ci.is_finite() { ci / 1.96 } else { 0.0 });
            }
            report.payoffs.push(ProfileEntry { profile, mean, se });
            write_state(&ctx.dir, report)?;
            done += 1;
        }
    }
    Ok(done)
}

/// The meta-game tensors over the first `shape` members (player 0 most significant).
fn meta_game(
    report: &LearnedPsroReport,
    shape: &[usize],
) -> (Vec<Vec<f64>>, BTreeMap<Vec<usize>, usize>) {
    let index: BTreeMap<Vec<usize>, usize> = report
        .payoffs
        .iter()
        .enumerate()
        .map(|(k, e)| (e.profile.clone(), k))
        .collect();
    let mut meta = vec![Vec::new(); 2];
    for j0 in 0..shape[0] {
        for j1 in 0..shape[1] {
            let e = &report.payoffs[index[&vec![j0, j1]]];
            meta[0].push(e.mean[0]);
            meta[1].push(e.mean[1]);
        }
    }
    (meta, index)
}

/// Slot `i`'s expected return and its variance when slot 0 plays `x` and slot 1 plays `y`
/// (weights over members, from index 0).
fn mixed_value(
    report: &LearnedPsroReport,
    index: &BTreeMap<Vec<usize>, usize>,
    i: usize,
    x: &[(usize, f64)],
    y: &[(usize, f64)],
) -> (f64, f64) {
    let (mut v, mut var) = (0.0, 0.0);
    for &(j0, w0) in x {
        for &(j1, w1) in y {
            let e = &report.payoffs[index[&vec![j0, j1]]];
            let w = w0 * w1;
            v += w * e.mean[i];
            var += w * w * e.se[i] * e.se[i];
        }
    }
    (v, var)
}

/// What an iteration's steps share.
struct Ctx<'a> {
    loaded: &'a LoadedScenario,
    opts: &'a LearnedPsroOptions,
    dir: PathBuf,
    device: &'a Chosen,
}

/// The run configuration of slot `slot`'s best response of iteration `k`, against the other
/// slot's members in `manifest` weighted by `weights`.
pub(crate) fn br_config(
    base: &RunConfig,
    scenario: &Path,
    manifest: &Path,
    (k, slot): (usize, usize),
    weights: &[f64],
) -> RunConfig {
    let mut cfg = base.clone();
    cfg.name = format!("psro_iter{k}_slot{slot}");
    cfg.scenario = Some(scenario.to_path_buf());
    cfg.seeds = 1;
    cfg.sweep = Default::default();
    cfg.seed = base.seed.wrapping_add(1_000 * (k as u64 + 1) + slot as u64);
    cfg.population = Some(PopulationTraining {
        slots: vec![1 - slot],
        opponents: Some(manifest.to_path_buf()),
        snapshot_every: 0,
        max_snapshots: 8,
        sampling: Sampling::Weights(weights.to_vec()),
    });
    cfg
}

/// Trains both slots' best responses of iteration `k` against `sigma` (resuming any cut
/// short) and returns their run directories relative to the output directory.
fn train_best_responses(
    ctx: &Ctx,
    report: &LearnedPsroReport,
    k: usize,
    sigma: &[Vec<f64>],
) -> Result<Vec<String>, LearnedPsroError> {
    let mut runs = Vec::new();
    for slot in 0..2 {
        let other = 1 - slot;
        let rel = format!("iter_{k}/slot_{slot}");
        let run = ctx.dir.join(&rel);
        let manifest = ctx.dir.join(format!("iter_{k}/opponents_slot_{slot}.ron"));
        let members: Vec<MemberSpec> = report.members[other][..sigma[other].len()]
            .iter()
            .map(|m| match &m.spec {
                // Relative to the manifest, one level down.
                MemberSpec::Run { path, replica } => MemberSpec::Run {
                    path: Path::new("..").join(path),
                    replica: *replica,
                },
                s => s.clone(),
            })
            .collect();
        let population = crate::population::Population {
            name: format!("psro slot {other} (iteration {k})"),
            sampling: Sampling::Weights(sigma[other].clone()),
            members,
        };
        let text = ron::ser::to_string_pretty(&population, ron::ser::PrettyConfig::default())
            .map_err(|e| LearnedPsroError::Config(e.to_string()))?;
        let io = |error| LearnedPsroError::Io {
            path: manifest.clone(),
            error,
        };
        std::fs::create_dir_all(ctx.dir.join(format!("iter_{k}"))).map_err(io)?;
        crate::atomic::write_atomic(&manifest, text.as_bytes()).map_err(io)?;
        let cfg = br_config(
            &ctx.opts.config,
            &ctx.opts.scenario,
            &manifest,
            (k, slot),
            &sigma[other],
        );
        let options = TrainOptions {
            resume_if_exists: true,
            progress: ctx.opts.progress,
            ..TrainOptions::default()
        };
        train(&cfg, &run, &options).map_err(|e| LearnedPsroError::Train {
            run: run.clone(),
            source: Box::new(e),
        })?;
        runs.push(rel);
    }
    Ok(runs)
}

/// Checks what can be checked before anything is written.
fn check(
    loaded: &LoadedScenario,
    o: &LearnedPsroOptions,
    device: &Chosen,
) -> Result<(), LearnedPsroError> {
    let n = loaded.scenario.learners_per_arena();
    if n != 2 {
        return Err(LearnedPsroError::Learners {
            scenario: loaded.scenario.name.clone(),
            learners: n,
        });
    }
    if o.iterations == 0 {
        return Err(LearnedPsroError::NoIterations);
    }
    if o.episodes < 2 {
        return Err(LearnedPsroError::Episodes(o.episodes));
    }
    let first = match &o.first {
        MemberSpec::Random => Member::Random,
        MemberSpec::Scripted(n) => Member::Scripted(n.clone()),
        other => return Err(LearnedPsroError::First(format!("{other:?}"))),
    };
    open(&first, loaded, 1, 0, device)?;
    let cfg = br_config(
        &o.config,
        &o.scenario,
        Path::new("opponents.ron"),
        (0, 0),
        &[1.0],
    );
    cfg.validate()
        .map_err(|e| LearnedPsroError::Config(e.to_string()))
}

/// Runs (or continues) PSRO with learned best responses in `dir` (see the module docs),
/// calling `on_iteration` after each iteration it finishes.
pub fn learned_psro(
    loaded: &LoadedScenario,
    opts: &LearnedPsroOptions,
    dir: &Path,
    device: &Chosen,
    on_iteration: &mut dyn FnMut(&LearnedPsroIteration),
) -> Result<LearnedPsroReport, LearnedPsroError> {
    check(loaded, opts, device)?;
    let asked = settings(opts, loaded);
    let mut report = match load_state(dir, &asked)? {
        Some(saved) => saved,
        None => {
            let first = MemberRecord {
                name: member(dir, &opts.first).name(),
                spec: opts.first.clone(),
            };
            LearnedPsroReport {
                method: "learned best responses: NashConv is a lower bound".into(),
                settings: asked,
                members: vec![vec![first.clone()], vec![first]],
                payoffs: Vec::new(),
                pending: None,
                iterations: Vec::new(),
            }
        }
    };
    std::fs::create_dir_all(dir).map_err(|error| LearnedPsroError::Io {
        path: dir.to_path_buf(),
        error,
    })?;
    let ctx = Ctx {
        loaded,
        opts,
        dir: dir.to_path_buf(),
        device,
    };
    while report.iterations.len() < opts.iterations {
        let t0 = Instant::now();
        let k = report.iterations.len();
        let shape = vec![k + 1, k + 1];
        // Pairs a cut-short invocation left unevaluated (the first iteration: the first pair).
        report.members.iter_mut().for_each(|m| m.truncate(k + 1));
        let mut evaluated = evaluate_missing(&ctx, &mut report)?;
        let sigma = match report.pending.clone() {
            Some(s) if s.iter().map(Vec::len).eq(shape.iter().copied()) => s,
            _ => {
                let (meta, _) = meta_game(&report, &shape);
                let s = opts.meta_solver.solve(&meta, &shape);
                report.pending = Some(s.clone());
                write_state(&ctx.dir, &report)?;
                s
            }
        };
        let runs = train_best_responses(&ctx, &report, k, &sigma)?;
        for (slot, rel) in runs.iter().enumerate() {
            report.members[slot].push(MemberRecord {
                name: rel.clone(),
                spec: MemberSpec::Run {
                    path: rel.into(),
                    replica: Some(0),
                },
            });
        }
        evaluated += evaluate_missing(&ctx, &mut report)?;
        let (_, index) = meta_game(&report, &[k + 2, k + 2]);
        let weights: Vec<Vec<(usize, f64)>> = sigma
            .iter()
            .map(|s| s.iter().copied().enumerate().collect())
            .collect();
        let br = vec![(k + 1, 1.0)];
        let (mut values, mut br_values, mut gains, mut gains_ci95) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut var_sum = 0.0;
        for i in 0..2 {
            let (v, var_v) = mixed_value(&report, &index, i, &weights[0], &weights[1]);
            let (b, var_b) = if i == 0 {
                mixed_value(&report, &index, 0, &br, &weights[1])
            } else {
                mixed_value(&report, &index, 1, &weights[0], &br)
            };
            values.push(v);
            br_values.push(b);
            gains.push(b - v);
            gains_ci95.push(1.96 * (var_v + var_b).sqrt());
            var_sum += var_v + var_b;
        }
        let record = LearnedPsroIteration {
            iteration: k,
            population_sizes: shape,
            meta_strategies: sigma,
            values,
            br_values,
            nashconv: gains.iter().map(|g| g.max(0.0)).sum(),
            nashconv_ci95: 1.96 * var_sum.sqrt(),
            gains,
            gains_ci95,
            profiles_evaluated: evaluated,
            runs,
            seconds: t0.elapsed().as_secs_f64(),
        };
        report.pending = None;
        report.iterations.push(record);
        write_state(&ctx.dir, &report)?;
        if let Some(last) = report.iterations.last() {
            on_iteration(last);
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_seeds_differ_and_do_not_depend_on_sizes() {
        assert_ne!(profile_seed(1, &[0, 1]), profile_seed(1, &[1, 0]));
        assert_eq!(profile_seed(1, &[2, 3]), profile_seed(1, &[2, 3]));
    }
}
