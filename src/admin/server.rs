//! The listener and the opensrv-mysql shim: one task per admin connection; each query runs on a
//! blocking thread ([`tokio::task::spawn_blocking`]), never on the task's worker.
//!
//! [`spawn_dedicated`] runs the whole admin interface on a thread of its own (its own
//! single-threaded runtime, its threads in the idle scheduling class), which is how
//! `psprobe proxy` runs it: admin work never takes a relay worker, and a long admin query gets
//! only the CPU the proxy leaves.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opensrv_mysql::{
    AsyncMysqlIntermediary, AsyncMysqlShim, ColumnFlags, ColumnType, ErrorKind, InitWriter,
    OkResponse, ParamParser, QueryResultWriter, StatementMetaWriter,
};
use tokio::io::AsyncWrite;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Semaphore};
use tokio::task::JoinSet;

use super::auth::{self, AdminAuth, SALT_LEN};
use super::budget::{self, Reservation, ResultBudget, RESULT_BUDGET_BYTES};
use super::dialect::{self, EngineQuery, Statement};
use super::engine::{Engine, ResultKind, ResultSet};
use super::error::AdminError;
use super::limits::Limits;
use super::login_limit::{LoginLimiter, Refusal, LOG_INTERVAL};
use super::session::SessionInfo;
use super::tables::AdminData;
use super::variables;
use super::wire::{
    self, CommandReader, Denial, DenialWriter, FIELD_LIST_MARKER, NOT_UTF8_MARKER, TOO_LARGE_MARKER,
};

/// Admin queries running at once in [`spawn_dedicated`]; more wait for a thread.
pub(crate) const MAX_CONCURRENT_QUERIES: usize = 2;
/// A query waits at most this long for one of the [`MAX_CONCURRENT_QUERIES`] slots, then is
/// answered with an error (before, a cheap query waited up to 30 s behind heavy ones).
pub(crate) const QUERY_SLOT_WAIT: Duration = Duration::from_secs(3);
/// Admin connections open at once; more get ERR 1040 and are closed (each may hold a result).
pub(crate) const MAX_CONNECTIONS: usize = 32;
/// A result not written within this long (its client does not read) ends the connection, and
/// the memory it held goes back to the other admin connections.
pub(crate) const RESULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves the admin interface on `listener` until this future is dropped. Each connection runs
/// in its own task; failures are logged.
pub async fn serve_with(
    listener: TcpListener,
    data: Arc<dyn AdminData>,
    auth: AdminAuth,
    limits: Limits,
) {
    if auth.password.is_empty() {
        tracing::error!("admin interface has no password configured: every login is refused");
    }
    let auth = Arc::new(auth);
    let logins = Arc::new(LoginLimiter::new(limits.login));
    let accept_failures = crate::log_limit::RateLimited::new(LOG_INTERVAL);
    let mut log_tick = tokio::time::interval(LOG_INTERVAL);
    log_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let next_id = AtomicU32::new(1);
    let budget = ResultBudget::new(RESULT_BUDGET_BYTES);
    let slots = Arc::new(Semaphore::new(MAX_CONCURRENT_QUERIES));
    let refusals = crate::log_limit::RateLimited::new(LOG_INTERVAL);
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) if connections.len() >= MAX_CONNECTIONS => {
                    if let Some(more) = refusals.check() {
                        tracing::warn!(
                            %peer,
                            "admin connection refused: {MAX_CONNECTIONS} are open, psprobe \
                             admin's limit{}",
                            crate::log_limit::more(more)
                        );
                    }
                    tokio::spawn(refuse_over_limit(stream));
                }
                Ok((stream, peer)) => {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    tracing::trace!(%peer, id, "admin connection accepted");
                    connections.spawn(connection(
                        stream,
                        peer,
                        id,
                        Arc::clone(&data),
                        Arc::clone(&auth),
                        Arc::clone(&logins),
                        Arc::clone(&budget),
                        Arc::clone(&slots),
                        limits,
                    ));
                }
                Err(e) => {
                    if let Some(more) = accept_failures.check() {
                        tracing::warn!(
                            "admin interface cannot accept a connection: {e} ({more} more since \
                             the last such line)"
                        );
                    }
                    // Out of descriptors and the like: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = log_tick.tick() => logins.flush_log(Instant::now()),
            Some(finished) = connections.join_next(), if !connections.is_empty() => {
                if let Err(e) = finished {
                    if e.is_panic() {
                        tracing::error!("admin connection task panicked: {e}");
                    }
                }
            }
        }
    }
}

