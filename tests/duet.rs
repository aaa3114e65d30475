//! `psprobe duet` on real servers (issue 34): two throwaway servers with the same data, each
//! loaded by its own sysbench through its own psprobe, restarted at the same moments into the
//! two scenarios of each pair and measured over the same seconds, the roles swapped every
//! phase. Once on MariaDB (the host's) and once on MySQL 9.7 (the sid tree): both sides'
//! logs hold the other scenario in every phase's same window, the report holds the duet's
//! estimate beside the sequential pairs' and the sides' CPU shares, and both servers are gone
//! afterwards. The A/A duet (a twin of the reference) is measured in the docs' runs; here it
//! runs on MariaDB for the plumbing (named twins, no interval claims on a few pairs).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::cli::psprobe;
use common::controller::{poll, setup_dump, start_controller, terminate};
use common::restart::{restart_script, Reaper};
use common::server::{Flavor, Options, Server};
use common::sysbench::{self, Restarting};

/// The phase records of one side's log by phase number: (scenario, block, from, to,
/// verified, restarted).
type Phases = BTreeMap<u64, (String, u64, u64, u64, bool, bool)>;

fn side(path: &Path) -> (serde_json::Value, Phases) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut run = serde_json::Value::Null;
    let mut phases = Phases::new();
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).expect("a record");
        match r["kind"].as_str() {
            Some("run") => run = r,
            Some("phase") => {
                phases.insert(
                    r["phase"].as_u64().unwrap(),
                    (
                        r["scenario"].as_str().unwrap().to_string(),
                        r["block"].as_u64().unwrap(),
                        r["measure_from_ms"].as_u64().unwrap(),
                        r["measure_to_ms"].as_u64().unwrap(),
                        r["verified"].as_bool().unwrap(),
                        r["restarted"].as_bool().unwrap(),
                    ),
                );
            }
            _ => {}
        }
    }
    (run, phases)
}

/// The servers `psprobe duet` named in `stdout` ("side X on ADDR (data in DIR)") are gone,
/// and their folders with them.
fn assert_servers_gone<'a>(stdout: impl IntoIterator<Item = &'a str>) {
    assert_eq!(
        common::signalled::assert_servers_gone(stdout),
        2,
        "two servers named"
    );
}

