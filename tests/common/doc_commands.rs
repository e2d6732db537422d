//! The commands the docs show, as tests/docs.rs reads them: the binary's own `--help` (flags,
//! required flags, subcommands), a fenced block's command lines, and where in a line a
//! `gridarena` command starts and ends.
#![allow(dead_code, missing_docs)]

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

use super::markdown;

pub const BIN: &str = env!("CARGO_BIN_EXE_gridarena");

// ---------------------------------------------------------------------------------------------
// The binary's own account of its commands.

/// What `gridarena [SUB...] --help` lists: the long flags, the ones its usage line requires,
/// and the subcommands.
#[derive(Clone, Debug)]
pub struct Help {
    pub flags: BTreeSet<String>,
    pub required: Vec<String>,
    pub subs: Vec<String>,
}

pub fn parse_help(text: &str) -> Help {
    let mut flags = BTreeSet::new();
    let mut subs = Vec::new();
    let mut required = Vec::new();
    let mut in_commands = false;
    for line in text.lines() {
        if let Some(usage) = line.strip_prefix("Usage: ") {
            // `Usage: gridarena eval [OPTIONS] --run <RUN>`: flags outside brackets.
            required.extend(
                usage
                    .split_whitespace()
                    .filter(|w| w.starts_with("--"))
                    .map(str::to_string),
            );
        }
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if line.ends_with(':') && indent == 0 {
            in_commands = line == "Commands:";
            continue;
        }
        if in_commands && indent == 2 {
            let name = t.split_whitespace().next().unwrap_or("");
            if name != "help" {
                subs.push(name.to_string());
            }
        }
        // Option lines: `  -h, --help`, `      --run <RUN>` (descriptions sit deeper).
        if (1..=6).contains(&indent) && t.starts_with('-') {
            for w in t.split_whitespace().take_while(|w| w.starts_with('-')) {
                if let Some(name) = w.trim_end_matches(',').strip_prefix("--") {
                    flags.insert(format!("--{name}"));
                }
            }
        }
    }
    Help {
        flags,
        required,
        subs,
    }
}

/// `gridarena [path] --help`, parsed once per path.
#[derive(Default)]
pub struct Cli(pub HashMap<Vec<String>, Help>);

impl Cli {
    pub fn help(&mut self, path: &[String]) -> Help {
        self.0
            .entry(path.to_vec())
            .or_insert_with(|| {
                let out = Command::new(BIN).args(path).arg("--help").output().unwrap();
                assert!(
                    out.status.success(),
                    "gridarena {} --help failed",
                    path.join(" ")
                );
                parse_help(&String::from_utf8_lossy(&out.stdout))
            })
            .clone()
    }

    /// The subcommand path `args` names (nested ones like `bench env` included) and the rest:
    /// `None` when the first argument is a flag. A first word that is no subcommand (or none)
    /// means `train`, the default.
    pub fn resolve<'a>(&mut self, args: &'a [String]) -> (Option<Vec<String>>, &'a [String]) {
        let top = self.help(&[]);
        let word = |k: usize| args.get(k).map(|w| unbracket(w).to_string());
        match word(0) {
            Some(w) if top.subs.contains(&w) => {
                let mut path = vec![w];
                let nested = self.help(&path);
                match word(1) {
                    Some(w) if nested.subs.contains(&w) => {
                        path.push(w);
                        (Some(path), &args[2..])
                    }
                    _ => (Some(path), &args[1..]),
                }
            }
            Some(w) if w.starts_with('-') => (None, args),
            _ => (Some(vec!["train".into()]), args),
        }
    }
}

/// A word of a synopsis without its brackets and trailing punctuation: `[--best]` -> `--best`.
pub fn unbracket(w: &str) -> &str {
    w.trim_start_matches(['[', '(', '{'])
        .trim_end_matches([']', ')', '}', ',', '.', ';', ':'])
}

