//! The report as a document: headings, paragraphs, notes, lists, tables and code blocks, their
//! text in spans (plain, code, strong). Built once from the report's model (sections.rs and the
//! sections of attribution.rs and restarts.rs), and from the seed study's (`psprobe experiment`),
//! rendered here as markdown and as HTML elements, so the two formats say the same and the
//! HTML is never parsed back from markdown.
//!
//! Must not: compute or format a figure (the sections do), or know a section's content.

use std::fmt::Write;

use super::svg::escape;

/// A run of text in a paragraph or a table cell.
pub(crate) enum Span {
    Text(String),
    /// A name or statement as typed: markdown's `code` (plain text in HTML).
    Code(String),
    /// Markdown's **strong** (plain text in HTML).
    Strong(String),
}

pub(crate) fn text(s: impl Into<String>) -> Span {
    Span::Text(s.into())
}

pub(crate) fn code(s: impl Into<String>) -> Span {
    Span::Code(s.into())
}

/// A confidence level as people write it: 0.95 → "95", 0.999 → "99.9".
pub(super) fn level_percent(level: f64) -> String {
    let p = format!("{:.3}", level * 100.0);
    p.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A statement's text as the tables show it: its first 80 characters.
pub(super) fn statement(text: &str) -> Span {
    code(text.chars().take(80).collect::<String>())
}

pub(super) fn strong(s: impl Into<String>) -> Span {
    Span::Strong(s.into())
}

/// A table cell: its spans.
pub(crate) struct Cell(Vec<Span>);

impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell(vec![Span::Text(s)])
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::from(s.to_string())
    }
}

impl From<Span> for Cell {
    fn from(span: Span) -> Self {
        Cell(vec![span])
    }
}

/// Where a column's values sit (markdown says it; the HTML page's style right-aligns every
/// column but the first).
#[derive(Clone, Copy)]
pub(crate) enum Align {
    Left,
    Right,
}

pub(crate) struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    pub(crate) fn new(columns: Vec<(String, Align)>) -> Self {
        Table {
            columns,
            rows: Vec::new(),
        }
    }

    /// A row: a cell per column.
    pub(crate) fn row(&mut self, cells: Vec<Cell>) {
        debug_assert_eq!(cells.len(), self.columns.len(), "a cell per column");
        self.rows.push(cells);
    }
}

/// A column heading with its alignment.
pub(crate) fn column(title: impl Into<String>, align: Align) -> (String, Align) {
    (title.into(), align)
}

pub(crate) enum Block {
    /// A section's heading (level 2; the page's title is the renderers' callers').
    Heading(String),
    Paragraph(Vec<Span>),
    /// A warning or a drift: a line set apart (markdown's quote, HTML's emphasis).
    Note(String),
    /// Items each on its own line (markdown's `- `, HTML's list).
    List(Vec<Vec<Span>>),
    Table(Table),
    /// Lines to copy as they are: SQL, my.cnf.
    Code {
        lang: &'static str,
        lines: Vec<String>,
    },
}

impl Block {
    /// A paragraph of plain text.
    pub(crate) fn para(s: impl Into<String>) -> Self {
        Block::Paragraph(vec![Span::Text(s.into())])
    }
}

fn spans_markdown(spans: &[Span], in_table: bool) -> String {
    // A pipe inside a cell would end it; a backtick inside code would end the code.
    let cell = |s: &str| {
        if in_table {
            s.replace('|', "\\|")
        } else {
            s.to_string()
        }
    };
    spans
        .iter()
        .map(|span| match span {
            Span::Text(s) => cell(s),
            Span::Code(s) => format!("`{}`", cell(s).replace('`', "'")),
            Span::Strong(s) => format!("**{}**", cell(s)),
        })
        .collect()
}

/// A table as markdown lines, the last without its newline.
pub(super) fn table_markdown(t: &Table) -> String {
    let line = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let mut lines = vec![
        line(t.columns.iter().map(|(title, _)| title.clone()).collect()),
        line(
            t.columns
                .iter()
                .map(|(_, align)| match align {
                    Align::Left => "---".to_string(),
                    Align::Right => "---:".to_string(),
                })
                .collect(),
        ),
    ];
    for row in &t.rows {
        lines.push(line(
            row.iter().map(|c| spans_markdown(&c.0, true)).collect(),
        ));
    }
    lines.join("\n")
}

