//! An opt-in time breakdown of the CPU backend's passes (`gridarena bench critic --profile`, or
//! the environment variable `GRIDARENA_CPU_PROFILE=1` for any run, printed when the critic is
//! dropped). Off, each span costs one relaxed atomic load.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// What a span of time was spent on. The per-block phases (linear, LayerNorm/ReLU, their
/// gradients) are thread time summed over the blocks run in parallel; `Gather`, `SumUnits`,
/// `Transpose`, `Loss` and `Adam` are the calling thread's wall time around their (parallel)
/// loops; the `Wall*` phases are the wall time of each public operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Rows gathered into network order, u8 converted (and the sparse index built).
    Gather,
    /// The first layer's linear forward (dense GEMM or sparse gather-add).
    FirstLinear,
    /// The other linear forwards (hidden layers and head).
    Linear,
    /// LayerNorm and ReLU forward.
    NormRelu,
    /// Loss and its gradient.
    Loss,
    /// The first layer's weight gradient (dense GEMM or sparse scatter-add).
    FirstGrad,
    /// The other weight/bias gradients and input gradients (GEMMs).
    LinearGrad,
    /// LayerNorm and ReLU backward.
    NormReluGrad,
    /// Per-unit gradients summed per network.
    SumUnits,
    /// The transposed copy of the first layer's weights refreshed.
    Transpose,
    /// Gradient clipping and Adam.
    Adam,
    /// Wall time of `forward` (and `forward_target`).
    WallForward,
    /// Wall time of `loss_backward` / `backward`.
    WallBackward,
    /// Wall time of `step`.
    WallStep,
}

const PHASES: [Phase; 14] = [
    Phase::Gather,
    Phase::FirstLinear,
    Phase::Linear,
    Phase::NormRelu,
    Phase::Loss,
    Phase::FirstGrad,
    Phase::LinearGrad,
    Phase::NormReluGrad,
    Phase::SumUnits,
    Phase::Transpose,
    Phase::Adam,
    Phase::WallForward,
    Phase::WallBackward,
    Phase::WallStep,
];

static ENABLED: AtomicBool = AtomicBool::new(false);
static NANOS: [AtomicU64; PHASES.len()] = [const { AtomicU64::new(0) }; PHASES.len()];
/// Non-zero u8 inputs, all u8 inputs, and forwards that took the sparse path / all forwards.
static COUNTS: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

/// Turns the breakdown on or off (process-wide).
pub fn enable(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether the breakdown is on.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Whether `GRIDARENA_CPU_PROFILE` asks for the breakdown.
pub(crate) fn from_env() -> bool {
    std::env::var_os("GRIDARENA_CPU_PROFILE").is_some_and(|v| v != "0")
}

/// Times until dropped.
pub(crate) struct Span(Option<(Phase, Instant)>);

impl Drop for Span {
    fn drop(&mut self) {
        if let Some((p, t)) = self.0 {
            NANOS[p as usize].fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }
}

/// A span of `phase`, timed when the breakdown is on.
#[inline]
pub(crate) fn span(phase: Phase) -> Span {
    Span(enabled().then(|| (phase, Instant::now())))
}

/// Counts one forward's u8 inputs (non-zero and all) and whether it went sparse.
pub(crate) fn count_input(nonzero: usize, all: usize, sparse: bool) {
    if enabled() {
        COUNTS[0].fetch_add(nonzero as u64, Ordering::Relaxed);
        COUNTS[1].fetch_add(all as u64, Ordering::Relaxed);
        COUNTS[2].fetch_add(sparse as u64, Ordering::Relaxed);
        COUNTS[3].fetch_add(1, Ordering::Relaxed);
    }
}

/// The breakdown so far.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Nanoseconds per phase, in [`Phase`] order.
    pub nanos: Vec<u64>,
    /// Non-zero u8 inputs seen by forwards.
    pub nonzero: u64,
    /// All u8 inputs seen by forwards.
    pub inputs: u64,
    /// Forwards that took the sparse first layer.
    pub sparse_forwards: u64,
    /// All forwards.
    pub forwards: u64,
    /// What the per-update figures divide by (updates, set by the caller; 1 if unset).
    pub updates: u64,
}

/// Returns the breakdown so far and resets it.
pub fn take() -> Profile {
    Profile {
        nanos: NANOS.iter().map(|n| n.swap(0, Ordering::Relaxed)).collect(),
        nonzero: COUNTS[0].swap(0, Ordering::Relaxed),
        inputs: COUNTS[1].swap(0, Ordering::Relaxed),
        sparse_forwards: COUNTS[2].swap(0, Ordering::Relaxed),
        forwards: COUNTS[3].swap(0, Ordering::Relaxed),
        updates: 1,
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per = self.updates.max(1) as f64 * 1e6;
        let work: u64 = self.nanos[..Phase::WallForward as usize].iter().sum();
        let wall: u64 = self.nanos[Phase::WallForward as usize..].iter().sum();
        writeln!(
            f,
            "CPU critic profile, ms per update (per-block phases: thread time summed over blocks)"
        )?;
        for (p, &n) in PHASES.iter().zip(&self.nanos) {
            let share = if (*p as usize) < Phase::WallForward as usize {
                format!("{:5.1}% of work", 100.0 * n as f64 / work.max(1) as f64)
            } else {
                format!("{:5.1}% of wall", 100.0 * n as f64 / wall.max(1) as f64)
            };
            writeln!(
                f,
                "  {:<14} {:9.3}  {share}",
                format!("{p:?}"),
                n as f64 / per
            )?;
        }
        writeln!(
            f,
            "  work {:.3} ms, wall {:.3} ms per update",
            work as f64 / per,
            wall as f64 / per
        )?;
        write!(
            f,
            "  u8 input density {:.4} ({} of {} non-zero); {} of {} forwards sparse",
            self.nonzero as f64 / self.inputs.max(1) as f64,
            self.nonzero,
            self.inputs,
            self.sparse_forwards,
            self.forwards
        )
    }
}
