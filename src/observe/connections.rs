//! The live connection table: one entry per client connection the proxy relays, for the admin
//! interface's `connections` table. An entry is added when the connection is accepted and
//! removed when its task ends; while it lives, only the connection's own task writes to it,
//! with relaxed atomics (no lock on the relay's path). The table's lock is taken once per
//! connection to register and once to unregister, and by the admin for the time it takes to
//! copy the list of entries.
//!
//! No credentials are kept: the user name and the default database from the handshake, never
//! the auth data; no statement text either (it may carry literals).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Instant, SystemTime};

use psprobe_core::protocol::CommandKind;
use psprobe_core::session::{
    CommandFinished, CommandStarted, EventSink, Outcome, UnobservedReason,
};

/// Longest user or database name kept (bytes of the lossy UTF-8 form).
const MAX_NAME_LEN: usize = 64;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum ConnectionPhase {
    /// Accepted; psprobe is connecting to the upstream.
    Connecting = 0,
    /// Greeting and login in progress.
    Handshake = 1,
    /// Logged in: commands are being observed.
    Ready = 2,
    /// Forwarded verbatim, no longer observed.
    Unobserved = 3,
    /// The server refused the login.
    Refused = 4,
}

impl ConnectionPhase {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => ConnectionPhase::Handshake,
            2 => ConnectionPhase::Ready,
            3 => ConnectionPhase::Unobserved,
            4 => ConnectionPhase::Refused,
            _ => ConnectionPhase::Connecting,
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            ConnectionPhase::Connecting => "connecting",
            ConnectionPhase::Handshake => "handshake",
            ConnectionPhase::Ready => "idle",
            ConnectionPhase::Unobserved => "unobserved",
            ConnectionPhase::Refused => "refused",
        }
    }
}

/// User and default database, from the client's handshake response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub database: Option<String>,
}

/// One live connection. Written by its own task only.
#[derive(Debug)]
pub struct LiveConnection {
    pub id: u64,
    pub client: SocketAddr,
    pub connected_at: SystemTime,
    started: Instant,
    identity: OnceLock<Identity>,
    phase: AtomicU8,
    /// Commands sent and not answered yet.
    in_flight: AtomicU32,
    /// `CommandKind::index` of the oldest command in flight (or the last one).
    command: AtomicU8,
    /// When that command started, in nanoseconds since `started`.
    command_started_ns: AtomicU64,
    commands: AtomicU64,
    errors: AtomicU64,
    /// `UnobservedReason` index + 1; 0 while observed.
    unobserved: AtomicU8,
}

/// A copy of one entry, for the admin.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionInfo {
    pub id: u64,
    pub client: SocketAddr,
    pub identity: Option<Identity>,
    pub connected_at: SystemTime,
    pub seconds: f64,
    /// `idle`, the label of the command in progress (`query`, `stmt_execute`, ...), or a
    /// phase (`connecting`, `handshake`, `unobserved`, `refused`).
    pub state: String,
    /// How long the command in progress has been running.
    pub command_seconds: Option<f64>,
    pub commands: u64,
    pub errors: u64,
    pub unobserved_reason: Option<&'static str>,
}

