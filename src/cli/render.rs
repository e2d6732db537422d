//! `gridarena render`: draw a recorded rollout headless into a GIF or PNG frames.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

#[derive(Args, Debug)]
pub(crate) struct RenderArgs {
    /// Rollout file (from `gridarena rollout`).
    rollout: PathBuf,
    /// Output: FILE.gif, or a directory for PNG frames.
    #[arg(long)]
    out: PathBuf,
    /// Pixels per grid cell.
    #[arg(long, default_value_t = 24)]
    cell: u32,
    /// GIF frames per second.
    #[arg(long, default_value_t = 10)]
    fps: u32,
    /// Render only the first N frames.
    #[arg(long)]
    frames: Option<usize>,
}

/// Renders the rollout and prints the frame count, size and timings.
pub(crate) fn run(args: RenderArgs) -> Result<()> {
    anyhow::ensure!(
        (1..=256).contains(&args.cell),
        "--cell {}: between 1 and 256 pixels",
        args.cell
    );
    let rollout = gridarena::rollout::Rollout::load(&args.rollout)?;
    let n = args.frames.unwrap_or(usize::MAX).min(rollout.frames.len());
    let bar = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        indicatif::ProgressBar::new(n as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let s = gridarena::render::output::render_rollout(
        &rollout,
        &args.out,
        args.cell,
        args.fps,
        args.frames,
        &bar,
    )
    .with_context(|| format!("rendering {}", args.rollout.display()))?;
    bar.finish_and_clear();
    println!(
        "rendered {} frames of {}x{} px to {} on {}: drawing {:.2} s ({:.0} frames/s), encoding {:.2} s",
        s.frames,
        s.size.0,
        s.size.1,
        s.out.display(),
        s.adapter,
        s.render_seconds,
        s.frames as f64 / s.render_seconds.max(1e-9),
        s.encode_seconds
    );
    Ok(())
}