/// The admin interface running on its own thread; [`AdminHandle::stop`] ends it.
pub(crate) struct AdminHandle {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AdminHandle {
    /// Stops accepting, closes the admin connections and waits for the thread (a query still
    /// running finishes on its own, within the query time limit, and is discarded).
    pub(crate) fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for AdminHandle {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Puts the calling thread in the idle scheduling class (SCHED_IDLE: it runs only when no
/// other thread wants the CPU, and any waking proxy thread preempts it at once), and at nice 19
/// should that be refused. Linux: per thread.
fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread; a failure only leaves the priority as is.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::pid_t;
        let param = libc::sched_param { sched_priority: 0 };
        if libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param) != 0 {
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
        }
    }
}

/// Runs [`serve_with`] on a new thread with its own runtime. `listener` must be non-blocking
/// (as [`tokio::net::TcpListener::into_std`] leaves it).
pub(crate) fn spawn_dedicated(
    listener: std::net::TcpListener,
    data: Arc<dyn AdminData>,
    auth: AdminAuth,
    limits: Limits,
) -> io::Result<AdminHandle> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(MAX_CONCURRENT_QUERIES)
        .thread_name("psprobe-admin-query")
        .on_thread_start(lower_thread_priority)
        .build()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("psprobe-admin".into())
        .spawn(move || {
            lower_thread_priority();
            runtime.block_on(async move {
                let listener = match TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!("admin interface cannot use its listener: {e}");
                        return;
                    }
                };
                tokio::select! {
                    () = serve_with(listener, data, auth, limits) => {}
                    _ = stopped => {}
                }
            });
            // Queries still running finish on their own; do not wait for them.
            runtime.shutdown_background();
        })?;
    Ok(AdminHandle {
        stop: Some(stop),
        thread: Some(thread),
    })
}

/// Tells a client past [`MAX_CONNECTIONS`] so, as mysqld does (ERR 1040 before the greeting),
/// the way the proxy refuses clients past `--max-connections`.
async fn refuse_over_limit(mut stream: TcpStream) {
    let message =
        format!("Too many connections: psprobe admin serves at most {MAX_CONNECTIONS} at once");
    crate::proxy::limits::refuse(&mut stream, &message).await;
}

#[allow(clippy::too_many_arguments)] // the connection's whole context, passed once
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    id: u32,
    data: Arc<dyn AdminData>,
    auth: Arc<AdminAuth>,
    logins: Arc<LoginLimiter>,
    budget: Arc<ResultBudget>,
    slots: Arc<Semaphore>,
    limits: Limits,
) {
    let _ = stream.set_nodelay(true);
    let (reader, writer) = stream.into_split();
    let denial = Arc::new(Mutex::new(None));
    let shim = Shim {
        data,
        auth: Arc::clone(&auth),
        salt: auth::new_salt(),
        denial: Arc::clone(&denial),
        // The only user that can log in.
        session: Arc::new(SessionInfo::new(&auth.user, &peer.ip().to_string(), id)),
        peer: peer.ip(),
        logins,
        engine: Mutex::new(None),
        budget,
        slots,
        limits,
    };
    let reader = CommandReader::new(reader, limits.max_query_bytes.saturating_add(1));
    let writer = DenialWriter::new(writer, denial);
    let ended = AsyncMysqlIntermediary::run_on(shim, reader, writer).await;
    // The connection's buffers are freed now: give them back too (a client that left a large
    // result unread had them full).
    budget::give_back_freed_memory();
    match ended {
        Ok(()) => tracing::debug!(%peer, id, "admin connection closed"),
        // Logged by `authenticate`, at a bounded rate.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            tracing::trace!(%peer, id, "admin connection closed after a refused login");
        }
        Err(e) => tracing::debug!(%peer, id, "admin connection ended: {e}"),
    }
}

struct Shim {
    data: Arc<dyn AdminData>,
    auth: Arc<AdminAuth>,
    /// Generated once: opensrv-mysql asks for it twice (greeting, then verification).
    salt: [u8; SALT_LEN],
    denial: Denial,
    session: Arc<SessionInfo>,
    peer: IpAddr,
    logins: Arc<LoginLimiter>,
    /// Created on the first query; away on a blocking thread while a query runs. (A mutex
    /// only because opensrv wants the shim `Sync`; one task uses it.)
    engine: Mutex<Option<Engine>>,
    /// Shared by all admin connections: what their results may hold at once.
    budget: Arc<ResultBudget>,
    /// Queries running at once, all connections together.
    slots: Arc<Semaphore>,
    limits: Limits,
}

/// A user name as the peer sent it, safe for one log line: at most 64 characters, control
/// characters escaped.
fn printable_user(name: &[u8]) -> String {
    String::from_utf8_lossy(name)
        .chars()
        .take(64)
        .flat_map(char::escape_debug)
        .collect()
}

