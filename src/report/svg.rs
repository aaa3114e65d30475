//! Minimal inline SVG charts for the HTML report: no scripts, no external assets.

use std::fmt::Write;

pub const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f",
];

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One bar with an interval whisker, in percent.
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// Horizontal bars around a zero line, with interval whiskers.
pub fn bars_with_whiskers(title: &str, unit: &str, bars: &[Bar]) -> String {
    let row = 34.0;
    let (left, right, top) = (230.0, 40.0, 40.0);
    let width = 760.0;
    let height = top + row * bars.len() as f64 + 40.0;
    // The axis fits the values and, within reason, their intervals: a huge interval (few
    // blocks) is clipped at the edge rather than squashing every bar to nothing.
    let values = bars.iter().fold(1.0f64, |m, b| m.max(b.value.abs()));
    let extent = bars
        .iter()
        .flat_map(|b| [b.low.unwrap_or(b.value), b.high.unwrap_or(b.value)])
        .fold(values, |m, v| m.max(v.abs().min(values * 3.0)))
        * 1.15;
    let plot = width - left - right;
    let x = |v: f64| left + plot / 2.0 + v.clamp(-extent, extent) / extent * plot / 2.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" aria-label="{t}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}"><title>{t}</title><text x="10" y="22" class="title">{t}</text>"#,
        t = escape(title)
    );
    let zero = x(0.0);
    let _ = write!(
        s,
        r##"<line x1="{zero}" y1="{top}" x2="{zero}" y2="{}" stroke="#555"/>"##,
        height - 30.0
    );
    for (i, b) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        let (x0, x1) = (zero.min(x(b.value)), zero.max(x(b.value)));
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end" class="label">{}</text><rect class="bar" x="{x0:.1}" y="{}" width="{:.1}" height="{}" fill="{}"><title>{}: {:+.2}{unit}</title></rect>"#,
            left - 8.0,
            y + row / 2.0 + 4.0,
            escape(&b.label),
            y + 6.0,
            (x1 - x0).max(1.0),
            row - 12.0,
            PALETTE[i % PALETTE.len()],
            escape(&b.label),
            b.value
        );
        if let (Some(lo), Some(hi)) = (b.low, b.high) {
            let cy = y + row / 2.0;
            let _ = write!(
                s,
                r##"<line class="whisker" x1="{:.1}" y1="{cy}" x2="{:.1}" y2="{cy}" stroke="#222" stroke-width="1.5"/><line x1="{:.1}" y1="{}" x2="{:.1}" y2="{}" stroke="#222"/><line x1="{:.1}" y1="{}" x2="{:.1}" y2="{}" stroke="#222"/>"##,
                x(lo),
                x(hi),
                x(lo),
                cy - 6.0,
                x(lo),
                cy + 6.0,
                x(hi),
                cy - 6.0,
                x(hi),
                cy + 6.0
            );
        }
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" class="value">{:+.1}{unit}</text>"#,
            width - right + 2.0 - 36.0,
            y + row / 2.0 + 4.0,
            b.value
        );
    }
    let _ = write!(
        s,
        r#"<text x="{zero}" y="{}" text-anchor="middle" class="axis">0</text></svg>"#,
        height - 14.0
    );
    s
}

/// A series of (x, y) points for a line chart.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A shaded x-range with a label (a phase in the timeline).
pub struct Band {
    pub from: f64,
    pub to: f64,
    pub label: String,
    pub color: usize,
}

/// Line chart with optional shaded bands; `log_x` for latency distributions.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    bands: &[Band],
    log_x: bool,
) -> String {
    let (width, height) = (760.0, 320.0);
    let (left, right, top, bottom) = (60.0, 20.0, 36.0, 46.0);
    let tx = |v: f64| if log_x { v.max(1e-9).log10() } else { v };
    let xs = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| tx(p.0)))
        .chain(bands.iter().flat_map(|b| [tx(b.from), tx(b.to)]));
    let (mut x_min, mut x_max) = (f64::MAX, f64::MIN);
    for v in xs {
        x_min = x_min.min(v);
        x_max = x_max.max(v);
    }
    if x_min >= x_max {
        x_max = x_min + 1.0;
    }
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.1;
    let px = |v: f64| left + (tx(v) - x_min) / (x_max - x_min) * (width - left - right);
    let py = |v: f64| height - bottom - v / y_max * (height - top - bottom);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" aria-label="{t}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}"><title>{t}</title><text x="10" y="22" class="title">{t}</text>"#,
        t = escape(title)
    );
    for b in bands {
        let _ = write!(
            s,
            r#"<rect class="band" x="{:.1}" y="{top}" width="{:.1}" height="{}" fill="{}" opacity="0.15"><title>{}</title></rect>"#,
            px(b.from),
            (px(b.to) - px(b.from)).max(0.5),
            height - top - bottom,
            PALETTE[b.color % PALETTE.len()],
            escape(&b.label)
        );
    }
    for (i, line) in series.iter().enumerate() {
        let points: Vec<String> = line
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", px(p.0), py(p.1)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline class="series" fill="none" stroke="{}" stroke-width="1.8" points="{}"><title>{}</title></polyline>"#,
            PALETTE[i % PALETTE.len()],
            points.join(" "),
            escape(&line.label)
        );
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" class="legend" fill="{}">{}</text>"#,
            left + 8.0 + 150.0 * (i % 4) as f64,
            top + 14.0 + 14.0 * (i / 4) as f64,
            PALETTE[i % PALETTE.len()],
            escape(&line.label)
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{b}" x2="{r}" y2="{b}" stroke="#555"/><line x1="{left}" y1="{top}" x2="{left}" y2="{b}" stroke="#555"/><text x="{cx}" y="{}" text-anchor="middle" class="axis">{}</text><text x="14" y="{cy}" class="axis" transform="rotate(-90 14 {cy})" text-anchor="middle">{}</text><text x="{}" y="{}" class="axis" text-anchor="end">{:.3}</text></svg>"##,
        height - 10.0,
        escape(x_label),
        escape(y_label),
        left - 4.0,
        top + 4.0,
        y_max,
        b = height - bottom,
        r = width - right,
        cx = (left + width - right) / 2.0,
        cy = (top + height - bottom) / 2.0,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_have_one_rect_and_whisker_each() {
        let bars = vec![
            Bar {
                label: "a<b".into(),
                value: -5.0,
                low: Some(-7.0),
                high: Some(-3.0),
            },
            Bar {
                label: "c".into(),
                value: 2.0,
                low: None,
                high: None,
            },
        ];
        let svg = bars_with_whiskers("t", "%", &bars);
        assert_eq!(svg.matches("class=\"bar\"").count(), 2);
        assert_eq!(svg.matches("class=\"whisker\"").count(), 1);
        assert!(svg.contains("a&lt;b"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }

    #[test]
    fn lines_and_bands() {
        let svg = lines(
            "t",
            "x",
            "y",
            &[Series {
                label: "s".into(),
                points: vec![(1.0, 2.0), (2.0, 3.0)],
            }],
            &[Band {
                from: 1.0,
                to: 1.5,
                label: "p".into(),
                color: 0,
            }],
            true,
        );
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert_eq!(svg.matches("class=\"band\"").count(), 1);
    }
}
