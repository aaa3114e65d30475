//! Minimal parser for the Prometheus text exposition format (v0.0.4), enough
//! to assert on psprobe's /metrics. Malformed input panics: in a test, a bad
//! exposition is itself a bug worth failing on.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Scrape {
    pub samples: Vec<Sample>,
    /// The raw body, for panic messages.
    pub text: String,
}

impl Scrape {
    pub fn parse(text: &str) -> Scrape {
        let samples = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| parse_line(l).unwrap_or_else(|e| panic!("bad exposition line {l:?}: {e}")))
            .collect();
        Scrape {
            samples,
            text: text.to_owned(),
        }
    }

    /// Sum of all samples named `name` whose labels include every pair in
    /// `labels`; 0.0 when none match (an unincremented counter may be absent).
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.series(name)
            .into_iter()
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .sum()
    }

    pub fn series(&self, name: &str) -> Vec<&Sample> {
        self.samples.iter().filter(|s| s.name == name).collect()
    }

    pub fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|s| s.name == name)
    }
}

fn parse_line(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .ok_or("no value after metric name")?;
    let name = &line[..name_end];
    if name.is_empty() {
        return Err("empty metric name".into());
    }
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(after) = rest.strip_prefix('{') {
        rest = parse_labels(after, &mut labels)?;
    }
    // Value, optionally followed by a timestamp we ignore.
    let value = rest.split_whitespace().next().ok_or("missing value")?;
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value: parse_value(value)?,
    })
}

/// Parses `k="v",k2="v2"}` and returns the text after the closing brace.
fn parse_labels<'a>(mut s: &'a str, out: &mut BTreeMap<String, String>) -> Result<&'a str, String> {
    loop {
        s = s.trim_start();
        if let Some(after) = s.strip_prefix('}') {
            return Ok(after);
        }
        let eq = s.find('=').ok_or("label without '='")?;
        let key = s[..eq].trim().to_owned();
        s = s[eq + 1..]
            .trim_start()
            .strip_prefix('"')
            .ok_or("label value not quoted")?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            match chars.next().ok_or("unterminated label value")? {
                (i, '"') => break i,
                (_, '\\') => match chars.next().ok_or("dangling backslash")?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c), // covers \\ and \"
                },
                (_, c) => value.push(c),
            }
        };
        out.insert(key, value);
        s = s[end + 1..].trim_start();
        s = s.strip_prefix(',').unwrap_or(s);
    }
}

fn parse_value(v: &str) -> Result<f64, String> {
    match v {
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => v.parse().map_err(|e| format!("value {v:?}: {e}")),
    }
}
