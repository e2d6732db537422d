//! Reading configuration text in either form. The sectioned form parses as it is; the old flat
//! form (every field at the top, as configurations and run directories were written before the
//! sections) is rewritten first: each flat key moves into its section (`lr` into `learn`, the
//! flat `network: gru` into `network.kind`), a key several sections hold (`epochs`) into the
//! section the file's `algo` reads, or into all of them when it reads none. Values are moved as
//! text, so every value is read exactly as it would be in its section; an error in a moved
//! value is reported at its place in the original text.
//!
//! The RON splitting here understands just enough of the syntax to find a struct's `key: value`
//! entries: comments, strings (plain and raw), chars and brackets. Anything it cannot split
//! goes to the RON parser as it is, which reports it.

use serde::de::IgnoredAny;

use super::keys::{self, Key, Section};
use super::{Algo, ConfigError, RunConfig};
use crate::scenario::locate::{PathSeg, Pos, SourceMap};

/// A field a text gave in the old flat form, and where it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// The flat key as written (`lr`, `num_epochs`, `network`).
    pub from: String,
    /// Where its value went (`learn.lr`; with a key several sections hold and an algorithm
    /// that reads none of them, each of them).
    pub to: Vec<String>,
}

/// One `key: value` of a RON struct, with the byte offsets of the key and the value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry<'a> {
    pub key: &'a str,
    pub key_at: usize,
    /// Just past the key (where its `:` and the trivia around it start).
    pub sep_at: usize,
    pub value: &'a str,
    pub value_at: usize,
}

/// A RON struct's text split into its entries: `open` is the offset just after its `(`,
/// `close` the offset of its `)`.
#[derive(Debug, Clone)]
pub(crate) struct Fields<'a> {
    pub open: usize,
    pub close: usize,
    pub entries: Vec<Entry<'a>>,
}

/// Past whitespace and comments (`//`, nested `/* */`) from `i`.
fn skip_trivia(b: &[u8], mut i: usize) -> usize {
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else {
            return i;
        }
    }
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Past the literal (string, raw string, char) starting at `i`, or `None` when there is none
/// there or it does not end.
fn skip_literal(b: &[u8], i: usize) -> Option<Option<usize>> {
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) == Some(&b'r') {
        let mut k = j + 1;
        while b.get(k) == Some(&b'#') {
            k += 1;
        }
        if b.get(k) == Some(&b'"') {
            let hashes = k - j - 1;
            let mut m = k + 1;
            while m < b.len() {
                if b[m] == b'"'
                    && b[m + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == b'#')
                        .count()
                        == hashes
                {
                    return Some(Some(m + 1 + hashes));
                }
                m += 1;
            }
            return Some(None);
        }
        return None;
    }
    let quote = *b.get(j)?;
    if quote != b'"' && quote != b'\'' {
        return None;
    }
    let mut m = j + 1;
    while m < b.len() {
        match b[m] {
            b'\\' => m += 2,
            c if c == quote => return Some(Some(m + 1)),
            _ => m += 1,
        }
    }
    Some(None)
}

/// The value starting at `i`: where its text ends (before trailing whitespace and comments)
/// and where the `,` or the closing bracket after it is.
fn value_end(b: &[u8], mut i: usize) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut last = i;
    loop {
        i = skip_trivia(b, i);
        let c = *b.get(i)?;
        match c {
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' | b'}' => {
                if depth == 0 {
                    return Some((last, i));
                }
                depth -= 1;
                i += 1;
            }
            b',' if depth == 0 => return Some((last, i)),
            _ => match skip_literal(b, i) {
                Some(end) => i = end?,
                None if is_ident(c) => {
                    while i < b.len() && is_ident(b[i]) {
                        i += 1;
                    }
                }
                None => i += 1,
            },
        }
        last = i;
    }
}

/// Past an identifier (raw ones too, `r#name`) at `i`.
fn ident_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b[j..].starts_with(b"r#") {
        j += 2;
    }
    if !b.get(j).is_some_and(|&c| is_ident_start(c)) {
        return None;
    }
    while j < b.len() && is_ident(b[j]) {
        j += 1;
    }
    Some(j)
}

