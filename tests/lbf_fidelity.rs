//! Level-Based Foraging against lbforaging 2.0.0 itself (tests/data/lbf/, written by
//! python/scripts/lbforaging_sample.py).
//!
//! Trajectories: each recorded episode's reset state is put into an arena by hand, the recorded
//! actions are replayed through the rules, and every step's agent positions, food, rewards,
//! done flag, valid-action masks and observations must equal lbforaging's exactly. lbforaging's
//! step draws no randomness (its loading order is a set's, which does not matter because no
//! cell touches two foods), so replay is exact.
//!
//! Resets: lbforaging's reset is random, so its distribution is compared: gridarena's resets
//! (one per arena, independent streams) against lbforaging's recorded ones, by chi-square tests
//! of homogeneity at level 0.001 on agent levels, food count, food levels and the row and
//! column marginals of agents and food, plus exact invariants (food off the border, never
//! within one cell or two in line of another food, levels in range).

use gridarena::components::{Alive, AppliedAction};
use gridarena::components::{GridPos, StepReward};
use gridarena::layout::Layout;
use gridarena::substrate::lbf::{CellLayout, rules};
use gridarena::substrate::{ArenaState, Rules, transition};
use gridarena::{EnvBatch, Scenario};
use serde_json::Value;

const TRAJECTORIES: &str = include_str!("data/lbf/trajectories.json");
const RESETS: &str = include_str!("data/lbf/resets.json");

/// A scenario with lbforaging's keyword arguments.
fn scenario(kw: &Value) -> String {
    let size = kw["field_size"][0].as_u64().unwrap() as usize;
    let opt = |v: &Value| {
        v.as_u64()
            .map_or("None".to_string(), |n| format!("Some({n})"))
    };
    let sight = kw["sight"].as_u64().unwrap();
    let sight = if sight as usize == size {
        "None".to_string()
    } else {
        format!("Some({sight})")
    };
    let map: Vec<String> = (0..size)
        .map(|_| format!("\"{}\"", ".".repeat(size)))
        .collect();
    format!(
        "Scenario(name: \"lbf\", substrate: LevelBasedForaging((max_num_food: {}, \
         min_player_level: {}, max_player_level: {}, min_food_level: {}, max_food_level: {}, \
         sight: {sight}, force_coop: {}, penalty: {:?})), map: [{}], \
         roles: [(kind: player, count: {})], max_steps: {})",
        kw["max_num_food"],
        kw["min_player_level"],
        kw["max_player_level"],
        kw["min_food_level"],
        opt(&kw["max_food_level"]),
        kw["force_coop"],
        kw["penalty"].as_f64().unwrap() as f32,
        map.join(", "),
        kw["players"],
        kw["max_episode_steps"],
    )
}

fn layout_for(kw: &Value) -> Layout {
    let loaded = Scenario::parse(&scenario(kw), "lbf.ron").unwrap();
    EnvBatch::new(&loaded, 1, 0).unwrap().layout().clone()
}

fn cell_layout(layout: &Layout) -> CellLayout {
    match &layout.rules {
        Rules::Lbf(l) => l.cells,
        _ => unreachable!("an LBF scenario"),
    }
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

/// (row, column) pairs.
fn cells_of(v: &Value) -> Vec<(i16, i16)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let p = ints(p);
            (p[0] as i16, p[1] as i16)
        })
        .collect()
}

/// Present foods as (row, column, level), in (row, column) order.
fn foods(cl: CellLayout, cells: &[u8]) -> Vec<[i64; 3]> {
    let mut out: Vec<[i64; 3]> = (0..cl.foods)
        .filter_map(|k| cl.food_at(cells, k))
        .map(|(r, c, l)| [r as i64, c as i64, l as i64])
        .collect();
    out.sort();
    out
}

/// The valid-action masks as lbforaging's bit sets.
fn mask_bits(layout: &Layout, cl: CellLayout, s: &ArenaState) -> Vec<i64> {
    let mut mask = vec![0u8; layout.learners * rules::ACTIONS];
    rules::write_action_mask(layout, cl, &s.pos, &s.cells, &mut mask);
    mask.chunks(rules::ACTIONS)
        .map(|m| m.iter().enumerate().map(|(k, &v)| (v as i64) << k).sum())
        .collect()
}

/// lbforaging's float observation from ours: coordinates are shifted by one, so (0, 0, 0) is
/// its (-1, -1, 0).
fn obs_as_lbforaging(obs: &[u8]) -> Vec<i64> {
    obs.chunks(3)
        .flat_map(|e| [e[0] as i64 - 1, e[1] as i64 - 1, e[2] as i64])
        .collect()
}

