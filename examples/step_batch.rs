//! Step a batch of arenas from Rust with a policy of your own.
//!
//! The engine's interface is a set of dense buffers: before each step the caller writes one
//! action per learner per arena into `actions_mut()` (`[B, N]`, arena-major), and after it reads
//! `buffers().obs` (`[B, N, O]` bytes), `rewards` (`[B, N]`) and the per-arena `terminated` and
//! `truncated` flags (`[B]`). Finished arenas reset themselves. Here two hand-written policies
//! (one that always stays, one that cycles through the moves) are compared with the uniformly
//! random baseline on three-agent Pursuit.
//!
//! Run: `cargo run --example step_batch`

use std::path::Path;

use gridarena::engine::EnvBatch;
use gridarena::metrics::{EpisodeSummary, learners_only, summarize};
use gridarena::policy::RandomPolicy;
use gridarena::scenario::{LoadedScenario, Scenario};

const ARENAS: usize = 64;
const STEPS: usize = 200;
const SEED: u64 = 7;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Two learning pursuers and one learning evader on a 7x7 map, 50-step episodes.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/scenarios/pursuit_3.ron");
    let loaded = Scenario::load(&path)?;
    let s = &loaded.scenario;
    println!(
        "{}: {} learners per arena, {} actions ({:?}), {} B observation, {} steps per episode",
        s.name,
        s.learners_per_arena(),
        s.action_set().len(),
        s.action_set(),
        s.observation_len(),
        s.max_steps
    );

    let mut random = RandomPolicy::new(SEED, ARENAS, s.action_set().len());
    let policies: [(&str, Box<Policy>); 3] = [
        // Move5: 0 left, 1 right, 2 up, 3 down, 4 stay.
        ("always stay", Box::new(|_, actions| actions.fill(4))),
        (
            "cycle through the moves",
            Box::new(|step, actions| {
                // Every learner of every arena takes move (step + its index) mod 4.
                for (i, a) in actions.iter_mut().enumerate() {
                    *a = ((step + i) % 4) as u8;
                }
            }),
        ),
        (
            "uniformly random",
            Box::new(move |_, actions| random.act(actions)),
        ),
    ];
    for (name, mut policy) in policies {
        let outcome = run(&loaded, &mut *policy)?;
        let m = summarize(&outcome.counter_names, &outcome.episodes);
        let per_agent: Vec<String> = m.mean_return.iter().map(|r| format!("{r:.3}")).collect();
        println!("\n{name}:");
        println!(
            "  {STEPS} steps x {ARENAS} arenas: summed reward {:.2}, {} episodes ended",
            outcome.reward_sum, outcome.ended
        );
        println!("  mean return per learner [{}]", per_agent.join(", "));
        println!(
            "  collective return {:.3}, equality (1-Gini) {:.3}",
            m.collective_return, m.equality
        );
        for (counter, v) in &m.counters {
            println!("  {counter}: {v:.3} per episode");
        }
    }
    Ok(())
}

/// A policy: `policy(step, actions)` fills the `[B, N]` action buffer before step `step`.
type Policy = dyn FnMut(usize, &mut [u8]);

/// What one policy did in a fresh batch.
struct Outcome {
    /// Every learner's reward, summed over arenas and steps.
    reward_sum: f64,
    /// Arena-steps whose `terminated` or `truncated` flag was set.
    ended: usize,
    /// The finished episodes, learners' returns only.
    episodes: Vec<EpisodeSummary>,
    /// The substrate's counters' names (`EpisodeSummary::counters` in this order).
    counter_names: Vec<String>,
}

/// Steps a fresh batch for `STEPS` steps, `policy(step, actions)` filling the `[B, N]` actions.
fn run(
    loaded: &LoadedScenario,
    policy: &mut Policy,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    let mut batch = EnvBatch::new(loaded, ARENAS, SEED)?;
    batch.start_episode_log(100_000);
    let (mut reward_sum, mut ended) = (0.0f64, 0usize);
    for step in 0..STEPS {
        policy(step, batch.actions_mut());
        batch.step()?;
        let b = batch.buffers();
        reward_sum += b.rewards.iter().map(|&r| r as f64).sum::<f64>();
        ended += (0..ARENAS)
            .filter(|&a| b.terminated[a] != 0 || b.truncated[a] != 0)
            .count();
    }
    let learners = batch.layout().learners;
    Ok(Outcome {
        reward_sum,
        ended,
        episodes: learners_only(&batch.take_episodes(), learners),
        counter_names: batch.layout().counter_names.clone(),
    })
}
