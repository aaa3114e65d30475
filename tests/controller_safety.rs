//! The scheduled controller never leaves a server changed: SIGTERM mid-phase restores every
//! row; after a SIGKILL the next start restores before it serves; of two psprobes one leads,
//! the other follows and takes over when the leader dies or stops (heartbeat); the restart hook turns
//! performance_schema OFF and back under load; bad input fails with one line, changing nothing.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::cli::{self, run_with_timeout, PASSWORD};
use common::controller::{
    flags, leader, poll, start_controller as start, terminate, DSN_ENV, SETUP_DUMP,
};
use common::mariadb::{MariaDb, Options};
use common::probe::Probe;
use common::restart::{restart_script, Reaper};
use common::server::{Flavor, Server};
use serde_json::Value;

const COMMANDS: &str = "psprobe_commands_total";
const TWO: &str = "--scenarios pfson_conon_inson,pfson_conoff_insoff";
const SWITCH_ON_OFF: &str = "--scenarios pfsoff,pfson_conon_inson --blocks 1";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn has_state_file(dir: &Path, db: &Server) -> bool {
    dir.join(format!("ps-snapshot-127.0.0.1-{}.json", db.port()))
        .exists()
}

/// The setup tables as a test found them.
struct Found<'a>(&'a Server, String);

impl<'a> Found<'a> {
    fn new(db: &'a Server) -> Self {
        Found(db, db.sql(SETUP_DUMP))
    }

    fn changed(&self) -> Option<()> {
        (self.0.sql(SETUP_DUMP) != self.1).then_some(())
    }

    /// Every row as found (else shows a few that differ) and no state file left in `dir`.
    #[track_caller]
    fn check(&self, dir: Option<&Path>, when: &str) {
        let now = self.0.sql(SETUP_DUMP);
        let diff: Vec<_> = self
            .1
            .lines()
            .zip(now.lines())
            .filter(|(a, b)| a != b)
            .collect();
        let some = &diff[..diff.len().min(3)];
        assert!(
            now == self.1,
            "{when}: {} rows differ: {some:?}",
            diff.len()
        );
        let left = dir.is_some_and(|d| has_state_file(d, self.0));
        assert!(!left, "{when}: state file left behind");
    }
}

/// Every record (kind run or phase) of the phase log in `dir`; empty until it exists.
fn records(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("phases.jsonl")).unwrap_or_default();
    let json = |l: &str| serde_json::from_str(l).unwrap();
    text.lines().map(json).collect()
}

fn phases(dir: &Path) -> Vec<Value> {
    let mut all = records(dir);
    all.retain(|r| r["kind"] == "phase");
    all
}

fn key(p: &Value) -> (u64, u64, String) {
    let n = |f: &str| p[f].as_u64().unwrap();
    (
        n("block"),
        n("phase"),
        p["scenario"].as_str().unwrap().into(),
    )
}

/// Short `mariadb` CLI sessions through a proxy, one after another, until finished.
struct Load(Arc<AtomicBool>, Option<JoinHandle<(u64, u64, String)>>);

impl Load {
    fn start(addr: &str) -> Load {
        let (stop, addr) = (Arc::new(AtomicBool::new(false)), addr.to_string());
        let halt = stop.clone();
        let thread = std::thread::spawn(move || {
            let (mut ok, mut failed, mut errors) = (0, 0, String::new());
            while !halt.load(Relaxed) {
                // No information_schema query here: MariaDB 10.11 crashed (SIGSEGV in
                // ha_maria::drop_table freeing its Aria temporary table) twice under these
                // tests' runtime performance_schema switches.
                let sql = "SELECT 1; SELECT @@version, CONNECTION_ID()";
                let out = cli::mariadb(&addr, &["-e", sql], None);
                if out.status.success() {
                    ok += 1;
                } else {
                    failed += 1;
                    errors.push_str(&String::from_utf8_lossy(&out.stderr));
                }
            }
            (ok, failed, errors)
        });
        Load(stop, Some(thread))
    }

