//! Time limits (issue 14): the engine keeps each finished episode's final observation, PQN's
//! lambda-returns and IQL's targets cut at terminations and bootstrap at truncations, and
//! training runs start their arenas at spread-out step counts.

use std::path::Path;

use gridarena::critic::{Device, choose_device};
use gridarena::engine::EnvBatch;
use gridarena::scenario::{LoadedScenario, Scenario};
use gridarena::train::config::{NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config, RunConfig};
use gridarena::train::iql::td_target;
use gridarena::train::pqn::{Pqn, RolloutSteps, lambda_returns};

/// The shipped Pursuit scenario with a short time limit.
fn pursuit(max_steps: u32) -> LoadedScenario {
    let mut loaded = Scenario::load(Path::new("assets/scenarios/pursuit.ron")).unwrap();
    loaded.scenario.max_steps = max_steps;
    loaded
}

#[test]
fn final_obs_is_the_observation_the_reset_overwrote() {
    let m = 12;
    let loaded = pursuit(m);
    let mut ended = EnvBatch::new(&loaded, 8, 3).unwrap();
    let mut going_on = EnvBatch::new(&loaded, 8, 3).unwrap();
    let actions = ended.layout().actions as u32;
    for step in 0..m {
        if step == m - 1 {
            // One step short on the clock: this batch takes the same last step without
            // reaching the time limit, so it shows the observation without the reset.
            for arena in 0..going_on.arenas() {
                going_on.edit_arena(arena, |_, a| a.clock.t -= 1).unwrap();
            }
        }
        for batch in [&mut ended, &mut going_on] {
            for (i, a) in batch.actions_mut().iter_mut().enumerate() {
                *a = ((i as u32 * 7 + step * 3) % actions) as u8;
            }
            batch.step().unwrap();
        }
    }
    let b = ended.buffers();
    assert!(b.truncated.iter().all(|&t| t == 1), "{:?}", b.truncated);
    assert!(going_on.buffers().truncated.iter().all(|&t| t == 0));
    assert_eq!(ended.final_obs(), &going_on.buffers().obs[..]);
    assert_ne!(ended.final_obs(), &b.obs[..], "the reset rewrote obs");
}

#[test]
fn pqn_lambda_returns_cut_at_terminations_and_bootstrap_at_truncations() {
    // Two rows, four steps. Row 0 terminates at t = 1 and truncates at t = 3 (final
    // observation worth 100); row 1 never ends. gamma = lambda = 0.5: every value is exact.
    #[rustfmt::skip]
    let (rewards, terminated, truncated, q_max, final_q) = (
        [1.0, 0.0,  2.0, 0.0,  3.0, 0.0,  4.0, 0.0],
        [0.0, 0.0,  1.0, 0.0,  0.0, 0.0,  0.0, 0.0],
        [0.0, 0.0,  0.0, 0.0,  0.0, 0.0,  1.0, 0.0],
        [10.0, 1.0,  20.0, 1.0,  30.0, 1.0,  40.0, 1.0,  50.0, 1.0],
        [0.0, 0.0,  0.0, 0.0,  0.0, 0.0,  100.0, 0.0],
    );
    let steps = RolloutSteps {
        rows: 2,
        rewards: &rewards,
        terminated: &terminated,
        truncated: &truncated,
        q_max: &q_max,
        final_q: &final_q,
    };
    let mut returns = [0.0f32; 8];
    lambda_returns(&steps, 0.5, 0.5, &mut returns);
    // Row 0, backwards: G3 = 4 + 0.5 * 100 (the final observation, not q_max[4] = 50 of the
    // reset one); G2 = 3 + 0.5 (0.5 * 40 + 0.5 * 54); G1 = 2 (terminated: no bootstrap);
    // G0 = 1 + 0.5 (0.5 * 20 + 0.5 * 2).
    // Row 1: G3 = 0.5 (0.5 + 0.5), G2 = 0.5 (0.5 + 0.25), G1 = 0.5 (0.5 + 0.1875), ...
    let row0 = [returns[0], returns[2], returns[4], returns[6]];
    let row1 = [returns[1], returns[3], returns[5], returns[7]];
    assert_eq!(row0, [6.5, 2.0, 26.5, 54.0]);
    assert_eq!(row1, [0.3359375, 0.34375, 0.375, 0.5]);
}

