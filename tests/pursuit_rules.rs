//! Pursuit's rules, one behaviour per test, on tiny inline maps. Evaders are learners here so
//! their moves are chosen by the test.

mod common;
use common::*;
use gridarena::components::GridPos;
use gridarena::error::EngineError;

const OPEN5: [&str; 5] = ["*****", "*****", "*****", "*****", "*****"];
const NO_SHARE: &str =
    "surround: true, tag_reward: 0.0, catch_reward: 5.0, urgency_reward: 0.0, shared_reward: false";

fn roles(pursuers: usize, evaders: usize) -> String {
    format!(
        "(kind: pursuer, count: {pursuers}), (kind: evader, count: {evaders}, control: learner)"
    )
}

/// Four pursuers around evader 4 in the open, a second evader in the corner, after one step of
/// everyone staying (the surrounded evader is caught by it).
fn surrounded_after_one_step() -> gridarena::engine::EnvBatch {
    let s = pursuit(&OPEN5, NO_SHARE, &roles(4, 2), "");
    let mut b = batch_with(
        &s,
        &[at(1, 2), at(3, 2), at(2, 1), at(2, 3), at(2, 2), at(0, 0)],
    );
    step(&mut b, &[STAY; 6]);
    b
}

#[test]
fn surround_catches_in_an_open_cell_with_four_pursuers() {
    let mut b = surrounded_after_one_step();
    let agents = b.agents(0);
    assert!(!agents[4].1, "surrounded evader must be caught");
    assert!(agents[5].1, "the other evader is free");
    let r = b.agent_rewards(0);
    assert_eq!(
        &r[..4],
        &[5.0; 4],
        "every surrounding pursuer gets catch_reward"
    );
    assert_eq!(r[4], -5.0, "a learning evader gets -catch_reward");
    assert_eq!(b.buffers().terminated[0], 0, "one evader left");
    assert_eq!(
        b.agents(0)
            .iter()
            .skip(4)
            .filter(|(_, alive)| *alive)
            .count(),
        1
    );
}

#[test]
fn a_caught_agent_idles_whatever_it_chooses() {
    // Every slot a learner, no slip: the step takes the chosen actions as they are, except a
    // removed agent's, which become the idle action.
    let mut b = surrounded_after_one_step();
    assert!(!b.agents(0)[4].1, "the surrounded evader is caught");
    let chosen = [STAY, STAY, STAY, STAY, RIGHT, RIGHT];
    step(&mut b, &chosen);
    let applied = b.applied_actions(0);
    assert_eq!(applied[5], RIGHT, "a free agent's choice is applied");
    assert_eq!(applied[4], STAY, "the caught evader idles");
    assert_eq!(
        b.agents(0)[4].0,
        at(2, 2).0,
        "and stays where it was caught"
    );
}

#[test]
fn surround_is_not_a_catch_while_one_neighbour_is_free() {
    let s = pursuit(&OPEN5, NO_SHARE, &roles(3, 1), "");
    let mut b = batch_with(&s, &[at(1, 2), at(3, 2), at(2, 1), at(2, 2)]);
    step(&mut b, &[STAY; 4]);
    assert!(b.agents(0)[3].1);
    assert_eq!(b.agent_rewards(0), vec![0.0; 4]);
}

#[test]
fn surround_at_a_corner_needs_two_pursuers() {
    let s = pursuit(&OPEN5, NO_SHARE, &roles(2, 2), "");
    let mut b = batch_with(&s, &[at(1, 0), at(0, 1), at(0, 0), at(4, 4)]);
    step(&mut b, &[STAY; 4]);
    assert!(
        !b.agents(0)[2].1,
        "corner evader with both open neighbours held is caught"
    );
    assert_eq!(b.agent_rewards(0), vec![5.0, 5.0, -5.0, 0.0]);
    assert_eq!(b.buffers().terminated[0], 0, "one evader is left");
}

#[test]
fn surround_at_an_edge_needs_three_pursuers() {
    let s = pursuit(&OPEN5, NO_SHARE, &roles(3, 2), "");
    let mut b = batch_with(&s, &[at(1, 0), at(3, 0), at(2, 1), at(2, 0), at(0, 4)]);
    step(&mut b, &[STAY; 5]);
    assert!(!b.agents(0)[3].1);
    assert_eq!(b.agent_rewards(0), vec![5.0, 5.0, 5.0, -5.0, 0.0]);

    let mut b = batch_with(&s, &[at(1, 0), at(3, 0), at(4, 4), at(2, 0), at(0, 4)]);
    step(&mut b, &[STAY; 5]);
    assert!(
        b.agents(0)[3].1,
        "two of three edge neighbours are not enough"
    );
}

