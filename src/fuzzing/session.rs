//! The session machine fed arbitrary interleavings of client and server bytes, with arbitrary
//! chunk boundaries, into the recorder the proxy uses (fingerprints, digest store, Prometheus
//! metrics). Checks that every command started is finished exactly once.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use psprobe_core::digest::FingerprintOptions;
use psprobe_core::session::{
    CommandFinished, CommandStarted, EventSink, Session, UnobservedReason,
};

use super::input::Input;
use crate::metrics::ProxyMetrics;
use crate::observe::{ConnectionRecorder, Observer};
use crate::stats::{DigestStore, Scenarios};

/// Built once: like `psprobe proxy`'s, with a small digest store (it is shared by every input,
/// and bounded).
fn observer() -> &'static Observer {
    static OBSERVER: OnceLock<Observer> = OnceLock::new();
    OBSERVER.get_or_init(|| {
        let scenarios = Arc::new(Scenarios::default());
        Observer {
            metrics: ProxyMetrics::new(Arc::clone(&scenarios)).expect("metrics registry"),
            digests: Arc::new(DigestStore::new(64)),
            scenarios,
            fingerprint: FingerprintOptions::default(),
            connections: Default::default(),
            setting_changes: Default::default(),
        }
    })
}

/// Passes events on to the recorder and checks their order.
struct Checked<'a> {
    inner: ConnectionRecorder<'a>,
    open: BTreeSet<u64>,
    last_started: Option<u64>,
    unobserved: usize,
}

impl EventSink for Checked<'_> {
    fn command_started(&mut self, event: &CommandStarted<'_>) {
        assert!(
            self.last_started.is_none_or(|s| event.seq > s),
            "command numbers go up"
        );
        self.last_started = Some(event.seq);
        self.open.insert(event.seq);
        self.inner.command_started(event);
    }

    fn command_finished(&mut self, event: &CommandFinished) {
        assert!(
            self.open.remove(&event.seq),
            "command {} finished without being started, or twice",
            event.seq
        );
        self.inner.command_finished(event);
    }

    fn unobserved(&mut self, reason: UnobservedReason) {
        self.unobserved += 1;
        assert_eq!(self.unobserved, 1, "observation stops once");
        self.inner.unobserved(reason);
    }

    fn authenticated(&mut self, ok: bool) {
        self.inner.authenticated(ok);
    }

    fn client_hello(&mut self, user: &[u8], database: Option<&[u8]>) {
        self.inner.client_hello(user, database);
    }
}

/// Input: records of a tag byte and a 2-byte length, then that many bytes (fewer at the end).
/// Tag bit 0: 0 client bytes, 1 server bytes; bits 1-2: 1 the proxy terminated TLS before
/// this chunk, 2 the proxy gave up observing before it; bits 3-7: milliseconds since the
/// previous chunk.
pub(super) fn session(data: &[u8]) {
    let mut input = Input::new(data);
    let start = Instant::now();
    let mut now = start;
    let mut sink = Checked {
        inner: ConnectionRecorder::new(observer()),
        open: BTreeSet::new(),
        last_started: None,
        unobserved: 0,
    };
    let mut session = Session::new(now);
    while !input.is_empty() {
        let tag = input.byte();
        let len = usize::from(input.u16());
        let chunk = input.take(len);
        now += Duration::from_millis(u64::from(tag >> 3));
        match (tag >> 1) & 3 {
            1 => session.tls_established(),
            2 => session.unobserve(UnobservedReason::Tls, &mut sink),
            _ => {}
        }
        if tag & 1 == 0 {
            session.on_client_bytes(chunk, now, &mut sink);
        } else {
            session.on_server_bytes(chunk, now, &mut sink);
        }
    }
    session.on_close(&mut sink);
    assert!(
        sink.open.is_empty(),
        "commands {:?} never finished",
        sink.open
    );
}
