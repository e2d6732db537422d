//! The sequence replay's tests: target sequences, burn-in and masked bootstraps.

use super::*;

/// Two sequences of three steps, one of which ends an episode at its first step: the
/// target pass inserts that step's successor (and each last step's), starts the next
/// episode with a zero state, pads the shorter column, and points every step's bootstrap
/// at its successor's row; the burn-in step weighs 0.
#[test]
fn target_sequences_insert_the_successors_of_ended_steps() {
    let mut replay = SeqReplay::new((4, 3), (1, 0), 2, (4, 1));
    for t in 0..3 {
        replay.before_step(t, &[10 + t as u8, 20 + t as u8], &[]);
        let b = StepBuffers {
            rewards: vec![0.0; 2],
            terminated: vec![0, u8::from(t == 0)],
            truncated: vec![0, 0],
            ..Default::default()
        };
        replay.after_step(t, (&[30 + t as u8, 40 + t as u8], &[], &[0, 0]), &b, 1);
    }
    assert_eq!(replay.finish(&[0, 0]), 0);
    let mut mb = SeqBatch::default();
    let picks = [0usize, 1];
    mb.gather(&replay, &picks, 1);
    assert_eq!(mb.mask, [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
    assert_eq!(mb.steps.reset, [1, 1, 0, 1, 0, 0]);
    // Column 0: 10 11 12 30+2; column 1: 20 40 21 22 42 (the successor of the end at 0).
    assert_eq!(mb.target_input, [10, 20, 11, 40, 12, 21, 32, 22, 0, 42]);
    assert_eq!(mb.target_reset, [1, 1, 0, 0, 0, 1, 0, 0, 1, 0]);
    // Step t of column j bootstraps from row l * 2 + j.
    assert_eq!(mb.boot, [2, 3, 4, 7, 6, 9]);
}

/// A small GRU critic on the CPU (2 input bytes, 3 actions), the same from the same seed.
fn gru_critic() -> Critic {
    use crate::critic::{Device, Network, StackSpec, choose_device};
    let spec = StackSpec {
        nets: 1,
        input: 2,
        hidden: 8,
        layers: 1,
        head: 3,
        network: Network::Gru { hidden: 4 },
    };
    Critic::new(spec, 3, &choose_device(Device::Cpu).unwrap()).unwrap()
}

/// One learner step of `mb` on `critic`: gamma 0.9, tau 0.5, Huber loss over 3 actions.
fn train_once(mb: &mut SeqBatch, critic: &mut Critic) {
    let values = StepValues {
        gamma: 0.9,
        tau: 0.5,
        adam: crate::critic::AdamConfig::default(),
    };
    mb.train(critic, &values, (3, QHead::Huber(1.0)), 0)
        .unwrap();
}

/// One learner step on two sequences of four steps with `burn_in` 2, the rewards at step
/// `changed` raised by 5 in `raised`: the parameters after it.
fn params_after_step(changed: usize, raised: bool) -> Vec<f32> {
    let mut critic = gru_critic();
    let mut replay = SeqReplay::new((2, 4), (2, 4), 2, (3, 1));
    for t in 0..4 {
        let obs = [t as u8, 1, 2 * t as u8, 0];
        replay.before_step(t, &obs, &[0.0; 8]);
        let bonus = if raised && t == changed { 5.0 } else { 0.0 };
        let b = StepBuffers {
            rewards: vec![0.5 + bonus, -0.5 + bonus],
            terminated: vec![0, 0],
            truncated: vec![0, 0],
            ..Default::default()
        };
        replay.after_step(t, (&[1, t as u8, 0, 2], &[], &[t as u32 % 3, 1]), &b, 1);
    }
    replay.finish(&[0, 0]);
    let mut mb = SeqBatch::default();
    let picks = [0usize, 1];
    mb.gather(&replay, &picks, 2);
    train_once(&mut mb, &mut critic);
    critic.params().unwrap()
}

/// The first `burn_in` steps carry no loss: raising their rewards changes nothing, raising
/// a trained step's does.
#[test]
fn burn_in_steps_carry_no_loss() {
    let base = params_after_step(0, false);
    for t in 0..2 {
        assert_eq!(
            params_after_step(t, true),
            base,
            "burn-in step {t} moved the step"
        );
    }
    for t in 2..4 {
        assert_ne!(
            params_after_step(t, true),
            base,
            "trained step {t} did not count"
        );
    }
}

/// A replay keeping masks: every step's successor mask reaches the minibatch beside its step,
/// time-major as the steps.
#[test]
fn sequences_keep_each_steps_successor_mask() {
    let mut replay = SeqReplay::new((4, 2), (1, 0), 2, (3, 1));
    replay.keep_masks(3);
    for t in 0..2 {
        replay.before_step(t, &[t as u8, 5], &[]);
        let b = StepBuffers {
            rewards: vec![0.0; 2],
            terminated: vec![0, 0],
            truncated: vec![0, 0],
            ..Default::default()
        };
        // Row r at step t: action (t + r) % 3 illegal.
        let mask: Vec<u8> = (0..2)
            .flat_map(|r| (0..3).map(move |a| u8::from(a != (t + r) % 3)))
            .collect();
        replay.after_step(t, (&[9, 9], &mask, &[0, 0]), &b, 1);
    }
    replay.finish(&[0, 0]);
    let mut mb = SeqBatch::default();
    mb.gather(&replay, &[1, 0], 0);
    // Time-major over the picks (row 1, then row 0).
    assert_eq!(mb.steps.next_mask, [1, 0, 1, 0, 1, 1, 1, 1, 0, 1, 0, 1]);
}

/// The recurrent target bootstraps from the best legal successor action: with each step's
/// best action masked, every target is `r + gamma * max` over the others, and differs from the
/// unmasked one.
#[test]
fn recurrent_targets_take_the_best_legal_successor_action() {
    let mut replay = SeqReplay::new((2, 3), (2, 4), 2, (3, 1));
    replay.keep_masks(3);
    for t in 0..3 {
        replay.before_step(t, &[t as u8 * 40, 7, 200 - t as u8 * 30, 3], &[0.0; 8]);
        let b = StepBuffers {
            rewards: vec![1.0, -1.0],
            terminated: vec![0, 0],
            truncated: vec![0, 0],
            ..Default::default()
        };
        replay.after_step(t, (&[90, t as u8, 10, 250], &[1; 6], &[1, 2]), &b, 1);
    }
    replay.finish(&[0, 0]);
    let mut mb = SeqBatch::default();
    mb.gather(&replay, &[0, 1], 0);
    let mut reference = gru_critic();
    let q_next = reference
        .forward_target_seq(Sequences {
            input: Input::U8(&mb.target_input),
            nets: &mb.nets,
            h0: &mb.h0,
            reset: &mb.target_reset,
        })
        .unwrap();
    // Mask each step's best successor action.
    let rows = mb.boot.len();
    let mut best_masked = vec![0.0f32; rows];
    let mut best_all = vec![0.0f32; rows];
    for k in 0..rows {
        let q = &q_next[mb.boot[k] * 3..(mb.boot[k] + 1) * 3];
        let top = (0..3).fold(0, |b, a| if q[a] > q[b] { a } else { b });
        for a in 0..3 {
            mb.steps.next_mask[k * 3 + a] = u8::from(a != top);
        }
        best_all[k] = q[top];
        best_masked[k] = (0..3)
            .filter(|&a| a != top)
            .map(|a| q[a])
            .fold(f32::MIN, f32::max);
    }
    let mut critic = gru_critic();
    train_once(&mut mb, &mut critic);
    for k in 0..rows {
        let r = mb.steps.reward[k];
        assert_eq!(
            mb.targets[k],
            td_target(r, 0.0, best_masked[k], 0.9),
            "step {k}"
        );
        assert_ne!(
            mb.targets[k],
            td_target(r, 0.0, best_all[k], 0.9),
            "step {k}"
        );
    }
}
