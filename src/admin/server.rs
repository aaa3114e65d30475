//! The listener and the opensrv-mysql shim: one task per admin connection.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opensrv_mysql::{
    AsyncMysqlIntermediary, AsyncMysqlShim, ColumnFlags, ColumnType, ErrorKind, InitWriter,
    OkResponse, ParamParser, QueryResultWriter, StatementMetaWriter,
};
use tokio::io::AsyncWrite;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::answer::{self, Reply, Session};
use super::auth::{self, AdminAuth, SALT_LEN};
use super::tables::{AdminData, ColumnKind, Table};
use super::wire::{self, Denial, DenialWriter, FieldListReader, FIELD_LIST_MARKER};

/// Serves the admin interface on `listener` until this future is dropped (which also ends the
/// open admin connections). Each connection runs in its own task; failures are logged.
pub async fn serve(listener: TcpListener, data: Arc<dyn AdminData>, auth: AdminAuth) {
    if auth.password.is_empty() {
        tracing::error!("admin interface has no password configured: every login is refused");
    }
    let auth = Arc::new(auth);
    let next_id = AtomicU32::new(1);
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    connections.spawn(connection(
                        stream,
                        peer,
                        id,
                        Arc::clone(&data),
                        Arc::clone(&auth),
                    ));
                }
                Err(e) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    tracing::warn!("admin interface cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
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

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    id: u32,
    data: Arc<dyn AdminData>,
    auth: Arc<AdminAuth>,
) {
    let _ = stream.set_nodelay(true);
    let (reader, writer) = stream.into_split();
    let denial = Arc::new(Mutex::new(None));
    let shim = Shim {
        data,
        auth: Arc::clone(&auth),
        salt: auth::new_salt(),
        denial: Arc::clone(&denial),
        session: Session {
            // The only user that can log in.
            user: auth.user.clone(),
            host: peer.ip().to_string(),
            connection_id: id,
            database: None,
        },
    };
    let reader = FieldListReader::new(reader);
    let writer = DenialWriter::new(writer, denial);
    match AsyncMysqlIntermediary::run_on(shim, reader, writer).await {
        Ok(()) => tracing::debug!(%peer, "admin connection closed"),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            tracing::warn!(%peer, "admin login refused: {e}");
        }
        Err(e) => tracing::debug!(%peer, "admin connection ended: {e}"),
    }
}

struct Shim {
    data: Arc<dyn AdminData>,
    auth: Arc<AdminAuth>,
    /// Generated once: opensrv-mysql asks for it twice (greeting, then verification).
    salt: [u8; SALT_LEN],
    denial: Denial,
    session: Session,
}

impl Shim {
    async fn reply<W: AsyncWrite + Send + Unpin>(
        reply: Reply,
        results: QueryResultWriter<'_, W>,
    ) -> io::Result<()> {
        match reply {
            Reply::Rows(table) => write_table(&table, results).await,
            Reply::Ok => results.completed(OkResponse::default()).await,
            Reply::Error(e) => {
                results
                    .error(ErrorKind::from(e.code()), e.to_string().as_bytes())
                    .await
            }
        }
    }
}

fn column_type(kind: ColumnKind) -> ColumnType {
    match kind {
        ColumnKind::Int => ColumnType::MYSQL_TYPE_LONGLONG,
        ColumnKind::Float => ColumnType::MYSQL_TYPE_DOUBLE,
        ColumnKind::Text => ColumnType::MYSQL_TYPE_VAR_STRING,
    }
}

async fn write_table<W: AsyncWrite + Send + Unpin>(
    table: &Table,
    results: QueryResultWriter<'_, W>,
) -> io::Result<()> {
    let columns: Vec<opensrv_mysql::Column> = table
        .columns
        .iter()
        .map(|c| opensrv_mysql::Column {
            table: String::new(),
            column: c.name.clone(),
            coltype: column_type(c.kind),
            colflags: ColumnFlags::empty(),
        })
        .collect();
    let mut rows = results.start(&columns).await?;
    for row in &table.rows {
        // Every value goes out as text (the text protocol); NULL as NULL.
        rows.write_row(row.iter().map(|v| v.render())).await?;
    }
    rows.finish().await
}

#[async_trait::async_trait]
impl<W: AsyncWrite + Send + Unpin> AsyncMysqlShim<W> for Shim {
    type Error = io::Error;

    fn version(&self) -> String {
        answer::server_version()
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
        if auth_plugin == auth::NATIVE_PASSWORD && self.auth.verify(username, salt, auth_data) {
            return true;
        }
        let message = format!(
            "Access denied for user '{}'@'{}' (using password: {})",
            String::from_utf8_lossy(username),
            self.session.host,
            if auth_data.is_empty() { "NO" } else { "YES" },
        );
        *wire::lock(&self.denial) = Some(wire::err_payload(1045, b"28000", &message));
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
        if query == FIELD_LIST_MARKER {
            return results
                .error(
                    ErrorKind::ER_UNKNOWN_COM_ERROR,
                    b"psprobe admin does not list fields (COM_FIELD_LIST)".as_slice(),
                )
                .await;
        }
        let reply = answer::answer(query, &*self.data, &mut self.session);
        if let Reply::Error(e) = &reply {
            tracing::debug!(query, "admin query refused: {e}");
        }
        Shim::reply(reply, results).await
    }

    async fn on_init<'a>(
        &'a mut self,
        database: &'a str,
        writer: InitWriter<'a, W>,
    ) -> io::Result<()> {
        match answer::use_database(database, &mut self.session) {
            Ok(()) => writer.ok().await,
            Err(e) => {
                writer
                    .error(ErrorKind::from(e.code()), e.to_string().as_bytes())
                    .await
            }
        }
    }
}
