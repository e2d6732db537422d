//! `gridarena plot`: write a run's learning-curve PNG (and a sweep's per-grid-point plot and
//! ranking).

use std::path::Path;

use anyhow::Result;

/// Plots `run`'s metrics.jsonl into its learning_curve.png; for a sweep also sweep.png, and
/// prints the grid points ranked by final return.
pub(crate) fn run(run: &Path) -> Result<()> {
    let png = gridarena::train::plot::plot_run(run).map_err(anyhow::Error::msg)?;
    println!("wrote {}", png.display());
    let cfg = gridarena::train::run_dir::RunDir::load_config(run)?;
    if !cfg.sweep.is_empty() {
        let png = gridarena::train::plot::plot_sweep(run).map_err(anyhow::Error::msg)?;
        println!("wrote {}", png.display());
        let table = gridarena::train::sweep_report::rank_run(run).map_err(anyhow::Error::msg)?;
        println!("{}", table.render());
    }
    Ok(())
}
