//! Just enough Markdown and shell for tests/docs.rs: fenced code blocks with their info strings,
//! inline code spans, links and images, GitHub's heading anchors, and the words of a command
//! line. Every item keeps its 1-based line number in the file, for the test's reports.
#![allow(dead_code, missing_docs)]

use std::collections::HashSet;

/// A fenced code block: its info string (the words after the opening fence) and its content
/// lines, each with its line number, the fence's indentation removed.
#[derive(Debug)]
pub struct Fence {
    pub info: Vec<String>,
    pub open_line: usize,
    pub lines: Vec<(usize, String)>,
}

/// A Markdown file cut into what the checks read.
#[derive(Debug)]
pub struct Doc {
    /// The file's lines, with whether each is inside a fenced block (fences included).
    pub lines: Vec<(String, bool)>,
    pub fences: Vec<Fence>,
    /// Inline code spans outside fenced blocks: the line they open on and their content.
    pub spans: Vec<(usize, String)>,
    /// The lines outside fenced blocks with every code span blanked out (links are read here).
    pub prose: Vec<(usize, String)>,
}

/// The length of the run of `c` at the start of `s`.
fn run_of(s: &str, c: char) -> usize {
    s.chars().take_while(|&x| x == c).count()
}

pub fn parse(text: &str) -> Doc {
    let mut lines = Vec::new();
    let mut fences = Vec::new();
    // The open fence: its character, length and indentation.
    let mut open: Option<(char, usize, usize)> = None;
    let mut segment: Vec<(usize, String)> = Vec::new();
    let mut spans = Vec::new();
    let mut prose = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let n = k + 1;
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if let Some((c, len, ind)) = open {
            let fence: &mut Fence = fences.last_mut().unwrap();
            if run_of(t, c) >= len && t.trim_start_matches(c).trim().is_empty() {
                open = None;
            } else {
                let strip = line.len() - line.trim_start_matches(' ').len();
                fence.lines.push((n, line[strip.min(ind)..].to_string()));
            }
            lines.push((line.to_string(), true));
            continue;
        }
        let c = t.chars().next().unwrap_or(' ');
        if (c == '`' || c == '~') && run_of(t, c) >= 3 {
            let len = run_of(t, c);
            let info = &t[len..];
            if !(c == '`' && info.contains('`')) {
                open = Some((c, len, indent));
                let info = info.split_whitespace().map(str::to_string).collect();
                fences.push(Fence {
                    info,
                    open_line: n,
                    lines: Vec::new(),
                });
                lines.push((line.to_string(), true));
                code_spans(&std::mem::take(&mut segment), &mut spans, &mut prose);
                continue;
            }
        }
        lines.push((line.to_string(), false));
        if t.is_empty() {
            // A blank line ends a paragraph: no code span crosses it.
            code_spans(&std::mem::take(&mut segment), &mut spans, &mut prose);
            prose.push((n, String::new()));
        } else {
            segment.push((n, line.to_string()));
        }
    }
    code_spans(&segment, &mut spans, &mut prose);
    prose.sort_by_key(|(n, _)| *n);
    Doc {
        lines,
        fences,
        spans,
        prose,
    }
}

/// Finds the code spans of one paragraph (CommonMark: a run of N backticks up to the next run
/// of exactly N; newlines inside become spaces), and its lines with the spans blanked.
fn code_spans(
    para: &[(usize, String)],
    spans: &mut Vec<(usize, String)>,
    prose: &mut Vec<(usize, String)>,
) {
    if para.is_empty() {
        return;
    }
    let text: Vec<char> = para
        .iter()
        .map(|(_, l)| l.as_str())
        .collect::<Vec<_>>()
        .join("\n")
        .chars()
        .collect();
    // The line of each character.
    let mut line_of = Vec::with_capacity(text.len());
    let mut row = 0;
    for &ch in &text {
        line_of.push(para[row].0);
        if ch == '\n' {
            row += 1;
        }
    }
    let mut blanked = text.clone();
    let run = |i: usize| text[i..].iter().take_while(|&&x| x == '`').count();
    let mut i = 0;
    while i < text.len() {
        if text[i] != '`' || (i > 0 && text[i - 1] == '\\') {
            i += 1;
            continue;
        }
        let n = run(i);
        let mut j = i + n;
        let close = loop {
            if j >= text.len() {
                break None;
            }
            if text[j] == '`' {
                let m = run(j);
                if m == n {
                    break Some(j);
                }
                j += m;
            } else {
                j += 1;
            }
        };
        let Some(j) = close else {
            i += n;
            continue;
        };
        let inner: String = text[i + n..j]
            .iter()
            .map(|&c| if c == '\n' { ' ' } else { c })
            .collect();
        let inner = match inner.strip_prefix(' ').and_then(|s| s.strip_suffix(' ')) {
            Some(s) if !s.trim().is_empty() => s.to_string(),
            _ => inner,
        };
        spans.push((line_of[i], inner));
        for b in &mut blanked[i..j + n] {
            if *b != '\n' {
                *b = ' ';
            }
        }
        i = j + n;
    }
    let blanked: String = blanked.into_iter().collect();
    for ((n, _), l) in para.iter().zip(blanked.split('\n')) {
        prose.push((*n, l.to_string()));
    }
}

/// A link or image target with the line it is on.
#[derive(Debug)]
pub struct Link {
    pub line: usize,
    pub target: String,
}

