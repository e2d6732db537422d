//! Templates for new scenario assets (`gridarena new SUBSTRATE NAME.ron`): one commented asset
//! per substrate (its folder's `template.ron`, required by the substrate trait), listing every
//! field with its default and meaning, valid as written. Writing one names the scenario after
//! the file's stem and never replaces an existing file unless asked to.

use std::io;
use std::path::{Path, PathBuf};

use crate::substrate::registry::Substrate;

/// The name a template is written with; [`render`] replaces it (in `name: "NAME"` and in the
/// header's `NAME.ron`).
pub const NAME_PLACEHOLDER: &str = "NAME";

/// The most characters a scenario name written by [`write_new`] may have.
pub const MAX_NAME_LEN: usize = 64;

/// Why a template could not be rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// No substrate has this name.
    #[error("unknown substrate {name:?}; known: {known}")]
    UnknownSubstrate {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// The file name does not give a usable scenario name.
    #[error("{path}: {reason}")]
    BadName {
        /// The file asked for.
        path: PathBuf,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// Something is already at the path (and it was left untouched).
    #[error("{path} already exists; it was left unchanged")]
    Exists {
        /// The file asked for.
        path: PathBuf,
    },
    /// Filesystem problem.
    #[error("{path}: {error}")]
    Io {
        /// The file asked for.
        path: PathBuf,
        /// The cause.
        error: io::Error,
    },
}

/// Every substrate's name and template, in registry order.
pub fn templates() -> &'static [(&'static str, &'static str)] {
    Substrate::templates()
}

/// Every substrate's name and one-line summary, in registry order.
pub fn summaries() -> &'static [(&'static str, &'static str)] {
    Substrate::summaries()
}

/// The template of the substrate named `substrate` (its lower-case name, e.g. `coin_game`).
pub fn template(substrate: &str) -> Result<&'static str, TemplateError> {
    templates()
        .iter()
        .find(|(name, _)| *name == substrate)
        .map(|(_, text)| *text)
        .ok_or_else(|| TemplateError::UnknownSubstrate {
            name: substrate.to_string(),
            known: templates()
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Whether `name` is usable as a written scenario's name: 1 to [`MAX_NAME_LEN`] ASCII letters,
/// digits, `_` and `-`, starting with a letter or digit (it becomes a RON string, appears in
/// reports and suits a run directory). `Err` says what is wrong.
pub fn check_name(name: &str) -> Result<(), String> {
    let allowed = format!(
        "1 to {MAX_NAME_LEN} ASCII letters, digits, '_' and '-', starting with a letter or digit"
    );
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    let all_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if first_ok && all_ok && name.len() <= MAX_NAME_LEN {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a usable scenario name; allowed: {allowed}"
        ))
    }
}

/// The scenario name a file gets: its stem. The file must end in `.ron` and its stem pass
/// [`check_name`].
pub fn name_for(path: &Path) -> Result<String, TemplateError> {
    let bad = |reason: String| TemplateError::BadName {
        path: path.to_path_buf(),
        reason,
    };
    if path.extension().and_then(|e| e.to_str()) != Some("ron") {
        return Err(bad(
            "a scenario file name ends in .ron, e.g. my_scenario.ron".into(),
        ));
    }
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| bad("the file name is not UTF-8 text".into()))?;
    check_name(stem).map_err(bad)?;
    Ok(stem.to_string())
}

/// The template of `substrate` with its name set to `name` (which must pass [`check_name`]).
pub fn render(substrate: &str, name: &str) -> Result<String, TemplateError> {
    let text = template(substrate)?;
    check_name(name).map_err(|reason| TemplateError::BadName {
        path: PathBuf::from(format!("{name}.ron")),
        reason,
    })?;
    Ok(text
        .replacen(
            &format!("name: \"{NAME_PLACEHOLDER}\""),
            &format!("name: \"{name}\""),
            1,
        )
        .replace(&format!("{NAME_PLACEHOLDER}.ron"), &format!("{name}.ron")))
}

/// Writes the template of `substrate` to `path` atomically, named after the file's stem;
/// refuses ([`TemplateError::Exists`], file untouched) when something is already there
/// unless `force`. Returns the scenario's name.
pub fn write_new(substrate: &str, path: &Path, force: bool) -> Result<String, TemplateError> {
    let name = name_for(path)?;
    let text = render(substrate, &name)?;
    let result = if force {
        crate::atomic::write_atomic(path, text.as_bytes())
    } else {
        crate::atomic::write_atomic_new(path, text.as_bytes())
    };
    result.map_err(|error| match error.kind() {
        io::ErrorKind::AlreadyExists => TemplateError::Exists {
            path: path.to_path_buf(),
        },
        _ => TemplateError::Io {
            path: path.to_path_buf(),
            error,
        },
    })?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_replace_the_placeholder() {
        assert!(check_name("my-hunt_2").is_ok());
        for bad in ["", "-x", "_x", "a b", "a\"b", "a/b", "é", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        let text = render("coin_game", "duel").unwrap();
        assert!(text.contains("name: \"duel\""), "{text}");
        assert!(
            text.contains("gridarena check --explain duel.ron"),
            "{text}"
        );
        assert!(!text.contains(NAME_PLACEHOLDER), "{text}");
        assert!(matches!(
            render("coins", "duel"),
            Err(TemplateError::UnknownSubstrate { .. })
        ));
    }

    #[test]
    fn the_file_must_be_a_ron_file_with_a_usable_stem() {
        assert_eq!(name_for(Path::new("dir/hunt.ron")).unwrap(), "hunt");
        for bad in ["hunt", "hunt.txt", "my hunt.ron", ".ron", "a.b.ron"] {
            assert!(
                matches!(name_for(Path::new(bad)), Err(TemplateError::BadName { .. })),
                "{bad}"
            );
        }
    }
}
