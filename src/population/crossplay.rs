//! Cross-play: every member of one population paired with every member of another on a
//! scenario. The row member fills the row slots (slot 0 by default) and the column member the
//! others; each cell is the per-capita return (mean over all learners) of `episodes` episodes
//! with its 95% interval. With the same population on both sides the diagonal is self-play and
//! the rest zero-shot coordination.

use serde::{Deserialize, Serialize};

use super::members::{Member, expand, open};
use super::mix::SlotMix;
use super::{Population, PopulationError, learners, mean_over};
use crate::critic::Chosen;
use crate::scenario::LoadedScenario;
use crate::train::eval::play_episodes;
use crate::train::mean_ci;

/// A cross-play matrix (`crossplay.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Crossplay {
    /// The scenario's name.
    pub scenario: String,
    /// Episodes per cell.
    pub episodes: usize,
    /// The row population's name.
    pub row_population: String,
    /// The column population's name.
    pub col_population: String,
    /// Row members' names.
    pub rows: Vec<String>,
    /// Column members' names.
    pub cols: Vec<String>,
    /// The slots the row member fills (the column member fills the rest).
    pub row_slots: Vec<usize>,
    /// Per-capita return per cell `[rows][cols]`.
    pub mean: Vec<Vec<f64>>,
    /// Half-width of its 95% interval.
    pub ci95: Vec<Vec<f64>>,
    /// The row member's own return (mean over the row slots) per cell: in a game that is not
    /// common-payoff, what the row member gets beside the column member.
    #[serde(default)]
    pub row_mean: Vec<Vec<f64>>,
    /// Half-width of its 95% interval.
    #[serde(default)]
    pub row_ci95: Vec<Vec<f64>>,
}

impl Crossplay {
    /// Mean of the diagonal (self-play) and of the rest (cross-play), when both sides are the
    /// same members.
    pub fn self_and_cross(&self) -> Option<(f64, f64)> {
        let n = self.rows.len();
        if self.rows != self.cols || n < 2 {
            return None;
        }
        let (mut d, mut o) = (0.0, 0.0);
        for (i, row) in self.mean.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                if i == j {
                    d += v;
                } else {
                    o += v;
                }
            }
        }
        Some((d / n as f64, o / (n * n - n) as f64))
    }
}

/// The cross-play matrix of `a` (rows) against `b` (columns) on `loaded`; `progress` is told
/// each finished cell.
#[expect(clippy::too_many_arguments)]
pub fn crossplay(
    loaded: &LoadedScenario,
    a: &Population,
    b: &Population,
    row_slots: &[usize],
    episodes: usize,
    seed: u64,
    device: &Chosen,
    progress: &indicatif::ProgressBar,
) -> Result<Crossplay, PopulationError> {
    let n = learners(loaded);
    if row_slots.is_empty() || row_slots.iter().any(|&s| s >= n) || row_slots.len() >= n {
        return Err(PopulationError::Invalid(format!(
            "row slots {row_slots:?}: `{}` has learner slots 0..{n}; the row member needs at least one and the column member at least one",
            loaded.scenario.name
        )));
    }
    let episodes = episodes.max(1);
    let (ma, mb) = (expand(a)?, expand(b)?);
    let open_all = |ms: &[Member]| -> Result<Vec<_>, PopulationError> {
        ms.iter()
            .map(|m| open(m, loaded, episodes, seed, device))
            .collect()
    };
    let (mut pa, mut pb) = (open_all(&ma)?, open_all(&mb)?);
    let assign: Vec<usize> = (0..episodes * n)
        .map(|row| usize::from(!row_slots.contains(&(row % n))))
        .collect();
    let all: Vec<usize> = (0..n).collect();
    progress.set_length((ma.len() * mb.len()) as u64);
    let (mut mean, mut ci95, mut row_mean, mut row_ci95) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for x in pa.iter_mut() {
        let (mut mrow, mut crow, mut rrow, mut rcrow) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for y in pb.iter_mut() {
            let mut mix = SlotMix::new(vec![x.as_mut(), y.as_mut()], assign.clone());
            let (eps, _) = play_episodes(loaded, episodes, seed, &mut mix)?;
            let per: Vec<f64> = eps.iter().map(|e| mean_over(&e.returns, &all)).collect();
            let (m, c) = mean_ci(&per);
            mrow.push(m);
            crow.push(c);
            let own: Vec<f64> = eps
                .iter()
                .map(|e| mean_over(&e.returns, row_slots))
                .collect();
            let (m, c) = mean_ci(&own);
            rrow.push(m);
            rcrow.push(c);
            progress.inc(1);
        }
        mean.push(mrow);
        ci95.push(crow);
        row_mean.push(rrow);
        row_ci95.push(rcrow);
    }
    Ok(Crossplay {
        scenario: loaded.scenario.name.clone(),
        episodes,
        row_population: a.name.clone(),
        col_population: b.name.clone(),
        rows: ma.iter().map(Member::name).collect(),
        cols: mb.iter().map(Member::name).collect(),
        row_slots: row_slots.to_vec(),
        mean,
        ci95,
        row_mean,
        row_ci95,
    })
}