fn check_obs(layout: &Layout, s: &mut ArenaState, want: &Value, at: &str) {
    let o = layout.obs_len;
    let obs = s.observe(layout).to_vec();
    for (slot, w) in want.as_array().unwrap().iter().enumerate() {
        assert_eq!(
            obs_as_lbforaging(&obs[slot * o..(slot + 1) * o]),
            ints(w),
            "{at}: agent {slot}'s observation"
        );
    }
}

#[test]
fn every_recorded_lbforaging_step_replays_exactly() {
    let data: Value = serde_json::from_str(TRAJECTORIES).unwrap();
    let mut steps = 0;
    let (mut loads, mut penalties) = (0, 0);
    for config in data["configs"].as_array().unwrap() {
        let name = config["name"].as_str().unwrap();
        let kw = &config["kwargs"];
        let layout = layout_for(kw);
        let cl = cell_layout(&layout);
        let max_steps = kw["max_episode_steps"].as_u64().unwrap() as usize;
        for (e, ep) in config["episodes"].as_array().unwrap().iter().enumerate() {
            let pos: Vec<GridPos> = cells_of(&ep["pos"])
                .iter()
                .map(|&(r, c)| GridPos { x: c, y: r })
                .collect();
            let mut s = ArenaState::new(&layout, pos, vec![Alive(true); layout.agents]);
            for (slot, l) in ints(&ep["levels"]).iter().enumerate() {
                s.cells[CellLayout::LEVELS + slot] = *l as u8;
            }
            for (k, f) in ep["food"].as_array().unwrap().iter().enumerate() {
                let f = ints(f);
                let at = cl.food(k);
                s.cells[at..at + 4].copy_from_slice(&[f[0] as u8, f[1] as u8, f[2] as u8, 1]);
            }
            CellLayout::set_food_spawned(&mut s.cells, ep["food_spawned"].as_u64().unwrap() as u16);
            let at = format!("{name} episode {e} reset");
            assert_eq!(mask_bits(&layout, cl, &s), ints(&ep["mask"]), "{at}: masks");
            check_obs(&layout, &mut s, &ep["obs"], &at);
            for (t, step) in ep["steps"].as_array().unwrap().iter().enumerate() {
                let at = format!("{name} episode {e} step {}", t + 1);
                let applied: Vec<AppliedAction> = ints(&step["a"])
                    .iter()
                    .map(|&a| AppliedAction(a as u8))
                    .collect();
                let outcome = transition(&layout, &mut s, &applied);
                let got: Vec<(i16, i16)> = s.pos.iter().map(|p| (p.y, p.x)).collect();
                assert_eq!(got, cells_of(&step["pos"]), "{at}: positions");
                let want_food: Vec<[i64; 3]> = step["food"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| {
                        let f = ints(f);
                        [f[0], f[1], f[2]]
                    })
                    .collect();
                assert_eq!(foods(cl, &s.cells), want_food, "{at}: food");
                let want_r: Vec<f32> = step["r"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_f64().unwrap() as f32)
                    .collect();
                let got_r: Vec<f32> = s.rewards().iter().map(|r: &StepReward| r.0).collect();
                assert_eq!(got_r, want_r, "{at}: rewards");
                loads += want_r.iter().filter(|&&r| r > 0.0).count();
                penalties += want_r.iter().filter(|&&r| r < 0.0).count();
                // lbforaging's done is ours terminated (no food left) or truncated (max_steps).
                let done = outcome.terminated || t + 1 >= max_steps;
                assert_eq!(done, step["done"].as_bool().unwrap(), "{at}: done");
                assert_eq!(
                    mask_bits(&layout, cl, &s),
                    ints(&step["mask"]),
                    "{at}: masks"
                );
                check_obs(&layout, &mut s, &step["obs"], &at);
                steps += 1;
            }
        }
    }
    // The sample exercises what it is meant to: many steps, loads and failed loads.
    assert!(
        steps > 2000 && loads > 30 && penalties > 100,
        "{steps} steps, {loads} loads, {penalties} penalties"
    );
}

/// The chi-square statistic of a two-sample homogeneity test over categories, and its degrees
/// of freedom (categories seen on either side, minus one).
fn chi_square(a: &[u64], b: &[u64]) -> (f64, usize) {
    let (na, nb) = (a.iter().sum::<u64>() as f64, b.iter().sum::<u64>() as f64);
    let mut stat = 0.0;
    let mut k = 0usize;
    for (&x, &y) in a.iter().zip(b) {
        let total = (x + y) as f64;
        if total == 0.0 {
            continue;
        }
        k += 1;
        let (ea, eb) = (total * na / (na + nb), total * nb / (na + nb));
        stat += (x as f64 - ea).powi(2) / ea + (y as f64 - eb).powi(2) / eb;
    }
    (stat, k.saturating_sub(1))
}

