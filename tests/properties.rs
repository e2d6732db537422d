//! Rules that must hold for every input, and the proof that the ECS schedule runs the same
//! single-arena rule functions that exact analysis will call.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use gridarena::components::{Alive, AppliedAction, GridPos};
use gridarena::engine::EnvBatch;
use gridarena::layout::{Layout, Rules};
use gridarena::policy::RandomPolicy;
use gridarena::scenario::{
    ActionSet, Channel, Control, LoadedScenario, ObservationSpec, PursuitParams, RoleKind,
    RoleSpec, Scenario, Substrate,
};
use gridarena::substrate::{ArenaState, transition};

fn scenario(
    map: Vec<String>,
    surround: bool,
    n_catch: u16,
    pursuers: u16,
    evaders: u16,
) -> Option<LoadedScenario> {
    let scenario = Scenario {
        name: "prop".into(),
        description: String::new(),
        substrate: Substrate::Pursuit(PursuitParams {
            surround,
            n_catch,
            shared_reward: false,
            ..Default::default()
        }),
        map,
        roles: vec![
            RoleSpec {
                kind: RoleKind::Pursuer,
                count: pursuers,
                control: Some(Control::Learner),
            },
            RoleSpec {
                kind: RoleKind::Evader,
                count: evaders,
                control: Some(Control::RandomWalk),
            },
        ],
        actions: Some(ActionSet::Move5),
        slip: 0.0,
        max_steps: 10,
        observation: ObservationSpec {
            radius: Some(1),
            window: None,
            channels: vec![Channel::Obstacle, Channel::Pursuers, Channel::Evaders],
        },
    };
    let grid = scenario.validate().ok()?;
    Some(LoadedScenario { scenario, grid })
}