/// Splits the RON struct `text` is (inner attributes such as `#![enable(implicit_some)]`, an
/// optional name, then `( key: value, ... )`), or `None` when it is not one.
pub(crate) fn split_struct(text: &str) -> Option<Fields<'_>> {
    let b = text.as_bytes();
    let mut i = skip_trivia(b, 0);
    while b[i..].starts_with(b"#![") {
        i += b[i..].iter().position(|&c| c == b']')? + 1;
        i = skip_trivia(b, i);
    }
    if let Some(end) = ident_end(b, i) {
        i = skip_trivia(b, end);
    }
    if b.get(i) != Some(&b'(') {
        return None;
    }
    let open = i + 1;
    i = open;
    let mut entries = Vec::new();
    let close = loop {
        i = skip_trivia(b, i);
        if *b.get(i)? == b')' {
            break i;
        }
        let key_at = i;
        let key_end = ident_end(b, i)?;
        i = skip_trivia(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let value_at = skip_trivia(b, i + 1);
        let (end, next) = value_end(b, value_at)?;
        if end == value_at {
            return None;
        }
        entries.push(Entry {
            key: text[key_at..key_end].trim_start_matches("r#"),
            key_at,
            sep_at: key_end,
            value: &text[value_at..end],
            value_at,
        });
        i = next;
        match b[i] {
            b',' => i += 1,
            b')' => {}
            _ => return None,
        }
    };
    (skip_trivia(b, close + 1) == b.len()).then_some(Fields {
        open,
        close,
        entries,
    })
}

/// Whether `value` is written as a struct (`(...)` or `Name(...)`), not a name such as `gru`.
pub(crate) fn is_struct(value: &str) -> bool {
    let b = value.as_bytes();
    let i = ident_end(b, 0).map_or(0, |end| skip_trivia(b, end));
    b.get(i) == Some(&b'(')
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
fn pos_of(text: &str, at: usize) -> Pos {
    let before = &text[..at.min(text.len())];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Pos {
        line: before.matches('\n').count() + 1,
        col: before[line_start..].chars().count() + 1,
    }
}

/// The byte offset of a 1-based line and column (in characters) of `text`.
fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let rest = &text[start.min(text.len())..];
    start
        + rest
            .char_indices()
            .nth(col.saturating_sub(1))
            .map_or(rest.len(), |(i, _)| i)
}

fn at(text: &str, file: &str, offset: usize, message: String) -> ConfigError {
    let p = pos_of(text, offset);
    ConfigError::At {
        file: file.to_string(),
        line: p.line,
        column: p.col,
        message,
    }
}

/// An unknown top-level key's message: the fields and sections a file may give.
fn unknown_top(key: &str) -> String {
    format!(
        "unknown field `{key}`; fields are: {}, and the sections {}",
        keys::COMMON.join(", "),
        Section::ALL.map(Section::name).join(", ")
    )
}

/// A RON error's message, with an unknown field named by where it belongs.
fn message(code: &ron::Error) -> String {
    match code {
        ron::Error::NoSuchStructField { found, outer, .. } => {
            match outer.as_deref().and_then(Section::of_type) {
                Some(s) => keys::not_in_section(s, found),
                None => unknown_top(found),
            }
        }
        code => code.to_string(),
    }
}

/// Parses text in the sectioned form as it is.
fn direct(text: &str, file: &str) -> Result<RunConfig, ConfigError> {
    crate::scenario::ron_options()
        .from_str(text)
        .map_err(|e| ConfigError::At {
            file: file.to_string(),
            line: e.span.start.line,
            column: e.span.start.col,
            message: message(&e.code),
        })
}

