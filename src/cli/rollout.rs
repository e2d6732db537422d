//! `gridarena rollout`: record a random-policy rollout of one arena to a file, and print the
//! social metrics of every arena's finished episodes.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use gridarena::engine::EnvBatch;
use gridarena::metrics::EpisodeSummary;
use gridarena::policy::RandomPolicy;

use super::common::{load_scenario, with_pool};

#[derive(Args, Debug)]
pub(crate) struct RolloutArgs {
    /// Scenario file; the embedded default Pursuit scenario when omitted.
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Steps to record.
    #[arg(long, default_value_t = 500)]
    steps: usize,
    /// Arenas stepped (arena 0 is recorded; social metrics cover every arena's episodes).
    #[arg(long, default_value_t = 1)]
    arenas: usize,
    /// Output file (.ron).
    #[arg(long)]
    out: PathBuf,
}

/// Steps the batch under a uniformly random policy, saves arena 0's rollout atomically and
/// prints what it holds.
pub(crate) fn run(args: RolloutArgs) -> Result<()> {
    let (loaded, name) = load_scenario(args.scenario.as_deref())?;
    let mut batch = EnvBatch::new(&loaded, args.arenas, args.seed)?;
    let mut policy = RandomPolicy::new(args.seed, args.arenas, batch.layout().actions);
    batch.start_recording(0);
    batch.start_episode_log(100_000);
    with_pool(None, || -> Result<()> {
        for _ in 0..args.steps {
            policy.act(batch.actions_mut());
            batch.step()?;
        }
        Ok(())
    })??;
    let rollout = batch.finish_recording().context("recorder missing")?;
    rollout
        .save(&args.out)
        .with_context(|| format!("writing the rollout of {name}"))?;
    let episodes = rollout
        .frames
        .iter()
        .filter(|f| f.terminated || f.truncated)
        .count();
    println!(
        "wrote {}: {} frames, {} steps, {} finished episodes in arena 0, scenario {}",
        args.out.display(),
        rollout.frames.len(),
        args.steps,
        episodes,
        rollout.scenario.name
    );
    print_social_metrics(&rollout.counter_names, &rollout.episodes);
    Ok(())
}

fn print_social_metrics(counter_names: &[String], episodes: &[EpisodeSummary]) {
    if episodes.is_empty() {
        println!("social metrics: no episode finished (raise --steps or --arenas)");
        return;
    }
    let m = gridarena::metrics::summarize(counter_names, episodes);
    let per_agent: Vec<String> = m.mean_return.iter().map(|r| format!("{r:.3}")).collect();
    println!(
        "social metrics over {} finished episodes (uniformly random policy):",
        m.episodes
    );
    println!("  return per agent:   [{}]", per_agent.join(", "));
    println!("  collective return:  {:.3}", m.collective_return);
    println!("  equality (1-Gini):  {:.3}", m.equality);
    for (name, v) in &m.counters {
        println!("  {name}: {v:.3} per episode");
    }
}
