//! `RunConfig::set`: one `--set key=value` override. The key is a dotted path (`learn.lr`), a
//! common field (`arenas`), a bare field name one section holds (`lr`) or several hold
//! (`epochs`: the section the configuration's `algo` reads), or a section with a RON struct of
//! some of its fields (`network=(hidden: 64)`); the bare `network=gru` is the old flat field,
//! `network.kind`. The value replaces that field's value in the configuration's RON form,
//! which is parsed back, so it is read exactly as in a file.

use super::keys::{self, Key, Section};
use super::migrate::{Fields, is_struct, split_struct};
use super::{ConfigError, RunConfig};

/// `text` with the value of its entry `key` (in the struct `fields` split from it) replaced by
/// `value`, or the entry added.
fn replace(text: &str, fields: &Fields<'_>, key: &str, value: &str) -> String {
    match fields.entries.iter().find(|e| e.key == key) {
        Some(e) => format!(
            "{}{value}{}",
            &text[..e.value_at],
            &text[e.value_at + e.value.len()..]
        ),
        None => format!(
            "{}{key}: {value},{}",
            &text[..fields.close],
            &text[fields.close..]
        ),
    }
}

/// Whether `value` is one RON value (not `1, hidden: 2`).
fn single(value: &str) -> bool {
    let wrapped = format!("(v: {value})");
    split_struct(&wrapped).is_some_and(|f| f.entries.len() == 1 && f.entries[0].value == value)
}