    /// Stops; returns (sessions that succeeded, sessions that failed, the failures' stderr).
    fn finish(mut self) -> (u64, u64, String) {
        self.0.store(true, Relaxed);
        self.1.take().unwrap().join().unwrap()
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
    }
}

/// A root session holding psprobe.phase's row FOR UPDATE: a new leader blocks on it when it
/// publishes its first phase, which it does before applying any scenario.
struct PhaseRowLock(Child);

impl PhaseRowLock {
    fn take(db: &MariaDb) -> PhaseRowLock {
        let mut child = Command::new("mariadb")
            .args("--no-defaults --protocol=TCP -h127.0.0.1 -uroot -NB -n".split(' '))
            .arg(format!("-P{}", db.port()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let sql = "BEGIN; SELECT id FROM psprobe.phase WHERE id = 1 FOR UPDATE; SELECT 'locked';\n";
        let stdin = child.stdin.as_mut().unwrap();
        stdin.write_all(sql.as_bytes()).unwrap();
        let (tx, rx) = mpsc::channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let lines = stdout.lines().map_while(Result::ok);
        std::thread::spawn(move || lines.for_each(|l| drop(tx.send(l))));
        let lock = PhaseRowLock(child);
        while rx.recv_timeout(Duration::from_secs(20)).unwrap() != "locked" {}
        lock
    }

    fn release(mut self) {
        let mut stdin = self.0.stdin.take().unwrap();
        stdin.write_all(b"ROLLBACK;\n").unwrap();
        drop(stdin); // EOF: the client exits
        poll("the lock holder to exit", 20, || self.0.try_wait().unwrap());
    }
}

impl Drop for PhaseRowLock {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sigterm_mid_phase_restores_every_row_and_removes_the_state_file() {
    let db = MariaDb::start_default();
    let found = Found::new(&db);
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("{TWO} --phase 30s --settle 1s");
    let mut probe = start(&db, &flags(&spec, dir.path()));
    poll("a scenario applied", 20, || found.changed());
    assert!(has_state_file(dir.path(), &db) && leader(&probe) == 1.0);
    let took = terminate(&mut probe);
    assert!(took < Duration::from_secs(5), "exit took {took:?}");
    found.check(Some(dir.path()), "after SIGTERM");
    assert!(
        phases(dir.path()).is_empty(),
        "an unfinished phase is logged"
    );
    println!("sigterm: restore and exit took {took:?}");
}

#[test]
fn after_sigkill_the_next_start_restores_before_serving() {
    let db = MariaDb::start_default();
    let found = Found::new(&db);
    let dir = tempfile::tempdir().unwrap();
    let args = flags(&format!("{TWO} --phase 30s --settle 1s"), dir.path());
    let mut first = start(&db, &args);
    poll("a scenario applied", 20, || found.changed());
    first.signal(libc::SIGKILL);
    assert!(first.wait_exit(Duration::from_secs(5)).is_some(), "SIGKILL");
    let crashed = found.changed().is_some() && has_state_file(dir.path(), &db);
    assert!(crashed, "the crash left a scenario and the state file");

    // Holding psprobe.phase's row stops the new run before it applies anything, so what the
    // server has now is what start() left before the listening line.
    let lock = PhaseRowLock::take(&db);
    let t = Instant::now();
    let mut second = start(&db, &args);
    let startup = t.elapsed();
    found.check(None, "at the restarted psprobe's listening line");
    let waiting = "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                   WHERE INFO LIKE 'REPLACE INTO psprobe.phase%'";
    poll("the new leader to wait on the row", 20, || {
        (db.sql(waiting).trim() == "1").then_some(())
    });
    found.check(None, "while the new leader waits on the row");
    let err = second.stderr_text();
    assert!(
        err.contains("did not finish; restored what it changed"),
        "{err}"
    );
    lock.release();
    poll("the schedule to resume", 20, || found.changed());
    let took = terminate(&mut second);
    found.check(Some(dir.path()), "after SIGTERM of the second run");
    println!("sigkill: start to listening, crash restore included, {startup:?}; exit {took:?}");
}

/// Two psprobes with the schedule `TWO` plus `timing`, each with its own state directory,
/// once exactly one of them leads (its index is the third value).
fn two_probes(db: &MariaDb, timing: &str) -> ([tempfile::TempDir; 2], Vec<Probe>, usize) {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let spec = format!("{TWO} {timing}");
    let start_in = |d: &tempfile::TempDir| start(db, &flags(&spec, d.path()));
    let probes: Vec<Probe> = dirs.iter().map(start_in).collect();
    let l = poll("exactly one leader", 15, || {
        match (leader(&probes[0]), leader(&probes[1])) {
            (1.0, 0.0) => Some(0),
            (0.0, 1.0) => Some(1),
            _ => None,
        }
    });
    (dirs, probes, l)
}

#[test]
fn two_psprobes_one_leads_the_other_follows_and_takes_over() {
    let db = MariaDb::start_default();
    let found = Found::new(&db);
    let (dirs, mut probes, l) = two_probes(&db, "--phase 2s --settle 500ms --seed 7");
    let (f, survivor) = (1 - l, dirs[1 - l].path());
    let load = |p: &Probe| Some(Load::start(p.proxy_addr()));
    let mut loads: Vec<_> = probes.iter().map(load).collect();
    poll("each scenario's commands in both psprobes", 30, || {
        let labelled = |p: &Probe, s: &str| p.scrape().get(COMMANDS, &[("scenario", s)]) > 0.0;
        let both = |s: &&str| labelled(&probes[0], s) && labelled(&probes[1], s);
        ["pfson_conon_inson", "pfson_conoff_insoff"]
            .iter()
            .all(both)
            .then_some(())
    });
    let logged = || (phases(survivor).len() >= 2).then_some(());
    poll("2 phases in the follower's log", 30, logged);
    assert_eq!(leader(&probes[f]), 0.0, "still following");

    probes[l].signal(libc::SIGKILL);
    let t = Instant::now();
    assert!(probes[l].wait_exit(Duration::from_secs(5)).is_some());
    let via_leader = loads[l].take().unwrap().finish();
    let leads = || (leader(&probes[f]) == 1.0).then_some(());
    poll("the follower to take over", 30, leads);
    let takeover = t.elapsed();
    assert!(takeover <= Duration::from_secs(6), "takeover {takeover:?}");

    // What the follower logged before taking over is what the leader logged.
    let led: Vec<_> = phases(dirs[l].path()).iter().map(key).collect();
    let took_over = |r: &Value| r["kind"] == "run" && r["role"] == "leader";
    let log = records(survivor);
    let followed = log.iter().take_while(|r| !took_over(r));
    let followed: Vec<_> = followed.filter(|r| r["kind"] == "phase").map(key).collect();
    let same = followed.len() >= 2 && followed.iter().all(|p| led.contains(p));
    assert!(same, "follower {followed:?}, leader {led:?}");
    // The survivor keeps switching as the new leader.
    let new = poll("2 phases led by the survivor", 30, || {
        let log = records(survivor);
        let new = log[log.iter().position(took_over)?..].iter();
        let new: Vec<_> = new.filter(|r| r["kind"] == "phase").map(key).collect();
        (new.len() >= 2).then_some(new)
    });
    let via_survivor = loads[f].take().unwrap().finish();
    assert!(
        via_leader.0 > 0,
        "no session through the leader: {via_leader:?}"
    );
    let failed = &via_survivor.2;
    assert!(
        via_survivor.0 > 0 && via_survivor.1 == 0,
        "survivor: {via_survivor:?}; {failed}"
    );
    let took = terminate(&mut probes[f]);
    found.check(Some(survivor), "after SIGTERM of the survivor");
    println!(
        "two psprobes: takeover {takeover:?}; followed {followed:?}; then led {new:?}; \
         cli sessions (ok, failed) via leader {via_leader:?}, via survivor {via_survivor:?}; \
         survivor exit {took:?}"
    );
}

/// A leader that is stopped (SIGSTOP: its connections and the lock stay open on the server,
/// as when its host is cut off) is taken over once its heartbeat is 3 s old: the follower
/// ends its connections, restores, and leads. Resumed, the old leader changes nothing, says
/// why, and follows.
#[test]
fn a_stopped_leader_is_taken_over_and_follows_when_it_resumes() {
    let db = MariaDb::start_default();
    let found = Found::new(&db);
    let (dirs, mut probes, l) = two_probes(&db, "--phase 1s --settle 200ms --seed 11");
    let (f, survivor) = (1 - l, dirs[1 - l].path());
    let load = Load::start(probes[f].proxy_addr());
    poll("2 phases in the follower's log", 30, || {
        (phases(survivor).len() >= 2).then_some(())
    });

    probes[l].signal(libc::SIGSTOP);
    let t = Instant::now();
    poll("the follower to take over", 20, || {
        (leader(&probes[f]) == 1.0).then_some(())
    });
    let takeover = t.elapsed();
    // Not before the beat is stale (3 s after the last beat, which is at most 0.5 s before
    // the stop), and soon after (a follower polls every 250 ms at most).
    assert!(
        takeover >= Duration::from_millis(2400) && takeover <= Duration::from_secs(6),
        "takeover {takeover:?}"
    );
    let said = probes[f].stderr_text();
    assert!(said.contains("has not beaten for"), "{said}");
    let took_over = |r: &Value| r["kind"] == "run" && r["role"] == "leader";
    let led = |n: usize| {
        let log = records(survivor);
        let new = log[log.iter().position(took_over)?..].iter();
        let new: Vec<_> = new.filter(|r| r["kind"] == "phase").map(key).collect();
        (new.len() >= n).then_some(new)
    };
    poll("2 phases led by the survivor", 30, || led(2));

    probes[l].signal(libc::SIGCONT);
    let old = &probes[l];
    let text = poll("the old leader to see it was taken over", 20, || {
        let text = old.stderr_text();
        (text.contains("another psprobe (") && text.contains("leads the schedule on"))
            .then_some(text)
    });
    // It rejoins, finds the lock held, and leaves the snapshot to its successor.
    poll("the old leader's state file to go", 20, || {
        (!has_state_file(dirs[l].path(), &db)).then_some(())
    });
    let before = led(0).map_or(0, |p| p.len());
    poll("4 more phases led by the survivor", 30, || {
        // Never two leaders, at any sample.
        assert_eq!(
            (leader(&probes[l]), leader(&probes[f])),
            (0.0, 1.0),
            "leaders"
        );
        led(before + 4)
    });
    let old_m = probes[l].scrape();
    assert_eq!(old_m.get("psprobe_controller_lead_lost_total", &[]), 1.0);
    // The old leader follows: its log says so after the takeover.
    let log = records(dirs[l].path());
    let roles: Vec<&str> = log
        .iter()
        .filter(|r| r["kind"] == "run")
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["leader", "follower"], "old leader's runs");
    // Nobody changed the survivor's scenarios behind its back.
    let m = probes[f].scrape();
    assert_eq!(
        m.get("psprobe_controller_verification_failures_total", &[]),
        0.0
    );
    let (ok, failed, errors) = load.finish();
    assert!(
        ok > 0 && failed == 0,
        "via the survivor: {ok} ok, {failed} failed: {errors}"
    );

    // The follower leaves first (it changes nothing); then the leader restores.
    let old_exit = terminate(&mut probes[l]);
    assert!(!has_state_file(dirs[l].path(), &db));
    let took = terminate(&mut probes[f]);
    found.check(Some(survivor), "after SIGTERM of both");
    println!(
        "stopped leader: takeover {takeover:?} after SIGSTOP; old leader exit {old_exit:?}, \
         survivor exit {took:?}"
    );
    let warned = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.contains(" WARN "))
            .map(str::to_string)
            .collect()
    };
    println!("old leader said: {:#?}", warned(&text));
    println!("survivor said: {:#?}", warned(&said));
}

