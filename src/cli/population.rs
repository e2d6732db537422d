//! `gridarena eval --crossplay`, `--scenario-set` and `--schelling`: the population side of
//! `eval` (see `gridarena::population`). Each prints a table (or one JSON object with
//! `--json`) and, with `--out DIR`, writes its JSON file there for `gridarena report`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;

use gridarena::population::crossplay::crossplay;
use gridarena::population::members::{Member, expand, scenario_of};
use gridarena::population::scenario_set::{ScenarioSet, evaluate_set};
use gridarena::population::schelling::schelling;
use gridarena::population::{Population, PopulationError};
use gridarena::scenario::{LoadedScenario, Scenario};

#[derive(Args, Debug)]
pub(crate) struct PopulationArgs {
    /// Cross-play: every member of POP_A (rows) with every member of POP_B (columns). A
    /// population is a manifest file or a run directory (its replicas).
    #[arg(long, num_args = 2, value_names = ["POP_A", "POP_B"])]
    pub(crate) crossplay: Option<Vec<PathBuf>>,
    /// With --crossplay: the learner slots the row member fills (comma-separated; the column
    /// member fills the rest).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    row_slots: Vec<usize>,
    /// Evaluate the focal population (--population) on every scenario of a scenario set.
    #[arg(long, value_name = "FILE", requires = "population")]
    pub(crate) scenario_set: Option<PathBuf>,
    /// With --scenario-set: the population under test (manifest file or run directory).
    #[arg(long, value_name = "POP")]
    population: Option<PathBuf>,
    /// A Schelling diagram: the return of a player that cooperates or defects against the
    /// number of other players that cooperate.
    #[arg(long, requires_all = ["cooperator", "defector"])]
    pub(crate) schelling: bool,
    /// With --schelling: the cooperating policy (`random`, `scripted:NAME`, `RUN` or `RUN#K`).
    #[arg(long, value_name = "MEMBER")]
    cooperator: Option<String>,
    /// With --schelling: the defecting policy.
    #[arg(long, value_name = "MEMBER")]
    defector: Option<String>,
    /// With --crossplay or --schelling: the scenario (default: the first run member's).
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Seed of the evaluation arenas and of the background draws.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the result's JSON file (crossplay.json, scenario_set.json and scores.json, or
    /// schelling.json) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

impl PopulationArgs {
    /// Whether any population evaluation was asked for.
    pub(crate) fn asked(&self) -> bool {
        self.crossplay.is_some() || self.scenario_set.is_some() || self.schelling
    }
}

fn bar(show: bool, what: &str) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(0);
    b.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{what:<12} {{bar:30}} {{pos}}/{{len}} {{elapsed}} (eta {{eta}})"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    b
}

/// The scenario to play: `--scenario`, else the first run member's own.
fn scenario_for(explicit: Option<&Path>, members: &[Member]) -> Result<LoadedScenario> {
    match explicit {
        Some(p) => Scenario::load(p).with_context(|| format!("--scenario {}", p.display())),
        None => Ok(scenario_of(members)?),
    }
}

fn write_json(out: Option<&Path>, name: &str, value: &impl serde::Serialize) -> Result<()> {
    let Some(dir) = out else { return Ok(()) };
    let path = gridarena::population::write_json(dir, name, value)?;
    println!("wrote {}", path.display());
    Ok(())
}

