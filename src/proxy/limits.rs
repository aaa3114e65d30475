//! What keeps psprobe standing when clients come in floods: a listen backlog large enough
//! for bursts, a limit on open client connections (answered with MySQL's own ERR 1040), the
//! file-descriptor budget that limit defaults to, and the errors psprobe answers with.

use std::io;
use std::net::SocketAddr;

use psprobe_core::protocol::{encode_err, encode_packet};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// Listen backlog asked for by default; the kernel caps it at net.core.somaxconn.
pub(crate) const DEFAULT_LISTEN_BACKLOG: u32 = 4096;
/// File descriptors kept out of the connection budget: listeners, metrics scrapes, admin,
/// controller, log and state files, and clients being refused.
pub(crate) const RESERVED_FDS: u64 = 64;
/// ER_CON_COUNT_ERROR, what mysqld answers past its max_connections.
pub(crate) const ER_CON_COUNT_ERROR: u16 = 1040;

/// Binds `addr` with SO_REUSEADDR (as std does) and the given listen backlog.
pub(crate) fn bind_listener(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// The soft and hard RLIMIT_NOFILE of this process.
fn fd_limits() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (rc == 0).then_some((limit.rlim_cur, limit.rlim_max))
}

/// Raises the soft file-descriptor limit to the hard one (as nginx's and Go's runtimes do):
/// distributions start processes at a soft 1024, which 500 clients (two descriptors each)
/// would exhaust. Returns the soft limit in effect afterwards.
pub(crate) fn raise_fd_limit() -> Option<u64> {
    let (soft, hard) = fd_limits()?;
    if soft < hard {
        let raised = libc::rlimit {
            rlim_cur: hard,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Some(hard);
        }
    }
    Some(soft)
}

/// The default `--max-connections`: what the file-descriptor limit carries (two descriptors
/// per client: its own and the upstream's), less a reserve. `None`: no limit.
pub(crate) fn default_max_connections() -> Option<usize> {
    let (soft, _) = fd_limits()?;
    if soft == libc::RLIM_INFINITY {
        return None;
    }
    let budget = soft.saturating_sub(RESERVED_FDS) / 2;
    Some(usize::try_from(budget).unwrap_or(usize::MAX).max(1))
}

/// True for the errors that mean "no file descriptor (or kernel memory) left".
pub(crate) fn is_out_of_fds(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// ERR 1040 as mysqld sends it in place of the greeting: sequence id 0, SQL state 08004.
pub(crate) fn too_many_connections_packet(message: &str) -> Vec<u8> {
    encode_packet(0, &encode_err(ER_CON_COUNT_ERROR, b"08004", message))
}

/// Tells a client it cannot be served, then closes. Bounded: a client that does not read
/// still gets closed (the packet fits in any socket buffer; the timeout is for safety).
pub(crate) async fn refuse(client: &mut TcpStream, message: &str) {
    let packet = too_many_connections_packet(message);
    let write = async {
        client.write_all(&packet).await?;
        client.shutdown().await
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), write).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use psprobe_core::protocol::parse_err_code;

    #[test]
    fn err_1040_is_what_mysqld_sends_before_the_greeting() {
        let p = too_many_connections_packet("Too many connections");
        let len = usize::from(p[0]) | usize::from(p[1]) << 8 | usize::from(p[2]) << 16;
        assert_eq!((len, p[3]), (p.len() - 4, 0));
        assert_eq!(parse_err_code(&p[4..]).unwrap().1, 1040);
        assert_eq!(&p[7..13], b"#08004");
        assert_eq!(&p[13..], b"Too many connections");
    }

    #[test]
    fn default_limit_follows_the_fd_limit() {
        let (soft, _) = fd_limits().expect("getrlimit");
        let expected = (soft.saturating_sub(RESERVED_FDS) / 2).max(1) as usize;
        assert_eq!(default_max_connections(), Some(expected));
    }
}
