//! chemistry's rules on a tiny inline dish, one behaviour per test. Compound `a` and `cat`
//! always fire (probability 1); everything else never initiates.

use gridarena::components::{Carry, GridPos};
use gridarena::engine::EnvBatch;
use gridarena::layout::Layout;
use gridarena::scenario::Scenario;
use gridarena::substrate::avatars::ITEM;

const NOOP: u8 = 0;
const IO: u8 = 7;

fn dish(players: usize) -> EnvBatch {
    let src = format!(
        r#"Scenario(
            name: "chem-test",
            substrate: Chemistry((
                groups: [(name: "always", ground: 1.0, vesicle: 1.0), (name: "never", ground: 0.0, vesicle: 0.0)],
                compounds: [
                    (name: "a", symbol: 'a', group: "always"),
                    (name: "b", symbol: 'b', group: "never"),
                    (name: "c", symbol: 'c', group: "never"),
                    (name: "d", symbol: 'd', group: "never"),
                    (name: "cat", symbol: 'k', group: "always"),
                    (name: "x", symbol: 'x', group: "never"),
                    (name: "y", symbol: 'y', group: "never"),
                ],
                reactions: [
                    (name: "ab", reactants: ["a", "b"], products: ["c", "d"], reward: 5.0),
                    (name: "catalysed", reactants: ["cat", "x"], products: ["cat", "y"]),
                ],
                io_cooldown: 2,
            )),
            map: [".....", ".....", "....."],
            roles: [(kind: player, count: {players})],
            max_steps: 100,
            observation: (window: (left: 1, right: 1, ahead: 1, behind: 0)),
        )"#
    );
    let loaded = Scenario::parse(&src, "<chem test>").unwrap_or_else(|e| panic!("{e}"));
    EnvBatch::new(&loaded, 1, 3).unwrap()
}

/// Compound id (index + 1) by name in the test dish.
fn id(name: &str) -> u8 {
    ["a", "b", "c", "d", "cat", "x", "y"]
        .iter()
        .position(|n| *n == name)
        .unwrap() as u8
        + 1
}

fn put(l: &Layout, cells: &mut [u8], x: i16, y: i16, name: &str) {
    cells[l.cell_index(x, y) + ITEM] = id(name);
}

/// Empties every cell's ground item.
fn clear_ground(cells: &mut [u8]) {
    cells.iter_mut().skip(ITEM).step_by(3).for_each(|c| *c = 0);
}

fn ground(b: &mut EnvBatch, x: usize, y: usize) -> u8 {
    b.snapshot(0).items[y * 5 + x]
}

#[test]
fn a_reaction_makes_its_products_in_place_and_pays_only_participating_vesicles() {
    let mut b = dish(2);
    b.edit_arena(0, |l, a| {
        clear_ground(a.cells);
        put(l, a.cells, 2, 1, "a");
        a.pos[0] = GridPos { x: 3, y: 1 }; // next to the a, carrying b
        a.carry[0] = Carry([id("b"), 0, 0]);
        a.pos[1] = GridPos { x: 0, y: 0 }; // far away, also carrying b
        a.carry[1] = Carry([id("b"), 0, 0]);
    })
    .unwrap();
    b.actions_mut().fill(NOOP);
    b.step().unwrap();
    assert_eq!(
        ground(&mut b, 2, 1),
        id("c"),
        "reactant 0 (a, on the ground) became product 0"
    );
    let f = b.snapshot(0);
    assert_eq!(
        f.carry[0][0],
        id("d"),
        "reactant 1 (b, in the vesicle) became product 1"
    );
    assert_eq!(f.carry[1][0], id("b"), "the far vesicle is untouched");
    assert_eq!(
        f.rewards,
        vec![5.0, 0.0],
        "only the participating vesicle's player is paid"
    );
    assert_eq!(b.counters(0), vec![1, 0]);
}

#[test]
fn a_catalyst_is_kept() {
    let mut b = dish(1);
    b.edit_arena(0, |l, a| {
        clear_ground(a.cells);
        put(l, a.cells, 2, 1, "cat");
        put(l, a.cells, 2, 2, "x");
        a.pos[0] = GridPos { x: 0, y: 0 };
    })
    .unwrap();
    b.actions_mut().fill(NOOP);
    b.step().unwrap();
    assert_eq!(
        (ground(&mut b, 2, 1), ground(&mut b, 2, 2)),
        (id("cat"), id("y"))
    );
    assert_eq!(b.counters(0), vec![0, 1]);
}

#[test]
fn no_cell_takes_part_in_two_reactions_in_one_step() {
    let mut b = dish(1);
    b.edit_arena(0, |l, a| {
        clear_ground(a.cells);
        put(l, a.cells, 1, 1, "a");
        put(l, a.cells, 2, 1, "b"); // the only b, next to both a's
        put(l, a.cells, 3, 1, "a");
        a.pos[0] = GridPos { x: 0, y: 0 };
    })
    .unwrap();
    b.actions_mut().fill(NOOP);
    b.step().unwrap();
    assert_eq!(b.counters(0)[0], 1, "one reaction used the b");
    assert_eq!(
        (
            ground(&mut b, 1, 1),
            ground(&mut b, 2, 1),
            ground(&mut b, 3, 1)
        ),
        (id("c"), id("d"), id("a")),
        "the second a found no free b"
    );
}

#[test]
fn io_swaps_vesicle_and_ground_with_a_cooldown() {
    let mut b = dish(1);
    b.edit_arena(0, |l, a| {
        clear_ground(a.cells);
        put(l, a.cells, 2, 1, "x");
        a.pos[0] = GridPos { x: 2, y: 1 };
        a.carry[0] = Carry([0, 0, 0]);
    })
    .unwrap();
    let mut vesicle = Vec::new();
    for _ in 0..4 {
        b.actions_mut().fill(IO);
        b.step().unwrap();
        vesicle.push(b.snapshot(0).carry[0][0]);
    }
    // Swap at step 0, two dead steps, swap back at step 3.
    assert_eq!(vesicle, vec![id("x"), id("x"), id("x"), 0]);
    assert_eq!(ground(&mut b, 2, 1), id("x"));
}
