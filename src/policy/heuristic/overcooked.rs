//! Overcooked's baseline, a greedy cook reading JaxMARL's 26 layers (`[height, width, 26]`): with
//! empty hands, fetch a plate when a soup cooks or is ready and the other cook holds none, else
//! an onion while a pot has room, else a plated soup left on a counter; carry an onion to a pot
//! with room, a plate to a ready (or cooking) pot, a soup to a serving cell. What it cannot bring
//! to its target it puts on a counter the other cook can reach (forced_coord's hand-over), and it
//! takes a loose item only where it cannot reach that item's pile. Walks by breadth-first search
//! over the floor, turns toward the target and interacts; 5% random actions break deadlocks.

use rand_chacha::ChaCha8Rng;

use super::{Decide, Nearest, draw};
use crate::scenario::{Grid, Tile};

/// The display name.
pub(super) const NAME: &str = "greedy cook";

const INTERACT: u8 = 5;
const STAY: u8 = 4;
/// Moves by action index: up, down, right, left.
const MOVES: [(i32, i32); 4] = [(0, -1), (0, 1), (1, 0), (-1, 0)];

/// Channel indices of JaxMARL's layers.
mod ch {
    pub const ME: usize = 0;
    pub const OTHER: usize = 1;
    pub const MY_FACING: usize = 2;
    pub const POT: usize = 10;
    pub const COUNTER: usize = 11;
    pub const ONION_PILE: usize = 12;
    pub const PLATE_PILE: usize = 14;
    pub const GOAL: usize = 15;
    pub const ONIONS_IN_POT: usize = 16;
    pub const IN_SOUP: usize = 18;
    pub const READY: usize = 21;
    pub const PLATE: usize = 22;
    pub const ONION: usize = 23;
}
const C: usize = 26;

/// The greedy cook for one kitchen.
pub(super) struct GreedyCook {
    width: i32,
    height: i32,
    floor: Vec<bool>,
}

impl GreedyCook {
    /// The kitchen's floor from its map (counters, piles, pots and serving cells block).
    pub(super) fn new(grid: &Grid) -> GreedyCook {
        GreedyCook {
            width: grid.width as i32,
            height: grid.height as i32,
            floor: grid
                .tiles
                .iter()
                .map(|t| matches!(t, Tile::Floor | Tile::Compound(4) | Tile::Compound(5)))
                .collect(),
        }
    }

    fn is_floor(&self, x: i32, y: i32) -> bool {
        x >= 0
            && y >= 0
            && x < self.width
            && y < self.height
            && self.floor[(y * self.width + x) as usize]
    }

    /// Distances over the floor from `from`, and the first move of a shortest path to each cell.
    fn bfs(&self, from: (i32, i32)) -> (Vec<u32>, Vec<u8>) {
        let n = (self.width * self.height) as usize;
        let (mut dist, mut first) = (vec![u32::MAX; n], vec![STAY; n]);
        let idx = |x: i32, y: i32| (y * self.width + x) as usize;
        dist[idx(from.0, from.1)] = 0;
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some((x, y)) = queue.pop_front() {
            let d = dist[idx(x, y)];
            for (a, (dx, dy)) in MOVES.iter().enumerate() {
                let (qx, qy) = (x + dx, y + dy);
                if self.is_floor(qx, qy) && dist[idx(qx, qy)] == u32::MAX {
                    dist[idx(qx, qy)] = d + 1;
                    first[idx(qx, qy)] = if d == 0 { a as u8 } else { first[idx(x, y)] };
                    queue.push_back((qx, qy));
                }
            }
        }
        (dist, first)
    }

    /// The cheapest way to face cell `t`: (distance, standing cell, move that faces `t`).
    fn approach(&self, t: usize, dist: &[u32]) -> Option<(u32, usize, u8)> {
        let (x, y) = ((t as i32) % self.width, (t as i32) / self.width);
        (0..4u8)
            .filter_map(|a| {
                let (dx, dy) = MOVES[a as usize];
                let (sx, sy) = (x - dx, y - dy);
                if !self.is_floor(sx, sy) {
                    return None;
                }
                let s = (sy * self.width + sx) as usize;
                (dist[s] != u32::MAX).then_some((dist[s], s, a))
            })
            .min()
    }
}

