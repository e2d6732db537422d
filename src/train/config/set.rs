//! `RunConfig::set`: one `--set key=value` override, applied by replacing that field's line
//! in the configuration's RON form (or adding it, for a field the saved form omits) and
//! parsing the result back, so the value is read exactly as in a file.

use super::{ConfigError, OMITTED_WHEN_DEFAULT, RunConfig};

impl RunConfig {
    /// Applies `key=value` (the value in RON syntax, e.g. `lr=1e-3`, `shared=true`,
    /// `scenario="assets/scenarios/coin_game.ron"`).
    pub fn set(&mut self, assignment: &str) -> Result<(), ConfigError> {
        let bad = |message: String| ConfigError::Override {
            assignment: assignment.to_string(),
            message,
        };
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| bad("expected key=value".into()))?;
        let key = key.trim();
        // Every field sits on its own line of the pretty form: replace that line.
        let current =
            ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default().depth_limit(1))
                .map_err(|e| bad(e.to_string()))?;
        let prefix = format!("{key}:");
        let mut found = false;
        let mut fields = Vec::new();
        let text: Vec<String> = current
            .lines()
            .map(|line| {
                let t = line.trim_start();
                if let Some((name, _)) = t.split_once(':')
                    && line.starts_with("    ")
                    && !line.starts_with("     ")
                {
                    fields.push(name.to_string());
                }
                if line.starts_with("    ") && t.starts_with(&prefix) {
                    found = true;
                    format!("    {key}: {},", value.trim())
                } else {
                    line.to_string()
                }
            })
            .collect();
        let mut text = text;
        // Fields left out of the saved form while they hold their default go in as new lines.
        fields.extend(OMITTED_WHEN_DEFAULT.iter().map(|f| f.to_string()));
        if !found && OMITTED_WHEN_DEFAULT.contains(&key) {
            let close = text.len().saturating_sub(1);
            text.insert(close, format!("    {key}: {},", value.trim()));
            found = true;
        }
        if !found {
            return Err(bad(format!(
                "unknown field; fields are: {}",
                fields.join(", ")
            )));
        }
        let text = text.join("\n");
        *self = crate::scenario::ron_options()
            .from_str(&text)
            .map_err(|e| bad(e.to_string()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn overrides_change_one_field_and_refuse_unknown_ones() {
        let mut c = RunConfig::default();
        c.set("lr=0.001").unwrap();
        c.set("shared=true").unwrap();
        c.set(r#"scenario="assets/scenarios/coin_game.ron""#)
            .unwrap();
        assert_eq!((c.lr, c.shared), (0.001, true));
        assert_eq!(
            c.scenario.as_deref(),
            Some(Path::new("assets/scenarios/coin_game.ron"))
        );
        assert!(
            c.set("learning_rate=1")
                .unwrap_err()
                .to_string()
                .contains("unknown field")
        );
        assert!(c.set("lr").is_err());
        assert!(c.set("arenas=-3").is_err());
    }
}