// The restart hook on every server: MySQL restarts take 4-5 s where MariaDB's take one.
crate::per_flavor!(
    restart_hook_turns_performance_schema_off_and_back_under_load,
    startup_scenario_runs_through_the_restart_hook_and_is_compared_with_its_runtime_twin
);

fn restart_hook_turns_performance_schema_off_and_back_under_load(flavor: Flavor) {
    let db = Server::start(flavor, common::server::Options::default());
    let found = Found::new(&db);
    let dir = tempfile::tempdir().unwrap();
    let cmd = format!("sh {} {{pfs}}", restart_script(&db, dir.path()).display());
    let _reaper = Reaper(dir.path().to_path_buf());
    // A slow block: pfsoff and its reference, each entered by a restart; the final restore
    // restarts with ON if the block ended in pfsoff.
    let spec = format!("{SWITCH_ON_OFF} --phase 6s --settle 1s --restart-settle 2s --seed 2");
    let mut args = flags(&spec, dir.path());
    args.extend(["--restart-cmd".into(), cmd]);
    let mut probe = start(&db, &args);
    // sysbench 1.0.20 with libmariadb segfaults when it reconnects (akopytov/sysbench#527),
    // with or without psprobe: short CLI sessions are the load that survives restarts.
    let load = Load::start(probe.proxy_addr());
    let (stop, ps) = (AtomicBool::new(false), "SELECT @@performance_schema");
    let samples = std::thread::scope(|s| {
        let poller = s.spawn(|| {
            let mut seen = Vec::new();
            while !stop.load(Relaxed) {
                seen.push((now_ms(), db.try_sql(ps).ok().map(|v| v.trim().to_string())));
                std::thread::sleep(Duration::from_millis(100)); // sampling interval
            }
            seen
        });
        let done = catch_unwind(AssertUnwindSafe(|| {
            poll("the schedule to end, settings restored", 120, || {
                let on = db.try_sql(ps).is_ok_and(|v| v.trim() == "1");
                let restored = on && !has_state_file(dir.path(), &db);
                (phases(dir.path()).len() == 2 && restored).then_some(())
            })
        }));
        stop.store(true, Relaxed);
        done.unwrap_or_else(|e| resume_unwind(e));
        poller.join().unwrap()
    });
    let sessions = load.finish();
    let m = probe.scrape();
    let phases = phases(dir.path());
    let find = |name: &str| phases.iter().find(|p| p["scenario"] == name);
    let (on, off) = (find("pfson_conon_inson").unwrap(), find("pfsoff").unwrap());
    for p in [on, off] {
        let flags = (&p["restarted"], &p["verified"], &p["schedule"]);
        assert!(
            flags == (&true.into(), &true.into(), &"slow".into()),
            "both entered by restart: {phases:?}"
        );
    }
    // What the poller read during each measured window (failed reads say nothing).
    let ms = |p: &Value, f: &str| p[f].as_u64().unwrap();
    let window = |p: &Value| -> Vec<String> {
        let during = |t: &u64| (ms(p, "measure_from_ms")..=ms(p, "measure_to_ms")).contains(t);
        let read = samples.iter().filter(|(t, _)| during(t));
        read.filter_map(|(_, v)| v.clone()).collect()
    };
    let (seen_on, seen_off) = (window(on), window(off));
    let all = |seen: &[String], v: &str| !seen.is_empty() && seen.iter().all(|s| s == v);
    assert!(
        all(&seen_off, "0") && all(&seen_on, "1"),
        "{seen_off:?} {seen_on:?}"
    );
    let off_commands = m.get(COMMANDS, &[("scenario", "pfsoff")]);
    assert!(off_commands > 0.0, "{}", m.text);
    found.check(None, "after the schedule");
    // Outages the poller saw, as (start, length) in ms from the first sample.
    let (mut outages, mut down) = (Vec::new(), None);
    for (t, v) in &samples {
        match (v, down) {
            (None, None) => down = Some(*t),
            (Some(_), Some(d)) => (outages.push((d - samples[0].0, t - d)), down = None).1,
            _ => {}
        }
    }
    let switch = ms(off, "measure_from_ms") - ms(off, "switched_at_ms") - 2000;
    let keys = [
        "aborted",
        "errors_total",
        "connect_errors",
        "connections_total",
    ];
    let shown = |l: &&str| !l.ends_with(" 0") && keys.iter().any(|k| l.contains(k));
    let metrics: Vec<&str> = m.text.lines().filter(|l| !l.starts_with('#')).collect();
    let metrics: Vec<&str> = metrics.into_iter().filter(shown).collect();
    println!(
        "restart hook: switch to pfsoff incl. restart {switch} ms; outages (start, ms) \
         {outages:?}; cli sessions (ok, failed) {sessions:?}; {} reads in pfsoff; metrics:\n  {}",
        seen_off.len(),
        metrics.join("\n  ")
    );
    terminate(&mut probe);
}

