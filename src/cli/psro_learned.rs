//! `gridarena psro --best-response learned`: PSRO with learned best responses
//! ([`gridarena::analysis::psro_learned`]) in an output directory it can continue from, one
//! line per iteration as it ends.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use gridarena::analysis::meta_solver::MetaSolver;
use gridarena::analysis::psro_learned::{
    LearnedPsroIteration, LearnedPsroOptions, LearnedPsroReport, STATE_FILE, learned_psro,
};
use gridarena::critic::choose_device;
use gridarena::population::MemberSpec;
use gridarena::scenario::LoadedScenario;
use gridarena::train::config::RunConfig;

/// The settings `psro` passes on for learned best responses.
pub(crate) struct LearnedArgs {
    pub(crate) iterations: usize,
    pub(crate) config: Option<PathBuf>,
    pub(crate) first_member: String,
    pub(crate) episodes: usize,
    pub(crate) json: bool,
    pub(crate) out: Option<PathBuf>,
}

fn first_member(text: &str) -> Result<MemberSpec> {
    if text == "random" {
        return Ok(MemberSpec::Random);
    }
    match text.strip_prefix("scripted:") {
        Some(name) => Ok(MemberSpec::Scripted(name.to_string())),
        None => bail!("--first-member `{text}`: `random` or `scripted:NAME`"),
    }
}

pub(crate) fn run(
    path: &Path,
    loaded: &LoadedScenario,
    meta_solver: MetaSolver,
    args: &LearnedArgs,
) -> Result<()> {
    let context = || format!("PSRO with learned best responses on {}", path.display());
    let Some(config) = &args.config else {
        bail!(
            "{}: --best-response learned needs --config RUN.ron (the best responses' run \
             configuration)",
            context()
        );
    };
    let Some(out) = &args.out else {
        bail!(
            "{}: --best-response learned needs --out DIR (the best responses' runs and \
             {STATE_FILE}, which a second invocation continues from)",
            context()
        );
    };
    let cfg = RunConfig::load(config).with_context(context)?;
    let scenario = std::fs::canonicalize(path)
        .with_context(|| format!("{}: cannot resolve the path", path.display()))?;
    let options = LearnedPsroOptions {
        iterations: args.iterations,
        meta_solver,
        first: first_member(&args.first_member)?,
        episodes: args.episodes,
        config: cfg,
        scenario,
        progress: !args.json,
    };
    let device = choose_device(options.config.device).with_context(context)?;
    let text = !args.json;
    let done = std::fs::read_to_string(out.join(STATE_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<LearnedPsroReport>(&t).ok())
        .map_or(0, |r| r.iterations.len());
    if text {
        println!(
            "PSRO with learned best responses on {} ({} steps of {} per best response, {} \
             episodes per pair); NashConv is a lower bound, as learned best responses are",
            loaded.scenario.name,
            options.config.total_steps,
            gridarena::train::config::algo_label(options.config.algo),
            options.episodes
        );
        if done > 0 {
            println!(
                "continuing {} after iteration {} of {}",
                out.display(),
                done - 1,
                args.iterations
            );
        }
    }
    let mut line = |it: &LearnedPsroIteration| {
        if !text {
            return;
        }
        let sizes: Vec<String> = it.population_sizes.iter().map(usize::to_string).collect();
        let gains: Vec<String> = it.gains.iter().map(|g| format!("{g:.4}")).collect();
        println!(
            "iteration {:>3}  population sizes {}  NashConv >= {:.4} +- {:.4}  (gains {}; {} \
             pairs evaluated, {:.1} s)",
            it.iteration,
            sizes.join(" "),
            it.nashconv,
            it.nashconv_ci95,
            gains.join(" "),
            it.profiles_evaluated,
            it.seconds
        );
        let _ = std::io::stdout().flush();
    };
    let report = learned_psro(loaded, &options, out, &device, &mut line).with_context(context)?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_summary(&report, &out.join(STATE_FILE));
    }
    Ok(())
}

fn print_summary(report: &LearnedPsroReport, state: &Path) {
    let Some(last) = report.iterations.last() else {
        return;
    };
    println!(
        "{} iterations; the last meta-strategies (report: {}):",
        report.iterations.len(),
        state.display()
    );
    for (slot, (members, sigma)) in report.members.iter().zip(&last.meta_strategies).enumerate() {
        let parts: Vec<String> = members
            .iter()
            .zip(sigma)
            .map(|(m, w)| format!("{} {w:.4}", m.name))
            .collect();
        println!("  slot {slot}: {}", parts.join(", "));
    }
}