fn arb_case() -> impl Strategy<Value = (LoadedScenario, Vec<usize>, Vec<u8>)> {
    (
        3usize..8,
        3usize..8,
        proptest::collection::vec(prop::bool::weighted(0.2), 64),
        1u16..5,
        1u16..5,
        any::<bool>(),
        1u16..3,
    )
        .prop_filter_map(
            "needs enough open cells",
            |(w, h, walls, p, e, surround, n_catch)| {
                let map: Vec<String> = (0..h)
                    .map(|y| {
                        (0..w)
                            .map(|x| if walls[y * 8 + x] { '#' } else { '*' })
                            .collect()
                    })
                    .collect();
                scenario(map, surround, n_catch, p, e)
            },
        )
        .prop_flat_map(|loaded| {
            let agents = loaded.scenario.agents_per_arena();
            let open: Vec<usize> = (0..loaded.grid.tiles.len())
                .filter(|&i| loaded.grid.tiles[i].is_open())
                .collect();
            (
                Just(loaded),
                proptest::collection::vec(proptest::sample::select(open), agents),
                proptest::collection::vec(0u8..5, agents),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))), ..ProptestConfig::default() })]

    #[test]
    fn a_step_keeps_agents_on_open_cells_and_tallies_and_catches_consistent(
        (loaded, cells, actions) in arb_case()
    ) {
        let layout = Layout::derive(&loaded);
        let w = layout.width;
        let pos: Vec<GridPos> = cells.iter().map(|&c| GridPos { x: (c % w) as i16, y: (c / w) as i16 }).collect();
        let mut state = ArenaState::new(&layout, pos.clone(), vec![Alive(true); pos.len()]);
        let applied: Vec<AppliedAction> = actions.iter().map(|&a| AppliedAction(a)).collect();
        let outcome = transition(&layout, &mut state, &applied);
        let reward = state.rewards().to_vec();
        let Rules::Pursuit(rules) = &layout.rules else { unreachable!() };
        let params = &rules.params;

        let mut pursuers_on = std::collections::HashMap::new();
        for (slot, p) in state.pos.iter().enumerate() {
            prop_assert!(layout.is_open(p.x as i32, p.y as i32), "slot {slot} at {p:?} is not open");
            let moved = (p.x - pos[slot].x).abs() + (p.y - pos[slot].y).abs();
            prop_assert!(moved <= 1, "slot {slot} moved {moved} cells");
            if layout.slot_kind[slot] == RoleKind::Pursuer {
                *pursuers_on.entry(*p).or_insert(0u16) += 1;
            }
        }
        let removed = state.alive.iter().filter(|a| !a.0).count() as u16;
        prop_assert_eq!(removed as u32, state.counters[0]);
        for slot in 0..layout.agents {
            if layout.slot_kind[slot] == RoleKind::Pursuer {
                prop_assert!(state.alive[slot].0, "pursuers are never removed");
            } else if !state.alive[slot].0 && !params.surround {
                let here = pursuers_on.get(&state.pos[slot]).copied().unwrap_or(0);
                prop_assert!(here >= params.n_catch, "caught with {here} pursuers on the cell");
            } else if !state.alive[slot].0 {
                let p = state.pos[slot];
                for (dx, dy) in [(-1i16, 0i16), (1, 0), (0, -1), (0, 1)] {
                    let n = GridPos { x: p.x + dx, y: p.y + dy };
                    prop_assert!(!layout.is_open(n.x as i32, n.y as i32) || pursuers_on.contains_key(&n));
                }
            } else {
                // And the converse: an evader still there after the step is not caught where
                // it stands (the simultaneous order judges catches after every move).
                let p = state.pos[slot];
                let caught = if params.surround {
                    [(-1i16, 0i16), (1, 0), (0, -1), (0, 1)].iter().all(|&(dx, dy)| {
                        let n = GridPos { x: p.x + dx, y: p.y + dy };
                        !layout.is_open(n.x as i32, n.y as i32) || pursuers_on.contains_key(&n)
                    })
                } else {
                    pursuers_on.get(&p).copied().unwrap_or(0) >= params.n_catch
                };
                prop_assert!(!caught, "evader {slot} at {p:?} meets the catch rule but was not removed");
            }
        }
        // The cell layer counts exactly the live agents.
        let (mut pc, mut ec) = (0u32, 0u32);
        for cell in state.cells.chunks_exact(3) {
            pc += cell[1] as u32;
            ec += cell[2] as u32;
        }
        let live_evaders = (0..layout.agents).filter(|&s| state.alive[s].0 && layout.slot_kind[s] == RoleKind::Evader).count();
        prop_assert_eq!(pc as usize, layout.agents - layout.slot_kind.iter().filter(|k| **k == RoleKind::Evader).count());
        prop_assert_eq!(ec as usize, live_evaders);
        prop_assert_eq!(outcome.terminated, live_evaders == 0);
        prop_assert!(reward.iter().all(|r| r.0.is_finite()));
    }
}

#[test]
fn the_schedule_computes_what_the_single_arena_rules_compute() {
    for path in [
        "assets/scenarios/pursuit.ron",
        "assets/scenarios/pursuit_3.ron",
    ] {
        let loaded = Scenario::load(std::path::Path::new(path)).unwrap();
        let layout = Layout::derive(&loaded);
        let mut batch = EnvBatch::new(&loaded, 4, 3).unwrap();
        let mut policy = RandomPolicy::new(3, 4, layout.actions);
        batch.start_recording(2);
        for _ in 0..300 {
            policy.act(batch.actions_mut());
            batch.step().unwrap();
        }
        let frames = batch.finish_recording().unwrap().frames;
        let mut checked = 0;
        for pair in frames.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            if after.t == 0 {
                continue; // a respawn, not a step
            }
            let pos = before
                .positions
                .iter()
                .map(|&(x, y)| GridPos { x, y })
                .collect();
            let alive = before.alive.iter().map(|&a| Alive(a)).collect();
            let mut state = ArenaState::new(&layout, pos, alive);
            let applied: Vec<AppliedAction> =
                after.actions.iter().map(|&a| AppliedAction(a)).collect();
            let outcome = transition(&layout, &mut state, &applied);
            let reward = state.rewards().to_vec();
            let got: Vec<(i16, i16)> = state.pos.iter().map(|p| (p.x, p.y)).collect();
            assert_eq!(got, after.positions, "{path} t={}", after.t);
            assert_eq!(
                state.alive.iter().map(|a| a.0).collect::<Vec<_>>(),
                after.alive
            );
            assert_eq!(
                reward.iter().map(|r| r.0).collect::<Vec<_>>(),
                after.rewards
            );
            assert_eq!(outcome.terminated, after.terminated);
            checked += 1;
        }
        assert!(checked >= 250, "{path}: only {checked} steps compared");
    }
}

