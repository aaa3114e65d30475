//! Per-digest, per-scenario statistics shared by every connection, without a global lock on the
//! hot path: each thread records into its own shard (a mutex nobody else takes except a scrape
//! merging the shards), and the bounded digest registry is consulted only the first time a
//! connection meets a digest.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use psprobe_core::protocol::CommandKind;
use rustc_hash::FxHashMap;

pub(crate) use psprobe_core::digest::DigestId;

use super::digest_stats::{DigestStats, Sample};
use super::histogram::bucket_of;
use super::scenario::ScenarioId;
use super::since_switch::{BinAgg, SwitchBins};

/// Where commands of digests past the cap are counted.
pub(crate) const OTHER_DIGEST: DigestId = DigestId(0);
pub(crate) const OTHER_DIGEST_TEXT: &str = "other";
/// Default of `--max-digests`.
pub const DEFAULT_MAX_DIGESTS: usize = 5000;
/// Longest digest text kept (bytes); the fingerprint itself may be up to 64 KiB.
pub(crate) const MAX_STORED_TEXT: usize = 1024;
/// Set in the scenario part of a shard key for commands that started outside a measured
/// window (switching or settling): they count in every metric, but not in phase aggregates.
const UNMEASURED: ScenarioId = 0x8000;

/// How a finished command is filed: its scenario, whether it started in a measured window,
/// and its bin by time since the switch (statements only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    pub scenario: ScenarioId,
    pub measured: bool,
    pub bin: Option<u8>,
}

impl Tag {
    /// A command outside any schedule: measured, not binned.
    pub fn plain(scenario: ScenarioId) -> Self {
        Tag {
            scenario,
            measured: true,
            bin: None,
        }
    }

    fn key(self) -> ScenarioId {
        if self.measured {
            self.scenario
        } else {
            self.scenario | UNMEASURED
        }
    }
}

#[derive(Debug, Default)]
struct Shard {
    // Fx: two lookups per command; the keys are small ids, bounded by --max-digests.
    entries: FxHashMap<(ScenarioId, DigestId), DigestStats>,
    commands: FxHashMap<(ScenarioId, CommandKind), DigestStats>,
    since_switch: SwitchBins,
}

#[derive(Debug)]
pub struct DigestStore {
    max_digests: usize,
    registry: Mutex<HashMap<DigestId, Arc<str>>>,
    shards: Box<[Mutex<Shard>]>,
}

/// A consistent-enough copy of the store (each shard is copied under its lock).
#[derive(Debug, Default)]
pub struct StoreSnapshot {
    pub entries: HashMap<(ScenarioId, DigestId), DigestStats>,
    /// The same aggregates per command kind (every command, with or without a digest).
    pub commands: HashMap<(ScenarioId, CommandKind), DigestStats>,
    pub texts: HashMap<DigestId, Arc<str>>,
    /// Statements by scenario and 50 ms bin of their start after the switch (see
    /// [`super::since_switch`]); measured or not.
    pub since_switch: HashMap<ScenarioId, Vec<BinAgg>>,
}

/// Which commands a snapshot holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Selection {
    /// Every command, by scenario (metrics, admin).
    All,
    /// Only commands started in measured windows (phase aggregates).
    Measured,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not stop measurement: the data is still counters.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    static SHARD_OF_THREAD: Cell<usize> = const { Cell::new(usize::MAX) };
}
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

impl DigestStore {
    pub fn new(max_digests: usize) -> Self {
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
        let shards = (threads * 2).clamp(4, 64);
        // The bucket table is built now, not on the first command's path.
        let _ = super::histogram::bucket_bounds();
        DigestStore {
            max_digests,
            registry: Mutex::new(HashMap::new()),
            shards: (0..shards).map(|_| Mutex::default()).collect(),
        }
    }

    pub fn max_digests(&self) -> usize {
        self.max_digests
    }

    /// The id to record a digest under: its own while there is room, else [`OTHER_DIGEST`].
    /// Callers cache the answer per connection; this takes the registry lock.
    pub fn admit(&self, id: DigestId, text: &[u8]) -> DigestId {
        let mut registry = lock(&self.registry);
        if registry.contains_key(&id) {
            return id;
        }
        if registry.len() >= self.max_digests {
            return OTHER_DIGEST;
        }
        let text = &text[..text.len().min(MAX_STORED_TEXT)];
        registry.insert(id, Arc::from(String::from_utf8_lossy(text)));
        id
    }

    /// Adds one finished command (hot path: the calling thread's shard lock only).
    pub fn record(&self, tag: Tag, kind: CommandKind, digest: Option<DigestId>, sample: &Sample) {
        let key = tag.key();
        // Computed once for both aggregates (outside the lock).
        let bucket = sample.latency_ns.map(bucket_of);
        let mut shard = lock(&self.shards[self.shard_index()]);
        shard
            .commands
            .entry((key, kind))
            .or_default()
            .record_in_bucket(sample, bucket);
        if let Some(id) = digest {
            shard
                .entries
                .entry((key, id))
                .or_default()
                .record_in_bucket(sample, bucket);
        }
        if let Some(bin) = tag.bin {
            shard.since_switch.record(tag.scenario, bin, sample);
        }
    }

