//! `gridarena plot`: write a run's learning-curve PNG.

use std::path::Path;

use anyhow::Result;

/// Plots `run`'s metrics.jsonl into its learning_curve.png.
pub(crate) fn run(run: &Path) -> Result<()> {
    let png = gridarena::train::plot::plot_run(run).map_err(anyhow::Error::msg)?;
    println!("wrote {}", png.display());
    Ok(())
}
