//! PSRO (policy-space response oracles) on a matrix game's stage game.
//!
//! Each player's population starts with one pure strategy. Every iteration builds the restricted
//! meta-game (the payoff tensor over the populations), solves it with a [`MetaSolver`], records
//! the meta-strategies and their NashConv in the full game, and adds each player's exact best
//! response (a pure action; the lowest index among ties) to the others' meta-strategy mixtures
//! when it is new. It stops when no player adds a strategy or after the iteration limit.
//! Everything is deterministic.
//!
//! ```
//! use gridarena::analysis::meta_solver::{MetaSolver, PrdParams};
//! use gridarena::analysis::psro::{NormalFormGame, PsroOptions, psro};
//!
//! // Matching pennies.
//! let game = NormalFormGame::new(2, 2, vec![
//!     vec![1.0, -1.0], vec![-1.0, 1.0], vec![-1.0, 1.0], vec![1.0, -1.0],
//! ]).unwrap();
//! let report = psro(&game, &PsroOptions::default()).unwrap();
//! assert!(report.iterations.last().unwrap().nashconv < 0.01);
//! ```

use serde::Serialize;

use crate::analysis::meta_solver::{MetaSolver, PrdParams, values_per_strategy};
use crate::scenario::{Scenario, Substrate};

/// Why PSRO cannot run.
#[derive(Debug, thiserror::Error)]
pub enum PsroError {
    /// The scenario's substrate has no stage game.
    #[error(
        "scenario `{name}` uses the {substrate} substrate; stage-game PSRO runs on matrix games \
         only (substrate: MatrixGame, e.g. assets/scenarios/rock_paper_scissors.ron); PSRO on \
         gridworlds is `analysis::psro_grid`"
    )]
    NotMatrixGame {
        /// The scenario's name.
        name: String,
        /// Its substrate.
        substrate: &'static str,
    },
    /// The payoff table does not have one row of `players` numbers per joint action.
    #[error("payoff table: {0}")]
    Shape(String),
    /// A starting action outside the player's actions.
    #[error("initial strategy {action} for player {player}: the game has actions 0..{actions}")]
    BadInitial {
        /// The player.
        player: usize,
        /// The action asked for.
        action: usize,
        /// Actions per player.
        actions: usize,
    },
    /// Zero iterations asked for.
    #[error("PSRO needs at least 1 iteration")]
    NoIterations,
    /// The report could not be written.
    #[error("writing {path}: {error}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        error: std::io::Error,
    },
}

/// Writes `value` as pretty JSON to `path`, atomically.
pub fn write_json(path: &std::path::Path, value: &impl Serialize) -> Result<(), PsroError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| PsroError::Io {
        path: path.to_path_buf(),
        error: std::io::Error::other(e),
    })?;
    crate::atomic::write_atomic(path, text.as_bytes()).map_err(|error| PsroError::Io {
        path: path.to_path_buf(),
        error,
    })
}

/// An N-player normal-form game with K actions each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NormalFormGame {
    /// Players, N.
    pub players: usize,
    /// Actions per player, K.
    pub actions: usize,
    /// Action names (K of them).
    pub action_names: Vec<String>,
    /// `payoffs[player]`: K^N payoffs, joint actions row-major with player 0 most significant.
    pub payoffs: Vec<Vec<f64>>,
}

impl NormalFormGame {
    /// A game from rows as in a MatrixGame asset: one row of `players` rewards per joint action.
    pub fn new(players: usize, actions: usize, rows: Vec<Vec<f64>>) -> Result<Self, PsroError> {
        let joint = u32::try_from(players)
            .ok()
            .and_then(|n| actions.checked_pow(n))
            .filter(|_| players >= 1 && actions >= 1)
            .ok_or_else(|| PsroError::Shape(format!("{players} players with {actions} actions")))?;
        if rows.len() != joint {
            return Err(PsroError::Shape(format!(
                "{} rows for {joint} joint actions",
                rows.len()
            )));
        }
        if let Some((r, row)) = rows
            .iter()
            .enumerate()
            .find(|(_, row)| row.len() != players || row.iter().any(|x| !x.is_finite()))
        {
            return Err(PsroError::Shape(format!(
                "row {r} is {row:?}, not {players} finite rewards"
            )));
        }
        let payoffs = (0..players)
            .map(|p| rows.iter().map(|row| row[p]).collect())
            .collect();
        Ok(Self {
            players,
            actions,
            action_names: (0..actions).map(|a| a.to_string()).collect(),
            payoffs,
        })
    }

