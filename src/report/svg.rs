//! Minimal inline SVG charts for the HTML report: no scripts, no external assets. Axes carry
//! their unit and round ticks (1, 2, 5 × 10^k); text never sits on a whisker or on other text:
//! value labels have a column of their own right of the plot, legends a row above it.

use std::fmt::Write;

pub(crate) const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f",
];

/// Width of every chart, px.
pub(crate) const WIDTH: f64 = 900.0;

pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round tick values covering `[lo, hi]`: about `n` of them, steps of 1, 2 or 5 × 10^k.
pub(crate) fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let raw = (hi - lo) / n.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).floor() * step;
    let mut out = Vec::new();
    let mut v = first;
    while v <= hi + step * 1e-9 {
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    if out.last().is_some_and(|l| *l < hi - step * 1e-9) {
        out.push(v);
    }
    out
}

/// A tick value as text: no needless decimals, thousands as `k`.
pub(crate) fn tick_text(v: f64) -> String {
    let a = v.abs();
    if a >= 10_000.0 {
        format!("{}k", trim(v / 1000.0))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// One bar with an interval whisker, in percent.
pub(crate) struct Bar {
    pub label: String,
    pub value: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Said in place of an interval that is missing (why: too few restarts, say).
    pub note: Option<String>,
}

pub(crate) fn header(s: &mut String, title: &str, height: f64) {
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" aria-label="{t}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}"><title>{t}</title><text x="10" y="22" class="title">{t}</text>"#,
        t = escape(title)
    );
}

/// A bar's value and interval as the value column shows it (`, clipped` where the interval
/// runs past the axis `lo..hi`).
fn value_text(b: &Bar, unit: &str, lo: f64, hi: f64) -> String {
    let clipped = b.low.is_some_and(|l| l < lo) || b.high.is_some_and(|h| h > hi);
    match (b.low, b.high, &b.note) {
        (Some(l), Some(h), _) => format!(
            "{:+.1}{unit} ({:+.1}..{:+.1}){}",
            b.value,
            l,
            h,
            if clipped { ", clipped" } else { "" }
        ),
        (_, _, Some(note)) => format!("{:+.1}{unit}: {note}", b.value),
        _ => format!("{:+.1}{unit}", b.value),
    }
}

/// Horizontal bars around a zero line, with interval whiskers, an x axis with round ticks in
/// `unit`, and each bar's value and interval as text in a column right of the plot.
pub(crate) fn bars_with_whiskers(title: &str, unit: &str, bars: &[Bar]) -> String {
    let row = 34.0;
    let (left, top, bottom) = (250.0, 40.0, 44.0);
    let height = top + row * bars.len() as f64 + bottom;
    // The axis fits the values and, within reason, their intervals: a huge interval (few
    // blocks) is clipped at the edge (and drawn open) rather than squashing every bar.
    let values = bars.iter().fold(1.0f64, |m, b| m.max(b.value.abs()));
    let reach = bars
        .iter()
        .flat_map(|b| [b.low.unwrap_or(b.value), b.high.unwrap_or(b.value)])
        .fold(values, |m, v| m.max(v.abs().min(values * 3.0)));
    let ticks = nice_ticks(-reach, reach, 6);
    let (lo, hi) = (ticks[0], ticks[ticks.len() - 1]);
    let texts: Vec<String> = bars.iter().map(|b| value_text(b, unit, lo, hi)).collect();
    // The value column is as wide as its longest text (a clipped interval's is long).
    let right = texts
        .iter()
        .fold(190.0f64, |w, t| w.max(text_width(t) + 24.0))
        .min(WIDTH - left - 200.0);
    let plot = WIDTH - left - right;
    let x = |v: f64| left + (v.clamp(lo, hi) - lo) / (hi - lo) * plot;
    let mut s = String::new();
    header(&mut s, title, height);
    let axis_y = height - bottom + 6.0;
    for t in &ticks {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{top}" x2="{0:.1}" y2="{axis_y}" stroke="{1}"/><text x="{0:.1}" y="{2}" text-anchor="middle" class="axis">{3}</text>"##,
            x(*t),
            if *t == 0.0 { "#555" } else { "#e4e4e4" },
            axis_y + 14.0,
            escape(&format!("{}{unit}", tick_text(*t)))
        );
    }
    for (i, b) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        let cy = y + row / 2.0;
        let (x0, x1) = (x(0.0).min(x(b.value)), x(0.0).max(x(b.value)));
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end" class="label">{}</text><rect class="bar" x="{x0:.1}" y="{}" width="{:.1}" height="{}" fill="{}" opacity="0.85"><title>{}: {:+.2}{unit}</title></rect>"#,
            left - 10.0,
            cy + 4.0,
            escape(&b.label),
            y + 7.0,
            (x1 - x0).max(1.0),
            row - 14.0,
            PALETTE[i % PALETTE.len()],
            escape(&b.label),
            b.value
        );
        if let (Some(l), Some(h)) = (b.low, b.high) {
            let _ = write!(
                s,
                r##"<line class="whisker" x1="{:.1}" y1="{cy}" x2="{:.1}" y2="{cy}" stroke="#222" stroke-width="1.5"/>"##,
                x(l),
                x(h)
            );
            for (end, clipped, outward) in [(l, l < lo, -1.0), (h, h > hi, 1.0)] {
                if clipped {
                    // An arrowhead at the axis' edge: the interval goes on past it.
                    let tip = x(end);
                    let _ = write!(
                        s,
                        r##"<path class="clipped" d="M{:.1},{} L{:.1},{cy} L{:.1},{} Z" fill="#222"><title>the interval goes on past the axis</title></path>"##,
                        tip - 7.0 * outward,
                        cy - 5.0,
                        tip,
                        tip - 7.0 * outward,
                        cy + 5.0
                    );
                } else {
                    let _ = write!(
                        s,
                        r##"<line class="whisker-end" x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#222"/>"##,
                        x(end),
                        cy - 6.0,
                        cy + 6.0
                    );
                }
            }
        }
        // A text longer than the column (what an estimate without an interval needs) is cut
        // to fit, and kept whole in its tooltip.
        let shown = fit(&texts[i], right - 24.0);
        let whole = if shown == texts[i] {
            String::new()
        } else {
            format!("<title>{}</title>", escape(&texts[i]))
        };
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" class="value">{}{whole}</text>"#,
            WIDTH - right + 12.0,
            cy + 4.0,
            escape(&shown)
        );
    }
    s.push_str("</svg>");
    s
}

