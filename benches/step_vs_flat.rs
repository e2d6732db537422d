//! How close is the ECS engine to a plain loop doing the same work?
//!
//! `FlatPursuit` below is a minimal flat-array Pursuit: the same rules, the same random streams
//! and draw order, the same observation layout, written as one fused loop per arena over
//! struct-of-arrays buffers, parallel over arenas with rayon, with no ECS. The bench first
//! checks both produce identical observations, rewards and done flags, then times both on the
//! same batch in the same process (interleaved repeats) and prints throughputs and their ratio.
//!
//! Run: `cargo bench --bench step_vs_flat [-- --arenas 1024 --steps 1000 --repeat 5]`

use std::time::Instant;

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use rayon::prelude::*;

use gridarena::bench::median;
use gridarena::engine::EnvBatch;
use gridarena::layout::Layout;
use gridarena::policy::RandomPolicy;
use gridarena::rng::{Purpose, below, stream};
use gridarena::scenario::{Control, RoleKind, Scenario};

/// Pursuit on flat arrays: `[B * M]` agents, `[B * cells]` cell layers.
struct FlatPursuit {
    l: Layout,
    pos: Vec<(i16, i16)>,
    alive: Vec<bool>,
    cells: Vec<u8>,
    deck: Vec<u16>,
    rngs: Vec<[ChaCha8Rng; 3]>,
    clock: Vec<u32>,
    evaders_left: Vec<u16>,
    reward: Vec<f32>,
    obs: Vec<u8>,
    rewards: Vec<f32>,
    terminated: Vec<u8>,
    truncated: Vec<u8>,
}

const MOVES: [(i16, i16); 5] = [(-1, 0), (1, 0), (0, -1), (0, 1), (0, 0)];
const NEIGHBOURS: [(i16, i16); 4] = [(-1, 0), (1, 0), (0, -1), (0, 1)];

/// One arena's slices.
struct Arena<'a> {
    pos: &'a mut [(i16, i16)],
    alive: &'a mut [bool],
    cells: &'a mut [u8],
    deck: &'a mut [u16],
    rng: &'a mut [ChaCha8Rng; 3],
    clock: &'a mut u32,
    evaders_left: &'a mut u16,
    reward: &'a mut [f32],
    obs: &'a mut [u8],
    rewards: &'a mut [f32],
    terminated: &'a mut u8,
    truncated: &'a mut u8,
}

impl FlatPursuit {
    fn new(l: Layout, arenas: usize, seed: u64) -> FlatPursuit {
        let (m, n) = (l.agents, l.learners);
        let mut f = FlatPursuit {
            pos: vec![(0, 0); arenas * m],
            alive: vec![false; arenas * m],
            cells: vec![0; arenas * l.cells_template.len()],
            deck: (0..arenas)
                .flat_map(|_| l.deck_template.iter().copied())
                .collect(),
            rngs: (0..arenas as u64)
                .map(|a| {
                    [
                        stream(seed, a, Purpose::Spawn),
                        stream(seed, a, Purpose::Slip),
                        stream(seed, a, Purpose::Walk),
                    ]
                })
                .collect(),
            clock: vec![0; arenas],
            evaders_left: vec![0; arenas],
            reward: vec![0.0; arenas * m],
            obs: vec![0; arenas * n * l.obs_len],
            rewards: vec![0.0; arenas * n],
            terminated: vec![0; arenas],
            truncated: vec![0; arenas],
            l,
        };
        let l = f.l.clone();
        f.arenas_mut().for_each(|mut a| reset(&l, &mut a));
        f
    }

    fn arenas_mut(&mut self) -> impl IndexedParallelIterator<Item = Arena<'_>> {
        let l = &self.l;
        let (m, n) = (l.agents, l.learners);
        (
            self.pos.par_chunks_mut(m),
            self.alive.par_chunks_mut(m),
            self.cells.par_chunks_mut(l.cells_template.len()),
            self.deck.par_chunks_mut(l.deck_template.len()),
            self.rngs.par_iter_mut(),
            self.clock.par_iter_mut(),
            self.evaders_left.par_iter_mut(),
            self.reward.par_chunks_mut(m),
            self.obs.par_chunks_mut(n * l.obs_len),
            self.rewards.par_chunks_mut(n),
            self.terminated.par_iter_mut(),
            self.truncated.par_iter_mut(),
        )
            .into_par_iter()
            .map(
                |(
                    pos,
                    alive,
                    cells,
                    deck,
                    rng,
                    clock,
                    evaders_left,
                    reward,
                    obs,
                    rewards,
                    terminated,
                    truncated,
                )| {
                    Arena {
                        pos,
                        alive,
                        cells,
                        deck,
                        rng,
                        clock,
                        evaders_left,
                        reward,
                        obs,
                        rewards,
                        terminated,
                        truncated,
                    }
                },
            )
    }

    fn step(&mut self, actions: &[u8]) {
        let n = self.l.learners;
        let l = self.l.clone();
        let l = &l;
        self.arenas_mut()
            .zip(actions.par_chunks(n))
            .with_min_len(16)
            .for_each(|(mut a, act)| step_arena(l, &mut a, act));
    }
}

