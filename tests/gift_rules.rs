//! gift_refinements' rules on tiny inline maps, one behaviour per test.

use gridarena::components::{Carry, Facing, GridPos};
use gridarena::engine::EnvBatch;
use gridarena::scenario::Scenario;
use gridarena::substrate::avatars::ITEM;

const NOOP: u8 = 0;
const FORWARD: u8 = 1;
const GIFT: u8 = 7;
const CONSUME: u8 = 8;
const EAST: u8 = 1;

fn scenario(map: &[&str], players: usize, extra: &str) -> gridarena::scenario::LoadedScenario {
    let rows: Vec<String> = map.iter().map(|r| format!("\"{r}\"")).collect();
    let src = format!(
        "Scenario(name: \"gift-test\", substrate: GiftRefinements(({extra})), map: [{}], \
         roles: [(kind: player, count: {players})], max_steps: 100, \
         observation: (window: (left: 1, right: 1, ahead: 2, behind: 0)))",
        rows.join(", ")
    );
    Scenario::parse(&src, "<gift test>").unwrap_or_else(|e| panic!("{e}"))
}

const LINE: [&str; 3] = ["##########", "#********#", "##########"];

/// Players on row 1 at the given columns, all facing east, with the given inventories.
fn line(players: &[(i16, [u8; 3])], extra: &str) -> EnvBatch {
    let s = scenario(&LINE, players.len(), extra);
    let mut b = EnvBatch::new(&s, 1, 1).unwrap();
    let players = players.to_vec();
    b.edit_arena(0, move |_, a| {
        for (slot, (x, inv)) in players.iter().enumerate() {
            a.pos[slot] = GridPos { x: *x, y: 1 };
            a.facing[slot] = Facing(EAST);
            a.carry[slot] = Carry(*inv);
        }
    })
    .unwrap();
    b
}

fn act(b: &mut EnvBatch, actions: &[u8]) {
    b.actions_mut().copy_from_slice(actions);
    b.step().unwrap();
}

fn inventories(b: &mut EnvBatch) -> Vec<[u8; 3]> {
    b.snapshot(0).carry
}

#[test]
fn a_gift_turns_one_raw_token_into_five_of_the_next_level_for_the_first_avatar_hit() {
    let mut b = line(&[(1, [2, 0, 0]), (3, [0, 0, 0]), (5, [0, 0, 0])], "");
    act(&mut b, &[GIFT, NOOP, NOOP]);
    assert_eq!(inventories(&mut b), vec![[1, 0, 0], [0, 5, 0], [0, 0, 0]]);
    assert_eq!(b.counters(0)[1], 1, "one level-1 gift");
}

#[test]
fn the_most_refined_token_is_gifted_first() {
    let mut b = line(&[(1, [3, 2, 0]), (2, [0, 0, 0])], "");
    act(&mut b, &[GIFT, NOOP]);
    assert_eq!(inventories(&mut b), vec![[3, 1, 0], [0, 0, 5]]);
}

#[test]
fn a_level_three_gift_gives_one_level_three_token() {
    let mut b = line(&[(1, [0, 0, 2]), (2, [0, 0, 0])], "");
    act(&mut b, &[GIFT, NOOP]);
    assert_eq!(inventories(&mut b), vec![[0, 0, 1], [0, 0, 1]]);
}

#[test]
fn a_wall_stops_the_beam() {
    let map = ["##########", "#**#*****#", "##########"];
    let s = scenario(&map, 2, "");
    let mut b = EnvBatch::new(&s, 1, 1).unwrap();
    b.edit_arena(0, |_, a| {
        a.pos[0] = GridPos { x: 1, y: 1 };
        a.pos[1] = GridPos { x: 4, y: 1 };
        a.facing[0] = Facing(EAST);
        a.carry[0] = Carry([1, 0, 0]);
        a.carry[1] = Carry([0, 0, 0]);
    })
    .unwrap();
    act(&mut b, &[GIFT, NOOP]);
    assert_eq!(inventories(&mut b), vec![[1, 0, 0], [0, 0, 0]]);
}

#[test]
fn the_beam_reaches_beam_length_cells_and_no_further() {
    let mut b = line(&[(1, [2, 0, 0]), (6, [0, 0, 0])], "beam_length: 5");
    act(&mut b, &[GIFT, NOOP]);
    assert_eq!(
        inventories(&mut b)[1],
        [0, 5, 0],
        "5 cells ahead is in reach"
    );
    let mut b = line(&[(1, [2, 0, 0]), (7, [0, 0, 0])], "beam_length: 5");
    act(&mut b, &[GIFT, NOOP]);
    assert_eq!(inventories(&mut b)[1], [0, 0, 0], "6 cells ahead is not");
}

#[test]
fn the_beam_cooldown_allows_one_beam_every_three_steps() {
    let mut b = line(
        &[(1, [9, 0, 0]), (2, [0, 0, 0])],
        "beam_cooldown: 3, capacity: 15",
    );
    let mut received = Vec::new();
    for _ in 0..7 {
        act(&mut b, &[GIFT, NOOP]);
        received.push(inventories(&mut b)[1][1]);
    }
    assert_eq!(
        received,
        vec![5, 5, 5, 10, 10, 10, 15],
        "gifts at steps 0, 3 and 6"
    );
}

#[test]
fn inventories_are_capped_at_capacity() {
    let mut b = line(&[(1, [1, 0, 0]), (2, [0, 14, 0])], "capacity: 15");
    act(&mut b, &[GIFT, NOOP]);
    assert_eq!(inventories(&mut b)[1], [0, 15, 0], "14 + 5 is capped at 15");
}