/// A series of (x, y) points for a line chart.
pub(crate) struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A shaded x-range with a label (a phase in the timeline).
pub(crate) struct Band {
    pub from: f64,
    pub to: f64,
    pub label: String,
    pub color: usize,
}

/// How a line chart's axes read.
pub(crate) struct Axes<'a> {
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub log_x: bool,
    /// Include zero on the y axis (rates); off for changes that may be all negative.
    pub y_from_zero: bool,
    /// Draw points as well as lines (sparse series).
    pub markers: bool,
    /// The largest value the y axis can mean (1 for a share): the headroom above the data
    /// never pushes the axis past it.
    pub y_cap: Option<f64>,
}

/// Width of a 12 px label, px (generous: the report's sans-serif averages less).
pub(crate) fn text_width(text: &str) -> f64 {
    7.5 * text.chars().count() as f64
}

/// `text` cut with an ellipsis to at most `max` px wide (a legend entry must stay inside the
/// chart; the whole label stays in the entry's tooltip).
pub(crate) fn fit(text: &str, max: f64) -> String {
    if text_width(text) <= max {
        return text.to_string();
    }
    let keep = ((max / 7.5).floor() as usize).saturating_sub(1);
    let mut cut: String = text.chars().take(keep).collect();
    cut.push('…');
    cut
}

/// Where each legend entry goes: (x, row), entries side by side, a new row when the next
/// would run past `right`.
pub(crate) fn legend_layout(labels: &[&str], left: f64, right: f64) -> Vec<(f64, usize)> {
    let mut out = Vec::new();
    let (mut x, mut row) = (left, 0);
    for label in labels {
        let w = 14.0 + text_width(label) + 24.0;
        if x > left && x + w > right {
            x = left;
            row += 1;
        }
        out.push((x, row));
        x += w;
    }
    out
}