#[test]
fn obstacles_count_as_held_for_surround() {
    let map = ["*#***", "*****", "*****"];
    let s = pursuit(&map, NO_SHARE, &roles(2, 1), "");
    // Evader at (0,0): neighbours (1,0) wall, (0,1) open. One pursuer at (0,1) suffices.
    let mut b = batch_with(&s, &[at(0, 1), at(4, 2), at(0, 0)]);
    step(&mut b, &[STAY; 3]);
    assert_eq!(b.buffers().terminated[0], 1, "the only evader was caught");
    assert_eq!(
        b.agent_rewards(0),
        vec![5.0, 0.0, -5.0],
        "only the pursuer on a catching cell is paid"
    );
}

#[test]
fn n_catch_needs_that_many_pursuers_on_the_cell() {
    let params = "surround: false, n_catch: 2, tag_reward: 0.0, catch_reward: 5.0, urgency_reward: 0.0, shared_reward: false";
    let s = pursuit(&OPEN5, params, &roles(3, 1), "");
    let mut b = batch_with(&s, &[at(2, 2), at(1, 2), at(0, 0), at(2, 2)]);
    step(&mut b, &[STAY, STAY, STAY, STAY]);
    assert!(
        b.agents(0)[3].1,
        "one pursuer on the cell is not enough for n_catch 2"
    );
    step(&mut b, &[STAY, RIGHT, STAY, STAY]);
    assert_eq!(
        b.buffers().terminated[0],
        1,
        "two pursuers on the cell catch the only evader"
    );
    assert_eq!(b.agent_rewards(0), vec![5.0, 5.0, 0.0, -5.0]);
}

#[test]
fn tag_reward_counts_evaders_on_the_four_neighbouring_cells() {
    let params =
        "surround: false, n_catch: 9, tag_reward: 0.25, urgency_reward: 0.0, shared_reward: false";
    let s = pursuit(&OPEN5, params, &roles(1, 4), "");
    // Pursuer at (2,2); evaders left, right, diagonal (not counted), and on its own cell (not counted).
    let mut b = batch_with(&s, &[at(2, 2), at(1, 2), at(3, 2), at(3, 3), at(2, 2)]);
    step(&mut b, &[STAY; 5]);
    assert_eq!(b.agent_rewards(0)[0], 0.5);
}

#[test]
fn urgency_is_paid_every_step_and_shared_reward_takes_the_pursuers_mean() {
    let params = "surround: true, tag_reward: 0.0, catch_reward: 4.0, urgency_reward: -0.1, shared_reward: true";
    let map = ["*#***", "*****", "*****"];
    let s = pursuit(&map, params, &roles(2, 2), "");
    let mut b = batch_with(&s, &[at(0, 1), at(4, 2), at(0, 0), at(3, 0)]);
    step(&mut b, &[STAY; 4]);
    let r = b.agent_rewards(0);
    // Pursuer 0 earned 4.0 - 0.1, pursuer 1 earned -0.1: both get the mean 1.9.
    assert!(
        (r[0] - 1.9).abs() < 1e-6 && (r[1] - 1.9).abs() < 1e-6,
        "{r:?}"
    );
    assert_eq!(
        &b.buffers().rewards[..2],
        &r[..2],
        "the reward buffer holds the learners' rewards"
    );
}

#[test]
fn walls_and_the_map_edge_block_moves() {
    let map = ["*#*", "***", "***"];
    let params = "surround: false, n_catch: 9";
    let s = pursuit(&map, params, &roles(2, 1), "");
    let mut b = batch_with(&s, &[at(0, 0), at(2, 1), at(2, 0)]);
    // Pursuer 0 tries right into the wall, pursuer 1 tries right off the map, evader tries up.
    step(&mut b, &[RIGHT, RIGHT, UP]);
    let a = b.agents(0);
    assert_eq!(
        (a[0].0, a[1].0, a[2].0),
        (
            GridPos { x: 0, y: 0 },
            GridPos { x: 2, y: 1 },
            GridPos { x: 2, y: 0 }
        )
    );
    step(&mut b, &[DOWN, LEFT, LEFT]);
    let a = b.agents(0);
    assert_eq!(
        (a[0].0, a[1].0, a[2].0),
        (
            GridPos { x: 0, y: 1 },
            GridPos { x: 1, y: 1 },
            GridPos { x: 2, y: 0 }
        )
    );
}