#[inline]
fn cell(l: &Layout, x: i16, y: i16) -> usize {
    ((y as usize + l.pad) * l.padded_width + x as usize + l.pad) * 3
}

fn reset(l: &Layout, a: &mut Arena) {
    for g in &l.spawn_groups {
        let cells = &mut a.deck[g.deck.clone()];
        for (k, &slot) in g.slots.iter().enumerate() {
            let j = k + below(a.rng[0].next_u32(), (cells.len() - k) as u32) as usize;
            cells.swap(k, j);
            let c = cells[k] as usize;
            a.pos[slot as usize] = ((c % l.width) as i16, (c / l.width) as i16);
            a.alive[slot as usize] = true;
        }
    }
    *a.evaders_left = l
        .slot_kind
        .iter()
        .filter(|k| **k == RoleKind::Evader)
        .count() as u16;
    *a.clock = 0;
    tally(l, a);
    observe(l, a);
}

fn tally(l: &Layout, a: &mut Arena) {
    a.cells.copy_from_slice(&l.cells_template);
    for s in 0..l.agents {
        if a.alive[s] {
            let ch = if l.slot_kind[s] == RoleKind::Pursuer {
                1
            } else {
                2
            };
            let i = cell(l, a.pos[s].0, a.pos[s].1) + ch;
            a.cells[i] = a.cells[i].saturating_add(1);
        }
    }
}

fn side(l: &Layout) -> usize {
    l.scenario.observation.side()
}

fn params(l: &Layout) -> &gridarena::scenario::PursuitParams {
    match &l.rules {
        gridarena::layout::Rules::Pursuit(p) => &p.params,
        _ => panic!("the flat baseline runs Pursuit"),
    }
}

fn observe(l: &Layout, a: &mut Arena) {
    let row = side(l) * 3;
    let stride = l.padded_width * 3;
    for s in 0..l.learners {
        let out = &mut a.obs[s * l.obs_len..(s + 1) * l.obs_len];
        if !a.alive[s] {
            out.fill(0);
            continue;
        }
        let top_left = (a.pos[s].1 as usize * l.padded_width + a.pos[s].0 as usize) * 3;
        for r in 0..side(l) {
            let src = top_left + r * stride;
            out[r * row..(r + 1) * row].copy_from_slice(&a.cells[src..src + row]);
        }
    }
}

#[expect(
    clippy::needless_range_loop,
    reason = "slot indexes several parallel arrays"
)]
fn step_arena(l: &Layout, a: &mut Arena, actions: &[u8]) {
    let p = params(l);
    let stride = (l.padded_width * 3) as isize;
    // Chance and moves in one pass.
    for s in 0..l.agents {
        if !a.alive[s] {
            continue;
        }
        let act = match l.slot_control[s] {
            Control::Learner => {
                if l.slip_threshold > 0 {
                    let bits = a.rng[1].next_u64();
                    if (bits & 0xffff_ffff) < l.slip_threshold {
                        below((bits >> 32) as u32, 5) as u8
                    } else {
                        actions[s]
                    }
                } else {
                    actions[s]
                }
            }
            Control::RandomWalk => below(a.rng[2].next_u32(), 5) as u8,
        };
        let (dx, dy) = MOVES[act as usize];
        let (x, y) = (a.pos[s].0 + dx, a.pos[s].1 + dy);
        if l.is_open(x as i32, y as i32) {
            a.pos[s] = (x, y);
        }
    }
    tally(l, a);
    // Tags.
    a.reward.fill(0.0);
    for &s in &l.pursuer_slots {
        let s = s as usize;
        if a.alive[s] {
            let i = cell(l, a.pos[s].0, a.pos[s].1) as isize;
            let e: u32 = NEIGHBOURS
                .iter()
                .map(|&(dx, dy)| {
                    a.cells[(i + dy as isize * stride + dx as isize * 3) as usize + 2] as u32
                })
                .sum();
            a.reward[s] = p.tag_reward * e as f32;
        }
    }
    // Catches.
    for &e in &l.evader_slots {
        let e = e as usize;
        if !a.alive[e] {
            continue;
        }
        let i = cell(l, a.pos[e].0, a.pos[e].1);
        let caught = if p.surround {
            NEIGHBOURS.iter().all(|&(dx, dy)| {
                let c = (i as isize + dy as isize * stride + dx as isize * 3) as usize;
                a.cells[c] != 0 || a.cells[c + 1] > 0
            })
        } else {
            a.cells[i + 1] as u16 >= p.n_catch
        };
        if caught {
            for &q in &l.pursuer_slots {
                let q = q as usize;
                let (dx, dy) = (a.pos[q].0 - a.pos[e].0, a.pos[q].1 - a.pos[e].1);
                if if p.surround {
                    dx.abs() + dy.abs() == 1
                } else {
                    dx == 0 && dy == 0
                } {
                    a.reward[q] += p.catch_reward;
                }
            }
            if l.slot_control[e] == Control::Learner {
                a.reward[e] -= p.catch_reward;
            }
            a.alive[e] = false;
            a.cells[i + 2] = a.cells[i + 2].saturating_sub(1);
            *a.evaders_left -= 1;
        }
    }
    // Per-step terms and sharing.
    let mut sum = 0.0f32;
    for &s in &l.pursuer_slots {
        a.reward[s as usize] += p.urgency_reward;
        sum += a.reward[s as usize];
    }
    for &s in &l.evader_slots {
        if a.alive[s as usize] && l.slot_control[s as usize] == Control::Learner {
            a.reward[s as usize] += p.escape_reward;
        }
    }
    if p.shared_reward && !l.pursuer_slots.is_empty() {
        let mean = sum / l.pursuer_slots.len() as f32;
        for &s in &l.pursuer_slots {
            a.reward[s as usize] = mean;
        }
    }
    a.rewards.copy_from_slice(&a.reward[..l.learners]);
    // Episode end, observation, reset.
    *a.clock += 1;
    let ended = *a.evaders_left == 0;
    *a.terminated = u8::from(ended);
    *a.truncated = u8::from(!ended && *a.clock >= l.max_steps);
    if *a.terminated != 0 || *a.truncated != 0 {
        reset(l, a);
    } else {
        observe(l, a);
    }
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // Both run inside the pool, as `gridarena bench env` and the trainer do: dispatches from a
    // worker thread cost far less than injecting from outside the pool.
    let pool = rayon::ThreadPoolBuilder::new()
        .build()
        .expect("thread pool");
    pool.install(run);
}

