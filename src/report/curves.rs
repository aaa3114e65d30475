//! The study's picture: a change in percent against concurrency, one line per scenario with
//! its interval as a shaded band, on a log2 axis of client threads (1, 2, 4, ..., 1024 equally
//! spaced, as the seed study's levels are). Published values (`--compare`) are hollow points
//! in their scenario's color. No scripts, no external assets; text only in the title, the
//! legend rows above the plot and the axes, so it never sits on a line or a band.
//!
//! Must not: hide that an interval runs past the axis (its band is clipped there and the
//! point's tooltip keeps the whole interval), or join points across a level with no value.

use std::fmt::Write;

use super::svg::{
    escape, fit, header, legend_entry, legend_layout, nice_ticks, tick_text, Frame, PALETTE, WIDTH,
};

/// One level's figure: the change and its interval, in percent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CurvePoint {
    pub threads: u32,
    pub value: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// One scenario's line, and the published values to set beside it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Curve {
    pub label: String,
    pub points: Vec<CurvePoint>,
    pub published: Vec<(u32, f64)>,
}

impl Curve {
    /// Every (threads, percent) the chart draws for this curve: its points and the published
    /// values, which the axes must both hold.
    fn drawn(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        self.points
            .iter()
            .map(|p| (p.threads, p.value))
            .chain(self.published.iter().copied())
    }
}

const PLOT_HEIGHT: f64 = 300.0;
const PUBLISHED_LEGEND: &str = "published (hollow points)";

fn log2(threads: u32) -> f64 {
    f64::from(threads.max(1)).log2()
}

/// The y axis: every value, published value and zero; intervals within one span of the
/// values beyond them (a huge interval is clipped rather than flattening every line).
fn y_ticks(curves: &[Curve]) -> Vec<f64> {
    let values: Vec<f64> = curves
        .iter()
        .flat_map(Curve::drawn)
        .map(|(_, v)| v)
        .filter(|v| v.is_finite())
        .chain([0.0])
        .collect();
    let lo = values.iter().copied().fold(f64::MAX, f64::min);
    let hi = values.iter().copied().fold(f64::MIN, f64::max);
    let span = (hi - lo).max(1.0);
    let (mut a, mut b) = (lo, hi);
    for p in curves.iter().flat_map(|c| &c.points) {
        if let Some(l) = p.low.filter(|l| l.is_finite()) {
            a = a.min(l.max(lo - span));
        }
        if let Some(h) = p.high.filter(|h| h.is_finite()) {
            b = b.max(h.min(hi + span));
        }
    }
    nice_ticks(a, b, 6)
}

fn point_text(label: &str, p: &CurvePoint) -> String {
    match (p.low, p.high) {
        (Some(l), Some(h)) => format!(
            "{label}, {} threads: {:+.2}% ({:+.2}..{:+.2})",
            p.threads, p.value, l, h
        ),
        _ => format!("{label}, {} threads: {:+.2}%", p.threads, p.value),
    }
}

