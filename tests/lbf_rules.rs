//! Level-Based Foraging rules with hand-set states and real numbers, through the batch (the
//! step-by-step comparison with lbforaging itself is tests/lbf_fidelity.rs).

use gridarena::components::GridPos;
use gridarena::layout::Layout;
use gridarena::substrate::Rules;
use gridarena::substrate::lbf::{CellLayout, rules};
use gridarena::{EnvBatch, Scenario};

/// 5x5, 2 agents, 2 food slots, 10 steps.
const LBF: &str = r#"Scenario(
    name: "lbf",
    substrate: LevelBasedForaging((max_num_food: 2, penalty: 0.25)),
    map: [".....", ".....", ".....", ".....", "....."],
    roles: [(kind: player, count: 2)],
    max_steps: 10,
)"#;

fn cl(layout: &Layout) -> CellLayout {
    match &layout.rules {
        Rules::Lbf(l) => l.cells,
        _ => unreachable!(),
    }
}

/// Agents at (row, column) with levels; foods (row, column, level).
fn set(b: &mut EnvBatch, agents: [(i16, i16, u8); 2], foods: &[(u8, u8, u8)]) {
    let foods = foods.to_vec();
    b.edit_arena(0, move |l, a| {
        let cl = cl(l);
        for (s, (r, c, level)) in agents.iter().enumerate() {
            a.pos[s] = GridPos { x: *c, y: *r };
            a.cells[CellLayout::LEVELS + s] = *level;
        }
        a.cells[cl.food(0)..cl.food(cl.foods)].fill(0);
        for (k, (r, c, level)) in foods.iter().enumerate() {
            a.cells[cl.food(k)..cl.food(k) + 4].copy_from_slice(&[*r, *c, *level, 1]);
        }
        let spawned = foods.iter().map(|f| f.2 as u16).sum();
        CellLayout::set_food_spawned(a.cells, spawned);
    })
    .unwrap();
}

fn batch() -> EnvBatch {
    EnvBatch::new(&Scenario::parse(LBF, "lbf.ron").unwrap(), 1, 0).unwrap()
}

#[test]
fn two_agents_load_a_food_neither_could_alone_and_share_by_level() {
    let mut b = batch();
    // Food of level 3 at (2, 2) between agents of levels 1 and 2; another food of level 1.
    set(&mut b, [(2, 1, 1), (2, 3, 2)], &[(2, 2, 3), (1, 4, 1)]);
    b.actions_mut().copy_from_slice(&[rules::LOAD, rules::LOAD]);
    b.step().unwrap();
    // level * food / (sum of levels * food spawned) = 1*3/(3*4) and 2*3/(3*4).
    assert_eq!(b.buffers().rewards, vec![0.25, 0.5]);
    assert_eq!(b.buffers().terminated, vec![0], "one food is left");
    assert_eq!(b.counters(0), vec![1, 0]);
}

#[test]
fn a_load_that_falls_short_costs_the_penalty_and_the_last_food_ends_the_episode() {
    let mut b = batch();
    set(&mut b, [(2, 1, 1), (4, 4, 1)], &[(2, 2, 2)]);
    b.actions_mut().copy_from_slice(&[rules::LOAD, rules::NONE]);
    b.step().unwrap();
    assert_eq!(b.buffers().rewards, vec![-0.25, 0.0]);
    assert_eq!(b.counters(0), vec![0, 1]);
    // Agent 1 walks from (4, 4) next to the food (west twice to (4, 2), north to (3, 2)),
    // then both load: 1*2/(2*2) each, and no food is left.
    for a in [rules::WEST, rules::WEST, rules::NORTH] {
        b.actions_mut().copy_from_slice(&[rules::NONE, a]);
        b.step().unwrap();
    }
    b.actions_mut().copy_from_slice(&[rules::LOAD, rules::LOAD]);
    b.step().unwrap();
    assert_eq!(b.buffers().rewards, vec![0.5, 0.5]);
    assert_eq!(b.buffers().terminated, vec![1]);
}

#[test]
fn invalid_actions_are_taken_as_none_and_the_mask_says_which_are_valid() {
    let mut b = batch();
    // Agent 0 in the top-left corner, food south of it; agent 1 in the open.
    set(&mut b, [(0, 0, 1), (3, 3, 2)], &[(1, 0, 1)]);
    let mask = b.with_arena(0, |l, a| {
        let mut m = vec![0u8; 2 * rules::ACTIONS];
        rules::write_action_mask(l, cl(l), a.pos, a.cells, &mut m);
        m
    });
    // none, north, south, west, east, load
    assert_eq!(mask, vec![1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0]);
    b.actions_mut()
        .copy_from_slice(&[rules::NORTH, rules::LOAD]);
    b.step().unwrap();
    assert_eq!(b.applied_actions(0), vec![rules::NONE, rules::NONE]);
    assert_eq!(b.agents(0)[0].0, GridPos { x: 0, y: 0 });
}

