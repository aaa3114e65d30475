//! The Grafana surface: `grafana/dashboards/psprobe.json` and the provisioning files.
//!
//! * `dashboard_lint` applies the rules of grafana/dashboard-linter that fit this dashboard
//!   (templated datasource everywhere, `$__rate_interval`, instance/scenario matchers, counters
//!   only under rate, units, titles and descriptions, reload on time change, non-editable) plus
//!   structural checks (ids, layout, known metrics, legends, provisioning files, README).
//! * `dashboard_queries_return_data_from_real_prometheus` runs every panel and annotation
//!   expression against a real Prometheus scraping a psprobe that carried a sysbench workload.
//! * `fleet_views_sum_over_three_probes_in_real_prometheus` does the fleet case: three probes
//!   sharing one schedule, their sum in the dashboard's view and in the recording rules.

use crate::common;

use common::cli;
use common::mariadb::MariaDb;
use common::probe::Probe;
use common::prometheus::{result_len, Prometheus};
use common::sysbench;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const DASHBOARD: &str = "grafana/dashboards/psprobe.json";
const DATASOURCE_YAML: &str = "grafana/provisioning/datasources/psprobe.yaml";
const PROVIDER_YAML: &str = "grafana/provisioning/dashboards/psprobe.yaml";
const README: &str = "grafana/README.md";
/// Where the dashboards provider reads files from, and where the README says to copy them.
const PROVIDER_PATH: &str = "/var/lib/grafana/dashboards/psprobe";

const DS_VAR: &str = "${datasource}";

/// Metrics psprobe exports only while it measures instrument groups (`--attribute`).
const ATTRIBUTION_ONLY: &[&str] = &[
    "psprobe_attribution_ratio",
    "psprobe_attribution_ratio_ci_low",
    "psprobe_attribution_ratio_ci_high",
];

/// Every metric psprobe exports (see src/metrics), with whether it has a `scenario` label.
const METRICS: &[(&str, bool)] = &[
    ("psprobe_commands_total", true),
    ("psprobe_command_duration_seconds_bucket", true),
    ("psprobe_command_duration_seconds_sum", true),
    ("psprobe_command_duration_seconds_count", true),
    ("psprobe_bytes_total", true),
    ("psprobe_errors_total", true),
    ("psprobe_unobserved_connections_total", false),
    ("psprobe_parse_errors_total", false),
    ("psprobe_connections_active", false),
    ("psprobe_connections_total", false),
    ("psprobe_upstream_connect_errors_total", false),
    ("psprobe_auth_failures_total", false),
    ("psprobe_digest_commands_total", true),
    ("psprobe_digest_errors_total", true),
    ("psprobe_digest_rows_sent_total", true),
    ("psprobe_digest_rows_affected_total", true),
    ("psprobe_digest_latency_seconds", true),
    ("psprobe_digest_latency_seconds_sum", true),
    ("psprobe_digest_latency_seconds_count", true),
    ("psprobe_scenario_active", true),
    ("psprobe_overhead_ratio", true),
    ("psprobe_overhead_ratio_ci_low", true),
    ("psprobe_overhead_ratio_ci_high", true),
    ("psprobe_attribution_ratio", false),
    ("psprobe_attribution_ratio_ci_low", false),
    ("psprobe_attribution_ratio_ci_high", false),
    ("psprobe_connections_by_transport_total", false),
    ("psprobe_tls_handshake_failures_total", false),
    ("psprobe_unobserved_bytes_total", false),
    ("psprobe_unobserved_exchanges_total", false),
    ("psprobe_tls_certificate_reloads_total", false),
];

/// Grafana unit ids the dashboard may use (a subset of grafana-data's valueFormats).
const UNITS: &[&str] = &[
    "none",
    "short",
    "percent",
    "percentunit",
    "s",
    "ms",
    "µs",
    "ns",
    "dtdurations",
    "ops",
    "reqps",
    "cps",
    "rps",
    "wps",
    "Bps",
    "bps",
    "bytes",
    "decbytes",
];

/// Grafana's global variables that may appear in expressions.
const BUILTIN_VARS: &[&str] = &[
    "__rate_interval",
    "__interval",
    "__interval_ms",
    "__range",
    "__range_s",
    "__range_ms",
    "__from",
    "__to",
    "__dashboard",
    // The value Grafana stores for "All" in a variable's current selection.
    "__all",
];

const RANGE_FUNCTIONS: &[&str] = &["rate", "irate", "increase"];
const AGGREGATIONS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
];
const PROMQL_KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "and",
    "or",
    "unless",
    "inf",
    "nan",
];

fn path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

