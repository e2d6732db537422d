//! Comparisons that cannot pass on nothing. An equality of two missing fields, two nulls (NaN
//! is written as null in JSON) or two empty lists proves nothing about the code under test, so
//! every helper here fails on them: a learning or equality test built on these helpers passes
//! only when there were numbers to compare.
#![allow(dead_code, missing_docs)]

use std::fmt::Display;

use serde_json::Value;

/// The finite numbers in `v`, counted through arrays and objects.
pub fn numbers_in(v: &Value) -> usize {
    match v {
        Value::Number(n) => usize::from(n.as_f64().is_some_and(f64::is_finite)),
        Value::Array(items) => items.iter().map(numbers_in).sum(),
        Value::Object(fields) => fields.values().map(numbers_in).sum(),
        _ => 0,
    }
}

/// `line[key]` as a finite number; panics naming `what` when the key is missing, null, not a
/// number or not finite.
pub fn finite(line: &Value, key: &str, what: impl Display) -> f64 {
    let Some(v) = line.get(key) else {
        panic!("{what}: `{key}` is missing from {line}");
    };
    match v.as_f64() {
        Some(x) if x.is_finite() => x,
        _ => panic!("{what}: `{key}` is {v}, not a finite number"),
    }
}

/// Asserts `a == b` and that both hold at least one finite number.
pub fn assert_same_numbers(a: &Value, b: &Value, what: impl Display) {
    assert_eq!(a, b, "{what}");
    assert!(
        numbers_in(a) > 0,
        "{what}: both sides are {a}: nothing was compared"
    );
}

/// Asserts two series are equal element by element (a `null` pair is allowed where neither run
/// had a value, e.g. an update in which no episode ended) and that at least `min_numbers`
/// pairs held finite numbers. Returns how many did.
pub fn assert_series_equal<'a>(
    pairs: impl IntoIterator<Item = (&'a Value, &'a Value)>,
    min_numbers: usize,
    what: impl Display,
) -> usize {
    let mut numbers = 0;
    let mut len = 0;
    for (k, (a, b)) in pairs.into_iter().enumerate() {
        assert_eq!(a, b, "{what}, element {k}");
        numbers += usize::from(numbers_in(a) > 0);
        len += 1;
    }
    assert!(
        numbers >= min_numbers.max(1),
        "{what}: {numbers} of {len} pairs held numbers, needed {}",
        min_numbers.max(1)
    );
    numbers
}

/// Asserts two float slices are equal bit for bit, non-empty and finite.
pub fn assert_same_bits(a: &[f32], b: &[f32], what: impl Display) {
    assert!(!a.is_empty(), "{what}: nothing to compare");
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    assert_all_finite(a, &what);
    if let Some(k) = (0..a.len()).find(|&k| a[k].to_bits() != b[k].to_bits()) {
        panic!("{what}: element {k} is {} vs {}", a[k], b[k]);
    }
}

/// Asserts `v` is non-empty and every value finite.
pub fn assert_all_finite(v: &[f32], what: impl Display) {
    assert!(!v.is_empty(), "{what}: empty");
    if let Some(k) = v.iter().position(|x| !x.is_finite()) {
        panic!("{what}: element {k} is {}", v[k]);
    }
}

/// Mean of the first and of the last `fraction` of `v` (at least one value each): how a test
/// says a loss fell. Panics on an empty or non-finite series.
pub fn first_and_last(v: &[f64], fraction: f64, what: impl Display) -> (f64, f64) {
    assert!(!v.is_empty(), "{what}: empty series");
    assert!(
        v.iter().all(|x| x.is_finite()),
        "{what}: non-finite values in {v:?}"
    );
    let k = ((v.len() as f64 * fraction) as usize).max(1);
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    (mean(&v[..k]), mean(&v[v.len() - k..]))
}