impl RunConfig {
    /// Applies `key=value` (the value in RON syntax, e.g. `lr=1e-3`, `learn.lr=1e-3`,
    /// `network.shared=true`, `scenario="assets/scenarios/coin_game.ron"`).
    pub fn set(&mut self, assignment: &str) -> Result<(), ConfigError> {
        let bad = |message: String| ConfigError::Override {
            assignment: assignment.to_string(),
            message,
        };
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| bad("expected key=value".into()))?;
        let (key, value) = (key.trim(), value.trim());
        let mut next = self.clone();
        match keys::resolve(key, self.algo).map_err(bad)? {
            Key::Section(Section::Network) if !is_struct(value) => {
                next.set_field(Key::Field(Section::Network, "kind"), value)
            }
            Key::Section(s) => {
                let fields = split_struct(value).ok_or_else(|| {
                    bad(format!(
                        "`{}` is a section: give some of its fields as a RON struct, e.g. \
                         `{}=({}: ...)`, or one field as `{}.{}=...`",
                        s.name(),
                        s.name(),
                        s.fields()[0],
                        s.name(),
                        s.fields()[0]
                    ))
                })?;
                fields.entries.iter().try_for_each(|e| {
                    let field = s
                        .field(e.key)
                        .ok_or_else(|| keys::not_in_section(s, e.key))?;
                    next.set_field(Key::Field(s, field), e.value)
                })
            }
            key => next.set_field(key, value),
        }
        .map_err(bad)?;
        *self = next;
        Ok(())
    }

    /// Applies every `key=value` in order, except that those setting `algo` go first: a bare
    /// name several sections hold (`epochs`) then resolves with the algorithm the assignments
    /// end with, wherever `algo=` stands among them.
    pub fn set_all<S: AsRef<str>>(&mut self, assignments: &[S]) -> Result<(), ConfigError> {
        let sets_algo = |a: &S| {
            a.as_ref()
                .split_once('=')
                .is_some_and(|(k, _)| keys::common(k.trim()) == Some("algo"))
        };
        let (algo, rest): (Vec<&S>, Vec<&S>) = assignments.iter().partition(|a| sets_algo(a));
        algo.into_iter()
            .chain(rest)
            .try_for_each(|a| self.set(a.as_ref()))
    }

    /// Sets one field (`key` is a common field or a section's) to the RON `value`.
    fn set_field(&mut self, key: Key, value: &str) -> Result<(), String> {
        if !single(value) {
            return Err(format!("`{value}` is not one RON value"));
        }
        let text = self.to_ron();
        let top = split_struct(&text).ok_or("the configuration's own form does not split")?;
        let edited = match key {
            Key::Common(field) => replace(&text, &top, field, value),
            Key::Field(s, field) => {
                let Some(section) = top.entries.iter().find(|e| e.key == s.name()) else {
                    return Err(format!("no section `{}`", s.name()));
                };
                let inner = split_struct(section.value)
                    .ok_or("the configuration's own form does not split")?;
                let new_section = replace(section.value, &inner, field, value);
                format!(
                    "{}{new_section}{}",
                    &text[..section.value_at],
                    &text[section.value_at + section.value.len()..]
                )
            }
            Key::Section(s) => return Err(format!("`{}` is a section", s.name())),
        };
        let parsed: RunConfig = crate::scenario::ron_options()
            .from_str(&edited)
            .map_err(|e| format!("{}: {}", key.path(), e.code))?;
        *self = RunConfig {
            replica_shard: self.replica_shard,
            ..parsed
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::config::{Algo, NetworkKind};
    use std::path::Path;

    #[test]
    fn overrides_change_one_field_and_refuse_unknown_ones() {
        let mut c = RunConfig::default();
        c.set("lr=0.001").unwrap();
        c.set("network.shared=true").unwrap();
        c.set(r#"scenario="assets/scenarios/coin_game.ron""#)
            .unwrap();
        assert_eq!((c.learn.lr, c.network.shared), (0.001, true));
        assert_eq!(
            c.scenario.as_deref(),
            Some(Path::new("assets/scenarios/coin_game.ron"))
        );
        let unknown = c.set("learning_rate=1").unwrap_err().to_string();
        assert!(unknown.contains("unknown field"), "{unknown}");
        assert!(unknown.contains("learn.lr"), "{unknown}");
        assert!(c.set("lr").is_err());
        assert!(c.set("arenas=-3").is_err());
        // One value only: no second field smuggled in.
        assert!(c.set("lr=1e-3, gamma: 0.5").is_err());
        assert!(c.set("lr=1e-3), pqn: (epochs: 9").is_err());
        assert_eq!((c.learn.lr, c.learn.gamma, c.pqn.epochs), (0.001, 0.99, 2));
    }

    #[test]
    fn dotted_and_bare_keys_set_the_same_field() {
        let mut dotted = RunConfig::default();
        let mut bare = RunConfig::default();
        for (d, b) in [
            ("learn.lr=1e-3", "lr=1e-3"),
            ("network.hidden=64", "hidden=64"),
            ("pqn.epochs=3", "epochs=3"),
            ("pqn.epochs=4", "num_epochs=4"),
            ("network.kind=gru", "network=gru"),
            ("network.layers=1", "layers=1"),
            ("pqn.lambda=0.5", "lambda=0.5"),
        ] {
            dotted.set(d).unwrap();
            bare.set(b).unwrap();
        }
        assert_eq!(dotted, bare);
        assert_eq!(dotted.network.kind, NetworkKind::Gru);
        assert_eq!((dotted.learn.lr, dotted.network.hidden), (1e-3, 64));
        // A section given as a struct sets the fields it names and keeps the others.
        let mut c = RunConfig::default();
        c.set("network=(hidden: 32, shared: true)").unwrap();
        assert_eq!(
            (c.network.hidden, c.network.shared, c.network.layers),
            (32, true, 2)
        );
        assert!(
            c.set("learn=(epochs: 2)")
                .unwrap_err()
                .to_string()
                .contains("pqn.epochs")
        );
        assert!(c.set("learn=3").is_err());
    }

    #[test]
    fn a_bare_name_several_sections_hold_follows_the_algo_or_is_refused() {
        let mut c = RunConfig::default();
        c.set("algo=pr2_iql").unwrap();
        c.set("epochs=5").unwrap();
        c.set("target_tau=0.2").unwrap();
        assert_eq!((c.pr2.epochs, c.pqn.epochs, c.online_dqn.epochs), (5, 2, 2));
        assert_eq!((c.iql.target_tau, c.online_dqn.target_tau), (0.2, 0.01));
        c.algo = Algo::OnlineDqn;
        c.set("target_tau=0.3").unwrap();
        assert_eq!(c.online_dqn.target_tau, 0.3);
        c.algo = Algo::Iql;
        let err = c.set("minibatches=2").unwrap_err().to_string();
        assert!(
            err.contains("`pqn.minibatches`, `pr2.minibatches`, `online_dqn.minibatches` or `ppo.minibatches`"),
            "{err}"
        );
        c.set("pr2.minibatches=2").unwrap();
        assert_eq!(c.pr2.minibatches, 2);
        // Among several assignments, `algo` is set first wherever it stands.
        let mut c = RunConfig::default();
        c.set_all(&["epochs=3", "algo=online_dqn", "target_tau=0.5"])
            .unwrap();
        assert_eq!((c.online_dqn.epochs, c.online_dqn.target_tau), (3, 0.5));
        assert_eq!((c.pqn.epochs, c.iql.target_tau), (2, 0.01));
    }
}
