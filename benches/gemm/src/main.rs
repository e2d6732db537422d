//! Times single-precision GEMM candidates on the CPU learner's shapes and prints one line per
//! (candidate, threads, shape): `NAME THREADS MxKxN GFLOPS MAXDIFF`. Every candidate is checked
//! against matrixmultiply's product on the same inputs (MAXDIFF, the largest absolute
//! difference).
//!
//! Usage: gemm-candidates THREADS

use std::time::Instant;

/// The shapes: a square reference and the critic's forward and backward products (rows x
/// fan-in x fan-out: hidden layers, the sparse first layer's dense equivalent on Pursuit, the
/// coin game's input layer, and the weight gradient's long inner dimension).
const SHAPES: [(usize, usize, usize); 5] = [
    (512, 512, 512),
    (1024, 128, 128),
    (1024, 147, 128),
    (4096, 38, 128),
    (128, 1024, 128),
];

/// Seconds per call of `f`: the best of 9 timed batches of about 0.2 GFLOP each, after warm-up.
fn seconds(flop: f64, f: &mut dyn FnMut()) -> f64 {
    for _ in 0..3 {
        f();
    }
    let reps = ((2e8 / flop) as usize).max(1);
    let mut best = f64::INFINITY;
    for _ in 0..9 {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() / reps as f64);
    }
    best
}

/// C = A B for row-major A `[m, k]`, B `[k, n]`, C `[m, n]`, with matrixmultiply.
fn matrixmultiply(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    // SAFETY: the asserts above keep every access of the row-major strides given (rows of
    // k, n and n elements, unit column stride) inside the three slices, and `c` is a unique
    // borrow that aliases neither input.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// The same with faer's `gemm` (`threads` > 1: its rayon parallelism).
fn faer_gemm(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32], threads: usize) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    let par = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    // SAFETY: as above: the row-major strides (row stride k, n, n; column stride 1) stay
    // inside the slices the asserts bound, `c` aliases neither input, and with
    // `read_dst: false` the destination's old contents are never read.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            par,
        );
    }
}

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|t| t.parse().ok())
        .unwrap_or(1);
    // matrixmultiply reads its thread count from the environment (run.sh sets it); rayon's
    // pool is sized here for faer's.
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .expect("one global pool");
    for (m, k, n) in SHAPES {
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7919) % 97) as f32 / 97.0 - 0.5)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 104_729) % 89) as f32 / 89.0 - 0.5)
            .collect();
        let flop = 2.0 * (m * k * n) as f64;
        let mut reference = vec![0f32; m * n];
        matrixmultiply(m, k, n, &a, &b, &mut reference);
        let mut c = vec![0f32; m * n];
        let s = seconds(flop, &mut || matrixmultiply(m, k, n, &a, &b, &mut c));
        println!(
            "matrixmultiply {threads} {m}x{k}x{n} {:.1} 0",
            flop / s / 1e9
        );
        let s = seconds(flop, &mut || faer_gemm(m, k, n, &a, &b, &mut c, threads));
        let diff = c
            .iter()
            .zip(&reference)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        println!(
            "faer-gemm {threads} {m}x{k}x{n} {:.1} {diff:e}",
            flop / s / 1e9
        );
    }
}