#[test]
fn agents_may_share_a_cell_and_swap_places() {
    let params = "surround: false, n_catch: 9";
    let s = pursuit(&OPEN5, params, &roles(3, 1), "");
    let mut b = batch_with(&s, &[at(1, 1), at(3, 1), at(0, 4), at(1, 4)]);
    step(&mut b, &[RIGHT, LEFT, RIGHT, LEFT]);
    let a = b.agents(0);
    assert_eq!(a[0].0, GridPos { x: 2, y: 1 });
    assert_eq!(
        a[1].0,
        GridPos { x: 2, y: 1 },
        "two pursuers share the cell"
    );
    assert_eq!(
        (a[2].0, a[3].0),
        (GridPos { x: 1, y: 4 }, GridPos { x: 0, y: 4 }),
        "moves are simultaneous"
    );
    // The shared cell shows a pursuer count of 2 in the observation of agent 0 (centre cell).
    let obs = &b.buffers().obs[..27];
    assert_eq!(obs[4 * 3 + 1], 2);
}

#[test]
fn observation_window_marks_outside_as_obstacle_and_counts_agents() {
    let map = ["*#*", "***", "***"];
    let params = "surround: false, n_catch: 9";
    let s = pursuit(&map, params, &roles(1, 2), "");
    let mut b = batch_with(&s, &[at(0, 0), at(0, 1), at(0, 1)]);
    let obs = &b.buffers().obs[..27];
    // Learner 0 at the top-left corner: window rows y-1..=y+1, columns x-1..=x+1.
    let cell = |r: usize, c: usize| &obs[(r * 3 + c) * 3..(r * 3 + c) * 3 + 3];
    assert_eq!(cell(0, 0), [1, 0, 0], "outside the map is obstacle");
    assert_eq!(cell(1, 0), [1, 0, 0]);
    assert_eq!(cell(1, 1), [0, 1, 0], "itself");
    assert_eq!(cell(1, 2), [1, 0, 0], "the wall at (1,0)");
    assert_eq!(cell(2, 1), [0, 0, 2], "two evaders below");
    let _ = &mut b;
}

#[test]
fn slip_replaces_actions_at_the_stated_rate() {
    // slip 0.3: an intended `stay` becomes each of the 4 moves with probability 0.3/5 = 0.06.
    let s = pursuit(
        &OPEN5,
        "surround: false, n_catch: 9",
        &roles(1, 1),
        "slip: 0.3",
    );
    let arenas = 1024;
    let mut b = gridarena::engine::EnvBatch::new(&s, arenas, 11).unwrap();
    let mut counts = [0u64; 5];
    let steps = 50;
    for _ in 0..steps {
        b.actions_mut().fill(STAY);
        b.step().unwrap();
        for a in 0..arenas {
            for act in &b.applied_actions(a)[..2] {
                counts[*act as usize] += 1;
            }
        }
    }
    let n = (arenas * steps * 2) as f64;
    // Binomial standard deviation of a 0.06 frequency over n draws is about 0.0010; allow 5 sigma.
    for (action, &c) in counts[..4].iter().enumerate() {
        let f = c as f64 / n;
        assert!(
            (f - 0.06).abs() < 0.005,
            "action {action}: frequency {f}, expected 0.06"
        );
    }
    let stay = counts[4] as f64 / n;
    assert!(
        (stay - 0.76).abs() < 0.008,
        "stay frequency {stay}, expected 0.76"
    );
}

#[test]
fn zero_slip_applies_actions_exactly() {
    let s = pursuit(
        &OPEN5,
        "surround: false, n_catch: 9",
        &roles(1, 1),
        "slip: 0.0",
    );
    let mut b = gridarena::engine::EnvBatch::new(&s, 64, 3).unwrap();
    for action in [LEFT, RIGHT, UP, DOWN, STAY] {
        b.actions_mut().fill(action);
        b.step().unwrap();
        for a in 0..64 {
            assert_eq!(b.applied_actions(a), vec![action, action]);
        }
    }
}