fn dashboard() -> Value {
    serde_json::from_str(&read(DASHBOARD)).unwrap_or_else(|e| panic!("{DASHBOARD}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Walking the dashboard

/// Every panel, rows' nested (collapsed) panels included, in document order.
fn all_panels(dash: &Value) -> Vec<&Value> {
    fn walk<'a>(panels: &'a Value, out: &mut Vec<&'a Value>) {
        for p in panels.as_array().into_iter().flatten() {
            out.push(p);
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dash["panels"], &mut out);
    out
}

fn title(p: &Value) -> String {
    format!(
        "panel {} {:?}",
        p["id"],
        p["title"].as_str().unwrap_or("<untitled>")
    )
}

fn is_layout_panel(p: &Value) -> bool {
    matches!(p["type"].as_str(), Some("row") | Some("text"))
}

/// A PromQL expression of the dashboard and where it comes from.
#[derive(Debug, Clone)]
struct Expr {
    origin: String,
    expr: String,
    legend: String,
}

fn annotation_exprs(dash: &Value) -> Vec<Expr> {
    dash["annotations"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["builtIn"].as_i64() != Some(1))
        .flat_map(|a| {
            let name = a["name"].as_str().unwrap_or("<unnamed>");
            [&a["expr"], &a["target"]["expr"]]
                .into_iter()
                .filter_map(Value::as_str)
                .map(move |e| Expr {
                    origin: format!("annotation {name:?}"),
                    expr: e.to_owned(),
                    legend: a["titleFormat"].as_str().unwrap_or("").to_owned(),
                })
        })
        .collect()
}

fn target_exprs(dash: &Value) -> Vec<Expr> {
    let mut out = Vec::new();
    for p in all_panels(dash) {
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push(Expr {
                origin: format!("{} target {}", title(p), t["refId"]),
                expr: t["expr"].as_str().unwrap_or("").to_owned(),
                legend: t["legendFormat"].as_str().unwrap_or("").to_owned(),
            });
        }
    }
    out
}

fn all_exprs(dash: &Value) -> Vec<Expr> {
    let mut v = target_exprs(dash);
    v.extend(annotation_exprs(dash));
    v
}

/// Every string in the JSON document, with a JSON-pointer-ish location.
fn all_strings<'a>(v: &'a Value, at: String, out: &mut Vec<(String, &'a str)>) {
    match v {
        Value::String(s) => out.push((at, s)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| all_strings(x, format!("{at}/{i}"), out)),
        Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| all_strings(x, format!("{at}/{k}"), out)),
        _ => {}
    }
}

/// Every `"datasource"` value in the document, with its location.
fn all_datasources<'a>(v: &'a Value, at: String, out: &mut Vec<(String, &'a Value)>) {
    match v {
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| all_datasources(x, format!("{at}/{i}"), out)),
        Value::Object(o) => {
            for (k, x) in o {
                if k == "datasource" {
                    out.push((format!("{at}/{k}"), x));
                }
                all_datasources(x, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Template variable references: `$name`, `${name}`, `${name:format}`, `[[name]]`

/// (byte range, variable name) of every variable reference in `s`.
fn var_refs(s: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let b = s.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() && b[i + 1] == b'{' {
            if let Some(close) = s[i..].find('}') {
                let inner = &s[i + 2..i + close];
                let name = inner.split(':').next().unwrap_or("");
                out.push((i..i + close + 1, name.to_owned()));
                i += close + 1;
                continue;
            }
        } else if b[i] == b'$' && i + 1 < b.len() && ident(b[i + 1]) {
            let end = (i + 1..b.len()).find(|&j| !ident(b[j])).unwrap_or(b.len());
            out.push((i..end, s[i + 1..end].to_owned()));
            i = end;
            continue;
        } else if b[i] == b'[' && b.get(i + 1) == Some(&b'[') {
            if let Some(close) = s[i..].find("]]") {
                let name = s[i + 2..i + close].split(':').next().unwrap_or("");
                out.push((i..i + close + 2, name.to_owned()));
                i += close + 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Replaces every variable reference using `values`; panics on an unknown variable.
fn substitute(s: &str, values: &HashMap<&str, &str>) -> String {
    let mut out = String::new();
    let mut last = 0;
    for (range, name) in var_refs(s) {
        let v = values
            .get(name.as_str())
            .unwrap_or_else(|| panic!("no test value for variable ${name} in {s:?}"));
        out.push_str(&s[last..range.start]);
        out.push_str(v);
        last = range.end;
    }
    out.push_str(&s[last..]);
    out
}

// ---------------------------------------------------------------------------------------------
// A small PromQL scanner: enough to find selectors, their matchers, ranges and the function
// directly around each selector.

/// `s` with the contents of string literals replaced by `_` (same byte offsets).
fn blank_strings(s: &str) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < b.len() {
        match quote {
            None if matches!(b[i], b'"' | b'\'' | b'`') => quote = Some(b[i]),
            None => {}
            Some(q) if b[i] == q => quote = None,
            Some(q) => {
                if b[i] == b'\\' && q != b'`' && i + 1 < b.len() {
                    b[i] = b'_';
                    i += 1;
                }
                b[i] = b'_';
            }
        }
        i += 1;
    }
    b
}

#[derive(Debug)]
struct Matcher {
    label: String,
    op: String,
    value: String,
}

#[derive(Debug)]
struct Selector {
    metric: String,
    matchers: Vec<Matcher>,
    /// Function whose argument list directly contains the selector ("" for plain parens or
    /// aggregation bodies, None at top level).
    function: Option<String>,
    range: Option<String>,
}

#[derive(Debug, Default)]
struct Scan {
    selectors: Vec<Selector>,
    /// Contents of every `[...]`.
    ranges: Vec<String>,
    /// (function, its argument text) for every call.
    calls: Vec<(String, String)>,
    /// Labels of every `by (...)` / `without (...)` clause.
    grouping: Vec<String>,
    errors: Vec<String>,
}

fn matching(b: &[u8], open: usize, o: u8, c: u8) -> Option<usize> {
    let mut depth = 0;
    for (j, &x) in b.iter().enumerate().skip(open) {
        if x == o {
            depth += 1;
        } else if x == c {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

fn parse_matchers(text: &str) -> Result<Vec<Matcher>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .ok_or_else(|| format!("matcher without operator in {{{text}}}"))?;
        let label = rest[..name_end].to_owned();
        rest = rest[name_end..].trim_start();
        let op = ["=~", "!~", "!=", "="]
            .into_iter()
            .find(|op| rest.starts_with(op))
            .ok_or_else(|| format!("bad matcher operator after {label:?} in {{{text}}}"))?;
        rest = rest[op.len()..].trim_start();
        let quote = rest
            .chars()
            .next()
            .filter(|c| matches!(c, '"' | '\'' | '`'))
            .ok_or_else(|| format!("unquoted value for {label:?} in {{{text}}}"))?;
        let mut value = String::new();
        let mut chars = rest.char_indices().skip(1);
        let end = loop {
            match chars.next() {
                None => return Err(format!("unterminated value for {label:?} in {{{text}}}")),
                Some((i, c)) if c == quote => break i,
                Some((_, '\\')) if quote != '`' => {
                    if let Some((_, c)) = chars.next() {
                        value.push(c);
                    }
                }
                Some((_, c)) => value.push(c),
            }
        };
        out.push(Matcher {
            label,
            op: op.to_owned(),
            value,
        });
        rest = rest[end + 1..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Ok(out)
}

fn scan(expr: &str) -> Scan {
    let b = blank_strings(expr);
    let ident_start = |c: u8| c.is_ascii_alphabetic() || c == b'_' || c == b':';
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    let mut out = Scan::default();
    // Function names of the open parentheses.
    let mut stack: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'$' {
            // A variable: skip its name (and braces).
            let refs = var_refs(&expr[i..]);
            i += refs.first().map_or(1, |(r, _)| r.end);
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && i + 1 < b.len() && b[i + 1].is_ascii_digit()) {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
            continue;
        }
        if c == b'(' {
            stack.push(String::new());
            i += 1;
            continue;
        }
        if c == b')' {
            stack.pop();
            i += 1;
            continue;
        }
        if c == b'[' {
            let Some(close) = matching(&b, i, b'[', b']') else {
                out.errors.push(format!("unclosed '[' at {i}"));
                break;
            };
            out.ranges.push(expr[i + 1..close].to_owned());
            i = close + 1;
            continue;
        }
        if c == b'{' {
            // A selector without a metric name, e.g. {__name__=~"..."}.
            out.errors
                .push(format!("selector without metric name at {i}"));
            i = matching(&b, i, b'{', b'}').map_or(b.len(), |j| j + 1);
            continue;
        }
        if !ident_start(c) || (i > 0 && ident(b[i - 1])) {
            i += 1;
            continue;
        }
        let end = (i..b.len()).find(|&j| !ident(b[j])).unwrap_or(b.len());
        let word = &expr[i..end];
        let mut next = end;
        while next < b.len() && b[next].is_ascii_whitespace() {
            next += 1;
        }
        let lower = word.to_ascii_lowercase();
        if matches!(lower.as_str(), "by" | "without" | "on" | "ignoring")
            || lower.starts_with("group_")
        {
            if next < b.len() && b[next] == b'(' {
                let close = matching(&b, next, b'(', b')').unwrap_or(b.len() - 1);
                if matches!(lower.as_str(), "by" | "without") {
                    out.grouping.extend(
                        expr[next + 1..close]
                            .split(',')
                            .map(|l| l.trim().to_owned())
                            .filter(|l| !l.is_empty()),
                    );
                }
                i = close + 1;
            } else {
                i = end;
            }
            continue;
        }
        if PROMQL_KEYWORDS.contains(&lower.as_str()) {
            i = end;
            continue;
        }
        if next < b.len() && b[next] == b'(' {
            // A function call or an aggregation with its body right after the name.
            let close = matching(&b, next, b'(', b')').unwrap_or(b.len() - 1);
            out.calls
                .push((word.to_owned(), expr[next + 1..close].to_owned()));
            stack.push(word.to_owned());
            i = next + 1;
            continue;
        }
        if AGGREGATIONS.contains(&lower.as_str()) {
            // `sum by (x) (...)`: the grouping clause and the body follow.
            i = end;
            continue;
        }
        let mut selector = Selector {
            metric: word.to_owned(),
            matchers: Vec::new(),
            function: stack.last().cloned(),
            range: None,
        };
        i = end;
        if next < b.len() && b[next] == b'{' {
            match matching(&b, next, b'{', b'}') {
                Some(close) => {
                    match parse_matchers(&expr[next + 1..close]) {
                        Ok(m) => selector.matchers = m,
                        Err(e) => out.errors.push(e),
                    }
                    i = close + 1;
                }
                None => {
                    out.errors.push(format!("unclosed '{{' after {word}"));
                    break;
                }
            }
        }
        let mut j = i;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < b.len() && b[j] == b'[' {
            if let Some(close) = matching(&b, j, b'[', b']') {
                selector.range = Some(expr[j + 1..close].to_owned());
            }
        }
        out.selectors.push(selector);
    }
    out
}

fn legend_labels(legend: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = legend;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        out.push(rest[start + 2..start + len].trim().to_owned());
        rest = &rest[start + len + 2..];
    }
    out
}

/// Problems of one expression under the expression rules.
fn lint_expr(e: &Expr, defined_vars: &HashSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut bad = |msg: String| problems.push(format!("{}: {msg}: {}", e.origin, e.expr));
    if e.expr.trim().is_empty() {
        bad("empty expression".into());
        return problems;
    }
    for (_, name) in var_refs(&e.expr) {
        if !defined_vars.contains(&name) && !BUILTIN_VARS.contains(&name.as_str()) {
            bad(format!("undefined variable ${name}"));
        }
    }
    let s = scan(&e.expr);
    for err in &s.errors {
        bad(format!("unparsable: {err}"));
    }
    // target-rate-interval-rule, and no fixed ranges at all.
    for r in &s.ranges {
        if r != "$__rate_interval" {
            bad(format!("range [{r}] must be [$__rate_interval]"));
        }
    }
    for (f, args) in &s.calls {
        if RANGE_FUNCTIONS.contains(&f.as_str()) && !args.contains("[$__rate_interval]") {
            bad(format!("{f}() without a [$__rate_interval] range"));
        }
    }
    if s.selectors.is_empty() {
        bad("no metric selector".into());
    }
    for sel in &s.selectors {
        let Some(&(_, has_scenario)) = METRICS.iter().find(|(m, _)| *m == sel.metric) else {
            bad(format!("{} is not a metric psprobe exports", sel.metric));
            continue;
        };
        let find = |label: &str| sel.matchers.iter().find(|m| m.label == label);
        // target-instance-rule
        match find("instance") {
            Some(m) if m.op == "=~" && m.value == "$instance" => {}
            Some(m) => bad(format!(
                "{}: instance matcher must be instance=~\"$instance\", not {}{:?}",
                sel.metric, m.op, m.value
            )),
            None => bad(format!(
                "{}: no instance=~\"$instance\" matcher",
                sel.metric
            )),
        }
        // target-job-rule: a job matcher, if any, must use the variable.
        if let Some(m) = find("job") {
            if !(m.op == "=~" && m.value == "$job") {
                bad(format!("{}: job matcher must be job=~\"$job\"", sel.metric));
            }
        }
        if has_scenario {
            match find("scenario") {
                Some(m) if m.op == "=~" && m.value == "$scenario" => {}
                _ => bad(format!(
                    "{}: needs a scenario=~\"$scenario\" matcher",
                    sel.metric
                )),
            }
        } else if find("scenario").is_some() {
            bad(format!("{} has no scenario label", sel.metric));
        }
        // target-counter-agg-rule: counters, histogram buckets and summary sums/counts only
        // make sense as rates.
        let counter = ["_total", "_bucket", "_sum", "_count"]
            .iter()
            .any(|suffix| sel.metric.ends_with(suffix));
        let in_range_fn = sel
            .function
            .as_deref()
            .is_some_and(|f| RANGE_FUNCTIONS.contains(&f));
        if counter && !in_range_fn {
            bad(format!(
                "counter {} must be wrapped in rate()/irate()/increase()",
                sel.metric
            ));
        }
        if !counter && (in_range_fn || sel.range.is_some()) {
            bad(format!("{} is not a counter: no rate()", sel.metric));
        }
    }
    // Legends may only use labels the aggregation keeps.
    if !s.grouping.is_empty() {
        for l in legend_labels(&e.legend) {
            if !s.grouping.contains(&l) {
                bad(format!(
                    "legend {:?} uses {{{{{l}}}}}, which the aggregation drops",
                    e.legend
                ));
            }
        }
    }
    problems
}

// ---------------------------------------------------------------------------------------------
// The provisioning files' YAML (yaml-rust2) as serde_json values, so one walker reads both.

fn yaml_to_json(y: &yaml_rust2::Yaml) -> Result<Value, String> {
    use yaml_rust2::Yaml;
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(r) => r
            .parse::<f64>()
            .map(Value::from)
            .map_err(|e| format!("number {r:?}: {e}"))?,
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => {
            Value::Array(items.iter().map(yaml_to_json).collect::<Result<_, _>>()?)
        }
        Yaml::Hash(h) => {
            let mut map = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    other => return Err(format!("key {other:?} is not a scalar")),
                };
                map.insert(key, yaml_to_json(v)?);
            }
            Value::Object(map)
        }
        Yaml::Alias(_) | Yaml::BadValue => return Err(format!("unsupported YAML value {y:?}")),
    })
}

/// One YAML document as a serde_json value.
fn parse_yaml(text: &str) -> Result<Value, String> {
    let docs = yaml_rust2::YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
    match docs.as_slice() {
        [doc] => yaml_to_json(doc),
        other => Err(format!("{} YAML documents, expected one", other.len())),
    }
}

#[test]
fn yaml_reading() {
    let v = parse_yaml(
        "apiVersion: 1\n# comment\nproviders:\n  - name: a # trailing\n    options:\n      \
         path: /x/y\n      flag: false\n  - name: \"b\"\nlist:\n- 1\n- two\n",
    )
    .unwrap();
    assert_eq!(v["apiVersion"], 1);
    assert_eq!(v["providers"][0]["name"], "a");
    assert_eq!(v["providers"][0]["options"]["path"], "/x/y");
    assert_eq!(v["providers"][0]["options"]["flag"], false);
    assert_eq!(v["providers"][1]["name"], "b");
    assert_eq!(v["list"], serde_json::json!([1, "two"]));
    assert!(parse_yaml("a: 1\n   b: 2\n").is_err());
    assert!(parse_yaml("a:\n\tb: 1\n").is_err());
    assert!(parse_yaml("a: 1\n---\nb: 2\n").is_err());
}

#[test]
fn promql_scanner() {
    let s = scan(
        r#"sum by (le, scenario) (rate(psprobe_command_duration_seconds_bucket{instance=~"$instance",scenario=~"[a]{1}"}[$__rate_interval])) / 2 > bool 0.5"#,
    );
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.selectors.len(), 1);
    let sel = &s.selectors[0];
    assert_eq!(sel.metric, "psprobe_command_duration_seconds_bucket");
    assert_eq!(sel.function.as_deref(), Some("rate"));
    assert_eq!(sel.range.as_deref(), Some("$__rate_interval"));
    assert_eq!(sel.matchers[1].value, "[a]{1}");
    assert_eq!(s.ranges, vec!["$__rate_interval"]);
    assert_eq!(s.grouping, vec!["le", "scenario"]);
    let e = Expr {
        origin: "t".into(),
        expr: r#"sum(psprobe_commands_total{instance="x"}) + rate(psprobe_connections_active{instance=~"$instance"}[5m])"#
            .into(),
        legend: String::new(),
    };
    let p = lint_expr(&e, &HashSet::from(["instance".to_string()]));
    for needle in [
        "instance matcher must be",
        "scenario=~",
        "must be wrapped in rate",
        "range [5m]",
        "not a counter",
    ] {
        assert!(p.iter().any(|m| m.contains(needle)), "{needle}: {p:#?}");
    }
    assert_eq!(
        var_refs("a $x ${y:csv} [[z]] $__rate_interval")
            .into_iter()
            .map(|(_, n)| n)
            .collect::<Vec<_>>(),
        ["x", "y", "z", "__rate_interval"]
    );
}

// ---------------------------------------------------------------------------------------------
// The lint

fn lint_dashboard(dash: &Value) -> Vec<String> {
    let mut problems: Vec<String> = Vec::new();
    let mut bad = |msg: String| problems.push(msg);

    // Dashboard-level settings.
    if dash["uid"] != "psprobe" {
        bad(format!("uid must be \"psprobe\", is {}", dash["uid"]));
    }
    if dash["title"] != "psprobe — performance_schema overhead" {
        bad(format!("unexpected title {}", dash["title"]));
    }
    if !dash["id"].is_null() {
        bad("id must be null (Grafana assigns it on import)".into());
    }
    match dash["schemaVersion"].as_i64() {
        Some(v) if (36..=41).contains(&v) => {}
        v => bad(format!("schemaVersion {v:?} is not that of Grafana 10/11")),
    }
    // template-uneditable-rule
    if dash["editable"] != false {
        bad("dashboard must not be editable (\"editable\": false)".into());
    }
    if dash.get("__inputs").is_some() {
        bad("__inputs would break provisioning: use the datasource variable".into());
    }
    if dash["time"]["from"].as_str().is_none() {
        bad("no default time range".into());
    }

    // Template variables.
    let vars: Vec<&Value> = dash["templating"]["list"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let defined: HashSet<String> = vars
        .iter()
        .filter_map(|v| v["name"].as_str().map(str::to_owned))
        .collect();
    if defined.len() != vars.len() {
        bad("template variables must have distinct names".into());
    }
    let var = |name: &str| vars.iter().find(|v| v["name"] == name).copied();
    // template-datasource-rule
    match var("datasource") {
        Some(v) if v["type"] == "datasource" && v["query"] == "prometheus" => {}
        Some(v) => bad(format!(
            "variable datasource must be of type datasource with query prometheus: {v}"
        )),
        None => bad("no `datasource` template variable".into()),
    }
    for (name, metric, label) in [
        ("instance", "psprobe_connections_active", "instance"),
        ("scenario", "psprobe_commands_total", "scenario"),
    ] {
        let Some(v) = var(name) else {
            bad(format!("no `{name}` template variable"));
            continue;
        };
        let query = v["query"]["query"]
            .as_str()
            .or_else(|| v["query"].as_str())
            .unwrap_or("");
        let expected = format!("label_values({metric}");
        if !(query.starts_with(&expected) && query.ends_with(&format!(", {label})"))) {
            bad(format!(
                "variable {name}: query {query:?} is not {expected}…, {label})"
            ));
        }
        if v["definition"] != query {
            bad(format!(
                "variable {name}: definition differs from the query"
            ));
        }
        if v["type"] != "query" || v["multi"] != true || v["includeAll"] != true {
            bad(format!(
                "variable {name}: must be a multi-value query variable with All"
            ));
        }
        if v["allValue"] != ".*" {
            bad(format!(
                "variable {name}: allValue must be .* (regex matchers)"
            ));
        }
        // template-on-time-change-reload-rule
        if v["refresh"] != 2 {
            bad(format!(
                "variable {name}: refresh must be 2 (on time range change)"
            ));
        }
    }
    for v in &vars {
        if v["type"] == "query" {
            let name = v["name"].as_str().unwrap_or("?");
            if v["datasource"]["uid"] != DS_VAR {
                bad(format!("variable {name}: datasource must be {DS_VAR}"));
            }
        }
    }

    // Every datasource reference uses the variable (no hard-coded uid anywhere).
    let mut dss = Vec::new();
    all_datasources(dash, String::new(), &mut dss);
    for (at, ds) in dss {
        let builtin_annotation = at.starts_with("/annotations/list/")
            && ds["type"] == "grafana"
            && ds["uid"] == "-- Grafana --";
        if builtin_annotation {
            continue;
        }
        if !(ds["type"] == "prometheus" && ds["uid"] == DS_VAR) {
            bad(format!(
                "{at}: datasource must be {{\"type\":\"prometheus\",\"uid\":\"{DS_VAR}\"}}, is {ds}"
            ));
        }
    }

    // Every variable referenced anywhere is defined.
    let mut strings = Vec::new();
    all_strings(dash, String::new(), &mut strings);
    for (at, s) in &strings {
        for (_, name) in var_refs(s) {
            if !defined.contains(&name) && !BUILTIN_VARS.contains(&name.as_str()) {
                bad(format!("{at}: undefined variable ${name} in {s:?}"));
            }
        }
    }

    // Panels.
    let panels = all_panels(dash);
    let mut ids = HashSet::new();
    for p in &panels {
        let t = title(p);
        match p["id"].as_u64() {
            Some(id) if ids.insert(id) => {}
            Some(id) => bad(format!("{t}: duplicate panel id {id}")),
            None => bad(format!("{t}: panel id must be a positive integer")),
        }
        // panel-title-description-rule
        if p["title"].as_str().is_none_or(|s| s.trim().is_empty()) {
            bad(format!("{t}: no title"));
        }
        let g = &p["gridPos"];
        let (x, y, w, h) = (
            g["x"].as_u64(),
            g["y"].as_u64(),
            g["w"].as_u64(),
            g["h"].as_u64(),
        );
        match (x, y, w, h) {
            (Some(x), Some(_), Some(w), Some(h)) if w >= 1 && h >= 1 && x + w <= 24 => {}
            _ => bad(format!("{t}: bad gridPos {g}")),
        }
        if p["type"] == "row" {
            if w != Some(24) || h != Some(1) || x != Some(0) {
                bad(format!("{t}: a row spans the full width with height 1"));
            }
            let nested = p["panels"].as_array().map_or(0, Vec::len);
            if p["collapsed"] != true && nested > 0 {
                bad(format!("{t}: an expanded row must not nest panels"));
            }
            if p["collapsed"] == true && nested == 0 {
                bad(format!("{t}: a collapsed row without panels"));
            }
            continue;
        }
        if p["description"]
            .as_str()
            .is_none_or(|s| s.trim().is_empty())
        {
            bad(format!("{t}: no description"));
        }
        if p["type"] == "text" {
            continue;
        }
        // panel-datasource-rule
        if p["datasource"]["uid"] != DS_VAR {
            bad(format!("{t}: panel datasource must be {DS_VAR}"));
        }
        // panel-units-rule
        match p["fieldConfig"]["defaults"]["unit"].as_str() {
            Some(u) if UNITS.contains(&u) => {}
            u => bad(format!(
                "{t}: fieldConfig.defaults.unit {u:?} is not a known unit"
            )),
        }
        for o in p["fieldConfig"]["overrides"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for prop in o["properties"].as_array().into_iter().flatten() {
                if prop["id"] == "unit"
                    && !prop["value"].as_str().is_some_and(|u| UNITS.contains(&u))
                {
                    bad(format!(
                        "{t}: override unit {} is not a known unit",
                        prop["value"]
                    ));
                }
            }
        }
        // panel-no-targets-rule
        let targets = p["targets"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if targets.is_empty() {
            bad(format!("{t}: no targets"));
        }
        let mut refs = HashSet::new();
        for tg in targets {
            let r = tg["refId"].as_str().unwrap_or("");
            if r.is_empty() || !refs.insert(r.to_owned()) {
                bad(format!("{t}: targets need distinct non-empty refIds"));
            }
            if tg["hide"] == true {
                bad(format!("{t} target {r}: hidden target"));
            }
            let table = p["type"] == "table";
            if table && !(tg["instant"] == true && tg["format"] == "table") {
                bad(format!(
                    "{t} target {r}: table targets are instant with format table"
                ));
            }
            if !table && (tg["instant"] == true || tg["format"] == "table") {
                bad(format!(
                    "{t} target {r}: time series targets are range queries"
                ));
            }
        }
        if p["type"] == "table" {
            let joins = p["transformations"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|tr| matches!(tr["id"].as_str(), Some("merge") | Some("joinByField")));
            if targets.len() > 1 && !joins {
                bad(format!(
                    "{t}: several table queries need a merge/join transformation"
                ));
            }
            let text = p.to_string();
            if !text.contains("digest_text") {
                bad(format!("{t}: the digest table must show digest_text"));
            }
        }
    }

    // Layout: nothing overlaps (collapsed rows' panels counted where they unfold) and every
    // collapsed row's panels sit below it.
    let mut cells: HashMap<(u64, u64), String> = HashMap::new();
    for p in &panels {
        let g = &p["gridPos"];
        let (Some(x), Some(y), Some(w), Some(h)) = (
            g["x"].as_u64(),
            g["y"].as_u64(),
            g["w"].as_u64(),
            g["h"].as_u64(),
        ) else {
            continue;
        };
        for cx in x..(x + w).min(24) {
            for cy in y..y + h.min(100) {
                if let Some(other) = cells.insert((cx, cy), title(p)) {
                    bad(format!("{} overlaps {other} at x={cx} y={cy}", title(p)));
                    break;
                }
            }
        }
        if p["type"] == "row" {
            for child in p["panels"].as_array().into_iter().flatten() {
                if child["gridPos"]["y"].as_u64() <= g["y"].as_u64() {
                    bad(format!("{}: must be placed below its row", title(child)));
                }
            }
        }
    }

    // Annotations: scenario phases from psprobe_scenario_active.
    let annotations = annotation_exprs(dash);
    let phases = dash["annotations"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| {
            a["expr"]
                .as_str()
                .is_some_and(|e| e.contains("psprobe_scenario_active") && e.ends_with("== 1"))
        });
    match phases {
        Some(a) => {
            if a["titleFormat"] != "{{scenario}}" {
                bad("scenario annotation: titleFormat must be {{scenario}}".into());
            }
            if a["enable"] != true {
                bad("scenario annotation must be enabled".into());
            }
        }
        None => bad("no annotation on psprobe_scenario_active == 1".into()),
    }

    // Expression rules.
    let mut exprs = target_exprs(dash);
    exprs.extend(annotations);
    for e in &exprs {
        problems.extend(lint_expr(e, &defined));
    }
    problems
}

fn lint_provisioning() -> Vec<String> {
    let mut problems = Vec::new();
    let mut load = |rel: &str| match parse_yaml(&read(rel)) {
        Ok(v) => Some(v),
        Err(e) => {
            problems.push(format!("{rel}: not valid YAML (subset): {e}"));
            None
        }
    };
    let ds = load(DATASOURCE_YAML);
    let provider = load(PROVIDER_YAML);
    if let Some(ds) = ds {
        let d = &ds["datasources"][0];
        for (key, got, want) in [
            ("apiVersion", &ds["apiVersion"], Value::from(1)),
            ("datasources[0].name", &d["name"], Value::from("Prometheus")),
            ("datasources[0].type", &d["type"], Value::from("prometheus")),
            ("datasources[0].uid", &d["uid"], Value::from("prometheus")),
            ("datasources[0].access", &d["access"], Value::from("proxy")),
            (
                "datasources[0].url",
                &d["url"],
                Value::from("http://prometheus:9090"),
            ),
            (
                "datasources[0].isDefault",
                &d["isDefault"],
                Value::from(true),
            ),
        ] {
            if *got != want {
                problems.push(format!("{DATASOURCE_YAML}: {key} is {got}, want {want}"));
            }
        }
        if ds["datasources"].as_array().map_or(0, Vec::len) != 1 {
            problems.push(format!(
                "{DATASOURCE_YAML}: exactly one datasource expected"
            ));
        }
    }
    if let Some(pr) = provider {
        let p = &pr["providers"][0];
        for (key, got, want) in [
            ("apiVersion", &pr["apiVersion"], Value::from(1)),
            ("providers[0].type", &p["type"], Value::from("file")),
            (
                "providers[0].options.path",
                &p["options"]["path"],
                Value::from(PROVIDER_PATH),
            ),
            (
                "providers[0].options.foldersFromFilesStructure",
                &p["options"]["foldersFromFilesStructure"],
                Value::from(false),
            ),
        ] {
            if *got != want {
                problems.push(format!("{PROVIDER_YAML}: {key} is {got}, want {want}"));
            }
        }
        if p["name"].as_str().is_none_or(str::is_empty) {
            problems.push(format!("{PROVIDER_YAML}: the provider needs a name"));
        }
    }
    // The README documents the same locations and both ways in.
    let readme = read(README);
    for needle in [
        PROVIDER_PATH,
        "/etc/grafana/provisioning/datasources",
        "/etc/grafana/provisioning/dashboards",
        "Dashboards → New → Import",
        "psprobe.json",
        "--metrics",
        "scrape_configs:",
        "job_name: psprobe",
    ] {
        if !readme.contains(needle) {
            problems.push(format!("{README}: does not mention {needle:?}"));
        }
    }
    problems
}

#[test]
fn dashboard_lint() {
    let dash = dashboard();
    let mut problems = lint_dashboard(&dash);
    problems.extend(lint_provisioning());
    assert!(
        problems.is_empty(),
        "{} problem(s) in the Grafana files:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
    // The expected panels are there.
    let titles: BTreeSet<&str> = all_panels(&dash)
        .into_iter()
        .filter(|p| !is_layout_panel(p))
        .filter_map(|p| p["title"].as_str())
        .collect();
    for want in [
        "Throughput by command",
        "Throughput by scenario",
        "Latency p50 / p95 / p99 by scenario",
        "Error rate by scenario",
        "Errors by code",
        "Top digests",
        "Active connections",
        "Connection churn",
        "Bytes by direction",
        "Unobserved connections by reason",
        "Parse errors by reason",
    ] {
        assert!(titles.contains(want), "no panel {want:?} in {titles:?}");
    }
}

fn first_target(d: &mut Value) -> &mut Value {
    let p = d["panels"]
        .as_array_mut()
        .expect("panels array")
        .iter_mut()
        .find(|p| p["type"] != "row")
        .expect("a panel that is not a row");
    &mut p["targets"][0]
}

/// The lint rejects what it is meant to reject.
#[test]
fn dashboard_lint_catches_mistakes() {
    let clean = dashboard();
    let mutate = |f: &dyn Fn(&mut Value)| {
        let mut d = clean.clone();
        f(&mut d);
        lint_dashboard(&d).join("\n")
    };
    type Mutation = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Mutation)> = vec![
        (
            "datasource must be",
            Box::new(|d| d["panels"][1]["datasource"]["uid"] = "P1234".into()),
        ),
        (
            "must be [$__rate_interval]",
            Box::new(|d| {
                let t = first_target(d);
                let e = t["expr"]
                    .as_str()
                    .unwrap()
                    .replace("$__rate_interval", "5m");
                t["expr"] = e.into();
            }),
        ),
        (
            "no instance=~",
            Box::new(|d| {
                let t = first_target(d);
                let e = t["expr"]
                    .as_str()
                    .unwrap()
                    .replace("instance=~\"$instance\",", "");
                t["expr"] = e.into();
            }),
        ),
        (
            "undefined variable $job",
            Box::new(|d| {
                let t = first_target(d);
                let e = t["expr"]
                    .as_str()
                    .unwrap()
                    .replace("instance=~", "job=~\"$job\",instance=~");
                t["expr"] = e.into();
            }),
        ),
        (
            "is not a known unit",
            Box::new(|d| d["panels"][1]["fieldConfig"]["defaults"]["unit"] = Value::Null),
        ),
        (
            "duplicate panel id",
            Box::new(|d| d["panels"][2]["id"] = d["panels"][1]["id"].clone()),
        ),
        (
            "no targets",
            Box::new(|d| d["panels"][1]["targets"] = serde_json::json!([])),
        ),
        (
            "no `datasource` template variable",
            Box::new(|d| {
                d["templating"]["list"]
                    .as_array_mut()
                    .unwrap()
                    .retain(|v| v["name"] != "datasource")
            }),
        ),
        (
            "overlaps",
            Box::new(|d| d["panels"][2]["gridPos"]["x"] = 0.into()),
        ),
        (
            "/panels/0/targets/0/datasource: datasource must be",
            Box::new(|d| {
                // Inside the collapsed row.
                let row = d["panels"]
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|p| p["collapsed"] == true)
                    .unwrap();
                row["panels"][0]["targets"][0]["datasource"]["uid"] = "prometheus".into();
            }),
        ),
    ];
    for (want, f) in cases {
        let report = mutate(&*f);
        assert!(
            report.contains(want),
            "mutation expected to report {want:?}, got:\n{report}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Against a real Prometheus

const SCRAPE_INTERVAL: &str = "1s";
const INGEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one expression may stay empty before it counts as returning no data.
const EXPR_TIMEOUT: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(250);
const TABLE_OPTS: [&str; 2] = ["--tables=2", "--table-size=1000"];

fn test_values() -> HashMap<&'static str, &'static str> {
    HashMap::from([
        ("instance", ".*"),
        ("scenario", ".*"),
        ("__rate_interval", "10s"),
        ("__interval", "5s"),
        ("__range", "1m"),
    ])
}

/// Polls `expr` until it returns at least one series; Err on a query error or at the deadline.
fn query_until_data(prom: &Prometheus, expr: &str, timeout: Duration) -> Result<usize, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let data = prom.query(expr)?;
        let n = result_len(&data);
        if n > 0 {
            return Ok(n);
        }
        if Instant::now() >= deadline {
            return Err(format!("no series within {timeout:?}: {data}"));
        }
        std::thread::sleep(POLL); // poll interval
    }
}

#[test]
fn dashboard_queries_return_data_from_real_prometheus() {
    let dash = dashboard();
    let db = MariaDb::start_default();
    sysbench::run(&db.addr(), "oltp_read_write", "prepare", &TABLE_OPTS);
    // A short schedule runs during the load, so the live overhead estimates exist too.
    let state = tempfile::tempdir().expect("state dir");
    let schedule = [
        "--scenarios",
        "pfson_conoff_insoff,pfson_conon_inson",
        "--phase",
        "2s",
        "--settle",
        "500ms",
        "--blocks",
        "3",
        "--state-dir",
        state.path().to_str().expect("utf-8 path"),
    ];
    let dsn = db.dsn();
    let probe = Probe::start_with_env(
        &db.addr(),
        &schedule,
        &[("PSPROBE_CONTROLLER_DSN", dsn.as_str())],
    );
    let prom = Prometheus::start(&[probe.metrics_addr()], SCRAPE_INTERVAL);

    // One ERR through the proxy so that psprobe_errors_total exists.
    let failed = cli::mariadb(
        probe.proxy_addr(),
        &["-e", "SELECT * FROM no_such_table"],
        None,
    );
    assert!(
        !failed.status.success(),
        "SELECT from a missing table succeeded"
    );
    let mut opts = vec!["--threads=4", "--time=12", "--events=0"];
    opts.extend(TABLE_OPTS);
    let summary = sysbench::run(probe.proxy_addr(), "oltp_read_write", "run", &opts);
    assert!(summary.total > 0, "sysbench ran nothing:\n{}", summary.text);

    // Wait until Prometheus holds at least 5 scrapes of the probe.
    let deadline = Instant::now() + INGEST_TIMEOUT;
    loop {
        let data = prom
            .query("count_over_time(psprobe_connections_total[1m])")
            .unwrap_or_else(|e| panic!("count_over_time query failed: {e}"));
        let scrapes = data["result"][0]["value"][1]
            .as_str()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if scrapes >= 5.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "prometheus ingested only {scrapes} scrapes of {} within {INGEST_TIMEOUT:?}: {data}",
            probe.metrics_addr()
        );
        std::thread::sleep(POLL); // poll interval
    }

    // Which metric families psprobe exports right now, to explain empty results.
    let scrape = probe.scrape();
    let values = test_values();
    let mut failures = Vec::new();

    // Template variables: Grafana's label_values(selector, label) is the label values API.
    for v in dash["templating"]["list"].as_array().into_iter().flatten() {
        let Some(query) = v["query"]["query"].as_str().or_else(|| v["query"].as_str()) else {
            continue;
        };
        let Some(args) = query
            .strip_prefix("label_values(")
            .and_then(|r| r.strip_suffix(')'))
        else {
            continue;
        };
        let (selector, label) = args
            .rsplit_once(',')
            .expect("label_values(selector, label)");
        let selector = substitute(selector.trim(), &values);
        match prom.label_values(label.trim(), &selector) {
            Ok(vals) if !vals.is_empty() => {
                if v["name"] == "scenario" && !vals.iter().any(|s| s == "none") {
                    failures.push(format!("variable scenario: no \"none\" in {vals:?}"));
                }
            }
            Ok(_) => failures.push(format!("variable {}: {query} lists no values", v["name"])),
            Err(e) => failures.push(format!("variable {}: {query}: {e}", v["name"])),
        }
    }

    let exprs = all_exprs(&dash);
    let mut checked = 0;
    for e in &exprs {
        if attribution_only(&e.expr) {
            continue;
        }
        let expr = substitute(&e.expr, &values);
        checked += 1;
        if let Err(err) = query_until_data(&prom, &expr, EXPR_TIMEOUT) {
            let scanned = scan(&e.expr);
            let missing: Vec<&str> = scanned
                .selectors
                .iter()
                .map(|s| s.metric.as_str())
                .filter(|m| !scrape.has(m))
                .collect();
            let hint = if missing.is_empty() {
                String::new()
            } else {
                format!(" (psprobe does not export {missing:?} at the moment)")
            };
            failures.push(format!("{}: {expr}: {err}{hint}", e.origin));
        }
    }
    eprintln!(
        "checked {checked} dashboard expressions against prometheus {}",
        prom.addr()
    );

    // The error code of the failed SELECT made it through.
    match prom.query("psprobe_errors_total{code=\"1146\"}") {
        Ok(d) if result_len(&d) > 0 => {}
        other => failures.push(format!("psprobe_errors_total{{code=\"1146\"}}: {other:?}")),
    }

    assert!(
        checked >= 20,
        "expected at least 20 expressions, found {checked}"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} dashboard expressions (plus variables) failed against a real Prometheus:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// Sum over every series of an instant query's result (0 when empty).
fn result_sum(data: &Value) -> f64 {
    let series = data["result"].as_array().into_iter().flatten();
    let value = |s: &Value| s["value"][1].as_str().and_then(|v| v.parse::<f64>().ok());
    series.filter_map(value).sum()
}

/// The fleet case: three psprobes in front of one server (one leads the schedule, two follow),
/// one Prometheus scraping all three with the recording rules loaded. The instance variable
/// lists the three; the dashboard's fleet view (every instance selected) of the command
/// counter equals the sum of what each probe exports, and each instance's view equals that
/// probe's own figure; the fleet recording rules sum over the probes; exactly one leads; every
/// dashboard expression (an attribution's aside) returns data for the whole fleet.
#[test]
fn fleet_views_sum_over_three_probes_in_real_prometheus() {
    let dash = dashboard();
    let db = MariaDb::start_default();
    sysbench::run(&db.addr(), "oltp_read_only", "prepare", &TABLE_OPTS);
    let states: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let dsn = db.dsn();
    let probes: Vec<Probe> = states
        .iter()
        .map(|state| {
            let schedule = [
                "--scenarios",
                "pfson_conoff_insoff,pfson_conon_inson",
                "--phase",
                "1s",
                "--settle",
                "200ms",
                "--state-dir",
                state.path().to_str().expect("utf-8 path"),
            ];
            Probe::start_with_env(
                &db.addr(),
                &schedule,
                &[("PSPROBE_CONTROLLER_DSN", dsn.as_str())],
            )
        })
        .collect();
    let targets: Vec<&str> = probes.iter().map(Probe::metrics_addr).collect();
    let rules = path("grafana/prometheus/psprobe.rules.yml");
    let prom = Prometheus::start_with_rules(&targets, SCRAPE_INTERVAL, &[&rules]);

    // One ERR, so that the errors panel has a series; then different loads through each
    // probe, at once, long enough for the live estimates' intervals.
    let failed = cli::mariadb(
        probes[2].proxy_addr(),
        &["-e", "SELECT * FROM no_such_table"],
        None,
    );
    assert!(
        !failed.status.success(),
        "SELECT from a missing table succeeded"
    );
    let runs: Vec<_> = probes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let addr = p.proxy_addr().to_string();
            std::thread::spawn(move || {
                let threads = format!("--threads={}", i + 1);
                let mut opts = vec![threads.as_str(), "--time=12", "--events=0"];
                opts.extend(TABLE_OPTS);
                sysbench::run(&addr, "oltp_read_only", "run", &opts)
            })
        })
        .collect();
    for run in runs {
        let summary = run.join().expect("sysbench thread");
        assert!(summary.total > 0, "sysbench ran nothing:\n{}", summary.text);
    }

    // The counters are still now; wait until Prometheus has the last value of each probe.
    let own: Vec<f64> = probes
        .iter()
        .map(|p| p.scrape().get("psprobe_commands_total", &[]))
        .collect();
    let total: f64 = own.iter().sum();
    let values = test_values();
    let fleet_view = substitute(
        "sum(psprobe_commands_total{instance=~\"$instance\"})",
        &values,
    );
    let deadline = Instant::now() + INGEST_TIMEOUT;
    loop {
        let seen = prom
            .query(&fleet_view)
            .map(|d| result_sum(&d))
            .unwrap_or(0.0);
        if seen == total {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "fleet view {seen} != {total} = sum of the probes' own counters {own:?}"
        );
        std::thread::sleep(POLL); // poll interval
    }
    for (p, mine) in probes.iter().zip(&own) {
        let one = format!(
            "sum(psprobe_commands_total{{instance=~\"{}\"}})",
            p.metrics_addr()
        );
        let seen = result_sum(&prom.query(&one).expect("instance query"));
        assert_eq!(seen, *mine, "instance view of {}", p.metrics_addr());
    }

    // The instance variable lists the three probes.
    let mut listed = prom
        .label_values("instance", "psprobe_connections_active")
        .expect("label values");
    listed.sort();
    let mut expected: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
    expected.sort();
    assert_eq!(listed, expected, "instance variable");

    // Exactly one probe leads; the fleet recording rules sum over the three.
    let leaders = result_sum(
        &prom
            .query("sum(psprobe_controller_leader)")
            .expect("leaders"),
    );
    assert_eq!(leaders, 1.0, "probes leading the schedule");
    let mut failures = Vec::new();
    for (fleet, per_probe) in [
        (
            "sum(psprobe_fleet:commands:rate1m)",
            "sum(psprobe:commands:rate1m)",
        ),
        (
            "sum(psprobe_fleet:connections_active:sum)",
            "sum(psprobe_connections_active)",
        ),
    ] {
        if let Err(e) = query_until_data(&prom, fleet, INGEST_TIMEOUT) {
            failures.push(format!("{fleet}: {e}"));
            continue;
        }
        // Compared at the rule's own evaluation time (the recorded series lags the raw one
        // by up to an evaluation); a sample scraped at that time but stored after the
        // evaluation can still differ once, so a few evaluations are tried.
        let mut last = String::new();
        let agreed = (0..10).any(|_| {
            let recorded = fleet.trim_start_matches("sum(").trim_end_matches(')');
            let at = prom
                .query(&format!("max(timestamp({recorded}))"))
                .map(|d| result_sum(&d));
            let sums = at.and_then(|t| {
                let a = result_sum(&prom.query_at(fleet, t)?);
                let b = result_sum(&prom.query_at(per_probe, t)?);
                Ok((a, b))
            });
            match sums {
                Ok((a, b)) if (a - b).abs() <= 1e-9 * b.abs().max(1.0) => true,
                other => {
                    last = format!("{other:?}");
                    std::thread::sleep(POLL); // poll interval: the next evaluation
                    false
                }
            }
        });
        if !agreed {
            failures.push(format!("{fleet} vs {per_probe} at the rule's time: {last}"));
        }
    }
    for e in all_exprs(&dash) {
        if attribution_only(&e.expr) {
            continue;
        }
        let expr = substitute(&e.expr, &values);
        if let Err(err) = query_until_data(&prom, &expr, EXPR_TIMEOUT) {
            failures.push(format!("{}: {expr}: {err}", e.origin));
        }
    }
    assert!(failures.is_empty(), "fleet:\n  {}", failures.join("\n  "));
    println!(
        "fleet: 3 probes, commands {own:?} (sum {total}) = the dashboard's fleet view; one leader"
    );
}

/// An attribution's gauges exist only during `--attribute` (these probes run scenarios):
/// tests/attribution.rs checks them on a probe that measures groups.
fn attribution_only(expr: &str) -> bool {
    scan(expr)
        .selectors
        .iter()
        .all(|s| ATTRIBUTION_ONLY.contains(&s.metric.as_str()))
}
