//! The report as one self-contained HTML page: the report's own Markdown (headings, paragraphs,
//! pipe tables, images) rendered to HTML, every figure embedded as a base64 PNG data URI, so the
//! page can be mailed or attached without its folder.

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;

/// Escapes text for HTML element content and attribute values.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Inline Markdown the report writes: `**bold**` and `` `code` ``, after escaping.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for (k, part) in escape(text).split("**").enumerate() {
        if k % 2 == 1 {
            let _ = write!(out, "<strong>{part}</strong>");
        } else {
            out.push_str(part);
        }
    }
    let mut coded = String::new();
    for (k, part) in out.split('`').enumerate() {
        if k % 2 == 1 {
            let _ = write!(coded, "<code>{part}</code>");
        } else {
            coded.push_str(part);
        }
    }
    coded
}

/// The cells of a pipe-table row.
fn cells(line: &str) -> Vec<&str> {
    line.trim()
        .trim_start_matches('|')
        .trim_end_matches('|')
        .split('|')
        .map(str::trim)
        .collect()
}

/// `![alt](file)` on a line of its own: `(alt, file)`.
fn image(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix("![")?;
    let (alt, tail) = rest.split_once("](")?;
    Some((alt, tail.strip_suffix(')')?))
}

/// Renders `md` as a complete HTML page titled `title`, reading each image from `dir`. An image
/// that cannot be read is an error naming it, so a report never links a missing figure.
pub(crate) fn render(md: &str, dir: &Path, title: &str) -> Result<String, std::io::Error> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title>\n<style>\
         body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0}}\
         th,td{{border:1px solid #ccc;padding:4px 10px;text-align:left}}th{{background:#f3f3f3}}\
         img{{max-width:100%;display:block;margin:1em 0}}code{{background:#f3f3f3;padding:0 3px}}\
         </style></head><body>\n",
        escape(title)
    );
    let lines: Vec<&str> = md.lines().collect();
    let mut k = 0;
    while k < lines.len() {
        let line = lines[k];
        let t = line.trim();
        if t.starts_with('|') {
            // A pipe table: a header row, the separator, then body rows.
            h.push_str("<table>\n");
            let mut header = true;
            while k < lines.len() && lines[k].trim().starts_with('|') {
                let row = cells(lines[k]);
                let separator = row
                    .iter()
                    .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')));
                if !separator {
                    let tag = if header { "th" } else { "td" };
                    h.push_str("<tr>");
                    for c in row {
                        let _ = write!(h, "<{tag}>{}</{tag}>", inline(c));
                    }
                    h.push_str("</tr>\n");
                }
                header = false;
                k += 1;
            }
            h.push_str("</table>\n");
            continue;
        }
        if let Some((alt, file)) = image(t) {
            let bytes = std::fs::read(dir.join(file)).map_err(|e| {
                std::io::Error::new(e.kind(), format!("{}: {e}", dir.join(file).display()))
            })?;
            let data = base64::engine::general_purpose::STANDARD.encode(bytes);
            let _ = writeln!(
                h,
                "<img alt=\"{}\" src=\"data:image/png;base64,{data}\">",
                escape(alt)
            );
        } else if let Some(text) = t.strip_prefix("### ") {
            let _ = writeln!(h, "<h3>{}</h3>", inline(text));
        } else if let Some(text) = t.strip_prefix("## ") {
            let _ = writeln!(h, "<h2>{}</h2>", inline(text));
        } else if let Some(text) = t.strip_prefix("# ") {
            let _ = writeln!(h, "<h1>{}</h1>", inline(text));
        } else if !t.is_empty() {
            // A paragraph: this line and the non-blank, non-special lines after it.
            let mut para = vec![t];
            while k + 1 < lines.len() {
                let next = lines[k + 1].trim();
                if next.is_empty()
                    || next.starts_with('|')
                    || next.starts_with('#')
                    || image(next).is_some()
                {
                    break;
                }
                para.push(next);
                k += 1;
            }
            let _ = writeln!(h, "<p>{}</p>", inline(&para.join(" ")));
        }
        k += 1;
    }
    h.push_str("</body></html>\n");
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_headings_paragraphs_and_escapes() {
        let dir = std::env::temp_dir();
        let md = "# Title <x>\n\nOne **bold** and `a&b`\nsame paragraph.\n\n| h1 | h2 |\n|---|---|\n| 1 | <2> |\n";
        let h = render(md, &dir, "T").unwrap();
        assert!(h.contains("<h1>Title &lt;x&gt;</h1>"), "{h}");
        assert!(
            h.contains("<p>One <strong>bold</strong> and <code>a&amp;b</code> same paragraph.</p>"),
            "{h}"
        );
        assert!(
            h.contains("<tr><th>h1</th><th>h2</th></tr>\n<tr><td>1</td><td>&lt;2&gt;</td></tr>"),
            "{h}"
        );
        assert!(!h.contains("---"));
    }

    #[test]
    fn images_are_embedded_and_a_missing_one_is_an_error() {
        let dir = std::env::temp_dir().join(format!("gridarena-html-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f.png"), b"foobar").unwrap();
        let h = render("![a \"plot\"](f.png)\n", &dir, "T").unwrap();
        // RFC 4648: "foobar" is "Zm9vYmFy".
        assert!(
            h.contains("<img alt=\"a &quot;plot&quot;\" src=\"data:image/png;base64,Zm9vYmFy\">"),
            "{h}"
        );
        let err = render("![x](missing.png)\n", &dir, "T").unwrap_err();
        assert!(err.to_string().contains("missing.png"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
