//! `gridarena bench env`: environment throughput under a uniformly random policy.

use std::time::Instant;

use super::median;
use crate::engine::EnvBatch;
use crate::error::EngineError;
use crate::policy::RandomPolicy;
use crate::scenario::LoadedScenario;

/// What to measure.
#[derive(Debug, Clone)]
pub struct EnvBenchConfig {
    /// Arenas in the batch.
    pub arenas: usize,
    /// Timed steps per repeat.
    pub steps: usize,
    /// Untimed steps before each repeat.
    pub warmup: usize,
    /// Repeats; the median is reported.
    pub repeat: usize,
    /// Run seed.
    pub seed: u64,
    /// How the step writes the observations.
    pub observations: Observations,
}

/// How a benchmarked step writes the observations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Observations {
    /// Computed by the substrate, as in training.
    #[default]
    Computed,
    /// Filled with one byte, the same bytes written: a ceiling, what the step costs when its
    /// observations cost no more than writing them. Respawns still compute theirs.
    Filled,
}

/// What was measured.
#[derive(Debug, Clone)]
pub struct EnvBenchResult {
    /// Arena-steps per second of each repeat.
    pub env_steps_per_s: Vec<f64>,
    /// Learners per arena.
    pub learners: usize,
    /// Resident memory after the runs.
    pub rss_bytes: Option<u64>,
    /// Peak resident memory.
    pub peak_rss_bytes: Option<u64>,
    /// Rayon threads used.
    pub threads: usize,
}

impl EnvBenchResult {
    /// Median arena-steps per second.
    pub fn median_env_steps(&self) -> f64 {
        median(&self.env_steps_per_s)
    }

    /// Median learner-steps per second (arena-steps times learners per arena).
    pub fn median_agent_steps(&self) -> f64 {
        self.median_env_steps() * self.learners as f64
    }
}

/// Runs the benchmark in the current rayon pool.
pub fn bench_env(
    loaded: &LoadedScenario,
    cfg: &EnvBenchConfig,
) -> Result<EnvBenchResult, EngineError> {
    let mut batch = EnvBatch::new(loaded, cfg.arenas, cfg.seed)?;
    if cfg.observations == Observations::Filled {
        batch.fill_observations();
    }
    let mut policy = RandomPolicy::new(cfg.seed, cfg.arenas, batch.layout().actions);
    let mut rates = Vec::with_capacity(cfg.repeat);
    for _ in 0..cfg.repeat.max(1) {
        for _ in 0..cfg.warmup {
            policy.act(batch.actions_mut());
            batch.step()?;
        }
        let start = Instant::now();
        for _ in 0..cfg.steps {
            policy.act(batch.actions_mut());
            batch.step()?;
        }
        let secs = start.elapsed().as_secs_f64();
        rates.push((cfg.arenas * cfg.steps) as f64 / secs.max(1e-12));
    }
    Ok(EnvBenchResult {
        env_steps_per_s: rates,
        learners: batch.layout().learners,
        rss_bytes: crate::sys::resident_bytes(),
        peak_rss_bytes: crate::sys::peak_resident_bytes(),
        threads: rayon::current_num_threads(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// A filled batch and a computed one, stepped with the same actions: the rules give the
    /// same rewards, ends, positions and counters; the filled observations hold one byte each
    /// step, the computed ones a window.
    #[test]
    fn filled_observations_change_nothing_but_the_observations() {
        let loaded = Scenario::load("assets/scenarios/commons_harvest_open.ron".as_ref()).unwrap();
        let mut computed = EnvBatch::new(&loaded, 4, 9).unwrap();
        let mut filled = EnvBatch::new(&loaded, 4, 9).unwrap();
        filled.fill_observations();
        let actions = computed.layout().actions;
        let mut policy = RandomPolicy::new(3, 4, actions);
        for _ in 0..300 {
            policy.act(computed.actions_mut());
            filled
                .actions_mut()
                .copy_from_slice(&computed.buffers().actions);
            computed.step().unwrap();
            filled.step().unwrap();
            let (c, f) = (computed.buffers(), filled.buffers());
            assert_eq!(c.rewards, f.rewards);
            assert_eq!(c.terminated, f.terminated);
            assert_eq!(c.truncated, f.truncated);
            assert!(f.obs.iter().all(|&b| b == f.obs[0]), "filled with one byte");
            assert!(
                c.obs.iter().any(|&b| b != c.obs[0]),
                "computed windows vary"
            );
        }
        for arena in 0..4 {
            assert_eq!(computed.agents(arena), filled.agents(arena));
            assert_eq!(computed.counters(arena), filled.counters(arena));
        }
    }
}
