//! `gridarena check --explain` against what the engine runs: for every shipped scenario (and the
//! walk_to_goal example, which ships none) the explanation's observation blocks, actions, slots,
//! map counts and items agree with `Layout::derive`, and random rollouts never write an
//! observation byte above its block's declared maximum.

use std::path::PathBuf;
use std::process::Command;

use gridarena::engine::EnvBatch;
use gridarena::layout::{Layout, Rules};
use gridarena::policy::RandomPolicy;
use gridarena::scenario::{
    Channel, Explanation, Grid, LoadedScenario, Scenario, Tile, Window, explain,
};
use gridarena::substrate::avatars::ITEM;

/// docs/new_substrate.md's walk_to_goal example with a wall and spawn points.
const WALK_TO_GOAL: &str = r#"
Scenario(
    name: "walk_to_goal",
    substrate: WalkToGoal((goal_reward: 1.0, step_reward: -0.1)),
    map: ["*..#", "*#.G"],
    roles: [(kind: player, count: 2)],
    max_steps: 12,
)
"#;

/// Every shipped scenario, by file name, then the inline walk_to_goal one.
fn scenarios() -> Vec<(String, LoadedScenario)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir("assets/scenarios")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 13, "{} shipped scenarios", paths.len());
    let mut out: Vec<(String, LoadedScenario)> = paths
        .iter()
        .map(|p| {
            let loaded = Scenario::load(p).unwrap_or_else(|e| panic!("{e}"));
            (p.display().to_string(), loaded)
        })
        .collect();
    out.push((
        "walk_to_goal".into(),
        Scenario::parse(WALK_TO_GOAL, "walk_to_goal.ron").unwrap(),
    ));
    out
}

/// The observation blocks tile `0..obs_len` in order, and each block's names and maxima fit
/// its innermost axis.
fn check_observation(name: &str, e: &Explanation, layout: &Layout) {
    assert_eq!(e.observation_bytes, layout.obs_len, "{name}");
    let mut next = 0;
    for p in &e.observation {
        assert_eq!(
            p.offset, next,
            "{name}: block {} not contiguous",
            p.field.name
        );
        assert!(!p.field.is_empty(), "{name}: empty block {}", p.field.name);
        let inner = p.field.shape.last().unwrap().len;
        for list in [p.field.entries.len(), p.field.entry_max.len()] {
            assert!(list == 0 || list == inner, "{name}: {}", p.field.name);
        }
        if !p.field.entry_max.is_empty() {
            assert_eq!(
                p.field.max,
                *p.field.entry_max.iter().max().unwrap(),
                "{name}"
            );
        }
        next += p.field.len();
    }
    assert_eq!(
        next, layout.obs_len,
        "{name}: blocks do not cover the observation"
    );
}

/// Roles take the slots the layout gives them, with their kind and control.
fn check_roles(name: &str, e: &Explanation, layout: &Layout) {
    let mut agents = 0;
    let mut learners = 0;
    for (r, role) in e.roles.iter().enumerate() {
        assert_eq!(role.slots.len(), role.count, "{name}");
        for s in role.slots.clone() {
            assert_eq!(layout.slot_role[s] as usize, r, "{name}: slot {s}");
            assert_eq!(layout.slot_kind[s], role.kind, "{name}: slot {s}");
            assert_eq!(layout.slot_control[s], role.control, "{name}: slot {s}");
        }
        agents += role.count;
        if role.control == gridarena::scenario::Control::Learner {
            assert!(role.slots.end <= layout.learners, "{name}");
            learners += role.count;
        }
    }
    assert_eq!(
        (agents, learners),
        (layout.agents, layout.learners),
        "{name}"
    );
}

