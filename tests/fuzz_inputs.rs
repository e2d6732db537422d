//! The bounded fuzz CI runs (part of `cargo test`): proptest mutates the
//! shipped inputs (every scenario asset, the default run configuration as RON, a recorded rollout
//! and a checkpoint's `state.json` from a tiny training run) with byte flips, deletions,
//! insertions, truncations, duplicated spans, swapped tokens and numbers replaced by extremes,
//! and feeds each mutant to the loader users hit. No input may panic, and every rejection of a
//! text file (scenario, configuration, checkpoint state) must name `line:column`.
//!
//! Cases per target: `GRIDARENA_FUZZ_CASES` (default 20,000: about 11 s for all ten targets in
//! the test profile on 2 cores, under a second release-built). The cargo-fuzz targets in fuzz/ run the same entry points
//! without a bound.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use gridarena::critic::{Device, choose_device};
use gridarena::engine::EnvBatch;
use gridarena::rollout::Rollout;
use gridarena::scenario::Scenario;
use gridarena::train::config::{NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config, RunConfig};
use gridarena::train::pqn::PqnState;
use gridarena::train::run_dir::RunDir;
use gridarena::train::{Learner, TrainOptions, new_learner, restore, train};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};

/// Cases per target.
fn cases() -> u32 {
    std::env::var("GRIDARENA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        // Mutants are cheap to shrink; keep shrinking bounded so a failure reports quickly.
        max_shrink_iters: 2_000,
        ..Config::default()
    })
}

/// A fresh directory under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gridarena-fuzz-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ------------------------------------------------------------------------------------------
// Mutations
// ------------------------------------------------------------------------------------------

/// Numbers a mutant may put where a number was.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "2147483648",
    "4294967296",
    "9223372036854775808",
    "18446744073709551616",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "-0.0",
    "65536",
];

/// Text a mutant may insert.
#[rustfmt::skip]
const INSERTS: &[&str] = &[
    "(", ")", "[", "]", "{", "}", ",", ":", "\"", "'", "//", "/*", "*/", "-", ".", "e", "0", "#",
    " ", "\n", "Some(", "None", "true", "\\", "r#\"", "\u{e9}", "\u{1f600}", "null", "1e308",
];

