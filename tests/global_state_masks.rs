//! The global state and the action masks: the state's layout agrees with `check --explain` and
//! with the bytes a batch writes, it is kept beside `final_obs` at episode ends, and masked
//! actions are never chosen by the random policy, the greedy policy or a learner exploring.

use std::path::PathBuf;
use std::process::Command;

use gridarena::critic::{Device, choose_device};
use gridarena::engine::EnvBatch;
use gridarena::policy::{Policy, RandomPolicy};
use gridarena::scenario::{Scenario, explain};
use gridarena::train::config::RunConfig;
use gridarena::train::new_learner;

const LEFT: u8 = 0;
const RIGHT: u8 = 1;
const STAY: u8 = 4;

/// A walled room with a pillar: moves into walls are masked.
const ROOM: &str = "
Scenario(
    name: \"room\",
    substrate: WalkToGoal((goal_reward: 1.0, step_reward: -0.01)),
    map: [
        \"#######\",
        \"#*...*#\",
        \"#.#.#.#\",
        \"#*..*G#\",
        \"#######\",
    ],
    roles: [(kind: player, count: 2)],
    max_steps: 40,
)
";

fn shipped() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir("assets/scenarios")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ron"))
        .collect();
    paths.sort();
    paths
}

/// Arena `k`'s row of a `[B, ...]` buffer of `per` bytes a row.
fn row(buf: &[u8], k: usize, per: usize) -> &[u8] {
    &buf[k * per..(k + 1) * per]
}

#[test]
fn every_scenarios_global_state_has_the_explained_layout_and_follows_the_steps() {
    for path in shipped() {
        let loaded = Scenario::load(&path).unwrap();
        let s = &loaded.scenario;
        let e = explain(&loaded);
        let len = s.global_state_len();
        assert!(len > 0, "{}", path.display());
        assert_eq!(e.global_state_bytes, len, "{}", path.display());
        let text = e.to_string();
        let line = format!("global state per arena: {len} bytes");
        assert!(text.contains(&line), "{}: {text}", path.display());

        let (arenas, steps) = (6, 60);
        let mut b = EnvBatch::new(&loaded, arenas, 11).unwrap();
        assert!(b.global_state().is_none(), "off by default");
        b.set_global_state(true);
        let (n, o) = (b.layout().learners, b.layout().obs_len);
        let default_layout = s.global_state_layout()[0].name == "observations";
        let mut random = RandomPolicy::new(5, arenas, b.layout().actions);
        let mut ended = 0;
        for _ in 0..steps {
            let mut actions = vec![0; arenas * n];
            let mask = b.action_mask().map(<[u8]>::to_vec);
            random
                .actions_within(&b.buffers().obs, mask.as_deref(), &mut actions)
                .unwrap();
            b.actions_mut().copy_from_slice(&actions);
            b.step().unwrap();
            let state = b.global_state().unwrap();
            assert_eq!(state.len(), arenas * len, "{}", path.display());
            if !default_layout {
                continue;
            }
            // The default global state is every learner's observation in slot order, in the
            // current state and at the end of an episode.
            for k in 0..arenas {
                assert_eq!(row(state, k, len), row(&b.buffers().obs, k, n * o));
                let bufs = b.buffers();
                if bufs.terminated[k] != 0 || bufs.truncated[k] != 0 {
                    ended += 1;
                    let fin = b.final_state().unwrap();
                    assert_eq!(row(fin, k, len), row(&bufs.final_obs, k, n * o));
                }
            }
        }
        if default_layout && s.max_steps as usize <= steps {
            assert!(ended > 0, "{}: no episode ended", path.display());
        }
    }
}

