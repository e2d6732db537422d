//! `gridarena bench critic`: rows per second of full critic updates (forward, loss, backward,
//! optimiser step) on either backend, and the GEMM crate's own peak for comparison.

use std::time::Instant;

use rand_core::Rng;
use rayon::prelude::*;

use super::median;
use crate::critic::cpu::{CpuCritic, profile, profile::Profile};
use crate::critic::loss::Loss;
use crate::critic::{AdamConfig, CriticBackend, CriticError, Input, StackSpec};
use crate::rng::{Purpose, below, stream};

/// What `gridarena bench critic` measures.
#[derive(Debug, Clone)]
pub struct CriticBenchConfig {
    /// The stack.
    pub spec: StackSpec,
    /// Rows per update (spread evenly over the networks).
    pub rows: usize,
    /// Timed updates per repeat.
    pub updates: usize,
    /// Repeats; the median is reported.
    pub repeat: usize,
    /// Fraction of non-zero observation bytes (values 1..=3); `None`: uniform in 0..=2 (2/3).
    pub density: Option<f32>,
    /// The CPU backend's sparse-first-layer threshold; `None`: its default.
    pub sparse_threshold: Option<f32>,
    /// Collect the CPU backend's time breakdown ([`crate::critic::cpu::profile`]).
    pub profile: bool,
}

/// Rows per second of each repeat of full updates (forward, loss, backward, optimiser step).
#[derive(Debug, Clone)]
pub struct CriticBenchResult {
    /// Rows/s per repeat.
    pub rows_per_s: Vec<f64>,
    /// Floating-point operations per row of one update.
    pub flops_per_row: usize,
    /// The CPU time breakdown over the warm-up and timed updates, when asked.
    pub profile: Option<Profile>,
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
    /// A deterministic batch for `spec` with `rows` rows (bytes uniform in 0..=2).
    pub fn new(spec: &StackSpec, rows: usize) -> CriticBatch {
        CriticBatch::with_density(spec, rows, None)
    }

    /// A deterministic batch whose bytes are non-zero (1..=3) with probability `density`, or
    /// uniform in 0..=2 when `None`.
    pub fn with_density(spec: &StackSpec, rows: usize, density: Option<f32>) -> CriticBatch {
        let mut rng = stream(0, 0, Purpose::Policy);
        let byte = |r: u32| match density {
            None => below(r, 3) as u8,
            Some(p) if ((r >> 8) as f32) < p * (1 << 24) as f32 => 1 + below(r, 3) as u8,
            Some(_) => 0,
        };
        CriticBatch {
            obs: (0..rows * spec.input)
                .map(|_| byte(rng.next_u32()))
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

    /// The MSE loss on the batch's actions and targets.
    fn loss(&self) -> Loss<'_> {
        Loss::Mse {
            actions: &self.actions,
            targets: &self.targets,
            mask: None,
        }
    }
}

/// Three untimed updates, then `cfg.repeat` timed repeats of `cfg.updates` updates. `sync`
/// waits for the device: once after the warm-up and inside the timing at the end of each repeat
/// (a no-op for the CPU, whose updates are done when they return).
fn time_updates<C>(
    cfg: &CriticBenchConfig,
    critic: &mut C,
    update: impl Fn(&mut C) -> Result<(), CriticError>,
    sync: impl Fn(&mut C) -> Result<(), CriticError>,
) -> Result<CriticBenchResult, CriticError> {
    for _ in 0..3 {
        update(critic)?;
    }
    sync(critic)?;
    let mut rows_per_s = Vec::with_capacity(cfg.repeat);
    for _ in 0..cfg.repeat.max(1) {
        let start = Instant::now();
        for _ in 0..cfg.updates {
            update(critic)?;
        }
        sync(critic)?;
        rows_per_s.push((cfg.rows * cfg.updates) as f64 / start.elapsed().as_secs_f64());
    }
    Ok(CriticBenchResult {
        rows_per_s,
        flops_per_row: cfg.spec.update_flops_per_row(),
        profile: None,
    })
}

/// Times full updates on the CPU backend (in the current rayon pool).
pub fn bench_critic_cpu(cfg: &CriticBenchConfig) -> Result<CriticBenchResult, CriticError> {
    let mut critic = CpuCritic::new(cfg.spec, 0)?;
    if let Some(t) = cfg.sparse_threshold {
        critic.set_sparse_threshold(t);
    }
    let batch = CriticBatch::with_density(&cfg.spec, cfg.rows, cfg.density);
    let (adam, loss) = (AdamConfig::default(), batch.loss());
    let update = |critic: &mut CpuCritic| -> Result<(), CriticError> {
        // The forward without copying its output out, as the loss reads it in place.
        critic.forward_rows(Input::U8(&batch.obs), &batch.nets)?;
        critic.loss_backward(&loss)?;
        critic.step(&adam)?;
        Ok(())
    };
    if cfg.profile {
        profile::take();
        profile::enable(true);
    }
    let result = time_updates(cfg, &mut critic, update, |_| Ok(()));
    let breakdown = cfg.profile.then(|| {
        profile::enable(false);
        let mut p = profile::take();
        p.updates = (3 + cfg.repeat.max(1) * cfg.updates) as u64;
        p
    });
    Ok(CriticBenchResult {
        profile: breakdown,
        ..result?
    })
}

/// Times full updates on the GPU backend, on adapter `adapter` of the enumeration (waiting for
/// the device at the end of each repeat).
#[cfg(feature = "gpu")]
pub fn bench_critic_gpu(
    cfg: &CriticBenchConfig,
    adapter: usize,
) -> Result<CriticBenchResult, CriticError> {
    use crate::critic::gpu::GpuCritic;
    let mut critic = GpuCritic::on_adapter(cfg.spec, 0, adapter)?;
    let batch = CriticBatch::with_density(&cfg.spec, cfg.rows, cfg.density);
    let (adam, loss) = (AdamConfig::default(), batch.loss());
    let update = |c: &mut GpuCritic| -> Result<(), CriticError> {
        // The forward without reading its output back, as the loss reads it on the device.
        c.run_forward(Input::U8(&batch.obs), &batch.nets)?;
        c.loss_backward(&loss)?;
        c.step(&adam)?;
        Ok(())
    };
    // Reading the loss back waits for the device.
    time_updates(cfg, &mut critic, update, |c| c.last_loss().map(|_| ()))
}

/// The GEMM crate's own throughput here: one square f32 product of side `n` per thread, all
/// threads at once (faer's `gemm`, as the critic calls it), in GFLOP/s, the best of `repeat`
/// (a peak).
pub fn gemm_peak_gflops(n: usize, repeat: usize) -> f64 {
    use crate::simd::gemm::{Matrix, product};
    let threads = rayon::current_num_threads();
    let a: Vec<f32> = (0..n * n)
        .map(|k| (((k / n) * 7 + (k % n) * 3) % 11) as f32 * 0.1)
        .collect();
    let mut cs: Vec<Vec<f32>> = (0..threads).map(|_| vec![0.0; n * n]).collect();
    let mut rates = Vec::new();
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        cs.par_iter_mut().for_each(|c| {
            let a = Matrix::row_major(&a, n, n);
            product(a, a.t(), c, false);
        });
        let secs = start.elapsed().as_secs_f64();
        rates.push(2.0 * (n * n * n * threads) as f64 / secs / 1e9);
    }
    rates.into_iter().fold(0.0, f64::max)
}