/// Line chart with optional shaded bands; legends in rows above the plot.
pub(crate) fn lines(title: &str, axes: &Axes<'_>, series: &[Series], bands: &[Band]) -> String {
    let (left, right, bottom) = (74.0, 24.0, 50.0);
    let fitted: Vec<String> = series
        .iter()
        .map(|s| fit(&s.label, WIDTH - right - left - 14.0 - 24.0))
        .collect();
    let labels: Vec<&str> = fitted.iter().map(String::as_str).collect();
    let legend = legend_layout(&labels, left, WIDTH - right);
    let legend_rows = legend.last().map_or(1, |l| l.1 + 1) as f64;
    let top = 34.0 + 16.0 * legend_rows;
    let height = top + 250.0 + bottom;
    let tx = |v: f64| if axes.log_x { v.max(1e-9).log10() } else { v };
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| tx(p.0)))
        .chain(bands.iter().flat_map(|b| [tx(b.from), tx(b.to)]))
        .collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    let (mut x_min, mut x_max) = min_max(&xs);
    if axes.log_x {
        x_min = x_min.floor();
        x_max = x_max.ceil();
    }
    let (mut y_min, mut y_max) = min_max(&ys);
    if axes.y_from_zero {
        y_min = y_min.min(0.0);
    }
    let x_ticks = if axes.log_x {
        (x_min as i32..=x_max as i32).map(f64::from).collect()
    } else {
        nice_ticks(x_min, x_max, 8)
    };
    let headroom = y_max + (y_max - y_min).abs() * 0.05;
    let y_ticks = nice_ticks(
        y_min,
        axes.y_cap.map_or(headroom, |cap| headroom.min(cap)),
        5,
    );
    let (x_min, x_max) = (
        x_ticks[0],
        x_ticks[x_ticks.len() - 1].max(x_ticks[0] + 1e-9),
    );
    (y_min, y_max) = (y_ticks[0], y_ticks[y_ticks.len() - 1]);
    let px = |v: f64| left + (v - x_min) / (x_max - x_min) * (WIDTH - left - right);
    let py = |v: f64| height - bottom - (v - y_min) / (y_max - y_min) * (height - top - bottom);
    let mut s = String::new();
    header(&mut s, title, height);
    for b in bands {
        let _ = write!(
            s,
            r#"<rect class="band" x="{:.1}" y="{top}" width="{:.1}" height="{}" fill="{}" opacity="0.15"><title>{}</title></rect>"#,
            px(tx(b.from)),
            (px(tx(b.to)) - px(tx(b.from))).max(0.5),
            height - top - bottom,
            PALETTE[b.color % PALETTE.len()],
            escape(&b.label)
        );
    }
    let frame = Frame::new(left, top, right, bottom, height);
    for t in &y_ticks {
        frame.y_grid(&mut s, py(*t), *t == 0.0, &tick_text(*t));
    }
    for t in &x_ticks {
        let text = if axes.log_x {
            tick_text(10f64.powf(*t))
        } else {
            tick_text(*t)
        };
        frame.x_tick(&mut s, px(*t), &text);
    }
    for (i, line) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let points: Vec<String> = line
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", px(tx(p.0)), py(p.1)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline class="series" fill="none" stroke="{color}" stroke-width="1.8" points="{}"><title>{}</title></polyline>"#,
            points.join(" "),
            escape(&line.label)
        );
        if axes.markers {
            for p in &line.points {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{color}"/>"#,
                    px(tx(p.0)),
                    py(p.1)
                );
            }
        }
        legend_entry(&mut s, legend[i], color, &line.label, &fitted[i]);
    }
    frame.close(&mut s, axes.x_label, axes.y_label);
    s
}

/// A line chart's plot area, px: where its grid, ticks and axis labels go.
pub(crate) struct Frame {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
    pub height: f64,
}

impl Frame {
    /// The plot area of a `height` px chart `WIDTH` wide, from its margins.
    pub(crate) fn new(
        left: f64,
        top: f64,
        right_margin: f64,
        bottom_margin: f64,
        height: f64,
    ) -> Self {
        Frame {
            left,
            top,
            right: WIDTH - right_margin,
            bottom: height - bottom_margin,
            height,
        }
    }

    /// A grid line across the plot at `y`, its value left of the axis (zero's line darker).
    pub(crate) fn y_grid(&self, s: &mut String, y: f64, zero: bool, text: &str) {
        let _ = write!(
            s,
            r##"<line x1="{}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="{}"/><text x="{}" y="{:.1}" class="axis" text-anchor="end">{}</text>"##,
            self.left,
            self.right,
            if zero { "#555" } else { "#e4e4e4" },
            self.left - 6.0,
            y + 4.0,
            escape(text)
        );
    }

