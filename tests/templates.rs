//! `gridarena new SUBSTRATE NAME.ron` templates: one per substrate, valid as written, naming
//! every `Scenario` field and every substrate parameter with a comment giving its default, and
//! trainable; the binary writes them atomically, never over an existing file unless asked to,
//! and refuses unknown substrates and unusable names.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};

use gridarena::scenario::template::{self, NAME_PLACEHOLDER};
use gridarena::scenario::{
    ChemistryParams, CoinParams, GiftParams, MatrixParams, PursuitParams, Scenario, Substrate,
};
use gridarena::substrate::cue::CueParams;
use gridarena::substrate::goal::GoalParams;
use gridarena::substrate::overcooked::OvercookedParams;
use gridarena::train::config::{NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config};
use gridarena::train::run_dir::RunDir;
use gridarena::train::{TrainOptions, config::RunConfig, train};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gridarena"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("gridarena-templates-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A deserializer that records the field names a struct's `Deserialize` asks for, then fails:
/// serde's own list of the fields, including those left out when serialising.
struct FieldTracer<'a>(&'a mut Vec<&'static str>);

impl<'de> Deserializer<'de> for FieldTracer<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.extend_from_slice(fields);
        Err(de::Error::custom("fields recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// Every field of struct `T`, as serde knows them.
fn fields_of<T: DeserializeOwned>() -> Vec<&'static str> {
    let mut fields = Vec::new();
    let _ = T::deserialize(FieldTracer(&mut fields));
    assert!(
        !fields.is_empty(),
        "{} has no fields",
        std::any::type_name::<T>()
    );
    fields
}

/// The fields of a substrate's parameter struct (a new substrate must be added here: the match
/// is exhaustive).
fn param_fields(s: &Substrate) -> Vec<&'static str> {
    match s {
        Substrate::Pursuit(_) => fields_of::<PursuitParams>(),
        Substrate::GiftRefinements(_) => fields_of::<GiftParams>(),
        Substrate::Chemistry(_) => fields_of::<ChemistryParams>(),
        Substrate::CoinGame(_) => fields_of::<CoinParams>(),
        Substrate::MatrixGame(_) => fields_of::<MatrixParams>(),
        Substrate::WalkToGoal(_) => fields_of::<GoalParams>(),
        Substrate::CueMemory(_) => fields_of::<CueParams>(),
        Substrate::CommonsHarvest(_) => fields_of::<gridarena::substrate::harvest::HarvestParams>(),
        Substrate::CleanUp(_) => fields_of::<gridarena::substrate::cleanup::CleanUpParams>(),
        Substrate::LevelBasedForaging(_) => fields_of::<gridarena::substrate::lbf::LbfParams>(),
        Substrate::Overcooked(_) => fields_of::<OvercookedParams>(),
    }
}

/// The `field:` names in RON text outside string and character literals.
fn ron_field_names(ron: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = ron.chars().peekable();
    let mut ident = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' => {
                ident.clear();
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        chars.next();
                    } else if d == c {
                        break;
                    }
                }
            }
            c if c.is_ascii_alphanumeric() || c == '_' => ident.push(c),
            ':' if !ident.is_empty() => out.push(std::mem::take(&mut ident)),
            _ => ident.clear(),
        }
    }
    out
}

/// The line index where `field:` is written at `indent` spaces, possibly commented out.
fn field_line(lines: &[&str], indent: usize, field: &str) -> Option<usize> {
    let pad = " ".repeat(indent);
    lines.iter().position(|l| {
        l.strip_prefix(&pad).is_some_and(|rest| {
            let rest = rest.strip_prefix("// ").unwrap_or(rest);
            rest.strip_prefix(field).is_some_and(|r| r.starts_with(':'))
        })
    })
}

/// The comment lines right above line `at` (or the trailing comment on it), joined.
fn comment_above(lines: &[&str], at: usize) -> String {
    let mut k = at;
    let mut out = Vec::new();
    while k > 0 && lines[k - 1].trim_start().starts_with("//") {
        k -= 1;
        out.push(lines[k].trim_start());
    }
    out.reverse();
    if !lines[at].trim_start().starts_with("//")
        && let Some((_, trailing)) = lines[at].split_once(" // ")
    {
        out.push(trailing);
    }
    out.join(" ")
}