fn lossy_name(bytes: &[u8]) -> String {
    let mut s = String::from_utf8_lossy(bytes).into_owned();
    if s.len() > MAX_NAME_LEN {
        let mut end = MAX_NAME_LEN;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

impl LiveConnection {
    fn new(id: u64, client: SocketAddr) -> Self {
        LiveConnection {
            id,
            client,
            connected_at: crate::clock::system_now(),
            started: Instant::now(),
            identity: OnceLock::new(),
            phase: AtomicU8::new(ConnectionPhase::Connecting as u8),
            in_flight: AtomicU32::new(0),
            command: AtomicU8::new(0),
            command_started_ns: AtomicU64::new(0),
            commands: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            unobserved: AtomicU8::new(0),
        }
    }

    fn set_phase(&self, phase: ConnectionPhase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    /// The upstream is connected: the handshake begins.
    pub fn upstream_connected(&self) {
        self.set_phase(ConnectionPhase::Handshake);
    }

    /// Wraps the connection's event sink so that its events also update this entry.
    pub fn track<S: EventSink>(&self, inner: S) -> Tracked<'_, S> {
        Tracked { inner, live: self }
    }

    pub fn info(&self, now: Instant) -> ConnectionInfo {
        let phase = ConnectionPhase::from_u8(self.phase.load(Ordering::Relaxed));
        let busy = phase == ConnectionPhase::Ready && self.in_flight.load(Ordering::Relaxed) > 0;
        let command = CommandKind::ALL
            .get(usize::from(self.command.load(Ordering::Relaxed)))
            .copied()
            .unwrap_or(CommandKind::Other);
        let since_start = now.saturating_duration_since(self.started);
        let command_seconds = busy.then(|| {
            let started_ns = self.command_started_ns.load(Ordering::Relaxed);
            (since_start.as_nanos() as f64 - started_ns as f64).max(0.0) / 1e9
        });
        let unobserved = usize::from(self.unobserved.load(Ordering::Relaxed));
        ConnectionInfo {
            id: self.id,
            client: self.client,
            identity: self.identity.get().cloned(),
            connected_at: self.connected_at,
            seconds: since_start.as_secs_f64(),
            state: if busy {
                command.label().to_string()
            } else {
                phase.label().to_string()
            },
            command_seconds,
            commands: self.commands.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            unobserved_reason: unobserved
                .checked_sub(1)
                .and_then(|i| UnobservedReason::ALL.get(i))
                .map(|r| r.label()),
        }
    }
}

/// An [`EventSink`] that passes every event on and keeps a [`LiveConnection`] up to date.
pub struct Tracked<'a, S> {
    inner: S,
    live: &'a LiveConnection,
}

impl<S> Tracked<'_, S> {
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: EventSink> EventSink for Tracked<'_, S> {
    fn command_started(&mut self, event: &CommandStarted<'_>) {
        let live = self.live;
        // This connection's task is the only writer of its entry (readers only load): a load
        // and a store, not a locked read-modify-write, per command.
        let in_flight = live.in_flight.load(Ordering::Relaxed);
        live.in_flight
            .store(in_flight.saturating_add(1), Ordering::Relaxed);
        if in_flight == 0 {
            let at = event.at.saturating_duration_since(live.started);
            live.command
                .store(event.kind.index() as u8, Ordering::Relaxed);
            live.command_started_ns.store(
                u64::try_from(at.as_nanos()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
        }
        self.inner.command_started(event);
    }

    fn command_finished(&mut self, event: &CommandFinished) {
        let live = self.live;
        // Single writer (see command_started).
        let in_flight = live.in_flight.load(Ordering::Relaxed);
        live.in_flight
            .store(in_flight.saturating_sub(1), Ordering::Relaxed);
        let commands = live.commands.load(Ordering::Relaxed);
        live.commands.store(commands + 1, Ordering::Relaxed);
        if matches!(event.outcome, Outcome::Error(_)) {
            let errors = live.errors.load(Ordering::Relaxed);
            live.errors.store(errors + 1, Ordering::Relaxed);
        }
        // One per command at trace (no statement text: it may hold literals); when trace is
        // off this is a level check, nothing is formatted.
        tracing::trace!(
            conn = live.id,
            seq = event.seq,
            command = event.kind.label(),
            outcome = event.outcome.label(),
            error_code = match event.outcome {
                Outcome::Error(code) => code,
                _ => 0,
            },
            latency_us = event.latency.map_or(0, |d| d.as_micros() as u64),
            rows = event.rows,
            affected_rows = event.affected_rows,
            request_bytes = event.request_bytes,
            response_bytes = event.response_bytes,
            "command finished"
        );
        self.inner.command_finished(event);
    }

    fn unobserved(&mut self, reason: UnobservedReason) {
        let index = UnobservedReason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(0);
        self.live
            .unobserved
            .store(index as u8 + 1, Ordering::Relaxed);
        self.live.in_flight.store(0, Ordering::Relaxed);
        self.live.set_phase(ConnectionPhase::Unobserved);
        tracing::trace!(
            conn = self.live.id,
            reason = reason.label(),
            "no longer observed; forwarded verbatim"
        );
        self.inner.unobserved(reason);
    }

    fn authenticated(&mut self, ok: bool) {
        tracing::trace!(
            conn = self.live.id,
            "login {}",
            if ok {
                "accepted by the server"
            } else {
                "refused by the server"
            }
        );
        self.live.set_phase(if ok {
            ConnectionPhase::Ready
        } else {
            ConnectionPhase::Refused
        });
        self.inner.authenticated(ok);
    }

    fn client_hello(&mut self, user: &[u8], database: Option<&[u8]>) {
        // Once per connection: the only allocation this wrapper makes.
        let _ = self.live.identity.set(Identity {
            user: lossy_name(user),
            database: database.map(lossy_name),
        });
        if let Some(identity) = self.live.identity.get() {
            tracing::trace!(
                conn = self.live.id,
                user = ?identity.user,
                database = ?identity.database,
                "client logs in"
            );
        }
        self.inner.client_hello(user, database);
    }
}

/// Every live connection.
#[derive(Debug, Default)]
pub struct ConnectionTable {
    next_id: AtomicU64,
    open: Mutex<BTreeMap<u64, Arc<LiveConnection>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes its entry from the table when dropped (however the connection's task ends).
pub struct Registration<'a> {
    table: &'a ConnectionTable,
    entry: Arc<LiveConnection>,
}

impl std::ops::Deref for Registration<'_> {
    type Target = LiveConnection;

    fn deref(&self) -> &LiveConnection {
        &self.entry
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        lock(&self.table.open).remove(&self.entry.id);
    }
}

impl ConnectionTable {
    /// Adds a connection from `client`; ids count from 1.
    pub fn register(&self, client: SocketAddr) -> Registration<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let entry = Arc::new(LiveConnection::new(id, client));
        lock(&self.open).insert(id, Arc::clone(&entry));
        Registration { table: self, entry }
    }

    /// A copy of every entry, by id.
    pub fn snapshot(&self) -> Vec<ConnectionInfo> {
        let entries: Vec<Arc<LiveConnection>> = lock(&self.open).values().cloned().collect();
        let now = Instant::now();
        entries.iter().map(|e| e.info(now)).collect()
    }

    pub fn len(&self) -> usize {
        lock(&self.open).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use psprobe_core::session::Statement;
    use std::time::Duration;

    struct Null;
    impl EventSink for Null {
        fn command_started(&mut self, _: &CommandStarted<'_>) {}
        fn command_finished(&mut self, _: &CommandFinished) {}
        fn unobserved(&mut self, _: UnobservedReason) {}
    }

    #[test]
    fn entries_follow_the_connection() {
        let table = ConnectionTable::default();
        let peer: SocketAddr = "127.0.0.1:5555".parse().unwrap();
        let reg = table.register(peer);
        assert_eq!(reg.id, 1);
        assert_eq!(table.snapshot()[0].state, "connecting");
        reg.upstream_connected();
        let mut sink = reg.track(Null);
        sink.client_hello(b"app", Some(b"shop"));
        sink.authenticated(true);
        let info = &table.snapshot()[0];
        assert_eq!(info.state, "idle");
        assert_eq!(
            info.identity,
            Some(Identity {
                user: "app".into(),
                database: Some("shop".into())
            })
        );
        sink.command_started(&CommandStarted {
            seq: 0,
            kind: CommandKind::Query,
            statement: Statement::None,
            at: Instant::now(),
        });
        let info = &table.snapshot()[0];
        assert_eq!(info.state, "query");
        assert!(info.command_seconds.is_some());
        sink.command_finished(&CommandFinished {
            seq: 0,
            kind: CommandKind::Query,
            outcome: Outcome::Error(1146),
            rows: 0,
            affected_rows: 0,
            request_bytes: 0,
            response_bytes: 0,
            latency: Some(Duration::from_millis(1)),
        });
        let info = &table.snapshot()[0];
        assert_eq!(
            (info.state.as_str(), info.commands, info.errors),
            ("idle", 1, 1)
        );
        sink.unobserved(UnobservedReason::CompressionError);
        assert_eq!(
            table.snapshot()[0].unobserved_reason,
            Some("compression_error")
        );
        let second = table.register(peer);
        assert_eq!(second.id, 2);
        drop(reg);
        assert_eq!(table.len(), 1);
        drop(second);
        assert!(table.is_empty());
    }

    #[test]
    fn long_names_are_cut_on_a_character_boundary() {
        let name = "é".repeat(40);
        let cut = lossy_name(name.as_bytes());
        assert!(cut.len() <= MAX_NAME_LEN && name.starts_with(&cut), "{cut}");
    }
}
