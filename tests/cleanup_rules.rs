//! clean_up's rules with real numbers: pollution appears at its rate after the delay, apple
//! growth follows the polluted fraction and stops above the depletion threshold, and the
//! cleaning beam cleans the first polluted cell on each of its three lanes.

use gridarena::engine::EnvBatch;
use gridarena::scenario::Scenario;

const FIRE_CLEAN: u8 = 8;
const APPLE: u8 = 1;
const DIRT: u8 = 2;

const WALL12: &str = "\"############\"";
const ORCHARD: &str = "\"#AAAAAAAAAA#\"";

/// One idle avatar beside a river of ten cells (`river`) and an orchard of twenty.
fn orchard(river: &str, params: &str) -> String {
    format!(
        "Scenario(
    name: \"orchard\",
    substrate: CleanUp(({params} min_steps: 100000)),
    map: [{WALL12}, \"#{river}#\", \"#*.........#\", {ORCHARD}, {ORCHARD}, {WALL12}],
    roles: [(kind: player, count: 1)],
    max_steps: 100000,
)"
    )
}

fn batch(text: &str, arenas: usize) -> EnvBatch {
    let loaded = Scenario::parse(text, "test.ron").unwrap();
    EnvBatch::new(&loaded, arenas, 5).unwrap()
}

fn count(b: &mut EnvBatch, arenas: usize, item: u8) -> Vec<usize> {
    (0..arenas)
        .map(|a| b.snapshot(a).items.iter().filter(|&&i| i == item).count())
        .collect()
}

fn idle(b: &mut EnvBatch, steps: usize) {
    for _ in 0..steps {
        b.actions_mut().fill(0);
        b.step().unwrap();
    }
}

#[test]
fn pollution_appears_at_half_a_cell_per_step_after_fifty_steps() {
    let arenas = 400;
    let mut b = batch(&orchard("HHHHHHHHHH", "max_growth_rate: 0.0,"), arenas);
    idle(&mut b, 50);
    assert_eq!(
        count(&mut b, arenas, DIRT),
        vec![0; arenas],
        "none in the first 50"
    );
    idle(&mut b, 8);
    // 8 draws of 0.5 per arena: mean 4, sd of the mean over 400 arenas 0.07.
    let dirt = count(&mut b, arenas, DIRT);
    let m = dirt.iter().sum::<usize>() as f64 / arenas as f64;
    assert!((m - 4.0).abs() < 0.3, "mean polluted cells {m}");
    assert!(dirt.iter().all(|&d| d <= 8));
}

/// Fraction of the empty apple cells that grew an apple in one step.
fn grown_in_one_step(river: &str, arenas: usize) -> f64 {
    let mut b = batch(&orchard(river, "dirt_spawn_prob: 0.0,"), arenas);
    idle(&mut b, 1);
    let apples: usize = count(&mut b, arenas, APPLE).iter().sum();
    apples as f64 / (20 * arenas) as f64
}

#[test]
fn growth_falls_linearly_with_the_polluted_fraction_and_stops_at_forty_percent() {
    // 20,000 draws each: sd at most 0.0016.
    let clean = grown_in_one_step("HHHHHHHHHH", 1000);
    assert!((clean - 0.05).abs() < 0.006, "clean river: {clean}");
    // 10% polluted: 0.05 * (1 - 0.1 / 0.4).
    let tenth = grown_in_one_step("FHHHHHHHHH", 1000);
    assert!((tenth - 0.0375).abs() < 0.006, "10% polluted: {tenth}");
    // 30% polluted: 0.05 * (1 - 0.3 / 0.4).
    let thirty = grown_in_one_step("FFFHHHHHHH", 1000);
    assert!((thirty - 0.0125).abs() < 0.004, "30% polluted: {thirty}");
    assert_eq!(grown_in_one_step("FFFFHHHHHH", 1000), 0.0, "40% polluted");
    assert_eq!(grown_in_one_step("FFFFFFHHHH", 1000), 0.0, "60% polluted");
}

#[test]
fn the_cleaning_beam_cleans_the_first_polluted_cell_of_each_ray() {
    let text = "Scenario(
    name: \"pond\",
    substrate: CleanUp((dirt_spawn_delay: 100000, min_steps: 100000)),
    map: [
        \"#######\", \"#FFFFF#\", \"#FFFFF#\", \"#FF*FF#\", \"#FFFFF#\", \"#FFFFF#\", \"#######\",
    ],
    roles: [(kind: player, count: 1)],
    max_steps: 1000,
)";
    let arenas = 8;
    let mut b = batch(text, arenas);
    b.set_global_state(true);
    b.actions_mut().fill(FIRE_CLEAN);
    b.step().unwrap();
    let state = b.global_state().unwrap().to_vec();
    let per_arena = 7 * 7 * 4;
    for a in 0..arenas {
        let f = b.snapshot(a);
        assert_eq!(f.positions[0], (3, 3));
        assert_eq!(b.counters(a)[4], 3, "cells_cleaned");
        // North, east, south, west: (dx, dy) ahead and to the right.
        let dirs = [(0i32, -1i32), (1, 0), (0, 1), (-1, 0)];
        let (ax, ay) = dirs[f.facing[0] as usize];
        let (rx, ry) = dirs[(f.facing[0] as usize + 1) % 4];
        let cell = |ahead: i32, right: i32| {
            let (x, y) = (3 + ahead * ax + right * rx, 3 + ahead * ay + right * ry);
            (y * 7 + x) as usize
        };
        // Each lane cleans its first polluted cell: beside, and one ahead in the centre.
        let cleaned = [cell(0, -1), cell(0, 1), cell(1, 0)];
        for y in 1..6 {
            for x in 1..6 {
                let k = y * 7 + x;
                let dirty = f.items[k] == DIRT;
                let expect = k != cell(0, 0) && !cleaned.contains(&k);
                assert_eq!(
                    dirty, expect,
                    "arena {a} facing {} cell ({x}, {y})",
                    f.facing[0]
                );
                // The global state's pollution layer agrees.
                assert_eq!(state[a * per_arena + 4 * k + 3] != 0, dirty);
            }
        }
    }
    // Cooldown 2: the next shot fires on the third step after and cleans one cell further
    // along each lane (3 then 2: the centre lane's third cell is the pond's wall; Melting
    // Pot's beam in a wider pond, measured: 3, 3, 3, then none); the cells behind never.
    let mut shots = Vec::new();
    for _ in 0..12 {
        let before = b.counters(0)[4];
        b.actions_mut().fill(FIRE_CLEAN);
        b.step().unwrap();
        shots.push(b.counters(0)[4] - before);
    }
    assert_eq!(shots, [0, 0, 3, 0, 0, 2, 0, 0, 0, 0, 0, 0]);
}
