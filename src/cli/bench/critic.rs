//! `gridarena bench critic`: critic updates (forward, loss, backward, Adam) in rows per second
//! and GFLOP/s, on the CPU or a GPU.

use anyhow::Result;
use clap::Args;

use gridarena::bench::{CriticBenchConfig, bench_critic_cpu, gemm_peak_gflops};
use gridarena::critic::{Chosen, StackSpec, choose_device};

use crate::cli::common::with_pool;

#[derive(Args, Debug)]
pub(crate) struct BenchCriticArgs {
    /// Networks in the stack (K).
    #[arg(long, default_value_t = 8)]
    nets: usize,
    /// Rows per update (spread evenly over the networks).
    #[arg(long, default_value_t = 4096)]
    rows: usize,
    /// Input features (u8 observation bytes).
    #[arg(long, default_value_t = 147)]
    input: usize,
    /// Hidden width.
    #[arg(long, default_value_t = 128)]
    hidden: usize,
    /// Hidden layers.
    #[arg(long, default_value_t = 2)]
    layers: usize,
    /// Head width.
    #[arg(long, default_value_t = 5)]
    head: usize,
    /// Compute device: auto (a hardware GPU if there is one, else the CPU), cpu, gpu or gpu:K
    /// (adapter K of `gridarena devices`).
    #[arg(long, default_value = "auto")]
    device: gridarena::critic::Device,
    /// Timed updates per repeat.
    #[arg(long, default_value_t = 20)]
    updates: usize,
    /// Repeats; the median is reported.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// Worker threads for the CPU backend (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Fraction of non-zero observation bytes (default: bytes uniform in 0..=2, 2/3 non-zero).
    #[arg(long)]
    density: Option<f32>,
    /// CPU: always the dense first layer (GEMM), never the sparse one.
    #[arg(long, conflicts_with = "sparse")]
    dense: bool,
    /// CPU: always the sparse first layer, whatever the density.
    #[arg(long)]
    sparse: bool,
    /// CPU: print where an update's time goes (thread time per phase).
    #[arg(long)]
    profile: bool,
}

/// Times the stack's updates and prints rows/s and GFLOP/s (and the CPU's GEMM peak).
pub(crate) fn run(args: BenchCriticArgs) -> Result<()> {
    let spec = StackSpec {
        network: Default::default(),
        nets: args.nets,
        input: args.input,
        hidden: args.hidden,
        layers: args.layers,
        head: args.head,
    };
    spec.validate().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        args.rows >= 1 && args.updates >= 1,
        "--rows and --updates must be at least 1"
    );
    let cfg = CriticBenchConfig {
        spec,
        rows: args.rows,
        updates: args.updates,
        repeat: args.repeat.max(1),
        density: args.density,
        sparse_threshold: match (args.dense, args.sparse) {
            (true, _) => Some(-1.0),
            (_, true) => Some(1.0),
            _ => None,
        },
        profile: args.profile,
    };
    let chosen = choose_device(args.device)?;
    println!("device: {chosen}");
    println!(
        "stack: K={} nets, input {} (u8), {}x{} LayerNorm MLP, head {}, {} parameters; {} rows per update",
        spec.nets,
        spec.input,
        spec.layers,
        spec.hidden,
        spec.head,
        spec.params(),
        args.rows
    );
    let result = match &chosen {
        Chosen::Cpu { .. } => with_pool(args.threads, || bench_critic_cpu(&cfg))??,
        #[cfg(feature = "gpu")]
        Chosen::Gpu { index, .. } => gridarena::bench::bench_critic_gpu(&cfg, *index)?,
    };
    let rates: Vec<String> = result
        .rows_per_s
        .iter()
        .map(|r| format!("{r:.0}"))
        .collect();
    println!("rows/s per repeat: [{}]", rates.join(", "));
    println!(
        "rows/s (median):   {:.0}  (forward, loss, backward, Adam)",
        result.median_rows()
    );
    println!(
        "GFLOP/s (median):  {:.1}  ({} FLOP per row)",
        result.gflops(),
        result.flops_per_row
    );
    if let Some(p) = &result.profile {
        println!("{p}");
    }
    if matches!(chosen, Chosen::Cpu { .. }) {
        let peak = with_pool(args.threads, || gemm_peak_gflops(512, 9))?;
        println!("GEMM peak here:    {peak:.1} GFLOP/s (faer's gemm, 512^3 per thread, best of 9)");
    }
    Ok(())
}