#[test]
fn agents_swap_but_two_aiming_at_one_cell_both_stay() {
    let mut b = batch();
    set(&mut b, [(0, 0, 1), (0, 1, 1)], &[(3, 3, 1)]);
    b.actions_mut().copy_from_slice(&[rules::EAST, rules::WEST]);
    b.step().unwrap();
    let at: Vec<GridPos> = b.agents(0).iter().map(|p| p.0).collect();
    assert_eq!(at, vec![GridPos { x: 1, y: 0 }, GridPos { x: 0, y: 0 }]);
    set(&mut b, [(0, 0, 1), (0, 2, 1)], &[(3, 3, 1)]);
    b.actions_mut().copy_from_slice(&[rules::EAST, rules::WEST]);
    b.step().unwrap();
    let at: Vec<GridPos> = b.agents(0).iter().map(|p| p.0).collect();
    assert_eq!(at, vec![GridPos { x: 0, y: 0 }, GridPos { x: 2, y: 0 }]);
}

#[test]
fn the_global_state_lists_every_agent_and_food_slot() {
    let mut b = batch();
    set(&mut b, [(0, 4, 2), (3, 1, 1)], &[(1, 1, 2)]);
    let state = b.with_arena(0, |l, a| {
        let mut s = vec![0u8; 3 * 2 + 4 * 2];
        rules::write_global_state(l, cl(l), a.pos, a.cells, &mut s);
        s
    });
    assert_eq!(state, vec![0, 4, 2, 3, 1, 1, 1, 1, 2, 1, 0, 0, 0, 0]);
}

#[test]
fn the_observation_is_lbforagings_vector_shifted_by_one() {
    let mut b = batch();
    set(&mut b, [(0, 4, 2), (3, 1, 1)], &[(1, 1, 2)]);
    // Full sight: absolute (row + 1, column + 1, level); foods, then itself, then the other.
    assert_eq!(
        b.buffers().obs,
        vec![
            2, 2, 2, 0, 0, 0, 1, 5, 2, 4, 2, 1, 2, 2, 2, 0, 0, 0, 4, 2, 1, 1, 5, 2
        ]
    );
}

proptest::proptest! {
    /// The mask (one pass over the foods per learner) answers as `valid` does, action by
    /// action, for agents anywhere (edges and corners included) and foods anywhere, present
    /// or taken.
    #[test]
    fn the_mask_agrees_with_valid_everywhere(
        agents in proptest::array::uniform2((0i16..5, 0i16..5)),
        foods in proptest::collection::vec((0u8..5, 0u8..5, proptest::bool::ANY), 2),
    ) {
        let mut b = batch();
        let placed: Vec<(u8, u8, u8)> = foods.iter().map(|f| (f.0, f.1, 1)).collect();
        set(&mut b, [(agents[0].0, agents[0].1, 1), (agents[1].0, agents[1].1, 2)], &placed);
        let present: Vec<bool> = foods.iter().map(|f| f.2).collect();
        let (mask, want) = b.with_arena(0, move |l, a| {
            let cl = cl(l);
            for (k, p) in present.iter().enumerate() {
                a.cells[cl.food(k) + 3] = u8::from(*p);
            }
            let mut m = vec![0u8; 2 * rules::ACTIONS];
            rules::write_action_mask(l, cl, a.pos, a.cells, &mut m);
            let want: Vec<u8> = (0..2)
                .flat_map(|s| (0..rules::ACTIONS as u8).map(move |x| (s, x)))
                .map(|(s, x)| u8::from(rules::valid(l, cl, a.cells, a.pos[s], x)))
                .collect();
            (m, want)
        });
        proptest::prop_assert_eq!(mask, want);
    }
}

