//! Schelling diagrams for social dilemmas: a player's return as a function of how many of the
//! other players cooperate, once when it cooperates and once when it defects. The cooperator
//! and the defector are any two members (scripted, trained or random). Slot 0 is the player
//! measured; slots 1..=k cooperate and the rest defect.

use serde::{Deserialize, Serialize};

use super::members::{Member, open};
use super::mix::SlotMix;
use super::{PopulationError, learners};
use crate::critic::Chosen;
use crate::scenario::LoadedScenario;
use crate::train::eval::play_episodes;
use crate::train::mean_ci;

/// One point of the diagram: `others_cooperating` of the other players cooperate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SchellingPoint {
    /// How many of the other players cooperate.
    pub others_cooperating: usize,
    /// The measured player's mean return when it cooperates.
    pub cooperator_return: f64,
    /// When it defects.
    pub defector_return: f64,
    /// 95% half-widths.
    pub cooperator_ci95: f64,
    /// 95% half-width of the defector's return.
    pub defector_ci95: f64,
}

/// A Schelling diagram (`schelling.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Schelling {
    /// The scenario's name.
    pub scenario: String,
    /// Learner slots.
    pub players: usize,
    /// The cooperating member's name.
    pub cooperator: String,
    /// The defecting member's name.
    pub defector: String,
    /// Episodes per point and side.
    pub episodes: usize,
    /// One point per number of other cooperators, 0..players.
    pub points: Vec<SchellingPoint>,
}

impl Schelling {
    /// Whether the diagram shows a social dilemma in Schelling's sense: defecting pays more
    /// than cooperating whatever the others do, yet everyone cooperating beats everyone
    /// defecting.
    pub fn is_dilemma(&self) -> bool {
        let (Some(first), Some(last)) = (self.points.first(), self.points.last()) else {
            return false;
        };
        self.points
            .iter()
            .all(|p| p.defector_return > p.cooperator_return)
            && last.cooperator_return > first.defector_return
    }
}

/// The diagram of `cooperator` against `defector` on `loaded`.
pub fn schelling(
    loaded: &LoadedScenario,
    cooperator: &Member,
    defector: &Member,
    episodes: usize,
    seed: u64,
    device: &Chosen,
) -> Result<Schelling, PopulationError> {
    let n = learners(loaded);
    if n < 2 {
        return Err(PopulationError::Invalid(format!(
            "`{}` has {n} learner slot: a Schelling diagram needs two or more players",
            loaded.scenario.name
        )));
    }
    let episodes = episodes.max(1);
    let mut c = open(cooperator, loaded, episodes, seed, device)?;
    let mut d = open(defector, loaded, episodes, seed, device)?;
    let mut points = Vec::new();
    for k in 0..n {
        let mut side = |measured_cooperates: bool| -> Result<(f64, f64), PopulationError> {
            // Member 0 cooperates, member 1 defects.
            let rows: Vec<usize> = (0..episodes * n)
                .map(|row| match row % n {
                    0 => usize::from(!measured_cooperates),
                    i if i <= k => 0,
                    _ => 1,
                })
                .collect();
            let mut mix = SlotMix::new(vec![c.as_mut(), d.as_mut()], rows);
            let (eps, _) = play_episodes(loaded, episodes, seed, &mut mix)?;
            let r: Vec<f64> = eps.iter().map(|e| e.returns[0] as f64).collect();
            Ok(mean_ci(&r))
        };
        let (cr, cc) = side(true)?;
        let (dr, dc) = side(false)?;
        points.push(SchellingPoint {
            others_cooperating: k,
            cooperator_return: cr,
            defector_return: dr,
            cooperator_ci95: cc,
            defector_ci95: dc,
        });
    }
    Ok(Schelling {
        scenario: loaded.scenario.name.clone(),
        players: n,
        cooperator: cooperator.name(),
        defector: defector.name(),
        episodes,
        points,
    })
}