/// The blocks as markdown, a blank line between two.
pub(crate) fn markdown(blocks: &[Block]) -> String {
    let mut out: Vec<String> = Vec::new();
    for block in blocks {
        out.push(match block {
            Block::Heading(h) => format!("## {h}"),
            Block::Paragraph(spans) => spans_markdown(spans, false),
            Block::Note(n) => format!("> {n}"),
            Block::List(items) => items
                .iter()
                .map(|item| format!("- {}", spans_markdown(item, false)))
                .collect::<Vec<_>>()
                .join("\n"),
            Block::Table(t) => table_markdown(t),
            Block::Code { lang, lines } => format!("```{lang}\n{}\n```", lines.join("\n")),
        });
    }
    out.join("\n\n") + "\n"
}

fn spans_html(out: &mut String, spans: &[Span]) {
    // Every span in the text's own font, as the page has always shown them: the page's
    // `code` style shrinks monospace to a size that reads worse than the text around it.
    for span in spans {
        let (Span::Text(s) | Span::Code(s) | Span::Strong(s)) = span;
        out.push_str(&escape(s));
    }
}

/// The blocks as HTML elements, every text escaped.
pub(crate) fn html(blocks: &[Block]) -> String {
    let mut out = String::new();
    for block in blocks {
        match block {
            Block::Heading(h) => {
                let _ = write!(out, "<h2>{}</h2>", escape(h));
            }
            Block::Paragraph(spans) => {
                out.push_str("<p>");
                spans_html(&mut out, spans);
                out.push_str("</p>");
            }
            Block::Note(n) => {
                let _ = write!(out, "<p><em>{}</em></p>", escape(n));
            }
            Block::List(items) => {
                out.push_str("<ul>");
                for item in items {
                    out.push_str("<li>");
                    spans_html(&mut out, item);
                    out.push_str("</li>");
                }
                out.push_str("</ul>");
            }
            Block::Table(t) => {
                out.push_str("<table><tr>");
                for (title, _) in &t.columns {
                    let _ = write!(out, "<th>{}</th>", escape(title));
                }
                out.push_str("</tr>");
                for row in &t.rows {
                    out.push_str("<tr>");
                    for cell in row {
                        out.push_str("<td>");
                        spans_html(&mut out, &cell.0);
                        out.push_str("</td>");
                    }
                    out.push_str("</tr>");
                }
                out.push_str("</table>");
            }
            Block::Code { lines, .. } => {
                out.push_str("<pre>");
                for line in lines {
                    let _ = writeln!(out, "{}", escape(line));
                }
                out.push_str("</pre>");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Block> {
        let mut t = Table::new(vec![
            column("scenario", Align::Left),
            column("a <b> & c", Align::Right),
            column("statement", Align::Left),
        ]);
        t.row(vec![
            "x|y".into(),
            "1".into(),
            code("select `c` from t where a|b = '<'").into(),
        ]);
        vec![
            Block::Heading("Fish & <chips>".into()),
            Block::Paragraph(vec![
                text("Baseline: "),
                strong("b&b"),
                text(", "),
                code("*"),
                text(" marks <it>"),
            ]),
            Block::Note("warning: \"x\" < y".into()),
            Block::List(vec![vec![text("a & b")], vec![text("run "), code("<c>")]]),
            Block::Table(t),
            Block::Code {
                lang: "sql",
                lines: vec!["select 1 < 2;".into(), "select '&';".into()],
            },
        ]
    }

    /// Markdown keeps its syntax: pipes escaped in cells, a backtick in code made a quote.
    #[test]
    fn markdown_has_its_syntax_and_a_blank_line_between_blocks() {
        assert_eq!(
            markdown(&sample()),
            "## Fish & <chips>\n\n\
             Baseline: **b&b**, `*` marks <it>\n\n\
             > warning: \"x\" < y\n\n\
             - a & b\n- run `<c>`\n\n\
             | scenario | a <b> & c | statement |\n| --- | ---: | --- |\n\
             | x\\|y | 1 | `select 'c' from t where a\\|b = '<'` |\n\n\
             ```sql\nselect 1 < 2;\nselect '&';\n```\n"
        );
    }

    /// HTML has elements, no markdown syntax, and every text escaped (a statement's own
    /// backticks and pipes shown as they are).
    #[test]
    fn html_has_elements_and_escapes_every_text() {
        assert_eq!(
            html(&sample()),
            "<h2>Fish &amp; &lt;chips&gt;</h2>\
             <p>Baseline: b&amp;b, * marks &lt;it&gt;</p>\
             <p><em>warning: &quot;x&quot; &lt; y</em></p>\
             <ul><li>a &amp; b</li><li>run &lt;c&gt;</li></ul>\
             <table><tr><th>scenario</th><th>a &lt;b&gt; &amp; c</th><th>statement</th></tr>\
             <tr><td>x|y</td><td>1</td><td>select `c` from t where a|b = '&lt;'</td></tr></table>\
             <pre>select 1 &lt; 2;\nselect '&amp;';\n</pre>"
        );
    }
}
