//! A recurrent rollout replays what was acted: with the parameters unchanged, the minibatch
//! pass over the stored sequences (their entering states and episode starts) gives every row
//! exactly the log-probability the acting step kept, across several episodes per sequence.

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use super::*;
use crate::critic::{Chosen, Network, StackSpec};
use crate::engine::EnvBatch;
use crate::scenario::Scenario;

#[test]
fn a_recurrent_minibatch_recomputes_the_acting_log_probabilities() {
    let text = "Scenario(name: \"cue\", substrate: CueMemory((cues: 3, length: 3, \
                wrong_reward: 0.0)), roles: [(kind: player, count: 1)], max_steps: 3)";
    let loaded = Scenario::parse(text, "cue.ron").unwrap();
    let (arenas, steps, g) = (4, 10, 8);
    let mut batch = EnvBatch::new(&loaded, arenas, 9).unwrap();
    let (d, actions) = (batch.layout().obs_len, batch.layout().actions);
    let spec = StackSpec {
        nets: 1,
        input: d,
        hidden: 16,
        layers: 1,
        head: actions,
        network: Network::Gru { hidden: g },
    };
    let cpu = Chosen::Cpu {
        reason: "test".into(),
    };
    let mut actor = Critic::new(spec, 5, &cpu).unwrap();
    batch.set_hidden_width(g);
    // Enter the rollout mid-episode, with states that are not zero.
    for h in batch.hidden_states_mut() {
        *h = 0.25;
    }
    let mut ro = PpoRollout::new((steps, arenas, d), actions, false, 0).recurrent(g);
    let nets = vec![0u32; arenas];
    let mut samplers: Vec<ChaCha8Rng> = (0..arenas as u64).map(ChaCha8Rng::seed_from_u64).collect();
    let mut lp = vec![0.0; arenas * actions];
    for t in 0..steps {
        let input = batch.buffers().obs.clone();
        let logits = ro
            .policy_logits(t, &mut actor, (&input, &nets), &mut batch)
            .unwrap();
        ro.buf.obs[t * arenas * d..(t + 1) * arenas * d].copy_from_slice(&input);
        let acting = batch.actions_and_mask();
        ro.act(t, &logits, acting, (&mut samplers, 1), &mut lp);
        batch.step().unwrap();
        ro.buf.record(t, batch.buffers(), 1);
        ro.keep_logp(t, &lp);
        ro.episode_starts(t, &batch, 1);
    }
    assert!(ro.reset.contains(&1), "episodes start inside the rollout");
    assert!(ro.h0.iter().all(|&h| h == 0.25));
    // Every sequence in one minibatch, in a shuffled order.
    let picks = [2u32, 0, 3, 1];
    let mut m = PpoMinibatch::default();
    ro.gather(&picks, &nets, &mut m);
    let logits = actor
        .forward_seq(Sequences {
            input: Input::U8(&m.obs),
            nets: &m.seq_nets,
            h0: &m.h0,
            reset: &m.reset,
        })
        .unwrap();
    let mut out = vec![0.0; actions];
    for (k, z) in logits.chunks_exact(actions).enumerate() {
        log_softmax(z, None, &mut out);
        let replayed = out[m.taken[k] as usize];
        assert!(
            (replayed - m.logp[k]).abs() < 1e-5,
            "row {k}: acted {} replayed {replayed}",
            m.logp[k]
        );
    }
}

#[test]
fn the_slots_a_population_plays_are_left_out_of_the_losses() {
    // 2 steps of 3 arenas x 2 learners: entry `t * 6 + row`, slot `row % 2`.
    let mut ro = PpoRollout::new((2, 6, 4), 3, false, 0);
    let mut index = Vec::new();
    ro.learning_entries(&mut index);
    assert_eq!(index, (0..12).collect::<Vec<u32>>());
    ro.skip_slots(Some(&[false, true]));
    ro.learning_entries(&mut index);
    assert_eq!(index, [0, 2, 4, 6, 8, 10]);
    ro.skip_slots(Some(&[true, false]));
    ro.learning_entries(&mut index);
    assert_eq!(index, [1, 3, 5, 7, 9, 11]);
    // A recurrent policy's entries are whole sequences: rows.
    let mut rec = PpoRollout::new((2, 6, 4), 3, false, 0).recurrent(4);
    rec.skip_slots(Some(&[false, true]));
    rec.learning_entries(&mut index);
    assert_eq!(index, [0, 2, 4]);
    rec.skip_slots(None);
    rec.learning_entries(&mut index);
    assert_eq!(index, [0, 1, 2, 3, 4, 5]);
}
