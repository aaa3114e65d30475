//! Three psprobes on three hosts in front of one server on a fourth (MariaDB 10.11, 11.8 and
//! MySQL 9.7, each test per flavor), sharing one controller
//! schedule (one leads, two follow), each host joined to the database host by its own link.
//! Cutting the leader's link must hand the schedule to a follower within a stated bound, with
//! the snapshot restored first and nothing changed by the cut-off leader; when the link comes
//! back the old leader follows. A leader killed on a host that never returns must not stop the
//! schedule from completing, with the settings restored once, as found. A follower cut off
//! under load counts exactly what its clients count and rejoins.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::controller::{flags, leader, poll, terminate, DSN_ENV, SETUP_DUMP};
use crate::common::counting_client;
use crate::common::faulty_link::{FaultyLink, Shape};
use crate::common::netns::{self, Netns};
use crate::common::probe::Probe;
use crate::common::server::{Flavor, Options, Server};

crate::per_flavor!(
    partition_the_cut_off_leader_is_taken_over_and_follows_when_the_link_returns,
    partition_a_leader_killed_on_a_host_that_never_returns_does_not_stop_the_schedule,
    partition_a_cut_off_follower_counts_exactly_and_rejoins,
);

const TWO: &str = "--scenarios pfson_conon_inson,pfson_conoff_insoff";

struct Fleet {
    probes: Vec<Probe>,
    dirs: Vec<tempfile::TempDir>,
    links: Vec<FaultyLink>,
    db: Server,
    found: String,
    _hosts: Vec<Arc<Netns>>,
}

impl Fleet {
    /// None (after printing why) when this machine cannot make namespaces.
    fn start(test: &str, spec: &str, flavor: Flavor) -> Option<Fleet> {
        if netns::skip_unless_available(test) {
            return None;
        }
        let db_host = Arc::new(Netns::create().expect("create the database host"));
        let db = Server::start_in(
            flavor,
            db_host.clone(),
            Options {
                performance_schema: true,
                extra_args: vec![],
            },
        );
        let found = db.sql(SETUP_DUMP);
        let (mut hosts, mut links, mut probes, mut dirs) = (vec![db_host], vec![], vec![], vec![]);
        for _ in 0..3 {
            let host = Arc::new(Netns::create().expect("create a probe host"));
            let link = FaultyLink::connect(&host, &hosts[0], Shape::default()).expect("link");
            // Each psprobe reaches the server (proxy and controller alike) over its own link.
            let upstream = format!("{}:{}", link.ip_b(), db.port());
            let dir = tempfile::tempdir().unwrap();
            let args = flags(spec, dir.path());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let dsn = db.dsn_via(&upstream);
            probes.push(Probe::start_in_with_env(
                &host,
                &upstream,
                &args,
                &[(DSN_ENV, &dsn)],
            ));
            hosts.push(host);
            links.push(link);
            dirs.push(dir);
        }
        Some(Fleet {
            probes,
            dirs,
            links,
            db,
            found,
            _hosts: hosts,
        })
    }

    fn leaders(&self) -> Vec<f64> {
        self.probes.iter().map(leader).collect()
    }

    /// The one leader, once there is exactly one.
    fn the_leader(&self, secs: u64) -> usize {
        poll("exactly one leader", secs, || {
            let l = self.leaders();
            let leading: Vec<usize> = (0..l.len()).filter(|&i| l[i] == 1.0).collect();
            (leading.len() == 1).then(|| leading[0])
        })
    }

    /// The leader and the followers, once each follower has logged `n` phases.
    fn followed(&self, n: usize) -> (usize, Vec<usize>) {
        let l = self.the_leader(30);
        let followers: Vec<usize> = (0..3).filter(|&i| i != l).collect();
        poll("phases in each follower's log", 30, || {
            let logged = |f: &usize| phases(&self.records(*f)) >= n;
            followers.iter().all(logged).then_some(())
        });
        (l, followers)
    }

    fn records(&self, i: usize) -> Vec<Value> {
        records(self.dirs[i].path())
    }