/// The substrates listed in src/substrate/registry.rs, counted from its text (`... in
/// "folder/mod.rs",` lines).
fn registry_lines() -> usize {
    std::fs::read_to_string("src/substrate/registry.rs")
        .unwrap()
        .lines()
        .filter(|l| l.trim_end().ends_with("/mod.rs\",") && l.contains(" => "))
        .count()
}

#[test]
fn every_substrate_has_one_template_and_it_is_valid_as_written() {
    let templates = template::templates();
    let summaries = template::summaries();
    assert_eq!(
        templates.len(),
        registry_lines(),
        "one template per registry line"
    );
    assert_eq!(summaries.len(), templates.len());
    for ((name, text), (summary_name, summary)) in templates.iter().zip(summaries) {
        assert_eq!(name, summary_name);
        assert!(summary.trim().len() > 10, "{name}: summary {summary:?}");
        let loaded = Scenario::parse(text, &format!("{name}/template.ron"))
            .unwrap_or_else(|e| panic!("{name}'s template: {e}"));
        assert_eq!(loaded.scenario.substrate.name(), *name);
        assert_eq!(loaded.scenario.name, NAME_PLACEHOLDER);
        // Header: what it is and the commands to run next.
        assert!(text.starts_with(&format!("// A {name} scenario")), "{name}");
        let rendered = template::render(name, "my_game").unwrap();
        for command in [
            "gridarena check --explain my_game.ron",
            "gridarena view --scenario my_game.ron --watch",
            "gridarena train --scenario my_game.ron",
        ] {
            assert!(rendered.contains(command), "{name}: no `{command}`");
        }
        let renamed = Scenario::parse(&rendered, "my_game.ron").unwrap();
        assert_eq!(renamed.scenario.name, "my_game");
        assert_eq!(
            renamed.scenario.substrate, loaded.scenario.substrate,
            "renaming changes nothing else"
        );
    }
}

/// Adding a field to `Scenario` or to a substrate's parameters without documenting it in the
/// template fails here: every field is written (possibly commented out) with a comment above it
/// that gives its default or says it is required.
#[test]
fn every_template_names_every_field_with_its_default() {
    let scenario_fields = fields_of::<Scenario>();
    assert!(
        scenario_fields.contains(&"observation"),
        "{scenario_fields:?}"
    );
    for (name, text) in template::templates() {
        let lines: Vec<&str> = text.lines().collect();
        let loaded = Scenario::parse(text, name).unwrap();
        let documented = |indent: usize, field: &str| {
            let at = field_line(&lines, indent, field).unwrap_or_else(|| {
                panic!("{name}'s template has no `{field}:` at indent {indent}")
            });
            let comment = comment_above(&lines, at);
            assert!(
                comment.contains("Default") || comment.contains("Required"),
                "{name}: `{field}` has no default or `Required` in its comment: {comment:?}"
            );
        };
        for field in &scenario_fields {
            documented(4, field);
        }
        let own = param_fields(&loaded.scenario.substrate);
        for field in &own {
            documented(8, field);
        }
        // Nested parameters (chemistry's groups, compounds, reactions) are written out too.
        let saved = ron::to_string(&loaded.scenario.substrate).unwrap();
        let names = ron_field_names(&saved);
        assert!(names.len() >= own.len() / 2, "{name}: serialised {saved}");
        for field in names {
            assert!(
                lines
                    .iter()
                    .any(|l| ron_field_names(l).contains(&field)
                        || l.contains(&format!("// {field}:"))),
                "{name}'s template does not write `{field}:`"
            );
        }
    }
}

/// The checks above fail on an undocumented field: a template without `slip` (or with a field
/// whose comment gives no default) is caught.
#[test]
fn the_completeness_check_catches_a_missing_field() {
    let text = template::template("coin_game").unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(field_line(&lines, 4, "slip").is_some());
    let without: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.trim_start().starts_with("slip:"))
        .collect();
    assert_eq!(field_line(&without, 4, "slip"), None);
    let at = field_line(&lines, 8, "torus").unwrap();
    assert!(comment_above(&lines, at).contains("Default true"));
    assert_eq!(
        ron_field_names(r#"(name: "a: b", symbol: ':', x: (y: 1))"#),
        ["name", "symbol", "x", "y"]
    );
}

