//! Setting a run up before its first update ([`Run::setup`]): the configuration checked,
//! what a job of several ranks refuses and this rank's share of the run, the scenario
//! ([`load_scenario`]) and device, the memory preflight, the run directory opened (or created)
//! on every rank, the learner, restoring the newest checkpoint to resume ([`restore`],
//! [`restore_in`]) with the check that every rank restored the same one, rank 0's files, and
//! the reports.

use std::path::Path;

use super::across_ranks::Ranks;
use super::lock::{self, RunLock};
use super::population::PopulationPlay;
use super::report::Reporter;
use super::run_dir::{self, Resume, RunDir, RunDirError};
use super::tensorboard::RunBoard;
use super::{CHECKSUM_EVERY, Run, RunError, TrainOptions, resume_check, retention, shards};
use crate::critic::{Chosen, choose_device};
use crate::dist::Job;
use crate::error::ScenarioError;
use crate::scenario::{LoadedScenario, Scenario};
use crate::train::algos::new_learner_in;
use crate::train::config::RunConfig;
use crate::train::preflight::plan;
use crate::train::{Learner, TrainError};

impl<'a> Run<'a> {
    /// Everything [`train_in`](super::train_in) does before its first update, in this order
    /// (the first failure ends the run with nothing of it created, or a resumed run's
    /// directory as it was).
    pub(super) fn setup(
        cfg: &'a RunConfig,
        out: &Path,
        opts: &TrainOptions,
        job: &'a Job,
    ) -> Result<Run<'a>, RunError> {
        cfg.validate()?;
        // Every grid point of a sweep is a configuration of its own: checked before anything runs.
        cfg.replicas()?;
        refuse_across_ranks(cfg, job)?;
        let checksum_every = opts.checksum_every.unwrap_or(CHECKSUM_EVERY).max(1);
        let ranks = Ranks::new(cfg, job, checksum_every)?;
        let (mine, learner_job) = ranks.share(cfg);
        let loaded = load_scenario(cfg)?;
        cfg.validate_for(loaded.scenario.learners_per_arena())?;
        PopulationPlay::check(cfg, &loaded)?;
        let device: Chosen = choose_device(cfg.device)?;
        memory_preflight(&mine, &loaded, &device, opts, job)?;
        let start = how_to_start(out, opts, job)?;
        let resume = start != Start::Fresh;
        let (dir, lock) = open_run_dir(out, resume, job)?;
        if resume {
            resume_check::refuse_changes(&dir, cfg, &loaded)?;
        }
        let mut learner = new_learner_in(&mine, &loaded, &device, &learner_job)?;
        // A resumed run's files are rewritten only once its checkpoint has been restored: a
        // failed resume leaves the run directory exactly as it was.
        let restored = if start == Start::Resume {
            Some(restore_in(learner.as_mut(), &dir, job)?)
        } else {
            None
        };
        if let Some((update, _)) = &restored {
            same_checkpoint(job, *update, &dir)?;
        }
        let resume_note = resume_note(restored.as_ref(), job);
        // The population plays its slots from the first step (its snapshots restored).
        let extra = match (&cfg.population, &restored) {
            (Some(_), Some(_)) => Some(dir.load_latest()?.extra),
            _ => None,
        };
        let population =
            PopulationPlay::install(&mine, &loaded, learner.as_mut(), &device, extra.as_ref())?;
        let factor = ranks.env_steps_factor();
        let board = if job.is_root() {
            // A run started over keeps none of its metrics (update 0, no steps).
            let resumed_at = match &restored {
                Some((update, _)) => Some((*update, learner.env_steps() * factor)),
                None if start == Start::Over => Some((0, 0)),
                None => None,
            };
            Some(root_files(
                cfg,
                &loaded,
                &dir,
                learner.as_mut(),
                resumed_at,
            )?)
        } else {
            None
        };
        let show = opts.progress && job.is_root();
        let at = learner.env_steps() * factor;
        let report = Reporter::new(show, cfg.total_steps * factor, at, board);
        let updates = cfg.updates();
        Ok(Run {
            cfg,
            ranks,
            learner,
            dir,
            report,
            stop: opts.stop.clone(),
            last: opts.until_update.map_or(updates, |u| u.min(updates)),
            device,
            resume_note,
            _lock: lock,
            sim_seconds: 0.0,
            learn_seconds: 0.0,
            saved_at: restored.map(|(update, _)| update),
            population,
        })
    }
}

/// How a run begins in its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// A new run (the directory may not hold one).
    Fresh,
    /// The run in the directory, from its newest checkpoint.
    Resume,
    /// The run in the directory stopped before its first checkpoint (`resume_if_exists`): it
    /// starts over in place, with the same checks of its configuration as a resume.
    Over,
}