/// The batch's step, which reads each learner's valid actions from the action mask it wrote
/// after the previous step, against the single-arena rules, which have no mask and compute
/// them, and against [`rules::valid`] for the applied actions. Uniformly random actions, valid
/// or not, on full-sight and limited-sight scenarios: positions, applied actions, rewards,
/// observations and masks agree on every step of every arena. (The observations themselves
/// are checked against lbforaging in tests/lbf_fidelity.rs.)
#[test]
fn the_batch_step_computes_what_the_single_arena_rules_compute() {
    use gridarena::components::AppliedAction;
    use gridarena::substrate::{ArenaState, transition};
    use rand_chacha::rand_core::{Rng, SeedableRng};
    for name in ["lbf_8x8_2p_2f", "lbf_8x8_2p_2f_2s", "lbf_15x15_4p_3f"] {
        let path = format!("assets/scenarios/{name}.ron");
        let loaded = Scenario::load(std::path::Path::new(&path)).unwrap();
        let layout = Layout::derive(&loaded);
        let (arenas, n, o) = (3, layout.learners, layout.obs_len);
        let mut b = EnvBatch::new(&loaded, arenas, 7).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (mut stepped, mut moved, mut invalid) = (0, 0, 0);
        for _ in 0..200 {
            let before: Vec<_> = (0..arenas).map(|k| b.snapshot(k)).collect();
            for a in b.actions_mut() {
                *a = (rng.next_u32() % rules::ACTIONS as u32) as u8;
            }
            let actions = b.actions_mut().to_vec();
            b.step().unwrap();
            for (k, before) in before.iter().enumerate() {
                if b.clock(k).t == 0 {
                    continue; // the episode ended and the arena respawned
                }
                let mut s = ArenaState::from_frame(&layout, before).unwrap();
                let chosen = &actions[k * n..(k + 1) * n];
                // What lbforaging applies: the chosen action when valid, else none.
                let want_applied: Vec<u8> = chosen
                    .iter()
                    .zip(&s.pos)
                    .map(|(&a, &p)| {
                        let ok = rules::valid(&layout, cl(&layout), &s.cells, p, a);
                        if ok { a } else { rules::NONE }
                    })
                    .collect();
                let applied: Vec<_> = chosen.iter().map(|&a| AppliedAction(a)).collect();
                transition(&layout, &mut s, &applied);
                let at = format!("{name} arena {k} t {}", b.clock(k).t);
                let want_pos: Vec<_> = s.pos.iter().map(|&p| (p, true)).collect();
                assert_eq!(b.agents(k), want_pos, "{at}: positions");
                assert_eq!(b.applied_actions(k), want_applied, "{at}: applied actions");
                let want_rewards: Vec<f32> = s.rewards().iter().map(|r| r.0).collect();
                assert_eq!(b.agent_rewards(k), want_rewards, "{at}: rewards");
                let obs = &b.buffers().obs[k * n * o..(k + 1) * n * o];
                assert_eq!(obs, s.observe(&layout), "{at}: observations");
                // The mask is lbforaging's valid actions, asked one action at a time.
                let mask: Vec<u8> = (s.pos.iter().take(n))
                    .flat_map(|&p| (0..rules::ACTIONS as u8).map(move |a| (p, a)))
                    .map(|(p, a)| u8::from(rules::valid(&layout, cl(&layout), &s.cells, p, a)))
                    .collect();
                let kept = b.action_mask().unwrap();
                let kept = &kept[k * n * rules::ACTIONS..(k + 1) * n * rules::ACTIONS];
                assert_eq!(kept, &mask[..], "{at}: mask");
                stepped += 1;
                moved += usize::from(
                    before.positions != s.pos.iter().map(|p| (p.x, p.y)).collect::<Vec<_>>(),
                );
                invalid += want_applied
                    .iter()
                    .zip(chosen)
                    .filter(|(a, c)| a != c)
                    .count();
            }
        }
        assert!(
            stepped > 500 && moved > 100 && invalid > 50,
            "{name}: {stepped} steps, {moved} with moves, {invalid} invalid actions"
        );
    }
}

/// A field of `size` x `size` with `foods` food slots and `agents` agents who see `sight` cells
/// (`None`: the whole field).
fn sized(size: usize, foods: usize, agents: usize, sight: Option<u8>) -> EnvBatch {
    let row = format!("\"{}\"", ".".repeat(size));
    let text = format!(
        "Scenario(name: \"lbf\", substrate: LevelBasedForaging((max_num_food: {foods}, sight: {sight:?})), \
         map: [{}], roles: [(kind: player, count: {agents})], max_steps: 10)",
        vec![row; size].join(", ")
    );
    EnvBatch::new(&Scenario::parse(&text, "lbf.ron").unwrap(), 1, 0).unwrap()
}

proptest::proptest! {
    /// The observation takes a specialised path where it can: a whole-field one when the sight
    /// covers the field, and one with every length a constant for lbforaging's registered
    /// numbers of foods and agents (windowed or whole-field). Each writes every byte, and what
    /// the general windowed path writes, for any sight, agents and foods anywhere, foods
    /// present or taken, any levels.
    #[test]
    fn every_specialised_view_is_the_general_windowed_view(
        shape in proptest::sample::select(vec![(2usize, 2usize), (3, 3), (3, 4), (2, 3), (1, 2), (4, 5)]),
        sight in proptest::option::of(1u8..6),
        cells in proptest::collection::vec((0i16..6, 0i16..6, 1u8..4), 5 + 4),
        present in proptest::collection::vec(proptest::bool::ANY, 4),
    ) {
        let (foods, agents) = shape;
        let mut b = sized(6, foods, agents, sight);
        let cells = cells.clone();
        let present = present.clone();
        let (full, windowed) = b.with_arena(0, move |l, a| {
            let Rules::Lbf(lbf) = &l.rules else { unreachable!() };
            let cl = lbf.cells;
            for (s, &(r, c, level)) in cells.iter().take(agents).enumerate() {
                a.pos[s] = GridPos { x: c, y: r };
                a.cells[CellLayout::LEVELS + s] = level;
            }
            for k in 0..foods {
                let (r, c, level) = cells[5 + k];
                let f = [r as u8, c as u8, level + 1, u8::from(present[k])];
                a.cells[cl.food(k)..cl.food(k) + 4].copy_from_slice(&f);
            }
            a.obs.fill(0x55);
            gridarena::substrate::lbf::views::write_observations(lbf, l, a);
            let full = a.obs.to_vec();
            a.obs.fill(0xAA);
            gridarena::substrate::lbf::views::write_windowed_views(lbf, l, a);
            (full, a.obs.to_vec())
        });
        proptest::prop_assert_eq!(full, windowed);
    }
}
