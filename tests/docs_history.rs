//! README.md and docs/ describe the project as it is: no commit hashes and no issue numbers
//! (measurement history lives in benches/HISTORY.md), and the README stays a short front door. `GRIDARENA_DOCS_ROOT` points the check at
//! another copy of the docs (default: this crate).

use std::path::{Path, PathBuf};

fn markdown_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut out);
    out.sort();
    out
}

/// A word of 7 to 40 hexadecimal digits with at least one letter and one digit: a commit
/// hash, full or abbreviated (plain numbers such as 1000000 are not).
fn commit_hashes(line: &str) -> Vec<&str> {
    line.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            (7..=40).contains(&w.len())
                && w.chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
                && w.chars().any(|c| c.is_ascii_digit())
                && w.chars().any(|c| c.is_ascii_alphabetic())
        })
        .collect()
}

/// "issue 15", "issues 3 and 4", "Issue #12", or a bare "#12" not inside a word or a path.
fn issue_numbers(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let lower = line.to_ascii_lowercase();
    for (i, _) in lower.match_indices("issue") {
        let rest = lower[i + 5..].trim_start_matches('s').trim_start();
        let rest = rest.strip_prefix('#').unwrap_or(rest);
        if rest.starts_with(|c: char| c.is_ascii_digit()) {
            found.push(line[i..(i + 12).min(line.len())].to_string());
        }
    }
    let bytes = line.as_bytes();
    for (i, _) in line.match_indices('#') {
        let before_ok =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || b"/&#".contains(&bytes[i - 1]));
        let digits = line[i + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        if before_ok && digits > 0 {
            found.push(line[i..i + 1 + digits].to_string());
        }
    }
    found
}

#[test]
fn no_commit_hashes_or_issue_numbers_in_readme_or_docs() {
    let root = std::env::var_os("GRIDARENA_DOCS_ROOT")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let mut problems = Vec::new();
    for path in markdown_files(&root) {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let rel = path.strip_prefix(&root).unwrap().display().to_string();
        for (n, line) in text.lines().enumerate() {
            for h in commit_hashes(line) {
                problems.push(format!("{rel}:{}: commit hash {h}", n + 1));
            }
            for i in issue_numbers(line) {
                problems.push(format!("{rel}:{}: issue number {i:?}", n + 1));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "README.md and docs/ state what is, without history (keep it in benches/HISTORY.md):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_readme_is_a_front_door_of_at_most_300_lines() {
    let root = std::env::var_os("GRIDARENA_DOCS_ROOT")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let lines = std::fs::read_to_string(root.join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; move detail into docs/ (at most 300)"
    );
}

#[test]
fn the_patterns_catch_hashes_and_issues_and_spare_numbers() {
    assert_eq!(
        commit_hashes("measured at `e5e42d5` and 0b30b5e3f"),
        ["e5e42d5", "0b30b5e3f"]
    );
    assert!(commit_hashes("--steps 1000000, 4096 arenas, a decade, deadbeef").is_empty());
    assert_eq!(
        issue_numbers("issue 15 and Issues #3"),
        ["issue 15 and", "Issues #3", "#3"]
    );
    assert_eq!(issue_numbers("see #12."), ["#12"]);
    assert!(issue_numbers("## 2 Heading, [x](a.md#h2), &#39;, issue of scale").is_empty());
}