/// The chart: `y_label` names what the percent is a change of.
pub(crate) fn overhead_curves(title: &str, y_label: &str, curves: &[Curve]) -> String {
    let (left, right, bottom) = (74.0, 24.0, 50.0);
    let has_published = curves.iter().any(|c| !c.published.is_empty());
    let mut labels: Vec<String> = curves
        .iter()
        .map(|c| fit(&c.label, WIDTH - right - left - 14.0 - 24.0))
        .collect();
    if has_published {
        labels.push(PUBLISHED_LEGEND.to_string());
    }
    let label_refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    let legend = legend_layout(&label_refs, left, WIDTH - right);
    let legend_rows = legend.last().map_or(1, |l| l.1 + 1) as f64;
    let top = 34.0 + 16.0 * legend_rows;
    let height = top + PLOT_HEIGHT + bottom;

    let levels: Vec<u32> = curves
        .iter()
        .flat_map(Curve::drawn)
        .map(|(t, _)| t)
        .collect();
    let x_lo = levels.iter().map(|t| log2(*t)).fold(f64::MAX, f64::min);
    let x_hi = levels.iter().map(|t| log2(*t)).fold(f64::MIN, f64::max);
    let (x_lo, x_hi) = if levels.is_empty() {
        (0.0, 1.0)
    } else if x_hi - x_lo < 1.0 {
        (x_lo.floor() - 0.5, x_hi.ceil() + 0.5)
    } else {
        (x_lo.floor(), x_hi.ceil())
    };
    let y = y_ticks(curves);
    let (y_lo, y_hi) = (y[0], y[y.len() - 1].max(y[0] + 1e-9));
    let px = |v: f64| left + (v - x_lo) / (x_hi - x_lo) * (WIDTH - left - right);
    let py = |v: f64| {
        height - bottom - (v.clamp(y_lo, y_hi) - y_lo) / (y_hi - y_lo) * (height - top - bottom)
    };

    let mut s = String::new();
    header(&mut s, title, height);
    let frame = Frame::new(left, top, right, bottom, height);
    for t in &y {
        frame.y_grid(&mut s, py(*t), *t == 0.0, &format!("{}%", tick_text(*t)));
    }
    // A tick at every power of two the axis spans (log2: the seed study's levels).
    let mut k = x_lo.ceil();
    while k <= x_hi + 1e-9 {
        frame.x_tick(&mut s, px(k), &format!("{}", 2f64.powf(k).round()));
        k += 1.0;
    }
    for (i, curve) in curves.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mut points = curve.points.clone();
        points.sort_by_key(|p| p.threads);
        // Bands over runs of consecutive levels that have an interval.
        for run in points
            .split(|p| p.low.is_none() || p.high.is_none())
            .filter(|r| !r.is_empty())
        {
            let upper = run.iter().map(|p| {
                format!(
                    "{:.1},{:.1}",
                    px(log2(p.threads)),
                    py(p.high.unwrap_or(p.value))
                )
            });
            let lower = run.iter().rev().map(|p| {
                format!(
                    "{:.1},{:.1}",
                    px(log2(p.threads)),
                    py(p.low.unwrap_or(p.value))
                )
            });
            let outline: Vec<String> = upper.chain(lower).collect();
            let _ = write!(
                s,
                r#"<polygon class="band" fill="{color}" stroke="{color}" stroke-opacity="0.35" fill-opacity="0.15" points="{}"><title>{} (interval)</title></polygon>"#,
                outline.join(" "),
                escape(&curve.label)
            );
        }
        let line: Vec<String> = points
            .iter()
            .map(|p| format!("{:.1},{:.1}", px(log2(p.threads)), py(p.value)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline class="series" fill="none" stroke="{color}" stroke-width="1.8" points="{}"><title>{}</title></polyline>"#,
            line.join(" "),
            escape(&curve.label)
        );
        for p in &points {
            let _ = write!(
                s,
                r#"<circle class="point" cx="{:.1}" cy="{:.1}" r="3" fill="{color}"><title>{}</title></circle>"#,
                px(log2(p.threads)),
                py(p.value),
                escape(&point_text(&curve.label, p))
            );
        }
        for (threads, value) in &curve.published {
            let _ = write!(
                s,
                r#"<circle class="published" cx="{:.1}" cy="{:.1}" r="4.5" fill="white" stroke="{color}" stroke-width="1.8"><title>{}, {threads} threads: published {value:+.2}%</title></circle>"#,
                px(log2(*threads)),
                py(*value),
                escape(&curve.label)
            );
        }
        legend_entry(&mut s, legend[i], color, &curve.label, &labels[i]);
    }
    if has_published {
        let (x, row) = legend[curves.len()];
        let _ = write!(
            s,
            r##"<circle cx="{}" cy="{}" r="4.5" fill="white" stroke="#555" stroke-width="1.8"/><text x="{}" y="{}" class="legend">{PUBLISHED_LEGEND}</text>"##,
            x + 5.0,
            33.0 + 16.0 * row as f64,
            x + 14.0,
            37.0 + 16.0 * row as f64,
        );
    }
    frame.close(
        &mut s,
        "client threads (log2 scale)",
        &fit(y_label, PLOT_HEIGHT - 10.0),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(threads: u32, value: f64, half: Option<f64>) -> CurvePoint {
        CurvePoint {
            threads,
            value,
            low: half.map(|h| value - h),
            high: half.map(|h| value + h),
        }
    }

    #[test]
    fn a_band_per_run_of_intervals_a_point_per_level_and_log2_ticks() {
        let curves = vec![
            Curve {
                label: "a vs base".into(),
                points: vec![
                    point(1, -5.0, Some(1.0)),
                    point(4, -8.0, Some(1.0)),
                    point(2, -6.0, Some(2.0)),
                    point(8, -9.0, None),
                    point(16, -12.0, Some(1.5)),
                ],
                published: vec![(1, -9.8), (16, -16.2)],
            },
            Curve {
                label: "b vs base".into(),
                points: vec![point(1, 1.0, Some(0.5)), point(16, 2.0, Some(0.5))],
                published: vec![],
            },
        ];
        let svg = overhead_curves("t", "change (%)", &curves);
        // a: 1,2,4 then (8 has none) 16 alone; b: 1 and 16.
        assert_eq!(svg.matches("class=\"band\"").count(), 3, "{svg}");
        assert_eq!(svg.matches("class=\"point\"").count(), 7);
        assert_eq!(svg.matches("class=\"published\"").count(), 2);
        assert!(svg.contains(PUBLISHED_LEGEND));
        for tick in [">1<", ">2<", ">4<", ">8<", ">16<"] {
            assert!(svg.contains(tick), "{tick} missing");
        }
        assert!(!svg.contains(">32<") && !svg.contains(">3<"));
        // Threads sorted along the line: 1, 2, 4 left to right.
        let points = svg.split("class=\"series\"").nth(1).unwrap();
        let xs: Vec<f64> = points
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .split(' ')
            .map(|p| p.split(',').next().unwrap().parse().unwrap())
            .collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        assert!(svg.contains("a vs base, 2 threads: -6.00% (-8.00..-4.00)"));
    }

    #[test]
    fn a_huge_interval_is_clipped_not_the_axis() {
        let curves = vec![Curve {
            label: "pfsoff".into(),
            points: vec![point(1, -2.0, Some(400.0)), point(2, -4.0, Some(1.0))],
            published: vec![],
        }];
        let ticks = y_ticks(&curves);
        assert!(
            ticks[0] >= -10.0 && ticks[ticks.len() - 1] <= 10.0,
            "{ticks:?}"
        );
        assert!(overhead_curves("t", "y", &curves).contains("(-402.00..+398.00)"));
    }

    #[test]
    fn one_level_still_has_an_axis() {
        let curves = vec![Curve {
            label: "x".into(),
            points: vec![point(8, -3.0, Some(1.0))],
            published: vec![],
        }];
        let svg = overhead_curves("t", "y", &curves);
        assert!(svg.contains(">8<"), "{svg}");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