/// [`Start`] as `opts` ask it. With `resume_if_exists` rank 0 looks into `out` and every
/// rank takes its answer: no `config.ron` (a missing or empty directory) starts a run, a
/// complete checkpoint resumes it, `config.ron` alone starts it over.
fn how_to_start(out: &Path, opts: &TrainOptions, job: &Job) -> Result<Start, RunError> {
    if opts.resume {
        return Ok(Start::Resume);
    }
    if !opts.resume_if_exists {
        return Ok(Start::Fresh);
    }
    let found = if !RunDir::config_file(out).exists() {
        Start::Fresh
    } else if RunDir::at(out).checkpoints()?.is_empty() {
        Start::Over
    } else {
        Start::Resume
    };
    let code = |s: Start| match s {
        Start::Fresh => 0,
        Start::Resume => 1,
        Start::Over => 2,
    };
    let all = job.all_gather_u64(code(found));
    Ok(match all.first().copied().unwrap_or(code(found)) {
        0 => Start::Fresh,
        1 => Start::Resume,
        _ => Start::Over,
    })
}

/// Loads the scenario a configuration names (the embedded default when none).
pub fn load_scenario(cfg: &RunConfig) -> Result<LoadedScenario, ScenarioError> {
    match &cfg.scenario {
        Some(p) => Scenario::load(p),
        None => Ok(Scenario::default_pursuit()),
    }
}

/// The scenario the run in `run` trained on: its own resolved copy (`scenario.ron`), so that
/// the run directory stands alone wherever it is read from; else, for a directory written
/// without one, the scenario its configuration `cfg` names.
pub fn trained_scenario(run: &Path, cfg: &RunConfig) -> Result<LoadedScenario, ScenarioError> {
    let own = RunDir::scenario_file(run);
    if own.is_file() {
        Scenario::load(&own)
    } else {
        load_scenario(cfg)
    }
}

/// The memory preflight of this rank's share of the run (`mine`): refused when it does not fit
/// the budget (ranks on one node share its memory); a job of several ranks prints its figures
/// at rank 0.
fn memory_preflight(
    mine: &RunConfig,
    loaded: &LoadedScenario,
    device: &Chosen,
    opts: &TrainOptions,
    job: &Job,
) -> Result<(), RunError> {
    // Ranks on one node share its memory (a one-rank job keeps the whole budget).
    let share = if job.size() > 1 {
        crate::dist::local_ranks() as u64
    } else {
        1
    };
    let budget = opts
        .memory_budget
        .unwrap_or_else(|| plan::default_budget() / share);
    let preflight = plan::PlanDevice::Chosen(device);
    let planned = plan::plan_for(mine, loaded, preflight, budget, opts.gpu_memory);
    if let Some(refusal) = planned.refusal() {
        return Err(RunError::Memory(refusal));
    }
    if job.size() > 1 && job.is_root() {
        let n = job.size() as u64;
        let human = crate::error::human_bytes;
        println!(
            "memory preflight: {} per rank (budget {}: this node's over {} rank(s) on it), {} for \
             the job's {n} ranks",
            human(planned.total_bytes),
            human(planned.budget_bytes),
            crate::dist::local_ranks(),
            human(planned.total_bytes.saturating_mul(n))
        );
    }
    Ok(())
}

/// Why a resume does not continue bit for bit (`None` for an exact resume or a fresh run),
/// printed as a warning at rank 0.
fn resume_note(restored: Option<&(u64, Resume)>, job: &Job) -> Option<String> {
    match restored {
        Some((_, Resume::Approximate(why))) => {
            let note = format!("this resume is approximate: {why}");
            if job.is_root() {
                eprintln!("warning: {note}");
            }
            Some(note)
        }
        _ => None,
    }
}

/// Rank 0's files before the first update: the resolved configuration and scenario, the
/// leftovers of a killed writer removed, the metrics kept up to the restored checkpoint's
/// update (`resumed_at`: that update and the job's environment steps there), and the
/// TensorBoard files' writer.
fn root_files(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    dir: &RunDir,
    learner: &mut dyn Learner,
    resumed_at: Option<(u64, u64)>,
) -> Result<RunBoard, RunError> {
    dir.save_config(&cfg.to_ron(), &loaded.scenario.to_ron())?;
    // What a killed writer left: checkpoints it had not published or was deleting.
    retention::clean_leftovers(&RunDir::checkpoints_dir(&dir.path));
    if let Some((update, _)) = resumed_at {
        dir.truncate_metrics(update)?;
    }
    let counters = &learner.batch().layout().counter_names;
    Ok(RunBoard::new(
        &dir.path,
        &cfg.replicas()?,
        counters,
        resumed_at.map(|(_, steps)| steps),
    ))
}

/// Restores the newest checkpoint of `dir` into `learner`: the update it was taken after and
/// whether the run continues exactly ([`Resume`]). Every length and range is checked before
/// use; a checkpoint that does not fit is refused naming the field.
pub fn restore(learner: &mut dyn Learner, dir: &RunDir) -> Result<(u64, Resume), RunError> {
    restore_in(learner, dir, &Job::single())
}

