//! Throughput benchmarks behind `gridarena bench` (and the helpers benches/ share): environment
//! steps under a random policy ([`bench_env`]) and full critic updates on either backend
//! ([`bench_critic_cpu`], `bench_critic_gpu`). The benchmarks sit on top of `critic` and
//! `engine`; neither imports this module.

mod critic;
mod env;

#[cfg(feature = "gpu")]
pub use critic::bench_critic_gpu;
pub use critic::{
    CriticBatch, CriticBenchConfig, CriticBenchResult, bench_critic_cpu, gemm_peak_gflops,
};
pub use env::{EnvBenchConfig, EnvBenchResult, Observations, bench_env};

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
