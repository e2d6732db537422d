//! commons_harvest's rules with real numbers: the regrowth probability follows the number of
//! standing apples within the radius, eating pays 1, a zap removes the avatar hit for
//! `respawn_frames` steps.

use gridarena::engine::EnvBatch;
use gridarena::scenario::Scenario;
use gridarena::substrate::harvest::disc;

const FORWARD: u8 = 1;
const BACKWARD: u8 = 2;
const STEP_LEFT: u8 = 3;
const STEP_RIGHT: u8 = 4;
const TURN_RIGHT: u8 = 6;
const FIRE_ZAP: u8 = 7;

/// One avatar above a column of two apples: moving south eats the first, whose only standing
/// neighbour is then the second.
fn column(probabilities: &str) -> String {
    format!(
        r#####"Scenario(
    name: "column",
    substrate: CommonsHarvest((regrowth_probabilities: {probabilities}, min_steps: 100000)),
    map: ["###", "#*#", "#A#", "#A#", "###"],
    roles: [(kind: player, count: 1)],
    max_steps: 1000,
)"#####
    )
}

/// The action that steps south for an avatar facing `f` (0 north, 1 east, 2 south, 3 west).
fn south(f: u8) -> u8 {
    [BACKWARD, STEP_RIGHT, FORWARD, STEP_LEFT][f as usize]
}

/// Fraction of `arenas` arenas whose eaten apple stood again one step after it was eaten.
fn regrown_after_one_step(probabilities: &str, arenas: usize) -> f64 {
    let loaded = Scenario::parse(&column(probabilities), "column.ron").unwrap();
    let mut b = EnvBatch::new(&loaded, arenas, 3).unwrap();
    let facings: Vec<u8> = (0..arenas).map(|a| b.snapshot(a).facing[0]).collect();
    for (a, f) in b.actions_mut().iter_mut().zip(&facings) {
        *a = south(*f);
    }
    b.step().unwrap();
    assert_eq!(
        b.buffers().rewards,
        vec![1.0; arenas],
        "every avatar ate the apple"
    );
    b.actions_mut().fill(0);
    b.step().unwrap();
    let width = 3;
    let regrown = (0..arenas)
        .filter(|&a| b.snapshot(a).items[2 * width + 1] != 0)
        .count();
    regrown as f64 / arenas as f64
}

#[test]
fn the_radius_two_disc_holds_twelve_cells() {
    assert_eq!(disc(2.0).len(), 12);
    assert_eq!(disc(1.0).len(), 4);
    assert_eq!(disc(1.5).len(), 8);
}

#[test]
fn regrowth_uses_the_probability_of_the_standing_neighbour_count() {
    // One standing neighbour: the second entry applies (0.5), 2000 arenas: sd 0.011.
    let p = regrown_after_one_step("(0.0, 0.5, 0.0, 0.0)", 2000);
    assert!((p - 0.5).abs() < 0.05, "{p}");
    // The other entries never apply with one neighbour.
    let p = regrown_after_one_step("(1.0, 0.0, 1.0, 1.0)", 500);
    assert_eq!(p, 0.0);
}

#[test]
fn a_zap_removes_the_avatar_hit_for_the_respawn_frames() {
    let text = r#####"Scenario(
    name: "duel",
    substrate: CommonsHarvest((respawn_frames: 4, min_steps: 100000)),
    map: ["####", "#**#", "####"],
    roles: [(kind: player, count: 2)],
    max_steps: 1000,
)"#####;
    let loaded = Scenario::parse(text, "duel.ron").unwrap();
    let mut b = EnvBatch::new(&loaded, 1, 9).unwrap();
    // Turn the western avatar to face east (the other one waits).
    for _ in 0..4 {
        let f = b.snapshot(0);
        let west = if f.positions[0].0 < f.positions[1].0 {
            0
        } else {
            1
        };
        if f.facing[west] == 1 {
            break;
        }
        let acts = b.actions_mut();
        acts.fill(0);
        acts[west] = TURN_RIGHT;
        b.step().unwrap();
    }
    let f = b.snapshot(0);
    let west = if f.positions[0].0 < f.positions[1].0 {
        0
    } else {
        1
    };
    assert_eq!(f.facing[west], 1);
    let fired_before = b.counters(0)[1];
    b.actions_mut().fill(0);
    b.actions_mut()[west] = FIRE_ZAP;
    b.step().unwrap();
    let east = 1 - west;
    assert!(!b.snapshot(0).alive[east], "the avatar hit left the arena");
    assert_eq!(b.counters(0)[1], fired_before + 1, "zaps fired");
    assert_eq!(b.counters(0)[2], 1, "zaps landed");
    // Out for 3 more steps, back on the 4th.
    for k in 1..=4 {
        b.actions_mut().fill(0);
        b.step().unwrap();
        assert_eq!(b.snapshot(0).alive[east], k == 4, "step {k} after the zap");
    }
}

#[test]
fn the_global_state_is_the_whole_map_with_apples_and_avatars_at_their_cells() {
    let loaded = Scenario::load("assets/scenarios/commons_harvest_open.ron".as_ref()).unwrap();
    let layout = loaded.scenario.global_state_layout();
    assert_eq!(layout.len(), 1);
    let shape: Vec<(&str, usize)> = layout[0].shape.iter().map(|a| (a.name, a.len)).collect();
    assert_eq!(shape, [("row", 18), ("column", 24), ("byte", 4)]);
    assert_eq!(layout[0].entries[..3], ["wall", "apple", "avatar"]);
    let explained = gridarena::scenario::explain(&loaded).to_string();
    assert!(
        explained.contains("global state per arena: 1728 bytes"),
        "{explained}"
    );

    let map = &loaded.scenario.map;
    let (arenas, width) = (3, 24);
    let mut b = EnvBatch::new(&loaded, arenas, 4).unwrap();
    b.set_global_state(true);
    let mut rng = 17u32;
    for step in 0..=40 {
        if step > 0 {
            for a in b.actions_mut().iter_mut() {
                rng = rng.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *a = ((rng >> 24) % 8) as u8;
            }
            b.step().unwrap();
        }
        let state = b.global_state().unwrap().to_vec();
        for arena in 0..arenas {
            let s = &state[arena * 1728..(arena + 1) * 1728];
            let f = b.snapshot(arena);
            let mut avatars = 0;
            for (y, row) in map.iter().enumerate() {
                for (x, c) in row.chars().enumerate() {
                    let k = y * width + x;
                    let cell = &s[4 * k..4 * k + 4];
                    assert_eq!(cell[0] != 0, c == '#', "wall at ({x}, {y})");
                    let apple = c == 'A' && f.items[k] != 0;
                    assert_eq!(cell[1] != 0, apple, "apple at ({x}, {y}) step {step}");
                    let here = f
                        .positions
                        .iter()
                        .zip(&f.alive)
                        .any(|(&p, &alive)| alive && p == (x as i16, y as i16));
                    assert_eq!(cell[2] != 0, here, "avatar at ({x}, {y}) step {step}");
                    assert_eq!(cell[3], 0, "no pollution in commons_harvest");
                    avatars += usize::from(here);
                }
            }
            let alive = f.alive.iter().filter(|&&a| a).count();
            assert_eq!(avatars, alive);
            if step == 0 {
                assert_eq!(alive, 7);
                let apples = (0..width * 18).filter(|&k| s[4 * k + 1] != 0).count();
                assert_eq!(apples, 64, "every apple stands at the start");
            }
        }
    }
}