/// The running server's command line, empty while it restarts.
fn server_cmdline(pid_file: &Path) -> String {
    let pid = std::fs::read_to_string(pid_file).unwrap_or_default();
    std::fs::read_to_string(format!("/proc/{}/cmdline", pid.trim()))
        .unwrap_or_default()
        .replace('\0', " ")
}

fn startup_scenario_runs_through_the_restart_hook_and_is_compared_with_its_runtime_twin(
    flavor: Flavor,
) {
    let db = Server::start(flavor, common::server::Options::default());
    let found = Found::new(&db);
    let dir = tempfile::tempdir().unwrap();
    let cmd = format!(
        "sh {} {{pfs}} {{opts}}",
        restart_script(&db, dir.path()).display()
    );
    let _reaper = Reaper(dir.path().to_path_buf());
    let pids = db.pid_file();
    // MySQL's restarts take 4 s (MariaDB's well under one): its slow pair needs more time.
    let duration = if flavor.is_mysql() { 60 } else { 40 };
    let spec = format!(
        "--scenarios pfson_conoff_insoff,pfson_conon_inson,pfson_conon_inson@startup \
         --duration {duration}s --slow-blocks 1 --slow-phase 6s --restart-settle 2s --seed 3"
    );
    let mut args = flags(&spec, dir.path());
    args.extend(["--restart-cmd".into(), cmd]);
    let mut probe = start(&db, &args);
    let load = Load::start(probe.proxy_addr());
    let started_with = poll("the startup phase", 90, || {
        let line = server_cmdline(&pids);
        // MySQL's option parser cuts its own argv at the second '=' ("=% ON").
        line.contains("--performance-schema-instrument=%")
            .then_some(line)
    });
    poll("the schedule to end, settings restored", 120, || {
        let done = probe.stderr_text().contains("controller finished");
        (done && !has_state_file(dir.path(), &db)).then_some(())
    });
    let sessions = load.finish();
    let phases = phases(dir.path());
    let slow: Vec<&Value> = phases.iter().filter(|p| p["schedule"] == "slow").collect();
    let names: Vec<&str> = slow
        .iter()
        .map(|p| p["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(slow.len(), 2, "{names:?}");
    for p in &slow {
        let flags = (&p["restarted"], &p["verified"]);
        assert!(flags == (&true.into(), &true.into()), "{p}");
    }
    assert!(names.contains(&"pfson_conon_inson@startup") && names.contains(&"pfson_conoff_insoff"));
    let fast = phases.iter().filter(|p| p["schedule"] == "fast").count();
    assert!(fast >= 4, "{fast} fast records");
    // The report sets startup against runtime for the same settings.
    let log = dir.path().join("phases.jsonl");
    let out = cli::psprobe(&["report", log.to_str().unwrap(), "--format", "json"]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("report json");
    let startup = report["analysis"]["startup"].as_array().expect("startup");
    let throughput = startup
        .iter()
        .find(|c| c["scenario"] == "pfson_conon_inson" && c["metric"] == "throughput")
        .expect("a throughput comparison");
    assert!(
        throughput["runtime"]["ratio"].is_f64() && throughput["startup"]["ratio"].is_f64(),
        "{throughput}"
    );
    let md = cli::psprobe(&["report", log.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&md.stdout).contains("## Startup against runtime settings"));
    // Left as found: the server runs without the startup options again, rows restored.
    let now = server_cmdline(&pids);
    assert!(!now.contains("--performance-schema-instrument"), "{now}");
    found.check(Some(dir.path()), "after the schedule");
    println!(
        "startup scenario: server started with {:?}; sessions (ok, failed) {sessions:?}; \
         runtime {} vs startup {}",
        started_with
            .split(' ')
            .filter(|a| a.starts_with("--performance-schema-"))
            .collect::<Vec<_>>(),
        throughput["runtime"]["ratio"],
        throughput["startup"]["ratio"]
    );
    terminate(&mut probe);
}

/// Runs `psprobe proxy` expecting it to refuse to start; returns its one line of stderr.
fn refused(upstream: &str, dsn: &str, args: &[String]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
    cmd.env(DSN_ENV, dsn)
        .args("proxy --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --upstream".split(' '))
        .arg(upstream)
        .args(args);
    let out = run_with_timeout(cmd, None, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let failed = !out.status.success() && out.stdout.is_empty();
    assert!(
        failed && err.lines().count() == 1,
        "{args:?}: {:?}\n{err}",
        out.status
    );
    err
}

#[test]
fn bad_input_is_one_clear_line_and_changes_nothing() {
    let db = MariaDb::start_default();
    let found = Found::new(&db);
    let dir = tempfile::tempdir().unwrap();
    let (addr, dsn) = (db.addr(), db.dsn());
    let args = |spec: &str| flags(&format!("--phase 2s --seed 1 {spec}"), dir.path());
    let on = "--scenarios pfson_conon_inson --settle 500ms";

    let e = refused(&addr, &dsn, &args("--scenarios pfson_conon_inson,nosuch"));
    let valid = e.contains("unknown scenario 'nosuch'; valid scenarios: ");
    assert!(valid && e.contains("pfsoff, "), "{e}");
    let wrong = dsn.replace(PASSWORD, "Not-The-Pass-42");
    let e = refused(&addr, &wrong, &args(on));
    assert!(e.contains("access denied for psprobe@127.0.0.1"), "{e}");
    assert!(
        !e.contains("Not-The-Pass") && !e.contains(PASSWORD),
        "password: {e}"
    );
    let e = refused(&addr, &dsn, &args(&format!("{SWITCH_ON_OFF} --settle 1s")));
    let hint = e.contains("'pfsoff' needs a server restart") && e.contains("--restart-cmd");
    assert!(hint, "{e}");
    let e = refused(&addr, &dsn, &args(&format!("{TWO} --settle 5s")));
    assert!(
        e.contains("--settle (5s) must be shorter than --phase (2s)"),
        "{e}"
    );
    let e = refused(&addr, &dsn, &args("--scenarios pfsoff --restart-cmd true"));
    let alone = e.contains("pfsoff needs a runtime scenario to be compared with");
    assert!(alone, "{e}");
    let no_ps = Options {
        performance_schema: false,
        ..Options::default()
    };
    let off = MariaDb::start(no_ps);
    let e = refused(&off.addr(), &off.dsn(), &args(on));
    let ps_off = e.contains("performance_schema is OFF") && e.contains("my.cnf");
    assert!(ps_off, "{e}");
    assert_eq!(off.sql("SELECT @@performance_schema").trim(), "0");
    found.check(Some(dir.path()), "after the refused starts");

    // A failing restart hook stops the controller, not the proxy (fail-open), and leaves
    // nothing changed. (The slow block restarts into either scenario first.)
    let mut hook = args(&format!("{SWITCH_ON_OFF} --settle 1s --restart-settle 1s"));
    hook.extend(["--restart-cmd".into(), "false {pfs}".into()]);
    let mut probe = start(&db, &hook);
    let line = poll("the controller to report the failed hook", 30, || {
        let err = probe.stderr_text();
        let line = err.lines().find(|l| l.contains("controller stopped"));
        line.map(String::from)
    });
    let failed = ["`false OFF` failed", "`false ON` failed"];
    assert!(failed.iter().any(|f| line.contains(f)), "{line}");
    let answer = cli::mariadb_ok(probe.proxy_addr(), &["-N", "-e", "SELECT 6*7"], None);
    assert_eq!(
        (answer.trim(), leader(&probe)),
        ("42", 0.0),
        "serving, not leading"
    );
    found.check(Some(dir.path()), "after the failed restart hook");
    terminate(&mut probe);
    println!("bad input: failed hook reported as {line:?}");
}

/// mariadbd SIGKILLed while psprobe switches runtime scenarios under load, then started again
/// by someone else: the schedule pauses while the server is down (changing nothing, no phase
/// measured across the crash), takes the restarted server's settings as the ones to leave,
/// goes on, and the settings end as that restart set them; the proxy serves throughout.
#[test]
fn a_server_crash_mid_schedule_pauses_the_schedule_and_the_settings_end_as_found() {
    let mut db = MariaDb::start_default();
    let found = db.sql(SETUP_DUMP);
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("{TWO} --phase 250ms --segment 2s --settle 50ms");
    let mut probe = start(&db, &flags(&spec, dir.path()));
    let load = Load::start(probe.proxy_addr());
    poll("two segments written", 60, || {
        (phases(dir.path()).len() >= 4).then_some(())
    });
    let crashed_at = now_ms();
    db.restart(); // SIGKILL, then mariadbd again on the same port and datadir
    let back_at = now_ms();
    poll("the schedule to go on after the restart", 60, || {
        probe
            .stderr_text()
            .contains("the server was restarted (not by psprobe) while this run waited")
            .then_some(())
    });
    poll("two segments after the restart", 60, || {
        let after = phases(dir.path())
            .iter()
            .filter(|p| p["measure_from_ms"].as_u64().unwrap() > back_at)
            .count();
        (after >= 4).then_some(())
    });
    // The proxy serves on, on the server that came back.
    let out = cli::mariadb(probe.proxy_addr(), &["-e", "SELECT 1"], None);
    assert!(out.status.success(), "{out:?}");
    let (ok, failed, _) = load.finish();
    terminate(&mut probe);
    let now = db.sql(SETUP_DUMP);
    assert!(now == found, "the settings did not end as found");
    assert!(!has_state_file(dir.path(), &db), "state file left behind");

    let all = phases(dir.path());
    for p in &all {
        let (from, to) = (
            p["measure_from_ms"].as_u64().unwrap(),
            p["measure_to_ms"].as_u64().unwrap(),
        );
        assert!(
            to <= crashed_at || from >= crashed_at,
            "a phase measured across the crash: {p}"
        );
    }
    let log = probe.stderr_text();
    let warns: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    eprintln!(
        "server crash mid-schedule: {} phase records, none across the crash; load {ok} ok / \
         {failed} failed; {} WARN/ERROR lines:\n{}",
        all.len(),
        warns.len(),
        warns.join("\n")
    );
    assert!(!log.contains("another psprobe"), "{log}");
    assert!(!log.contains("controller stopped"), "{log}");
    assert!(
        warns.len() <= 6,
        "one event, {} lines about it:\n{}",
        warns.len(),
        warns.join("\n")
    );
    assert!(!log.contains("panicked"), "{log}");
}