    /// A tick under the x axis at `x`, its value below it.
    pub(crate) fn x_tick(&self, s: &mut String, x: f64, text: &str) {
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#999"/><text x="{x:.1}" y="{}" class="axis" text-anchor="middle">{}</text>"##,
            self.bottom,
            self.bottom + 5.0,
            self.bottom + 18.0,
            escape(text)
        );
    }

    /// The axes and their labels; closes the chart.
    pub(crate) fn close(&self, s: &mut String, x_label: &str, y_label: &str) {
        let _ = write!(
            s,
            r##"<line x1="{l}" y1="{b}" x2="{r}" y2="{b}" stroke="#555"/><line x1="{l}" y1="{t}" x2="{l}" y2="{b}" stroke="#555"/><text x="{cx}" y="{}" text-anchor="middle" class="axis">{}</text><text x="16" y="{cy}" class="axis" transform="rotate(-90 16 {cy})" text-anchor="middle">{}</text></svg>"##,
            self.height - 12.0,
            escape(x_label),
            escape(y_label),
            l = self.left,
            t = self.top,
            b = self.bottom,
            r = self.right,
            cx = (self.left + self.right) / 2.0,
            cy = (self.top + self.bottom) / 2.0,
        );
    }
}

/// One legend entry at `(x, row)` from `legend_layout`: a swatch and the (fitted) label, the
/// whole label in its tooltip.
pub(crate) fn legend_entry(
    s: &mut String,
    (x, row): (f64, usize),
    color: &str,
    label: &str,
    shown: &str,
) {
    let _ = write!(
        s,
        r#"<rect x="{x}" y="{}" width="10" height="10" fill="{color}"/><text x="{}" y="{}" class="legend"><title>{}</title>{}</text>"#,
        28.0 + 16.0 * row as f64,
        x + 14.0,
        37.0 + 16.0 * row as f64,
        escape(label),
        escape(shown)
    );
}

