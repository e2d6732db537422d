//! No two modules of the library import each other (docs/design.md, "Layering"): the module
//! graph of `src/` (a module = a file; an edge = a `crate::` or `super::` path naming an item of
//! another module, outside `#[cfg(test)] mod tests`; parent/child edges left out) has no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Every library file as its module path (`substrate::pursuit`, `layout::core`, ...).
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let path = e.path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            let mut p = prefix.to_vec();
            p.push(name);
            modules(&path, &p, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let mut p = prefix.to_vec();
            if name != "mod" {
                p.push(name);
            }
            // The binary (main.rs, cli/) and the crate root are not library modules.
            if p.is_empty() || p[0] == "main" || p[0] == "lib" || p[0] == "cli" {
                continue;
            }
            out.insert(p.join("::"), fs::read_to_string(&path).unwrap());
        }
    }
}

/// The deepest module a path names (`a::b::Item` -> `a::b` when that file exists).
fn resolve<'a>(path: &str, mods: &'a BTreeMap<String, String>) -> Option<&'a str> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|k| parts[..k].join("::"))
        .find_map(|c| mods.get_key_value(&c).map(|(k, _)| k.as_str()))
}

/// Paths a file names: `crate::a::b`, `use crate::a::{b, c::D}` groups, `super::x`.
fn references(module: &str, text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    // `super` of a mod.rs file is the parent of its module; of a plain file, its parent too.
    let parent: Vec<&str> = {
        let mut p: Vec<&str> = module.split("::").collect();
        p.pop();
        p
    };
    let mut out = Vec::new();
    for (anchor, base) in [("crate::", String::new()), ("super::", parent.join("::"))] {
        let mut rest = code.as_str();
        while let Some(i) = rest.find(anchor) {
            let before = rest[..i].chars().last();
            rest = &rest[i + anchor.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let head: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let head = head.trim_end_matches(':').to_string();
            let full = |h: &str| {
                if base.is_empty() {
                    h.to_string()
                } else if h.is_empty() {
                    base.clone()
                } else {
                    format!("{base}::{h}")
                }
            };
            let after = &rest[head.len()..];
            if let Some(group) = after.strip_prefix("::{").or(after.strip_prefix('{')) {
                let inner = group.split('}').next().unwrap_or("");
                for item in inner.split(',') {
                    let item = item.split(" as ").next().unwrap_or("").trim();
                    if !item.is_empty() && item != "self" {
                        let h = if head.is_empty() {
                            item.to_string()
                        } else {
                            format!("{head}::{item}")
                        };
                        out.push(full(&h));
                    } else if item == "self" {
                        out.push(full(&head));
                    }
                }
            } else {
                out.push(full(&head));
            }
        }
    }
    out
}

/// The module graph, and a cycle in it if there is one.
fn find_cycle(
    mods: &BTreeMap<String, String>,
) -> (BTreeMap<String, BTreeSet<String>>, Option<Vec<String>>) {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, text) in mods {
        for r in references(m, text) {
            let Some(t) = resolve(&r, mods) else { continue };
            let related =
                t == m || m.starts_with(&format!("{t}::")) || t.starts_with(&format!("{m}::"));
            if !related {
                graph.entry(m.clone()).or_default().insert(t.to_string());
            }
        }
    }
    // A cycle exists iff a depth-first search meets a module still on its stack.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        stack.push(m.to_string());
        for t in graph.get(m).into_iter().flatten() {
            match state.get(t) {
                Some(1) => {
                    let i = stack.iter().position(|x| x == t).unwrap_or(0);
                    let mut cycle = stack[i..].to_vec();
                    cycle.push(t.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(t, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in mods.keys() {
        if !state.contains_key(m)
            && let Some(c) = visit(m, &graph, &mut state, &mut Vec::new())
        {
            return (graph, Some(c));
        }
    }
    (graph, None)
}

#[test]
fn no_two_library_modules_import_each_other() {
    let mut mods = BTreeMap::new();
    modules(Path::new("src"), &[], &mut mods);
    assert!(mods.len() > 50, "found only {} modules", mods.len());
    let (graph, cycle) = find_cycle(&mods);
    if let Some(c) = cycle {
        panic!("module import cycle: {}", c.join(" -> "));
    }
    // The checker sees real edges.
    assert!(
        graph["engine"].contains("layout"),
        "engine -> layout not seen"
    );
    assert!(graph.values().map(BTreeSet::len).sum::<usize>() > 200);
}

#[test]
fn the_checker_finds_a_cycle_when_there_is_one() {
    let mut mods = BTreeMap::new();
    mods.insert("a".to_string(), "use crate::b::X;".to_string());
    mods.insert("b".to_string(), "use crate::{c, d::Y};".to_string());
    mods.insert("c".to_string(), String::new());
    mods.insert("d".to_string(), "fn f() { super::a::g(); }".to_string());
    assert_eq!(references("b", &mods["b"]), vec!["c", "d::Y"]);
    assert_eq!(
        references("x::y", "use super::{z::Q, W};"),
        vec!["x::z::Q", "x::W"]
    );
    let (_, cycle) = find_cycle(&mods);
    assert_eq!(
        cycle,
        Some(vec!["a".into(), "b".into(), "d".into(), "a".into()])
    );
    // Without d's call there is none; a child naming its parent is no cycle either.
    mods.insert("d".to_string(), String::new());
    mods.insert("c::e".to_string(), "use crate::c::Z;".to_string());
    mods.insert("c".to_string(), "use crate::c::e::W;".to_string());
    assert_eq!(find_cycle(&mods).1, None);
}
