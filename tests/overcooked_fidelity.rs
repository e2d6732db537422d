//! Overcooked against JaxMARL's own `overcooked`: every trajectory of the committed samples
//! (tests/data/overcooked/*.json, written by python/scripts/jaxmarl_overcooked_sample.py:
//! random and scripted players on the five classic layouts) is replayed from its start state,
//! and every step's positions, facings, held items, kitchen objects, pot states, sparse and
//! shaped rewards, done flags and (every few steps) both observations must be identical. The
//! reset distribution is compared with JaxMARL's 2000 resets by a chi-square test.

use gridarena::components::{Carry, Facing, GridPos};
use gridarena::engine::EnvBatch;
use gridarena::scenario::Scenario;
use serde_json::Value;

const LAYOUTS: [&str; 5] = [
    "cramped_room",
    "asymm_advantages",
    "coord_ring",
    "forced_coord",
    "counter_circuit",
];
const CODE: &str = "0123456789A";

/// The engine's facing for a JaxMARL direction index (0 north, 1 south, 2 east, 3 west).
fn facing(jax: u64) -> u8 {
    [0, 2, 1, 3][jax as usize]
}

/// A held item: JaxMARL's code, 1 (empty) as 0.
fn carry(jax: u64) -> u8 {
    if jax == 1 { 0 } else { jax as u8 }
}