#[test]
fn check_explain_prints_the_global_state_and_the_mask() {
    let dir = std::env::temp_dir().join(format!("gridarena-central-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("room.ron");
    std::fs::write(&file, ROOM).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["check", "--explain"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // Two players' [x, y, goal x, goal y].
    assert!(text.contains("global state per arena: 8 bytes"), "{text}");
    assert!(text.contains("[learner 2, byte 4]"), "{text}");
    assert!(text.contains("action mask [learner, action]"), "{text}");
    let coin = Command::new(env!("CARGO_BIN_EXE_gridarena"))
        .args(["check", "--explain", "assets/scenarios/coin_game.ron"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&coin.stdout).contains("action mask"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_mask_marks_moves_into_walls_and_follows_the_players() {
    let src = r#"Scenario(
        name: "corridor",
        substrate: WalkToGoal(()),
        map: ["*.G"],
        roles: [(kind: player, count: 1)],
        max_steps: 10,
    )"#;
    let loaded = Scenario::parse(src, "corridor.ron").unwrap();
    let mut b = EnvBatch::new(&loaded, 2, 1).unwrap();
    // left, right, up, down, stay at the corridor's left end.
    assert_eq!(b.action_mask().unwrap(), [0, 1, 0, 0, 1, 0, 1, 0, 0, 1]);
    b.actions_mut().copy_from_slice(&[RIGHT, STAY]);
    b.step().unwrap();
    assert_eq!(b.action_mask().unwrap(), [1, 1, 0, 0, 1, 0, 1, 0, 0, 1]);
    // A masked action is still a legal input to the engine: it does nothing.
    b.actions_mut().copy_from_slice(&[LEFT, LEFT]);
    b.step().unwrap();
    assert_eq!(b.agents(1)[0].0.x, 0);
    // Arena 0 reaches the goal at the corridor's right end: the reset puts it back at the left
    // end, and the mask it ended with (what a bootstrap may choose from) is kept.
    for _ in 0..2 {
        b.actions_mut().copy_from_slice(&[RIGHT, STAY]);
        b.step().unwrap();
    }
    assert_eq!(b.buffers().terminated, [1, 0]);
    assert_eq!(&b.action_mask().unwrap()[..5], [0, 1, 0, 0, 1]);
    assert_eq!(&b.final_action_mask().unwrap()[..5], [1, 0, 0, 0, 1]);
    assert!(
        EnvBatch::new(
            &Scenario::load("assets/scenarios/pursuit.ron".as_ref()).unwrap(),
            1,
            1
        )
        .unwrap()
        .action_mask()
        .is_none()
    );
}

/// Steps where a player chose a move other than `stay` and did not move: a masked move.
fn bumps(frames: &[gridarena::rollout::Frame]) -> usize {
    frames
        .windows(2)
        .filter(|w| w[1].episode == w[0].episode && w[1].t == w[0].t + 1)
        .map(|w| {
            (0..w[0].positions.len())
                .filter(|&s| w[1].actions[s] != STAY && w[1].positions[s] == w[0].positions[s])
                .count()
        })
        .sum()
}

#[test]
fn random_play_within_the_mask_never_bumps_and_without_it_does() {
    let loaded = Scenario::parse(ROOM, "room.ron").unwrap();
    let arenas = 4;
    for masked in [true, false] {
        let mut b = EnvBatch::new(&loaded, arenas, 3).unwrap();
        let mut random = RandomPolicy::new(9, arenas, 5);
        b.start_recording(0);
        for _ in 0..300 {
            let mut actions = vec![0; arenas * 2];
            let mask = b.action_mask().map(<[u8]>::to_vec).filter(|_| masked);
            random
                .actions_within(&b.buffers().obs, mask.as_deref(), &mut actions)
                .unwrap();
            b.actions_mut().copy_from_slice(&actions);
            b.step().unwrap();
        }
        let rollout = b.finish_recording().unwrap();
        let n = bumps(&rollout.frames);
        if masked {
            assert_eq!(n, 0);
        } else {
            // About half the moves in this room hit a wall.
            assert!(n > 50, "{n} bumps without the mask");
        }
    }
}

#[test]
fn a_learner_exploring_and_acting_greedily_never_chooses_a_masked_action() {
    let dir = std::env::temp_dir().join(format!("gridarena-masked-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("room.ron");
    std::fs::write(&scenario, ROOM).unwrap();
    let device = choose_device(Device::Cpu).unwrap();
    let loaded = Scenario::load(&scenario).unwrap();
    // Half exploring (uniform among the legal moves), half greedy on a fresh network.
    for algo in ["pqn", "iql", "vdn", "qmix", "pqn_vdn", "ippo", "mappo"] {
        let text = format!(
            r#"RunConfig(algo: {algo}, scenario: Some("{}"), arenas: 8, rollout: 16,
                total_steps: 100000, learn: (eps_start: 0.5, eps_finish: 0.5))"#,
            scenario.display()
        );
        let cfg = RunConfig::parse_valid(&text, "masked.ron").unwrap();
        let mut learner = new_learner(&cfg, &loaded, &device).unwrap();
        learner.batch().start_recording(0);
        for _ in 0..4 {
            learner.update().unwrap();
        }
        let rollout = learner.batch().finish_recording().unwrap();
        assert!(
            rollout.frames.len() > 40,
            "{algo}: {}",
            rollout.frames.len()
        );
        assert_eq!(bumps(&rollout.frames), 0, "{algo}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A restored batch has the global state and the masks of the one it was saved from (they are
/// not in the saved state: the restore writes them from the restored arenas).
#[test]
fn a_restored_batch_has_the_saved_batchs_global_state_and_masks() {
    let loaded = Scenario::load("assets/scenarios/lbf_8x8_2p_2f.ron".as_ref()).unwrap();
    let mut a = EnvBatch::new(&loaded, 8, 3).unwrap();
    a.set_global_state(true);
    let mut random = RandomPolicy::new(5, 8, a.layout().actions);
    for _ in 0..23 {
        let (acts, mask) = a.actions_and_mask();
        let mask = mask.unwrap().to_vec();
        random.act_within(&mask, acts);
        a.step().unwrap();
    }
    let saved = a.save_state();
    let mut b = EnvBatch::new(&loaded, 8, 99).unwrap();
    b.set_global_state(true);
    assert_ne!(a.global_state(), b.global_state(), "a fresh batch differs");
    b.load_state(&saved).unwrap();
    assert_eq!(a.global_state(), b.global_state());
    assert_eq!(a.action_mask(), b.action_mask());
    assert_eq!(a.buffers().obs, b.buffers().obs);
}

/// One step of uniformly random actions in every arena of `b`.
fn random_step(b: &mut EnvBatch, random: &mut RandomPolicy) {
    let mut actions = vec![0; b.arenas() * b.layout().learners];
    random
        .actions_within(&b.buffers().obs, None, &mut actions)
        .unwrap();
    b.actions_mut().copy_from_slice(&actions);
    b.step().unwrap();
}

/// Pursuit's global state is the whole map: obstacles from the map, and on each cell the
/// pursuers and the evaders still in the game standing there, step after step.
#[test]
fn pursuits_global_state_is_the_whole_map() {
    let loaded = Scenario::load("assets/scenarios/pursuit.ron".as_ref()).unwrap();
    let (w, h) = (loaded.scenario.map[0].len(), loaded.scenario.map.len());
    let pursuers = loaded.scenario.roles[0].count as usize;
    let mut b = EnvBatch::new(&loaded, 3, 5).unwrap();
    b.set_global_state(true);
    let mut random = RandomPolicy::new(5, 3, b.layout().actions);
    for _ in 0..30 {
        random_step(&mut b, &mut random);
        for arena in 0..3 {
            let mut want = vec![0u8; w * h * 3];
            for (y, line) in loaded.scenario.map.iter().enumerate() {
                for (x, ch) in line.chars().enumerate() {
                    want[(y * w + x) * 3] = u8::from(ch == '#');
                }
            }
            for (slot, (p, alive)) in b.agents(arena).into_iter().enumerate() {
                if alive {
                    let kind = if slot < pursuers { 1 } else { 2 };
                    want[(p.y as usize * w + p.x as usize) * 3 + kind] += 1;
                }
            }
            let state = b.global_state().unwrap();
            assert_eq!(row(state, arena, w * h * 3), &want[..], "arena {arena}");
        }
    }
}

/// gift_refinements' and chemistry's global state is the whole map: walls, each cell's item,
/// and the avatar standing there with its facing, step after step.
#[test]
fn the_avatar_substrates_global_state_is_the_whole_map() {
    for name in ["gift_refinements", "chemistry_two_cycles"] {
        let path = format!("assets/scenarios/{name}.ron");
        let loaded = Scenario::load(path.as_ref()).unwrap();
        let mut b = EnvBatch::new(&loaded, 2, 9).unwrap();
        b.set_global_state(true);
        let (w, h) = (b.layout().width, b.layout().height);
        let mut random = RandomPolicy::new(3, 2, b.layout().actions);
        for step in 0..20 {
            random_step(&mut b, &mut random);
            for arena in 0..2 {
                let f = b.snapshot(arena);
                let mut want = vec![0u8; w * h * 7];
                for k in 0..w * h {
                    let open = b.layout().is_open((k % w) as i32, (k / w) as i32);
                    want[k * 7] = u8::from(!open);
                    want[k * 7 + 1] = f.items[k];
                }
                for ((&(x, y), &alive), &facing) in f.positions.iter().zip(&f.alive).zip(&f.facing)
                {
                    if alive {
                        let k = y as usize * w + x as usize;
                        want[k * 7 + 2] = 1;
                        want[k * 7 + 3 + facing as usize] = 1;
                    }
                }
                let state = b.global_state().unwrap();
                assert_eq!(
                    row(state, arena, w * h * 7),
                    &want[..],
                    "{name}: step {step}, arena {arena}"
                );
            }
        }
    }
}
