//! Overcooked's rules with real numbers on cramped_room (JaxMARL's facts; the exhaustive check is
//! tests/overcooked_fidelity.rs), and the greedy-cook baseline against random play.

use gridarena::components::{Carry, Facing, GridPos};
use gridarena::engine::EnvBatch;
use gridarena::policy::{Policy, RandomPolicy, heuristics_for};
use gridarena::scenario::{LoadedScenario, Scenario};

const UP: u8 = 0;
const RIGHT: u8 = 2;
const LEFT: u8 = 3;
const STAY: u8 = 4;
const INTERACT: u8 = 5;
/// Engine facings.
const NORTH: u8 = 0;
const SOUTH: u8 = 2;
const ONION: u8 = 3;
const PLATE: u8 = 5;
const DISH: u8 = 9;

fn cramped() -> LoadedScenario {
    Scenario::load(std::path::Path::new(
        "assets/scenarios/overcooked_cramped_room.ron",
    ))
    .unwrap()
}

/// Players at p0 / p1 with facings and held items.
fn place(b: &mut EnvBatch, p: [(i16, i16); 2], f: [u8; 2], held: [u8; 2]) {
    b.edit_arena(0, move |_, a| {
        for s in 0..2 {
            a.pos[s] = GridPos {
                x: p[s].0,
                y: p[s].1,
            };
            a.facing[s] = Facing(f[s]);
            a.carry[s] = Carry([held[s], 0, 0]);
        }
    })
    .unwrap();
}

fn step(b: &mut EnvBatch, acts: [u8; 2]) -> Vec<f32> {
    b.actions_mut().copy_from_slice(&acts);
    b.step().unwrap();
    b.buffers().rewards.clone()
}

fn pos(b: &mut EnvBatch) -> Vec<(i16, i16)> {
    b.agents(0).iter().map(|(p, _)| (p.x, p.y)).collect()
}

/// The pot's status (cramped_room's pot is cell (2, 0)).
fn pot(b: &mut EnvBatch) -> u8 {
    b.with_arena(0, |l, a| a.cells[l.width * l.height + 2])
}

#[test]
fn moving_into_the_same_cell_or_swapping_moves_nobody_but_turns_both() {
    let mut b = EnvBatch::new(&cramped(), 1, 0).unwrap();
    place(&mut b, [(1, 1), (3, 1)], [NORTH, NORTH], [0, 0]);
    step(&mut b, [RIGHT, LEFT]);
    assert_eq!(pos(&mut b), vec![(1, 1), (3, 1)]);
    let facings = b.with_arena(0, |_, a| [a.facing[0].0, a.facing[1].0]);
    assert_eq!(facings, [1, 3], "east and west");
    place(&mut b, [(1, 1), (2, 1)], [NORTH, NORTH], [0, 0]);
    step(&mut b, [RIGHT, LEFT]);
    assert_eq!(pos(&mut b), vec![(1, 1), (2, 1)], "no swapping");
    // Following into a cell the other leaves is allowed.
    step(&mut b, [RIGHT, RIGHT]);
    assert_eq!(pos(&mut b), vec![(2, 1), (3, 1)]);
    // Counters block, and the blocked move still turns the player.
    step(&mut b, [UP, STAY]);
    assert_eq!(pos(&mut b), vec![(2, 1), (3, 1)]);
}

#[test]
fn three_onions_cook_for_twenty_steps_and_a_served_soup_pays_twenty_to_both() {
    let mut b = EnvBatch::new(&cramped(), 1, 0).unwrap();
    // Player 0 below the pot, facing it, three times with an onion.
    for k in 0..3u8 {
        place(&mut b, [(2, 1), (3, 2)], [NORTH, SOUTH], [ONION, 0]);
        assert_eq!(step(&mut b, [INTERACT, STAY]), vec![3.0, 0.0], "onion {k}");
    }
    // The third onion starts the cooking, which counts down in the same step.
    assert_eq!(pot(&mut b), 19);
    let mut waited = 0;
    while pot(&mut b) != 0 {
        step(&mut b, [STAY, STAY]);
        waited += 1;
    }
    assert_eq!(waited, 19, "ready 20 steps after the third onion");
    // A plate takes the soup (shaped 5); with the soup in hand, the serving cell pays both.
    place(&mut b, [(2, 1), (3, 2)], [NORTH, SOUTH], [PLATE, 0]);
    assert_eq!(step(&mut b, [INTERACT, STAY]), vec![5.0, 0.0]);
    assert_eq!(pot(&mut b), 23, "empty again");
    place(&mut b, [(1, 1), (3, 2)], [NORTH, SOUTH], [0, DISH]);
    assert_eq!(step(&mut b, [STAY, INTERACT]), vec![20.0, 20.0]);
    assert_eq!(b.counters(0), vec![1, 3, 0, 1]);
    // Without shaping only the delivery counts.
    b.set_reward_shaping(0.0);
    place(&mut b, [(2, 1), (3, 2)], [NORTH, SOUTH], [ONION, 0]);
    assert_eq!(step(&mut b, [INTERACT, STAY]), vec![0.0, 0.0]);
}

