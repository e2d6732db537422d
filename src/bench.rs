//! `gridarena bench env`: environment throughput under a uniformly random policy.

use std::time::Instant;

use rand_core::Rng;
use rayon::prelude::*;

use crate::engine::EnvBatch;
use crate::error::EngineError;
use crate::rng::{Purpose, below, stream};
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

/// The median of a non-empty sample (0 when empty).
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        0.5 * (v[k - 1] + v[k])
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

/// What `gridarena bench critic` measures.
#[derive(Debug, Clone)]
pub struct CriticBenchConfig {
    /// The stack.
    pub spec: crate::critic::StackSpec,
    /// Rows per update (spread evenly over the networks).
    pub rows: usize,
    /// Timed updates per repeat.
    pub updates: usize,
    /// Repeats; the median is reported.
    pub repeat: usize,
}

/// Rows per second of each repeat of full updates (forward, loss, backward, optimiser step).
#[derive(Debug, Clone)]
pub struct CriticBenchResult {
    /// Rows/s per repeat.
    pub rows_per_s: Vec<f64>,
    /// Floating-point operations per row of one update.
    pub flops_per_row: usize,
}

impl CriticBenchResult {
    /// Median rows per second.
    pub fn median_rows(&self) -> f64 {
        median(&self.rows_per_s)
    }

    /// Achieved GFLOP/s at the median.
    pub fn gflops(&self) -> f64 {
        self.median_rows() * self.flops_per_row as f64 / 1e9
    }
}

/// The synthetic batch every critic benchmark trains on: u8 observations, row r on network
/// r mod K, random actions and targets.
pub struct CriticBatch {
    /// `[R, D]` observation bytes.
    pub obs: Vec<u8>,
    /// Network per row.
    pub nets: Vec<u32>,
    /// Chosen action per row.
    pub actions: Vec<u32>,
    /// Target per row.
    pub targets: Vec<f32>,
}

impl CriticBatch {
    /// A deterministic batch for `spec` with `rows` rows.
    pub fn new(spec: &crate::critic::StackSpec, rows: usize) -> CriticBatch {
        let mut rng = stream(0, 0, Purpose::Policy);
        CriticBatch {
            obs: (0..rows * spec.input)
                .map(|_| below(rng.next_u32(), 3) as u8)
                .collect(),
            nets: (0..rows).map(|r| (r % spec.nets) as u32).collect(),
            actions: (0..rows)
                .map(|_| below(rng.next_u32(), spec.head as u32))
                .collect(),
            targets: (0..rows)
                .map(|_| (rng.next_u32() >> 8) as f32 / (1 << 24) as f32)
                .collect(),
        }
    }
}

/// Times full updates on the CPU backend (in the current rayon pool).
pub fn bench_critic_cpu(
    cfg: &CriticBenchConfig,
) -> Result<CriticBenchResult, crate::critic::CriticError> {
    use crate::critic::{AdamConfig, Input, cpu::CpuCritic, loss::Loss};
    let mut critic = CpuCritic::new(cfg.spec, 0)?;
    let batch = CriticBatch::new(&cfg.spec, cfg.rows);
    let adam = AdamConfig::default();
    let loss = Loss::Mse {
        actions: &batch.actions,
        targets: &batch.targets,
        mask: None,
    };
    let update = |critic: &mut CpuCritic| -> Result<(), crate::critic::CriticError> {
        critic.forward(Input::U8(&batch.obs), &batch.nets)?;
        critic.loss_backward(&loss)?;
        critic.step(&adam);
        Ok(())
    };
    for _ in 0..3 {
        update(&mut critic)?;
    }
    let mut rows_per_s = Vec::with_capacity(cfg.repeat);
    for _ in 0..cfg.repeat.max(1) {
        let start = Instant::now();
        for _ in 0..cfg.updates {
            update(&mut critic)?;
        }
        rows_per_s.push((cfg.rows * cfg.updates) as f64 / start.elapsed().as_secs_f64());
    }
    Ok(CriticBenchResult {
        rows_per_s,
        flops_per_row: cfg.spec.update_flops_per_row(),
    })
}

/// The GEMM crate's own throughput here: one square f32 product of side `n` per thread, all
/// threads at once (matrixmultiply through ndarray), in GFLOP/s, the best of `repeat` (a peak).
pub fn gemm_peak_gflops(n: usize, repeat: usize) -> f64 {
    use ndarray::Array2;
    let threads = rayon::current_num_threads();
    let a = Array2::<f32>::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3) % 11) as f32 * 0.1);
    let b = a.t().to_owned();
    let mut cs: Vec<Array2<f32>> = (0..threads).map(|_| Array2::<f32>::zeros((n, n))).collect();
    let mut rates = Vec::new();
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        cs.par_iter_mut()
            .for_each(|c| ndarray::linalg::general_mat_mul(1.0, &a, &b, 0.0, c));
        let secs = start.elapsed().as_secs_f64();
        rates.push(2.0 * (n * n * n * threads) as f64 / secs / 1e9);
    }
    rates.into_iter().fold(0.0, f64::max)
}