/// Lines of a fenced block with `\` continuations joined, each with its first line number.
pub fn commands(fence: &markdown::Fence) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (n, line) in &fence.lines {
        let (text, cont) = match line.trim_end().strip_suffix('\\') {
            Some(t) => (t.to_string(), true),
            None => (line.trim_end().to_string(), false),
        };
        match out.last_mut() {
            Some(last) if open => last.1 = format!("{} {}", last.1, text.trim()),
            _ => out.push((*n, text)),
        }
        open = cont;
    }
    out
}

/// What `cargo run` runs: `Some(index of its first argument to the binary)` when it runs the
/// gridarena binary, `None` for an example, a bench or another package.
pub fn cargo_run_args(words: &[String], from: usize) -> Option<usize> {
    let mut k = from;
    while k < words.len() {
        match words[k].as_str() {
            "--" => return Some(k + 1),
            "--example" | "--bench" | "--test" | "-p" | "--package" | "--manifest-path" => {
                return None;
            }
            "--bin" if words.get(k + 1).is_some_and(|b| b != "gridarena") => return None,
            w if w.starts_with("--example=") || w.starts_with("--package=") => return None,
            w if w.starts_with("--bin=") && w != "--bin=gridarena" => return None,
            _ => k += 1,
        }
    }
    Some(words.len())
}

// ---------------------------------------------------------------------------------------------
// Check 3: flags.

pub const SEPARATORS: [&str; 10] = ["&&", "||", ";", ">", ">>", "<", "2>", "2>&1", "&", "$"];

/// The arguments of each gridarena command in `words`: after `gridarena` (or a path ending in
/// it) where it is the command (first, after `VAR=value`s, or under a launcher such as
/// `mpirun -np 2` or `xvfb-run -a`; not an argument of a script), or after
/// `cargo run [...] --`, up to a shell separator. A `|` followed by a flag or a bracket is a
/// synopsis's "or", not a pipe.
pub fn invocations(words: &[String]) -> Vec<Vec<String>> {
    const LAUNCHERS: [&str; 10] = [
        "mpirun", "mpiexec", "srun", "time", "timeout", "xvfb-run", "env", "nice", "sudo", "exec",
    ];
    let mut out = Vec::new();
    // The first word of the current command (after any `VAR=value`) and where it is.
    let mut head: Option<(&str, usize)> = None;
    for (i, w) in words.iter().enumerate() {
        if SEPARATORS.contains(&w.as_str()) || (w == "|" && head.is_some()) {
            head = None;
            continue;
        }
        let assignment = w.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        });
        if head.is_none() && !assignment {
            head = Some((w.rsplit('/').next().unwrap(), i));
        }
        let is_bin = w == "gridarena" || w.ends_with("/gridarena");
        let launched = head.is_some_and(|(h, _)| LAUNCHERS.contains(&h));
        let start = if is_bin && (head.is_some_and(|(_, at)| at == i) || launched) {
            Some(i + 1)
        } else if w == "cargo"
            && head.is_some_and(|(_, at)| at == i)
            && words.get(i + 1).is_some_and(|r| r == "run")
        {
            cargo_run_args(words, i + 2)
        } else {
            None
        };
        let Some(s) = start else { continue };
        let mut args = Vec::new();
        for (k, a) in words.iter().enumerate().skip(s) {
            let pipe = a == "|" && !words.get(k + 1).is_some_and(|n| n.starts_with(['-', '[']));
            if pipe || SEPARATORS.contains(&a.as_str()) {
                break;
            }
            args.push(a.trim_end_matches(';').to_string());
            if a.ends_with(';') {
                break;
            }
        }
        out.push(args);
    }
    out
}

/// A fenced block's commands as [`commands`] joins them, and an indented line starting with a
/// flag or a bracket joined to the one above: a synopsis wrapped over lines.
pub fn synopsis_lines(fence: &markdown::Fence) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for (n, line) in commands(fence) {
        let t = line.trim_start();
        match out.last_mut() {
            Some(last) if line.starts_with(' ') && t.starts_with(['[', '-']) => {
                last.1 = format!("{} {t}", last.1)
            }
            _ => out.push((n, line)),
        }
    }
    out
}
