//! PQN-RNN's carried memory: exactly `memory_window` steps are kept, and replaying them before
//! the rollout from the stored hidden state recomputes the values the rollout was acted with.

use super::*;
use crate::critic::{Device, choose_device};
use crate::scenario::Scenario;
use crate::train::config::{Algo, NetworkConfig, NetworkKind, PqnConfig};
use crate::train::kit::explore::max_value;

fn cue_memory() -> LoadedScenario {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/scenarios/cue_memory.ron"
    );
    Scenario::load(std::path::Path::new(path)).unwrap()
}

fn gru(window: usize) -> RunConfig {
    RunConfig {
        algo: Algo::Pqn,
        arenas: 8,
        rollout: 6,
        device: Device::Cpu,
        network: NetworkConfig {
            kind: NetworkKind::Gru,
            layers: 1,
            hidden: 16,
            gru_hidden: 8,
            memory_window: window,
            ..Default::default()
        },
        pqn: PqnConfig {
            minibatches: 2,
            epochs: 1,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

fn learner(cfg: &RunConfig) -> Pqn {
    cfg.validate().unwrap();
    Pqn::new(cfg, &cue_memory(), &choose_device(Device::Cpu).unwrap()).unwrap()
}

#[test]
fn the_memory_holds_exactly_memory_window_steps() {
    for window in [0, 1, 4, 6] {
        let mut p = learner(&gru(window));
        let (rows, d, g) = (8, p.obs_len, 8);
        assert_eq!(p.seq.as_ref().unwrap().memory.steps, 0);
        for _ in 0..3 {
            p.update().unwrap();
            let m = &p.seq.as_ref().unwrap().memory;
            assert_eq!(m.steps, window, "window {window}");
            assert_eq!(m.obs.len(), window * rows * d);
            assert_eq!(m.reset.len(), window * rows);
            assert_eq!(m.h0.len(), if window > 0 { rows * g } else { 0 });
        }
    }
}

/// Max Q of each row of `out` (`[R, A]`).
fn maxima(out: &[f32], a: usize) -> Vec<f32> {
    out.chunks_exact(a).map(max_value).collect()
}

/// The window's hidden states were acted with the parameters of their own rollout; training in
/// between changes the parameters, and a replay recomputes the window with the new ones (as
/// R2D2's burn-in does). With the parameters that acted the window restored for the next
/// rollout, the replay must recompute the acted values: the stored hidden state, episode starts
/// and steps are the right ones.
#[test]
fn replaying_memory_and_rollout_recomputes_the_acted_values() {
    for window in [0, 3, 6] {
        let mut p = learner(&gru(window));
        p.update().unwrap();
        // The parameters that act the next rollout, whose last steps become the memory.
        let acting = p.critic.params().unwrap();
        p.update().unwrap();
        assert_ne!(p.critic.params().unwrap(), acting);
        p.critic.set_params(&acting).unwrap();
        // A rollout acted with the current parameters, then replayed with the same ones.
        let eps = p.epsilon();
        p.rollout(eps).unwrap();
        let (steps, rows, a) = (p.cfg.rollout, 8, p.actions);
        let r = sequences_of(&p.buf, &p.nets);
        let seqs: Vec<usize> = (0..rows).collect();
        let seq = p.seq.as_mut().unwrap();
        let carried = seq.memory.steps;
        assert_eq!(carried, window);
        let out = seq.replay(&mut p.critic, &r, &seqs).unwrap();
        let replayed = maxima(&out[carried * rows * a..], a);
        let acted = &p.buf.q_max[..steps * rows];
        for (i, (x, y)) in replayed.iter().zip(acted).enumerate() {
            assert!((x - y).abs() < 1e-5, "window {window}, row {i}: {x} vs {y}");
        }
        if window == 3 {
            // The stored hidden state matters: replaying the window from zeros differs (a
            // 3-step window misses the episode start of most rows; a 6-step one of few).
            seq.memory.h0.fill(0.0);
            let out = seq.replay(&mut p.critic, &r, &seqs).unwrap();
            let wrong = maxima(&out[carried * rows * a..], a);
            let worst = wrong
                .iter()
                .zip(acted)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0f32, f32::max);
            assert!(
                worst > 1e-4,
                "window {window}: zeros replay the same ({worst})"
            );
        }
    }
}