    fn has_state_file(&self, i: usize) -> bool {
        let dir = self.dirs[i].path();
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("ps-snapshot-"))
    }

    /// Every row as found, no snapshot left on the server.
    #[track_caller]
    fn check_restored(&self, when: &str) {
        let now = self.db.sql(SETUP_DUMP);
        let differ = self.found.lines().zip(now.lines()).filter(|(a, b)| a != b);
        let differ: Vec<_> = differ.take(3).collect();
        assert!(now == self.found, "{when}: rows differ, e.g. {differ:?}");
        let left = self.db.sql("SELECT COUNT(*) FROM psprobe.snapshot");
        assert_eq!(left.trim(), "0", "{when}: snapshot left on the server");
    }
}

fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.unwrap().as_millis() as u64
}

fn records(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("phases.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn phases(records: &[Value]) -> usize {
    records.iter().filter(|r| r["kind"] == "phase").count()
}

/// A record's segment and scenario (a follower that joins mid-segment records the same
/// segment from a later slot on, so the slot numbers may differ).
fn key(p: &Value) -> (u64, String) {
    let scenario = p["scenario"].as_str().unwrap().to_string();
    (p["block"].as_u64().unwrap(), scenario)
}

fn roles(records: &[Value]) -> Vec<String> {
    let runs = records.iter().filter(|r| r["kind"] == "run");
    runs.map(|r| r["role"].as_str().unwrap().to_string())
        .collect()
}

fn warnings(p: &Probe) -> Vec<String> {
    let text = p.stderr_text();
    text.lines()
        .filter(|l| l.contains(" WARN "))
        .map(str::to_string)
        .collect()
}

fn partition_the_cut_off_leader_is_taken_over_and_follows_when_the_link_returns(flavor: Flavor) {
    let spec = format!("{TWO} --phase 1s --settle 200ms --seed 5");
    let Some(mut fleet) = Fleet::start("partition_leader_cut_off", &spec, flavor) else {
        return;
    };
    let (l, followers) = fleet.followed(2);

    fleet.links[l].down();
    let cut = Instant::now();
    let new = poll("a follower to take over", 30, || {
        let l = fleet.leaders();
        followers.iter().copied().find(|&f| l[f] == 1.0)
    });
    let takeover = cut.elapsed();
    let taken_over_ms = now_ms();
    // The beat is stale 3 s after the last one (at most 0.5 s before the cut); followers
    // poll every 250 ms; the lock is free once the server ended the leader's connections.
    assert!(
        takeover >= Duration::from_millis(2400) && takeover <= Duration::from_secs(6),
        "takeover {takeover:?}"
    );
    let old_gave_up = poll("the cut-off leader to stop leading", 10, || {
        (leader(&fleet.probes[l]) == 0.0).then(|| cut.elapsed())
    });
    let led_by_new = |n: usize| {
        let log = fleet.records(new);
        let at = log
            .iter()
            .position(|r| r["kind"] == "run" && r["role"] == "leader")?;
        (phases(&log[at..]) >= n).then_some(())
    };
    poll("2 phases led by the new leader", 30, || led_by_new(2));

    fleet.links[l].up();
    let back = Instant::now();
    let rejoined = poll("the old leader to follow again", 40, || {
        let log = fleet.records(l);
        (roles(&log) == ["leader", "follower"]).then(|| back.elapsed())
    });
    poll("the old leader to follow 2 phases", 30, || {
        let log = fleet.records(l);
        let at = log.iter().rposition(|r| r["kind"] == "run")?;
        (phases(&log[at..]) >= 2).then_some(())
    });
    let l_now = fleet.leaders();
    let leading: Vec<usize> = (0..3).filter(|&i| l_now[i] == 1.0).collect();
    assert_eq!(leading, [new], "one leader, the new one");
    assert!(
        !fleet.has_state_file(l),
        "the old leader's state file is its successor's now"
    );
    let old = fleet.probes[l].scrape();
    assert_eq!(old.get("psprobe_controller_lead_lost_total", &[]), 1.0);
    let m = fleet.probes[new].scrape();
    assert_eq!(
        m.get("psprobe_controller_verification_failures_total", &[]),
        0.0,
        "the new leader's scenarios held: nobody else changed them"
    );
    // Every window a probe measured had its scenario in effect: the old leader's scenarios
    // held until the new leader restored the snapshot (at the takeover); after it, only the
    // new leader's segments count.
    let mut led_by_new = Vec::new();
    let log = fleet.records(new);
    let at = log
        .iter()
        .position(|r| r["kind"] == "run" && r["role"] == "leader")
        .unwrap();
    for r in log[at..].iter().filter(|r| r["kind"] == "phase") {
        led_by_new.push(key(r));
    }
    for i in 0..3 {
        for r in fleet.records(i).iter().filter(|r| r["kind"] == "phase") {
            let to = r["measure_to_ms"].as_u64().unwrap();
            assert!(
                led_by_new.contains(&key(r)) || to <= taken_over_ms,
                "probe {i} (old leader {l}, new {new}) measured {:?} until {to}, after the \
                 takeover at {taken_over_ms}, in a segment the new leader did not run",
                key(r)
            );
        }
    }
    let said_old = warnings(&fleet.probes[l]);
    let said_new = warnings(&fleet.probes[new]);

    // Followers leave first (they change nothing), then the leader restores.
    for &f in &followers {
        if f != new {
            terminate(&mut fleet.probes[f]);
        }
    }
    terminate(&mut fleet.probes[l]);
    terminate(&mut fleet.probes[new]);
    fleet.check_restored("after the fleet stopped");
    println!(
        "FIGURES partition: takeover {takeover:?} after the cut; the cut-off leader stopped \
         leading {old_gave_up:?} after it; following again {rejoined:?} after the link came back"
    );
    println!("old leader said: {said_old:#?}");
    println!("new leader said: {said_new:#?}");
}

fn partition_a_leader_killed_on_a_host_that_never_returns_does_not_stop_the_schedule(
    flavor: Flavor,
) {
    let spec = format!("{TWO} --phase 1s --settle 200ms --seed 9 --blocks 10");
    let Some(mut fleet) = Fleet::start("partition_leader_killed", &spec, flavor) else {
        return;
    };
    let (l, followers) = fleet.followed(1);
    // The host goes first, then the process: the server never hears of the end of the
    // leader's connections, which keep the lock.
    fleet.links[l].down();
    fleet.probes[l].signal(libc::SIGKILL);
    assert!(fleet.probes[l].wait_exit(Duration::from_secs(5)).is_some());
    let cut = Instant::now();
    let new = poll("a follower to take over", 30, || {
        let took = |f: &usize| {
            let text = fleet.probes[*f].stderr_text();
            text.contains("the leading psprobe is gone; taking over the schedule")
        };
        followers.iter().copied().find(took)
    });
    let takeover = cut.elapsed();
    assert!(takeover <= Duration::from_secs(6), "takeover {takeover:?}");
    let other = followers.iter().copied().find(|&f| f != new).unwrap();
    poll("the schedule to complete", 120, || {
        let done = fleet.db.sql("SELECT state FROM psprobe.phase WHERE id = 1");
        (done.trim() == "done").then_some(())
    });
    fleet.check_restored("once the schedule completed");
    // Restored once at the end, by the new leader only (the takeover's restore of what the
    // dead leader left is the other line).
    let restored = |f: usize| {
        let text = fleet.probes[f].stderr_text();
        text.lines()
            .filter(|l| l.ends_with("performance_schema settings restored"))
            .count()
    };
    assert_eq!((restored(new), restored(other)), (1, 0), "final restores");
    let said = fleet.probes[new].stderr_text();
    assert!(
        said.contains("holds settings of a run that did not finish; restored what it changed"),
        "{said}"
    );
    let led = fleet.records(new);
    let at = led
        .iter()
        .position(|r| r["kind"] == "run" && r["role"] == "leader")
        .unwrap();
    assert!(
        phases(&led[at..]) >= 2,
        "the new leader ran the rest of the schedule"
    );
    for &f in &followers {
        terminate(&mut fleet.probes[f]);
    }
    fleet.check_restored("after the fleet stopped");
    println!("FIGURES partition: leader killed behind a cut link; takeover {takeover:?}");
}

/// A follower's host cut off from the server for 12 s while clients run through it, with
/// `--upstream-keepalive 1s` (a dead path is given up after 4 s): the queries in flight at the
/// cut are aborted, and psprobe counts them as the clients count them (answered and errors
/// exactly; aborted at least one and at most what the clients lost), each under the scenario
/// it started in (not `none`); the follower's controller gives up on its stalled poll,
/// rejoins once the link is back, follows again and never leads; the leader is unaffected.
fn partition_a_cut_off_follower_counts_exactly_and_rejoins(flavor: Flavor) {
    let spec = format!("{TWO} --phase 1s --settle 200ms --seed 3 --upstream-keepalive 1s");
    let Some(mut fleet) = Fleet::start("partition_follower_cut_off", &spec, flavor) else {
        return;
    };
    let l = fleet.the_leader(30);
    let f = (0..3).find(|&i| i != l).unwrap();
    poll("2 phases in the follower's log", 30, || {
        (phases(&fleet.records(f)) >= 2).then_some(())
    });
    let before = fleet.probes[f].scrape();
    let dsn = fleet.db.dsn_via(fleet.probes[f].proxy_addr());
    let clients = std::thread::spawn(move || {
        counting_client::run(counting_client::opts(&dsn), 4, Duration::from_secs(24))
    });
    // Clients running through the follower, then the cut.
    let answered_now = |p: &Probe| {
        p.scrape()
            .get("psprobe_commands_total", &[("command", "query")])
    };
    let start = answered_now(&fleet.probes[f]);
    poll("queries through the follower", 20, || {
        (answered_now(&fleet.probes[f]) > start + 100.0).then_some(())
    });
    fleet.links[f].down();
    std::thread::sleep(Duration::from_secs(12)); // the outage itself
    fleet.links[f].up();
    let (back, back_ms) = (Instant::now(), now_ms());
    let client = clients.join().expect("client thread");
    let first_phase = poll("the follower to follow again", 40, || {
        let log = fleet.records(f);
        let runs = roles(&log);
        let at = log.iter().rposition(|r| r["kind"] == "run")?;
        (runs.len() >= 2 && phases(&log[at..]) >= 1).then(|| back.elapsed())
    });
    // Following again (its new run record) vs its first record (the end of the first segment
    // it saw whole).
    let log = fleet.records(f);
    let started = log
        .iter()
        .rev()
        .find(|r| r["kind"] == "run")
        .and_then(|r| r["started_at_ms"].as_u64())
        .expect("a run record");
    let rejoined = Duration::from_millis(started.saturating_sub(back_ms));
    assert!(
        roles(&fleet.records(f)).iter().all(|r| r == "follower"),
        "the follower never led"
    );
    assert_eq!(leader(&fleet.probes[l]), 1.0, "the leader leads on");
    let said = fleet.probes[f].stderr_text();
    assert!(said.contains("rejoining when the server answers"), "{said}");

    // psprobe counts what the clients count: answered, errors, lost.
    let after = poll("the follower's connections to close", 30, || {
        let m = fleet.probes[f].scrape();
        (m.get("psprobe_connections_active", &[]) == 0.0).then_some(m)
    });
    let delta = |outcome: &str| {
        let labels = [("command", "query"), ("outcome", outcome)];
        (after.get("psprobe_commands_total", &labels)
            - before.get("psprobe_commands_total", &labels)) as u64
    };
    let probe = (
        delta("ok") + delta("rows"),
        delta("error"),
        delta("aborted"),
    );
    assert_eq!(
        (probe.0, probe.1),
        (client.ok, client.server_errors),
        "psprobe (answered, errors, aborted) {probe:?} vs client {client:?}"
    );
    assert!(
        probe.2 >= 1 && probe.2 <= client.lost,
        "the cut aborts the queries in flight: aborted {probe:?} vs client {client:?}"
    );
    // Labelled as they were: each under the scenario in effect when it started.
    let aborted_in = |scenario: &str| {
        let labels = [
            ("command", "query"),
            ("outcome", "aborted"),
            ("scenario", scenario),
        ];
        (after.get("psprobe_commands_total", &labels)
            - before.get("psprobe_commands_total", &labels)) as u64
    };
    let labelled: u64 = ["pfson_conon_inson", "pfson_conoff_insoff"]
        .iter()
        .map(|s| aborted_in(s))
        .sum();
    assert_eq!(
        labelled,
        probe.2,
        "aborted under the schedule's scenarios; none: {}",
        aborted_in("none")
    );
    let m = fleet.probes[f].scrape();
    assert_eq!(m.get("psprobe_controller_lead_lost_total", &[]), 0.0);
    for i in (0..3).filter(|&i| i != l) {
        terminate(&mut fleet.probes[i]);
    }
    terminate(&mut fleet.probes[l]);
    fleet.check_restored("after the fleet stopped");
    println!(
        "FIGURES partition: follower cut 12 s under 4 clients: {client:?}; psprobe (answered, \
         errors, aborted) {probe:?}; following again {rejoined:?} after the link came back, its \
         first phase record {first_phase:?} after"
    );
}