/// Every link and image target outside code: `[text](target "title")`, `![alt](target)`,
/// reference definitions `[label]: target`, and HTML `src="..."` / `href="..."`.
pub fn links(doc: &Doc) -> Vec<Link> {
    let mut out = Vec::new();
    for (n, line) in &doc.prose {
        let t = line.trim_start();
        // A reference definition: `[label]: target` (the label's first `]` is followed by `:`).
        if t.starts_with('[')
            && let Some(k) = t.find(']')
            && t[k..].starts_with("]:")
        {
            let target = t[k + 2..].split_whitespace().next().unwrap_or("");
            out.push(Link {
                line: *n,
                target: target.trim_matches(['<', '>']).to_string(),
            });
            continue;
        }
        let mut rest = line.as_str();
        while let Some(k) = rest.find("](") {
            let after = &rest[k + 2..];
            let (target, used) = if let Some(s) = after.strip_prefix('<') {
                let end = s.find('>').unwrap_or(s.len());
                (s[..end].to_string(), end + 1)
            } else {
                // Up to whitespace or the parenthesis that closes the link.
                let mut depth = 0;
                let end = after
                    .char_indices()
                    .find(|&(_, c)| {
                        match c {
                            '(' => depth += 1,
                            ')' if depth == 0 => return true,
                            ')' => depth -= 1,
                            _ => {}
                        }
                        c.is_whitespace()
                    })
                    .map_or(after.len(), |(i, _)| i);
                (after[..end].to_string(), end)
            };
            out.push(Link { line: *n, target });
            rest = &after[used..];
        }
        for attr in ["src=\"", "href=\""] {
            let mut rest = line.as_str();
            while let Some(k) = rest.find(attr) {
                let s = &rest[k + attr.len()..];
                let end = s.find('"').unwrap_or(s.len());
                out.push(Link {
                    line: *n,
                    target: s[..end].to_string(),
                });
                rest = &s[end..];
            }
        }
    }
    out
}

/// GitHub's anchor for a heading (github-slugger): the rendered text lowercased, every
/// character but letters, digits, `_`, `-` and spaces removed, spaces turned into `-`.
pub fn slug(heading: &str) -> String {
    // Rendered text: a link or image shows its text only; HTML tags show nothing.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(k) = rest.find("](") {
        text.push_str(&rest[..k]);
        let after = &rest[k + 2..];
        rest = after.find(')').map_or("", |e| &after[e + 1..]);
    }
    text.push_str(rest);
    let mut plain = String::new();
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => plain.push(c),
            _ => {}
        }
    }
    plain
        .trim()
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '_' || c == '-' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors a file's headings (ATX `#` and setext underlines) and HTML `id`/`name`
/// attributes give, repeats numbered `-1`, `-2`... as GitHub numbers them.
pub fn anchors(doc: &Doc) -> HashSet<String> {
    let mut out = HashSet::new();
    let add = |s: String, out: &mut HashSet<String>| {
        let mut name = s.clone();
        let mut k = 0;
        while out.contains(&name) {
            k += 1;
            name = format!("{s}-{k}");
        }
        out.insert(name);
    };
    for (i, (line, fenced)) in doc.lines.iter().enumerate() {
        if *fenced {
            continue;
        }
        let t = line.trim_start();
        let hashes = run_of(t, '#');
        if (1..=6).contains(&hashes) && (t.len() == hashes || t[hashes..].starts_with([' ', '\t']))
        {
            let text = t[hashes..].trim().trim_end_matches('#').trim_end();
            add(slug(text), &mut out);
        } else if let Some((next, false)) = doc.lines.get(i + 1) {
            let u = next.trim();
            let setext =
                !u.is_empty() && (u.chars().all(|c| c == '=') || u.chars().all(|c| c == '-'));
            if setext && !t.is_empty() && !t.starts_with(['-', '*', '>', '|']) {
                add(slug(t), &mut out);
            }
        }
        for attr in ["id=\"", "name=\""] {
            let mut rest = line.as_str();
            while let Some(k) = rest.find(attr) {
                let s = &rest[k + attr.len()..];
                let end = s.find('"').unwrap_or(s.len());
                out.insert(s[..end].to_string());
                rest = &s[end..];
            }
        }
    }
    out
}

/// The words of a command line as `sh` reads them, for the commands the test runs: quotes
/// ('...' literal, "..." with `\` escapes) and backslash escapes; a `#` starting a word begins
/// a comment. Pipes, redirections, `&&`, `;`, substitutions, variables, globs and `~` are
/// refused with what was found: the test runs commands without a shell.
pub fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                words.extend(word.take());
            }
            '#' if word.is_none() => break,
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => w.push(x),
                        None => return Err("an unclosed ' quote".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => w.push(x),
                            Some(x) => {
                                w.push('\\');
                                w.push(x);
                            }
                            None => return Err("an unclosed \" quote".into()),
                        },
                        Some(x @ ('$' | '`')) => return Err(format!("`{x}` inside double quotes")),
                        Some(x) => w.push(x),
                        None => return Err("an unclosed \" quote".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(x) => word.get_or_insert_with(String::new).push(x),
                None => return Err("a trailing backslash".into()),
            },
            '|' | '&' | ';' | '<' | '>' | '(' | ')' | '$' | '`' | '*' | '?' | '{' | '}' => {
                return Err(format!(
                    "`{c}` (pipes, redirections, `&&`, `;`, substitutions, variables and globs are not run)"
                ));
            }
            '~' if word.is_none() => return Err("`~` (home directory expansion)".into()),
            _ => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// The words of a documented command, leniently, for reading flags only: whitespace-separated,
/// quotes kept together, a comment (`#` starting a word) dropped.
pub fn loose_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (None, '#') if word.is_empty() => break,
            (None, ' ' | '\t') => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// `%20` and friends decoded.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (b[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a target is an absolute URL (`https:`, `mailto:`...), which is not checked.
pub fn has_scheme(t: &str) -> bool {
    t.split_once(':').is_some_and(|(s, _)| {
        s.len() > 1
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    }) || t.starts_with("//")
}
