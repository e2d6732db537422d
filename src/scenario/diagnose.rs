//! Turning RON parse errors into located, explained scenario errors.

use crate::error::{ErrorClass, ScenarioError};

use super::locate::{Pos, SourceMap, path_string};

/// What a field accepts, for error messages (indices normalised to `[]`).
fn field_help(path: &str) -> Option<&'static str> {
    let mut normal = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                normal.push('[');
            }
            ']' => {
                in_index = false;
                normal.push(']');
            }
            _ if in_index => {}
            _ => normal.push(c),
        }
    }
    Some(match normal.as_str() {
        "name" | "description" => "a string in double quotes",
        "substrate" => "Pursuit((...))",
        f if f.starts_with("substrate.") => return super::Substrate::field_help(f),
        "map" => "a list of strings, one per row",
        "map[]" => "a string of legend symbols",
        "roles" => "a list of (kind: ..., count: ..., control: ...)",
        "roles[].kind" => "pursuer, evader",
        "roles[].count" => "a whole number 1..65535",
        "roles[].control" => "learner, random_walk (default: pursuers learn, evaders walk)",
        "actions" => "move5",
        "slip" => "a number in [0, 1]",
        "max_steps" => "a whole number 1..4294967295",
        "observation" => "(radius: ..., channels: [...])",
        "observation.radius" => "a whole number 0..65535",
        "observation.channels" | "observation.channels[]" => "obstacle, pursuers, evaders",
        _ => return None,
    })
}

/// Turns a RON error into a located scenario error.
pub(super) fn ron_error(
    e: ron::error::SpannedError,
    src: &str,
    file: &str,
    map: &SourceMap,
) -> ScenarioError {
    use ron::error::Error as E;
    let pos = skip_blanks(
        src,
        Pos {
            line: e.span.start.line.max(1),
            col: e.span.start.col.max(1),
        },
    );
    let mut field = path_string(&map.path_at(pos));
    let help = |field: &str, fallback: &str| field_help(field).unwrap_or(fallback).to_string();
    let (class, message, allowed) = match &e.code {
        E::NoSuchStructField {
            expected,
            found,
            outer,
        } => {
            field = join_field(&field_parent(&field, found), found);
            (
                ErrorClass::UnknownField,
                format!(
                    "unknown field `{found}`{}",
                    outer
                        .as_ref()
                        .map(|o| format!(" in {o}"))
                        .unwrap_or_default()
                ),
                expected.join(", "),
            )
        }
        E::MissingStructField {
            field: missing,
            outer,
        } => {
            field = join_field(&field, missing);
            (
                ErrorClass::MissingField,
                format!(
                    "missing field `{missing}`{} (the struct ends here)",
                    outer
                        .as_ref()
                        .map(|o| format!(" in {o}"))
                        .unwrap_or_default()
                ),
                format!(
                    "add `{missing}: ...` ({})",
                    help(&field, "see docs/scenarios.md")
                ),
            )
        }
        E::NoSuchEnumVariant {
            expected,
            found,
            outer,
        } => (
            ErrorClass::WrongType,
            format!(
                "unknown variant `{found}`{}",
                outer
                    .as_ref()
                    .map(|o| format!(" of {o}"))
                    .unwrap_or_default()
            ),
            expected.join(", "),
        ),
        E::InvalidValueForType { expected, found } => (
            ErrorClass::WrongType,
            format!("found {found}"),
            help(&field, expected),
        ),
        E::ExpectedDifferentLength { expected, found } => (
            ErrorClass::WrongType,
            format!("found {found} elements"),
            help(&field, expected),
        ),
        E::Message(m) => (
            ErrorClass::WrongType,
            m.clone(),
            help(&field, "see docs/scenarios.md"),
        ),
        E::ExpectedInteger
        | E::ExpectedFloat
        | E::ExpectedString
        | E::ExpectedStringEnd
        | E::ExpectedBoolean
        | E::ExpectedArray
        | E::ExpectedStructLike
        | E::ExpectedNamedStructLike(_)
        | E::ExpectedUnit
        | E::ExpectedChar
        | E::ExpectedOption
        | E::IntegerOutOfBounds => (
            ErrorClass::WrongType,
            format!("{}", e.code),
            help(&field, "see docs/scenarios.md"),
        ),
        other => (
            ErrorClass::Syntax,
            other.to_string(),
            "RON syntax, see docs/scenarios.md".into(),
        ),
    };
    ScenarioError {
        file: file.to_string(),
        line: pos.line,
        column: pos.col,
        class,
        field,
        message,
        allowed,
    }
}

/// Moves a position forward over spaces on its line, so it lands on the offending token.
fn skip_blanks(src: &str, pos: Pos) -> Pos {
    let Some(line) = src.lines().nth(pos.line - 1) else {
        return pos;
    };
    let skipped = line
        .chars()
        .skip(pos.col - 1)
        .take_while(|c| *c == ' ' || *c == '\t')
        .count();
    let rest = line.chars().count().saturating_sub(pos.col - 1);
    if skipped < rest {
        Pos {
            line: pos.line,
            col: pos.col + skipped,
        }
    } else {
        pos
    }
}

/// The path of the struct holding `key`, given the path the scanner saw at the key.
fn field_parent(path: &str, key: &str) -> String {
    path.strip_suffix(key)
        .map(|p| p.trim_end_matches('.').to_string())
        .unwrap_or_default()
}

fn join_field(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}
