//! Fingerprinting throughput: sysbench's oltp_read_write statement mix (literal and prepared
//! forms), a ~10 KiB IN list and a ~60 KiB multi-row INSERT.
//!
//! `cargo bench --bench fingerprint -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use psprobe_core::digest::{FingerprintOptions, Fingerprinter};

const C: &str = "68487932199-96439406143-93774651418-41631865787-96406072701-20604855487-25459966574-28203206787-41238978918-19503783441";
const PAD: &str = "22195207048-70116052123-74140395089-76317954521-98694025897";

/// One oltp_read_write transaction with literal values (sysbench --db-ps-mode=disable).
fn sysbench_literal() -> Vec<Vec<u8>> {
    let mut v = vec!["BEGIN".to_string()];
    for i in 0..10 {
        v.push(format!(
            "SELECT c FROM sbtest{} WHERE id={}",
            i % 4 + 1,
            5012 + i * 37
        ));
    }
    v.push("SELECT c FROM sbtest2 WHERE id BETWEEN 4990 AND 5089".into());
    v.push("SELECT SUM(k) FROM sbtest3 WHERE id BETWEEN 731 AND 830".into());
    v.push("SELECT c FROM sbtest1 WHERE id BETWEEN 200 AND 299 ORDER BY c".into());
    v.push("SELECT DISTINCT c FROM sbtest4 WHERE id BETWEEN 7 AND 106 ORDER BY c".into());
    v.push("UPDATE sbtest1 SET k=k+1 WHERE id=5012".into());
    v.push(format!("UPDATE sbtest2 SET c='{C}' WHERE id=998"));
    v.push("DELETE FROM sbtest3 WHERE id=4999".into());
    v.push(format!(
        "INSERT INTO sbtest3 (id, k, c, pad) VALUES (4999, 5020, '{C}', '{PAD}')"
    ));
    v.push("COMMIT".into());
    v.into_iter().map(String::into_bytes).collect()
}

/// The same transaction as prepared-statement text.
fn sysbench_prepared() -> Vec<Vec<u8>> {
    let mut v = vec!["BEGIN"];
    v.extend(std::iter::repeat_n("SELECT c FROM sbtest1 WHERE id=?", 10));
    v.extend([
        "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?",
        "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?",
        "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
        "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
        "UPDATE sbtest1 SET k=k+1 WHERE id=?",
        "UPDATE sbtest1 SET c=? WHERE id=?",
        "DELETE FROM sbtest1 WHERE id=?",
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
        "COMMIT",
    ]);
    v.into_iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// select_random_points-style IN list, about 10 KiB.
fn in_list() -> Vec<u8> {
    let mut q = String::from("SELECT id, k, c, pad FROM sbtest1 WHERE k IN (");
    let mut i = 0u64;
    while q.len() < 10 * 1024 {
        if i > 0 {
            q.push_str(", ");
        }
        q.push_str(&(i * 7919 % 100_000).to_string());
        i += 1;
    }
    q.push(')');
    q.into_bytes()
}

/// sysbench prepare-style bulk INSERT, about 60 KiB (under the 64 KiB cap).
fn bulk_insert() -> Vec<u8> {
    let mut q = String::from("INSERT INTO sbtest1(id, k, c, pad) VALUES");
    let mut i = 1u64;
    loop {
        let row = format!("({}, {}, '{C}', '{PAD}')", i, i * 7919 % 100_000);
        if q.len() + row.len() + 1 > 60 * 1024 {
            break;
        }
        if i > 1 {
            q.push(',');
        }
        q.push_str(&row);
        i += 1;
    }
    q.into_bytes()
}

fn bench_set(c: &mut Criterion, name: &str, queries: &[Vec<u8>]) {
    let bytes: usize = queries.iter().map(Vec::len).sum();
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(bytes as u64));
    for (label, fold) in [("default", false), ("fold_identifier_digits", true)] {
        let mut fp = Fingerprinter::new(FingerprintOptions {
            fold_identifier_digits: fold,
            ..Default::default()
        });
        group.bench_function(label, |b| {
            b.iter(|| {
                let mut acc = 0u64;
                for q in queries {
                    acc ^= fp.fingerprint(black_box(q)).id().as_u64();
                }
                acc
            })
        });
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    bench_set(c, "sysbench_mix_literal", &sysbench_literal());
    bench_set(c, "sysbench_mix_prepared", &sysbench_prepared());
    bench_set(c, "in_list_10KiB", &[in_list()]);
    bench_set(c, "bulk_insert_60KiB", &[bulk_insert()]);
}

criterion_group!(fingerprint, benches);
criterion_main!(fingerprint);