/// psprobe's WARN and ERROR lines (what a failed assertion shows of its log).
fn warnings(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR ") || l.contains("error"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `psprobe duet` with `extra` and checks what every duet must hold; returns the
/// report's JSON comparisons.
fn duet(
    server: Option<&str>,
    scenarios: &str,
    extra: &[&str],
    min_pairs: u64,
) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    let md = dir.path().join("duet.md");
    let mut args = vec![
        "duet",
        "--scenarios",
        scenarios,
        "--threads",
        "2",
        "--slow-phase",
        "3s",
        "-o",
        md.to_str().unwrap(),
    ];
    if let Some(server) = server {
        args.extend(["--server", server]);
    }
    args.extend(extra);
    let out = psprobe(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let reference = scenarios.split(',').next().unwrap();

    let (run_a, a) = side(&dir.path().join("duet.a.phases.jsonl"));
    let (run_b, b) = side(&dir.path().join("duet.b.phases.jsonl"));
    assert_eq!(run_a["duet_side"], "a", "{run_a}");
    assert_eq!(run_b["duet_side"], "b", "{run_b}");
    assert_ne!(run_a["upstream"], run_b["upstream"], "two servers");
    // Every phase: entered by a restart on both sides, the other scenario of the pair on side
    // b, the same block, and the same measured window (opened together once both were back).
    let mut together = 0;
    for (phase, (scenario, block, from, to, verified, restarted)) in &a {
        let Some((other, b_block, b_from, b_to, b_verified, b_restarted)) = b.get(phase) else {
            continue;
        };
        assert!(*restarted && *b_restarted, "phase {phase}");
        assert!(
            *verified && *b_verified,
            "phase {phase}: {scenario} / {other}"
        );
        assert_eq!(
            block,
            b_block,
            "phase {phase}: {a:?} / {b:?}\n{}",
            warnings(&stderr)
        );
        assert_ne!(scenario, other, "phase {phase}: both sides ran {scenario}");
        assert!(
            scenario == reference || other == reference,
            "phase {phase}: {scenario} / {other}"
        );
        assert!(
            from.abs_diff(*b_from) <= 50 && to.abs_diff(*b_to) <= 50,
            "phase {phase}: windows {from}..{to} and {b_from}..{b_to}"
        );
        together += 1;
    }
    assert!(
        together as u64 >= 2 * min_pairs,
        "{together} phases together: {a:?} / {b:?}\n{stdout}\n{stderr}"
    );

    // psprobe report reads the two logs as the duet they are (the same report as the run's
    // own), one side's log as its phases in sequential pairs, and refuses a third log or a
    // format a duet's report has not.
    let (log_a, log_b) = (
        dir.path().join("duet.a.phases.jsonl"),
        dir.path().join("duet.b.phases.jsonl"),
    );
    let (a_arg, b_arg) = (log_a.to_str().unwrap(), log_b.to_str().unwrap());
    let out = psprobe(&["report", b_arg, a_arg]);
    let again = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(again.starts_with("# Duet run"), "{again}");
    for bad in [
        vec!["report", a_arg, b_arg, a_arg],
        vec!["report", a_arg, b_arg, "--format", "html"],
    ] {
        let out = psprobe(&bad);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && out.stdout.is_empty(),
            "{bad:?}: {err}"
        );
        assert!(err.contains("duet"), "{err}");
        assert_eq!(
            err.lines().filter(|l| !l.trim().is_empty()).count(),
            1,
            "{err}"
        );
    }
    let out = psprobe(&["report", a_arg]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let doc = std::fs::read_to_string(&md).expect("the report");
    // The report from the logs is the run's own but for where the sides ran (only the run
    // knew that; it is said in the first paragraph).
    let but_placement = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with("Two servers of the same version"))
            .map(String::from)
            .collect()
    };
    assert_eq!(but_placement(&again), but_placement(&doc));
    let json: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("duet.json")).expect("json"))
            .expect("the report's JSON");
    for c in &json {
        let scenario = c["scenario"].as_str().unwrap();
        assert_eq!(c["reference"], reference, "{c}");
        assert!(
            c["throughput"]["pairs"].as_u64().unwrap() >= min_pairs,
            "{c}"
        );
        assert!(
            doc.contains(&format!("| {scenario} | {reference} |")),
            "{doc}"
        );
        // The same phases as sequential pairs on each server, beside the duet's.
        assert!(
            c["sequential"][0]["pairs"].as_u64().unwrap() >= min_pairs,
            "{c}"
        );
        assert!(
            c["sequential"][1]["pairs"].as_u64().unwrap() >= min_pairs,
            "{c}"
        );
        // The two sides got comparable shares of the machine.
        let share = c["cpu_share_a"].as_f64().expect("CPU share");
        assert!((0.25..=0.75).contains(&share), "{c}");
    }
    assert!(doc.contains("CPU share of server a"), "{doc}");
    // Each side on a CPU of its own by default (2 or more CPUs here), said in the report.
    assert!(doc.contains("ran on CPUs"), "{doc}");
    assert!(doc.contains("Restarts to the first query"), "{doc}");

    // Both throwaway servers are gone with their folders.
    assert_servers_gone(stdout.lines());
    json
}

