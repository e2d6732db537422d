//! [`Check`]: how validation locates and words a failure (file:line:column from the source
//! map, the field path, what is allowed). The scenario's own checks (validate.rs) and every
//! substrate's checks (`SubstrateRules::check_*`) report through it.

use crate::error::{ErrorClass, ScenarioError};

use super::locate::{PathSeg, Pos, SourceMap, path_string};
use super::observation::ObservationSpec;

/// The file being checked and its source map.
pub(crate) struct Check<'a> {
    pub(crate) file: &'a str,
    pub(crate) src: &'a SourceMap,
}

/// A field segment of a path.
pub(crate) fn f(s: &str) -> PathSeg {
    PathSeg::Field(s.to_string())
}

/// An index segment of a path.
pub(crate) fn i(n: usize) -> PathSeg {
    PathSeg::Index(n)
}

impl Check<'_> {
    /// A located error of any class; `pos` overrides the field's own position.
    pub(crate) fn at(
        &self,
        path: &[PathSeg],
        pos: Option<Pos>,
        class: ErrorClass,
        message: String,
        allowed: String,
    ) -> ScenarioError {
        let at = pos.unwrap_or_else(|| self.src.find_or_parent(path));
        ScenarioError {
            file: self.file.to_string(),
            line: at.line,
            column: at.col,
            class,
            field: path_string(path),
            message,
            allowed,
        }
    }

    /// A located invalid value.
    pub(crate) fn bad(
        &self,
        path: &[PathSeg],
        message: String,
        allowed: impl Into<String>,
    ) -> ScenarioError {
        self.at(
            path,
            None,
            ErrorClass::InvalidValue,
            message,
            allowed.into(),
        )
    }

    /// Checks a probability lies in [0, 1].
    pub(crate) fn probability(&self, path: &[PathSeg], p: f64) -> Result<(), ScenarioError> {
        if (0.0..=1.0).contains(&p) {
            Ok(())
        } else {
            Err(self.bad(path, format!("probability {p}"), "a probability in [0, 1]"))
        }
    }

    /// Checks a number is finite.
    pub(crate) fn finite(&self, path: &[PathSeg], v: f32) -> Result<(), ScenarioError> {
        if v.is_finite() {
            Ok(())
        } else {
            Err(self.bad(path, format!("{v}"), "a finite number"))
        }
    }

    /// `name does not use observation.<field>` for the first of `fields` the spec sets.
    pub(crate) fn observation_unused(
        &self,
        name: &str,
        obs: &ObservationSpec,
        fields: &[&str],
    ) -> Result<(), ScenarioError> {
        for &field in fields {
            let set = match field {
                "radius" => obs.radius.is_some(),
                "window" => obs.window.is_some(),
                _ => !obs.channels.is_empty(),
            };
            if set {
                return Err(self.bad(
                    &[f("observation"), f(field)],
                    format!("{name} does not use observation.{field}"),
                    format!("leave `{field}` out"),
                ));
            }
        }
        Ok(())
    }
}
