//! Every broken asset under tests/data/bad/ is refused with file:line:column, the field and
//! what is allowed, by the library and by `gridarena check`, never with a panic.

use std::path::PathBuf;
use std::process::Command;

use gridarena::error::ErrorClass;
use gridarena::scenario::Scenario;

fn bad_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("tests/data/bad")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ron"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "at least ten broken scenarios");
    files
}

fn expected_class(path: &PathBuf) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let first = text.lines().next().unwrap();
    first
        .strip_prefix("// expect: ")
        .expect("first line names the class")
        .trim()
        .to_string()
}

#[test]
fn every_bad_file_is_refused_with_its_class_and_a_position() {
    let mut classes = std::collections::HashSet::new();
    for path in bad_files() {
        let err = Scenario::load(&path).expect_err(&path.display().to_string());
        assert_eq!(
            format!("{:?}", err.class),
            expected_class(&path),
            "{}: {err}",
            path.display()
        );
        assert!(
            err.line >= 1 && err.column >= 1,
            "{}: no position in {err}",
            path.display()
        );
        assert!(
            !err.allowed.is_empty(),
            "{}: no allowed values in {err}",
            path.display()
        );
        classes.insert(format!("{:?}", err.class));
    }
    assert!(
        classes.len() >= 9,
        "one file per error class, got {classes:?}"
    );
}

#[test]
fn positions_point_at_the_offending_text() {
    let cases = [
        ("unknown_field.ron", 16, 5, "slipp"),
        ("ragged_map.ron", 8, 9, "map[2]"),
        ("unknown_symbol.ron", 8, 12, "map[2]"),
        ("slip_out_of_range.ron", 15, 5, "slip"),
        ("too_many_agents.ron", 12, 25, "roles[0].count"),
        ("window_too_large.ron", 17, 19, "observation.radius"),
        ("wrong_type.ron", 16, 16, "max_steps"),
        ("unknown_role_kind.ron", 13, 16, "roles[1].kind"),
        ("missing_field.ron", 17, 1, "max_steps"),
        (
            "chem_unknown_compound.ron",
            11,
            65,
            "substrate.reactions[0].products[1]",
        ),
        (
            "chem_count_mismatch.ron",
            11,
            49,
            "substrate.reactions[0].products",
        ),
        ("chem_probability.ron", 5, 33, "substrate.groups[0].ground"),
        ("matrix_rows.ron", 6, 9, "substrate.payoffs"),
        ("matrix_row_width.ron", 8, 13, "substrate.payoffs[1]"),
        ("cue_length.ron", 9, 5, "max_steps"),
    ];
    for (file, line, column, field) in cases {
        let err = Scenario::load(&PathBuf::from("tests/data/bad").join(file)).unwrap_err();
        assert_eq!(
            (err.line, err.column, err.field.as_str()),
            (line, column, field),
            "{file}: {err}"
        );
        assert!(
            err.to_string()
                .starts_with(&format!("tests/data/bad/{file}:{line}:{column}: "))
        );
    }
}

#[test]
fn the_check_command_exits_nonzero_with_the_location_and_never_panics() {
    for path in bad_files() {
        let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
            .arg("check")
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", path.display());
        assert!(!stderr.contains("panicked"), "{}: {stderr}", path.display());
        assert!(stderr.contains(&format!("{}:", path.display())), "{stderr}");
        assert!(stderr.contains("allowed:"), "{stderr}");
    }
}

#[test]
fn the_check_command_accepts_every_shipped_scenario() {
    for entry in std::fs::read_dir("assets/scenarios").unwrap() {
        let path = entry.unwrap().path();
        let out = Command::new(env!("CARGO_BIN_EXE_gridarena"))
            .arg("check")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("ok: "));
    }
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let err = Scenario::load(&PathBuf::from("tests/data/does_not_exist.ron")).unwrap_err();
    assert_eq!(err.class, ErrorClass::Io);
}

#[test]
fn the_documented_example_is_a_valid_scenario() {
    let doc = std::fs::read_to_string("docs/scenarios.md").unwrap();
    let start = doc.find("```ron\n").expect("a ron block") + "```ron\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let loaded =
        Scenario::parse(&doc[start..end], "docs/scenarios.md").unwrap_or_else(|e| panic!("{e}"));
    let shipped = Scenario::load(std::path::Path::new("assets/scenarios/pursuit_3.ron")).unwrap();
    assert_eq!(
        loaded.scenario, shipped.scenario,
        "the docs example is pursuit_3.ron"
    );
}

#[test]
fn evaders_walk_at_random_and_pursuers_learn_unless_told_otherwise() {
    let src = std::fs::read_to_string("tests/data/tiny_ok.ron").unwrap();
    let src = src.replace(", control: learner", "");
    let loaded = Scenario::parse(&src, "tiny").unwrap();
    let controls: Vec<_> = loaded.scenario.roles.iter().map(|r| r.control()).collect();
    use gridarena::scenario::Control;
    assert_eq!(controls, vec![Control::Learner, Control::RandomWalk]);
    assert_eq!(loaded.scenario.learners_per_arena(), 1);
}