impl Decide for GreedyCook {
    fn decide(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        let n = (self.width * self.height) as usize;
        if obs.len() != n * C {
            return draw(rng, 6) as u8;
        }
        let at = |c: usize, k: usize| obs[c * C + k];
        let (Some(me), Some(other)) = (
            (0..n).find(|&c| at(c, ch::ME) != 0),
            (0..n).find(|&c| at(c, ch::OTHER) != 0),
        ) else {
            return draw(rng, 6) as u8;
        };
        if draw(rng, 20) == 0 {
            return draw(rng, 6) as u8;
        }
        let xy = |c: usize| ((c as i32) % self.width, (c as i32) / self.width);
        let (mine, first) = self.bfs(xy(me));
        let (theirs, _) = self.bfs(xy(other));
        let reach = |c: usize| self.approach(c, &mine).is_some();
        let cells = |f: &dyn Fn(usize) -> bool| (0..n).filter(|&c| f(c)).collect::<Vec<_>>();
        let pot = |c: usize| at(c, ch::POT) != 0;
        let room = |c: usize| pot(c) && at(c, ch::IN_SOUP) == 0 && at(c, ch::ONIONS_IN_POT) < 3;
        let busy = |c: usize| pot(c) && at(c, ch::IN_SOUP) != 0;
        let ready = |c: usize| pot(c) && at(c, ch::READY) != 0;
        let on_counter = |c: usize, k: usize| !pot(c) && c != me && c != other && at(c, k) != 0;
        let shared = || {
            cells(&|c| at(c, ch::COUNTER) != 0 && reach(c) && self.approach(c, &theirs).is_some())
        };
        // A source: its piles if reachable, else the loose items on counters.
        let source = |pile: usize, loose: usize| {
            let piles = cells(&|c| at(c, pile) != 0 && reach(c));
            if piles.is_empty() {
                cells(&|c| on_counter(c, loose) && at(c, ch::READY) == 0 && reach(c))
            } else {
                piles
            }
        };
        let or = |a: Vec<usize>, b: &dyn Fn() -> Vec<usize>| if a.is_empty() { b() } else { a };
        let targets = if at(me, ch::ONION) != 0 {
            or(cells(&|c| room(c) && reach(c)), &shared)
        } else if at(me, ch::PLATE) != 0 {
            let pots = or(cells(&|c| ready(c) && reach(c)), &|| {
                cells(&|c| busy(c) && reach(c))
            });
            or(pots, &shared)
        } else if at(me, ch::READY) != 0 {
            or(cells(&|c| at(c, ch::GOAL) != 0 && reach(c)), &shared)
        } else {
            let other_has_plate = at(other, ch::PLATE) != 0;
            let mut t = Vec::new();
            if !other_has_plate && (0..n).any(busy) {
                t = source(ch::PLATE_PILE, ch::PLATE);
            }
            if t.is_empty() && (0..n).any(room) {
                t = source(ch::ONION_PILE, ch::ONION);
            }
            if t.is_empty() {
                t = cells(&|c| on_counter(c, ch::READY) && reach(c));
            }
            t
        };
        let mut best = Nearest::new();
        for t in targets {
            if let Some((d, stand, face)) = self.approach(t, &mine) {
                best.offer(d, (stand, face), rng);
            }
        }
        let Some((stand, face)) = best.get() else {
            return draw(rng, 5) as u8;
        };
        if stand == me {
            let facing = (0..4).find(|&k| at(me, ch::MY_FACING + k) != 0);
            return if facing == Some(face as usize) {
                INTERACT
            } else {
                face
            };
        }
        let step = first[stand];
        let (x, y) = xy(me);
        let (dx, dy) = MOVES[step as usize % 4];
        if ((y + dy) * self.width + x + dx) as usize == other {
            return draw(rng, 5) as u8;
        }
        step
    }
}