fn column_type(kind: ResultKind) -> (ColumnType, ColumnFlags) {
    match kind {
        ResultKind::Int => (ColumnType::MYSQL_TYPE_LONGLONG, ColumnFlags::NUM_FLAG),
        ResultKind::Float { .. } => (ColumnType::MYSQL_TYPE_DOUBLE, ColumnFlags::NUM_FLAG),
        ResultKind::Text => (ColumnType::MYSQL_TYPE_VAR_STRING, ColumnFlags::empty()),
        ResultKind::Blob => (
            ColumnType::MYSQL_TYPE_BLOB,
            ColumnFlags::BLOB_FLAG | ColumnFlags::BINARY_FLAG,
        ),
    }
}

async fn write_result<W: AsyncWrite + Send + Unpin>(
    query: &EngineQuery,
    result: &ResultSet,
    results: QueryResultWriter<'_, W>,
) -> io::Result<()> {
    let columns: Vec<opensrv_mysql::Column> = result
        .columns
        .iter()
        .map(|c| {
            let (coltype, colflags) = column_type(c.kind);
            opensrv_mysql::Column {
                table: String::new(),
                column: query.column_name(&c.name),
                coltype,
                colflags,
            }
        })
        .collect();
    let mut rows = results.start(&columns).await?;
    for row in &result.rows {
        rows.write_row(row.iter().map(Option::as_ref)).await?;
    }
    rows.finish().await
}

async fn write_error<W: AsyncWrite + Send + Unpin>(
    e: &AdminError,
    results: QueryResultWriter<'_, W>,
) -> io::Result<()> {
    results.error(e.kind(), e.message.as_bytes()).await
}

impl Shim {
    /// Runs `query` on this connection's engine, on a blocking thread, within what the shared
    /// result budget has left; the result comes with its share of the budget, held until the
    /// result is written.
    async fn run(&mut self, query: &EngineQuery) -> Result<(ResultSet, Reservation), AdminError> {
        let Ok(Ok(slot)) =
            tokio::time::timeout(QUERY_SLOT_WAIT, Arc::clone(&self.slots).acquire_owned()).await
        else {
            return Err(AdminError::busy(MAX_CONCURRENT_QUERIES, QUERY_SLOT_WAIT));
        };
        let Some(mut reservation) = self.budget.reserve(self.limits.max_result_bytes) else {
            return Err(AdminError::results_budget_full(0));
        };
        let engine = wire::lock(&self.engine).take();
        let data = Arc::clone(&self.data);
        let session = Arc::clone(&self.session);
        let limits = self.limits;
        let room = reservation.bytes();
        let (sql, params) = (query.sql.clone(), query.params.clone());
        let (engine, result, reservation) = tokio::task::spawn_blocking(move || {
            let mut engine = match engine {
                Some(engine) => engine,
                None => match Engine::new(limits, session) {
                    Ok(engine) => engine,
                    Err(e) => return (None, Err(e), reservation),
                },
            };
            let result = engine.query_within(&sql, &params, &*data, room);
            // Down to what the result holds before the slot is free: the next query's
            // reservation must see this one's real size, not its ceiling.
            reservation.shrink_to(result.as_ref().map_or(0, |r| budget::result_bytes(&r.rows)));
            drop(slot);
            (Some(engine), result, reservation)
        })
        .await
        .map_err(AdminError::internal)?;
        *wire::lock(&self.engine) = engine;
        let result = result?;
        Ok((result, reservation))
    }

    async fn answer<W: AsyncWrite + Send + Unpin>(
        &mut self,
        query: &str,
        results: QueryResultWriter<'_, W>,
    ) -> io::Result<()> {
        if query == FIELD_LIST_MARKER {
            let e = AdminError::new(
                1047,
                b"08S01",
                "psprobe admin does not list fields (COM_FIELD_LIST)",
            );
            return write_error(&e, results).await;
        }
        if query == NOT_UTF8_MARKER {
            tracing::debug!(
                peer = %self.peer,
                "admin query is not valid UTF-8; answered with an error"
            );
            return write_error(&AdminError::not_utf8(), results).await;
        }
        if let Some(len) = query.strip_prefix(TOO_LARGE_MARKER) {
            let len = len.parse().unwrap_or(usize::MAX);
            let e = AdminError::query_too_large(len, self.limits.max_query_bytes);
            tracing::debug!(peer = %self.peer, "admin query refused: {e}");
            return write_error(&e, results).await;
        }
        if query.len() > self.limits.max_query_bytes {
            let e = AdminError::query_too_large(query.len(), self.limits.max_query_bytes);
            return write_error(&e, results).await;
        }
        // The text only at trace: it may hold literals.
        tracing::trace!(peer = %self.peer, query, "admin query");
        let outcome = match dialect::parse(query) {
            Ok(Statement::Query(q)) => match self.run(&q).await {
                Ok((result, held)) => {
                    let written = tokio::time::timeout(
                        RESULT_WRITE_TIMEOUT,
                        write_result(&q, &result, results),
                    )
                    .await;
                    // The result's memory first, then its share of the budget (which may give
                    // freed memory back to the system).
                    drop(result);
                    drop(held);
                    return written.unwrap_or_else(|_| {
                        tracing::debug!(
                            peer = %self.peer,
                            "admin client read none of its result for {}s: connection closed",
                            RESULT_WRITE_TIMEOUT.as_secs()
                        );
                        Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "the admin client did not read its result",
                        ))
                    });
                }
                Err(e) => Err(e),
            },
            Ok(Statement::Use(db)) => self.session.use_database(&db),
            Ok(Statement::Set | Statement::Transaction) => Ok(()),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(()) => results.completed(OkResponse::default()).await,
            Err(e) => {
                tracing::debug!(peer = %self.peer, bytes = query.len(), "admin query failed: {e}");
                write_error(&e, results).await
            }
        }
    }
}