/// Runs the population evaluation `args` asks for.
pub(crate) fn run(
    args: &PopulationArgs,
    episodes: usize,
    json: bool,
    device: gridarena::critic::Device,
) -> Result<()> {
    let device = gridarena::critic::choose_device(device)?;
    let show = !json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let out = args.out.as_deref();
    if let Some(pops) = &args.crossplay {
        let (a, b) = (open(&pops[0])?, open(&pops[1])?);
        let mut members = expand(&a)?;
        members.extend(expand(&b)?);
        let loaded = scenario_for(args.scenario.as_deref(), &members)?;
        let b_ = bar(show, "cross-play");
        let m = crossplay(
            &loaded,
            &a,
            &b,
            &args.row_slots,
            episodes,
            args.seed,
            &device,
            &b_,
        )?;
        b_.finish_and_clear();
        write_json(out, "crossplay.json", &m)?;
        if json {
            println!("{}", serde_json::to_string(&m)?);
            return Ok(());
        }
        println!(
            "cross-play on {}: {} episodes per cell; rows {} (slots {:?}), columns {}; per-capita return ± 95% CI",
            m.scenario, m.episodes, m.row_population, m.row_slots, m.col_population
        );
        print_matrix(&m.rows, &m.cols, &m.mean, &m.ci95);
        println!("the row member's own return (mean over its slots) ± 95% CI");
        print_matrix(&m.rows, &m.cols, &m.row_mean, &m.row_ci95);
        if let Some((d, o)) = m.self_and_cross() {
            println!("diagonal (self-play) {d:.3}, off-diagonal (cross-play) {o:.3}");
        }
        return Ok(());
    }
    if let Some(set_file) = &args.scenario_set {
        let Some(pop) = &args.population else {
            bail!("--scenario-set needs --population POP");
        };
        let set = ScenarioSet::load(set_file)?;
        let population = open(pop)?;
        let b_ = bar(show, "scenarios");
        let r = evaluate_set(&set, &population, episodes, args.seed, &device, &b_)?;
        b_.finish_and_clear();
        write_json(out, "scenario_set.json", &r)?;
        write_json(out, "scores.json", &r.scores())?;
        if json {
            println!("{}", serde_json::to_string(&r)?);
            return Ok(());
        }
        println!(
            "{} on scenario set {} ({} members); focal per-capita return ± 95% CI, normalised between the baselines",
            r.population,
            r.set,
            r.members.len()
        );
        for s in &r.scenarios {
            let norm = match (s.normalised, s.baselines_apart) {
                (None, _) => "n/a (the baselines tie)".to_string(),
                (Some(x), true) => format!("{x:.3}"),
                (Some(x), false) => format!("{x:.3} (noise: the baselines' intervals overlap)"),
            };
            println!(
                "  {}: {:.3} ± {:.3}, normalised {norm} (0 = {} {:.3}, 1 = {} {:.3}); focal {:?} of {} slots; collective {:.2}, equality {:.3}",
                s.name,
                s.focal_return,
                s.focal_ci95,
                s.baselines[0].0,
                s.baselines[0].1,
                s.baselines[1].0,
                s.baselines[1].1,
                s.focal_slots,
                s.players,
                s.social.collective_return,
                s.social.equality
            );
        }
        return Ok(());
    }
    let (Some(c), Some(d)) = (&args.cooperator, &args.defector) else {
        bail!("--schelling needs --cooperator MEMBER and --defector MEMBER");
    };
    let (c, d) = (Member::parse(c)?, Member::parse(d)?);
    let loaded = scenario_for(args.scenario.as_deref(), &[c.clone(), d.clone()])?;
    let s = schelling(&loaded, &c, &d, episodes, args.seed, &device)?;
    write_json(out, "schelling.json", &s)?;
    if json {
        println!("{}", serde_json::to_string(&s)?);
        return Ok(());
    }
    println!(
        "Schelling diagram on {}: {} players, {} episodes per point; return of slot 0",
        s.scenario, s.players, s.episodes
    );
    println!(
        "  others cooperating   cooperator ({})   defector ({})",
        s.cooperator, s.defector
    );
    for p in &s.points {
        println!(
            "  {:>18}   {:>8.3} ± {:.3}   {:>8.3} ± {:.3}",
            p.others_cooperating,
            p.cooperator_return,
            p.cooperator_ci95,
            p.defector_return,
            p.defector_ci95
        );
    }
    println!(
        "a social dilemma (defecting pays whatever the others do, all cooperating beats all defecting): {}",
        if s.is_dilemma() { "yes" } else { "no" }
    );
    Ok(())
}

fn print_matrix(rows: &[String], cols: &[String], mean: &[Vec<f64>], ci95: &[Vec<f64>]) {
    let w = cols.iter().map(String::len).max().unwrap_or(0).max(14);
    let lw = rows.iter().map(String::len).max().unwrap_or(0);
    print!("{:lw$}", "");
    for c in cols {
        print!("  {c:>w$}");
    }
    println!();
    for (i, r) in rows.iter().enumerate() {
        print!("{r:lw$}");
        for j in 0..cols.len() {
            print!("  {:>w$}", format!("{:.2}±{:.2}", mean[i][j], ci95[i][j]));
        }
        println!();
    }
}

fn open(path: &Path) -> Result<Population, PopulationError> {
    Population::open(path)
}