/// Parses `text` in either form; the fields it gave in the flat form, and where they went.
pub(crate) fn parse(text: &str, file: &str) -> Result<(RunConfig, Vec<Moved>), ConfigError> {
    let Some(top) = split_struct(text) else {
        // Not a struct this splitter reads: the RON parser's own syntax error, or its verdict.
        crate::scenario::ron_options()
            .from_str::<IgnoredAny>(text)
            .map_err(|e| ConfigError::At {
                file: file.to_string(),
                line: e.span.start.line,
                column: e.span.start.col,
                message: e.code.to_string(),
            })?;
        return direct(text, file).map(|c| (c, Vec::new()));
    };
    let algo = top
        .entries
        .iter()
        .find(|e| keys::common(e.key) == Some("algo"))
        .and_then(|e| {
            crate::scenario::ron_options()
                .from_str::<Algo>(e.value)
                .ok()
        })
        .unwrap_or(RunConfig::default().algo);
    // The flat entries, each with the section fields it goes to.
    let mut flat: Vec<(Entry<'_>, Vec<(Section, &'static str)>)> = Vec::new();
    for e in &top.entries {
        if keys::common(e.key).is_some()
            || Section::named(e.key).is_some_and(|s| s != Section::Network || is_struct(e.value))
        {
            continue;
        }
        let fields: Vec<(Section, &'static str)> = keys::flat_candidates(e.key)
            .into_iter()
            .filter_map(|k| match k {
                Key::Field(s, f) => Some((s, f)),
                _ => None,
            })
            .collect();
        if fields.is_empty() {
            return Err(at(text, file, e.key_at, unknown_top(e.key)));
        }
        let read: Vec<_> = fields
            .iter()
            .copied()
            .filter(|(s, _)| s.read_by(algo))
            .collect();
        flat.push((*e, if read.is_empty() { fields } else { read }));
    }
    if flat.is_empty() {
        return direct(text, file).map(|c| (c, Vec::new()));
    }
    let moved = flat
        .iter()
        .map(|(e, to)| Moved {
            from: e.key.to_string(),
            to: to.iter().map(|&(s, f)| Key::Field(s, f).path()).collect(),
        })
        .collect();
    let rebuilt = Rebuilt::of(text, file, &top, &flat)?;
    crate::scenario::ron_options()
        .from_str(&rebuilt.out)
        .map(|c| (c, moved))
        .map_err(|e| {
            let back = rebuilt.original(e.span.start.line, e.span.start.col);
            at(text, file, back, message(&e.code))
        })
}

/// The sectioned text of a flat one: each piece of it copied from the original remembers
/// where it came from, so that an error in it is reported there.
struct Rebuilt {
    out: String,
    /// (offset in `out`, offset in the original, length); text written between pieces maps to
    /// the position of the piece before it.
    pieces: Vec<(usize, usize, usize)>,
}

impl Rebuilt {
    fn copy(&mut self, original: usize, piece: &str) {
        self.pieces.push((self.out.len(), original, piece.len()));
        self.out.push_str(piece);
    }

    /// Written text that stands for the original at `original` (a field's new name).
    fn write_for(&mut self, original: usize, text: &str) {
        self.pieces.push((self.out.len(), original, 0));
        self.out.push_str(text);
    }

    /// `key` (written for the entry's own key), then the entry's `:` and value as they are.
    fn entry(&mut self, text: &str, e: &Entry<'_>, key: &str) {
        self.write_for(e.key_at, key);
        self.copy(e.sep_at, &text[e.sep_at..e.value_at]);
        self.copy(e.value_at, e.value);
        self.out.push_str(",\n");
    }

    fn of(
        text: &str,
        file: &str,
        top: &Fields<'_>,
        flat: &[(Entry<'_>, Vec<(Section, &'static str)>)],
    ) -> Result<Rebuilt, ConfigError> {
        let mut r = Rebuilt {
            out: String::new(),
            pieces: Vec::new(),
        };
        r.copy(0, &text[..top.open]);
        r.out.push('\n');
        let is_flat = |e: &Entry<'_>| flat.iter().any(|(f, _)| f.key_at == e.key_at);
        let gets_flat = |s: Section| flat.iter().any(|(_, to)| to.iter().any(|(t, _)| *t == s));
        for e in &top.entries {
            let merged = Section::named(e.key).is_some_and(gets_flat);
            if !is_flat(e) && !merged {
                r.entry(text, e, e.key);
            }
        }
        for s in Section::ALL.into_iter().filter(|&s| gets_flat(s)) {
            r.out.push_str(s.name());
            r.out.push_str(": (\n");
            let given = top
                .entries
                .iter()
                .find(|e| !is_flat(e) && Section::named(e.key) == Some(s));
            let mut inner = Vec::new();
            if let Some(g) = given {
                let Some(fields) = split_struct(g.value) else {
                    // A section this splitter cannot read: the parser says what is wrong.
                    let why = direct(text, file).err();
                    return Err(why.unwrap_or_else(|| {
                        at(
                            text,
                            file,
                            g.value_at,
                            format!("`{}` is not a struct", g.key),
                        )
                    }));
                };
                for mut e in fields.entries {
                    e.key_at += g.value_at;
                    e.sep_at += g.value_at;
                    e.value_at += g.value_at;
                    inner.push(e);
                }
            }
            for e in &inner {
                r.entry(text, e, e.key);
            }
            for (e, to) in flat {
                for &(_, field) in to.iter().filter(|(t, _)| *t == s) {
                    if inner.iter().any(|i| s.field(i.key) == Some(field)) {
                        return Err(at(
                            text,
                            file,
                            e.key_at,
                            format!(
                                "`{}` is given twice: at the top (the old flat form) and in `{}`",
                                e.key,
                                s.name()
                            ),
                        ));
                    }
                    r.entry(text, e, field);
                }
            }
            r.out.push_str("),\n");
        }
        r.copy(top.close, &text[top.close..]);
        Ok(r)
    }

    /// The original offset of a 1-based line and column of `out`.
    fn original(&self, line: usize, col: usize) -> usize {
        let off = offset_of(&self.out, line, col);
        self.pieces
            .iter()
            .rev()
            .find(|(new, _, _)| *new <= off)
            .map_or(0, |&(new, orig, len)| orig + (off - new).min(len))
    }
}