fn min_max(values: &[f64]) -> (f64, f64) {
    let (lo, hi) = values
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    if lo > hi {
        (0.0, 1.0)
    } else if lo == hi {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 9.3, 5), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(
            nice_ticks(-12.0, 12.0, 6),
            [-15.0, -10.0, -5.0, 0.0, 5.0, 10.0, 15.0]
        );
        assert_eq!(
            nice_ticks(6_100.0, 13_400.0, 5),
            [6000.0, 8000.0, 10000.0, 12000.0, 14000.0]
        );
        assert_eq!(tick_text(12_000.0), "12k");
        assert_eq!(tick_text(0.25), "0.25");
        assert_eq!(tick_text(-0.0), "0");
    }

    #[test]
    fn bars_have_one_rect_and_whisker_each_and_values_right_of_the_plot() {
        let bars = vec![
            Bar {
                label: "a<b".into(),
                value: -5.0,
                low: Some(-7.0),
                high: Some(-3.0),
                note: None,
            },
            Bar {
                label: "c".into(),
                value: 2.0,
                low: None,
                high: None,
                note: None,
            },
        ];
        let svg = bars_with_whiskers("t", "%", &bars);
        assert_eq!(svg.matches("class=\"bar\"").count(), 2);
        assert_eq!(svg.matches("class=\"whisker\"").count(), 1);
        assert!(svg.contains("a&lt;b") && svg.contains("-5.0% (-7.0..-3.0)"));
        assert!(
            svg.contains(">-5%<") && svg.contains(">0%<"),
            "ticks with the unit"
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        // Every value label starts right of the plot's right edge (where whiskers end).
        let plot_right = WIDTH - 190.0;
        let xs: Vec<f64> = svg
            .match_indices("<text x=\"")
            .filter(|(i, _)| {
                svg[*i..]
                    .split('>')
                    .next()
                    .unwrap()
                    .contains("class=\"value\"")
            })
            .map(|(i, m)| {
                svg[i + m.len()..]
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert_eq!(xs.len(), 2);
        assert!(xs.iter().all(|x| *x > plot_right), "{xs:?}");
    }

    #[test]
    fn a_clipped_whisker_is_marked_and_a_missing_interval_says_why() {
        let bars = vec![
            Bar {
                label: "ok".into(),
                value: -2.0,
                low: Some(-3.0),
                high: Some(-1.0),
                note: None,
            },
            Bar {
                label: "wide".into(),
                value: -1.3,
                low: Some(-79.8),
                high: Some(382.1),
                note: None,
            },
            Bar {
                label: "few".into(),
                value: 4.0,
                low: None,
                high: None,
                note: Some("not enough restarts for an interval".into()),
            },
        ];
        let svg = bars_with_whiskers("t", "%", &bars);
        assert_eq!(
            svg.matches("class=\"clipped\"").count(),
            2,
            "both ends marked"
        );
        assert!(svg.contains("(-79.8..+382.1), clipped"), "{svg}");
        assert!(svg.contains("+4.0%: not enough restarts for an interval"));
        assert_eq!(svg.matches("class=\"whisker\"").count(), 2);
        // What an estimate needs, too long for the value column: cut, whole in its tooltip.
        let needs =
            "not enough blocks for an interval: about 7 more blocks (1 minutes) for +-3 points";
        let long = vec![
            Bar {
                label: "few".into(),
                value: -5.7,
                low: None,
                high: None,
                note: Some(needs.into()),
            },
            Bar {
                label: "ok".into(),
                value: -2.0,
                low: Some(-3.0),
                high: Some(-1.0),
                note: None,
            },
        ];
        let svg = bars_with_whiskers("t", "%", &long);
        assert!(
            svg.contains(&format!("<title>-5.7%: {needs}</title>")),
            "{svg}"
        );
        let shown = svg
            .split("class=\"value\">")
            .nth(1)
            .and_then(|t| t.split('<').next())
            .unwrap();
        assert!(
            shown.starts_with("-5.7%: not enough") && shown.len() < needs.len(),
            "{shown}"
        );
        assert!(text_width(shown) <= WIDTH - 250.0 - 200.0, "{shown}");
    }

    #[test]
    fn a_legend_too_long_for_the_chart_is_cut_and_kept_whole_in_its_tooltip() {
        let long = format!("g:{} vs base", ["statements"; 12].join("+"));
        let max = WIDTH - 74.0 - 24.0 - 38.0;
        let cut = fit(&long, max);
        assert!(cut.ends_with('…') && text_width(&cut) <= max, "{cut}");
        assert_eq!(fit("short", max), "short");
        let series = [Series {
            label: long.clone(),
            points: vec![(0.0, 1.0), (1.0, 2.0)],
        }];
        let axes = Axes {
            x_label: "x",
            y_label: "y",
            log_x: false,
            y_from_zero: true,
            markers: false,
            y_cap: None,
        };
        let svg = lines("t", &axes, &series, &[]);
        assert!(
            svg.contains(&format!("<title>{long}</title>{cut}</text>")),
            "{svg}"
        );
    }

    #[test]
    fn a_clipped_interval_s_long_value_label_stays_inside_the_chart() {
        let bars = [Bar {
            label: "pfsoff".into(),
            value: 5.0,
            low: Some(-18.0),
            high: Some(34.4),
            note: None,
        }];
        let svg = bars_with_whiskers("t", "%", &bars);
        let text = "+5.0% (-18.0..+34.4), clipped";
        let at = svg.find(&format!(">{text}<")).expect("the value label");
        let head = &svg[..at];
        let x: f64 = head[head.rfind("<text x=\"").unwrap() + 9..]
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(x + text_width(text) <= WIDTH, "{x} + {}", text_width(text));
    }

    #[test]
    fn legend_entries_never_share_space() {
        let labels = ["pfson_conoff_inson vs pfson_conoff_insoff"; 5];
        let at = legend_layout(&labels, 74.0, WIDTH - 24.0);
        for pair in at.windows(2) {
            let ((x0, r0), (x1, r1)) = (pair[0], pair[1]);
            assert!(r1 > r0 || x1 >= x0 + text_width(labels[0]) + 14.0, "{at:?}");
        }
        assert!(at
            .iter()
            .all(|(x, _)| x + 14.0 + text_width(labels[0]) <= WIDTH - 24.0));
    }

    #[test]
    fn a_share_axis_stops_at_one() {
        let axes = Axes {
            x_label: "x",
            y_label: "share",
            log_x: false,
            y_from_zero: true,
            markers: false,
            y_cap: Some(1.0),
        };
        let series = [Series {
            label: "s".into(),
            points: vec![(1.0, 0.2), (2.0, 1.0)],
        }];
        let svg = lines("t", &axes, &series, &[]);
        // The y tick labels are the right-aligned axis texts; the top one is 1.
        let y_ticks: Vec<&str> = svg
            .split(r#"class="axis" text-anchor="end">"#)
            .skip(1)
            .filter_map(|t| t.split('<').next())
            .collect();
        assert_eq!(y_ticks.last(), Some(&"1"), "{y_ticks:?}");
    }

    #[test]
    fn lines_bands_ticks_and_legend_above() {
        let svg = lines(
            "t",
            &Axes {
                x_label: "x (s)",
                y_label: "y",
                log_x: true,
                y_from_zero: true,
                markers: false,
                y_cap: None,
            },
            &[Series {
                label: "s".into(),
                points: vec![(1.0, 2.0), (20.0, 3.0)],
            }],
            &[Band {
                from: 1.0,
                to: 1.5,
                label: "p".into(),
                color: 0,
            }],
        );
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert_eq!(svg.matches("class=\"band\"").count(), 1);
        assert!(
            svg.contains(">100<") && svg.contains(">10<"),
            "log ticks: {svg}"
        );
    }
}
