//! The ASCII map legend and the parsed grid.
//!
//! Legend (one character per cell; every row the same length):
//!
//! | symbol | meaning |
//! |---|---|
//! | `#` | wall / obstacle: nobody enters it; the observation's obstacle channel is 1 there |
//! | `.` | open floor |
//! | `*` | open floor, spawn point for agents of any role |
//! | `P` | open floor, spawn point for pursuers |
//! | `E` | open floor, spawn point for evaders |
//! | `T` | open floor, token cell (gift_refinements): starts empty, regrows a token |
//!
//! Chemistry scenarios add one symbol per compound (a cell starting with that molecule).
//! Outside the map counts as obstacle.

use serde::{Deserialize, Serialize};

/// What a map cell is, read from its legend symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tile {
    /// Impassable.
    Wall,
    /// Open floor.
    Floor,
    /// Open floor where any role may spawn.
    SpawnAny,
    /// Open floor where pursuers spawn.
    SpawnPursuer,
    /// Open floor where evaders spawn.
    SpawnEvader,
    /// Open floor where tokens grow (gift_refinements).
    Token,
    /// Open floor starting with the compound of this index (chemistry; 0 is the first compound).
    Compound(u8),
}

/// The legend: every symbol the map accepts, with its meaning.
pub const LEGEND: &[(char, Tile, &str)] = &[
    ('#', Tile::Wall, "wall/obstacle"),
    ('.', Tile::Floor, "open floor"),
    ('*', Tile::SpawnAny, "spawn point, any role"),
    ('P', Tile::SpawnPursuer, "spawn point, pursuers"),
    ('E', Tile::SpawnEvader, "spawn point, evaders"),
    ('T', Tile::Token, "token cell"),
];

impl Tile {
    /// The tile for a legend symbol.
    pub fn from_symbol(c: char) -> Option<Tile> {
        LEGEND.iter().find(|(s, _, _)| *s == c).map(|(_, t, _)| *t)
    }

    /// Whether agents can stand here.
    pub fn is_open(self) -> bool {
        self != Tile::Wall
    }
}

/// The legend's symbols whose tile passes `keep`, as one line for error messages.
pub fn legend_summary(keep: impl Fn(Tile) -> bool) -> String {
    LEGEND
        .iter()
        .filter(|(_, t, _)| keep(*t))
        .map(|(s, _, meaning)| format!("'{s}' {meaning}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A parsed rectangular map; cells row-major, `y` grows downwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// `width * height` tiles, row-major.
    pub tiles: Vec<Tile>,
}

impl Grid {
    /// The tile at (x, y), or `None` outside the map.
    pub fn tile(&self, x: i32, y: i32) -> Option<Tile> {
        if x < 0 || y < 0 || x as usize >= self.width || y as usize >= self.height {
            None
        } else {
            Some(self.tiles[y as usize * self.width + x as usize])
        }
    }

    /// Whether (x, y) is inside the map and not a wall.
    pub fn is_open(&self, x: i32, y: i32) -> bool {
        self.tile(x, y).is_some_and(Tile::is_open)
    }

    /// Number of open cells.
    pub fn open_cells(&self) -> usize {
        self.tiles.iter().filter(|t| t.is_open()).count()
    }
}
