//! clean_up's parameters as written in assets, with Melting Pot 2.4's defaults
//! (`meltingpot/configs/substrates/clean_up.py` and its Lua components).

use serde::{Deserialize, Serialize};

/// clean_up parameters (defaults follow Melting Pot 2.4's `clean_up`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CleanUpParams {
    /// Probability per step that an empty apple cell grows an apple while the river is clean
    /// (`AppleGrow.maxAppleGrowthRate`).
    #[serde(default = "default_growth")]
    pub max_growth_rate: f64,
    /// Polluted fraction of the river at and above which no apple grows
    /// (`thresholdDepletion`).
    #[serde(default = "default_depletion")]
    pub threshold_depletion: f64,
    /// Polluted fraction at and below which apples grow at `max_growth_rate`; in between the
    /// rate falls linearly (`thresholdRestoration`). Below `threshold_depletion`.
    #[serde(default)]
    pub threshold_restoration: f64,
    /// Probability per step that one clean river cell, chosen uniformly, becomes polluted
    /// (`DirtSpawner.dirtSpawnProbability`).
    #[serde(default = "default_dirt_prob")]
    pub dirt_spawn_prob: f64,
    /// No pollution appears during the first this many steps (`delayStartOfDirtSpawning`).
    #[serde(default = "default_dirt_delay")]
    pub dirt_spawn_delay: u32,
    /// Reward for eating an apple.
    #[serde(default = "default_reward")]
    pub apple_reward: f32,
    /// Cells the cleaning beam reaches ahead.
    #[serde(default = "default_beam_length")]
    pub clean_beam_length: u8,
    /// Cells the cleaning beam reaches to either side.
    #[serde(default = "default_beam_radius")]
    pub clean_beam_radius: u8,
    /// Steps the cleaning timer waits after a shot.
    #[serde(default = "default_clean_cooldown")]
    pub clean_cooldown: u8,
    /// Cells the zapping beam reaches ahead.
    #[serde(default = "default_beam_length")]
    pub beam_length: u8,
    /// Cells the zapping beam reaches to either side.
    #[serde(default = "default_beam_radius")]
    pub beam_radius: u8,
    /// Steps the zap timer waits after a shot.
    #[serde(default = "default_zap_cooldown")]
    pub zap_cooldown: u8,
    /// Steps a zapped avatar stays out of the arena before it respawns.
    #[serde(default = "default_respawn")]
    pub respawn_frames: u8,
    /// No episode ends at random before this many steps.
    #[serde(default = "default_min_steps")]
    pub min_steps: u32,
    /// After `min_steps`, every this many steps the episode may end...
    #[serde(default = "default_end_every")]
    pub end_every: u32,
    /// ...with this probability (the hard cap is the scenario's `max_steps`).
    #[serde(default = "default_end_prob")]
    pub end_prob: f64,
}

impl Default for CleanUpParams {
    fn default() -> Self {
        CleanUpParams {
            max_growth_rate: default_growth(),
            threshold_depletion: default_depletion(),
            threshold_restoration: 0.0,
            dirt_spawn_prob: default_dirt_prob(),
            dirt_spawn_delay: default_dirt_delay(),
            apple_reward: default_reward(),
            clean_beam_length: default_beam_length(),
            clean_beam_radius: default_beam_radius(),
            clean_cooldown: default_clean_cooldown(),
            beam_length: default_beam_length(),
            beam_radius: default_beam_radius(),
            zap_cooldown: default_zap_cooldown(),
            respawn_frames: default_respawn(),
            min_steps: default_min_steps(),
            end_every: default_end_every(),
            end_prob: default_end_prob(),
        }
    }
}

impl CleanUpParams {
    /// The apple growth probability at polluted fraction `dirt` (Melting Pot's `AppleGrow`:
    /// the rate times `(dirt - depletion) / (restoration - depletion)` capped at 1, never
    /// below 0).
    pub fn growth_probability(&self, dirt: f64) -> f64 {
        let (d, r) = (self.threshold_depletion, self.threshold_restoration);
        let interpolation = ((dirt - d) / (r - d)).min(1.0);
        (self.max_growth_rate * interpolation).max(0.0)
    }
}

fn default_growth() -> f64 {
    0.05
}
fn default_depletion() -> f64 {
    0.4
}
fn default_dirt_prob() -> f64 {
    0.5
}
fn default_dirt_delay() -> u32 {
    50
}
fn default_reward() -> f32 {
    1.0
}
fn default_beam_length() -> u8 {
    3
}
fn default_beam_radius() -> u8 {
    1
}
fn default_clean_cooldown() -> u8 {
    2
}
fn default_zap_cooldown() -> u8 {
    10
}
fn default_respawn() -> u8 {
    50
}
fn default_min_steps() -> u32 {
    1000
}
fn default_end_every() -> u32 {
    100
}
fn default_end_prob() -> f64 {
    0.2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_falls_linearly_from_clean_to_the_depletion_threshold() {
        let p = CleanUpParams::default();
        assert_eq!(p.growth_probability(0.0), 0.05);
        assert!((p.growth_probability(0.2) - 0.025).abs() < 1e-12);
        assert!((p.growth_probability(0.3) - 0.0125).abs() < 1e-12);
        assert_eq!(p.growth_probability(0.4), 0.0);
        assert_eq!(p.growth_probability(0.9), 0.0);
    }
}
