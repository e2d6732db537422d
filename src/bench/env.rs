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