#[test]
fn episode_truncates_at_max_steps_and_auto_resets() {
    let s = pursuit(&OPEN5, "surround: false, n_catch: 9", &roles(1, 1), "");
    let mut s2 = s.clone();
    s2.scenario.max_steps = 3;
    let mut b = gridarena::engine::EnvBatch::new(&s2, 4, 5).unwrap();
    for t in 1..=3 {
        b.actions_mut().fill(STAY);
        b.step().unwrap();
        let done = b.buffers().truncated.clone();
        if t < 3 {
            assert_eq!(done, vec![0; 4]);
            assert_eq!(b.clock(0).t, t);
        } else {
            assert_eq!(done, vec![1; 4], "truncated after max_steps");
            assert_eq!(b.buffers().terminated, vec![0; 4]);
            assert_eq!(b.clock(0).t, 0, "auto-reset restarts the clock");
            assert_eq!(b.clock(0).episode, 1);
        }
    }
}

#[test]
fn termination_respawns_every_agent_on_spawn_cells() {
    let map = ["P.E", "...", "E.."];
    let s = pursuit(&map, "surround: false, n_catch: 1", &roles(1, 1), "");
    let mut b = gridarena::engine::EnvBatch::new(&s, 1, 9).unwrap();
    b.set_agents(0, &[at(1, 1), at(1, 1)]).unwrap();
    b.actions_mut().fill(STAY);
    b.step().unwrap();
    assert_eq!(
        b.buffers().terminated[0],
        1,
        "n_catch 1: the pursuer on the evader's cell catches"
    );
    let a = b.agents(0);
    assert!(a.iter().all(|(_, alive)| *alive), "everyone is back");
    assert_eq!(
        a[0].0,
        GridPos { x: 0, y: 0 },
        "the pursuer's only spawn cell"
    );
    assert!(
        [GridPos { x: 2, y: 0 }, GridPos { x: 0, y: 2 }].contains(&a[1].0),
        "an evader spawn cell"
    );
    assert_eq!(
        b.counters(0),
        vec![0],
        "a new episode has caught nobody yet"
    );
    // The observation is the new episode's: the learner sees itself at its window centre.
    assert_eq!(b.buffers().obs[4 * 3 + 1], 1);
}

#[test]
fn out_of_range_actions_are_refused() {
    let s = pursuit(&OPEN5, "surround: false, n_catch: 9", &roles(1, 1), "");
    let mut b = gridarena::engine::EnvBatch::new(&s, 2, 0).unwrap();
    b.actions_mut()[3] = 5;
    match b.step() {
        Err(EngineError::InvalidAction {
            arena: 1,
            learner: 1,
            action: 5,
            actions: 5,
        }) => {}
        other => panic!("expected InvalidAction, got {other:?}"),
    }
}

#[test]
fn placing_an_agent_on_a_wall_is_refused() {
    let s = pursuit(
        &["*#*", "***", "***"],
        "surround: false, n_catch: 9",
        &roles(1, 1),
        "",
    );
    let mut b = gridarena::engine::EnvBatch::new(&s, 1, 0).unwrap();
    assert!(matches!(
        b.set_agents(0, &[at(1, 0), at(0, 0)]),
        Err(EngineError::BadPosition { slot: 0, .. })
    ));
}

// ---- move_order: pettingzoo (PettingZoo pursuit_v5's agent cycle) -------------------------

/// Parameters with PettingZoo's move order appended.
fn pz(params: &str) -> String {
    format!("{params}, move_order: pettingzoo")
}

#[test]
fn pettingzoo_order_judges_catches_before_the_evaders_move() {
    // Four pursuers hold the evader's neighbours; the evader steps onto a pursuer's cell. A
    // second evader far away keeps the episode going.
    let agents = [at(1, 2), at(3, 2), at(2, 1), at(2, 3), at(2, 2), at(4, 4)];
    let actions = [STAY, STAY, STAY, STAY, LEFT, STAY];
    let s = pursuit(&OPEN5, NO_SHARE, &roles(4, 2), "");
    let mut b = batch_with(&s, &agents);
    step(&mut b, &actions);
    assert!(b.agents(0)[4].1, "simultaneous: the evader moved out first");
    assert_eq!(b.agents(0)[4].0, GridPos { x: 1, y: 2 });

    let s = pursuit(&OPEN5, &pz(NO_SHARE), &roles(4, 2), "");
    let mut b = batch_with(&s, &agents);
    step(&mut b, &actions);
    assert!(!b.agents(0)[4].1, "pettingzoo: caught before it moves");
    assert_eq!(b.agent_rewards(0), vec![5.0, 5.0, 5.0, 5.0, -5.0, 0.0]);
    assert_eq!(b.counters(0), vec![1]);
}