/// [`restore`] for one rank of a job: rank 0's parameters and Adam, this rank's own arenas and
/// replay; refused when the checkpoint was written by another number of ranks.
pub fn restore_in(
    learner: &mut dyn Learner,
    dir: &RunDir,
    job: &Job,
) -> Result<(u64, Resume), RunError> {
    let c = shards::load_latest(dir, job)?;
    let bad = |reason: String| RunError::Checkpoint {
        path: dir.path.clone(),
        reason,
    };
    learner.set_params(&c.params).map_err(|e| {
        bad(format!(
            "parameters do not fit this scenario's networks: {e}"
        ))
    })?;
    learner.set_adam_state(&c.adam_m, &c.adam_v, c.adam_steps)?;
    let resume = learner
        .load_state(&c.state, &c.extra)
        .map_err(|e| match e {
            TrainError::State(e) => bad(run_dir::state_error(Path::new("state.json"), &e)),
            e => bad(e.to_string()),
        })?;
    Ok((c.update, resume))
}

/// What a job of several ranks refuses: fewer replicas than ranks when it splits replicas
/// over ranks, and the threaded IQL learner, which steps on its own thread, out of the ranks'
/// lockstep.
fn refuse_across_ranks(cfg: &RunConfig, job: &Job) -> Result<(), RunError> {
    let n = job.size();
    if n == 1 {
        return Ok(());
    }
    if cfg.population.is_some() {
        return Err(RunError::Ranks(format!(
            "training against a population (`population`) runs on one rank; this job has {n}"
        )));
    }
    let replicas = cfg.replica_count();
    if replicas > 1 && replicas < n {
        return Err(RunError::Ranks(format!(
            "{replicas} replicas (grid points x seeds) on {n} ranks: a job splits whole replicas \
             over its ranks, so every rank needs one; use at most {replicas} ranks, or one replica \
             (seeds: 1, no sweep) to train it data-parallel on {n} ranks"
        )));
    }
    if cfg.iql.threaded {
        return Err(RunError::Ranks(format!(
            "threaded: true on {n} ranks: the threaded learner steps on its own schedule, so ranks \
             could not average their gradients in step; use threaded: false"
        )));
    }
    Ok(())
}

/// Every rank resumed from the checkpoint of the same update (a filesystem that shows ranks
/// different directory listings would otherwise let them continue from different places).
fn same_checkpoint(job: &Job, update: u64, dir: &RunDir) -> Result<(), RunError> {
    if job.size() == 1 {
        return Ok(());
    }
    let all = job.all_gather_u64(update);
    if all.iter().all(|&u| u == all[0]) {
        return Ok(());
    }
    Err(RunError::Ranks(format!(
        "the ranks found different newest checkpoints in {} (update by rank: {all:?}); is the \
         run directory on one shared filesystem?",
        dir.path.display()
    )))
}

/// The run directory, created (or opened to resume) by rank 0, which holds its lock (one
/// writer per run); the other ranks wait for it and never write outside their checkpoint
/// shards.
fn open_run_dir(
    out: &Path,
    resume: bool,
    job: &Job,
) -> Result<(RunDir, Option<RunLock>), RunError> {
    let (dir, lock) = if job.is_root() {
        let dir = if resume {
            RunDir::open(out)?
        } else {
            RunDir::create(out)?
        };
        let lock = lock::acquire(out).map_err(RunDirError::from)?;
        (Some(dir), Some(lock))
    } else {
        (None, None)
    };
    // Every rank writes its checkpoint shard into the run directory: it must be the same
    // directory on every node. Rank 0 leaves a token the others must see.
    let token = out.join(".job-token");
    if job.size() > 1 && job.is_root() {
        std::fs::write(&token, b"rank 0")
            .map_err(|e| RunError::Ranks(format!("{}: {e}", token.display())))?;
    }
    job.barrier();
    if job.size() > 1 {
        let seen = job.all_gather_u64(u64::from(token.exists()));
        if job.is_root() {
            let _ = std::fs::remove_file(&token);
        }
        let blind: Vec<String> = (0..seen.len())
            .filter(|&r| seen[r] == 0)
            .map(|r| r.to_string())
            .collect();
        if !blind.is_empty() {
            return Err(RunError::Ranks(format!(
                "rank(s) {} cannot see the run directory {} rank 0 created: every rank writes \
                 its checkpoint shard there, so it must be on a filesystem all nodes share",
                blind.join(", "),
                out.display()
            )));
        }
    }
    match dir {
        Some(d) => Ok((d, lock)),
        None if resume => Ok((RunDir::open_read_only(out)?, None)),
        None => Ok((RunDir::at(out), None)),
    }
}