#[test]
fn a_plate_pays_only_when_a_pot_is_busy_and_no_plate_lies_on_a_counter() {
    let mut b = EnvBatch::new(&cramped(), 1, 0).unwrap();
    // Plate pile at (1, 3): stand at (1, 2) facing south. Empty pot: no reward.
    place(&mut b, [(1, 2), (3, 1)], [SOUTH, NORTH], [0, 0]);
    assert_eq!(step(&mut b, [INTERACT, STAY]), vec![0.0, 0.0]);
    // One onion in the pot: the plate pickup pays 3.
    place(&mut b, [(2, 1), (3, 1)], [NORTH, NORTH], [ONION, 0]);
    step(&mut b, [INTERACT, STAY]);
    place(&mut b, [(1, 2), (3, 1)], [SOUTH, NORTH], [0, 0]);
    assert_eq!(step(&mut b, [INTERACT, STAY]), vec![3.0, 0.0]);
    // Player 1 holding a plate already: one busy pot, one plate held, nothing paid.
    place(&mut b, [(1, 2), (3, 1)], [SOUTH, NORTH], [0, PLATE]);
    assert_eq!(step(&mut b, [INTERACT, STAY]), vec![0.0, 0.0]);
    // Put a plate down on the counter at (0, 2) (player 0 at (1, 2) facing west), then a pile
    // pickup pays nothing while it lies there.
    place(&mut b, [(1, 2), (3, 1)], [3, NORTH], [PLATE, 0]);
    step(&mut b, [INTERACT, STAY]);
    place(&mut b, [(1, 2), (3, 1)], [SOUTH, NORTH], [0, 0]);
    assert_eq!(step(&mut b, [INTERACT, STAY]), vec![0.0, 0.0]);
    assert_eq!(b.counters(0)[2], 1);
}

/// Sparse return per episode of `policy` over `arenas` cramped_room episodes (400 steps).
fn sparse_return(policy: &mut dyn Policy, arenas: usize) -> f32 {
    let mut b = EnvBatch::new(&cramped(), arenas, 3).unwrap();
    b.set_reward_shaping(0.0);
    let mut total = 0.0;
    let mut acts = vec![0u8; arenas * 2];
    for _ in 0..400 {
        policy.actions(&b.buffers().obs, &mut acts).unwrap();
        b.actions_mut().copy_from_slice(&acts);
        b.step().unwrap();
        total += b.buffers().rewards.iter().step_by(2).sum::<f32>();
    }
    total / arenas as f32
}

#[test]
fn the_greedy_cook_serves_soup_where_random_play_does_not() {
    let loaded = cramped();
    let mut heuristics = heuristics_for(&loaded, 1, 16);
    assert_eq!(heuristics.len(), 1);
    assert_eq!(heuristics[0].0, "greedy cook");
    let greedy = sparse_return(&mut *heuristics[0].1, 16);
    let mut random = RandomPolicy::new(1, 16, 6);
    let random = sparse_return(&mut random, 16);
    eprintln!("cramped_room sparse return per episode: greedy {greedy}, random {random}");
    assert!(greedy >= 100.0, "greedy cook: {greedy} per episode");
    assert!(random < 20.0, "random: {random} per episode");
}

#[test]
fn the_run_config_anneals_the_shaped_rewards_linearly() {
    use gridarena::train::config::RunConfig;
    let text = "RunConfig(reward_shaping: Some((start: 1.0, end: 0.0, steps: 1000)))";
    let cfg = RunConfig::parse_valid(text, "shaping.ron").unwrap();
    assert_eq!(cfg.reward_shaping_at(0), 1.0);
    assert_eq!(cfg.reward_shaping_at(250), 0.75);
    assert_eq!(cfg.reward_shaping_at(5000), 0.0);
    assert_eq!(RunConfig::default().reward_shaping_at(5000), 1.0);
    let bad = "RunConfig(reward_shaping: Some((start: 1.0, end: 0.0, steps: 0)))";
    let err = RunConfig::parse_valid(bad, "bad.ron")
        .unwrap_err()
        .to_string();
    assert!(err.contains("reward_shaping"), "{err}");
}
