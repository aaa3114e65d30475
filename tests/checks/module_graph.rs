//! Each crate's top-level modules form a DAG that reads bottom-up as the data flows (in
//! psprobe-core: protocol -> session, digest; in psprobe: stats -> metrics / phase log ->
//! analysis -> report; the controller beside them; the CLI root on top; psprobe-bench's steps
//! over its readers and formats). A `crate::x` path in module `y` is an edge y -> x; any cycle
//! fails here, naming a file behind each of its edges.
//! And the sans-I/O core never names tokio, nor depends on it (read from Cargo.lock). The fuzz
//! targets (src/fuzzing) are compiled only with psprobe's `fuzzing` feature, and the core has
//! no fuzz-only code. And psprobe names the core by its crate (`psprobe_core::session`), never
//! re-exporting it under local paths.
//! And the observation path has one room: only `observe` drives the core's session machine,
//! and `proxy` records a command only through `observe` (it names no scenario, digest or
//! per-command series).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// psprobe's own modules with no I/O runtime (the core crate has none at all).
const SANS_IO: &[&str] = &["stats"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// psprobe's sources.
fn src() -> PathBuf {
    root().join("src")
}

/// psprobe-core's sources.
fn core_src() -> PathBuf {
    root().join("crates/psprobe-core/src")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `pub mod x;` / `pub(crate) mod x;` / `mod x;` lines of the lib.rs in `src`.
fn top_modules(src: &Path) -> Vec<String> {
    // A library's root, or a binary's (psprobe-bench is only a binary).
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|p| p.exists())
        .unwrap_or_else(|| src.join("lib.rs"));
    read(&root)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))
                .or_else(|| l.strip_prefix("mod "))?;
            rest.strip_suffix(';').map(str::to_string)
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The files of top-level module `name`: SRC/name.rs or everything under SRC/name/.
fn module_files(src: &Path, name: &str) -> Vec<PathBuf> {
    let file = src.join(format!("{name}.rs"));
    if file.is_file() {
        return vec![file];
    }
    let mut files = Vec::new();
    rust_files(&src.join(name), &mut files);
    assert!(
        !files.is_empty(),
        "module {name}: no src/{name}.rs nor src/{name}/"
    );
    files
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
    &s[..end]
}

/// The first path segment after every `crate::` in `text`, including each item of a
/// `crate::{a, b::c}` group.
fn crate_references(text: &str) -> BTreeSet<String> {
    references_after(text, "crate::")
}

/// The first path segment after every `prefix` (ending in `::`) in `text`, including each
/// item of a `prefix{a, b::c}` group.
fn references_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices(prefix) {
        // `psprobe_crate::` and the like are not this crate.
        if text[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && is_ident(c) => {
                        found.insert(ident(&group[i..]).to_string());
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest).to_string());
        }
    }
    found
}

/// Module -> (module it names -> one file that names it).
type Graph = BTreeMap<String, BTreeMap<String, PathBuf>>;