/// One edit of the text.
#[derive(Debug, Clone)]
enum Mutation {
    /// Flips one of the low seven bits of the character at a position (non-ASCII becomes `x`).
    Flip(u32, u8),
    /// Deletes up to 16 characters.
    Delete(u32, usize),
    /// Inserts a token.
    Insert(u32, u32),
    /// Cuts the text short.
    Truncate(u32),
    /// Repeats a span of up to 64 characters.
    Duplicate(u32, usize),
    /// Swaps two tokens.
    Swap(u32, u32),
    /// Replaces a number by an extreme.
    Extreme(u32, u32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let i = any::<u32>;
    prop_oneof![
        1 => (i(), 0u8..7).prop_map(|(p, b)| Mutation::Flip(p, b)),
        1 => (i(), 1usize..16).prop_map(|(p, n)| Mutation::Delete(p, n)),
        1 => (i(), i()).prop_map(|(p, t)| Mutation::Insert(p, t)),
        1 => i().prop_map(Mutation::Truncate),
        1 => (i(), 1usize..64).prop_map(|(p, n)| Mutation::Duplicate(p, n)),
        1 => (i(), i()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        // Numbers are the likeliest to reach arithmetic: weigh them up.
        3 => (i(), i()).prop_map(|(p, e)| Mutation::Extreme(p, e)),
    ]
}

/// One to four edits.
fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    proptest::collection::vec(mutation(), 1..=4)
}

/// Token boundaries: maximal runs of alphanumerics, `_`, `.`, `-`, `+`; anything else alone.
fn tokens(chars: &[char]) -> Vec<(usize, usize)> {
    let word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '+');
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let start = i;
        if word(chars[i]) {
            while i < chars.len() && word(chars[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
        if !chars[start].is_whitespace() {
            out.push((start, i));
        }
    }
    out
}

/// A position in a collection of `size` (> 0) from a raw draw.
fn at(raw: u32, size: usize) -> usize {
    raw as usize % size
}

fn apply(text: &str, edits: &[Mutation]) -> String {
    let mut c: Vec<char> = text.chars().collect();
    for edit in edits {
        let len = c.len();
        match edit {
            Mutation::Flip(p, bit) if len > 0 => {
                let k = at(*p, len);
                c[k] = if c[k].is_ascii() {
                    char::from((c[k] as u8) ^ (1 << bit))
                } else {
                    'x'
                };
            }
            Mutation::Delete(p, n) if len > 0 => {
                let k = at(*p, len);
                c.drain(k..(k + n).min(len));
            }
            Mutation::Insert(p, t) => {
                let k = at(*p, len + 1);
                let token = INSERTS[at(*t, INSERTS.len())];
                c.splice(k..k, token.chars());
            }
            Mutation::Truncate(p) => c.truncate(at(*p, len + 1)),
            Mutation::Duplicate(p, n) if len > 0 => {
                let k = at(*p, len);
                let span: Vec<char> = c[k..(k + n).min(len)].to_vec();
                c.splice(k..k, span);
            }
            Mutation::Swap(a, b) => {
                let t = tokens(&c);
                if t.len() >= 2 {
                    let (x, y) = (t[at(*a, t.len())], t[at(*b, t.len())]);
                    let (x, y) = if x.0 <= y.0 { (x, y) } else { (y, x) };
                    if x.1 <= y.0 {
                        let (sx, sy): (Vec<char>, Vec<char>) =
                            (c[x.0..x.1].to_vec(), c[y.0..y.1].to_vec());
                        c.splice(y.0..y.1, sx);
                        c.splice(x.0..x.1, sy);
                    }
                }
            }
            Mutation::Extreme(p, e) => {
                let numbers: Vec<(usize, usize)> = tokens(&c)
                    .into_iter()
                    .filter(|&(s, end)| {
                        let t: String = c[s..end].iter().collect();
                        t.trim_start_matches('-')
                            .starts_with(|d: char| d.is_ascii_digit())
                    })
                    .collect();
                if !numbers.is_empty() {
                    let (s, end) = numbers[at(*p, numbers.len())];
                    let value = EXTREMES[at(*e, EXTREMES.len())];
                    c.splice(s..end, value.chars());
                }
            }
            _ => {}
        }
    }
    c.into_iter().collect()
}

// ------------------------------------------------------------------------------------------
// Checks
// ------------------------------------------------------------------------------------------

/// Whether `message` holds a `:line:column` location (two numbers after colons).
fn has_location(message: &str) -> bool {
    let b = message.as_bytes();
    let digits = |mut i: usize| {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i > start).then_some(i)
    };
    (0..b.len()).any(|i| {
        b[i] == b':'
            && digits(i + 1).is_some_and(|j| b.get(j) == Some(&b':') && digits(j + 1).is_some())
    })
}

/// Runs `load` on the mutant without letting a panic escape; `Err(message)` when it refused.
fn no_panic<T>(
    what: &str,
    input: &str,
    load: impl FnOnce() -> Result<T, String>,
) -> Result<Result<T, String>, TestCaseError> {
    catch_unwind(AssertUnwindSafe(load))
        .map_err(|_| TestCaseError::fail(format!("{what} panicked on this input:\n{input}")))
}

/// A refusal of a text file must say where.
fn located(what: &str, input: &str, refusal: &str) -> Result<(), TestCaseError> {
    if has_location(refusal) {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!(
            "{what} refused without line:column: {refusal}\n--- input\n{input}"
        )))
    }
}

/// How many mutants a target accepted and refused: a fuzz that only ever sees one outcome is
/// not exploring (e.g. every mutant breaks the header).
#[derive(Default)]
struct Tally {
    accepted: std::cell::Cell<u32>,
    refused: std::cell::Cell<u32>,
}

impl Tally {
    fn note<T>(&self, outcome: &Result<T, String>) {
        let c = if outcome.is_ok() {
            &self.accepted
        } else {
            &self.refused
        };
        c.set(c.get() + 1);
    }
}

