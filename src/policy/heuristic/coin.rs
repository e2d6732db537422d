//! The coin game's baseline: step toward the nearest coin of either colour (the observation
//! `[height, width, 4]` holds me, the other player, my coin, the other's coin), the shorter way
//! round on a torus. Taking the other's coin pays 1 and costs its owner 2, so two of these
//! players earn less together than two that leave each other's coins alone: this is the selfish
//! baseline, measured by `coins_own` and `coins_stolen`.
//!
//! [`NearestCoin::own_only`] is its cooperative twin: it steps toward its own coins and leaves
//! the other's alone. It is no baseline (it collects fewer coins), but the fixed cooperator
//! that opponent-shaping learners are evaluated against, as "nearest coin" is the fixed
//! defector.

use rand_chacha::ChaCha8Rng;

use super::{Decide, Nearest, draw, move5_toward};
use crate::scenario::Grid;

/// The display name.
pub(super) const NAME: &str = "nearest coin";

/// The display name of the own-colour variant.
pub(super) const OWN_NAME: &str = "own coin";

/// The coin game's heuristic for a `width x height` grid.
pub(super) struct NearestCoin {
    width: i32,
    height: i32,
    torus: bool,
    open: Vec<bool>,
    /// Whether only my own coins (channel 2) are targets.
    own_only: bool,
}

impl NearestCoin {
    /// The grid's size and walls, and whether its edges wrap.
    pub(super) fn new(grid: &Grid, torus: bool) -> NearestCoin {
        NearestCoin {
            width: grid.width as i32,
            height: grid.height as i32,
            torus,
            open: grid.tiles.iter().map(|t| t.is_open()).collect(),
            own_only: false,
        }
    }

    /// The variant that steps toward its own coins only.
    pub(super) fn own_only(self) -> NearestCoin {
        NearestCoin {
            own_only: true,
            ..self
        }
    }

    /// The offset `to - from` along an axis of length `n`, the shorter way round on a torus.
    fn offset(&self, from: i32, to: i32, n: i32) -> i32 {
        let d = to - from;
        if self.torus && 2 * d.abs() > n {
            d - d.signum() * n
        } else {
            d
        }
    }

    /// Whether (x, y), wrapped on a torus, is an open cell.
    fn is_open(&self, x: i32, y: i32) -> bool {
        let (x, y) = if self.torus {
            (x.rem_euclid(self.width), y.rem_euclid(self.height))
        } else {
            (x, y)
        };
        (0..self.width).contains(&x)
            && (0..self.height).contains(&y)
            && self.open[(y * self.width + x) as usize]
    }
}

impl Decide for NearestCoin {
    fn decide(&self, obs: &[u8], rng: &mut ChaCha8Rng) -> u8 {
        let cell = |c: usize| (c as i32 % self.width, c as i32 / self.width);
        let Some(me) = obs.chunks_exact(4).position(|c| c[0] != 0).map(cell) else {
            return draw(rng, 5) as u8;
        };
        let mut nearest = Nearest::new();
        for (c, channels) in obs.chunks_exact(4).enumerate() {
            if channels[2] != 0 || (channels[3] != 0 && !self.own_only) {
                let (x, y) = cell(c);
                let (dx, dy) = (
                    self.offset(me.0, x, self.width),
                    self.offset(me.1, y, self.height),
                );
                nearest.offer((dx.abs() + dy.abs()) as u32, (dx, dy), rng);
            }
        }
        let Some((dx, dy)) = nearest.get() else {
            return draw(rng, 5) as u8;
        };
        let blocked = |a: u8| {
            let (mx, my) = crate::substrate::pursuit::MOVES[a as usize];
            !self.is_open(me.0 + mx as i32, me.1 + my as i32)
        };
        move5_toward(dx, dy, rng, blocked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};
    use crate::scenario::Tile;

    fn grid(side: usize) -> Grid {
        Grid {
            width: side,
            height: side,
            tiles: vec![Tile::SpawnAny; side * side],
        }
    }

    /// A `side x side` observation: me at `me`, the other at `other`, coins at `coins`
    /// ((x, y), channel 2 mine / 3 the other's).
    fn obs(side: usize, me: (usize, usize), coins: &[((usize, usize), usize)]) -> Vec<u8> {
        let mut o = vec![0u8; side * side * 4];
        o[(me.1 * side + me.0) * 4] = 1;
        for &((x, y), ch) in coins {
            o[(y * side + x) * 4 + ch] = 1;
        }
        o
    }

    #[test]
    fn it_steps_toward_the_nearest_coin_of_either_colour() {
        let mut rng = stream(5, 0, Purpose::Policy);
        let plain = NearestCoin::new(&grid(5), false);
        // A coin of the other's colour right of me: right.
        assert_eq!(plain.decide(&obs(5, (1, 2), &[((3, 2), 3)]), &mut rng), 1);
        // My coin far down, the other's near up: up.
        assert_eq!(
            plain.decide(&obs(5, (2, 1), &[((2, 0), 3), ((2, 4), 2)]), &mut rng),
            2
        );
        // On a 5-wide torus a coin 4 cells to the right is one step left, over the edge;
        // without wrapping it is to the right.
        let torus = NearestCoin::new(&grid(5), true);
        assert_eq!(torus.decide(&obs(5, (0, 2), &[((4, 2), 2)]), &mut rng), 0);
        assert_eq!(plain.decide(&obs(5, (0, 2), &[((4, 2), 2)]), &mut rng), 1);
    }

    #[test]
    fn the_own_coin_variant_leaves_the_others_coins_alone() {
        let mut rng = stream(5, 0, Purpose::Policy);
        let own = NearestCoin::new(&grid(5), false).own_only();
        // The other's coin near up, mine far down: down (action 3), where the selfish
        // heuristic goes up.
        assert_eq!(
            own.decide(&obs(5, (2, 1), &[((2, 0), 3), ((2, 4), 2)]), &mut rng),
            3
        );
        // The other's coin right beside me, mine three cells left: left (action 0).
        assert_eq!(
            own.decide(&obs(5, (3, 2), &[((4, 2), 3), ((0, 2), 2)]), &mut rng),
            0
        );
    }
}
