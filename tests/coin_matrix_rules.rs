//! The coin game's and matrix games' rules.

use gridarena::components::GridPos;
use gridarena::engine::EnvBatch;
use gridarena::scenario::Scenario;

const LEFT: u8 = 0;
const RIGHT: u8 = 1;
const STAY: u8 = 4;

fn coin_game() -> EnvBatch {
    let loaded = Scenario::load(std::path::Path::new("assets/scenarios/coin_game.ron")).unwrap();
    EnvBatch::new(&loaded, 1, 5).unwrap()
}

/// Players at (x, y) and the coin at (cx, cy) with a colour (0 red = player 0, 1 blue).
fn place(b: &mut EnvBatch, p0: (i16, i16), p1: (i16, i16), coin: (usize, usize), colour: u8) {
    b.edit_arena(0, move |l, a| {
        a.pos[0] = GridPos { x: p0.0, y: p0.1 };
        a.pos[1] = GridPos { x: p1.0, y: p1.1 };
        let cell = coin.1 * l.width + coin.0;
        a.cells[0] = cell as u8;
        a.cells[1] = 0;
        a.cells[2] = colour;
    })
    .unwrap();
}

fn step(b: &mut EnvBatch, actions: [u8; 2]) -> Vec<f32> {
    b.actions_mut().copy_from_slice(&actions);
    b.step().unwrap();
    b.agent_rewards(0)
}

#[test]
fn picking_up_your_own_coin_pays_one() {
    let mut b = coin_game();
    place(&mut b, (0, 0), (2, 2), (1, 0), 0);
    assert_eq!(step(&mut b, [RIGHT, STAY]), vec![1.0, 0.0]);
    assert_eq!(b.counters(0), vec![1, 0]);
}

#[test]
fn picking_up_the_other_players_coin_costs_them_two() {
    let mut b = coin_game();
    place(&mut b, (0, 0), (2, 2), (1, 0), 1);
    assert_eq!(step(&mut b, [RIGHT, STAY]), vec![1.0, -2.0]);
    assert_eq!(b.counters(0), vec![0, 1]);
}

#[test]
fn both_players_on_the_coin_both_pick_it_up() {
    let mut b = coin_game();
    place(&mut b, (0, 0), (2, 0), (1, 0), 0);
    // Player 0 takes its own coin (+1) and loses 2 to player 1 taking it too.
    assert_eq!(step(&mut b, [RIGHT, LEFT]), vec![-1.0, 1.0]);
}

#[test]
fn a_new_coin_appears_on_a_free_cell_after_a_pickup() {
    for seed in 0..20 {
        let loaded =
            Scenario::load(std::path::Path::new("assets/scenarios/coin_game.ron")).unwrap();
        let mut b = EnvBatch::new(&loaded, 1, seed).unwrap();
        place(&mut b, (0, 0), (2, 2), (1, 0), 0);
        step(&mut b, [RIGHT, STAY]);
        let items = b.snapshot(0).items;
        let cell = items[0] as usize;
        assert!(
            cell != 1 && cell != 8,
            "seed {seed}: the coin landed under a player"
        );
    }
}

#[test]
fn moves_wrap_around_the_torus() {
    let mut b = coin_game();
    place(&mut b, (0, 0), (2, 2), (1, 1), 0);
    step(&mut b, [LEFT, RIGHT]);
    let p = b.snapshot(0).positions;
    assert_eq!((p[0], p[1]), ((2, 0), (0, 2)));
}

#[test]
fn each_player_sees_itself_the_other_and_the_coins_by_colour() {
    let mut b = coin_game();
    place(&mut b, (0, 0), (2, 2), (1, 0), 1);
    let obs = b.buffers().obs.clone();
    let (p0, p1) = obs.split_at(36);
    assert_eq!(&p0[0..4], &[1, 0, 0, 0], "player 0 at cell 0");
    assert_eq!(&p0[32..36], &[0, 1, 0, 0], "the other player at cell 8");
    assert_eq!(
        &p0[4..8],
        &[0, 0, 0, 1],
        "a blue coin is the other's colour for player 0"
    );
    assert_eq!(&p1[4..8], &[0, 0, 1, 0], "and its own for player 1");
    assert_eq!(&p1[32..36], &[1, 0, 0, 0]);
}