fn run() {
    let arenas = arg("--arenas", 1024);
    let steps = arg("--steps", 1000);
    let repeat = arg("--repeat", 5);
    let loaded = Scenario::default_pursuit();
    let seed = 0;

    // 1. Same work: identical outputs over two full episodes on a smaller batch.
    {
        let check_arenas = 64;
        let mut engine = EnvBatch::new(&loaded, check_arenas, seed).unwrap();
        let mut flat = FlatPursuit::new(engine.layout().clone(), check_arenas, seed);
        let mut policy = RandomPolicy::new(seed, check_arenas, 5);
        let mut actions = vec![0u8; check_arenas * engine.layout().learners];
        assert_eq!(
            engine.buffers().obs,
            flat.obs,
            "initial observations differ"
        );
        for t in 0..1100 {
            policy.act(&mut actions);
            engine.actions_mut().copy_from_slice(&actions);
            engine.step().unwrap();
            flat.step(&actions);
            let b = engine.buffers();
            assert!(
                b.obs == flat.obs
                    && b.rewards == flat.rewards
                    && b.terminated == flat.terminated
                    && b.truncated == flat.truncated,
                "engine and flat loop diverged at step {t}"
            );
        }
        println!(
            "check: engine and flat loop give identical observations, rewards and dones over 1100 steps x {check_arenas} arenas"
        );
    }

    // 2. Timing, interleaved so both see the same machine state.
    let mut engine = EnvBatch::new(&loaded, arenas, seed).unwrap();
    let mut flat = FlatPursuit::new(engine.layout().clone(), arenas, seed);
    let learners = engine.layout().learners;
    let mut policy = RandomPolicy::new(seed, arenas, 5);
    let mut actions = vec![0u8; arenas * learners];
    for _ in 0..50 {
        policy.act(&mut actions);
        engine.actions_mut().copy_from_slice(&actions);
        engine.step().unwrap();
        flat.step(&actions);
    }
    let (mut engine_rates, mut flat_rates) = (Vec::new(), Vec::new());
    for _ in 0..repeat {
        let start = Instant::now();
        for _ in 0..steps {
            policy.act(engine.actions_mut());
            engine.step().unwrap();
        }
        engine_rates.push((arenas * steps * learners) as f64 / start.elapsed().as_secs_f64());

        let start = Instant::now();
        for _ in 0..steps {
            policy.act(&mut actions);
            flat.step(&actions);
        }
        flat_rates.push((arenas * steps * learners) as f64 / start.elapsed().as_secs_f64());
    }
    let (e, f) = (median(&engine_rates), median(&flat_rates));
    println!(
        "arenas {arenas}, steps {steps}, repeats {repeat}, threads {}",
        rayon::current_num_threads()
    );
    println!("ECS engine: {:>12.0} pursuer-steps/s (median)", e);
    println!("flat loop:  {:>12.0} pursuer-steps/s (median)", f);
    println!("ratio engine/flat: {:.2}", e / f);
}
