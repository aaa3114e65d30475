//! psprobe's fingerprints against the real `pt-fingerprint` (percona-toolkit), on the corpus in
//! `tests/data/fingerprint_corpus.sql`.
//!
//! Every corpus query must fingerprint exactly as pt-fingerprint does, unless it is listed in
//! `tests/data/fingerprint_expected.txt` with the reasons (tags, documented in
//! `docs/fingerprint.md`) and psprobe's expected output. With `fold_identifier_digits`, queries
//! whose only reason is `identifier-digits` (and all unlisted ones) must equal pt exactly.
//!
//! Corpus format: records separated by `;\n`, as pt-fingerprint reads files. Lines starting with
//! `#` at the start of a record are annotations (pt strips them too). Records that pt's file
//! mode would alter (leading whitespace or comment, `#` lines inside) are fed to
//! `pt-fingerprint --query` one by one instead.
//!
//! `PT_FINGERPRINT=/path/to/pt-fingerprint` picks the binary (default: /usr/bin, then $PATH).
//! `FINGERPRINT_BLESS=1 cargo test --test checks fingerprint_vs_pt::` rewrites the expectations
//! file from the current outputs, keeping existing tags (new entries get the tag `TODO`, which
//! fails) and dropping entries pt-fingerprint now agrees with. New queries are tried by adding
//! them to the corpus: the failure shows each difference from pt as an expectations block.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use psprobe_core::digest::{DigestId, FingerprintOptions, Fingerprinter};

// ---------------------------------------------------------------------------------------------
// Allocation counting (per thread), for the steady-state no-allocation check.

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

// ---------------------------------------------------------------------------------------------
// Files.

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

const CORPUS: &str = "fingerprint_corpus.sql";
const EXPECTED: &str = "fingerprint_expected.txt";

struct Record {
    query: Vec<u8>,
    /// pt's file mode would see exactly `query`.
    file_mode: bool,
}

