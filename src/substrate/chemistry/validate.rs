//! chemistry's parameter checks: the reaction graph must be well formed.

use super::ChemistryParams;
use crate::error::{ErrorClass, ScenarioError};
use crate::scenario::check::{Check, f, i};
use crate::scenario::map::{self, Tile};

/// The most reactants (and products) one chemistry reaction may have.
pub const MAX_REACTANTS: usize = 8;

/// Compounds, groups and reactions: names and symbols unique and outside the legend, groups
/// and compounds known, probabilities in [0, 1], as many products as reactants.
pub(super) fn check_params(p: &ChemistryParams, c: &Check) -> Result<(), ScenarioError> {
    let at = |list: &str, k: usize, field: &str| vec![f("substrate"), f(list), i(k), f(field)];
    if p.compounds.is_empty() || p.compounds.len() > 254 {
        return Err(c.at(
            &[f("substrate"), f("compounds")],
            None,
            ErrorClass::ReactionGraph,
            format!("{} compounds", p.compounds.len()),
            "1 to 254 compounds".into(),
        ));
    }
    for (k, g) in p.groups.iter().enumerate() {
        if p.groups[..k].iter().any(|h| h.name == g.name) {
            return Err(c.at(
                &at("groups", k, "name"),
                None,
                ErrorClass::ReactionGraph,
                format!("group {:?} is defined twice", g.name),
                "unique group names".into(),
            ));
        }
        c.probability(&at("groups", k, "ground"), g.ground)?;
        c.probability(&at("groups", k, "vesicle"), g.vesicle)?;
    }
    let group_names = || {
        p.groups
            .iter()
            .map(|g| g.name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (k, comp) in p.compounds.iter().enumerate() {
        if comp.name == "empty" || p.compounds[..k].iter().any(|d| d.name == comp.name) {
            return Err(c.at(
                &at("compounds", k, "name"),
                None,
                ErrorClass::ReactionGraph,
                format!("compound name {:?} is taken", comp.name),
                "unique names other than \"empty\"".into(),
            ));
        }
        if Tile::from_symbol(comp.symbol).is_some()
            || p.compounds[..k].iter().any(|d| d.symbol == comp.symbol)
            || !comp.symbol.is_ascii_graphic()
            || comp.symbol == '"'
        {
            return Err(c.at(
                &at("compounds", k, "symbol"),
                None,
                ErrorClass::ReactionGraph,
                format!("symbol {:?} is already used or not printable", comp.symbol),
                format!(
                    "a printable ASCII character not in the legend ({})",
                    map::legend_summary(|_| true)
                ),
            ));
        }
        if !p.groups.iter().any(|g| g.name == comp.group) {
            return Err(c.at(
                &at("compounds", k, "group"),
                None,
                ErrorClass::ReactionGraph,
                format!("unknown group {:?}", comp.group),
                group_names(),
            ));
        }
    }
    if let Some(g) = &p.empty_group
        && !p.groups.iter().any(|h| &h.name == g)
    {
        return Err(c.at(
            &[f("substrate"), f("empty_group")],
            None,
            ErrorClass::ReactionGraph,
            format!("unknown group {g:?}"),
            group_names(),
        ));
    }
    let known = |name: &str| name == "empty" || p.compounds.iter().any(|d| d.name == name);
    let compound_names = || {
        let mut v: Vec<String> = p.compounds.iter().map(|d| d.name.clone()).collect();
        v.push("empty".into());
        v.join(", ")
    };
    for (k, r) in p.reactions.iter().enumerate() {
        if r.reactants.is_empty() || r.reactants.len() > MAX_REACTANTS {
            return Err(c.at(
                &at("reactions", k, "reactants"),
                None,
                ErrorClass::ReactionGraph,
                format!("{} reactants", r.reactants.len()),
                format!("1 to {MAX_REACTANTS}"),
            ));
        }
        if r.reactants.len() != r.products.len() {
            return Err(c.at(
                &at("reactions", k, "products"),
                None,
                ErrorClass::ReactionGraph,
                format!("reaction {:?} has {} reactants but {} products", r.name, r.reactants.len(), r.products.len()),
                "as many products as reactants (paired in order; use \"empty\" for a molecule that disappears)".into(),
            ));
        }
        if r.reactants.iter().all(|x| x == "empty") && p.empty_group.is_none() {
            return Err(c.at(
                &at("reactions", k, "reactants"),
                None,
                ErrorClass::ReactionGraph,
                format!(
                    "reaction {:?} needs only empty cells, which never initiate",
                    r.name
                ),
                "a compound among the reactants, or set `empty_group`".into(),
            ));
        }
        for (list, names) in [("reactants", &r.reactants), ("products", &r.products)] {
            for (j, name) in names.iter().enumerate() {
                if !known(name) {
                    return Err(c.at(
                        &[f("substrate"), f("reactions"), i(k), f(list), i(j)],
                        None,
                        ErrorClass::ReactionGraph,
                        format!("unknown compound {name:?} in reaction {:?}", r.name),
                        compound_names(),
                    ));
                }
            }
        }
        c.finite(&at("reactions", k, "reward"), r.reward)?;
    }
    Ok(())
}