/// The chi-square critical value at level 0.001 (Wilson-Hilferty; z = 3.090).
fn critical(df: usize) -> f64 {
    if df == 0 {
        return 0.0;
    }
    let d = df as f64;
    let h = 2.0 / (9.0 * d);
    d * (1.0 - h + 3.090 * h.sqrt()).powi(3)
}

/// Histograms of one side's resets.
#[derive(Default)]
struct Hist {
    agent_level: Vec<u64>,
    food_count: Vec<u64>,
    food_level: Vec<u64>,
    agent_row: Vec<u64>,
    agent_col: Vec<u64>,
    food_row: Vec<u64>,
    food_col: Vec<u64>,
}

impl Hist {
    fn new(size: usize, foods: usize) -> Hist {
        let z = |n| vec![0u64; n];
        Hist {
            agent_level: z(256),
            food_count: z(foods + 1),
            food_level: z(256),
            agent_row: z(size),
            agent_col: z(size),
            food_row: z(size),
            food_col: z(size),
        }
    }

    /// One reset: agents' (row, column, level) and foods' (row, column, level).
    fn add(&mut self, agents: &[[i64; 3]], foods: &[[i64; 3]], size: i64, kw: &Value) {
        for a in agents {
            self.agent_level[a[2] as usize] += 1;
            self.agent_row[a[0] as usize] += 1;
            self.agent_col[a[1] as usize] += 1;
        }
        self.food_count[foods.len()] += 1;
        let mut levels: Vec<i64> = agents.iter().map(|a| a[2]).collect();
        levels.sort();
        let top: i64 = levels.iter().take(3).sum();
        for (i, f) in foods.iter().enumerate() {
            self.food_level[f[2] as usize] += 1;
            self.food_row[f[0] as usize] += 1;
            self.food_col[f[1] as usize] += 1;
            // Invariants: off the border, apart from other food, level in range.
            assert!(
                f[0] >= 1 && f[0] <= size - 2 && f[1] >= 1 && f[1] <= size - 2,
                "{f:?} on the border"
            );
            for g in &foods[..i] {
                let (dr, dc) = ((f[0] - g[0]).abs(), (f[1] - g[1]).abs());
                let too_close =
                    (dr <= 1 && dc <= 1) || (dr == 0 && dc <= 2) || (dc == 0 && dr <= 2);
                assert!(!too_close, "{f:?} next to {g:?}");
            }
            let lo = if kw["force_coop"].as_bool().unwrap() {
                top
            } else {
                kw["min_food_level"].as_i64().unwrap()
            };
            assert!(
                f[2] >= lo && f[2] <= top,
                "food level {} outside {lo}..={top}",
                f[2]
            );
            assert!(
                agents.iter().all(|a| (a[0], a[1]) != (f[0], f[1])),
                "food under an agent"
            );
        }
    }
}