/// Splits like pt-fingerprint's file mode (`$/ = ";\n"`, chomp), then drops leading annotation
/// lines (`#...`) and blank lines.
fn load_corpus() -> Vec<Record> {
    let path = data_dir().join(CORPUS);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut out = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let (rec, next) = match rest.windows(2).position(|w| w == b";\n") {
            Some(p) => (&rest[..p], &rest[p + 2..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        let mut q = rec;
        loop {
            if q.first() == Some(&b'#') {
                q = match q.iter().position(|&b| b == b'\n') {
                    Some(p) => &q[p + 1..],
                    None => &q[q.len()..],
                };
            } else if q.first() == Some(&b'\n') {
                q = &q[1..];
            } else {
                break;
            }
        }
        if q.is_empty() {
            continue;
        }
        let starts_word = q[0].is_ascii_alphanumeric() || q[0] == b'_';
        let hash_line = q
            .split(|&b| b == b'\n')
            .any(|l| l.len() >= 2 && l[0] == b'#');
        out.push(Record {
            query: q.to_vec(),
            file_mode: starts_word && !hash_line,
        });
    }
    out
}

#[derive(Clone, Debug)]
struct Entry {
    tags: Vec<String>,
    psprobe: Vec<u8>,
    pt: Vec<u8>,
}

fn escape(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            match b[i + 1] {
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'\\' => out.push(b'\\'),
                b'x' if i + 3 < b.len() => {
                    let h = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                    out.push(u8::from_str_radix(h, 16).expect("bad \\x escape"));
                    i += 4;
                    continue;
                }
                other => panic!("bad escape \\{}", other as char),
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

const EXPECTED_HEADER: &str = "\
# Corpus queries whose psprobe fingerprint differs from pt-fingerprint's, on purpose.
# Checked by tests/checks/fingerprint_vs_pt.rs. One block per query, blocks separated by blank lines:
#   query:   the corpus query (escapes: \\n \\r \\t \\\\ \\xHH)
#   tags:    the reasons, space-separated; every tag is explained in docs/fingerprint.md
#   psprobe: psprobe's fingerprint with default options (same escapes)
#   pt:      pt-fingerprint's output (checked: a new percona-toolkit that changes it fails)
# Regenerate the psprobe/pt lines with FINGERPRINT_BLESS=1 (tags are kept).
";

fn load_expected() -> Vec<(Vec<u8>, Entry)> {
    let path = data_dir().join(EXPECTED);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(_) => return Vec::new(),
    };
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut query = None;
        let mut e = Entry {
            tags: Vec::new(),
            psprobe: Vec::new(),
            pt: Vec::new(),
        };
        for line in block.lines() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let (k, v) = line
                .split_once(": ")
                .unwrap_or_else(|| (line.trim_end_matches(':'), ""));
            match k {
                "query" => query = Some(unescape(v)),
                "tags" => e.tags = v.split_whitespace().map(str::to_owned).collect(),
                "psprobe" => e.psprobe = unescape(v),
                "pt" => e.pt = unescape(v),
                other => panic!("{EXPECTED}: unknown key {other:?} in block:\n{block}"),
            }
        }
        if let Some(q) = query {
            assert!(
                !e.tags.is_empty(),
                "{EXPECTED}: entry without tags:\n{block}"
            );
            out.push((q, e));
        }
    }
    out
}

fn write_expected(entries: &[(Vec<u8>, Entry)]) {
    let mut s = String::from(EXPECTED_HEADER);
    for (q, e) in entries {
        s.push('\n');
        s.push_str(&format!("query: {}\n", escape(q)));
        s.push_str(&format!("tags: {}\n", e.tags.join(" ")));
        s.push_str(&format!("psprobe: {}\n", escape(&e.psprobe)));
        s.push_str(&format!("pt: {}\n", escape(&e.pt)));
    }
    std::fs::write(data_dir().join(EXPECTED), s).expect("write expectations");
}

/// Tags documented in docs/fingerprint.md: table rows that start with "| `tag` |".
fn documented_tags() -> HashSet<String> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fingerprint.md"))
            .expect("read docs/fingerprint.md");
    doc.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |"))
        .map(|(tag, _)| tag.to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// pt-fingerprint.

fn pt_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("PT_FINGERPRINT") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "PT_FINGERPRINT={} is not a file. This test compares psprobe's fingerprints with \
             percona-toolkit's pt-fingerprint.",
            p.display()
        );
        return p;
    }
    let candidates = [PathBuf::from("/usr/bin/pt-fingerprint")];
    for c in candidates {
        if c.is_file() {
            return c;
        }
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let c = dir.join("pt-fingerprint");
            if c.is_file() {
                return c;
            }
        }
    }
    panic!(
        "pt-fingerprint not found (looked in $PT_FINGERPRINT, /usr/bin and $PATH). This test \
         compares psprobe's fingerprints with percona-toolkit's; install it (Debian/Ubuntu: \
         `apt-get install percona-toolkit`, or run scripts/setup.sh)."
    );
}