#[test]
fn pettingzoo_order_pays_tags_after_each_pursuers_move_divided_by_the_pursuers() {
    let params = "surround: false, n_catch: 9, tag_reward: 0.8, urgency_reward: 0.0";
    // The evader at (2,2) stays. Pursuer 0 (first to move) steps next to it; pursuer 1 steps
    // next to it on the second move. PettingZoo pays after each of the two moves, divided
    // by 2: pursuer 0 is adjacent in both (0.4 + 0.4), pursuer 1 only in the second (0.4).
    let agents = [at(2, 4), at(0, 2), at(2, 2)];
    let actions = [UP, RIGHT, STAY];
    let s = pursuit(
        &OPEN5,
        &pz(&format!("{params}, shared_reward: false")),
        &roles(2, 1),
        "",
    );
    let mut b = batch_with(&s, &agents);
    step(&mut b, &actions);
    let r = b.agent_rewards(0);
    assert!(
        (r[0] - 0.8).abs() < 1e-6 && (r[1] - 0.4).abs() < 1e-6,
        "{r:?}"
    );

    let s = pursuit(
        &OPEN5,
        &format!("{params}, shared_reward: false"),
        &roles(2, 1),
        "",
    );
    let mut b = batch_with(&s, &agents);
    step(&mut b, &actions);
    assert_eq!(
        &b.agent_rewards(0)[..2],
        &[0.8, 0.8],
        "simultaneous: both adjacent after the step"
    );

    let s = pursuit(
        &OPEN5,
        &pz(&format!("{params}, shared_reward: true")),
        &roles(2, 1),
        "",
    );
    let mut b = batch_with(&s, &agents);
    step(&mut b, &actions);
    let r = b.agent_rewards(0);
    assert!(
        (r[0] - 0.6).abs() < 1e-6 && (r[1] - 0.6).abs() < 1e-6,
        "shared: the mean, {r:?}"
    );
}

#[test]
fn pettingzoo_order_clamps_tag_neighbours_onto_the_map() {
    let params = pz(
        "surround: false, n_catch: 9, tag_reward: 1.0, urgency_reward: 0.0, shared_reward: false",
    );
    // One evader on the pursuer's own cell: counted once per neighbour off the map.
    for (cell, expected) in [
        (at(2, 2), 0.0),
        (at(0, 2), 1.0),
        (at(0, 0), 2.0),
        (at(4, 4), 2.0),
    ] {
        let s = pursuit(&OPEN5, &params, &roles(1, 1), "");
        let mut b = batch_with(&s, &[cell, cell]);
        step(&mut b, &[STAY, STAY]);
        assert_eq!(
            b.agent_rewards(0)[0],
            expected,
            "pursuer and evader at {:?}",
            cell.0
        );
    }
}

#[test]
fn pettingzoo_order_credits_a_catching_pursuer_once_per_step() {
    let params = "surround: false, n_catch: 2, tag_reward: 0.0, catch_reward: 5.0, urgency_reward: 0.0, shared_reward: false";
    // Two pursuers share a cell with two evaders: both evaders are caught.
    let agents = [at(2, 2), at(2, 2), at(2, 2), at(2, 2), at(0, 0)];
    let s = pursuit(&OPEN5, params, &roles(2, 3), "");
    let mut b = batch_with(&s, &agents);
    step(&mut b, &[STAY; 5]);
    assert_eq!(
        &b.agent_rewards(0)[..2],
        &[10.0, 10.0],
        "simultaneous: per evader"
    );

    let s = pursuit(&OPEN5, &pz(params), &roles(2, 3), "");
    let mut b = batch_with(&s, &agents);
    step(&mut b, &[STAY; 5]);
    assert_eq!(
        b.agent_rewards(0),
        vec![5.0, 5.0, -5.0, -5.0, 0.0],
        "pettingzoo: once"
    );
    assert_eq!(b.counters(0), vec![2], "both evaders count as catches");
}
