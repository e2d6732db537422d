//! PR2-IQL's conditional opponent models with seeds and sweeps: every replica has its own
//! models (network `r x N + i` of their stack), trained on its own rows at its own learning
//! rate, so replica k's critics, target critics, models, returns and opponent-model scores equal
//! the single run with its grid point's values and seed bit for bit, with `rho: model` (the
//! critics' targets and acting read the row's own replica's models) and `rho: soft`; a sweep
//! with models resumes exactly; the memory preflight counts every replica's models; the GPU
//! backend matches the CPU.

use std::path::PathBuf;

use gridarena::critic::Device;
use gridarena::train::config::{
    Algo, IqlConfig, LearnConfig, NetworkConfig, Pr2Config, RhoForm, RunConfig,
};
use gridarena::train::opponent::ConditionalModels;
use gridarena::train::plan::{PlanDevice, plan_for};
use gridarena::train::{TrainOptions, load_scenario, train};

#[path = "common/checks.rs"]
mod checks;
#[path = "common/runs.rs"]
mod runs;
#[path = "common/skip.rs"]
mod skip;
#[path = "common/sweeps.rs"]
mod sweeps;
use runs::{deterministic_metrics, params};
use sweeps::{
    assert_gpu_matches_cpu, assert_resumes_exactly, assert_scores_equal_single_run,
    check_replicas_equal_single_runs, cpu, models, same_bits, single_run_of, target_params, temp,
    with_sweep,
};

/// PR2-IQL with conditional opponent models (`rho` as given) on the two-player climbing game:
/// learner steps (and so the models' training) start in the second update, and episodes end
/// during the run.
fn pr2_with_models(rho: RhoForm) -> RunConfig {
    RunConfig {
        algo: Algo::Pr2Iql,
        scenario: Some(PathBuf::from("assets/scenarios/climbing_game.ron")),
        device: Device::Cpu,
        arenas: 4,
        rollout: 4,
        seed: 11,
        total_steps: 4 * 4 * 7,
        checkpoint_every: 1,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
            ..Default::default()
        },
        learn: LearnConfig {
            opponent_models: true,
            lr: 3e-3,
            ..Default::default()
        },
        iql: IqlConfig {
            replay_capacity: 40,
            min_replay: 16,
            ..Default::default()
        },
        pr2: Pr2Config {
            rho,
            epochs: 2,
            minibatches: 2,
            buffer_batch_size: 3,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

/// Two learning rates x two seeds: replicas differing from replica 0 in the seed, the lr, both.
fn sweep_of(base: &RunConfig) -> RunConfig {
    RunConfig {
        seeds: 2,
        ..with_sweep(base.clone(), &["lr=[3e-3, 1e-3]"])
    }
}

/// Trains the sweep of `base` and checks every replica against its single run: critics,
/// targets, returns and `eval --replica k` (the shared check), then the models' parameters and
/// every update's opponent-model scores.
fn check_pr2_replicas_with_models(name: &str, base: &RunConfig) {
    let sweep = sweep_of(base);
    let replicas = sweep.replicas().unwrap();
    assert_eq!(replicas.len(), 4);
    let multi = temp(name);
    train(&sweep, &multi, &TrainOptions::default()).unwrap();
    let ks = [0usize, 1, 2, 3];
    check_replicas_equal_single_runs(&multi, (base, &replicas), &ks, true);
    let (multi_models, multi_metrics) = (models(&multi), deterministic_metrics(&multi));
    let per = multi_models.len() / replicas.len();
    assert_eq!(per * replicas.len(), multi_models.len());
    // The models learned and differ between replicas.
    assert_ne!(multi_models[..per], multi_models[per..2 * per]);
    for k in ks {
        let label = format!("{name}: replica {k} ({})", replicas[k].point_label());
        let single = temp(&format!("{name}-single-{k}"));
        train(
            &single_run_of(base, &replicas[k]),
            &single,
            &TrainOptions::default(),
        )
        .unwrap();
        assert!(
            same_bits(&multi_models[k * per..(k + 1) * per], &models(&single)),
            "{label}: opponent-model parameters differ from the single run"
        );
        let single_metrics = deterministic_metrics(&single);
        assert_scores_equal_single_run(&multi_metrics, &single_metrics, k, &label);
        let _ = std::fs::remove_dir_all(single);
    }
    let _ = std::fs::remove_dir_all(multi);
}

#[test]
fn pr2_replica_k_with_model_rho_equals_its_single_run_bit_for_bit() {
    check_pr2_replicas_with_models("pr2opp-model", &pr2_with_models(RhoForm::Model));
}

#[test]
fn pr2_replica_k_with_models_and_soft_rho_equals_its_single_run_bit_for_bit() {
    check_pr2_replicas_with_models("pr2opp-soft", &pr2_with_models(RhoForm::Soft));
}

#[test]
fn a_pr2_sweep_with_opponent_models_resumes_exactly() {
    let cfg = sweep_of(&pr2_with_models(RhoForm::Model));
    let straight = temp("pr2opp-resume-models");
    train(&cfg, &straight, &TrainOptions::default()).unwrap();
    // Critics, targets and metrics (scores included) through a resume at update 3.
    let split = assert_resumes_exactly(&cfg, "pr2opp-resume", true);
    assert!(
        same_bits(&models(&split), &models(&straight)),
        "opponent models after the resume"
    );
    assert_eq!(target_params(&split), target_params(&straight));
    assert_eq!(params(&split), params(&straight));
    let _ = std::fs::remove_dir_all(split);
    let _ = std::fs::remove_dir_all(straight);
}

#[test]
fn the_pr2_memory_preflight_counts_every_replicas_conditional_models() {
    let one = pr2_with_models(RhoForm::Model);
    let four = RunConfig {
        seeds: 4,
        ..one.clone()
    };
    let loaded = load_scenario(&one).unwrap();
    let (n, a) = (2, loaded.scenario.action_set().len());
    let input = gridarena::train::pr2::stack_spec(&one, &loaded).input;
    let (s1, s4) = (
        ConditionalModels::spec(&one, n, a, input),
        ConditionalModels::spec(&four, n, a, input),
    );
    assert_eq!((s1.nets, s4.nets), (2, 8));
    assert_eq!(s4.params(), 4 * s1.params());
    let plan = plan_for(&four, &loaded, PlanDevice::Chosen(&cpu()), u64::MAX, None);
    let line = plan
        .tensors
        .iter()
        .find(|t| t.name == "conditional opponent models");
    let line = line.expect("a conditional-models line");
    assert!(line.shape.contains("4 replicas x 2 nets"), "{}", line.shape);
}

#[test]
fn a_pr2_sweep_with_opponent_models_on_the_gpu_matches_the_cpu() {
    assert_gpu_matches_cpu(&sweep_of(&pr2_with_models(RhoForm::Model)), "pr2opp-gpu");
}