/// Size, open cells, walls, spawn cells per kind and item cells agree with the layout.
fn check_map(name: &str, e: &Explanation, layout: &Layout, grid: &Grid) {
    let Some(m) = &e.map else {
        assert!(layout.spawn_groups.is_empty(), "{name}");
        assert!(!layout.scenario.substrate.uses_map(), "{name}");
        return;
    };
    let cells = layout.width * layout.height;
    assert_eq!((m.width, m.height), (layout.width, layout.height), "{name}");
    assert_eq!(m.open, layout.open.iter().filter(|o| **o).count(), "{name}");
    assert_eq!(m.walls, cells - m.open, "{name}");
    assert_eq!(
        m.legend.iter().map(|l| l.count).sum::<usize>(),
        cells,
        "{name}"
    );
    assert_eq!(m.spawns.len(), layout.spawn_groups.len(), "{name}");
    for g in &layout.spawn_groups {
        let (_, n) = m.spawns.iter().find(|(k, _)| *k == g.kind).unwrap();
        assert_eq!(*n, g.deck.len(), "{name}: spawn cells of {:?}", g.kind);
        assert!(*n >= g.slots.len(), "{name}");
    }
    let items: usize = m.items.iter().map(|i| i.count).sum();
    let map_cells =
        (0..layout.height as i16).flat_map(|y| (0..layout.width as i16).map(move |x| (x, y)));
    match &layout.rules {
        Rules::Gift(g) => assert_eq!(items, g.token_cells.len(), "{name}"),
        Rules::Chemistry(_) => {
            let filled = map_cells
                .filter(|&(x, y)| layout.cells_template[layout.cell_index(x, y) + ITEM] != 0)
                .count();
            assert_eq!(items, filled, "{name}: compound cells");
        }
        Rules::Goal(g) => {
            assert_eq!(items, 1, "{name}");
            assert_eq!(m.items[0].symbol, 'G', "{name}");
            assert_eq!(
                grid.tile(g.goal.x as i32, g.goal.y as i32),
                Some(Tile::Compound(0))
            );
        }
        Rules::Harvest(h) => {
            assert_eq!(items, h.apple_cells.len() + h.inside_spawns.len(), "{name}")
        }
        Rules::CleanUp(c) => {
            assert_eq!(items, c.apple_cells.len() + c.river_cells.len(), "{name}")
        }
        Rules::Overcooked(o) => {
            let kitchen = grid
                .tiles
                .iter()
                .filter(|t| matches!(t, Tile::Compound(_)))
                .count();
            assert_eq!(items, kitchen, "{name}: kitchen cells");
            let pots = m
                .items
                .iter()
                .find(|i| i.symbol == 'U')
                .map_or(0, |i| i.count);
            assert_eq!(pots, o.pots.len(), "{name}: pots");
        }
        _ => assert_eq!(items, 0, "{name}"),
    }
}

#[test]
fn the_explanation_agrees_with_the_layout_for_every_shipped_scenario() {
    for (name, loaded) in scenarios() {
        let e = explain(&loaded);
        let layout = Layout::derive(&loaded);
        check_observation(&name, &e, &layout);
        assert_eq!(e.actions.len(), layout.actions, "{name}");
        assert_eq!(e.action_set, layout.action_set, "{name}");
        check_roles(&name, &e, &layout);
        check_map(&name, &e, &layout, &loaded.grid);

        // The resolved scenario writes every default out and runs the same.
        let resolved = &e.resolved;
        assert!(resolved.actions.is_some(), "{name}");
        assert!(resolved.roles.iter().all(|r| r.control.is_some()), "{name}");
        let again =
            Scenario::parse(&resolved.to_ron(), &name).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(
            again.scenario.observation_layout(),
            loaded.scenario.observation_layout()
        );
        assert_eq!(
            again.scenario.resolved(),
            *resolved,
            "{name}: resolving twice changes it"
        );
        let text = e.to_string();
        assert!(
            text.contains(&format!("{} bytes (u8)", layout.obs_len)),
            "{name}:\n{text}"
        );
    }
}