#[test]
fn iql_target_bootstraps_unless_terminated() {
    // A truncated transition (terminated 0, next = the final observation worth 10) bootstraps;
    // a terminated one stops at its reward.
    assert_eq!(td_target(1.0, 0.0, 10.0, 0.5), 6.0);
    assert_eq!(td_target(1.0, 1.0, 10.0, 0.5), 1.0);
}

/// The distinct steps (1-based) at which any of replica 0's arenas truncated during `steps`
/// steps of a fresh PQN learner, and how many truncations there were.
fn truncation_steps(desync: bool, m: u32, steps: u32) -> (Vec<u32>, usize) {
    let loaded = pursuit(m);
    let cfg = RunConfig {
        device: Device::Cpu,
        arenas: 64,
        rollout: m as usize,
        desync_episodes: desync,
        network: NetworkConfig {
            hidden: 8,
            layers: 1,
            ..Default::default()
        },
        pqn: PqnConfig {
            minibatches: 1,
            ..Default::default()
        },
        pr2: Pr2Config {
            minibatches: 1,
            ..Default::default()
        },
        online_dqn: OnlineDqnConfig {
            minibatches: 1,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    let device = choose_device(Device::Cpu).unwrap();
    let mut pqn = Pqn::new(&cfg, &loaded, &device).unwrap();
    let batch = &mut pqn.batch;
    let (mut at, mut count) = (Vec::new(), 0);
    for step in 1..=steps {
        batch.step().unwrap();
        let ends = batch
            .buffers()
            .truncated
            .iter()
            .filter(|&&t| t != 0)
            .count();
        if ends > 0 {
            at.push(step);
            count += ends;
        }
    }
    (at, count)
}

#[test]
fn desynchronised_runs_spread_episode_ends_over_the_rollout() {
    let m = 20;
    let (at, count) = truncation_steps(true, m, m);
    assert!(at.len() >= 10, "truncations at {at:?}");
    assert!(count >= 48, "{count} truncations");
    // Off: today's lockstep, every arena truncates at step M together.
    let (at, count) = truncation_steps(false, m, m);
    assert_eq!(at, vec![m]);
    assert!(count >= 60, "{count} truncations");
}

/// Per-update losses of a small default-like PQN Pursuit run: 32 arenas, rollout 16, time
/// limit 64 (lockstep episodes would all end in every 4th update's last step).
fn pqn_losses(desync: bool, updates: usize) -> Vec<f32> {
    let loaded = pursuit(64);
    let cfg = RunConfig {
        device: Device::Cpu,
        arenas: 32,
        rollout: 16,
        desync_episodes: desync,
        total_steps: (updates * 32 * 16) as u64,
        network: NetworkConfig {
            hidden: 64,
            ..Default::default()
        },
        pqn: PqnConfig {
            minibatches: 4,
            ..Default::default()
        },
        pr2: Pr2Config {
            minibatches: 4,
            ..Default::default()
        },
        online_dqn: OnlineDqnConfig {
            minibatches: 4,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    let device = choose_device(Device::Cpu).unwrap();
    let mut pqn = Pqn::new(&cfg, &loaded, &device).unwrap();
    (0..updates).map(|_| pqn.update().unwrap().loss).collect()
}

/// Measured (debug build, this config, the old bootstrap patched back in for the comparison):
/// the largest loss after update 24 over their median is 2.6 with both fixes. From update 12:
/// 3.2 with both, 2.4 with lockstep episodes and the bootstrap, 2.2 (but a 3.5x higher median)
/// with desynchronised episodes and the old cut at truncations, and 11.6 with both off: the
/// old lockstep, time-limit-biased run spikes every 4th update (0.02 -> 0.25 by update 90).
#[test]
fn pqn_loss_has_no_spikes_at_episode_ends() {
    let losses = pqn_losses(true, 96);
    // Once learning starts (past the exploration decay and the first episodes).
    let mut later = losses[24..].to_vec();
    later.sort_by(f32::total_cmp);
    let (median, max) = (later[later.len() / 2], later[later.len() - 1]);
    eprintln!("max {max} median {median} ratio {}", max / median);
    assert!(
        max <= 5.0 * median,
        "max {max} vs median {median}: {losses:?}"
    );
}
