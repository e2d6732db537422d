//! Finds where a field sits in RON source text, so that errors found after parsing (a ragged map
//! row, a slip of 1.5) can still name file:line:column.
//!
//! serde hands us values without positions; rather than parse twice with a span-keeping parser we
//! scan the tokens once and record, for every value, its path (`roles[1].count`) and where it
//! starts. The scanner understands just enough RON: comments, strings (plain and raw), chars,
//! brackets, `key:` pairs and commas.

/// One step of a path into a RON document: a struct field or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg {
    /// A named field of a struct.
    Field(String),
    /// A position in a list.
    Index(usize),
}

impl std::fmt::Display for PathSeg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathSeg::Field(name) => write!(f, "{name}"),
            PathSeg::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// Renders a path as `roles[1].count`.
pub fn path_string(path: &[PathSeg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            PathSeg::Field(name) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            PathSeg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// A 1-based line and column (columns count characters, not bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column in characters.
    pub col: usize,
}

impl Pos {
    /// Where the first byte that is not UTF-8 sits in `bytes` (`e` from decoding them).
    pub fn of_utf8_error(bytes: &[u8], e: &std::str::Utf8Error) -> Pos {
        let valid = std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default();
        let line_start = valid.rfind('\n').map_or(0, |i| i + 1);
        Pos {
            line: valid.matches('\n').count() + 1,
            col: valid[line_start..].chars().count() + 1,
        }
    }
}

/// Where one value starts, and under which path.
#[derive(Debug, Clone)]
struct Entry {
    path: Vec<PathSeg>,
    start: Pos,
}

/// The positions of every value in one RON document.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    entries: Vec<Entry>,
    /// Closing brackets, with the path of the value they close.
    closes: Vec<Entry>,
}

#[derive(Debug)]
enum Frame {
    /// `( ... )` or `{ ... }`: fields set a key.
    Group {
        key: Option<String>,
        opened_at: Vec<PathSeg>,
    },
    /// `[ ... ]`: commas advance the index.
    List {
        index: usize,
        opened_at: Vec<PathSeg>,
    },
}

