//! `gridarena new`: write a commented template scenario for a substrate, or list the substrates.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

use gridarena::scenario::template::{self, TemplateError};

#[derive(Args, Debug)]
pub(crate) struct NewArgs {
    /// The substrate (see `--list`); without one, the substrates are listed.
    substrate: Option<String>,
    /// The file to write, NAME.ron: the scenario is named NAME (letters, digits, '_', '-').
    file: Option<PathBuf>,
    /// Replace the file if it already exists.
    #[arg(long)]
    force: bool,
    /// List the substrates, one line each.
    #[arg(long)]
    list: bool,
}

/// Writes the template (atomically, never over an existing file without `--force`) and prints
/// the commands to run next; or lists the substrates.
pub(crate) fn run(args: NewArgs) -> Result<()> {
    let Some(substrate) = args.substrate.filter(|_| !args.list) else {
        print_list();
        return Ok(());
    };
    // An unknown substrate is refused before the missing file is.
    template::template(&substrate)?;
    let Some(file) = args.file else {
        bail!("give the file to write: gridarena new {substrate} NAME.ron");
    };
    let name = template::write_new(&substrate, &file, args.force).map_err(|e| match e {
        TemplateError::Exists { .. } => anyhow::anyhow!("{e} (pass --force to replace it)"),
        e => anyhow::Error::from(e),
    });
    let name = name.with_context(|| format!("writing the {substrate} template"))?;
    let path = file.display();
    println!(
        "wrote {path}: a {substrate} scenario named {name:?}, every field commented with its \
         default and meaning"
    );
    println!("next:");
    println!("  gridarena check --explain {path}          # validate; what the engine will run");
    println!("  gridarena view --scenario {path} --watch  # watch it in the viewer");
    println!("  gridarena train --scenario {path}         # train its learners");
    Ok(())
}

fn print_list() {
    println!("substrates (gridarena new SUBSTRATE NAME.ron writes a template):");
    let width = template::summaries()
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    for (name, summary) in template::summaries() {
        println!("  {name:width$}  {}", summary.trim());
    }
}