fn report<T: std::fmt::Debug>(
    name: &str,
    result: Result<(), proptest::test_runner::TestError<T>>,
    tally: &Tally,
) {
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let (ok, refused) = (tally.accepted.get(), tally.refused.get());
    eprintln!("{name}: {ok} mutants accepted, {refused} refused");
    if cases() >= 100 {
        assert!(
            ok > 0 && refused > 0,
            "{name}: {ok} accepted, {refused} refused"
        );
    }
}

// ------------------------------------------------------------------------------------------
// Targets
// ------------------------------------------------------------------------------------------

fn shipped_scenarios() -> Vec<(PathBuf, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("assets/scenarios")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ron"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the shipped scenarios");
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// Scenario text -> parse and validate; a scenario that validates must also build and step.
fn scenario_case(text: &str) -> Result<(), String> {
    let loaded = Scenario::parse(text, "fuzz.ron").map_err(|e| e.to_string())?;
    let mut batch = EnvBatch::new(&loaded, 2, 7).map_err(|e| e.to_string())?;
    for _ in 0..3 {
        batch.step().map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[test]
fn mutated_scenarios_never_panic_and_refusals_name_line_and_column() {
    let seeds = shipped_scenarios();
    let strategy = (0..seeds.len(), mutations());
    let tally = Tally::default();
    let result = runner().run(&strategy, |(k, edits)| {
        let input = apply(&seeds[k].1, &edits);
        let outcome = no_panic("Scenario::parse", &input, || scenario_case(&input))?;
        tally.note(&outcome);
        if let Err(refusal) = outcome {
            // Refusals after a successful parse (an engine that cannot be built) are not text
            // errors; every parse/validate refusal starts with `fuzz.ron:`.
            if refusal.starts_with("fuzz.ron") {
                located("Scenario::parse", &input, &refusal)?;
            }
        }
        Ok(())
    });
    report("scenario_loader", result, &tally);
}

/// Configuration text -> parse and validate, then the sizes derived from it.
fn config_case(text: &str) -> Result<(), String> {
    let cfg = RunConfig::parse_valid(text, "fuzz.ron").map_err(|e| e.to_string())?;
    let _ = (cfg.updates(), cfg.steps_per_update(), cfg.to_ron());
    Ok(())
}

#[test]
fn mutated_run_configs_never_panic_and_refusals_name_line_and_column() {
    let seed = RunConfig::default().to_ron();
    config_case(&seed).expect("the default configuration is valid");
    let tally = Tally::default();
    let result = runner().run(&mutations(), |edits| {
        let input = apply(&seed, &edits);
        let outcome = no_panic("RunConfig::parse_valid", &input, || config_case(&input))?;
        tally.note(&outcome);
        if let Err(refusal) = outcome {
            located("RunConfig::parse_valid", &input, &refusal)?;
        }
        Ok(())
    });
    report("run_config", result, &tally);
}

/// A 12-step rollout of pursuit_3, as text.
fn recorded_rollout(dir: &Path) -> String {
    let loaded = Scenario::load(Path::new("assets/scenarios/pursuit_3.ron")).unwrap();
    let mut b = EnvBatch::new(&loaded, 1, 3).unwrap();
    b.start_recording(0);
    for step in 0..12u8 {
        for (i, a) in b.actions_mut().iter_mut().enumerate() {
            *a = (step + i as u8) % 5;
        }
        b.step().unwrap();
    }
    let path = dir.join("r.ron");
    b.finish_recording().unwrap().save(&path).unwrap();
    std::fs::read_to_string(&path).unwrap()
}

/// Rollout text -> what `view` and `render` do before drawing: parse, check every frame
/// against the layout, rebuild the observations.
fn rollout_case(text: &str) -> Result<(), String> {
    let path = Path::new("fuzz-rollout.ron");
    let rollout = Rollout::parse(text, path).map_err(|e| e.to_string())?;
    let layout = gridarena::render::output::rollout_layout(&rollout).map_err(|e| e.to_string())?;
    let replay = gridarena::viewer::source::Replay::from_rollout(rollout, path)
        .map_err(|e| e.to_string())?;
    for f in &replay.rollout().frames {
        let _ = gridarena::viewer::source::rebuild_observations(&layout, f);
    }
    Ok(())
}

#[test]
fn mutated_rollouts_never_panic() {
    let dir = temp_dir("rollout");
    let seed = recorded_rollout(&dir);
    rollout_case(&seed).expect("the recorded rollout loads");
    let tally = Tally::default();
    let result = runner().run(&mutations(), |edits| {
        let input = apply(&seed, &edits);
        tally.note(&no_panic("Rollout::parse", &input, || {
            rollout_case(&input)
        })?);
        Ok(())
    });
    report("rollout_loader", result, &tally);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A finished two-update PQN run on pursuit_3 and a fresh learner of its shapes.
struct TinyRun {
    dir: PathBuf,
    run: RunDir,
    /// The newest checkpoint's `state.json`.
    state_file: PathBuf,
    learner: gridarena::train::BoxedLearner,
}

fn tiny_run(name: &str) -> TinyRun {
    let dir = temp_dir(name);
    let cfg = RunConfig {
        device: Device::Cpu,
        scenario: Some("assets/scenarios/pursuit_3.ron".into()),
        arenas: 2,
        rollout: 4,
        total_steps: 2 * 2 * 4,
        network: NetworkConfig {
            hidden: 4,
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
        ..RunConfig::default()
    };
    train(&cfg, &dir, &TrainOptions::default()).unwrap();
    let run = RunDir::open(&dir).unwrap();
    let newest = run.checkpoints().unwrap().pop().unwrap();
    // Without its checksums, as a checkpoint written before them: a mutated state is then read
    // (with them, every mutation would be caught as damage before the state is parsed).
    std::fs::remove_file(newest.join("checksums.json")).unwrap();
    let state_file = newest.join("state.json");
    let loaded = gridarena::train::load_scenario(&cfg).unwrap();
    let device = choose_device(Device::Cpu).unwrap();
    let learner = new_learner(&cfg, &loaded, &device).unwrap();
    TinyRun {
        dir,
        run,
        state_file,
        learner,
    }
}

#[test]
fn mutated_checkpoint_states_never_panic_and_refusals_name_line_and_column() {
    let TinyRun {
        dir,
        run,
        state_file,
        learner,
    } = tiny_run("checkpoint");
    let seed = std::fs::read_to_string(&state_file).unwrap();
    let learner = std::cell::RefCell::new(learner);
    restore(learner.borrow_mut().as_mut(), &run).expect("the checkpoint restores");
    let tally = Tally::default();
    let result = runner().run(&mutations(), |edits| {
        let input = apply(&seed, &edits);
        std::fs::write(&state_file, &input).unwrap();
        let mut learner = learner.borrow_mut();
        let learner: &mut dyn Learner = learner.as_mut();
        // A state that restores must also run: one environment step of every arena.
        let outcome = no_panic("restore", &input, || {
            restore(learner, &run).map_err(|e| e.to_string())?;
            learner.batch().step().map_err(|e| e.to_string())
        })?;
        tally.note(&outcome);
        // Text that does not decode as the learner's state must be refused at a line:column;
        // a state that decodes but does not fit the run is refused naming the field instead.
        if let Err(refusal) = outcome
            && serde_json::from_str::<PqnState>(&input).is_err()
        {
            located("restore", &input, &refusal)?;
        }
        Ok(())
    });
    report("checkpoint_state", result, &tally);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_location_check_accepts_line_column_and_nothing_else() {
    assert!(has_location("fuzz.ron:3:14: expected `)`"));
    assert!(has_location("checkpoint /tmp/x: state.json:1:20: EOF"));
    assert!(!has_location("run config field `arenas`: 0; at least 1"));
    assert!(!has_location(
        "cannot restore the batch: 2 arenas x 3 agents"
    ));
}

#[test]
fn mutations_reach_every_kind_of_edit() {
    let idx = |n: u32| n;
    let text = "a: 12, b: (3)";
    assert_eq!(apply(text, &[Mutation::Truncate(idx(0))]), "");
    assert_eq!(apply(text, &[Mutation::Delete(idx(0), 3)]), "12, b: (3)");
    assert_eq!(
        apply(text, &[Mutation::Extreme(idx(0), idx(8))]),
        "a: NaN, b: (3)"
    );
    assert_eq!(
        apply(text, &[Mutation::Swap(idx(0), idx(4))]),
        "b: 12, a: (3)"
    );
}

// ------------------------------------------------------------------------------------------
// Regressions: what the fuzz found, one deterministic case each
// ------------------------------------------------------------------------------------------

/// A configuration syntax error was reported as `file: 3:5-3:9: ...` (no `file:line:column`).
#[test]
fn a_config_syntax_error_names_file_line_and_column() {
    let text = RunConfig::default()
        .to_ron()
        .replacen("arenas: 256", "arenas: 256)", 1);
    let err = RunConfig::parse(&text, "run.ron").unwrap_err().to_string();
    let line = text.lines().position(|l| l.contains("arenas:")).unwrap() + 1;
    assert!(err.starts_with(&format!("run.ron:{line}:")), "{err}");
}

/// An out-of-range value named its field but not where it is in the file.
#[test]
fn an_out_of_range_config_value_names_its_line_and_column() {
    let text = RunConfig::default()
        .to_ron()
        .replacen("arenas: 256", "arenas: 0", 1);
    let line = text.lines().position(|l| l.contains("arenas:")).unwrap() + 1;
    let col = text.lines().nth(line - 1).unwrap().find("arenas").unwrap() + 1;
    let err = RunConfig::parse_valid(&text, "run.ron")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("run.ron:{line}:{col}: field `arenas`")),
        "{err}"
    );
}

/// A damaged `state.json` (syntax) and a mistyped value in it were refused as `... at line 1
/// column N` inside the message, not as `state.json:line:column`.
#[test]
fn a_damaged_or_mistyped_checkpoint_state_names_line_and_column() {
    let TinyRun {
        dir,
        run,
        state_file,
        mut learner,
    } = tiny_run("state-regression");
    let good = std::fs::read_to_string(&state_file).unwrap();
    let cut = good.find("\"env_steps\"").unwrap();
    let digits = good[cut + 12..].find(',').unwrap();
    for (bad, col) in [
        // Cut short inside a key: a syntax error, found when the checkpoint is read (serde_json
        // places it at the last character read).
        (good[..cut + 3].to_string(), cut + 3),
        // A negative step count: a type error, found when the learner decodes its state (at the
        // number's last digit).
        (
            good.replacen("\"env_steps\":", "\"env_steps\":-", 1),
            cut + 13 + digits,
        ),
    ] {
        std::fs::write(&state_file, &bad).unwrap();
        let err = restore(learner.as_mut(), &run).unwrap_err().to_string();
        assert!(err.contains(&format!("state.json:1:{col}: ")), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scenario or configuration file with a byte that is not UTF-8 was refused at line 0,
/// column 0 ("cannot read the file"); it now names where the byte is.
#[test]
fn a_file_that_is_not_utf8_names_the_line_and_column_of_the_byte() {
    let dir = temp_dir("utf8");
    let path = dir.join("bad.ron");
    let mut bytes = std::fs::read("assets/scenarios/stag_hunt.ron").unwrap();
    let second_line = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    bytes.splice(second_line + 2..second_line + 2, [0xff]);
    std::fs::write(&path, &bytes).unwrap();
    let err = Scenario::load(&path).unwrap_err();
    assert_eq!((err.line, err.column), (2, 3), "{err}");

    let text = RunConfig::default().to_ron();
    let line = text.lines().position(|l| l.contains("arenas:")).unwrap() + 1;
    let start: usize = text.lines().take(line - 1).map(|l| l.len() + 1).sum();
    let mut text = text.into_bytes();
    text.splice(start + 4..start + 4, [0xc3]);
    std::fs::write(&path, &text).unwrap();
    let err = RunConfig::load(&path).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{}:{line}:5: ", path.display())),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
