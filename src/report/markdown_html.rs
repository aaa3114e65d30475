//! Markdown of the report's own dialect (headings, paragraphs, quotes, pipe tables, code
//! fences) turned into HTML, for a page whose text is only markdown.
//!
//! Must not: be used for the report's own page (html.rs renders its document directly, with
//! no markdown in between); it goes once no page needs it.

use std::fmt::Write;

use super::svg::escape;

/// Markdown tables → HTML tables (the report's own markdown only: pipes, headers, rows).
pub(crate) fn tables_from_markdown(md: &str) -> String {
    let mut out = String::new();
    let mut in_table = false;
    let mut header = true;
    let mut in_code = false;
    for line in md.lines() {
        if line.starts_with("```") {
            out.push_str(if in_code { "</pre>" } else { "<pre>" });
            in_code = !in_code;
            continue;
        }
        if in_code {
            let _ = writeln!(out, "{}", escape(line));
            continue;
        }
        if let Some(row) = line.strip_prefix('|') {
            if line.starts_with("| ---") || line.starts_with("| :") {
                continue;
            }
            if !in_table {
                out.push_str("<table>");
                in_table = true;
                header = true;
            }
            let cells: Vec<&str> = row.trim_end_matches('|').split(" | ").collect();
            let tag = if header { "th" } else { "td" };
            out.push_str("<tr>");
            for c in cells {
                let _ = write!(out, "<{tag}>{}</{tag}>", escape(c.trim()).replace('`', ""));
            }
            out.push_str("</tr>");
            header = false;
            continue;
        }
        if in_table {
            out.push_str("</table>");
            in_table = false;
        }
        if let Some(h) = line.strip_prefix("## ") {
            let _ = write!(out, "<h2>{}</h2>", escape(h));
        } else if let Some(h) = line.strip_prefix("# ") {
            let _ = write!(out, "<h1>{}</h1>", escape(h));
        } else if let Some(q) = line.strip_prefix("> ") {
            let _ = write!(out, "<p><em>{}</em></p>", escape(q));
        } else if !line.trim().is_empty() {
            let _ = write!(out, "<p>{}</p>", escape(line).replace("**", ""));
        }
    }
    if in_table {
        out.push_str("</table>");
    }
    out
}
