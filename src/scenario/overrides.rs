//! Field overrides on a loaded scenario (`max_steps=100`, `surround=false`,
//! `observation.radius=2`): how Python's `parallel_env(..., **overrides)` and `VecEnv` change
//! an asset without editing it. Values are JSON; the result is validated like a file.

use serde_json::Value;

use super::{LoadedScenario, Scenario};
use crate::error::{ErrorClass, ScenarioError};

/// `scenario` with every `(key, value)` applied in order, then validated; `file` names the
/// result in errors. A key is a dotted path (`substrate.surround`, `observation.radius`) or a
/// bare name, looked up as a scenario field, then a substrate parameter, then an observation
/// field.
///
/// ```
/// use gridarena::scenario::{Scenario, overrides};
/// use serde_json::json;
///
/// let base = Scenario::default_pursuit();
/// let o = [("max_steps".to_string(), json!(100)), ("surround".to_string(), json!(false))];
/// let changed = overrides::apply(&base.scenario, &o, "pursuit")?;
/// assert_eq!(changed.scenario.max_steps, 100);
/// assert!(overrides::apply(&base.scenario, &[("speed".into(), json!(2))], "pursuit").is_err());
/// # Ok::<(), gridarena::error::ScenarioError>(())
/// ```
pub fn apply(
    scenario: &Scenario,
    overrides: &[(String, Value)],
    file: &str,
) -> Result<LoadedScenario, ScenarioError> {
    let err = |class, field: &str, message: String, allowed: String| ScenarioError {
        file: file.to_string(),
        line: 0,
        column: 0,
        class,
        field: field.to_string(),
        message,
        allowed,
    };
    let mut tree = serde_json::to_value(scenario).map_err(|e| {
        err(
            ErrorClass::InvalidValue,
            "",
            format!("cannot represent the scenario: {e}"),
            String::new(),
        )
    })?;
    for (key, value) in overrides {
        let path = resolve(&tree, key).ok_or_else(|| {
            err(
                ErrorClass::UnknownField,
                key,
                format!("no scenario field, substrate parameter or observation field named {key}"),
                names(&tree).join(", "),
            )
        })?;
        // `known` checked that the parent object exists; the key may be new to the tree.
        if let Some((last, parent)) = path.split_last()
            && let Some(Value::Object(o)) = pointer_mut(&mut tree, parent)
        {
            o.insert(last.clone(), value.clone());
        }
    }
    let scenario: Scenario = serde_json::from_value(tree).map_err(|e| {
        err(
            ErrorClass::InvalidValue,
            &overrides
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            format!("an override does not fit its field: {e}"),
            "values of the fields' types (docs/scenarios.md)".into(),
        )
    })?;
    let grid = scenario.validate_at(file, &super::locate::SourceMap::default())?;
    Ok(LoadedScenario { scenario, grid })
}

/// The path in the scenario's JSON tree that `key` names; `None` when nothing does.
fn resolve(tree: &Value, key: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = key.split('.').collect();
    let candidates: Vec<Vec<String>> = if parts.len() > 1 {
        // `substrate.X` skips the substrate enum's variant level.
        let mut p: Vec<String> = parts.iter().map(|s| s.to_string()).collect();
        if p[0] == "substrate" {
            p.insert(1, variant(tree)?);
        }
        vec![p]
    } else {
        let k = key.to_string();
        vec![
            vec![k.clone()],
            vec!["substrate".into(), variant(tree)?, k.clone()],
            vec!["observation".into(), k],
        ]
    };
    candidates.into_iter().find(|p| known(tree, p))
}

/// Whether the path names a field: it exists in the tree, or its parent object does and the
/// types accept a key of that name there (a field the saved form leaves out when it holds
/// its default, or an optional one; every scenario type refuses unknown fields).
fn known(tree: &Value, path: &[String]) -> bool {
    let Some((last, parent)) = path.split_last() else {
        return false;
    };
    let mut probe = tree.clone();
    let Some(Value::Object(o)) = pointer_mut(&mut probe, parent) else {
        return false;
    };
    if o.contains_key(last) {
        return true;
    }
    o.insert(last.clone(), Value::Null);
    match serde_json::from_value::<Scenario>(probe) {
        Ok(_) => true,
        Err(e) => !e.to_string().contains(&format!("unknown field `{last}`")),
    }
}

/// The substrate's variant name in the tree (`Pursuit`, `MatrixGame`, ...).
fn variant(tree: &Value) -> Option<String> {
    tree.get("substrate")?.as_object()?.keys().next().cloned()
}

fn pointer_mut<'a>(tree: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut at = tree;
    for p in path {
        at = at.get_mut(p)?;
    }
    Some(at)
}

/// Every name a bare key may take, for the error message.
fn names(tree: &Value) -> Vec<String> {
    let keys = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut out = keys(Some(tree));
    if let Some(v) = variant(tree) {
        out.extend(keys(tree.get("substrate").and_then(|s| s.get(&v))));
    }
    out.extend(keys(tree.get("observation")));
    out.retain(|k| k != "substrate" && k != "observation");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pursuit() -> Scenario {
        Scenario::default_pursuit().scenario
    }

    fn one(key: &str, v: Value) -> Result<LoadedScenario, ScenarioError> {
        apply(&pursuit(), &[(key.to_string(), v)], "pursuit")
    }

    #[test]
    fn bare_names_reach_scenario_substrate_and_observation_fields() {
        assert_eq!(one("max_steps", json!(7)).unwrap().scenario.max_steps, 7);
        let s = one("surround", json!(false)).unwrap().scenario;
        let crate::substrate::registry::Substrate::Pursuit(p) = &s.substrate else {
            panic!("still pursuit")
        };
        assert!(!p.surround);
        assert_eq!(
            one("radius", json!(2)).unwrap().scenario.observation.radius,
            Some(2)
        );
        assert_eq!(
            one("observation.radius", json!(1))
                .unwrap()
                .scenario
                .observation
                .radius,
            Some(1)
        );
        let s = one("substrate.move_order", json!("pettingzoo"))
            .unwrap()
            .scenario;
        assert_ne!(s, pursuit());
    }

    #[test]
    fn unknown_keys_wrong_types_and_invalid_results_are_refused_with_the_field() {
        let e = one("speed", json!(2)).unwrap_err();
        assert_eq!(e.class, ErrorClass::UnknownField);
        assert!(
            e.allowed.contains("max_steps") && e.allowed.contains("surround"),
            "{e}"
        );
        let e = one("max_steps", json!("long")).unwrap_err();
        assert_eq!(e.class, ErrorClass::InvalidValue, "{e}");
        assert!(e.field.contains("max_steps"));
        // Valid type, invalid scenario: a radius-9 window (19x19) is larger than the 16x16 map.
        let e = one("radius", json!(9)).unwrap_err();
        assert!(e.to_string().contains("radius"), "{e}");
        assert!(one("substrate.nothing", json!(1)).is_err());
    }

    #[test]
    fn no_overrides_is_the_scenario_itself() {
        assert_eq!(apply(&pursuit(), &[], "p").unwrap().scenario, pursuit());
    }
}
