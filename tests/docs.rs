//! The documentation stays true. Three checks over README.md and docs/**/*.md:
//!
//! 1. README's CLI quickstart runs: every line of every fenced block whose info string is
//!    `sh quickstart` is one command, run in order with this build's binary in one scratch
//!    directory (its `assets` a link to the repository's), with less work than written (see
//!    [`reduce`]); `view` runs under `xvfb-run`.
//! 2. Every relative link and image outside code resolves to a file or directory, and an
//!    anchor (`file.md#anchor`, or `#anchor` in the same file) names a heading of its file by
//!    GitHub's rule.
//! 3. Every `gridarena` command the docs show (fenced blocks of any kind, inline code) uses
//!    only flags its subcommand's `--help` lists (`bench env` and the like: the nested help),
//!    shows the flags the subcommand's usage requires whenever it shows flags at all
//!    (`gridarena eval --replica K` lacks `--run`), and names its subcommand before any flag.
//!
//! `GRIDARENA_DOCS_ROOT` points the checks at another copy of the docs (default: this crate);
//! the commands still run this crate's binary on this crate's assets. `GRIDARENA_DOCS_LIST=1`
//! prints every gridarena command check 3 read, with the subcommand it took it for.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[path = "common/doc_commands.rs"]
mod doc_commands;
#[path = "common/markdown.rs"]
mod markdown;
#[path = "common/skip.rs"]
mod skip;

use doc_commands::{BIN, Cli, cargo_run_args, commands, invocations, synopsis_lines, unbracket};
use markdown::{Doc, has_scheme, loose_words, parse, percent_decode, shell_words};