    /// The stage game of a MatrixGame scenario (its players are every agent of an arena).
    pub fn from_scenario(scenario: &Scenario) -> Result<Self, PsroError> {
        let Substrate::MatrixGame(p) = &scenario.substrate else {
            return Err(PsroError::NotMatrixGame {
                name: scenario.name.clone(),
                substrate: scenario.substrate.name(),
            });
        };
        let rows = p
            .payoffs
            .iter()
            .map(|row| row.iter().map(|&x| f64::from(x)).collect())
            .collect();
        let mut game = Self::new(scenario.agents_per_arena(), usize::from(p.actions), rows)?;
        if p.action_names.len() == game.actions {
            game.action_names = p.action_names.clone();
        }
        Ok(game)
    }

    /// Each player's expected payoff under the mixed `strategies` (K probabilities each).
    pub fn values(&self, strategies: &[Vec<f64>]) -> Vec<f64> {
        let shape = vec![self.actions; self.players];
        (0..self.players)
            .map(|p| {
                let v = values_per_strategy(&self.payoffs[p], &shape, strategies, p);
                v.iter().zip(&strategies[p]).map(|(a, b)| a * b).sum()
            })
            .collect()
    }

    /// The value of each of `player`'s actions against the others' mixed `strategies`.
    pub fn action_values(&self, strategies: &[Vec<f64>], player: usize) -> Vec<f64> {
        let shape = vec![self.actions; self.players];
        values_per_strategy(&self.payoffs[player], &shape, strategies, player)
    }

    /// Each player's gain from its best response: best-response value minus current value.
    pub fn gains(&self, strategies: &[Vec<f64>]) -> Vec<f64> {
        let current = self.values(strategies);
        (0..self.players)
            .map(|p| {
                let best = self
                    .action_values(strategies, p)
                    .into_iter()
                    .fold(f64::NEG_INFINITY, f64::max);
                best - current[p]
            })
            .collect()
    }

    /// NashConv: the sum over players of [`NormalFormGame::gains`].
    pub fn nash_conv(&self, strategies: &[Vec<f64>]) -> f64 {
        self.gains(strategies).iter().sum()
    }

    /// `player`'s best pure response to `strategies`: the lowest action within `1e-12` of the
    /// best value.
    pub fn best_response(&self, strategies: &[Vec<f64>], player: usize) -> usize {
        let v = self.action_values(strategies, player);
        let best = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        v.iter().position(|&x| x >= best - 1e-12).unwrap_or(0)
    }
}

/// PSRO's settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PsroOptions {
    /// Most iterations (meta-game solves).
    pub iterations: usize,
    /// The meta-solver.
    pub meta_solver: MetaSolver,
    /// Each player's first strategy; empty for action 0 for everyone.
    pub initial: Vec<usize>,
}

impl Default for PsroOptions {
    fn default() -> Self {
        Self {
            iterations: 20,
            meta_solver: MetaSolver::Prd(PrdParams::default()),
            initial: Vec::new(),
        }
    }
}

/// One PSRO iteration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PsroIteration {
    /// Iteration, from 0.
    pub iteration: usize,
    /// Each player's population: its actions in the order they were added.
    pub populations: Vec<Vec<usize>>,
    /// Each player's meta-strategy over its population.
    pub meta_strategies: Vec<Vec<f64>>,
    /// The meta-strategies as mixtures over all K actions.
    pub strategies: Vec<Vec<f64>>,
    /// NashConv of `strategies` in the full game.
    pub nashconv: f64,
    /// Each player's best-response gain (they sum to `nashconv`).
    pub gains: Vec<f64>,
    /// Each player's best response to the others' mixtures.
    pub best_responses: Vec<usize>,
}