/// `psprobe experiment --duet` on MariaDB: the runtime scenarios switched fast on the study's
/// server, then pfsoff against its reference as a duet on it and a copy of its data; the
/// seed table's pfsoff column and the reference's change against pfsoff come from the duet
/// (cells, table, the duet's own report beside the study), and both servers are gone.
#[test]
fn experiment_duet_gives_the_pfsoff_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let md = dir.path().join("study.md");
    let out = psprobe(&[
        "experiment",
        "--duet",
        "--workloads",
        "oltp_read_only",
        "--threads",
        "2",
        "--scenarios",
        "pfson_conoff_insoff,pfson_conon_inson,pfsoff",
        "--duration",
        "60s",
        "-o",
        md.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("pfson_conoff_insoff vs pfsoff in a duet: "),
        "{stdout}"
    );
    let cells: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("study.cells.json")).expect("cells.json"),
    )
    .expect("cells.json parses");
    let cell = |scenario: &str| {
        cells
            .iter()
            .find(|c| c["scenario"] == scenario)
            .unwrap_or_else(|| panic!("{scenario}: {cells:?}"))
    };
    let reference = cell("pfson_conoff_insoff");
    assert_eq!(reference["baseline"], "pfsoff", "{reference}");
    assert_eq!(reference["schedule"], "duet", "{reference}");
    let change = reference["change_percent"].as_f64().expect("a change");
    assert!(change.abs() < 30.0, "{reference}");
    // An interval, or what more pairs would give one: never neither.
    assert!(
        reference["ci_low_percent"].is_number() != reference["needs"].is_string(),
        "{reference}"
    );
    let pfsoff = cell("pfsoff");
    assert_eq!(pfsoff["schedule"], "duet");
    assert!(pfsoff["qps"].as_f64().unwrap() > 0.0, "{pfsoff}");
    let on = cell("pfson_conon_inson");
    assert_eq!(
        (on["baseline"].as_str(), on["schedule"].as_str()),
        (Some("pfson_conoff_insoff"), Some("fast"))
    );
    let doc = std::fs::read_to_string(&md).expect("report");
    assert!(doc.contains(" vs pfsoff (duet) |"), "{doc}");
    assert!(doc.contains("baseline (pfsoff, duet of "), "{doc}");
    assert!(doc.contains("in a duet (this server and a copy"), "{doc}");
    // The duet's own report and both sides' logs beside the study; the runtime scenarios' log
    // holds no restart phase, the duet's sides only the pair's two scenarios.
    let stem = dir.path().join("study-oltp_read_only-2");
    let duet_md = std::fs::read_to_string(stem.with_extension("duet.md")).expect("duet report");
    assert!(
        duet_md.contains("| pfsoff | pfson_conoff_insoff |"),
        "{duet_md}"
    );
    for side in ["a", "b"] {
        let (_, phases) = side_log(&stem, side);
        assert!(!phases.is_empty());
        assert!(
            phases
                .values()
                .all(|p| p.0 == "pfsoff" || p.0 == "pfson_conoff_insoff"),
            "{phases:?}"
        );
    }
    let fast = std::fs::read_to_string(stem.with_extension("phases.jsonl")).expect("fast log");
    assert!(!fast.contains("\"scenario\":\"pfsoff\""), "{fast}");
    assert_servers_gone(stdout.lines());
}

fn side_log(stem: &Path, label: &str) -> (serde_json::Value, Phases) {
    side(&std::path::PathBuf::from(format!(
        "{}.duet.{label}.phases.jsonl",
        stem.display()
    )))
}