fn matrix(name: &str) -> EnvBatch {
    let path = format!("assets/scenarios/{name}.ron");
    let loaded = Scenario::load(std::path::Path::new(&path)).unwrap();
    EnvBatch::new(&loaded, 1, 0).unwrap()
}

#[test]
fn matrix_games_pay_from_the_table() {
    let mut b = matrix("prisoners_dilemma");
    let table = [
        ([0, 0], [3.0, 3.0]),
        ([0, 1], [0.0, 5.0]),
        ([1, 0], [5.0, 0.0]),
        ([1, 1], [1.0, 1.0]),
    ];
    for (joint, payoff) in table {
        assert_eq!(step(&mut b, joint), payoff.to_vec(), "{joint:?}");
    }
    let mut b = matrix("climbing_game");
    assert_eq!(step(&mut b, [0, 1]), vec![-30.0, -30.0]);
    assert_eq!(step(&mut b, [0, 0]), vec![11.0, 11.0]);
    assert_eq!(step(&mut b, [2, 2]), vec![5.0, 5.0]);
}

#[test]
fn matrix_observations_are_the_previous_joint_action() {
    let mut b = matrix("stag_hunt");
    assert_eq!(
        b.buffers().obs,
        vec![0, 0, 0, 0, 1, 0, 0, 0, 0, 1],
        "first step: only the flag"
    );
    step(&mut b, [0, 1]);
    let one = [1, 0, 0, 1, 0];
    assert_eq!(
        b.buffers().obs,
        [one, one].concat(),
        "stag, hare for both observers"
    );
}

#[test]
fn the_episode_log_reports_returns_equality_and_counters() {
    let mut b = matrix("prisoners_dilemma");
    b.start_episode_log(10);
    for _ in 0..16 {
        step(&mut b, [0, 1]); // player 0 cooperates, player 1 defects: 0 and 5 per step
    }
    let log = b.episode_log();
    assert_eq!(log.len(), 1, "one 16-step episode finished");
    let e = &log[0];
    assert_eq!((e.length, e.terminated), (16, false));
    assert_eq!(e.returns, vec![0.0, 80.0]);
    assert_eq!(
        e.counters,
        vec![16, 16],
        "cooperate chosen 16 times, defect 16 times"
    );
    let m = gridarena::metrics::summarize(&b.layout().counter_names, &log);
    assert_eq!(m.collective_return, 80.0);
    // Gini of (0, 80) is 0.5.
    assert!((m.equality - 0.5).abs() < 1e-12, "{}", m.equality);
    assert_eq!(b.clock(0).t, 0, "the arena respawned after logging");
}

/// Stag hunt players: both hunt the stag for the first `together` steps, then player 1 takes
/// the hare while player 0 keeps hunting the stag alone.
struct StagThenSplit {
    together: u32,
    step: u32,
}

impl gridarena::policy::Policy for StagThenSplit {
    fn actions(
        &mut self,
        _obs: &[u8],
        out: &mut [u8],
    ) -> Result<(), gridarena::policy::PolicyError> {
        let split = self.step >= self.together;
        for pair in out.chunks_mut(2) {
            pair.copy_from_slice(&[0, u8::from(split)]);
        }
        self.step += 1;
        Ok(())
    }
}

#[test]
fn eval_reports_sustainability_as_the_mean_step_of_each_players_positive_rewards() {
    let loaded = Scenario::load(std::path::Path::new("assets/scenarios/stag_hunt.ron")).unwrap();
    let eval = |together| {
        let mut p = StagThenSplit { together, step: 0 };
        gridarena::train::eval::evaluate_policy(&loaded, 3, 1, &mut p).unwrap()
    };
    // Stag together all 16 steps: 4 at every step, the mean reward step is 8.5 for both.
    let r = eval(16);
    assert_eq!((r.sustainability, r.mean_return), (Some(8.5), 64.0));
    // Together for 8 steps, then player 0 hunts alone (0) while player 1 takes hares (3):
    // player 0 is rewarded at steps 1..=8 (mean 4.5), player 1 at 1..=16 (mean 8.5).
    let r = eval(8);
    assert_eq!(r.sustainability, Some(6.5));
    assert_eq!(r.per_agent, vec![32.0, 56.0]);
    // Split from the start: player 0 is never rewarded and is left out of the mean.
    assert_eq!(eval(0).sustainability, Some(8.5));
}
