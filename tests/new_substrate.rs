//! The substrate added by following docs/new_substrate.md (walk_to_goal): a scenario of it
//! loads from RON, a batch steps it, and its rule holds with real numbers.

use gridarena::engine::EnvBatch;
use gridarena::scenario::Scenario;

const RIGHT: u8 = 1;
const STAY: u8 = 4;

/// One player spawning on the left of a 3-cell corridor, the goal on the right.
const WALK_TO_GOAL: &str = r#"
Scenario(
    name: "walk_to_goal",
    substrate: WalkToGoal((goal_reward: 1.0, step_reward: -0.1)),
    map: ["*.G"],
    roles: [(kind: player, count: 1)],
    max_steps: 10,
)
"#;

fn batch(arenas: usize) -> EnvBatch {
    let loaded = Scenario::parse(WALK_TO_GOAL, "walk_to_goal.ron").unwrap();
    EnvBatch::new(&loaded, arenas, 3).unwrap()
}

fn step(b: &mut EnvBatch, action: u8) {
    b.actions_mut().fill(action);
    b.step().unwrap();
}

#[test]
fn the_observation_is_position_then_goal() {
    let b = batch(2);
    assert_eq!(b.layout().obs_len, 4);
    assert_eq!(b.buffers().obs, vec![0, 0, 2, 0, 0, 0, 2, 0]);
}

#[test]
fn every_step_costs_and_reaching_the_goal_pays_and_ends_the_episode() {
    let mut b = batch(4);
    step(&mut b, RIGHT);
    assert_eq!(b.buffers().rewards, vec![-0.1; 4]);
    assert_eq!(b.buffers().terminated, vec![0; 4]);
    assert_eq!(b.buffers().obs[..4], [1, 0, 2, 0]);

    step(&mut b, RIGHT);
    assert_eq!(b.buffers().rewards, vec![0.9; 4]);
    assert_eq!(b.buffers().terminated, vec![1; 4]);
    // Auto-reset: the observation is the new episode's first one, back on the spawn cell.
    assert_eq!(b.buffers().obs[..4], [0, 0, 2, 0]);
    assert_eq!(b.clock(0).episode, 1);
}

#[test]
fn walls_and_the_map_edge_block_and_staying_only_costs() {
    let mut b = batch(1);
    step(&mut b, 0); // left, off the map: stays at (0, 0)
    step(&mut b, STAY);
    assert_eq!(b.buffers().obs, vec![0, 0, 2, 0]);
    assert_eq!(b.buffers().rewards, vec![-0.1]);
    assert_eq!(b.counters(0), vec![0]);
}

#[test]
fn a_map_without_exactly_one_goal_is_a_located_error() {
    let src = WALK_TO_GOAL.replace("\"*.G\"", "\"*..\"");
    let e = Scenario::parse(&src, "walk_to_goal.ron").unwrap_err();
    assert!(e.to_string().contains("0 goal cells"), "{e}");
    assert!(e.to_string().starts_with("walk_to_goal.ron:5:"), "{e}");
}
