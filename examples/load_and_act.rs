//! Load a run's checkpoint and act greedily in a fresh batch of arenas.
//!
//! A run directory (from `gridarena train` or [`gridarena::train::train`]) holds the resolved
//! `config.ron` and the checkpoints; the config names the scenario and the algorithm, so the
//! networks can be rebuilt and the newest checkpoint restored into them. The greedy policy is
//! then a function from the observation buffer `[B, N, O]` to the action buffer `[B, N]` of any
//! batch of that scenario. This example compares it with the uniformly random policy in fresh
//! arenas, and with `gridarena eval`'s figures ([`gridarena::train::eval::evaluate`]).
//!
//! Run: `cargo run --example load_and_act` (trains a tiny PQN run on the embedded Pursuit
//! scenario into a temporary directory first), or `cargo run --example load_and_act -- RUN_DIR`
//! for a single-seed run of your own.

use std::path::{Path, PathBuf};

use gridarena::critic::{Device, choose_device};
use gridarena::engine::EnvBatch;
use gridarena::metrics::{learners_only, summarize};
use gridarena::policy::{Policy, RandomPolicy};
use gridarena::scenario::LoadedScenario;
use gridarena::train::config::{NetworkConfig, PqnConfig, RunConfig};
use gridarena::train::{TrainOptions, load_policy, load_scenario, train};

const ARENAS: usize = 8;
const SEED: u64 = 12_345;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(run) = std::env::args_os().nth(1) {
        return load_and_act(Path::new(&run));
    }
    let dir = std::env::temp_dir().join(format!("gridarena-load-and-act-{}", std::process::id()));
    let result = train_tiny_run(&dir).and_then(|run| load_and_act(&run));
    // The directory may not exist when training failed early.
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// A tiny PQN run on the embedded default Pursuit scenario (a few updates, small networks).
fn train_tiny_run(dir: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let cfg = RunConfig {
        device: Device::Cpu,
        total_steps: 8 * 16 * 10,
        arenas: 8,
        rollout: 16,
        network: NetworkConfig {
            hidden: 32,
            layers: 1,
            ..Default::default()
        },
        pqn: PqnConfig {
            minibatches: 4,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    let run = dir.join("run");
    let s = train(&cfg, &run, &TrainOptions::default())?;
    println!(
        "trained {}: {} updates, {} env steps",
        run.display(),
        s.updates,
        s.env_steps
    );
    Ok(run)
}

fn load_and_act(run: &Path) -> Result<(), Box<dyn std::error::Error>> {
    // The run's own config and scenario.
    let cfg = RunConfig::load(&run.join("config.ron"))?;
    let loaded = load_scenario(&cfg)?;
    let device = choose_device(Device::Cpu)?;

    // The run's greedy policy: its learner rebuilt from the config and the newest checkpoint
    // restored into it (the same entry point eval, the viewer and analysis use).
    let mut policy = load_policy(run)?;
    println!(
        "loaded {:?} from {} (checkpoint of update {}), scenario {}",
        cfg.algo,
        run.display(),
        policy.update(),
        loaded.scenario.name
    );

    // Greedy actions for a fresh batch, one episode long, against the random baseline.
    let mut greedy = |obs: &[u8]| -> Result<Vec<u8>, Box<dyn std::error::Error>> {
        let mut actions = vec![0u8; obs.len() / loaded.scenario.observation_len()];
        policy.actions(obs, &mut actions)?;
        Ok(actions)
    };
    play("greedy", &loaded, &mut greedy)?;
    let mut random = RandomPolicy::new(SEED, ARENAS, loaded.scenario.action_set().len());
    let mut random = |obs: &[u8]| -> Result<Vec<u8>, Box<dyn std::error::Error>> {
        let mut actions = vec![0u8; obs.len() / loaded.scenario.observation_len()];
        random.act(&mut actions);
        Ok(actions)
    };
    play("random", &loaded, &mut random)?;

    // The same comparison, as `gridarena eval --run RUN --episodes 16` reports it.
    let report = gridarena::train::eval::evaluate(run, 16, &device)?;
    println!(
        "eval over {} episodes: greedy mean return {:.3} ± {:.3}, random {:.3} ± {:.3}",
        report.episodes,
        report.policy.mean_return,
        report.policy.ci95,
        report.random.mean_return,
        report.random.ci95
    );
    Ok(())
}

/// A policy: the `[B, N]` actions for the `[B, N, O]` observations.
type PolicyFn<'a> = dyn FnMut(&[u8]) -> Result<Vec<u8>, Box<dyn std::error::Error>> + 'a;

/// Steps `ARENAS` fresh arenas for one episode length under `policy` and prints what happened.
fn play(
    name: &str,
    loaded: &LoadedScenario,
    policy: &mut PolicyFn,
) -> Result<(), Box<dyn std::error::Error>> {
    let steps = loaded.scenario.max_steps as usize;
    let mut batch = EnvBatch::new(loaded, ARENAS, SEED)?;
    batch.start_episode_log(10_000);
    for _ in 0..steps {
        let actions = policy(&batch.buffers().obs)?;
        batch.actions_mut().copy_from_slice(&actions);
        batch.step()?;
    }
    let learners = batch.layout().learners;
    let episodes = learners_only(&batch.take_episodes(), learners);
    let m = summarize(&batch.layout().counter_names, &episodes);
    let counters: Vec<String> = m
        .counters
        .iter()
        .map(|(k, v)| format!("{k} {v:.2}"))
        .collect();
    println!(
        "{name:>6} policy, {ARENAS} arenas x {steps} steps: {} episodes, collective return {:.3}, {}",
        m.episodes,
        m.collective_return,
        counters.join(", ")
    );
    Ok(())
}
