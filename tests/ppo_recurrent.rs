//! Recurrent IPPO and MAPPO (`network.kind: gru`): the policy remembers what only an earlier
//! step showed, which no memoryless policy can; a run resumes bit for bit with its hidden
//! states; the GPU backend ends where the CPU one does.

use std::path::PathBuf;

use gridarena::critic::Device;
use gridarena::train::config::{
    Algo, LearnConfig, NetworkConfig, NetworkKind, PpoConfig, RunConfig,
};
use gridarena::train::eval::evaluate;
use gridarena::train::{TrainOptions, train};

#[path = "common/checks.rs"]
mod checks;
#[path = "common/runs.rs"]
mod runs;
#[path = "common/skip.rs"]
mod skip;
#[path = "common/sweeps.rs"]
mod sweeps;
use sweeps::{assert_resumes_exactly, cpu, temp};

/// Two cues shown at the first step only, the choice at the third: remembering pays 1 an
/// episode, a memoryless policy at best 1/2.
fn cue_task() -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "gridarena-ppo-cue-{}-{:?}.ron",
        std::process::id(),
        std::thread::current().id()
    ));
    let text = "Scenario(name: \"cue\", substrate: CueMemory((cues: 2, length: 3, \
                wrong_reward: 0.0)), roles: [(kind: player, count: 1)], max_steps: 3)";
    std::fs::write(&path, text).unwrap();
    path
}

fn recurrent(algo: Algo, scenario: &str, kind: NetworkKind) -> RunConfig {
    RunConfig {
        algo,
        scenario: Some(PathBuf::from(scenario)),
        device: Device::Cpu,
        arenas: 16,
        rollout: 12,
        seed: 3,
        total_steps: 16 * 12 * 6,
        checkpoint_every: 2,
        network: NetworkConfig {
            kind,
            hidden: 32,
            layers: 1,
            ..Default::default()
        },
        learn: LearnConfig {
            lr: 3e-3,
            gamma: 0.9,
            ..Default::default()
        },
        ppo: PpoConfig {
            epochs: 4,
            minibatches: 4,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

/// The greedy GRU policy (acted step by step with its hidden state by `eval`) is right nearly
/// always; the same budget with an MLP stays near chance.
#[test]
fn a_recurrent_ppo_policy_remembers_the_cue() {
    let scenario = cue_task();
    for algo in [Algo::Ippo, Algo::Mappo] {
        let mut returns = Vec::new();
        for kind in [NetworkKind::Gru, NetworkKind::Mlp] {
            let cfg = RunConfig {
                total_steps: 16 * 12 * 150,
                checkpoint_every: 1000,
                ..recurrent(algo, scenario.to_str().unwrap(), kind)
            };
            let run = temp(&format!("{algo:?}-{kind:?}-cue"));
            train(&cfg, &run, &TrainOptions::default()).unwrap();
            let report = evaluate(&run, 200, &cpu()).unwrap();
            returns.push(report.policy.mean_return);
            let _ = std::fs::remove_dir_all(run);
        }
        assert!(returns[0] >= 0.9, "{algo:?}: GRU {returns:?}");
        assert!(returns[1] <= 0.7, "{algo:?}: MLP {returns:?}");
    }
    let _ = std::fs::remove_file(scenario);
}

#[test]
fn recurrent_ppo_resumes_exactly() {
    let scenario = cue_task();
    for algo in [Algo::Ippo, Algo::Mappo] {
        let cfg = recurrent(algo, scenario.to_str().unwrap(), NetworkKind::Gru);
        let run = assert_resumes_exactly(&cfg, &format!("{algo:?}-gru"), false);
        let _ = std::fs::remove_dir_all(run);
    }
    let _ = std::fs::remove_file(scenario);
}

#[test]
fn recurrent_ppo_on_the_gpu_backend_ends_where_the_cpu_one_does() {
    if !skip::gpu_adapter_present() {
        return;
    }
    let scenario = cue_task();
    let mut ends = Vec::new();
    for device in [Device::Cpu, Device::Gpu] {
        let cfg = RunConfig {
            device,
            total_steps: 16 * 12 * 3,
            ..recurrent(Algo::Ippo, scenario.to_str().unwrap(), NetworkKind::Gru)
        };
        let run = temp(&format!("ippo-gru-{device:?}"));
        train(&cfg, &run, &TrainOptions::default()).unwrap();
        ends.push(runs::params(&run));
        let _ = std::fs::remove_dir_all(run);
    }
    runs::assert_params_close("recurrent IPPO", &ends[0], &ends[1]);
    let _ = std::fs::remove_file(scenario);
}