#[test]
fn duet_on_mariadb_an_a_a_twin() {
    // Named twins: an A/A duet runs with the config's second name.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("aa.toml");
    std::fs::write(
        &config,
        "[[scenario]]\nname = \"aa_twin\"\ndescription = \"pfson_conoff_insoff again\"\n\
         consumers = { enable = [] }\ninstruments = { enable = [] }\n",
    )
    .expect("config");
    let json = duet(
        None,
        "pfson_conoff_insoff,aa_twin",
        &["--duration", "40s", "--config", config.to_str().unwrap()],
        2,
    );
    assert_eq!(json[0]["scenario"], "aa_twin");
    // A scenario named twice is refused in one line.
    let out = psprobe(&["duet", "--scenarios", "pfsoff,pfsoff"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("listed twice"), "{err}");
}

#[test]
fn duet_on_mysql_9_7() {
    let tree = common::server::Flavor::MySql97
        .tree(Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("MySQL runs in a tree");
    // MySQL's restarts take about 4 s under load (docs/servers.md): fewer pairs in the time.
    duet(
        Some(tree.to_str().unwrap()),
        "pfson_conoff_insoff,pfsoff",
        &["--duration", "60s"],
        2,
    );
}

/// SIGTERM in the middle of a duet: both servers are stopped and their folders removed, and
/// psprobe says so in one line (the servers run in sessions of their own, so nothing else
/// would stop them).
#[test]
fn a_duet_stopped_by_sigterm_leaves_no_server_behind() {
    use common::signalled::{assert_interrupted, Signalled};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().expect("tempdir");
    let md = dir.path().join("duet.md");
    let args = [
        "duet",
        "--threads",
        "2",
        "--slow-phase",
        "3s",
        "--duration",
        "5m",
        "-o",
    ];
    let mut args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    args.push(md.as_os_str());
    let mut duet = Signalled::start(&args);
    // Both servers are up once it names them; the duet runs once side b's log has a phase.
    duet.wait_for_line("side b on ", 120);
    let log_b = dir.path().join("duet.b.phases.jsonl");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !std::fs::read_to_string(&log_b).is_ok_and(|t| t.contains("\"kind\":\"phase\"")) {
        assert!(
            Instant::now() < deadline,
            "no phase in two minutes: {:?}",
            duet.seen
        );
        std::thread::sleep(Duration::from_millis(200)); // poll interval
    }
    let (status, err, seen) = duet.terminate();
    assert_interrupted(status, &err);
    assert_servers_gone(seen.iter().map(String::as_str));
}

/// `psprobe proxy --duet-upstream`: an operator's server and a clone of it (two harness
/// servers with the same sysbench tables), each restarted by its own command and loaded by its
/// own sysbench through its own port. Both sides' phases run together (the other scenario,
/// the same block, the same window), `psprobe report` reads the two logs as the duet, and a
/// SIGTERM leaves both servers as found; a duet that cannot be one is refused in one line.
#[test]
fn proxy_duet_on_an_operators_two_instances() {
    const TABLES: [&str; 2] = ["--tables=2", "--table-size=2000"];
    let servers = [
        Server::start(Flavor::MariaDb1011, Options::default()),
        Server::start(Flavor::MariaDb1011, Options::default()),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let mut hooks = Vec::new();
    let mut reapers = Vec::new();
    for (db, label) in servers.iter().zip(["a", "b"]) {
        sysbench::run(&db.addr(), "oltp_read_only", "prepare", &TABLES);
        let own = dir.path().join(label);
        std::fs::create_dir(&own).unwrap();
        hooks.push(format!(
            "sh {} {{pfs}} {{opts}}",
            restart_script(db, &own).display()
        ));
        reapers.push(Reaper(own));
    }
    let before = [setup_dump(&servers[0]), setup_dump(&servers[1])];
    let log = dir.path().join("phases.jsonl");
    let d = dir.path().display().to_string();
    let common = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "--scenarios",
            "pfson_conoff_insoff,pfsoff",
            "--slow-phase",
            "3s",
            "--state-dir",
            &d,
            "--phase-log",
            log.to_str().unwrap(),
            "--restart-cmd",
            &hooks[0],
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };

    // Refused in one line, before anything is touched: the first server twice, and a duet
    // without the second's restart command.
    let (a_addr, b_addr) = (servers[0].addr(), servers[1].addr());
    for (extra, says) in [
        (
            vec![
                "--duet-upstream",
                a_addr.as_str(),
                "--duet-listen",
                "127.0.0.1:0",
                "--duet-restart-cmd",
                "true",
            ],
            "a second instance",
        ),
        (
            vec![
                "--duet-upstream",
                b_addr.as_str(),
                "--duet-listen",
                "127.0.0.1:0",
            ],
            "--duet-restart-cmd",
        ),
    ] {
        let err = common::controller::refused_start(&servers[0], &common(&extra));
        assert!(err.contains(says), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }

    let mut probe = start_controller(
        &servers[0],
        &common(&[
            "--duration",
            "30s",
            "--seed",
            "5",
            "--duet-upstream",
            &b_addr,
            "--duet-listen",
            "127.0.0.1:0",
            "--duet-restart-cmd",
            &hooks[1],
            "--mysqld-pid-file",
            servers[0].pid_file().to_str().unwrap(),
            "--duet-mysqld-pid-file",
            servers[1].pid_file().to_str().unwrap(),
            "--duet-cpus",
            "auto",
        ]),
    );
    // Each side's proxy on workers of its own, on its half of the CPUs.
    let placed = |name: &str| -> Vec<String> {
        let mut lists = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{}/task", probe.pid())).unwrap() {
            let task = task.unwrap().path();
            let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
            if comm.trim() != name {
                continue;
            }
            let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
            let cpus = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .unwrap_or_default();
            lists.push(cpus.trim().to_string());
        }
        lists.sort();
        lists.dedup();
        lists
    };
    let (cpus_a, cpus_b) = (placed("duet-a"), placed("duet-b"));
    assert!(
        cpus_a.len() == 1 && cpus_b.len() == 1,
        "{cpus_a:?} {cpus_b:?}"
    );
    assert_ne!(cpus_a, cpus_b);
    let side_b = probe
        .listening_field("duet_proxy")
        .expect("side b's port announced")
        .to_string();
    assert!(probe.listening_field("duet_metrics").is_some());
    let loads = [probe.proxy_addr().to_string(), side_b].map(|addr| {
        Restarting::start(
            &addr,
            "oltp_read_only",
            &[TABLES[0], TABLES[1], "--threads=2"],
        )
    });
    poll("both sides' schedules to end", 240, || {
        (probe.stderr_text().matches("controller finished").count() >= 2).then_some(())
    });
    for load in loads {
        load.finish();
    }
    terminate(&mut probe);
    let stderr = probe.stderr_text();
    for side in [
        "side a: stopped; the server's performance_schema settings are as found",
        "side b: stopped; the server's performance_schema settings are as found",
    ] {
        assert!(stderr.contains(side), "{}", warnings(&stderr));
    }
    for (db, was) in servers.iter().zip(&before) {
        assert_eq!(db.sql("SELECT @@performance_schema").trim(), "1");
        common::controller::assert_setup_eq(&setup_dump(db), was, "after the duet");
    }

    let log_b = dir.path().join("phases.b.jsonl");
    let (run_a, a) = side(&log);
    let (run_b, b) = side(&log_b);
    assert_eq!(
        (run_a["duet_side"].as_str(), run_b["duet_side"].as_str()),
        (Some("a"), Some("b"))
    );
    assert_eq!(run_b["upstream"], b_addr.as_str());
    let mut together = 0;
    for (phase, (scenario, block, from, to, verified, restarted)) in &a {
        let Some((other, b_block, b_from, b_to, b_verified, b_restarted)) = b.get(phase) else {
            continue;
        };
        assert!(
            *restarted && *b_restarted && *verified && *b_verified,
            "phase {phase}"
        );
        assert_eq!(block, b_block, "phase {phase}");
        assert_ne!(scenario, other, "phase {phase}");
        assert!(
            from.abs_diff(*b_from) <= 50 && to.abs_diff(*b_to) <= 50,
            "phase {phase}: windows {from}..{to} and {b_from}..{b_to}"
        );
        together += 1;
    }
    assert!(together >= 4, "{together} phases together: {a:?} / {b:?}");
    let out = psprobe(&[
        "report",
        log.to_str().unwrap(),
        log_b.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json.len(), 1, "{json:?}");
    assert_eq!(
        (json[0]["scenario"].as_str(), json[0]["reference"].as_str()),
        (Some("pfsoff"), Some("pfson_conoff_insoff"))
    );
    assert!(
        json[0]["throughput"]["pairs"].as_u64().unwrap() >= 2,
        "{json:?}"
    );
    // Both servers' CPU time followed them across their restarts (the pid files).
    let share = json[0]["cpu_share_a"].as_f64().expect("CPU share");
    assert!((0.1..=0.9).contains(&share), "{json:?}");
    drop(reapers);
}