fn graph(src: &Path) -> Graph {
    let modules = top_modules(src);
    let known: BTreeSet<&str> = modules.iter().map(String::as_str).collect();
    let mut graph = Graph::new();
    for m in &modules {
        let edges = graph.entry(m.clone()).or_default();
        for file in module_files(src, m) {
            for target in crate_references(&read(&file)) {
                if target != *m && known.contains(target.as_str()) {
                    edges.entry(target).or_insert_with(|| file.clone());
                }
            }
        }
    }
    graph
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a Graph,
        next: usize,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        w.index.insert(v, w.next);
        w.low.insert(v, w.next);
        w.next += 1;
        w.stack.push(v);
        for t in w.graph.get(v).into_iter().flat_map(|e| e.keys()) {
            let t = t.as_str();
            if !w.index.contains_key(t) {
                visit(w, t);
                let low = w.low[v].min(w.low[t]);
                w.low.insert(v, low);
            } else if w.stack.contains(&t) {
                let low = w.low[v].min(w.index[t]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(t) = w.stack.pop() {
                component.push(t.to_string());
                if t == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        graph,
        next: 0,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            visit(&mut walk, v);
        }
    }
    walk.found
}

fn describe(src: &Path, graph: &Graph, cycle: &[String]) -> String {
    let mut lines = vec![format!("cycle: {}", cycle.join(", "))];
    for from in cycle {
        for (to, file) in &graph[from] {
            if cycle.contains(to) {
                let file = file.strip_prefix(src).unwrap_or(file);
                lines.push(format!("  {from} -> {to} ({})", file.display()));
            }
        }
    }
    lines.join("\n")
}

fn assert_dag(src: &Path, min_modules: usize, expected: &[(&str, &str)]) {
    let graph = graph(src);
    assert!(
        graph.len() >= min_modules,
        "{} lists {} modules",
        src.join("lib.rs").display(),
        graph.len()
    );
    // The scan sees the edges that must be there (else it would pass on nothing).
    for (from, to) in expected {
        assert!(
            graph[*from].contains_key(*to),
            "expected edge {from} -> {to}; the scanner missed it: {:?}",
            graph[*from].keys().collect::<Vec<_>>()
        );
    }
    let found = cycles(&graph);
    let report: Vec<String> = found.iter().map(|c| describe(src, &graph, c)).collect();
    assert!(found.is_empty(), "import cycles:\n{}", report.join("\n"));
    // The command line's root is used by `main` (and the fuzz target that parses command
    // lines) only: no library module reaches up to it.
    let users = graph
        .iter()
        .filter(|(from, to)| *from != "fuzzing" && to.contains_key("cli"));
    if let Some(user) = users.map(|(from, _)| from).next() {
        panic!("{user} imports the cli root");
    }
}

#[test]
fn top_level_modules_form_a_dag() {
    let expected = [
        ("observe", "stats"),
        ("proxy", "observe"),
        ("report", "phase_log"),
        ("cli", "config"),
    ];
    assert_dag(&src(), 20, &expected);
    assert_dag(&core_src(), 3, &[("session", "protocol")]);
    let bench = root().join("crates/psprobe-bench/src");
    assert_dag(&bench, 10, &[("report", "stats")]);
}

#[test]
fn the_scanner_reports_a_cycle_and_reads_groups() {
    let refs = crate_references(
        "use crate::{a::X, b, c::{d, e::F}};\nlet _ = crate::g::h(); my_crate::z; use crate::k;",
    );
    let expected: BTreeSet<String> = ["a", "b", "c", "g", "k"].map(String::from).into();
    assert_eq!(refs, expected);

    let mut g = Graph::new();
    let edge = |to: &str| (to.to_string(), PathBuf::from("x.rs"));
    g.insert("a".into(), [edge("b")].into());
    g.insert("b".into(), [edge("c")].into());
    g.insert("c".into(), [edge("a")].into());
    g.insert("d".into(), [edge("a")].into());
    assert_eq!(cycles(&g), vec![vec!["a", "b", "c"]]);
    g.get_mut("c").expect("c").clear();
    assert!(cycles(&g).is_empty());
}

#[test]
fn the_sans_io_core_names_no_tokio() {
    let core: Vec<PathBuf> = top_modules(&core_src())
        .iter()
        .flat_map(|m| module_files(&core_src(), m))
        .collect();
    let own = SANS_IO.iter().flat_map(|m| module_files(&src(), m));
    for file in core.iter().cloned().chain(own) {
        let text = read(&file);
        assert!(
            !text.contains("tokio"),
            "{} (sans-I/O) names tokio",
            file.display()
        );
    }
}

/// A normal build leaves the fuzz targets out: src/lib.rs declares `fuzzing` under the feature,
/// no other module of the library names it (that would build with the feature, as CI does,
/// and fail without it), and psprobe-core has no fuzz cfg to compile with or without. CI must
/// still run tests/fuzz_corpus.rs, which needs the feature: scripts/test.sh enables it.
#[test]
fn the_fuzz_targets_are_only_built_with_the_fuzzing_feature() {
    let gate = "#[cfg(feature = \"fuzzing\")]";
    let lib = read(&src().join("lib.rs"));
    let lines: Vec<&str> = lib.lines().map(str::trim).collect();
    let at = lines
        .iter()
        .position(|l| *l == "pub mod fuzzing;")
        .expect("src/lib.rs declares `pub mod fuzzing;`");
    // The doc comment and attributes right above the declaration.
    let attributes: Vec<&str> = lines[..at]
        .iter()
        .rev()
        .take_while(|l| l.starts_with("#[") || l.starts_with("///"))
        .copied()
        .collect();
    assert!(
        attributes.contains(&gate),
        "src/lib.rs: `pub mod fuzzing;` is not under {gate}"
    );

    let graph = graph(&src());
    assert!(graph.contains_key("fuzzing"), "the scan sees the module");
    for (from, to) in &graph {
        if let Some(file) = to.get("fuzzing").filter(|_| from != "fuzzing") {
            panic!(
                "{} names the fuzz targets outside the fuzzing feature",
                file.display()
            );
        }
    }
    let main = read(&src().join("main.rs"));
    assert!(
        !main.contains("fuzzing"),
        "src/main.rs names the fuzz targets"
    );

    let manifest: toml::Table = read(&root().join("Cargo.toml"))
        .parse()
        .expect("Cargo.toml");
    let features = manifest["features"].as_table().expect("[features]");
    assert!(features.contains_key("fuzzing"), "{features:?}");
    let default = features.get("default").and_then(|d| d.as_array());
    assert!(
        !default.is_some_and(|d| d.iter().any(|f| f.as_str() == Some("fuzzing"))),
        "the fuzzing feature is on by default"
    );
    let test_sh = read(&root().join("scripts/test.sh"));
    assert!(
        test_sh
            .lines()
            .any(|l| l.starts_with("cargo test") && l.contains("--features psprobe/fuzzing")),
        "scripts/test.sh does not enable the fuzzing feature: CI would skip tests/fuzz_corpus.rs"
    );

    let core = root().join("crates/psprobe-core");
    let mut files = Vec::new();
    rust_files(&core.join("src"), &mut files);
    rust_files(&core.join("benches"), &mut files);
    for file in files {
        for line in read(&file).lines() {
            assert!(
                !(line.contains("cfg") && line.contains("fuzzing")),
                "{}: psprobe-core has fuzz-only code: {line}",
                file.display()
            );
        }
    }
    let core_manifest = read(&core.join("Cargo.toml"));
    assert!(
        !core_manifest.contains("fuzzing"),
        "crates/psprobe-core/Cargo.toml has a fuzz feature"
    );
}

/// `name` -> the names of its dependencies, from Cargo.lock.
fn lock_graph() -> BTreeMap<String, Vec<String>> {
    let lock: toml::Table = read(&root().join("Cargo.lock"))
        .parse()
        .expect("Cargo.lock");
    let packages = lock["package"].as_array().expect("[[package]]");
    packages
        .iter()
        .map(|p| {
            let name = p["name"].as_str().expect("name").to_string();
            let deps = p
                .get("dependencies")
                .and_then(|d| d.as_array())
                .map(|d| {
                    d.iter()
                        // "name" or "name version" when several versions are locked.
                        .filter_map(|v| v.as_str()?.split(' ').next().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            (name, deps)
        })
        .collect()
}

fn closure(graph: &BTreeMap<String, Vec<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(p) = todo.pop() {
        if seen.insert(p.clone()) {
            todo.extend(graph.get(&p).into_iter().flatten().cloned());
        }
    }
    seen
}

#[test]
fn the_core_crate_depends_on_no_runtime() {
    let graph = lock_graph();
    // The walk sees what it must (psprobe itself pulls tokio in).
    assert!(closure(&graph, "psprobe").contains("tokio"));
    let core = closure(&graph, "psprobe-core");
    assert!(core.contains("nom") && core.contains("md-5"), "{core:?}");
    // Cargo.lock lists dev-dependencies too: the core's are test tools, none a runtime.
    for runtime in ["tokio", "mio", "async-std", "futures", "socket2"] {
        assert!(
            !core.contains(runtime),
            "psprobe-core depends on {runtime}: {core:?}"
        );
    }
}

/// The shared harness (throwaway servers, sysbench, tied child processes) is std and libc
/// only: the demo, the tests and the benchmark can all use it without pulling anything in.
#[test]
fn the_harness_crate_depends_on_nothing_but_libc() {
    let graph = lock_graph();
    assert!(
        closure(&graph, "psprobe").contains("psprobe-harness"),
        "psprobe uses the harness"
    );
    let harness = closure(&graph, "psprobe-harness");
    assert_eq!(
        harness,
        BTreeSet::from(["libc".to_string(), "psprobe-harness".to_string()]),
        "psprobe-harness depends on more than std and libc"
    );
}

/// Statements of a crate root (`lib.rs` text) that reach into psprobe-core: a re-export of one
/// of its modules or items (`pub use psprobe_core::{digest, protocol, session};` made
/// `crate::session` in psprobe read like a local module while it was the core's). Comments are
/// skipped; bringing in the crate whole (`pub use psprobe_core as core;`) is not reported.
fn core_paths_in_root(root: &str) -> Vec<String> {
    let code: String = root
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    code.split(';')
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| s.replace(' ', "").contains("psprobe_core::"))
        .collect()
}

#[test]
fn psprobe_names_the_core_by_its_crate() {
    let core = top_modules(&core_src());
    assert!(
        core.iter().any(|m| m == "session"),
        "the core's modules were not found: {core:?}"
    );
    let found = core_paths_in_root(&read(&src().join("lib.rs")));
    assert!(
        found.is_empty(),
        "src/lib.rs re-exports the core under local paths ({found:?}): name it as \
         psprobe_core::..., or offer the crate whole (`pub use psprobe_core as core;`)"
    );
    // Nor a module of psprobe's own shares a core module's name: `crate::session` would again
    // read like the core's session machine.
    for m in top_modules(&src()) {
        assert!(
            !core.contains(&m),
            "psprobe's module {m} has the name of a psprobe-core module"
        );
    }
}

#[test]
fn the_core_path_scanner_sees_reexports_only() {
    let root = "//! Bytes -> [`psprobe_core::protocol`] -> events.\n\
                #![warn(unreachable_pub)]\n\
                /// The core.\n\
                pub use psprobe_core as core;\n\
                pub use psprobe_core::{digest, protocol, session};\n\
                pub mod admin;\n\
                pub(crate) use ::psprobe_core ::session::*;\n\
                pub mod wire { pub use psprobe_core::protocol::Deframer; }\n";
    assert_eq!(
        core_paths_in_root(root),
        [
            "pub use psprobe_core::{digest, protocol, session}",
            "pub(crate) use ::psprobe_core ::session::*",
            "pub mod wire { pub use psprobe_core::protocol::Deframer",
        ]
    );
}

/// The controller's rooms, as its module doc says: `model` does no I/O and knows nothing of
/// servers, files or schedules; `local` (this host's files) talks to no server; `client` (the
/// MySQL layer) decides no schedule; `schedule` holds no SQL of its own. Callers name the room
/// an item lives in (no flat re-exports at the controller's root).
#[test]
fn the_controller_rooms_keep_their_rules() {
    let controller = src().join("controller");
    let mut problems = Vec::new();
    let rules: [(&str, &[&str]); 4] = [
        (
            "model",
            &[
                "controller::client",
                "controller::schedule",
                "controller::local",
                "tokio",
                "mysql_async",
                "std::fs",
                "std::net",
                "std::process",
            ],
        ),
        (
            "local",
            &[
                "controller::client",
                "controller::schedule",
                "mysql_async",
                "tokio",
            ],
        ),
        ("client", &["controller::schedule"]),
        (
            "schedule",
            &["\"SELECT ", "\"UPDATE ", "\"INSERT ", "\"DELETE "],
        ),
    ];
    for (room, forbidden) in rules {
        let mut files = Vec::new();
        rust_files(&controller.join(room), &mut files);
        assert!(!files.is_empty(), "controller/{room}/ exists");
        for file in files {
            // A test's error text may quote SQL; the rule is about what the room runs.
            if room == "schedule" && file.to_string_lossy().ends_with("_tests.rs") {
                continue;
            }
            let text = read(&file);
            for f in forbidden.iter() {
                if text.contains(f) {
                    problems.push(format!("{}: names {f}", file.display()));
                }
            }
        }
    }
    let root = read(&controller.join("mod.rs"));
    if root.lines().any(|l| l.trim_start().starts_with("pub use")) {
        problems.push("src/controller/mod.rs re-exports items: name the room instead".into());
    }
    // Outside the controller, a path into it names one of its rooms or root files.
    let rooms = [
        "model", "client", "schedule", "local", "cli", "error", "paths", "show",
    ];
    let mut outside = Vec::new();
    rust_files(&src(), &mut outside);
    for dir in ["tests", "benches"] {
        rust_files(&root_dir().join(dir), &mut outside);
    }
    for file in outside.iter().filter(|f| !f.starts_with(&controller)) {
        let text = read(file);
        for (at, m) in text.match_indices("controller::") {
            if ["common::", "super::", "white_box::"]
                .iter()
                .any(|own| text[..at].ends_with(own))
            {
                continue; // the tests' helper module, or src/white_box's, of that name
            }
            let next = ident(&text[at + m.len()..]);
            if !next.is_empty() && !rooms.contains(&next) {
                problems.push(format!("{}: controller::{next}", file.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn root_dir() -> PathBuf {
    root()
}

/// The statements of `text` (comments left out), whitespace-normalised.
fn statements(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    code.split(';')
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// The items each statement of `text` names under `path` (`path::{A, B}`, `path::A`, or
/// `path::*` as "*"); nested groups count by their first segment.
fn items_under(text: &str, path: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for statement in statements(text) {
        let flat = statement.replace(' ', "");
        for (at, _) in flat.match_indices(path) {
            let rest = &flat[at + path.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 0usize;
                let mut item_start = true;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => item_start = true,
                        c if item_start && (is_ident(c) || c == '*') => {
                            let name = if c == '*' { "*" } else { ident(&group[i..]) };
                            found.insert(name.to_string());
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            } else {
                let name = if rest.starts_with('*') {
                    "*"
                } else {
                    ident(rest)
                };
                found.insert(name.to_string());
            }
        }
    }
    found
}

/// Who may name `psprobe_core::session`, and what: `observe` drives the session machine
/// (Session, Phase, EventSink, events); `metrics` keys its pre-resolved series by the
/// session's outcome and unobserved-reason enums (through `observe` it would be a cycle:
/// observe records into metrics); `fuzzing`'s targets drive the core's parts directly, as the
/// core's own tests do. No other module names it: they go through observe's types.
const SESSION_USERS: &[(&str, Option<&[&str]>)] = &[
    ("observe", None),
    ("metrics", Some(&["Outcome", "UnobservedReason"])),
    ("fuzzing", None),
];

#[test]
fn only_observe_drives_the_core_session() {
    let mut seen_observe = false;
    for m in top_modules(&src()) {
        let allowed = SESSION_USERS.iter().find(|(name, _)| *name == m);
        for file in module_files(&src(), &m) {
            let named = items_under(&read(&file), "psprobe_core::session::");
            seen_observe |= m == "observe" && named.contains("Session");
            let bad: Vec<&String> = match allowed {
                Some((_, None)) => continue,
                Some((_, Some(items))) => named
                    .iter()
                    .filter(|n| !items.contains(&n.as_str()))
                    .collect(),
                None => named.iter().collect(),
            };
            assert!(
                bad.is_empty(),
                "{} ({m}) names psprobe_core::session::{bad:?}: only observe drives the \
                 session; go through observe's types (observe::watch::Watch)",
                file.display()
            );
        }
    }
    assert!(
        seen_observe,
        "the scan did not see observe name the Session"
    );
}

/// What `proxy` may take from `metrics`: connection-level counters and outcomes it decides
/// itself (refusals, handshake failures, active connections, certificate reloads).
const PROXY_METRICS_ITEMS: &[&str] = &["ProxyMetrics", "Refusal"];

/// The proxy relays and decides; recording a command is observe's. Enforced on every file
/// under src/proxy/: no `crate::stats` path; from `crate::metrics` only
/// [`PROXY_METRICS_ITEMS`]; and no "scenario" or "digests" in its code (comments aside): the
/// per-command series (`command`, `duration`, `bytes`, `record_error_code`) all take the
/// scenario a command is charged to, and digests are the recorder's, so without them the
/// proxy can only count through its connection's `observe::watch::Watch`.
#[test]
fn proxy_records_commands_only_through_observe() {
    let files = module_files(&src(), "proxy");
    let mut metrics_items = BTreeSet::new();
    for file in &files {
        let text = read(file);
        let refs = crate_references(&text);
        assert!(
            !refs.contains("stats"),
            "{} names crate::stats: the proxy records through observe",
            file.display()
        );
        for item in items_under(&text, "crate::metrics::") {
            assert!(
                PROXY_METRICS_ITEMS.contains(&item.as_str()),
                "{} takes crate::metrics::{item}: per-command recording goes through observe",
                file.display()
            );
            metrics_items.insert(item);
        }
        let code = statements(&text).join(";").to_lowercase();
        for word in ["scenario", "digests"] {
            assert!(
                !code.contains(word),
                "{} names {word}: which scenario or digest a command is charged to is observe's",
                file.display()
            );
        }
    }
    assert!(
        metrics_items.contains("Refusal"),
        "the scan did not see the proxy's metrics imports: {metrics_items:?}"
    );
}

#[test]
fn the_item_scanner_reads_groups_paths_and_globs() {
    let text = "// use psprobe_core::session::Commented;\n\
                use psprobe_core::session::{\n    Outcome, UnobservedReason,\n};\n\
                use psprobe_core::session::Session;\n\
                fn f() { let _ = psprobe_core::session::Phase::Command; }\n\
                use psprobe_core::session::*;\n";
    let found = items_under(text, "psprobe_core::session::");
    let expected: BTreeSet<String> = ["Outcome", "UnobservedReason", "Session", "Phase", "*"]
        .map(String::from)
        .into();
    assert_eq!(found, expected);
}

/// The controller decides when traffic is measured, never how a command is recorded: from
/// the observation path it takes only `observe::ControllerHandle` (slot state, digest
/// snapshots, statement counts, its own metrics), and it names no `crate::metrics` item, so
/// the connection table, the fingerprint options and the proxy's series stay out of its reach.
#[test]
fn the_controller_reaches_observe_only_through_its_handle() {
    let mut handle_seen = false;
    for file in module_files(&src(), "controller") {
        let text = read(&file);
        let observed = items_under(&text, "crate::observe::");
        handle_seen |= observed.contains("ControllerHandle");
        let bad: Vec<&String> = observed
            .iter()
            .filter(|i| i.as_str() != "ControllerHandle")
            .collect();
        assert!(
            bad.is_empty(),
            "{} takes crate::observe::{bad:?}: the controller goes through ControllerHandle",
            file.display()
        );
        assert!(
            !crate_references(&text).contains("metrics"),
            "{} names crate::metrics: the controller's metrics are ControllerHandle's methods",
            file.display()
        );
    }
    assert!(
        handle_seen,
        "the scan did not see the controller take its handle"
    );
}

/// The library's public face: `main` (the binary's one entry point), `white_box` (what the
/// benches and white-box tests reach for) and `fuzzing` (behind its feature). Every other
/// module is `pub(crate)`, so the compiler's dead-code check sees into all of them, and
/// `unreachable_pub` keeps `pub` to what those reach; nothing switches either off crate-wide.
#[test]
fn the_public_face_is_main_white_box_and_fuzzing() {
    let lib = read(&src().join("lib.rs"));
    let public: BTreeSet<&str> = lib
        .lines()
        .filter(|l| l.starts_with("pub ") || l.starts_with("pub use "))
        .collect();
    let expected: BTreeSet<&str> = [
        "pub mod fuzzing;",
        "pub mod white_box;",
        "pub use cli::main;",
    ]
    .into_iter()
    .collect();
    assert_eq!(public, expected, "src/lib.rs's public items");
    assert!(lib.contains("#![warn(unreachable_pub)]"), "src/lib.rs");

    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    for file in &files {
        let text = read(file);
        for banned in ["#![allow(dead_code)]", "#![allow(unreachable_pub)]"] {
            assert!(!text.contains(banned), "{}: {banned}", file.display());
        }
    }

    let main = read(&src().join("main.rs"));
    let calls: Vec<&str> = main
        .match_indices("psprobe::")
        .map(|(at, _)| &main[at..])
        .map(|rest| {
            rest.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or("")
        })
        .collect();
    assert!(
        calls.iter().all(|c| *c == "psprobe::main"),
        "src/main.rs calls more than `psprobe::main`: {calls:?}"
    );

    let graph = graph(&src());
    for (from, to) in &graph {
        if let Some(file) = to.get("white_box").filter(|_| from != "white_box") {
            panic!(
                "{} uses white_box, which is for benches and tests",
                file.display()
            );
        }
    }

    // Outside the crate, `use psprobe::` names only the public face.
    let mut outside = Vec::new();
    for dir in ["tests", "benches"] {
        rust_files(&root().join(dir), &mut outside);
    }
    for file in &outside {
        for line in read(file).lines() {
            let Some(path) = line.trim().strip_prefix("use psprobe::") else {
                continue;
            };
            assert!(
                ["white_box", "fuzzing"].iter().any(|m| path.starts_with(m)),
                "{}: `{}` reaches past the public face (src/white_box)",
                file.display(),
                line.trim()
            );
        }
    }
}

/// A file's code as the build without tests sees it: comment lines dropped (a doc link is
/// not a dependency) and the file's `#[cfg(test)] mod tests` cut off (fixtures shared
/// between tests are not the rooms' structure).
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim().starts_with("mod tests"))
        {
            break;
        }
        if !trimmed.starts_with("//") {
            code.push_str(line);
            code.push('\n');
        }
    }
    code
}

/// Inside one folder of src/ (a room, `crate::a::b`): its modules (files but mod.rs and test
/// files, and subfolders) -> the siblings each names (`super::x` in a file of the folder,
/// `crate::a::b::x` anywhere in it).
fn room_graph(folder: &Path, path: &str) -> Graph {
    let mut nodes: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(folder).expect("a folder of src/") {
        let entry = entry.expect("directory entry").path();
        let name = entry
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if entry.is_dir() {
            let mut files = Vec::new();
            rust_files(&entry, &mut files);
            nodes.insert(name, files);
        } else if entry.extension().is_some_and(|e| e == "rs")
            && name != "mod"
            && !name.ends_with("_tests")
            && name != "tests"
        {
            nodes.insert(name, vec![entry]);
        }
    }
    let mut graph = Graph::new();
    for (name, files) in &nodes {
        let edges = graph.entry(name.clone()).or_default();
        for file in files {
            let code = code_of(&read(file));
            let mut named = references_after(&code, &format!("crate::{path}::"));
            if file.parent() == Some(folder) {
                named.extend(references_after(&code, "super::"));
            }
            for target in named {
                if target != *name && nodes.contains_key(&target) {
                    edges.entry(target).or_insert_with(|| file.clone());
                }
            }
        }
    }
    graph
}

/// Every folder under `dir`, with its module path (`controller::schedule`).
fn folders(dir: &Path, path: &str, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).expect("a folder of src/") {
        let entry = entry.expect("directory entry").path();
        if entry.is_dir() {
            let name = entry
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let inner = if path.is_empty() {
                name.to_string()
            } else {
                format!("{path}::{name}")
            };
            out.push((entry.clone(), inner.clone()));
            folders(&entry, &inner, out);
        }
    }
}

/// No circles inside a room either: within every folder of src/, the files and subfolders
/// name each other one way (a circle means two files that are one job, or a third file
/// missing).
#[test]
fn no_room_has_a_circle_inside() {
    let mut rooms = Vec::new();
    folders(&src(), "", &mut rooms);
    assert!(rooms.len() > 10, "the scan sees src/'s folders: {rooms:?}");
    let mut problems = Vec::new();
    let mut edges = 0;
    for (folder, path) in &rooms {
        let graph = room_graph(folder, path);
        edges += graph.values().map(BTreeMap::len).sum::<usize>();
        for cycle in cycles(&graph) {
            problems.push(format!(
                "src/{}/: {}",
                path.replace("::", "/"),
                describe(folder, &graph, &cycle)
            ));
        }
    }
    // The scan sees the edges that must be there (else it would pass on nothing).
    let schedule = room_graph(&src().join("controller/schedule"), "controller::schedule");
    assert!(
        schedule["runner"].contains_key("lead"),
        "the scanner missed runner -> lead: {:?}",
        schedule["runner"].keys().collect::<Vec<_>>()
    );
    assert!(edges > 50, "only {edges} edges inside rooms");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_room_scanner_skips_comments_and_tests() {
    let text = "//! see [`super::b`]\nuse super::c::X;\n#[cfg(test)]\nmod tests {\n    use super::super::d;\n    use super::e;\n}\n";
    let named = references_after(&code_of(text), "super::");
    assert_eq!(named, ["c".to_string()].into_iter().collect());
}

/// The wall clock is read in one place, src/clock.rs: a room documented as pure takes the time
/// as an argument, and a test can tell every reader apart from durations (`Instant`).
#[test]
fn the_wall_clock_is_read_only_in_clock_rs() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let clock = src().join("clock.rs");
    assert!(
        read(&clock).contains("SystemTime::now()"),
        "src/clock.rs reads it"
    );
    let readers: Vec<String> = files
        .iter()
        .filter(|f| **f != clock)
        .filter(|f| code_of(&read(f)).contains("SystemTime::now()"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        readers.is_empty(),
        "the wall clock read outside src/clock.rs (use crate::clock): {readers:?}"
    );
}