    fn shard_index(&self) -> usize {
        SHARD_OF_THREAD.with(|cell| {
            let mut i = cell.get();
            if i == usize::MAX {
                i = NEXT_SHARD.fetch_add(1, Ordering::Relaxed);
                cell.set(i);
            }
            i % self.shards.len()
        })
    }

    /// Number of digests tracked individually (not counting `other`).
    pub fn digest_count(&self) -> usize {
        lock(&self.registry).len()
    }

    /// Merges every shard: every command by scenario, measured or not.
    pub fn snapshot(&self) -> StoreSnapshot {
        self.snapshot_of(Selection::All)
    }

    /// Merges every shard, keeping only commands started in measured windows.
    pub fn snapshot_measured(&self) -> StoreSnapshot {
        self.snapshot_of(Selection::Measured)
    }

    fn snapshot_of(&self, selection: Selection) -> StoreSnapshot {
        let mut entries: HashMap<(ScenarioId, DigestId), DigestStats> = HashMap::new();
        let mut commands: HashMap<(ScenarioId, CommandKind), DigestStats> = HashMap::new();
        let mut since_switch = HashMap::new();
        // The key a shard key is merged under, if it is selected.
        let pick = |key: ScenarioId| match selection {
            Selection::All => Some(key & !UNMEASURED),
            Selection::Measured => (key & UNMEASURED == 0).then_some(key),
        };
        for shard in self.shards.iter() {
            let shard = lock(shard);
            for ((scenario, id), stats) in &shard.entries {
                if let Some(s) = pick(*scenario) {
                    entries.entry((s, *id)).or_default().merge(stats);
                }
            }
            for ((scenario, kind), stats) in &shard.commands {
                if let Some(s) = pick(*scenario) {
                    commands.entry((s, *kind)).or_default().merge(stats);
                }
            }
            shard.since_switch.merge_into(&mut since_switch);
        }
        let mut texts = lock(&self.registry).clone();
        texts.insert(OTHER_DIGEST, Arc::from(OTHER_DIGEST_TEXT));
        StoreSnapshot {
            entries,
            commands,
            texts,
            since_switch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ns: u64) -> Sample {
        Sample {
            latency_ns: Some(ns),
            ..Sample::default()
        }
    }

    #[test]
    fn digests_past_the_cap_go_to_other() {
        let store = DigestStore::new(2);
        assert_eq!(store.admit(DigestId(1), b"select ?"), DigestId(1));
        assert_eq!(store.admit(DigestId(2), b"select ? from t"), DigestId(2));
        assert_eq!(store.admit(DigestId(3), b"delete from t"), OTHER_DIGEST);
        assert_eq!(
            store.admit(DigestId(1), b"select ?"),
            DigestId(1),
            "known stays"
        );
        assert_eq!(store.digest_count(), 2);
    }

    #[test]
    fn records_from_many_threads_merge() {
        let store = Arc::new(DigestStore::new(10));
        let id = store.admit(DigestId(7), b"select ?");
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        store.record(
                            Tag::plain((t % 2) as ScenarioId),
                            CommandKind::Query,
                            Some(id),
                            &sample(1_000 + i),
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let snap = store.snapshot();
        assert_eq!(snap.entries[&(0, id)].totals.count, 4000);
        assert_eq!(snap.entries[&(1, id)].totals.count, 4000);
        assert_eq!(snap.commands[&(0, CommandKind::Query)].totals.count, 4000);
        assert_eq!(&*snap.texts[&id], "select ?");
        assert_eq!(&*snap.texts[&OTHER_DIGEST], "other");
    }

    #[test]
    fn unmeasured_commands_count_everywhere_but_in_measured_snapshots() {
        let store = DigestStore::new(10);
        let id = store.admit(DigestId(7), b"select ?");
        let tag = |measured, bin| Tag {
            scenario: 3,
            measured,
            bin,
        };
        store.record(
            tag(true, Some(4)),
            CommandKind::Query,
            Some(id),
            &sample(10),
        );
        store.record(
            tag(false, Some(0)),
            CommandKind::Query,
            Some(id),
            &sample(20),
        );
        store.record(tag(false, None), CommandKind::Ping, None, &sample(30));
        let all = store.snapshot();
        assert_eq!(all.entries[&(3, id)].totals.count, 2);
        assert_eq!(all.commands[&(3, CommandKind::Query)].totals.count, 2);
        assert_eq!(all.commands[&(3, CommandKind::Ping)].totals.count, 1);
        let measured = store.snapshot_measured();
        assert_eq!(measured.entries[&(3, id)].totals.count, 1);
        assert_eq!(measured.entries[&(3, id)].totals.latency_sum_ns, 10);
        assert!(!measured.commands.contains_key(&(3, CommandKind::Ping)));
        assert_eq!(all.entries.len(), 1, "no key carries the unmeasured bit");
        let bins = &measured.since_switch[&3];
        assert_eq!((bins[0].count, bins[4].count, bins[1].count), (1, 1, 0));
    }

    #[test]
    fn stored_text_is_bounded() {
        let store = DigestStore::new(10);
        let long = vec![b'x'; 10_000];
        let id = store.admit(DigestId(9), &long);
        assert_eq!(store.snapshot().texts[&id].len(), MAX_STORED_TEXT);
    }
}
