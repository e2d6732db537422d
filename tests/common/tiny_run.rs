//! The small PQN run on tests/data/tiny_pursuit.ron that the analysis tests measure: 16 arenas
//! x 8 steps per update, a 1 x 16 network, gamma 0.9, on the CPU.

use std::path::Path;

use gridarena::critic::Device;
use gridarena::train::config::{LearnConfig, NetworkConfig, PqnConfig, RunConfig};

/// Trains `updates` updates of the tiny Pursuit run into `run`.
pub fn train_tiny_pursuit(run: &Path, updates: u64) {
    let cfg = RunConfig {
        scenario: Some("tests/data/tiny_pursuit.ron".into()),
        device: Device::Cpu,
        arenas: 16,
        rollout: 8,
        total_steps: 16 * 8 * updates,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
            ..Default::default()
        },
        learn: LearnConfig {
            gamma: 0.9,
            ..Default::default()
        },
        pqn: PqnConfig {
            minibatches: 2,
            ..Default::default()
        },
        ..Default::default()
    };
    gridarena::train::train(&cfg, run, &gridarena::train::TrainOptions::default()).unwrap();
}