fn docs_root() -> PathBuf {
    std::env::var_os("GRIDARENA_DOCS_ROOT")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// README.md and every `.md` under docs/, as (path relative to the root, parsed file).
fn doc_files(root: &Path) -> Vec<(String, Doc)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut paths = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (rel, parse(&read(&p)))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Check 1: the README's quickstart.

/// A `train` trains this many environment steps at most: two updates of the default run's 256
/// arenas x 32 steps, a few seconds in a debug build.
const TRAIN_STEPS: u64 = 16_384;

/// Sets `flag`'s value (`--flag V` or `--flag=V`) to at most `max`; appends `--flag max` when
/// it is absent and `append` holds. Returns what changed, for the report.
fn cap(args: &mut Vec<String>, flag: &str, max: u64, append: bool) -> Option<String> {
    let at = args
        .iter()
        .position(|a| a == flag || a.starts_with(&format!("{flag}=")));
    match at {
        Some(k) => {
            let (value_at, value) = match args[k].split_once('=') {
                Some((_, v)) => (None, v.to_string()),
                None => (Some(k + 1), args.get(k + 1).cloned().unwrap_or_default()),
            };
            let v: u64 = value.replace('_', "").parse().ok()?;
            if v <= max {
                return None;
            }
            match value_at {
                Some(i) => args[i] = max.to_string(),
                None => args[k] = format!("{flag}={max}"),
            }
            Some(format!("{flag} {v} -> {max}"))
        }
        None if append => {
            args.extend([flag.to_string(), max.to_string()]);
            Some(format!("+ {flag} {max}"))
        }
        None => None,
    }
}

/// The reduced form of a quickstart's `gridarena ARGS`: the same command with less work, so
/// the whole quickstart takes seconds. No arguments (the default job) becomes `train`; `train`
/// trains [`TRAIN_STEPS`] steps and at most 2 seeds; `eval` plays 2 episodes (a learned
/// NashConv trains its best responses for [`TRAIN_STEPS`]); `rollout` records at most 200
/// steps of 4 arenas; `render` draws at most 30 frames; the benchmarks run one short repeat;
/// `view` shows 8 frames, saves a screenshot into the scratch directory and exits. Returns the
/// arguments and the changes made.
fn reduce(mut args: Vec<String>, path: &[String], shot: &Path) -> (Vec<String>, Vec<String>) {
    if args.is_empty() {
        args.push("train".into());
    }
    let sub: Vec<&str> = path.iter().map(String::as_str).collect();
    let caps: &[(&str, u64, bool)] = match sub[..] {
        ["train"] => &[("--steps", TRAIN_STEPS, true), ("--seeds", 2, false)],
        ["eval"] => {
            let learned = args
                .iter()
                .any(|a| a == "learned" || a == "--nashconv=learned");
            if learned {
                &[("--episodes", 2, true), ("--br-steps", TRAIN_STEPS, true)]
            } else {
                &[("--episodes", 2, true)]
            }
        }
        ["rollout"] => &[("--steps", 200, false), ("--arenas", 4, false)],
        ["render"] => &[("--frames", 30, true)],
        ["bench", "env"] => &[
            ("--steps", 50, true),
            ("--repeat", 1, true),
            ("--warmup", 5, true),
            ("--arenas", 64, true),
        ],
        ["bench", "critic"] => &[("--updates", 2, true), ("--repeat", 1, true)],
        ["bench", "train"] => &[("--updates", 2, true)],
        ["view"] => &[("--after-frames", 8, true)],
        _ => &[],
    };
    let mut notes: Vec<String> = caps
        .iter()
        .filter_map(|&(f, m, a)| cap(&mut args, f, m, a))
        .collect();
    if sub == ["view"] && !args.iter().any(|a| a.starts_with("--screenshot")) {
        args.extend(["--screenshot".to_string(), shot.display().to_string()]);
        notes.push(format!("+ --screenshot {}", shot.display()));
    }
    (args, notes)
}

fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(feature = "viewer")]
#[test]
fn readme_quickstart_runs() {
    let root = docs_root();
    let doc = parse(&read(&root.join("README.md")));
    let blocks: Vec<_> = doc
        .fences
        .iter()
        .filter(|f| {
            f.info.first().is_some_and(|l| l == "sh") && f.info.iter().any(|w| w == "quickstart")
        })
        .collect();
    assert!(
        !blocks.is_empty(),
        "README.md has no ```sh quickstart block: nothing shows how to start"
    );
    let scratch =
        std::env::temp_dir().join(format!("gridarena-docs-quickstart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    std::os::unix::fs::symlink(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets"),
        scratch.join("assets"),
    )
    .unwrap();
    let xvfb = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("xvfb-run").is_file()));
    let mut cli = Cli::default();
    let (mut failures, mut ran, mut skipped) = (Vec::new(), 0, 0);
    let started = Instant::now();
    for (n, line) in blocks.iter().flat_map(|b| commands(b)) {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let fail = |why: String| format!("README.md:{n}: `{}`\n  {why}", line.trim());
        let words = match shell_words(&line) {
            Ok(w) => w,
            Err(e) => {
                failures.push(fail(format!("cannot run without a shell: {e}")));
                continue;
            }
        };
        let env: Vec<(String, String)> = words
            .iter()
            .map_while(|w| {
                w.split_once('=').filter(|(k, _)| {
                    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            })
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let words = &words[env.len()..];
        let Some(program) = words.first() else {
            continue;
        };
        let gridarena_args = if program == "gridarena" || program.ends_with("/gridarena") {
            Some(words[1..].to_vec())
        } else if program == "cargo" && words.get(1).is_some_and(|w| w == "run") {
            match cargo_run_args(words, 2) {
                Some(k) => Some(words[k..].to_vec()),
                None => {
                    failures.push(fail(
                        "only `cargo run` of the gridarena binary is run here".into(),
                    ));
                    continue;
                }
            }
        } else if program == "cd" {
            failures.push(fail(
                "`cd` is not supported: every command runs in the quickstart's directory".into(),
            ));
            continue;
        } else {
            None
        };
        let shot = scratch.join(format!("view_line{n}.png"));
        let (argv, notes, is_view) = match gridarena_args {
            Some(args) => {
                let (path, _) = cli.resolve(&args);
                let path = path.unwrap_or_default();
                let (args, notes) = reduce(args, &path, &shot);
                let is_view = path == ["view"];
                // A bound on each command: a window gets the viewer tests' minute.
                let limit = if is_view { "60" } else { "300" };
                let mut argv: Vec<String> = vec!["timeout".into(), limit.into()];
                if is_view {
                    argv.splice(0..0, ["xvfb-run".to_string(), "-a".to_string()]);
                }
                argv.push(BIN.into());
                argv.extend(args);
                (argv, notes, is_view)
            }
            None => (words.to_vec(), Vec::new(), false),
        };
        if is_view && !xvfb {
            // With CI set this fails the test (tests/common/skip.rs).
            skip::skip("xvfb-run is not on PATH (install xvfb): README's `view` was not run");
            skipped += 1;
            continue;
        }
        let t = Instant::now();
        let out = Command::new(&argv[0])
            .args(&argv[1..])
            .envs(env)
            .current_dir(&scratch)
            .output();
        ran += 1;
        let ok = match &out {
            Ok(o) if o.status.success() => {
                !is_view || shot.is_file() || notes.iter().all(|x| !x.contains("--screenshot"))
            }
            _ => false,
        };
        let ran_as = format!(
            "ran as: {} ({})",
            argv.join(" "),
            if notes.is_empty() {
                "as written".into()
            } else {
                notes.join(", ")
            }
        );
        eprintln!(
            "README.md:{n}: {:.1} s: {}",
            t.elapsed().as_secs_f64(),
            line.trim()
        );
        if !ok {
            failures.push(fail(match out {
                Err(e) => format!("{ran_as}\n  could not start: {e}"),
                Ok(o) if o.status.success() => {
                    format!("{ran_as}\n  exit 0 but no screenshot at {}", shot.display())
                }
                Ok(o) => format!(
                    "{ran_as}\n  exit code: {:?}{}\n  stderr (tail):\n{}\n  stdout (tail):\n{}",
                    o.status.code(),
                    if o.status.code() == Some(124) {
                        " (timed out)"
                    } else {
                        ""
                    },
                    tail(&o.stderr, 15),
                    tail(&o.stdout, 5),
                ),
            }));
        }
    }
    eprintln!(
        "quickstart: {ran} commands in {:.1} s ({skipped} skipped)",
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "README.md's quickstart fails ({} of {ran} commands; later ones may fail because an earlier one did):\n\n{}\n\nscratch directory: {}",
        failures.len(),
        failures.join("\n\n"),
        scratch.display()
    );
    assert!(
        ran + skipped > 0,
        "README.md's ```sh quickstart blocks hold no command"
    );
    let _ = std::fs::remove_dir_all(&scratch);
}

// ---------------------------------------------------------------------------------------------
// Check 2: links.

#[test]
fn relative_links_and_images_resolve() {
    let root = docs_root();
    let files = doc_files(&root);
    let anchors: HashMap<PathBuf, _> = files
        .iter()
        .map(|(rel, doc)| (root.join(rel), markdown::anchors(doc)))
        .collect();
    let (mut broken, mut checked) = (Vec::new(), 0);
    for (rel, doc) in &files {
        let dir = root.join(rel).parent().unwrap().to_path_buf();
        for link in markdown::links(doc) {
            let target = link.target.trim();
            if has_scheme(target) {
                continue;
            }
            checked += 1;
            let (path, anchor) = target
                .split_once('#')
                .map_or((target, None), |(p, a)| (p, Some(a)));
            let path = percent_decode(path.split('?').next().unwrap());
            let file = match path.as_str() {
                "" if anchor.is_some() => root.join(rel),
                "" => {
                    broken.push(format!("{rel}:{}: an empty link target", link.line));
                    continue;
                }
                p if p.starts_with('/') => root.join(p.trim_start_matches('/')),
                p => dir.join(p),
            };
            if !file.exists() {
                broken.push(format!(
                    "{rel}:{}: `{target}`: {} does not exist",
                    link.line,
                    file.display()
                ));
                continue;
            }
            let Some(anchor) = anchor.filter(|_| file.extension().is_some_and(|x| x == "md"))
            else {
                continue;
            };
            let file = file.canonicalize().unwrap();
            let known = anchors
                .iter()
                .find(|(p, _)| p.canonicalize().ok().as_ref() == Some(&file))
                .map(|(_, a)| a.clone())
                .unwrap_or_else(|| markdown::anchors(&parse(&read(&file))));
            if !known.contains(&percent_decode(anchor).to_lowercase()) {
                // The file's anchors sharing a word of four letters or more with this one.
                let lower = anchor.to_lowercase();
                let words: Vec<&str> = lower.split('-').filter(|w| w.len() >= 4).collect();
                let mut near: Vec<_> = known
                    .iter()
                    .filter(|k| words.iter().any(|w| k.contains(w)))
                    .collect();
                near.sort();
                broken.push(format!("{rel}:{}: `{target}`: no heading of {} has the anchor #{anchor} (similar: {near:?})", link.line, file.display()));
            }
        }
    }
    eprintln!("links: {checked} relative targets in {} files", files.len());
    assert!(
        checked > 0,
        "no relative link in README.md or docs/: the check found nothing to check"
    );
    assert!(
        broken.is_empty(),
        "{} broken links:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[cfg(feature = "viewer")]
#[test]
fn documented_flags_exist() {
    let root = docs_root();
    let mut cli = Cli::default();
    let (mut unknown, mut seen) = (Vec::new(), 0);
    for (rel, doc) in doc_files(&root) {
        let fenced = doc.fences.iter().flat_map(synopsis_lines);
        for (n, text) in fenced.chain(doc.spans.iter().cloned()) {
            for args in invocations(&loose_words(&text)) {
                seen += 1;
                let (path, rest) = cli.resolve(&args);
                if std::env::var_os("GRIDARENA_DOCS_LIST").is_some() {
                    eprintln!("{rel}:{n}: {path:?} {rest:?}");
                }
                // Flags written with no subcommand before them, or after one the synopsis marks
                // optional (`gridarena [train] --steps N` says `gridarena --steps N` works).
                let optional = args.first().is_some_and(|a| {
                    a.starts_with('[') && path.as_ref().is_some_and(|p| p[0] == unbracket(a))
                });
                let bare = if path.is_none() || optional {
                    rest
                } else {
                    &[]
                };
                let top = cli.help(&[]);
                let bad: Vec<_> = bare
                    .iter()
                    .map(|a| unbracket(a))
                    .filter(|a| a.starts_with("--") && !top.flags.contains(*a))
                    .collect();
                if !bad.is_empty() {
                    unknown.push(format!(
                        "{rel}:{n}: `{}`: {} without a subcommand before them, but `gridarena` \
                         alone takes only --help and --version (it exits 2; the default `train` \
                         runs only with no arguments): write `gridarena {}`, unbracketed",
                        text.trim(),
                        bad.join(" "),
                        path.as_ref().map_or("train".into(), |p| p.join(" "))
                    ));
                }
                let Some(path) = path else { continue };
                let help = cli.help(&path);
                let named: Vec<&str> = rest
                    .iter()
                    .flat_map(|w| w.split('|'))
                    .map(unbracket)
                    .collect();
                let missing: Vec<_> = help
                    .required
                    .iter()
                    .filter(|r| !named.contains(&r.as_str()))
                    .collect();
                // A command shown with flags must show the flags it cannot run without (a bare
                // `gridarena eval` names the command; `--help` needs nothing).
                let flagged =
                    named.iter().any(|w| w.starts_with("--")) && !named.contains(&"--help");
                if flagged && !missing.is_empty() && !named.contains(&"...") {
                    unknown.push(format!(
                        "{rel}:{n}: `gridarena {}` cannot run without {} (in `{}`)",
                        path.join(" "),
                        missing
                            .iter()
                            .map(|m| m.as_str())
                            .collect::<Vec<_>>()
                            .join(" "),
                        text.trim()
                    ));
                }
                'words: for w in rest {
                    for part in w.split('|') {
                        let p = unbracket(part);
                        if p == "--" {
                            break 'words;
                        }
                        let Some(name) = p
                            .strip_prefix("--")
                            .filter(|s| s.starts_with(|c: char| c.is_ascii_alphanumeric()))
                        else {
                            continue;
                        };
                        let flag: String = format!(
                            "--{}",
                            name.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                                .next()
                                .unwrap()
                        );
                        if !help.flags.contains(&flag) {
                            unknown.push(format!(
                                "{rel}:{n}: `gridarena {}` has no flag {flag} (in `{}`; its --help lists {})",
                                path.join(" "),
                                text.trim(),
                                help.flags.iter().cloned().collect::<Vec<_>>().join(" ")
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!("flags: {seen} gridarena commands read");
    assert!(
        seen > 0,
        "no gridarena command found in README.md or docs/: the check found nothing"
    );
    assert!(
        unknown.is_empty(),
        "{} documented gridarena commands the binary would refuse:\n{}",
        unknown.len(),
        unknown.join("\n")
    );
}

/// The readers the checks stand on read the conventions as written, so no check passes by
/// reading nothing: fences and info strings, code spans across lines, links outside code only,
/// GitHub's anchors, command lines with and without a shell, and the quickstart's reductions.
#[test]
fn the_readers_read_the_conventions() {
    let doc = parse(
        "# Clusters and MPI\n\n## The `check --explain` command\n\n## Clusters and MPI\n\n\
         See [a](x.md#y) and `[b](not/a/link)`, or `gridarena eval\n--run R`.\n\n\
         \x20 ```sh quickstart\n  gridarena train --steps 5   # comment\n  ```\n",
    );
    assert_eq!(doc.fences.len(), 1);
    assert_eq!(doc.fences[0].info, ["sh", "quickstart"]);
    let content = "gridarena train --steps 5   # comment".to_string();
    assert_eq!(doc.fences[0].lines, [(11, content)]);
    let links: Vec<_> = markdown::links(&doc)
        .into_iter()
        .map(|l| (l.line, l.target))
        .collect();
    assert_eq!(links, [(7, "x.md#y".to_string())]);
    assert!(
        doc.spans
            .contains(&(7, "gridarena eval --run R".to_string())),
        "{:?}",
        doc.spans
    );
    let anchors = markdown::anchors(&doc);
    for a in [
        "clusters-and-mpi",
        "the-check---explain-command",
        "clusters-and-mpi-1",
    ] {
        assert!(anchors.contains(a), "{a}: {anchors:?}");
    }

    let words = shell_words(r#"gridarena check "a b.ron" 'c' # x"#).unwrap();
    assert_eq!(words, ["gridarena", "check", "a b.ron", "c"]);
    for bad in [
        "gridarena eval | head",
        "a && b",
        "echo $HOME",
        "ls *.png",
        "cat > f",
    ] {
        assert!(shell_words(bad).is_err(), "{bad}");
    }

    let inv = |l: &str| invocations(&loose_words(l));
    let mpi = inv("mpirun -np 2 target/release/gridarena train --threads 1  # --as-root");
    assert_eq!(mpi, [vec!["train", "--threads", "1"]]);
    assert!(inv("benches/peers/run.sh target/release/gridarena 3").is_empty());
    let or = inv("$ X=1 gridarena view ROLLOUT | --run DIR | grep x");
    assert_eq!(or, [vec!["view", "ROLLOUT", "|", "--run", "DIR"]]);
    let cargo = inv("cargo run --release -- eval --run R");
    assert_eq!(cargo, [vec!["eval", "--run", "R"]]);
    assert!(inv("cargo run --example step_batch").is_empty());

    let r = |args: &[&str], sub: &[&str]| {
        let args = args.iter().map(|s| s.to_string()).collect();
        let sub: Vec<String> = sub.iter().map(|s| s.to_string()).collect();
        reduce(args, &sub, Path::new("s.png")).0
    };
    assert_eq!(r(&[], &["train"]), ["train", "--steps", "16384"]);
    let train = r(&["train", "--steps=4000000", "--seeds", "5"], &["train"]);
    assert_eq!(train, ["train", "--steps=16384", "--seeds", "2"]);
    let eval = r(&["eval", "--run", "R", "--episodes", "20"], &["eval"]);
    assert_eq!(eval, ["eval", "--run", "R", "--episodes", "2"]);
    let view = r(&["view", "--run", "R"], &["view"]);
    assert_eq!(
        view,
        [
            "view",
            "--run",
            "R",
            "--after-frames",
            "8",
            "--screenshot",
            "s.png"
        ]
    );
}
