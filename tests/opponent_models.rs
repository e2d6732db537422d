//! The opponent models read the observation: on rows where the other learner's action is a
//! fixed function of what the predicting learner observes (and, for PR2's conditional models,
//! of its own action), both kinds of model beat the frequency baseline, the prediction from
//! the other's action frequencies in the scored rows alone, which no constant prediction beats.
//! A model that ignored its input would tie with the baseline at best.

use gridarena::critic::{Device, choose_device};
use gridarena::dist::Job;
use gridarena::train::config::{NetworkConfig, RunConfig};
use gridarena::train::opponent::{ConditionalModels, OpponentModels, OpponentScores};

const ACTIONS: u32 = 5;
const INPUT: usize = 4;
const ROWS: usize = 256;

fn cfg() -> RunConfig {
    RunConfig {
        device: Device::Cpu,
        network: NetworkConfig {
            hidden: 32,
            layers: 1,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

/// A fresh batch of `ROWS` rows for two learners: observation bytes (each a class 0..5 times
/// 50), the row's learner, its own action, and the other learner's action: the class in
/// observation byte 0, or with `conditional` in byte `own % 4`. The other's actions are
/// uniform overall, so the frequency baseline can do no better than about 1/5.
fn batch(step: u64, conditional: bool) -> (Vec<u8>, Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut s = step.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = |m: u32| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 32) as u32 % m
    };
    let (mut obs, mut slots, mut own, mut other) = (vec![], vec![], vec![], vec![]);
    for r in 0..ROWS {
        let classes: Vec<u32> = (0..INPUT).map(|_| next(ACTIONS)).collect();
        let a = next(ACTIONS);
        let read = if conditional { a as usize % INPUT } else { 0 };
        other.push(classes[read]);
        obs.extend(classes.iter().map(|&c| (c * 50) as u8));
        slots.push((r % 2) as u32);
        own.push(a);
    }
    (obs, slots, own, other)
}

/// The last `k` updates' scores, averaged over both learners.
fn summary(history: &[OpponentScores], k: usize) -> [f64; 4] {
    let mean = |f: fn(&OpponentScores) -> &Vec<Vec<f64>>| {
        let v: Vec<f64> = history[history.len() - k..]
            .iter()
            .flat_map(|s| f(s).iter().flatten().copied())
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    [
        mean(|s| &s.accuracy),
        mean(|s| &s.marginal_accuracy),
        mean(|s| &s.log_loss),
        mean(|s| &s.marginal_log_loss),
    ]
}

fn assert_beats_the_frequency_baseline(what: &str, history: &[OpponentScores]) {
    let [acc, base_acc, nll, base_nll] = summary(history, 10);
    eprintln!("{what}: accuracy {acc:.3} vs {base_acc:.3}, log-loss {nll:.3} vs {base_nll:.3}");
    assert!(
        base_acc < 0.3 && base_nll > 1.5,
        "{what}: the baseline {base_acc}, {base_nll}"
    );
    assert!(
        acc > 0.9,
        "{what}: accuracy {acc} vs {base_acc} for the frequency baseline"
    );
    assert!(nll < base_nll - 1.0, "{what}: log-loss {nll} vs {base_nll}");
}

#[test]
fn the_opponent_models_predict_from_the_observation() {
    let device = choose_device(Device::Cpu).unwrap();
    let mut m = OpponentModels::new(
        &cfg(),
        2,
        ACTIONS as usize,
        INPUT,
        64,
        (&device, &Job::single()),
    )
    .unwrap();
    let history: Vec<OpponentScores> = (0..3000)
        .map(|step| {
            let (obs, slots, _, other) = batch(step, false);
            m.score_and_train_rows(&obs, &slots, &other, 3e-3).unwrap()
        })
        .collect();
    assert_beats_the_frequency_baseline("plain models", &history);
}

#[test]
fn pr2s_conditional_models_predict_from_the_observation_and_the_own_action() {
    let device = choose_device(Device::Cpu).unwrap();
    let mut m = ConditionalModels::new(
        &cfg(),
        2,
        ACTIONS as usize,
        INPUT,
        (&device, &Job::single()),
    )
    .unwrap();
    let history: Vec<OpponentScores> = (0..3000)
        .map(|step| {
            let (obs, slots, own, other) = batch(step, true);
            m.score_and_train(&obs, &slots, (&own, &other), &[true; ROWS], 3e-3)
                .unwrap()
        })
        .collect();
    assert_beats_the_frequency_baseline("conditional models", &history);
}