fn sample(name: &str) -> Value {
    let path = format!("tests/data/overcooked/{name}.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn batch(name: &str, shaping: f32) -> EnvBatch {
    let path = format!("assets/scenarios/overcooked_{name}.ron");
    let loaded = Scenario::load(std::path::Path::new(&path)).unwrap();
    let mut b = EnvBatch::new(&loaded, 1, 0).unwrap();
    b.set_reward_shaping(shaping);
    b
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

/// One arena's state in the sample's encoding: positions, JaxMARL directions, held items
/// (JaxMARL codes), the kitchen string (agents as 'A') and pot statuses in row-major order.
#[derive(Debug, PartialEq)]
struct Seen {
    pos: [(i16, i16); 2],
    dir: [u8; 2],
    inv: [u8; 2],
    objects: String,
    pots: Vec<u8>,
}

fn seen(b: &mut EnvBatch) -> Seen {
    b.with_arena(0, |l, a| {
        let n = l.width * l.height;
        let mut objects: Vec<char> = a.cells[..n]
            .iter()
            .map(|&o| CODE.as_bytes()[o as usize] as char)
            .collect();
        for p in a.pos.iter() {
            objects[p.y as usize * l.width + p.x as usize] = 'A';
        }
        let pots = (0..n)
            .filter(|&c| a.cells[c] == 8)
            .map(|c| a.cells[n + c])
            .collect();
        let jax = |f: Facing| [0, 2, 1, 3][f.0 as usize];
        let inv = |c: Carry| if c.0[0] == 0 { 1 } else { c.0[0] };
        Seen {
            pos: [(a.pos[0].x, a.pos[0].y), (a.pos[1].x, a.pos[1].y)],
            dir: [jax(a.facing[0]), jax(a.facing[1])],
            inv: [inv(a.carry[0]), inv(a.carry[1])],
            objects: objects.into_iter().collect(),
            pots,
        }
    })
}

fn expected(
    pos: [(i16, i16); 2],
    dir: [u64; 2],
    inv: [u64; 2],
    objects: &str,
    pots: &Value,
) -> Seen {
    Seen {
        pos,
        dir: [dir[0] as u8, dir[1] as u8],
        inv: [inv[0] as u8, inv[1] as u8],
        objects: objects.to_string(),
        pots: pots
            .as_array()
            .unwrap()
            .iter()
            .map(|v| u(v) as u8)
            .collect(),
    }
}

/// Puts the arena into the sample's start state.
fn load_start(b: &mut EnvBatch, start: &Value) {
    let pos: Vec<(i16, i16)> = start["pos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (u(&p[0]) as i16, u(&p[1]) as i16))
        .collect();
    let dir: Vec<u64> = start["dir"].as_array().unwrap().iter().map(u).collect();
    let inv: Vec<u64> = start["inv"].as_array().unwrap().iter().map(u).collect();
    let objects: Vec<u8> = start["objects"]
        .as_str()
        .unwrap()
        .chars()
        .map(|c| {
            if c == 'A' {
                1
            } else {
                CODE.find(c).unwrap() as u8
            }
        })
        .collect();
    let pots: Vec<u8> = start["pots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| u(v) as u8)
        .collect();
    b.edit_arena(0, move |l, a| {
        let n = l.width * l.height;
        for s in 0..2 {
            a.pos[s] = GridPos {
                x: pos[s].0,
                y: pos[s].1,
            };
            a.facing[s] = Facing(facing(dir[s]));
            a.carry[s] = Carry([carry(inv[s]), 0, 0]);
        }
        a.cells[..n].copy_from_slice(&objects);
        let pot_cells = objects.iter().enumerate().filter(|(_, o)| **o == 8);
        for ((c, _), status) in pot_cells.zip(&pots) {
            a.cells[n + c] = *status;
        }
        a.clock.t = 0;
    })
    .unwrap();
}

/// Both learners' observations as JaxMARL's sparse `[index, value]` lists.
fn sparse_obs(obs: &[u8]) -> Vec<Vec<(usize, u8)>> {
    obs.chunks_exact(obs.len() / 2)
        .map(|o| {
            o.iter()
                .enumerate()
                .filter(|(_, v)| **v != 0)
                .map(|(i, v)| (i, *v))
                .collect()
        })
        .collect()
}

fn reference_obs(v: &Value) -> Vec<Vec<(usize, u8)>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|agent| {
            agent
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (u(&p[0]) as usize, u(&p[1]) as u8))
                .collect()
        })
        .collect()
}

/// Replays every episode of one layout's sample; returns (steps, deliveries, shaped events,
/// observations compared).
fn replay(name: &str) -> (usize, usize, usize, usize) {
    let data = sample(name);
    let (mut steps, mut deliveries, mut shaped_events, mut observations) = (0, 0, 0, 0);
    for (e, ep) in data["episodes"].as_array().unwrap().iter().enumerate() {
        let kind = ep["kind"].as_str().unwrap();
        let mut sparse_batch = batch(name, 0.0);
        let mut full_batch = batch(name, 1.0);
        load_start(&mut sparse_batch, &ep["start"]);
        load_start(&mut full_batch, &ep["start"]);
        let obs_at: std::collections::HashMap<u64, &Value> = ep["obs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (u(&o[0]), &o[1]))
            .collect();
        if let Some(o) = obs_at.get(&0) {
            assert_eq!(
                sparse_obs(&full_batch.buffers().obs),
                reference_obs(o),
                "{name} {kind} episode {e}: observation at the start"
            );
            observations += 1;
        }
        let rows = ep["steps"].as_array().unwrap();
        for (t, row) in rows.iter().enumerate() {
            let t = t + 1;
            let r = row.as_array().unwrap();
            let acts = [u(&r[0]) as u8, u(&r[1]) as u8];
            for b in [&mut sparse_batch, &mut full_batch] {
                b.actions_mut().copy_from_slice(&acts);
                b.step().unwrap();
            }
            let at = format!("{name} {kind} episode {e} step {t} (actions {acts:?})");
            let sparse = r[10].as_f64().unwrap() as f32;
            let shaped = [
                r[11].as_f64().unwrap() as f32,
                r[12].as_f64().unwrap() as f32,
            ];
            let done = u(&r[13]) == 1;
            assert_eq!(
                sparse_batch.buffers().rewards,
                vec![sparse; 2],
                "{at}: sparse reward"
            );
            let full = full_batch.buffers().rewards.clone();
            assert_eq!(
                [full[0] - sparse, full[1] - sparse],
                shaped,
                "{at}: shaped rewards"
            );
            assert_eq!(full_batch.buffers().truncated[0] == 1, done, "{at}: done");
            assert_eq!(full_batch.buffers().terminated[0], 0, "{at}: terminated");
            deliveries += usize::from(sparse > 0.0);
            shaped_events += shaped.iter().filter(|&&s| s > 0.0).count();
            steps += 1;
            if done {
                // The arena has respawned: the terminal state is not there to compare.
                continue;
            }
            let want = expected(
                [
                    (u(&r[2]) as i16, u(&r[3]) as i16),
                    (u(&r[4]) as i16, u(&r[5]) as i16),
                ],
                [u(&r[6]), u(&r[7])],
                [u(&r[8]), u(&r[9])],
                r[14].as_str().unwrap(),
                &r[15],
            );
            assert_eq!(seen(&mut full_batch), want, "{at}: state");
            if let Some(o) = obs_at.get(&(t as u64)) {
                assert_eq!(
                    sparse_obs(&full_batch.buffers().obs),
                    reference_obs(o),
                    "{at}: observations"
                );
                observations += 1;
            }
        }
    }
    (steps, deliveries, shaped_events, observations)
}

fn replays_exactly(name: &str) {
    let (steps, deliveries, shaped, observations) = replay(name);
    eprintln!(
        "{name}: {steps} steps, {deliveries} deliveries, {shaped} shaped rewards, \
         {observations} observation pairs identical"
    );
    assert!(steps >= 1600, "{name}: {steps} steps replayed");
    assert!(deliveries >= 1, "{name}: the sample serves no soup");
    assert!(
        shaped >= 5,
        "{name}: the sample pays too few shaped rewards"
    );
    assert!(
        observations >= 40,
        "{name}: {observations} observations compared"
    );
}

#[test]
fn cramped_room_replays_jaxmarl_exactly() {
    replays_exactly("cramped_room");
}

#[test]
fn asymm_advantages_replays_jaxmarl_exactly() {
    replays_exactly("asymm_advantages");
}

#[test]
fn coord_ring_replays_jaxmarl_exactly() {
    replays_exactly("coord_ring");
}

#[test]
fn forced_coord_replays_jaxmarl_exactly() {
    replays_exactly("forced_coord");
}

#[test]
fn counter_circuit_replays_jaxmarl_exactly() {
    replays_exactly("counter_circuit");
}

/// Resets: the same fixed start cells as JaxMARL's 2000 resets, and facings whose joint
/// distribution matches JaxMARL's (two-sample chi-square over the 16 facing pairs, 15 degrees of
/// freedom, refused above 37.7, p = 0.001); empty hands, empty pots, bare counters.
#[test]
fn resets_match_jaxmarls_distribution() {
    for (k, name) in LAYOUTS.into_iter().enumerate() {
        let data = sample(name);
        let resets = &data["resets"];
        let count = u(&resets["count"]) as usize;
        let positions = resets["positions"].as_array().unwrap();
        assert_eq!(positions.len(), 1, "{name}: JaxMARL starts vary");
        let p = &positions[0];
        let want_pos = [
            (u(&p[0]) as i16, u(&p[1]) as i16),
            (u(&p[2]) as i16, u(&p[3]) as i16),
        ];
        let path = format!("assets/scenarios/overcooked_{name}.ron");
        let loaded = Scenario::load(std::path::Path::new(&path)).unwrap();
        let mut b = EnvBatch::new(&loaded, count, 11 + k as u64).unwrap();
        let start = &data["episodes"][0]["start"];
        let mut ours = [[0f64; 4]; 4];
        for arena in 0..count {
            let (pos, dir, inv, cells) = b.with_arena(arena, |l, a| {
                let jax = |f: Facing| [0usize, 2, 1, 3][f.0 as usize];
                (
                    [(a.pos[0].x, a.pos[0].y), (a.pos[1].x, a.pos[1].y)],
                    [jax(a.facing[0]), jax(a.facing[1])],
                    [a.carry[0].0[0], a.carry[1].0[0]],
                    a.cells.to_vec() == l.cells_template,
                )
            });
            assert_eq!(pos, want_pos, "{name}: start cells of arena {arena}");
            assert_eq!(inv, [0, 0], "{name}: hands at the start");
            assert!(cells, "{name}: kitchen at the start");
            ours[dir[0]][dir[1]] += 1.0;
        }
        // The sample's episodes start where resets put the players.
        assert_eq!(u(&start["pos"][0][0]) as i16, want_pos[0].0);
        let theirs = resets["dir_counts"].as_array().unwrap();
        let mut chi2 = 0.0;
        for d0 in 0..4 {
            for d1 in 0..4 {
                let (o, t) = (ours[d0][d1], theirs[d0][d1].as_f64().unwrap());
                if o + t > 0.0 {
                    chi2 += (o - t) * (o - t) / (o + t);
                }
            }
        }
        eprintln!("{name}: facing pairs chi-square {chi2:.1} (15 dof)");
        assert!(
            chi2 < 37.7,
            "{name}: facings differ from JaxMARL's (chi-square {chi2:.1})"
        );
    }
}
