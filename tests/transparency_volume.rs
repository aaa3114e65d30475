//! Byte transparency at volume: the same mixed traffic (multi-MB LONGBLOB rows, LOAD DATA
//! LOCAL INFILE and the rows it loaded read back, many small queries) run with the real
//! `mariadb` CLI directly against mariadbd and through psprobe; the sha256 of the CLI's raw
//! output must be the same, part by part, and psprobe must have counted every statement.
//!
//! PSPROBE_VOLUME_MB sets the size (default 160 MB on the wire for CI; scripts/stress-faults.sh
//! runs 1200 MB, more than 1 GiB). Prints one `FIGURES` line.

mod common;

use common::cli::{run_with_timeout, split_addr, DATABASE, PASSWORD, USER};
use common::datadir::tempdir;
use common::mariadb::{MariaDb, Options};
use common::probe::Probe;
use common::prom::Scrape;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn volume_mb() -> u64 {
    std::env::var("PSPROBE_VOLUME_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(160)
}

/// How the volume splits: about half in 4 MiB blobs, two fifths in the loaded file (sent up,
/// then read back), the rest in small queries of ~200 bytes on the wire each (fewer than
/// their share: each costs a round trip, and CI time).
struct Plan {
    blob_rows: u64,
    load_bytes: u64,
    small_queries: u64,
}

const BLOB_MIB: u64 = 4;

impl Plan {
    fn for_volume(mb: u64) -> Plan {
        let bytes = mb * 1_000_000;
        Plan {
            blob_rows: (bytes / 2 / (BLOB_MIB << 20)).max(1),
            load_bytes: bytes / 5,
            small_queries: bytes / 40 / 200,
        }
    }
}

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Blobs made on the server (no client upload): 1 KiB of random bytes (every byte value,
/// NUL, tab, newline and backslash included) repeated to 4 MiB, each row its own.
fn create_blobs(db: &MariaDb, rows: u64) {
    db.sql("CREATE TABLE psprobe_test.blobs (id INT PRIMARY KEY, b LONGBLOB)");
    let mut sql = String::new();
    for id in 1..=rows {
        sql.push_str(&format!(
            "INSERT INTO psprobe_test.blobs VALUES ({id}, REPEAT(RANDOM_BYTES(1024), {}));",
            BLOB_MIB * 1024
        ));
    }
    db.sql(&sql);
}

/// A tab-separated file for LOAD DATA: `id<TAB>text`, lines of 50..2000 printable bytes.
fn write_load_file(path: &Path, bytes: u64) {
    let mut out = BufWriter::new(File::create(path).expect("create the LOAD DATA file"));
    let (mut rng, mut written, mut id) = (Rng(0x5eed_1234_abcd_0001), 0u64, 0u64);
    let mut line = Vec::new();
    while written < bytes {
        id += 1;
        line.clear();
        line.extend_from_slice(format!("{id}\t").as_bytes());
        let len = 50 + rng.next() % 1950;
        line.extend((0..len).map(|_| b' ' + (rng.next() % 95) as u8));
        line.push(b'\n');
        out.write_all(&line).expect("write the LOAD DATA file");
        written += line.len() as u64;
    }
    out.flush().expect("flush the LOAD DATA file");
}

/// `n` small statements: point lookups on the loaded table and computed rows.
fn write_small_queries(path: &Path, n: u64) {
    let mut out = BufWriter::new(File::create(path).expect("create the small-query script"));
    let mut rng = Rng(0x0dd5_eed5_0000_0002);
    for i in 0..n {
        let r = rng.next() % 10_000;
        let q = if i % 2 == 0 {
            format!("SELECT id, LEFT(t, 40) FROM l WHERE id = {};\n", r + 1)
        } else {
            format!(
                "SELECT {r}, MD5({r}), REPEAT('y', {}), NULL, -{r}.5;\n",
                r % 60
            )
        };
        out.write_all(q.as_bytes())
            .expect("write the small-query script");
    }
    out.flush().expect("flush the small-query script");
}

/// `mariadb < script | sha256sum` against `addr`; returns the digest.
fn cli_sha256(addr: &str, script: &Path, timeout: Duration) -> String {
    let (host, port) = split_addr(addr);
    let pipeline = format!(
        "mariadb --no-defaults --protocol=TCP --quick --local-infile=1 -N -B \
         --max-allowed-packet=256M -h {host} -P {port} -u{USER} -p{PASSWORD} {DATABASE} \
         < '{}' | sha256sum",
        script.display()
    );
    let mut cmd = Command::new("bash");
    cmd.args(["-o", "pipefail", "-c", &pipeline]);
    let out = run_with_timeout(cmd, None, timeout);
    assert!(
        out.status.success(),
        "{pipeline} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let digest = String::from_utf8_lossy(&out.stdout).into_owned();
    digest
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn wire_bytes(m: &Scrape) -> f64 {
    m.get("psprobe_bytes_total", &[])
}

fn statements(m: &Scrape) -> u64 {
    ["ok", "rows", "error"]
        .iter()
        .map(|o| {
            m.get(
                "psprobe_commands_total",
                &[("command", "query"), ("outcome", o)],
            ) as u64
        })
        .sum()
}

#[test]
fn mixed_traffic_is_byte_identical_through_psprobe() {
    let mb = volume_mb();
    let plan = Plan::for_volume(mb);
    let timeout = Duration::from_secs(120 + mb / 2);
    let db = MariaDb::start(Options {
        performance_schema: false,
        extra_args: vec![],
    });
    let probe = Probe::start(&db.addr(), &[]);
    create_blobs(&db, plan.blob_rows);

    let dir = tempdir("volume");
    let file = dir.path().join("load.tsv");
    write_load_file(&file, plan.load_bytes);
    let parts: [(&str, String, u64); 3] = [
        (
            "large rows",
            "SELECT id, b FROM blobs ORDER BY id;\n".into(),
            1,
        ),
        (
            "LOAD DATA LOCAL INFILE",
            format!(
                "DROP TABLE IF EXISTS l;\n\
                 CREATE TABLE l (id INT PRIMARY KEY, t TEXT);\n\
                 LOAD DATA LOCAL INFILE '{}' INTO TABLE l FIELDS TERMINATED BY '\\t';\n\
                 SELECT * FROM l ORDER BY id;\n",
                file.display()
            ),
            4,
        ),
        ("small queries", String::new(), plan.small_queries),
    ];
    let small = dir.path().join("small.sql");
    write_small_queries(&small, plan.small_queries);

    let start = probe.scrape();
    let (mut direct_time, mut probe_time) = (Duration::ZERO, Duration::ZERO);
    for (i, (what, sql, count)) in parts.iter().enumerate() {
        let script = if sql.is_empty() {
            small.clone()
        } else {
            let path = dir.path().join(format!("part{i}.sql"));
            std::fs::write(&path, sql).expect("write a part's script");
            path
        };
        let before = probe.scrape();
        let t = Instant::now();
        let direct = cli_sha256(&db.addr(), &script, timeout);
        direct_time += t.elapsed();
        let t = Instant::now();
        let through = cli_sha256(probe.proxy_addr(), &script, timeout);
        probe_time += t.elapsed();
        assert_eq!(
            through, direct,
            "{what}: output through psprobe differs from direct"
        );
        let after = probe.scrape();
        assert_eq!(
            statements(&after) - statements(&before),
            *count,
            "{what}: statements counted by psprobe\n{}",
            after.text
        );
    }
    let end = probe.scrape();
    let wire = wire_bytes(&end) - wire_bytes(&start);
    eprintln!(
        "FIGURES case=transparency_volume wire_bytes={wire:.0} ({:.2} GiB) blobs={}x{BLOB_MIB}MiB \
         load_file={} small_queries={} direct={:.1}s through_psprobe={:.1}s rss_mib={:.1} identical=yes",
        wire / (1u64 << 30) as f64,
        plan.blob_rows,
        plan.load_bytes,
        plan.small_queries,
        direct_time.as_secs_f64(),
        probe_time.as_secs_f64(),
        probe.rss_bytes() as f64 / (1 << 20) as f64,
    );
    assert!(
        wire >= mb as f64 * 0.9e6,
        "only {wire} bytes went through psprobe for a {mb} MB plan"
    );
    assert_eq!(
        end.get("psprobe_parse_errors_total", &[]),
        0.0,
        "{}",
        end.text
    );
    assert_eq!(
        end.get("psprobe_unobserved_connections_total", &[]),
        0.0,
        "{}",
        end.text
    );
}