fn pt_fingerprints(records: &[Record]) -> Vec<Vec<u8>> {
    let pt = pt_binary();
    let mut out = vec![Vec::new(); records.len()];

    // File mode for everything it reads verbatim: one perl start for ~all of the corpus.
    let batch: Vec<usize> = (0..records.len())
        .filter(|&i| records[i].file_mode)
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("corpus.sql");
    {
        let mut f = std::fs::File::create(&file).unwrap();
        for &i in &batch {
            f.write_all(&records[i].query).unwrap();
            f.write_all(b";\n").unwrap();
        }
    }
    let res = Command::new(&pt)
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .expect("run pt-fingerprint");
    assert!(
        res.status.success(),
        "pt-fingerprint failed: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    let mut lines: Vec<&[u8]> = res.stdout.split(|&b| b == b'\n').collect();
    assert_eq!(lines.pop(), Some(&b""[..]), "pt output ends with a newline");
    assert_eq!(
        lines.len(),
        batch.len(),
        "pt-fingerprint printed {} lines for {} file-mode queries",
        lines.len(),
        batch.len()
    );
    for (&i, l) in batch.iter().zip(lines) {
        out[i] = l.to_vec();
    }

    // The rest one at a time.
    for (i, r) in records.iter().enumerate().filter(|(_, r)| !r.file_mode) {
        let mut arg = b"--query=".to_vec();
        arg.extend_from_slice(&r.query);
        let res = Command::new(&pt)
            .arg(OsStr::from_bytes(&arg))
            .stdin(Stdio::null())
            .output()
            .expect("run pt-fingerprint --query");
        // pt-fingerprint 3.x exits 1 after --query even on success (`exit main()` returns
        // print's true value), so judge by stderr and the output shape instead.
        assert!(
            res.stderr.is_empty() && res.stdout.ends_with(b"\n"),
            "pt-fingerprint --query failed for {:?}: {}",
            escape(&r.query),
            String::from_utf8_lossy(&res.stderr)
        );
        let mut o = res.stdout;
        assert_eq!(o.pop(), Some(b'\n'));
        out[i] = o;
    }
    out
}

// ---------------------------------------------------------------------------------------------

fn fp(f: &mut Fingerprinter, q: &[u8]) -> Vec<u8> {
    f.fingerprint(q).text().to_vec()
}

#[test]
fn corpus_matches_pt_fingerprint_except_documented_differences() {
    let records = load_corpus();
    assert!(
        records.len() >= 200,
        "corpus has only {} queries",
        records.len()
    );
    let mut seen = HashSet::new();
    for r in &records {
        assert!(
            seen.insert(r.query.clone()),
            "duplicate corpus query {:?}",
            escape(&r.query)
        );
    }
    let pt = pt_fingerprints(&records);
    let expected = load_expected();
    let by_query: HashMap<&[u8], &Entry> = expected.iter().map(|(q, e)| (&q[..], e)).collect();
    for (q, _) in &expected {
        assert!(
            seen.contains(q),
            "{EXPECTED} lists a query that is not in the corpus: {:?}",
            escape(q)
        );
    }
    let documented = documented_tags();

    let mut plain = Fingerprinter::default();
    let mut folding = Fingerprinter::new(FingerprintOptions {
        fold_identifier_digits: true,
        ..Default::default()
    });
    let mut failures = Vec::new();
    let mut exact = 0;
    let mut tag_counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut blessed = Vec::new();
    let mut fold_checked = 0;

    for (r, pt_out) in records.iter().zip(&pt) {
        let q = &r.query[..];
        let ours = fp(&mut plain, q);
        let folded = fp(&mut folding, q);
        match by_query.get(q) {
            None => {
                if ours == *pt_out {
                    exact += 1;
                } else {
                    failures.push(format!(
                        "differs from pt and is not in {EXPECTED}:\nquery: {}\ntags: TODO\npsprobe: {}\npt: {}\n",
                        escape(q),
                        escape(&ours),
                        escape(pt_out)
                    ));
                    blessed.push((
                        q.to_vec(),
                        Entry {
                            tags: vec!["TODO".into()],
                            psprobe: ours.clone(),
                            pt: pt_out.clone(),
                        },
                    ));
                }
                // No identifier digits involved: folding must not change anything pt-visible.
                if folded != *pt_out && ours == *pt_out {
                    failures.push(format!(
                        "fold_identifier_digits changes a query pt agrees with:\nquery: {}\nfolded: {}\npt: {}\n",
                        escape(q),
                        escape(&folded),
                        escape(pt_out)
                    ));
                }
            }
            Some(e) => {
                for t in &e.tags {
                    *tag_counts.entry(t.clone()).or_default() += 1;
                    if !documented.contains(t) {
                        failures.push(format!(
                            "tag `{t}` is not documented in docs/fingerprint.md"
                        ));
                    }
                }
                if ours != e.psprobe {
                    failures.push(format!(
                        "psprobe output changed:\nquery: {}\nexpected: {}\nactual:   {}\n",
                        escape(q),
                        escape(&e.psprobe),
                        escape(&ours)
                    ));
                }
                // A listed difference that is no longer one, or a pt output other than the one
                // recorded, makes the file wrong about pt: both fail (FINGERPRINT_BLESS=1 drops
                // the first and records the second).
                if ours == *pt_out {
                    failures.push(format!(
                        "pt-fingerprint now agrees with psprobe on {:?} (listed in {EXPECTED} as {:?}): remove the entry",
                        escape(q),
                        e.tags
                    ));
                    continue;
                } else if e.pt != *pt_out {
                    failures.push(format!(
                        "pt-fingerprint's output differs from the one {EXPECTED} records for {:?}: {:?} (recorded {:?})",
                        escape(q),
                        escape(pt_out),
                        escape(&e.pt)
                    ));
                }
                if e.tags.len() == 1 && e.tags[0] == "identifier-digits" {
                    fold_checked += 1;
                    if folded != *pt_out {
                        failures.push(format!(
                            "with fold_identifier_digits, an identifier-digits-only query must equal pt:\nquery: {}\nfolded: {}\npt:     {}\n",
                            escape(q),
                            escape(&folded),
                            escape(pt_out)
                        ));
                    }
                }
                blessed.push((
                    q.to_vec(),
                    Entry {
                        tags: e.tags.clone(),
                        psprobe: ours.clone(),
                        pt: pt_out.clone(),
                    },
                ));
            }
        }
    }

    println!(
        "{} corpus queries: {} equal pt-fingerprint exactly, {} differ on purpose; \
         {} identifier-digits-only queries equal pt with folding",
        records.len(),
        exact,
        expected.len(),
        fold_checked
    );
    for (t, n) in &tag_counts {
        println!("  {t}: {n}");
    }
    if std::env::var_os("FINGERPRINT_BLESS").is_some() {
        write_expected(&blessed);
        println!("wrote {}", data_dir().join(EXPECTED).display());
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_documented_tag_is_used_or_explained() {
    // Keeps the docs table and the expectations in step: a tag in the table that no corpus
    // entry uses is probably stale.
    let used: HashSet<String> = load_expected()
        .into_iter()
        .flat_map(|(_, e)| e.tags)
        .collect();
    let unused: Vec<_> = documented_tags()
        .into_iter()
        .filter(|t| !used.contains(t))
        .collect();
    assert!(
        unused.is_empty(),
        "documented tags with no corpus example: {unused:?}"
    );
}

#[test]
fn digest_id_is_pt_query_digest_query_id() {
    // pt-query-digest: make_checksum = uc substr(md5_hex($fingerprint), -16)
    let mut f = Fingerprinter::default();
    let r = f.fingerprint(b"SELECT c FROM sbtest1 WHERE id=5012");
    assert_eq!(r.text(), b"select c from sbtest1 where id=?");
    // perl is installed with percona-toolkit (pt-fingerprint is a perl script): missing, it
    // fails like pt-fingerprint does.
    let perl = Command::new("perl")
        .args([
            "-MDigest::MD5=md5_hex",
            "-e",
            "print uc substr(md5_hex($ARGV[0]), -16)",
            "select c from sbtest1 where id=?",
        ])
        .output()
        .unwrap_or_else(|e| panic!("perl ({e}): scripts/setup.sh installs percona-toolkit"));
    assert!(
        perl.status.success(),
        "perl failed: {}",
        String::from_utf8_lossy(&perl.stderr)
    );
    assert_eq!(String::from_utf8(perl.stdout).unwrap(), r.id().to_string());
    assert_eq!(
        r.id(),
        DigestId::of_fingerprint(b"select c from sbtest1 where id=?")
    );
}

#[test]
fn steady_state_fingerprinting_does_not_allocate() {
    let records = load_corpus();
    let mut f = Fingerprinter::default();
    let mut f2 = Fingerprinter::new(FingerprintOptions {
        fold_identifier_digits: true,
        ..Default::default()
    });
    for r in &records {
        f.fingerprint(&r.query);
        f2.fingerprint(&r.query);
    }
    let before = allocs();
    let mut total = 0usize;
    for _ in 0..3 {
        for r in &records {
            total += f.fingerprint(&r.query).text().len();
            total += f2.fingerprint(&r.query).text().len();
        }
    }
    let after = allocs();
    assert!(total > 0);
    assert_eq!(
        after - before,
        0,
        "fingerprinting allocated {} times after warm-up",
        after - before
    );
}