/// A PSRO run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PsroReport {
    /// The settings.
    pub options: PsroOptions,
    /// Every iteration.
    pub iterations: Vec<PsroIteration>,
    /// Whether it stopped because no player added a strategy (rather than at the limit).
    pub converged: bool,
}

/// The restricted game's payoff tensors: `[player][joint over the populations]`.
pub fn meta_game(game: &NormalFormGame, populations: &[Vec<usize>]) -> Vec<Vec<f64>> {
    let shape: Vec<usize> = populations.iter().map(Vec::len).collect();
    let total: usize = shape.iter().product();
    let mut tensors = vec![Vec::with_capacity(total); game.players];
    let mut index = vec![0usize; shape.len()];
    for _ in 0..total {
        let joint = index
            .iter()
            .zip(populations)
            .fold(0, |acc, (&i, pop)| acc * game.actions + pop[i]);
        for (p, t) in tensors.iter_mut().enumerate() {
            t.push(game.payoffs[p][joint]);
        }
        for q in (0..shape.len()).rev() {
            index[q] += 1;
            if index[q] < shape[q] {
                break;
            }
            index[q] = 0;
        }
    }
    tensors
}

/// Runs PSRO (see the module docs).
pub fn psro(game: &NormalFormGame, options: &PsroOptions) -> Result<PsroReport, PsroError> {
    if options.iterations == 0 {
        return Err(PsroError::NoIterations);
    }
    let mut populations: Vec<Vec<usize>> = (0..game.players)
        .map(|p| vec![options.initial.get(p).copied().unwrap_or(0)])
        .collect();
    for (player, pop) in populations.iter().enumerate() {
        if pop[0] >= game.actions {
            return Err(PsroError::BadInitial {
                player,
                action: pop[0],
                actions: game.actions,
            });
        }
    }
    let mut iterations = Vec::new();
    let mut converged = false;
    for iteration in 0..options.iterations {
        let shape: Vec<usize> = populations.iter().map(Vec::len).collect();
        let meta = meta_game(game, &populations);
        let meta_strategies = options.meta_solver.solve(&meta, &shape);
        let strategies: Vec<Vec<f64>> = populations
            .iter()
            .zip(&meta_strategies)
            .map(|(pop, sigma)| {
                let mut full = vec![0.0; game.actions];
                for (&a, &w) in pop.iter().zip(sigma) {
                    full[a] += w;
                }
                full
            })
            .collect();
        let gains = game.gains(&strategies);
        let best_responses: Vec<usize> = (0..game.players)
            .map(|p| game.best_response(&strategies, p))
            .collect();
        iterations.push(PsroIteration {
            iteration,
            populations: populations.clone(),
            meta_strategies,
            strategies,
            nashconv: gains.iter().sum(),
            gains,
            best_responses: best_responses.clone(),
        });
        let mut added = false;
        for (pop, br) in populations.iter_mut().zip(best_responses) {
            if !pop.contains(&br) {
                pop.push(br);
                added = true;
            }
        }
        if !added {
            converged = true;
            break;
        }
    }
    Ok(PsroReport {
        options: options.clone(),
        iterations,
        converged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_game_picks_the_population_rows() {
        // 2 players, 3 actions; payoff of player 0 = 10 a0 + a1.
        let rows = (0..9)
            .map(|j| vec![(10 * (j / 3) + j % 3) as f64, 0.0])
            .collect();
        let game = NormalFormGame::new(2, 3, rows).unwrap();
        let t = meta_game(&game, &[vec![2, 0], vec![1]]);
        assert_eq!(t[0], vec![21.0, 1.0]);
    }
}