/// Every template trains: a tiny PQN run on the CPU through the library writes metrics with
/// finite losses and a checkpoint.
#[test]
fn every_template_trains_for_a_few_updates() {
    let dir = temp_dir("train");
    for (name, _) in template::templates() {
        let file = dir.join(format!("{name}.ron"));
        std::fs::write(&file, template::render(name, name).unwrap()).unwrap();
        let run = dir.join(format!("run_{name}"));
        let cfg = RunConfig {
            scenario: Some(file),
            device: gridarena::critic::Device::Cpu,
            arenas: 4,
            rollout: 4,
            total_steps: 4 * 4 * 2,
            network: NetworkConfig {
                hidden: 8,
                layers: 1,
                ..Default::default()
            },
            pqn: PqnConfig {
                minibatches: 1,
                ..Default::default()
            },
            pr2: Pr2Config {
                minibatches: 1,
                ..Default::default()
            },
            online_dqn: OnlineDqnConfig {
                minibatches: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        let summary =
            train(&cfg, &run, &TrainOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((summary.updates, summary.env_steps), (2, 32), "{name}");
        let losses: Vec<f64> = std::fs::read_to_string(run.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter_map(|m| m["loss"].as_f64())
            .collect();
        assert_eq!(losses.len(), 2, "{name}: one metrics line per update");
        assert!(losses.iter().all(|l| l.is_finite()), "{name}: {losses:?}");
        let checkpoints = RunDir::open(&run).unwrap().checkpoints().unwrap();
        assert!(!checkpoints.is_empty(), "{name}: no checkpoint");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn new(args: &[&str], file: Option<&Path>) -> Output {
    let mut cmd = bin();
    cmd.arg("new").args(args);
    if let Some(f) = file {
        cmd.arg(f);
    }
    cmd.output().unwrap()
}

#[test]
fn new_writes_every_template_and_check_accepts_it() {
    let dir = temp_dir("new");
    for (name, _) in template::templates() {
        let file = dir.join(format!("my_{name}.ron"));
        let out = new(&[name], Some(&file));
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains(&format!("wrote {}", file.display())),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("gridarena check --explain {}", file.display())),
            "{stdout}"
        );
        let written = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            written,
            template::render(name, &format!("my_{name}")).unwrap()
        );
        let check = bin().arg("check").arg(&file).output().unwrap();
        assert!(check.status.success(), "{name}: {}", text(&check.stderr));
        assert!(
            text(&check.stdout).starts_with("ok: "),
            "{}",
            text(&check.stdout)
        );
        let loaded = Scenario::load(&file).unwrap();
        assert_eq!(loaded.scenario.name, format!("my_{name}"));
    }
    // Nothing but the written files: no temporary left behind.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), registry_lines());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn new_lists_the_substrates() {
    for args in [&[][..], &["--list"][..]] {
        let out = new(args, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        for (name, summary) in template::summaries() {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.trim_start().starts_with(name) && l.contains(summary.trim())),
                "{name} missing from {stdout}"
            );
        }
    }
}

#[test]
fn new_refuses_to_overwrite_unknown_substrates_and_unusable_names() {
    let dir = temp_dir("refuse");
    // An existing file is left byte for byte as it was, unless --force.
    let file = dir.join("mine.ron");
    std::fs::write(&file, b"my own work\n").unwrap();
    let out = new(&["pursuit"], Some(&file));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("already exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"my own work\n");
    let out = new(&["pursuit", "--force"], Some(&file));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        template::render("pursuit", "mine").unwrap()
    );

    // An unknown substrate is refused with the known names; nothing is written.
    let fresh = dir.join("fresh.ron");
    let out = new(&["pursuitt"], Some(&fresh));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("unknown substrate \"pursuitt\""),
        "{stderr}"
    );
    for (name, _) in template::templates() {
        assert!(stderr.contains(name), "{name} not listed: {stderr}");
    }
    assert!(!fresh.exists());

    // File names that make no usable scenario name, or no .ron file.
    for bad in [
        "my hunt.ron",
        "hunt.txt",
        "-hunt.ron",
        "hunt\"x.ron",
        "a.b.ron",
    ] {
        let path = dir.join(bad);
        let out = new(&["coin_game"], Some(&path));
        assert_eq!(out.status.code(), Some(1), "{bad}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("not a usable scenario name") || stderr.contains("ends in .ron"),
            "{bad}: {stderr}"
        );
        assert!(!path.exists(), "{bad} was written");
    }
    // A substrate but no file.
    let out = new(&["coin_game"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("NAME.ron"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "only mine.ron");
    std::fs::remove_dir_all(&dir).unwrap();
}