impl SourceMap {
    /// Scans `src`. Never fails: malformed input just yields fewer entries.
    pub fn scan(src: &str) -> SourceMap {
        let chars: Vec<char> = src.chars().collect();
        let mut entries = Vec::new();
        let mut closes = Vec::new();
        let mut stack: Vec<Frame> = Vec::new();
        let (mut i, mut line, mut col) = (0usize, 1usize, 1usize);
        // Whether the next token starts a value (after `:`, `,`, an opening bracket, or at top).
        let mut expecting_value = true;

        let current_path = |stack: &[Frame]| -> Vec<PathSeg> {
            let mut path = Vec::new();
            for frame in stack {
                match frame {
                    Frame::Group { key: Some(k), .. } => path.push(PathSeg::Field(k.clone())),
                    Frame::Group { key: None, .. } => {}
                    Frame::List { index, .. } => path.push(PathSeg::Index(*index)),
                }
            }
            path
        };

        macro_rules! advance {
            () => {{
                if chars[i] == '\n' {
                    line += 1;
                    col = 1;
                } else {
                    col += 1;
                }
                i += 1;
            }};
        }

        while i < chars.len() {
            let c = chars[i];
            let here = Pos { line, col };
            if c.is_whitespace() {
                advance!();
                continue;
            }
            if c == '/' && chars.get(i + 1) == Some(&'/') {
                while i < chars.len() && chars[i] != '\n' {
                    advance!();
                }
                continue;
            }
            if c == '/' && chars.get(i + 1) == Some(&'*') {
                let mut depth = 0usize;
                while i < chars.len() {
                    if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                        depth += 1;
                        advance!();
                        advance!();
                    } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        advance!();
                        advance!();
                        if depth == 0 {
                            break;
                        }
                    } else {
                        advance!();
                    }
                }
                continue;
            }
            if c == '#' && chars.get(i + 1) == Some(&'!') {
                // `#![enable(...)]` attribute: skip to end of line.
                while i < chars.len() && chars[i] != '\n' {
                    advance!();
                }
                continue;
            }
            match c {
                '(' | '{' | '[' => {
                    let opened_at = current_path(&stack);
                    if expecting_value {
                        entries.push(Entry {
                            path: opened_at.clone(),
                            start: here,
                        });
                    }
                    stack.push(if c == '[' {
                        Frame::List {
                            index: 0,
                            opened_at,
                        }
                    } else {
                        Frame::Group {
                            key: None,
                            opened_at,
                        }
                    });
                    expecting_value = true;
                    advance!();
                }
                ')' | '}' | ']' => {
                    // Closing returns to the level the group was opened at.
                    if let Some(Frame::Group { opened_at, .. } | Frame::List { opened_at, .. }) =
                        stack.pop()
                    {
                        closes.push(Entry {
                            path: opened_at,
                            start: here,
                        });
                    }
                    expecting_value = false;
                    advance!();
                }
                ',' => {
                    match stack.last_mut() {
                        Some(Frame::List { index, .. }) => *index += 1,
                        Some(Frame::Group { key, .. }) => *key = None,
                        None => {}
                    }
                    expecting_value = true;
                    advance!();
                }
                ':' => {
                    expecting_value = true;
                    advance!();
                }
                '"' | '\'' => {
                    if expecting_value {
                        entries.push(Entry {
                            path: current_path(&stack),
                            start: here,
                        });
                    }
                    let quote = c;
                    advance!();
                    while i < chars.len() && chars[i] != quote {
                        if chars[i] == '\\' && i + 1 < chars.len() {
                            advance!();
                        }
                        advance!();
                    }
                    if i < chars.len() {
                        advance!();
                    }
                    expecting_value = false;
                }
                'r' if matches!(chars.get(i + 1), Some('"') | Some('#')) => {
                    // Raw string r#"..."#.
                    if expecting_value {
                        entries.push(Entry {
                            path: current_path(&stack),
                            start: here,
                        });
                    }
                    advance!();
                    let mut hashes = 0;
                    while i < chars.len() && chars[i] == '#' {
                        hashes += 1;
                        advance!();
                    }
                    if i < chars.len() {
                        advance!(); // opening quote
                    }
                    'raw: while i < chars.len() {
                        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                            advance!();
                            for _ in 0..hashes {
                                advance!();
                            }
                            break 'raw;
                        }
                        advance!();
                    }
                    expecting_value = false;
                }
                _ => {
                    // A bare token: identifier, number, bool. Read it whole.
                    let start = i;
                    while i < chars.len()
                        && !chars[i].is_whitespace()
                        && !matches!(
                            chars[i],
                            '(' | ')' | '[' | ']' | '{' | '}' | ',' | ':' | '"'
                        )
                    {
                        advance!();
                    }
                    let token: String = chars[start..i].iter().collect();
                    // Is it a key (`name:`)? Look past whitespace for a colon.
                    let mut j = i;
                    while j < chars.len() && chars[j].is_whitespace() {
                        j += 1;
                    }
                    let is_key = chars.get(j) == Some(&':')
                        && matches!(stack.last(), Some(Frame::Group { .. }));
                    if is_key {
                        if let Some(Frame::Group { key, .. }) = stack.last_mut() {
                            *key = Some(token);
                        }
                        let path = current_path(&stack);
                        entries.push(Entry { path, start: here });
                        expecting_value = false;
                    } else {
                        if expecting_value {
                            entries.push(Entry {
                                path: current_path(&stack),
                                start: here,
                            });
                        }
                        // An identifier followed by `(` is a struct or variant name: the bracket
                        // that follows belongs to the same value.
                        expecting_value = false;
                        if j < chars.len() && chars[j] == '(' {
                            expecting_value = false;
                        }
                    }
                    if i == start {
                        advance!();
                    }
                }
            }
        }
        SourceMap { entries, closes }
    }

    /// Where the value (or key) at `path` first appears.
    pub fn find(&self, path: &[PathSeg]) -> Option<Pos> {
        self.entries
            .iter()
            .find(|e| e.path == path)
            .map(|e| e.start)
    }

    /// The position of `path`, or of its longest existing prefix, or 1:1.
    pub fn find_or_parent(&self, path: &[PathSeg]) -> Pos {
        (0..=path.len())
            .rev()
            .find_map(|n| self.find(&path[..n]))
            .unwrap_or(Pos { line: 1, col: 1 })
    }

    /// The path of the value being read at `pos`: the last value start or bracket close at or
    /// before it.
    pub fn path_at(&self, pos: Pos) -> Vec<PathSeg> {
        self.entries
            .iter()
            .chain(&self.closes)
            .filter(|e| e.start <= pos)
            .max_by_key(|e| e.start)
            .map(|e| e.path.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> PathSeg {
        PathSeg::Field(s.into())
    }

    #[test]
    fn finds_nested_fields_and_list_items() {
        let src = "Scenario(\n  name: \"x\", // comment (\n  roles: [\n    (kind: pursuer, count: 8),\n    (kind: evader, count: 30),\n  ],\n  substrate: Pursuit((n_catch: 2)),\n  map: [\"##\", \"#.\"],\n)";
        let map = SourceMap::scan(src);
        assert_eq!(map.find(&[f("name")]), Some(Pos { line: 2, col: 3 }));
        assert_eq!(
            map.find(&[f("roles"), PathSeg::Index(1), f("count")]),
            Some(Pos { line: 5, col: 20 })
        );
        assert_eq!(
            map.find(&[f("substrate"), f("n_catch")]),
            Some(Pos { line: 7, col: 23 })
        );
        assert_eq!(
            map.find(&[f("map"), PathSeg::Index(1)]),
            Some(Pos { line: 8, col: 15 })
        );
        assert_eq!(
            path_string(&map.path_at(Pos { line: 5, col: 27 })),
            "roles[1].count"
        );
    }
}