/// Where `field` (a dotted path such as `learn.lr`) is in `text`: at its place in the sectioned
/// form, at its flat name (or an alias of it) in the old form, else at the nearest enclosing
/// value that is there, else 1:1.
pub(crate) fn locate(text: &str, field: &str) -> Pos {
    let map = SourceMap::scan(text);
    let path: Vec<PathSeg> = field
        .split('.')
        .map(|f| PathSeg::Field(f.to_string()))
        .collect();
    if let Some(p) = map.find(&path) {
        return p;
    }
    let key = match field.split_once('.') {
        Some((s, f)) => Section::named(s).and_then(|s| s.field(f).map(|f| Key::Field(s, f))),
        None => keys::common(field).map(Key::Common),
    };
    if let Some(key) = key {
        for name in keys::names_of(key.flat_name()) {
            if let Some(p) = map.find(&[PathSeg::Field(name.to_string())]) {
                return p;
            }
        }
    }
    map.find_or_parent(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_entries_past_comments_strings_and_brackets() {
        let text = "#![enable(implicit_some)]\n// c\nRunConfig( // (\n  name: \"a, b)\",\n  sweep: {\"lr\": [1, 2]}, /* x ) */\n  network: (hidden: 4),\n  s: r#\"q\"#\n)\n";
        let f = split_struct(text).unwrap();
        let kv: Vec<(&str, &str)> = f.entries.iter().map(|e| (e.key, e.value)).collect();
        assert_eq!(
            kv,
            [
                ("name", "\"a, b)\""),
                ("sweep", "{\"lr\": [1, 2]}"),
                ("network", "(hidden: 4)"),
                ("s", "r#\"q\"#"),
            ]
        );
        assert_eq!(&text[f.entries[2].value_at..][..4], "(hid");
        assert!(split_struct("RunConfig(a: 1").is_none());
        assert!(split_struct("RunConfig(a 1)").is_none());
        assert!(split_struct("RunConfig(a: 1) x").is_none());
        assert!(split_struct("(a: \"1)").is_none());
        assert!(is_struct("NetworkConfig (x: 1)") && !is_struct("gru"));
    }

    #[test]
    fn a_flat_value_refused_after_the_move_is_reported_where_it_was() {
        // At the same place as the same error in the sectioned form (just past the `:`).
        let flat = "RunConfig(\n    algo: pqn,\n    hidden: 64,\n    lr: \"fast\",\n)";
        let sectioned =
            "RunConfig(\n    algo: pqn,\n    network: (hidden: 64),\n    learn: (lr: \"fast\"),\n)";
        let err = parse(flat, "f.ron").unwrap_err().to_string();
        assert!(err.starts_with("f.ron:4:8: Expected float"), "{err}");
        let err = parse(sectioned, "f.ron").unwrap_err().to_string();
        assert!(err.starts_with("f.ron:4:16: Expected float"), "{err}");
        let text = "RunConfig(\n  learn: (lr: 1e-3),\n  lr: 2e-3,\n)";
        let err = parse(text, "f.ron").unwrap_err().to_string();
        assert!(
            err.starts_with("f.ron:3:3:") && err.contains("given twice"),
            "{err}"
        );
        let err = parse("RunConfig(\n  lrr: 1,\n)", "f.ron")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("f.ron:2:3: unknown field `lrr`; fields are: name"),
            "{err}"
        );
        let err = parse("RunConfig(learn: (epochs: 3))", "f.ron")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("it is `pqn.epochs`, `pr2.epochs`, `online_dqn.epochs` or"),
            "{err}"
        );
    }
}