#[test]
fn defaults_are_written_out_in_the_resolved_scenario() {
    // Pursuit without channels: all three, in canonical order.
    let pursuit = std::fs::read_to_string("assets/scenarios/pursuit_3.ron")
        .unwrap()
        .replace("channels: [obstacle, pursuers, evaders]", "");
    let loaded = Scenario::parse(&pursuit, "p.ron").unwrap_or_else(|e| panic!("{e}"));
    assert!(
        loaded.scenario.observation.channels.is_empty(),
        "the test's edit did not apply"
    );
    let channels = &explain(&loaded).resolved.observation.channels;
    assert_eq!(
        channels,
        &[Channel::Obstacle, Channel::Pursuers, Channel::Evaders]
    );
    // An avatar substrate without a window: Melting Pot's 11 x 11.
    let gift = std::fs::read_to_string("assets/scenarios/gift_refinements.ron")
        .unwrap()
        .replace(
            "observation: (window: (left: 5, right: 5, ahead: 9, behind: 1)),",
            "",
        );
    let gift = Scenario::parse(&gift, "g.ron").unwrap_or_else(|e| panic!("{e}"));
    assert!(
        gift.scenario.observation.window.is_none(),
        "the test's edit did not apply"
    );
    let e = explain(&gift);
    assert_eq!(e.resolved.observation.window, Some(Window::MELTING_POT));
    assert_eq!(
        e.observation[0].field.shape_string(),
        "[row 11, column 11, byte 7]"
    );
    assert_eq!(e.observation_bytes, 11 * 11 * 7 + 4);
}

#[test]
fn random_rollouts_never_exceed_a_blocks_declared_maximum() {
    for (name, loaded) in scenarios() {
        let e = explain(&loaded);
        let max: Vec<u8> = e
            .observation
            .iter()
            .flat_map(|p| (0..p.field.len()).map(|i| p.field.max_at(i)))
            .collect();
        let arenas = 4;
        let mut batch = EnvBatch::new(&loaded, arenas, 7).unwrap();
        batch.desync_clocks();
        let mut policy = RandomPolicy::new(7, arenas, batch.layout().actions);
        let obs_len = batch.layout().obs_len;
        let mut seen = vec![0u8; obs_len];
        let mut check = |obs: &[u8], step: usize| {
            for (k, &v) in obs.iter().enumerate() {
                let i = k % obs_len;
                let block = e.observation.iter().rev().find(|p| p.offset <= i).unwrap();
                assert!(
                    v <= max[i],
                    "{name}, step {step}: byte {i} (block {}, byte {}) is {v} > {}",
                    block.field.name,
                    i - block.offset,
                    max[i]
                );
                seen[i] = seen[i].max(v);
            }
        };
        check(&batch.buffers().obs, 0);
        for step in 1..=300 {
            policy.act(batch.actions_mut());
            batch.step().unwrap();
            check(&batch.buffers().obs, step);
            check(batch.final_obs(), step);
        }
        // The rollout saw something: some byte of the observation was not 0.
        assert!(seen.iter().any(|&v| v > 0), "{name}: only zeros observed");
    }
}

#[test]
fn check_explain_prints_every_section_and_bad_files_still_fail_located() {
    let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["check", "--explain", "assets/scenarios/pursuit_3.ron"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for section in [
        "ok: pursuit_3 (pursuit)",
        "resolved scenario (every default written out):",
        "scenario pursuit_3, substrate pursuit: n_catch 1",
        "    name: \"pursuit_3\",",
        "    actions: move5,",
        "        (kind: evader, count: 1, control: learner),",
        "roles (slots: learners first",
        "pursuer x2, learner, slots 0-1",
        "evader x1, learner, slot 2",
        "observation per learner (pursuer, evader): 75 bytes (u8)",
        "[row 5, column 5, channel 3]",
        "channel: obstacle 0-1, pursuers 0-2, evaders 0-1",
        "actions (move5, 5):",
        "map: 7x7, 44 open cells, 5 walls",
        "spawn points: pursuer 44, evader 44",
        "item cells: none",
    ] {
        assert!(
            stdout.contains(section),
            "missing {section:?} in:\n{stdout}"
        );
    }

    let bad = "tests/data/bad/duplicate_channel.ron";
    let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["check", "--explain", bad])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with(&format!("error: {bad}:")), "{stderr}");
    assert!(stderr.contains("allowed:"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