#[async_trait::async_trait]
impl<W: AsyncWrite + Send + Unpin> AsyncMysqlShim<W> for Shim {
    type Error = io::Error;

    fn version(&self) -> String {
        variables::server_version()
    }

    fn connect_id(&self) -> u32 {
        self.session.connection_id
    }

    fn default_auth_plugin(&self) -> &str {
        auth::NATIVE_PASSWORD
    }

    async fn auth_plugin_for_username(&self, _user: &[u8]) -> &str {
        auth::NATIVE_PASSWORD
    }

    fn salt(&self) -> [u8; SALT_LEN] {
        self.salt
    }

    async fn authenticate(
        &self,
        auth_plugin: &str,
        username: &[u8],
        salt: &[u8],
        auth_data: &[u8],
    ) -> bool {
        let user = printable_user(username);
        if let Err(wait) = self.logins.begin(self.peer, Instant::now()) {
            // The password is not even compared: no guess is made.
            self.logins.refused(&user, self.peer, Refusal::Blocked);
            let message = format!(
                "Host '{}' is blocked: too many failed logins to psprobe admin; try again in {} s",
                self.session.host,
                wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
            );
            *wire::lock(&self.denial) =
                Some(psprobe_core::protocol::encode_err(1129, b"HY000", &message));
            return false;
        }
        if auth_plugin == auth::NATIVE_PASSWORD && self.auth.verify(username, salt, auth_data) {
            self.logins.succeeded(self.peer);
            tracing::trace!(peer = %self.peer, user, "admin login");
            return true;
        }
        self.logins
            .refused(&user, self.peer, Refusal::WrongCredentials);
        // Slows a guessing loop down; the connection's task waits, nothing else does.
        tokio::time::sleep(self.logins.limits().failure_delay).await;
        let message = format!(
            "Access denied for user '{}'@'{}' (using password: {})",
            String::from_utf8_lossy(username),
            self.session.host,
            if auth_data.is_empty() { "NO" } else { "YES" },
        );
        *wire::lock(&self.denial) =
            Some(psprobe_core::protocol::encode_err(1045, b"28000", &message));
        false
    }

    async fn on_prepare<'a>(
        &'a mut self,
        _query: &'a str,
        info: StatementMetaWriter<'a, W>,
    ) -> io::Result<()> {
        info.error(
            ErrorKind::ER_UNSUPPORTED_PS,
            b"psprobe admin does not support prepared statements; send the statement as text"
                .as_slice(),
        )
        .await
    }

    async fn on_execute<'a>(
        &'a mut self,
        _id: u32,
        _params: ParamParser<'a>,
        results: QueryResultWriter<'a, W>,
    ) -> io::Result<()> {
        results
            .error(
                ErrorKind::ER_UNSUPPORTED_PS,
                b"psprobe admin does not support prepared statements".as_slice(),
            )
            .await
    }

    async fn on_close<'a>(&'a mut self, _stmt: u32)
    where
        W: 'async_trait,
    {
    }

    async fn on_query<'a>(
        &'a mut self,
        query: &'a str,
        results: QueryResultWriter<'a, W>,
    ) -> io::Result<()> {
        self.answer(query, results).await
    }

    async fn on_init<'a>(
        &'a mut self,
        database: &'a str,
        writer: InitWriter<'a, W>,
    ) -> io::Result<()> {
        match self.session.use_database(database) {
            Ok(()) => writer.ok().await,
            Err(e) => writer.error(e.kind(), e.message.as_bytes()).await,
        }
    }
}