#[test]
fn consume_pays_the_weighted_inventory_and_empties_it() {
    let mut b = line(
        &[(1, [2, 3, 1]), (5, [4, 0, 0])],
        "consume_value: (0.0, 1.0, 1.0)",
    );
    act(&mut b, &[CONSUME, CONSUME]);
    assert_eq!(
        b.agent_rewards(0),
        vec![4.0, 0.0],
        "raw tokens are worth 0 in the refined variant"
    );
    assert_eq!(inventories(&mut b), vec![[0, 0, 0], [0, 0, 0]]);
    assert_eq!(b.counters(0)[4], 2, "two consumptions");
}

#[test]
fn stepping_onto_a_token_picks_it_up() {
    let map = ["#####", "#*T*#", "#####"];
    let s = scenario(&map, 1, "regrow_prob: 0.0");
    let mut b = EnvBatch::new(&s, 1, 1).unwrap();
    b.edit_arena(0, |l, a| {
        a.pos[0] = GridPos { x: 1, y: 1 };
        a.facing[0] = Facing(EAST);
        a.cells[l.cell_index(2, 1) + ITEM] = 1;
    })
    .unwrap();
    act(&mut b, &[FORWARD]);
    let f = b.snapshot(0);
    assert_eq!(f.positions[0], (2, 1));
    assert_eq!(f.carry[0], [1, 0, 0]);
    assert_eq!(f.items[5 + 2], 0, "the token is gone from its cell");
}

#[test]
fn tokens_regrow_only_on_empty_unoccupied_token_cells() {
    let map = ["#####", "#*TT#", "#####"];
    let s = scenario(&map, 1, "regrow_prob: 1.0");
    let mut b = EnvBatch::new(&s, 1, 1).unwrap();
    b.edit_arena(0, |_, a| a.pos[0] = GridPos { x: 2, y: 1 })
        .unwrap();
    act(&mut b, &[NOOP]);
    let items = b.snapshot(0).items;
    assert_eq!(
        (items[5 + 2], items[5 + 3]),
        (0, 1),
        "the occupied token cell does not regrow"
    );
}

#[test]
fn avatars_and_walls_block_moves() {
    let mut b = line(&[(1, [0; 3]), (2, [0; 3]), (8, [0; 3])], "");
    act(&mut b, &[FORWARD, NOOP, FORWARD]);
    let f = b.snapshot(0);
    assert_eq!(f.positions, vec![(1, 1), (2, 1), (8, 1)]);
}

#[test]
fn a_contested_cell_goes_to_exactly_one_avatar() {
    let s = scenario(&["#####", "#***#", "#####"], 2, "");
    let mut winners = [0; 2];
    for seed in 0..40 {
        let mut b = EnvBatch::new(&s, 1, seed).unwrap();
        b.edit_arena(0, |_, a| {
            a.pos[0] = GridPos { x: 1, y: 1 };
            a.pos[1] = GridPos { x: 3, y: 1 };
            a.facing[0] = Facing(1);
            a.facing[1] = Facing(3);
        })
        .unwrap();
        act(&mut b, &[FORWARD, FORWARD]);
        let p = b.snapshot(0).positions;
        let on_middle: Vec<usize> = (0..2).filter(|&s| p[s] == (2, 1)).collect();
        assert_eq!(on_middle.len(), 1, "seed {seed}: {p:?}");
        winners[on_middle[0]] += 1;
    }
    assert!(
        winners[0] > 5 && winners[1] > 5,
        "ties are broken at random: {winners:?}"
    );
}

#[test]
fn past_min_steps_the_episode_ends_at_random_interval_boundaries() {
    let mut b = line(&[(1, [0; 3])], "min_steps: 4, end_every: 2, end_prob: 1.0");
    for t in 1..=4 {
        act(&mut b, &[NOOP]);
        assert_eq!(b.buffers().terminated[0], u8::from(t == 4), "step {t}");
    }
}

#[test]
fn the_window_shows_walls_tokens_and_the_other_avatars_relative_facing() {
    let map = ["#####", "#*T*#", "#***#", "#####"];
    let s = scenario(&map, 2, "regrow_prob: 0.0");
    let mut b = EnvBatch::new(&s, 1, 1).unwrap();
    b.edit_arena(0, |l, a| {
        a.pos[0] = GridPos { x: 2, y: 2 }; // facing north: the token is one ahead
        a.facing[0] = Facing(0);
        a.pos[1] = GridPos { x: 3, y: 2 }; // to its right, facing west (towards it)
        a.facing[1] = Facing(3);
        a.cells[l.cell_index(2, 1) + ITEM] = 1;
        a.carry[0] = Carry([1, 2, 3]);
    })
    .unwrap();
    let obs = &b.buffers().obs[..b.layout().obs_len];
    // Window 3 wide x 3 deep, rows from 2 ahead to the agent's row, 7 bytes per cell.
    let cell = |r: usize, c: usize| &obs[(r * 3 + c) * 7..(r * 3 + c) * 7 + 7];
    assert_eq!(cell(0, 1), [1, 0, 0, 0, 0, 0, 0], "two ahead is the wall");
    assert_eq!(cell(1, 1), [0, 1, 0, 0, 0, 0, 0], "the token one ahead");
    // Facing west seen by a north-facing observer is (3 - 0) % 4 = 3: "left".
    assert_eq!(
        cell(2, 2),
        [0, 0, 1, 0, 0, 0, 1],
        "the other avatar on the right"
    );
    assert_eq!(
        cell(2, 1)[2],
        0,
        "the observer itself is not an other avatar"
    );
    assert_eq!(&obs[63..67], &[1, 2, 3, 1], "inventory and ready flag");
}