/// The reference for the avatar substrates' window, cell by cell: for each window cell, its
/// position from the facing, then wall, item and the avatar byte read from the cell layer.
fn reference_window(
    layout: &Layout,
    a: &gridarena::substrate::ArenaMut,
    s: usize,
    w: gridarena::scenario::Window,
) -> Vec<u8> {
    use gridarena::substrate::avatars::{AVATAR, DIRS, ITEM, WALL};
    let mut out = vec![0u8; w.width() * w.depth() * 7];
    if !a.alive[s].0 {
        return out;
    }
    let f = a.facing[s].0 as usize;
    let (fx, fy) = DIRS[f];
    let (rx, ry) = DIRS[(f + 1) % 4];
    for r in 0..w.depth() {
        for c in 0..w.width() {
            let ahead = w.ahead as i16 - r as i16;
            let lateral = c as i16 - w.left as i16;
            let x = a.pos[s].x + ahead * fx + lateral * rx;
            let y = a.pos[s].y + ahead * fy + lateral * ry;
            let i = layout.cell_index(x, y);
            let o = &mut out[(r * w.width() + c) * 7..][..7];
            o[0] = a.cells[i] & WALL;
            o[1] = a.cells[i + ITEM];
            let other = a.cells[i + AVATAR] as usize;
            if other != 0 && other - 1 != s {
                o[2] = 1;
                o[3 + (a.facing[other - 1].0 as usize + 4 - f) % 4] = 1;
            }
        }
    }
    out
}

/// Every avatar substrate, with Melting Pot's window and a lopsided one (so that a swapped
/// left/right or ahead/behind shows): after each of 150 random steps in 4 arenas, every
/// learner's window equals the reference computed cell by cell from the facing's geometry.
#[test]
fn avatar_windows_agree_with_the_cell_by_cell_reference() {
    use gridarena::scenario::Window;
    let lopsided = Window {
        left: 1,
        right: 3,
        ahead: 4,
        behind: 2,
    };
    for name in [
        "commons_harvest_open",
        "clean_up",
        "gift_refinements",
        "chemistry_two_cycles",
    ] {
        for window in [Window::MELTING_POT, lopsided] {
            let path = format!("assets/scenarios/{name}.ron");
            let mut loaded = Scenario::load(path.as_ref()).unwrap();
            loaded.scenario.observation.window = Some(window);
            let mut b = EnvBatch::new(&loaded, 4, 7).unwrap();
            let (n, actions, obs_len) =
                (b.layout().learners, b.layout().actions, b.layout().obs_len);
            let mut lcg = 0x9e37_79b9_7f4a_7c15u64;
            for step in 0..150 {
                for x in b.actions_mut() {
                    lcg = lcg
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    *x = ((lcg >> 33) % actions as u64) as u8;
                }
                b.step().unwrap();
                let obs = b.buffers().obs.clone();
                for arena in 0..4 {
                    let want: Vec<Vec<u8>> = b.with_arena(arena, move |l, a| {
                        (0..n).map(|s| reference_window(l, a, s, window)).collect()
                    });
                    for (s, want) in want.iter().enumerate() {
                        let got = &obs[(arena * n + s) * obs_len..][..want.len()];
                        assert_eq!(
                            got,
                            &want[..],
                            "{name} {window:?}: step {step}, arena {arena}, learner {s}"
                        );
                    }
                }
            }
        }
    }
}
