//! README.md and docs/ describe the project as it is: no commit hashes, no issue numbers and no
//! dates (measurement history lives in benches/HISTORY.md, the one dated file), and the README
//! stays a short front door. `GRIDARENA_DOCS_ROOT` points the check at another copy of the docs
//! (default: this crate).

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

/// An ISO date, YYYY-MM-DD with a year 2000-2099, a month 01-12 and a day 01-31, not part of a
/// longer number: "measured 2026-12-01" is history; say how to measure it instead.
fn iso_dates(line: &str) -> Vec<&str> {
    let b = line.as_bytes();
    let digits = |w: &[u8], at: &[usize]| at.iter().all(|&i| w[i].is_ascii_digit());
    let number = |w: &[u8]| u32::from(w[0] - b'0') * 10 + u32::from(w[1] - b'0');
    b.windows(10)
        .enumerate()
        .filter(|&(i, w)| {
            w.starts_with(b"20")
                && digits(w, &[2, 3, 5, 6, 8, 9])
                && w[4] == b'-'
                && w[7] == b'-'
                && (1..=12).contains(&number(&w[5..7]))
                && (1..=31).contains(&number(&w[8..10]))
                && (i == 0 || !b[i - 1].is_ascii_digit())
                && !b.get(i + 10).is_some_and(u8::is_ascii_digit)
        })
        .map(|(i, _)| &line[i..i + 10])
        .collect()
}

#[test]
fn no_commit_hashes_issue_numbers_or_dates_in_readme_or_docs() {
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
            for d in iso_dates(line) {
                problems.push(format!("{rel}:{}: date {d}", n + 1));
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

#[test]
fn the_date_pattern_catches_iso_dates_and_spares_other_numbers() {
    assert_eq!(
        iso_dates("2026-12-01: measured 2026-12-06T10:00 and (2099-01-31)."),
        ["2026-12-01", "2026-12-06", "2099-01-31"]
    );
    assert!(
        iso_dates("1999-12-31, 2100-01-01, 2026-13-01, 2026-12-00, 2026-12-32, 12026-12-01")
            .is_empty()
    );
    assert!(iso_dates("2026-12-011, years 2000-2099, 4096-32-16, 2026/12/01, 2026-1-1").is_empty());
}