#[test]
fn resets_are_distributed_as_lbforaging_resets() {
    let data: Value = serde_json::from_str(RESETS).unwrap();
    for config in data["configs"].as_array().unwrap() {
        let name = config["name"].as_str().unwrap();
        let kw = &config["kwargs"];
        let size = kw["field_size"][0].as_u64().unwrap() as usize;
        let foods_max = kw["max_num_food"].as_u64().unwrap() as usize;
        let resets = config["resets"].as_array().unwrap();
        let mut theirs = Hist::new(size, foods_max);
        for r in resets {
            let levels = ints(&r["levels"]);
            let agents: Vec<[i64; 3]> = cells_of(&r["pos"])
                .iter()
                .zip(&levels)
                .map(|(&(y, x), &l)| [y as i64, x as i64, l])
                .collect();
            let foods: Vec<[i64; 3]> = r["food"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    let f = ints(f);
                    [f[0], f[1], f[2]]
                })
                .collect();
            theirs.add(&agents, &foods, size as i64, kw);
        }
        let loaded = Scenario::parse(&scenario(kw), "lbf.ron").unwrap();
        let n = resets.len();
        let mut b = EnvBatch::new(&loaded, n, 7).unwrap();
        let cl = cell_layout(b.layout());
        let mut ours = Hist::new(size, foods_max);
        for arena in 0..n {
            let (pos, cells) = b.with_arena(arena, |_, a| (a.pos.to_vec(), a.cells.to_vec()));
            let agents: Vec<[i64; 3]> = pos
                .iter()
                .enumerate()
                .map(|(s, p)| [p.y as i64, p.x as i64, cl.level(&cells, s) as i64])
                .collect();
            let f = foods(cl, &cells);
            let spawned: i64 = f.iter().map(|f| f[2]).sum();
            assert_eq!(
                CellLayout::food_spawned(&cells) as i64,
                spawned,
                "food_spawned is the food levels' sum"
            );
            ours.add(&agents, &f, size as i64, kw);
        }
        let tests: [(&str, &Vec<u64>, &Vec<u64>); 7] = [
            ("agent level", &ours.agent_level, &theirs.agent_level),
            ("food count", &ours.food_count, &theirs.food_count),
            ("food level", &ours.food_level, &theirs.food_level),
            ("agent row", &ours.agent_row, &theirs.agent_row),
            ("agent column", &ours.agent_col, &theirs.agent_col),
            ("food row", &ours.food_row, &theirs.food_row),
            ("food column", &ours.food_col, &theirs.food_col),
        ];
        for (what, a, b) in tests {
            // A category common on one side and absent on the other is a difference in kind.
            for (k, (&x, &y)) in a.iter().zip(b.iter()).enumerate() {
                assert!(
                    x + y < 20 || (x > 0 && y > 0),
                    "{name} {what}: category {k} seen {x} times here, {y} in lbforaging"
                );
            }
            let (stat, df) = chi_square(a, b);
            let seen = a
                .iter()
                .zip(b.iter())
                .rposition(|(&x, &y)| x + y > 0)
                .map_or(0, |k| k + 1);
            assert!(
                stat <= critical(df),
                "{name} {what}: chi-square {stat:.1} > {:.1} (df {df}); ours {:?}, lbforaging {:?}",
                critical(df),
                &a[..seen],
                &b[..seen],
            );
        }
    }
}

/// lbforaging's registration rule for `Foraging[-2s]-{s}x{s}-{p}p-{f}f[-coop]-v3`: levels 1-2,
/// food levels from 1 with no cap, sight 2 or the whole field, 50 steps, no penalty.
fn registered_kwargs(size: u64, players: u64, foods: u64, coop: bool, sight2: bool) -> Value {
    serde_json::json!({
        "players": players, "min_player_level": 1, "max_player_level": 2,
        "field_size": [size, size], "min_food_level": 1, "max_food_level": null,
        "max_num_food": foods, "sight": if sight2 { 2 } else { size },
        "max_episode_steps": 50, "force_coop": coop, "grid_observation": false, "penalty": 0.0,
    })
}

/// Every shipped `lbf_*.ron` is the lbforaging configuration it is named after: the rule above
/// reproduces the keyword arguments recorded from lbforaging's registry, and each asset loads
/// to the same rules, map, agents and episode length as a scenario built from them.
#[test]
fn the_shipped_scenarios_are_lbforagings_registered_configurations() {
    let doc: Value = serde_json::from_str(TRAJECTORIES).unwrap();
    let parse = |name: &str| -> (u64, u64, u64, bool, bool) {
        let parts: Vec<&str> = name.split('_').collect();
        let size = parts[0].split('x').next().unwrap().parse().unwrap();
        let count = |p: &str, suffix: char| p.trim_end_matches(suffix).parse::<u64>().unwrap();
        (
            size,
            count(parts[1], 'p'),
            count(parts[2], 'f'),
            parts.contains(&"coop"),
            parts.contains(&"2s"),
        )
    };
    let mut recorded = 0;
    for c in doc["configs"].as_array().unwrap() {
        if c["env_id"].is_null() {
            continue;
        }
        let (s, p, f, coop, two) = parse(c["name"].as_str().unwrap());
        assert_eq!(
            registered_kwargs(s, p, f, coop, two),
            c["kwargs"],
            "{}",
            c["name"]
        );
        recorded += 1;
    }
    assert!(
        recorded >= 4,
        "{recorded} registered configurations recorded"
    );
    let mut shipped = 0;
    for entry in std::fs::read_dir("assets/scenarios").unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_stem().unwrap().to_str().unwrap().to_string();
        let Some(name) = file.strip_prefix("lbf_") else {
            continue;
        };
        let (s, p, f, coop, two) = parse(name);
        let kw = registered_kwargs(s, p, f, coop, two);
        let want = Scenario::parse(&scenario(&kw), "lbf.ron").unwrap().scenario;
        let got = Scenario::load(&path).unwrap().scenario;
        assert_eq!(got.substrate, want.substrate, "{file}");
        assert_eq!(got.map, want.map, "{file}");
        assert_eq!(got.roles, want.roles, "{file}");
        assert_eq!(got.max_steps, want.max_steps, "{file}");
        shipped += 1;
    }
    assert_eq!(shipped, 8, "shipped LBF scenarios");
}
